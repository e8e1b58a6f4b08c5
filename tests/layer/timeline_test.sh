#!/bin/sh
# SPDX-License-Identifier: MIT
# timeline_test.sh CASE — VK_LAYER_GPUTRACE_timeline's timing on lavapipe:
# run a program under the layer with a tracing backend, then check the
# trace with trace_check (and gputrace-check when the toolkit was built).
#
# Environment (set by meson.build):
#   GT_WORKLOAD        gputrace-workload
#   GT_CASES           timeline_cases
#   GT_TRACE_CHECK     trace_check
#   GT_GPUTRACE_CHECK  toolkit/gputrace-check (may not exist)
#   GT_EXPLICIT_DIR    build-tree explicit manifest directory
#   GT_CMDCHECK_DIR    manifest directory of VK_LAYER_GPUTRACE_cmdcheck
#   GT_GPUTRACE_SERVICE  toolkit/gputrace-service (may not exist)
#
# Each case prints the checker's summary line (event counts, largest
# conversion error against CLOCK_MONOTONIC, ...), so the test log holds the
# numbers. Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: timeline_test.sh CASE}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-timeline-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace

. "$(dirname "$0")/lavapipe_env.sh"
# No traced of the user's: the idle case must find no service.
export PERFETTO_PRODUCER_SOCK_NAME="$tmp/no-traced.sock"

# VK_ADD_LAYER_PATH keeps the system directories searched (validation).
export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"

asan_keep_lavapipe "$GT_WORKLOAD"


field() { # field NAME FILE
    sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$2" | head -n 1
}

# The clock names the layer logged (one per device).
clock_names() {
    sed -n 's/.*clock \(gputrace\/vk\/[^ ]*\) id .*/\1/p' "$log"
}

# check_trace ARGS...: trace_check on $trace (must pass), then
# gputrace-check with the logged clock names when it exists.
check_trace() {
    [ -s "$trace" ] || fail "no trace written"
    rc=0
    "$GT_TRACE_CHECK" "$@" "$trace" > "$tmp/check" 2>&1 || rc=$?
    cat "$tmp/check"
    [ $rc -eq 0 ] || fail "trace_check failed"
    if [ -x "${GT_GPUTRACE_CHECK:-}" ]; then
        expect=$(field events "$tmp/check")
        set --
        for n in $(clock_names); do
            set -- "$@" --clock-name "$n"
        done
        rc=0
        # shellcheck disable=SC2086 # gcheck_extra: options, split on purpose
        "$GT_GPUTRACE_CHECK" --no-progress --json "$@" ${gcheck_extra:-} \
            --expect-gpu-events "$expect" "$trace" > "$tmp/gcheck" 2>&1 || rc=$?
        [ $rc -eq 0 ] || { cat "$tmp/gcheck" >&2; fail "gputrace-check failed ($rc)"; }
        grep -q '"clock_sync_failure": 0' "$tmp/gcheck" || fail "gputrace-check: clock_sync_failure"
        echo "gputrace-check: pass ($# clock-name arguments, $expect events expected)"
    fi
}

# VK_LAYER_GPUTRACE_cmdcheck right below ours (and above validation, which
# the programs enable themselves): it checks where our timestamps and query
# resets land and prints a summary at vkDestroyInstance.
with_cmdcheck() {
    export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR:$GT_CMDCHECK_DIR"
    export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_GPUTRACE_cmdcheck
}

