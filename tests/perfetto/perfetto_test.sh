#!/bin/bash
# SPDX-License-Identifier: MIT
# perfetto_test.sh CASE — gputrace-workload's traces as Perfetto's own
# trace_processor_shell (v47) imports them, checked with SQL:
#   embedded       one workload, the layer's embedded backend (GPUTRACE_OUTPUT)
#   traced         one workload through real traced, with traced_probes
#                  (linux.process_stats) beside it, recorded by `perfetto`
#   two-processes  two workloads at once through traced, into one trace
#   two-sessions   one workload, two sessions of traced at once, the second
#                  asking for low overhead (GT_LOW_OVERHEAD_CFG): both complete
#   late-session   a session of traced started after the workload named its
#                  objects, stopped before it ends: the names are there
#   low-overhead   one workload, embedded backend, GPUTRACE_LOW_OVERHEAD=1
# What each trace must show (checks.sh): no error or data_loss stat; one
# render-stage slice per region the workload counted (its summary line),
# one vkQueueSubmit slice per submission; command buffers at depth 0 and
# everything else nested in them; stage names and args; one queue track;
# the workload's process (named, where the trace names it), its slices
# under its own upid; and the lines of README's "What you see in
# ui.perfetto.dev". Each trace also goes through gputrace-check, whose
# trace-clock times of the GPU stages must be trace_processor's.
#
# Environment (set by meson.build):
#   GT_WORKLOAD      gputrace-workload
#   GT_EXPLICIT_DIR  build-tree explicit manifest directory (the layer)
#   GT_GPUTRACE_CHECK  toolkit/gputrace-check (may not be built)
#   PERFETTO_BIN     a folder with traced, traced_probes, perfetto and
#                    trace_processor_shell (scripts/lib.sh sets it from
#                    ../shared/perfetto/bin); without it: SKIP (exit 77)
# Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: perfetto_test.sh embedded|traced|two-processes}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-perfetto-test.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    wait 2> /dev/null || true
    [ -z "${GT_KEEP:-}" ] || cp -r "$tmp" "$GT_KEEP"
    rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace

. "$here/../layer/lavapipe_env.sh"

needed=(trace_processor_shell)
[ "$case_name" = embedded ] || [ "$case_name" = low-overhead ] || needed+=(traced traced_probes perfetto)
[ -n "${PERFETTO_BIN:-}" ] ||
    skip "PERFETTO_BIN is not set (a folder with Perfetto's ${needed[*]};" \
        "scripts/lib.sh sets it when ../shared/perfetto/bin exists)"
for b in "${needed[@]}"; do
    [ -x "$PERFETTO_BIN/$b" ] || skip "$PERFETTO_BIN/$b is missing"
done
tp=$PERFETTO_BIN/trace_processor_shell
"$tp" --version > "$tmp/tp-version" 2>&1 ||
    fail "$tp does not run (it needs libprotobuf32, libsqlite3-0, zlib1g): $(cat "$tmp/tp-version")"
echo "trace_processor: $(head -n 1 "$tmp/tp-version")"

# No traced of the user's, ever: the embedded case must not find one, the
# others start their own.
export PERFETTO_PRODUCER_SOCK_NAME=$tmp/producer.sock PERFETTO_CONSUMER_SOCK_NAME=$tmp/consumer.sock
export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
asan_keep_lavapipe "$GT_WORKLOAD"
preload_env=()
[ -z "$preload" ] || preload_env=(LD_PRELOAD="$preload")

# start_workload NAME ARGS...: gputrace-workload in the background, its
# output in $tmp/NAME.out; its pid appended to $workload_pids.
workload_pids=()
start_workload() {
    local name=$1
    shift
    env "${preload_env[@]}" "$GT_WORKLOAD" "$@" > "$tmp/$name.out" 2>&1 &
    workload_pids+=($!)
}

# wait_workloads NAME...: each must exit 0 and print its summary line.
wait_workloads() {
    local i=0 name
    for name in "$@"; do
        wait "${workload_pids[$i]}" || fail "gputrace-workload ($name) failed: $(cat "$tmp/$name.out")"
        grep -q 'regions=' "$tmp/$name.out" || fail "no summary line from $name"
        grep 'regions=' "$tmp/$name.out"
        i=$((i + 1))
    done
}

wait_for() { # FILE PATTERN SECONDS
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -q "$2" "$1" 2> /dev/null && return 0
        sleep 0.05
    done
    return 1
}

# A private traced and traced_probes, and a `perfetto` session recording
# into $trace until stop_session.
start_session() {
    "$PERFETTO_BIN/traced" > "$tmp/traced.log" 2>&1 &
    pids+=($!)
    wait_for "$tmp/traced.log" "Started traced" 5 || fail "traced did not start: $(cat "$tmp/traced.log")"
    "$PERFETTO_BIN/traced_probes" > "$tmp/probes.log" 2>&1 &
    pids+=($!)
    # traced_probes logs nothing when its data sources are registered; a
    # data source registered later is still started for the session, but
    # the initial process scan would then come late.
    sleep 0.3
    "$PERFETTO_BIN/perfetto" --txt -c "$here/session.cfg.txt" -o "$trace" \
        > "$tmp/perfetto.log" 2>&1 &
    perfetto_pid=$!
    wait_for "$tmp/perfetto.log" "Connected to the Perfetto traced service" 5 ||
        fail "perfetto did not connect: $(cat "$tmp/perfetto.log")"
    # The layer waits at vkCreateDevice for a session that is starting
    # (GPUTRACE_STARTUP_WAIT_MS), so the workloads may start right away.
    export GPUTRACE_BACKEND=system GPUTRACE_STARTUP_WAIT_MS=5000
}

