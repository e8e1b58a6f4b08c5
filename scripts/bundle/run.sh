#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh — gputrace on this machine's Vulkan driver, from this folder alone
# (README.txt; made by scripts/gpu-bundle). Needs no network and installs
# nothing; writes only into this folder (work/, results/) and into $OUT if
# set. About a minute on a GPU; every step is bounded, 5 minutes in all.
#
#   [OUT=DIR] ./run.sh [--quick] [--frames N] [--reps N] [--probe-option OPT]
#   timeout 600 ./run.sh          # one bounded command on a GPU machine
# --probe-option passes one more option to gputrace-probe (repeatable).
#
# Prints, and keeps in OUT (default results/): the device, driver and
# version; gputrace-probe's report (probe.json, probe.xml); gputrace-
# workload without the layer, with it, and writing the same timestamps
# itself (wall time, ratios, the layer's overhead over its timestamps' own
# cost, application-thread CPU per region); gputrace-check's verdict and
# conversion error bound on the layer's trace (trace.pftrace, check.json).
# Exit 0 all passed, 1 the probe or the check failed, 2 a step could not run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin
export PATH
frames=3000 reps=5 probe_args=
while [ $# -gt 0 ]; do
    case $1 in
    --quick) frames=150 reps=2 probe_args="--duration 0.3" ;;
    --frames) frames=${2:?--frames N} && shift ;;
    --reps) reps=${2:?--reps N} && shift ;;
    --probe-option) extra_probe="${extra_probe:-} ${2:?--probe-option OPT}" && shift ;;
    -h | --help) sed -n '2,18p' "$0" && exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2 && exit 2 ;;
    esac
    shift
done
probe_args="$probe_args ${extra_probe:-}"
out=${OUT:-$here/results}
work=$here/work
rm -rf "$work"
mkdir -p "$out" "$work/home" "$work/cache" "$work/config" "$work/data" "$work/run" "$work/tmp" \
    "$work/libs" || exit 2
chmod 700 "$work/run"
# Everything a driver, the loader or a library might write goes here.
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config" \
    XDG_DATA_HOME="$work/data" XDG_RUNTIME_DIR="$work/run" TMPDIR="$work/tmp" \
    MESA_SHADER_CACHE_DIR="$work/cache/mesa" __GL_SHADER_DISK_CACHE_PATH="$work/cache/nv"
unset VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH VK_LOADER_LAYERS_ENABLE GPUTRACE_OUTPUT \
    GPUTRACE_ENABLE GPUTRACE_BACKEND GPUTRACE_LOG GPUTRACE_LOG_FILE LD_PRELOAD
started=$(date +%s)

