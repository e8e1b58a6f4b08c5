#!/bin/sh
# SPDX-License-Identifier: MIT
# neighbours_test.sh CASE — VK_LAYER_GPUTRACE_timeline stacked with the
# layers people really run next to it (Debian packages), through gputrace-ci
# on lavapipe: nothing crashes, and the GPU events are still all there.
#
#   validation-below     ours, then Khronos validation (sync validation on):
#                        validation sees our own commands too
#   validation-above     validation, then ours
#   gfxreconstruct-above / -below
#                        the capture layer above or below ours; its capture
#                        file must be readable by gfxrecon-info
#   mangohud, vkbasalt   implicit layers (MANGOHUD=1, ENABLE_VKBASALT=1; MangoHud
#                        sampling slowly: mangohud_on) on
#                        the headless workload
#   vkcube               vkcube --c 100 under Xvfb (xvfb-run): a real
#                        swapchain
#   vkcube-mangohud, vkcube-vkbasalt
#                        the overlays where they do their real work: a
#                        window under Xvfb
#   stack                vkcube with all of them at once; validation errors
#                        are compared with the same stack without our layer
#                        (the overlays' own render passes have sync hazards):
#                        fails only on errors our layer adds
#
# Layers the loader places above an explicit one: implicit layers (MangoHud,
# vkBasalt) sit above ours. Missing packages skip (77), never pass.
#
# Environment (meson.build): GT_TEST_LIB, GT_WORKLOAD, GT_CI, GT_GPUTRACE_CHECK.
set -eu

case_name=${1:?usage: neighbours_test.sh CASE}
. "$GT_TEST_LIB"

need_exe "$GT_WORKLOAD" gputrace-workload
need_exe "$GT_CI" gputrace-ci
need_exe "$GT_GPUTRACE_CHECK" gputrace-check
trace=$tmp/trace.pftrace
export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"

explicit_manifest() { # explicit_manifest FILE.json PACKAGE
    for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | tr ':' ' '); do
        [ -f "$d/vulkan/explicit_layer.d/$1" ] && return 0
    done
    skip "$1 not installed (Debian: $2)"
}

implicit_manifest() { # implicit_manifest FILE.json PACKAGE
    for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | tr ':' ' ') /etc/xdg; do
        [ -f "$d/vulkan/implicit_layer.d/$1" ] && return 0
    done
    skip "$1 not installed (Debian: $2)"
}

need_vkcube() {
    command -v vkcube > /dev/null || skip "vkcube not installed (Debian: vulkan-tools)"
    command -v xvfb-run > /dev/null || skip "xvfb-run not installed (Debian: xvfb)"
}

# Khronos validation with synchronization validation, errors to a file
# ($tmp/validation.txt unless given).
validation_settings() { # validation_settings [LOG]
    mkdir -p "$tmp/vs"
    cat > "$tmp/vs/vk_layer_settings.txt" <<EOF
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.report_flags = error
khronos_validation.log_filename = ${1:-$tmp/validation.txt}
khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
EOF
    export VK_LAYER_SETTINGS_PATH="$tmp/vs"
}

validation_clean() {
    [ -e "$tmp/validation.txt" ] || fail "the validation layer wrote no log: not loaded?"
    if grep -q 'Validation Error' "$tmp/validation.txt"; then
        head -n 20 "$tmp/validation.txt" >&2
        fail "$(grep -c 'Validation Error' "$tmp/validation.txt") validation error(s)"
    fi
}

gfxrecon_settings() { # gfxrecon_settings [CAPTURE_FILE]
    export GFXRECON_CAPTURE_FILE="${1:-$tmp/capture.gfxr}" GFXRECON_CAPTURE_FILE_TIMESTAMP=false
    # Below us, its page guard shadows mapped memory (device writes reach the
    # host copy only at its own sync points): with the default readback the
    # layer must notice that its copied results never show up and read them
    # from the driver instead (docs/layer.md, "Reading results").
}

# validation_errors LOG: "COUNT VUID MESSAGE_ID" per distinct error, sorted.
validation_errors() {
    [ -e "$1" ] || fail "the validation layer wrote no log ($1): not loaded?"
    sed -n 's/.*Validation Error: \[ \([^]]*\) \].*MessageID = \(0x[0-9a-fA-F]*\).*/\1 \2/p' "$1" |
        sort | uniq -c | awk '{ print $1, $2, $3 }'
}

