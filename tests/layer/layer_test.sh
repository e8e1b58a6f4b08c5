#!/bin/sh
# SPDX-License-Identifier: MIT
# layer_test.sh CASE — one scenario of VK_LAYER_GPUTRACE_timeline on lavapipe.
#
# Environment (set by meson.build):
#   GT_PROBE              layer_probe
#   GT_WORKLOAD           gputrace-workload
#   GT_LAYER_LIB          the built layer
#   GT_EXPLICIT_DIR       build-tree explicit manifest directory
#   GT_IMPLICIT_MANIFEST  build-tree implicit manifest
#
# Whether the layer is active is read from its own log: with
# GPUTRACE_LOG=info it writes "gputrace: layer active" to GPUTRACE_LOG_FILE
# from vkCreateInstance. A layer the loader did not load writes nothing, not
# even the file. Each case also has a positive or negative twin, so a log
# that is never written (or always written) fails somewhere.
#
# Exit 0 pass, 1 fail, 77 skip (no lavapipe / no validation layer).
set -eu

case_name=${1:?usage: layer_test.sh CASE}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-layer-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/gputrace.log

. "$(dirname "$0")/lavapipe_env.sh"

use_explicit() {
    export VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
}

install_implicit() {
    mkdir -p "$XDG_DATA_HOME/vulkan/implicit_layer.d"
    cp "$GT_IMPLICIT_MANIFEST" "$XDG_DATA_HOME/vulkan/implicit_layer.d/"
}

log_info() {
    export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
}

asan_keep_lavapipe "$GT_PROBE"


expect_active() {
    grep -q '^gputrace: layer active' "$log" 2> /dev/null ||
        fail "layer not active (no 'gputrace: layer active' in its log)"
}

expect_not_loaded() {
    [ ! -e "$log" ] || fail "layer was loaded (it wrote $log)"
}

# The workload's summary line, checked for shape.
summary() {
    line=$(grep '^gputrace-workload: frames=' "$tmp/out" || true)
    echo "$line" | grep -Eq '^gputrace-workload: frames=[0-9]+ submissions=[0-9]+ regions=[0-9]+$' ||
        fail "no summary line"
    echo "$line"
}

field() { # field NAME LINE
    echo "$2" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"
}

case $case_name in
negotiate)
    run "$GT_PROBE" --negotiate "$GT_LAYER_LIB"
    ;;

explicit)
    use_explicit
    log_info
    run "$GT_PROBE"
    expect_active
    # What the layer enabled for the timing code (lavapipe: EXT only, and
    # hostQueryReset as a 1.2 core feature; the probe asked for neither).
    grep -q 'calibrated timestamps: VK_EXT_calibrated_timestamps' "$log" ||
        fail "calibrated timestamps not enabled"
    grep -q 'host query reset: core' "$log" || fail "hostQueryReset not enabled"
    ;;

explicit-disabled)
    # Belt and braces: enabled by name, switched off from inside.
    use_explicit
    log_info
    export GPUTRACE_DISABLE=1
    run "$GT_PROBE"
    grep -q '^gputrace: layer disabled by GPUTRACE_DISABLE' "$log" ||
        fail "layer did not report being disabled"
    ! grep -q 'layer active' "$log" || fail "layer active despite GPUTRACE_DISABLE=1"
    ! grep -q 'calibrated' "$log" || fail "disabled layer amended vkCreateDevice"
    ;;

implicit-enabled)
    install_implicit
    log_info
    export GPUTRACE_ENABLE=1
    run "$GT_PROBE"
    expect_active
    ;;

implicit-not-enabled)
    install_implicit
    log_info
    run "$GT_PROBE"
    expect_not_loaded
    ;;

implicit-disabled)
    install_implicit
    log_info
    export GPUTRACE_ENABLE=1 GPUTRACE_DISABLE=1
    run "$GT_PROBE"
    expect_not_loaded
    ;;