# cmdcheck_ok MIN_INSIDE MIN_MULTIVIEW: the last run's cmdcheck summary has
# no violation, and at least that many timestamps inside render pass
# instances / taking several queries (multiview).
cmdcheck_ok() {
    grep '^cmdcheck: ' "$tmp/err" || fail "no cmdcheck summary: layer not loaded"
    grep -q '^cmdcheck: batches=.* violations=0$' "$tmp/err" ||
        fail "cmdcheck found timestamps where Vulkan does not allow them"
    line=$(grep '^cmdcheck: batches=' "$tmp/err" | tail -n 1)
    ts=$(echo "$line" | sed -n 's/.* timestamps=\([0-9]*\).*/\1/p')
    inside=$(echo "$line" | sed -n 's/.* inside=\([0-9]*\).*/\1/p')
    multiview=$(echo "$line" | sed -n 's/.* multiview=\([0-9]*\).*/\1/p')
    [ "$ts" -gt 0 ] || fail "cmdcheck saw no timestamp: not below the timing layer?"
    [ "$inside" -ge "$1" ] || fail "only $inside timestamps inside render pass instances (< $1)"
    [ "$multiview" -ge "$2" ] || fail "only $multiview multiview timestamps (< $2)"
}

# The label checks timeline_cases prints for its render pass cases.
case_checks() {
    sed -n 's/^timeline_cases: checks://p' "$tmp/out"
}

summary_regions() {
    line=$(grep '^gputrace-workload: frames=' "$tmp/out" || true)
    [ -n "$line" ] || fail "no summary line"
    echo "$line" | sed -n 's/.* regions=\([0-9]*\).*/\1/p'
}

case $case_name in
workload)
    # The counts, nesting and clock conversion of a plain run; the label and
    # clear in the render pass's inline subpass are timed, legally.
    export GPUTRACE_OUTPUT="$trace"
    with_cmdcheck
    run "$GT_WORKLOAD" --frames 5
    regions=$(summary_regions)
    cmdcheck_ok 5 0
    check_trace --expect-events "$regions" --device-is-monotonic \
        --snapshot-tolerance-ns 1 --tolerance-ns 1000
    ;;

workload-readback)
    # Every way of reading results back gives every region (the log says
    # which ran; the default on lavapipe is the copy into mapped memory;
    # bulk reads the workload's command buffers, all one-time-submit, with
    # vkGetQueryPoolResults in bulk), and --work changes the GPU time, not
    # the regions.
    for mode in auto copy driver bulk; do
        export GPUTRACE_OUTPUT="$trace" GPUTRACE_QUERY_READBACK=$mode GPUTRACE_LOG=info \
               GPUTRACE_LOG_FILE="$tmp/readback-$mode.log"
        run "$GT_WORKLOAD" --frames 4 --threads 2 --work 3
        regions=$(summary_regions)
        [ "$regions" -eq 176 ] || fail "readback $mode: $regions regions, expected 176"
        want="from mapped memory,"
        [ $mode = bulk ] && want="from mapped memory (one-time-submit command buffers: with vkGetQueryPoolResults, in bulk)"
        [ $mode = driver ] && want="with vkGetQueryPoolResults,"
        grep -q "results read $want" "$tmp/readback-$mode.log" ||
            fail "readback $mode: the log does not say 'results read $want'"
        check_trace --expect-events "$regions" --device-is-monotonic \
            --snapshot-tolerance-ns 1 --tolerance-ns 1000
    done
    ;;

workload-names-below)
    # The debug-utils object names and labels the program gives reach the
    # layers below ours, also one that hands those commands out through
    # vkGetInstanceProcAddr only, as the Khronos validation layer (1.3.239)
    # does and cmdcheck imitates: cmdcheck counts the same with and without
    # the timing layer above it, and the label regions are timed. (Before
    # the fix the timing layer passed none of them on.)
    export GPUTRACE_OUTPUT="$trace"
    export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR:$GT_CMDCHECK_DIR"
    export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_cmdcheck
    run "$GT_WORKLOAD" --frames 3
    base=$(sed -n 's/^cmdcheck: .* \(names=[0-9]* labels=[0-9]*\) .*/\1/p' "$tmp/err")
    with_cmdcheck
    run "$GT_WORKLOAD" --frames 3
    ours=$(sed -n 's/^cmdcheck: .* \(names=[0-9]* labels=[0-9]*\) .*/\1/p' "$tmp/err")
    echo "cmdcheck without the timing layer: $base; below it: $ours"
    case $base in
    "names=0 "* | *" labels=0" | "") fail "the workload gave no names or labels: $base" ;;
    esac
    [ "$ours" = "$base" ] || fail "below the timing layer cmdcheck saw $ours, without it $base"
    cmdcheck_ok 0 0
    check_trace --expect-events "$(summary_regions)" \
        --device-is-monotonic --snapshot-tolerance-ns 1 --tolerance-ns 1000
    ;;

