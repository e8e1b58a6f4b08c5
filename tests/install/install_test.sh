#!/bin/bash
# SPDX-License-Identifier: MIT
# install_test.sh — `meson install` into a private DESTDIR, then what a user of
# the installed tree sees: exactly the files of expected-files.txt, both
# manifests valid and in agreement, the layer listed as the running loader
# lists two manifests of one name, and every way of enabling it (alone and in
# pairs) inserting it exactly once and tracing a program; GPUTRACE_DISABLE and
# VK_LOADER_LAYERS_DISABLE keeping it out as docs/layer.md, "Enabling", says.
#
# Environment (set by meson.build):
#   GT_MESON           the meson that configured this build
#   GT_SOURCE_ROOT GT_BUILD_ROOT   source and build directories
#   GT_PREFIX GT_BINDIR GT_LIBDIR GT_DATADIR GT_MANDIR   absolute install dirs
#   GT_EXPECTED        expected-files.txt
#   GT_CHECK_MANIFEST  check_manifest.py
#   GT_WORKLOAD        gputrace-workload (a test program, never installed: the
#                      one thing taken from the build tree)
#
# Everything else comes from the install tree: the loader sees only its
# datadir (XDG_DATA_DIRS; empty XDG home and config dirs; no VK_*LAYER_PATH),
# the dynamic linker its libdir, traces are checked with its gputrace-check.
# Whether the loader inserted the layer is read from the loader's own log
# (VK_LOADER_DEBUG=layer: one `Insert instance layer` line per instance, one
# `Inserted device layer` per device); whether it ran, from the layer's
# (GPUTRACE_LOG=info: `gputrace: layer active` at vkCreateInstance, or
# `layer disabled by GPUTRACE_DISABLE`).
# Exit 0 pass, 1 fail.
set -eu

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace
layer=VK_LAYER_GPUTRACE_timeline

fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp/out" "$tmp/err" "$tmp/check" "$log"; do
        if [ -s "$f" ]; then
            echo "--- $(basename "$f"):" >&2
            tail -n 30 "$f" >&2
        fi
    done
    exit 1
}

# ---- the install tree: exactly the expected files ----
"$GT_MESON" install -C "$GT_BUILD_ROOT" --destdir "$root" --no-rebuild --quiet \
    > "$tmp/out" 2> "$tmp/err" || fail "meson install --destdir failed"

sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$GT_EXPECTED" | awk '{ print $1 }' |
    sed -e "s|@bindir@|$GT_BINDIR|" -e "s|@libdir@|$GT_LIBDIR|" \
        -e "s|@datadir@|$GT_DATADIR|" -e "s|@mandir@|$GT_MANDIR|" | sort > "$tmp/expected"
(cd "$root" && find . ! -type d | sed 's|^\.||' | sort) > "$tmp/installed"
if ! diff -u "$tmp/expected" "$tmp/installed" > "$tmp/out"; then
    echo "install tree differs from $GT_EXPECTED (- expected, + installed):" >&2
    cat "$tmp/out" >&2
    exit 1
fi
echo "ok: $(wc -l < "$tmp/installed") files installed, as listed"

# ---- the installed manifests ----
implicit=$root$GT_DATADIR/vulkan/implicit_layer.d/VkLayer_gputrace_timeline.json
explicit=$root$GT_DATADIR/vulkan/explicit_layer.d/VkLayer_gputrace_timeline.json
python3 "$GT_CHECK_MANIFEST" "$GT_SOURCE_ROOT" "$implicit" "$explicit" > "$tmp/out" 2>&1 ||
    fail "the installed manifests do not check out"
sed 's/^/  /' "$tmp/out"
description=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["layer"]["description"])' "$implicit")
echo "ok: both installed manifests carry the layer's features.settings (Vulkan Configurator)"

# ---- the loader sees only the install tree ----
. "$(dirname "$0")/../common/lavapipe_driver.sh"
gt_find_lavapipe || fail "lavapipe ICD manifest not found (Debian: mesa-vulkan-drivers, scripts/lib.sh)"
command -v vulkaninfo > /dev/null || fail "vulkaninfo not found (Debian: vulkan-tools, scripts/lib.sh)"
mkdir -p "$tmp/empty" "$tmp/run"
gt_use_lavapipe
export HOME="$tmp/empty" XDG_DATA_HOME="$tmp/empty" XDG_CONFIG_HOME="$tmp/empty" \
    XDG_CONFIG_DIRS="$tmp/empty" XDG_DATA_DIRS="$root$GT_DATADIR"