silent)
    # Without GPUTRACE_LOG the layer prints nothing and creates no file.
    use_explicit
    export GPUTRACE_LOG_FILE="$log"
    run "$GT_PROBE"
    [ ! -s "$tmp/err" ] || fail "unexpected output on stderr"
    expect_not_loaded
    export GPUTRACE_LOG=info # twin: the same set-up does log when asked
    run "$GT_PROBE"
    expect_active
    ;;

bad-env)
    use_explicit
    export GPUTRACE_LOG=verbose GPUTRACE_LOG_FILE="$log"
    run "$GT_PROBE"
    [ "$(wc -l < "$log")" -eq 1 ] || fail "expected exactly one line in the log"
    grep -q '^gputrace: warning: ignoring GPUTRACE_LOG=verbose' "$log" ||
        fail "no warning about GPUTRACE_LOG"
    rm -f "$log"
    export GPUTRACE_LOG=warn GPUTRACE_DISABLE=maybe
    run "$GT_PROBE"
    [ "$(wc -l < "$log")" -eq 1 ] || fail "expected exactly one line in the log"
    grep -q '^gputrace: warning: ignoring GPUTRACE_DISABLE=maybe' "$log" ||
        fail "no warning about GPUTRACE_DISABLE"
    ;;

allocator)
    # The probe counts allocations made through its VkAllocationCallbacks
    # (and fails if any is leaked); the layer's own must add to them. Both
    # runs search the same manifests: the loader's own allocations depend
    # on how many it parses.
    use_explicit
    unset VK_INSTANCE_LAYERS
    run "$GT_PROBE"
    without=$(sed -n 's/.*allocations=\([0-9]*\).*/\1/p' "$tmp/out")
    use_explicit
    log_info
    run "$GT_PROBE"
    expect_active
    with=$(sed -n 's/.*allocations=\([0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$without" ] && [ -n "$with" ] || fail "no allocation count"
    [ "$with" -gt "$without" ] ||
        fail "layer made no allocations through the application's allocator ($with vs $without)"
    echo "allocations through the application's callbacks: $without without the layer, $with with it"
    ;;

workload)
    # The layer is transparent: same summary with and without it.
    run "$GT_WORKLOAD" --frames 3
    plain=$(summary)
    use_explicit
    log_info
    run "$GT_WORKLOAD" --frames 3
    expect_active
    layered=$(summary)
    [ "$plain" = "$layered" ] || fail "without layer: '$plain', with layer: '$layered'"
    [ "$(field frames "$layered")" -eq 3 ] || fail "frames: $layered"
    echo "$layered"
    ;;

workload-threads)
    use_explicit
    log_info
    run "$GT_WORKLOAD" --frames 3
    one=$(summary)
    run "$GT_WORKLOAD" --frames 3 --threads 2 --queues 2
    expect_active
    two=$(summary)
    for f in frames submissions regions; do
        [ "$(field $f "$two")" -eq $((2 * $(field $f "$one"))) ] ||
            fail "$f: 2 threads '$two' vs 1 thread '$one'"
    done
    echo "$two"
    ;;

workload-validate)
    found=
    for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | tr ':' ' '); do
        [ -f "$d/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" ] && found=1
    done
    [ -n "$found" ] || skip "VK_LAYER_KHRONOS_validation not installed (Debian: vulkan-validationlayers)"
    # VK_ADD_LAYER_PATH keeps the system directories searched, where the
    # validation layer lives. It ends up below ours in the chain, so it also
    # checks what the layer itself passes down (the amended vkCreateDevice).
    export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
    log_info
    # ASan build: the loader dlcloses the validation layer (C++, exports
    # vk* symbols, so it cannot be preloaded like lavapipe), and LSan then
    # blames its still-referenced blocks on whatever is mapped there now.
    # The layer's own leaks are covered by every other case.
    [ -z "$preload" ] || export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    for args in "--frames 3" "--frames 2 --threads 2 --queues 2"; do
        # shellcheck disable=SC2086
        run "$GT_WORKLOAD" --validate $args
        expect_active
        summary > /dev/null
        grep -q '^gputrace-workload: validation: 0 error(s)$' "$tmp/err" ||
            fail "validation errors with $args"
    done
    ;;

*)
    echo "layer_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

echo "ok: $case_name"