workload-threads)
    export GPUTRACE_OUTPUT="$trace"
    run "$GT_WORKLOAD" --frames 5 --threads 4 --queues 2
    regions=$(summary_regions)
    check_trace --expect-events "$regions" --device-is-monotonic \
        --snapshot-tolerance-ns 1 --tolerance-ns 1000
    ;;

workload-validate)
    found=
    for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | tr ':' ' '); do
        [ -f "$d/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" ] && found=1
    done
    [ -n "$found" ] || skip "VK_LAYER_KHRONOS_validation not installed"
    [ -z "$preload" ] || export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    export GPUTRACE_OUTPUT="$trace"
    with_cmdcheck
    # Host query reset (lavapipe's default), then the recorded-reset path
    # the layer takes on devices without it; then the other patterns
    # (render passes, multiview, suspended rendering).
    for hqr in 1 0; do
        export GPUTRACE_HOST_QUERY_RESET=$hqr
        run "$GT_WORKLOAD" --validate --frames 3 --threads 2 --queues 2
        grep -q '^gputrace-workload: validation: 0 error(s)$' "$tmp/err" ||
            fail "validation errors with GPUTRACE_HOST_QUERY_RESET=$hqr"
        cmdcheck_ok 1 0
        check_trace --expect-events "$(summary_regions)"
        rm -f "$trace"
        run "$GT_CASES" --validate
        grep -q '^timeline_cases: validation: 0 error(s)$' "$tmp/err" ||
            fail "validation errors in timeline_cases with GPUTRACE_HOST_QUERY_RESET=$hqr"
        cmdcheck_ok 1 1
        # shellcheck disable=SC2046 # the checks are words without spaces
        check_trace --expect-events "$(field events "$tmp/out")" $(case_checks)
    done
    ;;

cases)
    export GPUTRACE_OUTPUT="$trace"
    with_cmdcheck
    run "$GT_CASES"
    cmdcheck_ok 1 1
    events=$(field events "$tmp/out")
    subs=$(field submission_events "$tmp/out")
    # shellcheck disable=SC2046 # the checks are words without spaces
    check_trace --expect-events "$events" --expect-stage "Submission=$subs" $(case_checks) \
        --device-is-monotonic --snapshot-tolerance-ns 1 --tolerance-ns 1000
    [ "$(field clocks "$tmp/check")" -eq 2 ] || fail "expected two device clocks"
    [ "$(clock_names | sort -u | wc -l)" -eq 2 ] || fail "expected two clock names in the log"
    ;;

cases-no-host-reset)
    # Without host query reset no new query chunk can be started inside a
    # render pass instance: fewer regions (timeline_cases knows which), and
    # the recorded resets must all lie outside instances.
    export GPUTRACE_OUTPUT="$trace" GPUTRACE_HOST_QUERY_RESET=0
    with_cmdcheck
    run "$GT_CASES"
    cmdcheck_ok 1 1
    grep -q '^cmdcheck: .* resets=[1-9]' "$tmp/err" || fail "no recorded query reset"
    # shellcheck disable=SC2046 # the checks are words without spaces
    check_trace --expect-events "$(field events "$tmp/out")" \
        --expect-stage "Submission=$(field submission_events "$tmp/out")" $(case_checks) \
        --device-is-monotonic --snapshot-tolerance-ns 1 --tolerance-ns 1000
    ;;

