# SPDX-License-Identifier: MIT
# gt_test_lib.sh — sourced by the clock-fault, fault-injection, neighbour
# and real-application tests (tests/faultlayer, tests/faults,
# tests/neighbours, tests/realapps; the meson.build files pass its path in
# GT_TEST_LIB). POSIX sh.
#
# Before sourcing: case_name set. Provides a private temp dir ($tmp), a
# lavapipe-only Vulkan environment, skip/fail helpers that show the logs,
# bounded runs, and small parsers for gputrace-workload and gputrace-check.
# Exit codes: 0 pass, 1 fail, 77 skip.

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-fault-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/gputrace.log

fail() {
    echo "FAIL ($case_name): $*" >&2
    for f in "$tmp"/out "$tmp"/err "$tmp"/check "$tmp"/truth.out "$log" "$tmp"/service.log; do
        if [ -s "$f" ]; then
            echo "--- $(basename "$f") (last 30 lines):" >&2
            tail -n 30 "$f" >&2
        fi
    done
    if [ -s "$tmp/stacks" ]; then
        echo "--- stacks of what was still running at the deadline:" >&2
        cat "$tmp/stacks" >&2
    fi
    exit 1
}

skip() {
    echo "SKIP ($case_name): $*"
    exit 77
}

need_exe() { # need_exe PATH WHAT
    [ -x "$1" ] || skip "$2 not built ($1)"
}

. "$(dirname "$0")/../common/installed_layer_guard.sh"
. "$(dirname "$0")/../common/hang_stacks.sh"

# Lavapipe only, and none of the user's layers, settings or faults.
. "$(dirname "$0")/../common/lavapipe_driver.sh"
gt_find_lavapipe || skip "lavapipe ICD manifest not found (Debian: mesa-vulkan-drivers)"
gt_use_lavapipe
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
unset VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH VK_LOADER_DEBUG \
      VK_LOADER_LAYERS_ENABLE VK_LOADER_LAYERS_DISABLE \
      GPUTRACE_ENABLE GPUTRACE_DISABLE GPUTRACE_LOG GPUTRACE_LOG_FILE \
      GPUTRACE_WORKLOAD_DEVICE GPUTRACE_OUTPUT GPUTRACE_BACKEND \
      GPUTRACE_CLOCK_BUDGET_NS GPUTRACE_CLOCK_SOURCE GPUTRACE_HOST_QUERY_RESET \
      GPUTRACE_FRAMES GPUTRACE_TRIGGER GPUTRACE_TRIGGER_SECONDS GPUTRACE_MEMORY \
      VK_LAYER_SETTINGS_PATH \
      PERFETTO_PRODUCER_SOCK_NAME MANGOHUD MANGOHUD_CONFIG MANGOHUD_CONFIGFILE ENABLE_VKBASALT
for v in $(env | sed -n 's/^\(GPUTRACE_FAULT_[A-Z_0-9]*\)=.*/\1/p'); do
    unset "$v"
done

# ASan builds: keep lavapipe mapped until exit so LeakSanitizer can still
# attribute its memory after the loader dlcloses it.
gt_preload=
if [ -n "${GT_WORKLOAD:-}" ]; then
    asan_rt=$(ldd "$GT_WORKLOAD" 2> /dev/null | awk '/libasan\.so/ { print $3; exit }')
    if [ -n "$asan_rt" ]; then
        lvp_lib=$(sed -n 's/.*"library_path"[^"]*"\([^"]*\)".*/\1/p' "$lvp")
        gt_preload="$asan_rt $lvp_lib"
    fi
fi

# run_bounded SECONDS CMD...: runs CMD with stdout in $tmp/out and stderr
# in $tmp/err, killed after SECONDS; sets $rc (124 = timed out). A crash
# (signal) or time-out always fails the test, a time-out with the stacks of
# what still ran a few seconds before it (hang_stacks.sh).
run_bounded() {
    secs=$1
    shift
    rc=0
    gt_watch $((secs > 10 ? secs - 5 : secs))
    if [ -n "$gt_preload" ]; then
        LD_PRELOAD="$gt_preload" timeout -k 5 "$secs" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
    else
        timeout -k 5 "$secs" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
    fi
    gt_unwatch
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "'$*' hung (killed after ${secs}s)"
    [ $rc -lt 128 ] || fail "'$*' crashed (exit $rc, signal $((rc - 128)))"
}

# run_ok SECONDS CMD...: run_bounded, and CMD must exit 0.
run_ok() {
    run_bounded "$@"
    [ $rc -eq 0 ] || fail "'$*' exited with $rc"
}

# The workload's summary, "gputrace-workload: frames=F submissions=S regions=R".
workload_field() { # workload_field NAME [FILE]
    grep '^gputrace-workload: frames=' "${2:-$tmp/out}" | head -n 1 | tr ' ' '\n' |
        sed -n "s/^$1=//p"
}

workload_regions() {
    r=$(workload_field regions)
    [ -n "$r" ] || fail "no gputrace-workload summary line"
    echo "$r"
}

# Clock names and ids the layer logged (GPUTRACE_LOG=info or debug).
clock_name_args() {
    sed -n 's/.*clock \(gputrace\/vk\/[^ ]*\) id .*/--clock-name \1/p' "$log" 2> /dev/null | sort -u
}

# --clock-deviation ID=NS from the layer's collector summary (debug log):
# the largest maxDeviation (or half bracket) it calibrated with, until the
# layer records it in the trace itself.
clock_deviation_args() {
    [ -s "$log" ] || return 0
    ids=$(sed -n 's/.*clock gputrace\/vk\/[^ ]* id \(0x[0-9a-f]*\).*/\1/p' "$log")
    devs=$(sed -n 's/.*collector: .* max deviation \([0-9]*\) ns.*/\1/p' "$log")
    set -- $ids
    for d in $devs; do
        [ $# -gt 0 ] || break
        echo "--clock-deviation $1=$d"
        shift
    done
}

# json_violation_codes FILE: "a,b,c" from a gputrace-check --json report.
json_violation_codes() {
    codes=$(grep -o '"code": "[a-z_]*"' "$1" | sed 's/.*: "\(.*\)"/\1/' | sort -u | tr '\n' ',')
    echo "${codes%,}"
}

# json_stat FILE NAME
json_stat() {
    grep -o "\"$2\": [0-9-]*" "$1" | head -n 1 | sed 's/.*: //'
}