# The manifests name the library bare, as installed into a system libdir;
# only the install tree's libdir, never the build tree meson test adds.
export LD_LIBRARY_PATH="$root$GT_LIBDIR"
unset VK_LAYER_PATH VK_ADD_LAYER_PATH VK_IMPLICIT_LAYER_PATH VK_ADD_IMPLICIT_LAYER_PATH \
      VK_INSTANCE_LAYERS VK_LOADER_LAYERS_ENABLE VK_LOADER_LAYERS_DISABLE VK_LOADER_DEBUG \
      VK_LAYER_SETTINGS_PATH
for v in $(env | sed -n 's/^\(\(VK_\)\{0,1\}GPUTRACE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
# A sanitizer build's layer needs its runtime loaded first in programs that
# were not built with it; their own leaks are not ours to report (and the
# loader's dlclose of lavapipe leaves LeakSanitizer nothing to name).
asan_rt=$(ldd "$root$GT_LIBDIR/libVkLayer_gputrace_timeline.so" 2> /dev/null |
    awk '/libasan\.so/ { print $3; exit }')
# $preload_env: what `env` needs to run a Vulkan program with that runtime.
preload_env=()
if [ -n "$asan_rt" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    preload_env=(LD_PRELOAD="$asan_rt")
fi
check_tool=$root$GT_BINDIR/gputrace-check
[ -x "$check_tool" ] || fail "$check_tool is not installed"
export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"

env "${preload_env[@]}" vulkaninfo --summary > "$tmp/out" 2> "$tmp/err" ||
    fail "vulkaninfo --summary failed"
# Loader 1.3.239 lists both manifests of the name; from 1.4.340 on (commit
# 28a23dbbb, "Remove duplicates from vkEnumerateInstanceLayerProperties")
# the loader keeps the first it scanned, the implicit one.
loader_version=$(sed -n 's/^Vulkan Instance Version: *\([0-9][0-9.]*\).*/\1/p' "$tmp/out" | head -n 1)
[ -n "$loader_version" ] || fail "vulkaninfo --summary names no Vulkan Instance Version"
IFS=. read -r v_major v_minor v_patch <<< "$loader_version"
if [ $((v_major * 1000000 + v_minor * 1000 + v_patch)) -lt 1004340 ]; then
    want_listed=2
else
    want_listed=1
fi
listed=$(grep -c "$layer" "$tmp/out" || true)
[ "$listed" = "$want_listed" ] ||
    fail "vulkaninfo --summary (loader $loader_version) lists $layer $listed times, expected $want_listed"
grep "$layer" "$tmp/out" | grep -vqF "$description" &&
    fail "vulkaninfo does not show every listing with the description '$description'"
echo "ok: loader $loader_version lists the layer $listed time(s), as expected:"
grep "$layer" "$tmp/out" | sed 's/  */ /g; s/^/  /'
[ ! -s "$log" ] || fail "the layer ran in vulkaninfo though nothing enabled it"

# ---- the ways of enabling it ----
# Each a word; route_env and route_args say what it sets.
routes="instance_layers enable loader_enable app"
route_env() {
    case $1 in
    instance_layers) echo "VK_INSTANCE_LAYERS=$layer" ;;
    enable) echo "GPUTRACE_ENABLE=1" ;;
    loader_enable) echo "VK_LOADER_LAYERS_ENABLE=$layer" ;;
    app) ;;
    esac
}
route_args() {
    [ "$1" != app ] || echo "--layer $layer"
}
route_name() {
    case $1 in
    app) echo "ppEnabledLayerNames" ;;
    *) route_env "$1" ;;
    esac
}