bracket)
    # The fallback clock: error bounded by the bracket (logged), so the
    # truth check gets a wide tolerance; counts and nesting stay exact.
    export GPUTRACE_OUTPUT="$trace" GPUTRACE_CLOCK_SOURCE=bracket GPUTRACE_LOG=debug
    run "$GT_WORKLOAD" --frames 5
    grep -q 'timing with bracket calibration' "$log" || fail "bracket calibration not used"
    # The error stays within the recorded bound: half the widest bracket
    # taken (+1 us for the host clocks' own offsets). On a loaded machine a
    # bracket can be a few hundred us wide, so a GPU stage may appear to
    # start up to that much before its vkQueueSubmit, and two snapshots a
    # few ms apart may differ by up to twice the bound without any drift
    # (-8000 ppm with two busy loops): gputrace-check is told the bound as
    # each clock's deviation and as the submit tolerance (it cannot know a
    # bound from a single snapshot).
    bound=$(sed -n 's/.*bracket calibration: +-\([0-9]*\) ns.*/\1/p' "$log" | sort -n | tail -n 1)
    [ -n "$bound" ] || fail "no bracket calibration logged"
    gcheck_extra="--submit-tolerance-ns $((bound + 1000))"
    for id in $(sed -n 's/.*clock gputrace\/vk\/[^ ]* id \(0x[0-9a-f]*\).*/\1/p' "$log"); do
        gcheck_extra="$gcheck_extra --clock-deviation $id=$bound"
    done
    check_trace --expect-events "$(summary_regions)" --device-is-monotonic \
        --snapshot-tolerance-ns 1000000000 --tolerance-ns 1000000000
    err=$(field max_conversion_error_ns "$tmp/check")
    [ "$err" -le $((bound + 1000)) ] || fail "conversion error $err ns exceeds the bracket bound $bound ns"
    echo "bracket bound +-$bound ns, conversion error $err ns"
    ;;

exit-without-destroy)
    # No vkDestroyDevice / vkDestroyInstance: the library destructor ends
    # the session, and the file is complete (TraceStats, all events).
    export GPUTRACE_OUTPUT="$trace"
    run "$GT_CASES" --no-destroy
    grep -q 'session ended at process exit' "$log" || fail "session not ended at exit"
    check_trace --expect-events "$(field events "$tmp/out")" --expect-trace-stats
    ;;

system)
    # The system backend against gputrace-service (a producer socket of our
    # own): tracing starts when the service starts the data source, which
    # may be a little after the program's first submissions, so the count
    # is a lower bound here; everything else is checked as usual.
    [ -x "${GT_GPUTRACE_SERVICE:-}" ] || skip "gputrace-service not built"
    export PERFETTO_PRODUCER_SOCK_NAME="$tmp/producer.sock" GPUTRACE_BACKEND=system
    start_service "$trace"
    run "$GT_WORKLOAD" --frames 20
    stop_service
    grep -q 'tracing started' "$log" || fail "the data source was never started"
    check_trace --device-is-monotonic --snapshot-tolerance-ns 1 --tolerance-ns 1000
    [ "$(field events "$tmp/check")" -gt 0 ] || fail "no GPU events through the system backend"
    ;;

idle)
    # No session (no traced to connect to, or the backend switched off):
    # the layer passes everything through and writes no file.
    for backend in system none; do
        rm -f "$log"
        export GPUTRACE_BACKEND=$backend
        run "$GT_WORKLOAD" --frames 3
        summary_regions > /dev/null
        ! grep -q 'tracing started' "$log" || fail "tracing started with GPUTRACE_BACKEND=$backend"
        [ ! -e "$trace" ] || fail "a trace was written"
        ! ls gputrace-*.pftrace > /dev/null 2>&1 || fail "a default trace was written"
        if [ $backend = system ]; then
            grep -q 'system backend unavailable\|system backend: producer' "$log" ||
                fail "no log line about the system backend"
            grep 'system backend' "$log"
        fi
    done
    ;;

*)
    echo "timeline_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

echo "ok: $case_name"