# ---- libraries: only those the machine lacks --------------------------------------------
# GPUTRACE_BUNDLE_LOADER=bundled takes the bundle's Vulkan loader even where
# the machine has one.
loader=system
link_missing() {
    for f in "$here"/bin/* "$here"/layer/*.so; do
        LD_LIBRARY_PATH="$work/libs" ldd "$f" 2> /dev/null | awk '/=> not found/ { print $1 }'
    done | sort -u
}
if [ "${GPUTRACE_BUNDLE_LOADER:-}" = bundled ]; then
    ln -s "$here/lib/loader/libvulkan.so.1" "$work/libs/" && loader=bundled
fi
if command -v ldd > /dev/null; then
    for round in 1 2 3; do # a bundled library may need another one
        for name in $(link_missing); do
            if [ -f "$here/lib/$name" ]; then
                ln -sf "$here/lib/$name" "$work/libs/$name"
            elif [ -f "$here/lib/loader/$name" ]; then
                ln -sf "$here/lib/loader/$name" "$work/libs/$name" && loader=bundled
            fi
        done
    done
else
    ln -sf "$here"/lib/*.so* "$work/libs/"
fi
# Libraries drivers load by name (libglvnd's), only where the machine has none.
has_lib() {
    command -v ldconfig > /dev/null && ldconfig -p 2> /dev/null | grep -q " $1 " && return 0
    for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /lib/x86_64-linux-gnu $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
        [ -e "$d/$1" ] && return 0
    done
    return 1
}
for f in "$here"/lib/driver/*; do
    [ -f "$f" ] || continue
    has_lib "$(basename "$f")" || ln -sf "$f" "$work/libs/$(basename "$f")"
done
# In front of the machine's own path, never instead of it: a driver's
# libraries may be found only through it (NVIDIA's containers keep
# libGLX_nvidia, which its ICD manifest names bare, in /usr/local/nvidia).
LD_LIBRARY_PATH="$work/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH

# ---- the report ------------------------------------------------------------------------------
section() { printf '\n== %s\n' "$*"; }
elapsed() { echo $(($(date +%s) - started)); }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'; }

machine() {
    section "machine"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel: $(uname -srm)"
    echo "libc: $(ldd --version 2> /dev/null | head -n 1)"
    sed -n '1,3p' "$here/MANIFEST.txt"
    echo "vulkan loader: $loader; from the bundle: $(ls "$work/libs" | tr '\n' ' ')"
    missing=$(link_missing)
    [ -z "$missing" ] || echo "WARNING: libraries found nowhere: $missing"
    if command -v nvidia-smi > /dev/null; then
        timeout 20 nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.mem \
            --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'
    fi
}

probe() {
    section "gputrace-probe (the driver's timestamps)"
    # shellcheck disable=SC2086 # probe_args is a word list
    timeout -k 5 180 "$here/bin/gputrace-probe" $probe_args --json "$out/probe.json" \
        --junit "$out/probe.xml"
    probe_rc=$?
    echo "run.sh: gputrace-probe exited $probe_rc"
    # The workload's device: GPUTRACE_WORKLOAD_DEVICE, else the first that is no CPU.
    if [ -z "${GPUTRACE_WORKLOAD_DEVICE:-}" ] && [ -s "$out/probe.json" ]; then
        GPUTRACE_WORKLOAD_DEVICE=$(awk '/^      "index":/ { gsub(/[^0-9]/, "", $2); i = $2 }
            /^      "type":/ && $2 !~ /"cpu"/ { print i; exit }' "$out/probe.json")
    fi
    GPUTRACE_WORKLOAD_DEVICE=${GPUTRACE_WORKLOAD_DEVICE:-0}
    export GPUTRACE_WORKLOAD_DEVICE
}

# run_variant NAME: one timed run; appends "wall_ns cpu_ns regions" to work/NAME.
run_variant() {
    set -- "$1" --frames "$frames" --thread-cpu
    case $1 in
    app) set -- "$@" --app-timestamps ;;
    esac
    name=$1
    shift
    t0=$(date +%s%N)
    if [ "$name" = layer ]; then
        VK_LAYER_PATH="$here/layer" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
            GPUTRACE_OUTPUT="$work/timed.pftrace" \
            timeout -k 5 60 "$here/bin/gputrace-workload" "$@" > "$work/wl.out" 2> "$work/wl.err"
    else
        timeout -k 5 60 "$here/bin/gputrace-workload" "$@" > "$work/wl.out" 2> "$work/wl.err"
    fi
    rc=$?
    t1=$(date +%s%N)
    line=$(grep '^gputrace-workload: frames=' "$work/wl.out")
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        echo "run.sh: gputrace-workload ($name) failed with $rc:"
        tail -n 5 "$work/wl.err"
        return 1
    fi
    echo "$line" > "$work/$name.line"
    echo "$((t1 - t0)) ${line##*thread_cpu_ns=} $(echo "$line" | sed 's/.* regions=\([0-9]*\).*/\1/')" \
        >> "$work/$name"
}