# run_workload ROUTE... [-- VAR=VALUE...]: gputrace-workload enabled every
# ROUTE way, with the extra variables; fills $tmp/out, $tmp/err, $log, and
# sets rc, inserted (instance layer insertions), device_inserted, state
# (active, pass-through or absent).
run_workload() {
    local envs=() args=() r
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        r=$1
        shift
        [ -z "$(route_env "$r")" ] || envs+=("$(route_env "$r")")
        # shellcheck disable=SC2207
        [ -z "$(route_args "$r")" ] || args+=($(route_args "$r"))
    done
    [ $# -eq 0 ] || shift
    envs+=("$@")
    rm -f "$log" "$trace"
    rc=0
    (cd "$tmp/run" && env "${preload_env[@]}" "${envs[@]}" VK_LOADER_DEBUG=layer \
        GPUTRACE_OUTPUT="$trace" "$GT_WORKLOAD" --frames 3 "${args[@]}" \
        > "$tmp/out" 2> "$tmp/err") || rc=$?
    inserted=$(grep -c "Insert instance layer \"$layer\"" "$tmp/err" || true)
    device_inserted=$(grep -c "Inserted device layer \"$layer\"" "$tmp/err" || true)
    if grep -q 'gputrace: layer active' "$log" 2> /dev/null; then
        state=active
    elif grep -q 'gputrace: layer disabled by GPUTRACE_DISABLE' "$log" 2> /dev/null; then
        state=pass-through
    else
        state=absent
    fi
}

# expect_traced WHAT: the last run succeeded, inserted the layer once into its
# instance and its device, and wrote a trace that the installed
# gputrace-check passes with exactly one GPU render stage per region the
# workload counted.
expect_traced() {
    [ "$rc" = 0 ] || fail "$1: gputrace-workload exited with $rc"
    [ "$inserted" = 1 ] || fail "$1: the loader inserted the layer into the instance $inserted times, not once"
    [ "$device_inserted" = 1 ] ||
        fail "$1: the loader inserted the layer into the device $device_inserted times, not once"
    [ "$state" = active ] || fail "$1: the layer is $state, expected active"
    local regions
    regions=$(sed -n 's/.*regions=\([0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$regions" ] || fail "$1: no summary line from gputrace-workload"
    [ -s "$trace" ] || fail "$1: no trace written"
    "$check_tool" --no-progress --json --expect-gpu-events "$regions" "$trace" \
        > "$tmp/check" 2>&1 || fail "$1: $check_tool fails the trace"
    local events
    events=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["gpu_render_stage_events"])' "$tmp/check")
    [ "$events" = "$regions" ] || fail "$1: $events GPU render stages in the trace, $regions regions"
    echo "ok: $1: inserted once, traced, gputrace-check passes ($events stages = regions)"
}

# expect_untraced WHAT STATE INSERTED: the last run succeeded without a trace,
# the layer in STATE (absent or pass-through) and inserted INSERTED times.
expect_untraced() {
    [ "$rc" = 0 ] || fail "$1: gputrace-workload exited with $rc"
    [ "$state" = "$2" ] || fail "$1: the layer is $state, expected $2"
    [ "$inserted" = "$3" ] || fail "$1: the loader inserted the layer $inserted times, expected $3"
    [ ! -e "$trace" ] || fail "$1: a trace was written"
    echo "ok: $1: $2 (inserted $3 times), no trace"
}

set -- $routes
for a in "$@"; do
    run_workload "$a"
    expect_traced "$(route_name "$a")"
done
# Every pair: the loader still inserts the layer once (docs/layer.md,
# "Enabling": by name in the enable list, else when building the chain).
while [ $# -gt 1 ]; do
    a=$1
    shift
    for b in "$@"; do
        run_workload "$a" "$b"
        expect_traced "$(route_name "$a") + $(route_name "$b")"
    done
done

# GPUTRACE_DISABLE=1: the implicit way is the loader's to refuse; the loader
# takes explicit layers (VK_INSTANCE_LAYERS, and VK_LOADER_LAYERS_ENABLE and
# ppEnabledLayerNames where they find the explicit manifest or bypass
# disable_environment) without reading it, and the layer passes through.
for a in $routes; do
    run_workload "$a" -- GPUTRACE_DISABLE=1
    case $a in
    enable) expect_untraced "$(route_name "$a") + GPUTRACE_DISABLE=1" absent 0 ;;
    *) expect_untraced "$(route_name "$a") + GPUTRACE_DISABLE=1" pass-through 1 ;;
    esac
done

# VK_LOADER_LAYERS_DISABLE (loader 1.3.234 or later) takes the layer out of
# the list altogether: no way loads it, and an application that names it
# fails to create its instance. Only VK_LOADER_LAYERS_ENABLE naming it too
# wins over it, as the loader documents.
for a in $routes; do
    run_workload "$a" -- VK_LOADER_LAYERS_DISABLE=$layer
    what="$(route_name "$a") + VK_LOADER_LAYERS_DISABLE=$layer"
    case $a in
    loader_enable) expect_traced "$what" ;;
    app)
        [ "$rc" != 0 ] && grep -q VK_ERROR_LAYER_NOT_PRESENT "$tmp/err" ||
            fail "$what: expected vkCreateInstance to fail with VK_ERROR_LAYER_NOT_PRESENT (exit $rc)"
        [ "$state" = absent ] && [ "$inserted" = 0 ] || fail "$what: the layer was loaded"
        echo "ok: $what: vkCreateInstance fails with VK_ERROR_LAYER_NOT_PRESENT, layer not loaded"
        ;;
    *) expect_untraced "$what" absent 0 ;;
    esac
done
echo "PASS"