# validation_not_ours BASE OURS: the neighbours report errors of their own
# (vkBasalt's and MangoHud's render passes); fails only on what our layer
# adds: an error, by VUID and message id, more often with our layer than in
# the same stack without it. Prints both counts.
validation_not_ours() {
    validation_errors "$1" > "$tmp/errors-base"
    validation_errors "$2" > "$tmp/errors-ours"
    echo "validation errors without our layer: $(awk '{ n += $1 } END { print n + 0 }' "$tmp/errors-base"), with it: $(awk '{ n += $1 } END { print n + 0 }' "$tmp/errors-ours")"
    awk '{ print "  without:", $0 }' "$tmp/errors-base"
    awk '{ print "  with:   ", $0 }' "$tmp/errors-ours"
    added=$(awk 'FILENAME == ARGV[1] { base[$2 " " $3] = $1; next }
                 $1 > base[$2 " " $3] + 0 { print $2, $3, "+" ($1 - base[$2 " " $3]) }' \
                "$tmp/errors-base" "$tmp/errors-ours")
    if [ -n "$added" ]; then
        echo "$added" >&2
        grep 'Validation Error' "$2" | head -n 20 >&2
        fail "our layer adds validation error(s): $(echo "$added" | tr '\n' ' ')"
    fi
}

gfxrecon_readable() {
    [ -s "$tmp/capture.gfxr" ] || fail "gfxreconstruct wrote no capture file"
    if command -v gfxrecon-info > /dev/null; then
        gfxrecon-info "$tmp/capture.gfxr" > "$tmp/gfxrecon-info" 2>&1 ||
            fail "gfxrecon-info cannot read the capture"
        echo "gfxrecon-info: $(grep -i 'total frames\|API calls\|Frame count' "$tmp/gfxrecon-info" | head -n 2 | tr '\n' ' ')"
    fi
}

# run_ci EXPECTED_EVENTS ARGS... -- COMMAND...: gputrace-ci must pass with
# at least EXPECTED_EVENTS GPU render stages; prints the verdict.
run_ci() {
    expected=$1
    shift
    run_bounded 240 "$GT_CI" --lavapipe --timeout 180 --keep-trace "$trace" \
        --expect-gpu-events "$expected" "$@"
    grep '^gputrace-ci:' "$tmp/out" "$tmp/err" | sed 's/^[^:]*://' || true
    [ $rc -eq 0 ] || fail "gputrace-ci failed ($rc)"
}

workload() { # workload ARGS... (of gputrace-ci); exact event count checked
    run_ci 1 "$@" -- "$GT_WORKLOAD" --frames 10 --threads 2 --queues 2
    regions=$(workload_regions)
    crc=0
    "$GT_GPUTRACE_CHECK" --no-progress --json --expect-gpu-events "$regions" "$trace" \
        > "$tmp/check" 2>&1 || crc=$?
    events=$(json_stat "$tmp/check" gpu_render_stage_events)
    [ $crc -eq 0 ] && [ "$events" -eq "$regions" ] ||
        fail "$events GPU events for $regions regions (gputrace-check exit $crc)"
    echo "events: $events of $regions regions"
}

vkcube_run() { # vkcube_run ARGS... (of gputrace-ci)
    need_vkcube
    # vkcube records its command buffers once (simultaneous use): one
    # submission event per frame, 100 frames.
    run_ci 100 "$@" -- xvfb-run -a -s "-screen 0 640x480x24" vkcube --c 100
}

# MangoHud on, sampling its sensors once every 4.294 s instead of every
# 0.5 s. Debian 12's MangoHud 0.6.8 samples on a thread of its own that
# nothing stops before vkDestroyInstance unloads the library: a sample still
# running then uses the freed logger and CPU stats, and the program aborts
# (heap corruption, or std::system_error), with or without our layer
# (docs/ci.md, "Known problems" 12: forced in gdb). Its first sample comes
# at the first frame; with this period a vkcube run of up to 4.3 s takes no
# other, so no sample is in flight at the end (measured: 6 samples in a 4 s
# run at the default, 1 with this). 4294 ms is the longest period 0.6.8
# keeps: it holds the period in nanoseconds in 32 bits, so longer ones
# wrap (10000 is 1.4 s).
mangohud_on() {
    export MANGOHUD=1 MANGOHUD_CONFIG=fps_sampling_period=4294
}

case $case_name in
validation-below)
    explicit_manifest VkLayer_khronos_validation.json vulkan-validationlayers
    validation_settings
    export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_KHRONOS_validation
    workload
    validation_clean
    ;;
validation-above)
    explicit_manifest VkLayer_khronos_validation.json vulkan-validationlayers
    validation_settings
    export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation:VK_LAYER_GPUTRACE_timeline
    workload
    validation_clean
    ;;
gfxreconstruct-above)
    explicit_manifest VkLayer_gfxreconstruct.json gfxreconstruct
    gfxrecon_settings
    export VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct:VK_LAYER_GPUTRACE_timeline
    workload
    gfxrecon_readable
    ;;
gfxreconstruct-below)
    explicit_manifest VkLayer_gfxreconstruct.json gfxreconstruct
    gfxrecon_settings
    export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_LUNARG_gfxreconstruct
    workload
    gfxrecon_readable
    ;;
mangohud)
    implicit_manifest MangoHud.json mangohud
    mangohud_on
    workload
    ;;
vkbasalt)
    implicit_manifest vkBasalt.json vkbasalt
    export ENABLE_VKBASALT=1
    workload
    ;;
vkcube)
    vkcube_run
    ;;
vkcube-mangohud)
    implicit_manifest MangoHud.json mangohud
    mangohud_on
    vkcube_run
    ;;
vkcube-vkbasalt)
    implicit_manifest vkBasalt.json vkbasalt
    export ENABLE_VKBASALT=1
    vkcube_run
    ;;
stack)
    explicit_manifest VkLayer_khronos_validation.json vulkan-validationlayers
    explicit_manifest VkLayer_gfxreconstruct.json gfxreconstruct
    implicit_manifest MangoHud.json mangohud
    implicit_manifest vkBasalt.json vkbasalt
    need_vkcube
    mangohud_on
    export ENABLE_VKBASALT=1
    # The same stack without our layer first: what the neighbours report.
    validation_settings "$tmp/validation-base.txt"
    gfxrecon_settings "$tmp/capture-base.gfxr"
    export VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct:VK_LAYER_KHRONOS_validation
    run_bounded 240 xvfb-run -a -s "-screen 0 640x480x24" vkcube --c 100
    [ $rc -eq 0 ] || fail "vkcube without our layer exited with $rc"
    validation_settings
    gfxrecon_settings
    export VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct:VK_LAYER_GPUTRACE_timeline:VK_LAYER_KHRONOS_validation
    vkcube_run
    validation_not_ours "$tmp/validation-base.txt" "$tmp/validation.txt"
    gfxrecon_readable
    ;;
*)
    echo "neighbours_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
echo "ok: $case_name"