workload() {
    section "gputrace-workload: without the layer, with it, writing its timestamps itself"
    rounds=0
    for r in $(seq 1 "$reps"); do
        # Interleaved, in a rotating order; fewer rounds if time runs short.
        [ "$(elapsed)" -lt 200 ] || break
        case $((r % 3)) in
        0) order="plain layer app" ;;
        1) order="layer app plain" ;;
        *) order="app plain layer" ;;
        esac
        for v in $order; do run_variant "$v" || return 1; done
        rounds=$r
    done
    head -n 1 "$work/wl.err"
    for v in plain layer app; do
        eval "wall_$v=\$(awk '{ print \$1 / 1e9 }' \"\$work/$v\" | median)"
        eval "cpu_$v=\$(awk '{ print \$2 / \$3 }' \"\$work/$v\" | median)"
    done
    regions=$(awk '{ print $3; exit }' "$work/plain")
    echo "per run: $(sed 's/ thread_cpu_ns=.*//' "$work/plain.line" | sed 's/^gputrace-workload: //')" \
        "on device $GPUTRACE_WORKLOAD_DEVICE; medians of $rounds runs each"
    awk -v p="$wall_plain" -v l="$wall_layer" -v a="$wall_app" -v cp="$cpu_plain" \
        -v cl="$cpu_layer" -v ca="$cpu_app" 'BEGIN {
        printf "wall: plain %.3f s, layer %.3f s, app-timestamps %.3f s\n", p, l, a
        printf "ratios: layer / plain %.3f, app-timestamps / plain %.3f\n", l / p, a / p
        if (a - p > 0)
            printf "layer overhead over its timestamps\047 own cost: (layer - plain) / (app - plain) = %.2f (%.3f s / %.3f s)\n", (l - p) / (a - p), l - p, a - p
        else
            printf "layer overhead over its timestamps\047 own cost: n/a, the timestamps cost nothing measurable (app - plain = %.3f s; layer - plain = %.3f s)\n", a - p, l - p
        printf "application-thread CPU per region: plain %.0f ns, layer %.0f ns, app-timestamps %.0f ns (the layer adds %.0f ns)\n", cp, cl, ca, cl - cp
    }'
}

check() {
    section "gputrace-check on the layer's trace"
    VK_LAYER_PATH="$here/layer" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
        GPUTRACE_OUTPUT="$out/trace.pftrace" GPUTRACE_LOG=debug GPUTRACE_LOG_FILE="$out/layer.log" \
        timeout -k 5 60 "$here/bin/gputrace-workload" --frames "$frames" > "$work/wl.out" \
        2> "$work/wl.err" || {
        echo "run.sh: gputrace-workload under the layer failed"
        tail -n 5 "$work/wl.err"
        return 2
    }
    regions=$(sed -n 's/.* regions=\([0-9]*\).*/\1/p' "$work/wl.out")
    # The clock names and the deviation the layer logged (as tests/faultlayer does).
    set -- --no-progress --expect-gpu-events "${regions:-1}"
    for name in $(sed -n 's/.*clock \(gputrace\/vk\/[^ ]*\) id .*/\1/p' "$out/layer.log" | sort -u); do
        set -- "$@" --clock-name "$name"
    done
    id=$(sed -n 's/.*clock gputrace\/vk\/[^ ]* id \(0x[0-9a-f]*\).*/\1/p' "$out/layer.log" | head -n 1)
    dev=$(sed -n 's/.*collector: .* max deviation \([0-9]*\) ns.*/\1/p' "$out/layer.log" | head -n 1)
    [ -n "$id" ] && [ -n "$dev" ] && set -- "$@" --clock-deviation "$id=$dev"
    timeout -k 5 120 "$here/bin/gputrace-check" "$@" "$out/trace.pftrace"
    check_rc=$?
    timeout -k 5 120 "$here/bin/gputrace-check" --json "$@" "$out/trace.pftrace" > "$out/check.json"
    bound=$(grep '"scope": "global"' "$out/check.json" | head -n 1 |
        sed -n 's/.*"max_error_ns": \([-0-9a-z]*\).*/\1/p')
    case $check_rc in
    0) verdict=pass ;;
    1) verdict=FAIL ;;
    *) verdict="error ($check_rc)" ;;
    esac
    echo "run.sh: gputrace-check $verdict; GPU clock conversion error bound ${bound:-unknown} ns" \
        "(trace: $out/trace.pftrace, ${regions:-?} regions)"
}

main() {
    probe_rc=2 check_rc=2
    machine
    probe
    workload || echo "run.sh: the workload comparison did not complete"
    check
    section "summary"
    status=0
    [ "$probe_rc" -eq 0 ] && [ "$check_rc" -eq 0 ] || status=1
    [ "$probe_rc" -le 1 ] && [ "$check_rc" -le 1 ] || status=2
    echo "run.sh: probe exit $probe_rc, gputrace-check exit $check_rc; $(elapsed) s; results in $out"
    echo "$status" > "$work/status"
}

main 2>&1 | tee "$out/report.txt"
exit "$(cat "$work/status" 2> /dev/null || echo 2)"