stop_session() {
    # SIGINT ends the session as its duration would: flush, then write.
    kill -INT "$perfetto_pid"
    wait "$perfetto_pid" || fail "perfetto failed: $(cat "$tmp/perfetto.log")"
    [ -s "$trace" ] || fail "perfetto wrote no trace: $(cat "$tmp/perfetto.log")"
}

# A second `perfetto` session beside start_session's, with the binary
# low-overhead config, recording into $tmp/coarse.pftrace.
start_coarse_session() {
    [ -f "${GT_LOW_OVERHEAD_CFG:-}" ] || fail "GT_LOW_OVERHEAD_CFG does not name the built config"
    "$PERFETTO_BIN/perfetto" -c "$GT_LOW_OVERHEAD_CFG" -o "$tmp/coarse.pftrace" \
        > "$tmp/perfetto2.log" 2>&1 &
    perfetto2_pid=$!
    wait_for "$tmp/perfetto2.log" "Connected to the Perfetto traced service" 5 ||
        fail "the second perfetto did not connect: $(cat "$tmp/perfetto2.log")"
}

stop_coarse_session() {
    kill -INT "$perfetto2_pid"
    wait "$perfetto2_pid" || fail "the second perfetto failed: $(cat "$tmp/perfetto2.log")"
    [ -s "$tmp/coarse.pftrace" ] || fail "the second perfetto wrote no trace"
}

. "$here/checks.sh"

case $case_name in
embedded)
    export GPUTRACE_OUTPUT="$trace"
    start_workload w1 --frames 3
    wait_workloads w1
    [ -s "$trace" ] || fail "no trace written"
    check_workload_trace embedded w1
    ;;
traced)
    start_session
    start_workload w1 --frames 3
    wait_workloads w1
    stop_session
    check_workload_trace traced w1
    ;;
two-processes)
    start_session
    start_workload w1 --frames 3
    start_workload w2 --frames 2
    wait_workloads w1 w2
    stop_session
    check_workload_trace traced w1 w2
    ;;
two-sessions)
    # Two sessions of traced enable gpu.renderstages at once, one of them
    # asking for low overhead: each gets its own complete trace.
    start_session
    start_coarse_session
    start_workload w1 --frames 3
    wait_workloads w1
    stop_coarse_session
    stop_session
    check_workload_trace traced w1
    trace=$tmp/coarse.pftrace
    check_coarse_trace w1
    ;;
late-session)
    # The session starts after the workload named its objects and runs for
    # part of it only: the names must still be in the trace (written when
    # the data source starts).
    "$PERFETTO_BIN/traced" > "$tmp/traced.log" 2>&1 &
    pids+=($!)
    wait_for "$tmp/traced.log" "Started traced" 5 || fail "traced did not start: $(cat "$tmp/traced.log")"
    export GPUTRACE_BACKEND=system
    start_workload w1 --frames 100000
    wait_for "$log" "the service has no session for" 10 ||
        fail "the layer did not hear from traced: $(cat "$log")"
    sleep 0.5
    "$PERFETTO_BIN/perfetto" --txt -c "$here/session.cfg.txt" -o "$trace" > "$tmp/perfetto.log" 2>&1 &
    perfetto_pid=$!
    wait_for "$log" "tracing started" 10 || fail "the session did not start the data source: $(cat "$log")"
    sleep 1
    stop_session
    # (SIGTERM: a background job of a script ignores SIGINT.)
    kill -TERM "${workload_pids[0]}" 2> /dev/null || true
    wait "${workload_pids[0]}" 2> /dev/null || true
    pid=${workload_pids[0]}
    st=$(stages_of "$pid")
    expect_nonzero "late session: render-stage slices" "select count(*) from $st"
    expect "late session: every stage names its command buffer" 0 \
        "select count(*) from $st where command_buffer_name is null
           or command_buffer_name not like 'wl % cb 0'"
    expect "late session: render passes name their render pass" 0 \
        "select count(*) from $st where name = 'Render pass'
           and render_pass_name is not 'wl render pass'"
    expect "late session: label slices named after their text" 0 \
        "select count(*) from $st where name = 'Debug label'"
    ;;
low-overhead)
    export GPUTRACE_OUTPUT="$trace" GPUTRACE_LOW_OVERHEAD=1
    start_workload w1 --frames 3
    wait_workloads w1
    [ -s "$trace" ] || fail "no trace written"
    check_coarse_trace w1
    ;;
*)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac
echo "PASS ($case_name): $checks SQL checks"
