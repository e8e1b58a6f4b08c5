#!/bin/bash
# SPDX-License-Identifier: MIT
# perfetto_test.sh CASE VERSION — gputrace-workload's traces as Perfetto's
# own trace_processor_shell imports them, checked with SQL, for Perfetto
# VERSION (47 or 58; tp_lib.sh says where each one is):
#   embedded       one workload, the layer's embedded backend (GPUTRACE_OUTPUT)
#   low-overhead   one workload, embedded backend, GPUTRACE_LOW_OVERHEAD=1
#   service        one workload through gputrace-service
#   traced         one workload through VERSION's traced, with traced_probes
#                  (linux.process_stats) beside it, recorded by its `perfetto`
#   two-processes  two workloads at once through traced, into one trace
#   two-sessions   one workload, two sessions of traced at once, the second
#                  asking for low overhead: both complete. v47's `--txt`
#                  parser lacks gpu_renderstages_config, so v47 gets the
#                  config encoded with protoc (GT_LOW_OVERHEAD_CFG); v58
#                  reads low_overhead.cfg.txt as text
#   late-session   a session of traced started after the workload named its
#                  objects, stopped before it ends: the names are there
#   zstd           (58 only) one workload through traced, which compresses
#                  the trace with zstd (zstd.cfg.txt): gputrace-check reads
#                  it, v58 shows everything; v47 skips the compressed
#                  packets, and shows exactly that
# The embedded backend's and gputrace-service's traces do not depend on the
# Perfetto version: they are checked in VERSION's trace_processor. A trace
# recorded through VERSION's traced is checked in both trace processors,
# VERSION's first (a trace of today's traced must read in v47 and the
# other way round); when the other version is missing the test says so and
# ends in SKIP after its checks.
# What each trace must show (checks.sh): no error or data_loss stat; one
# render-stage slice per region the workload counted (its summary line),
# one vkQueueSubmit slice per submission; every stage inside its command
# buffer (v47: by depth; v58: by time, as it lays overlapping stages on
# further tracks); stage names and args; the queue track(s); the GPU; the
# workload's process (named, where the trace names it), its slices under
# its own upid; and the lines of README's "What you see in ui.perfetto.dev".
# Each trace also goes through gputrace-check, whose trace-clock times of
# the GPU stages must be trace_processor's.
#
# Environment (set by meson.build):
#   GT_WORKLOAD      gputrace-workload
#   GT_EXPLICIT_DIR  build-tree explicit manifest directory (the layer)
#   GT_GPUTRACE_CHECK  toolkit/gputrace-check (may not be built)
#   GT_GPUTRACE_SERVICE  toolkit/gputrace-service (may not be built)
#   GT_LOW_OVERHEAD_CFG  low_overhead.cfg.txt encoded by protoc (for v47)
#   PERFETTO_BIN, PERFETTO_V58_BIN  the folders of v47 and v58 (tp_lib.sh;
#                    scripts/lib.sh sets them); without VERSION's: SKIP (77)
# Exit 0 pass, 1 fail, 77 skip.
set -eu

test_case=${1:?usage: perfetto_test.sh CASE VERSION}
version=${2:?usage: perfetto_test.sh CASE VERSION (47 or 58)}
# What lavapipe_env.sh's fail and skip name: the case and the version.
case_name=$test_case-v$version
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-perfetto-test.XXXXXX")
pids=()
svc=
cleanup() {
    local p
    for p in "${pids[@]}" $svc; do kill "$p" 2> /dev/null || true; done
    wait 2> /dev/null || true
    [ -z "${GT_KEEP:-}" ] || cp -r "$tmp" "$GT_KEEP"
    rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace

. "$here/../layer/lavapipe_env.sh"
. "$here/tp_lib.sh"

case $version in
47 | 58) ;;
*) echo "perfetto_test.sh: unknown version '$version'" >&2; exit 2 ;;
esac
recorded_by_traced=1
needed=(traced traced_probes perfetto)
case $test_case in
embedded | low-overhead | service) recorded_by_traced=0 needed=() ;;
zstd) [ "$version" = 58 ] || { echo "perfetto_test.sh: zstd is a v58 case" >&2; exit 2; } ;;
esac
why=$(tp_missing "$version" "${needed[@]}")
[ -z "$why" ] || skip "$why"
bin=$(tp_dir "$version")
echo "Perfetto v$version: $bin ($(tp_version_line "$version"))"
if [ "$test_case" = service ]; then
    [ -x "${GT_GPUTRACE_SERVICE:-}" ] || skip "gputrace-service not built (it needs glib)"
fi

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

start_traced() {
    "$bin/traced" > "$tmp/traced.log" 2>&1 &
    pids+=($!)
    wait_for "$tmp/traced.log" "Started traced" 5 || fail "traced did not start: $(cat "$tmp/traced.log")"
}

# A private traced and traced_probes, and a `perfetto` session recording
# into $trace until stop_session, with the config CFG (session.cfg.txt).
start_session() {
    local cfg=${1:-$here/session.cfg.txt}
    start_traced
    "$bin/traced_probes" > "$tmp/probes.log" 2>&1 &
    pids+=($!)
    # traced_probes logs nothing when its data sources are registered; a
    # data source registered later is still started for the session, but
    # the initial process scan would then come late.
    sleep 0.3
    "$bin/perfetto" --txt -c "$cfg" -o "$trace" > "$tmp/perfetto.log" 2>&1 &
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

# A second `perfetto` session beside start_session's, asking for low
# overhead, recording into $tmp/coarse.pftrace. v58's text parser knows
# gpu_renderstages_config; v47's does not, so v47 gets the binary config
# protoc encoded from the same text at build time.
start_coarse_session() {
    local cfg_args
    if [ "$version" = 47 ]; then
        [ -f "${GT_LOW_OVERHEAD_CFG:-}" ] || fail "GT_LOW_OVERHEAD_CFG does not name the built config"
        cfg_args=(-c "$GT_LOW_OVERHEAD_CFG")
    else
        cfg_args=(--txt -c "$here/low_overhead.cfg.txt")
    fi
    "$bin/perfetto" "${cfg_args[@]}" -o "$tmp/coarse.pftrace" > "$tmp/perfetto2.log" 2>&1 &
    perfetto2_pid=$!
    wait_for "$tmp/perfetto2.log" "Connected to the Perfetto traced service" 5 ||
        fail "the second perfetto did not connect: $(cat "$tmp/perfetto2.log")"
}

stop_coarse_session() {
    kill -INT "$perfetto2_pid"
    wait "$perfetto2_pid" || fail "the second perfetto failed: $(cat "$tmp/perfetto2.log")"
    [ -s "$tmp/coarse.pftrace" ] || fail "the second perfetto wrote no trace"
}

# gputrace-service recording gpu.renderstages into $trace.
start_gputrace_service() {
    "$GT_GPUTRACE_SERVICE" --output "$trace" --data-source gpu.renderstages \
        --socket "$PERFETTO_PRODUCER_SOCK_NAME" > "$tmp/service.log" 2>&1 &
    svc=$!
    local i
    for ((i = 0; i < 100; i++)); do
        [ -S "$PERFETTO_PRODUCER_SOCK_NAME" ] && break
        sleep 0.05
    done
    [ -S "$PERFETTO_PRODUCER_SOCK_NAME" ] || fail "gputrace-service did not start: $(cat "$tmp/service.log")"
    export GPUTRACE_BACKEND=system GPUTRACE_STARTUP_WAIT_MS=5000
}

stop_gputrace_service() {
    kill -INT "$svc"
    wait "$svc" || fail "gputrace-service failed: $(cat "$tmp/service.log")"
    svc=
    [ -s "$trace" ] || fail "gputrace-service wrote no trace"
}

. "$here/checks.sh"

# in_each_trace_processor FUNCTION ARGS...: FUNCTION ARGS... (and the
# checks it noted, checks_run) with $tp and $tpv set to VERSION's
# trace_processor, then, for a trace recorded through traced, to the other
# version's too. The other one missing: noted in
# $tp_not_checked (the test ends in SKIP).
tp_not_checked=
in_each_trace_processor() {
    local v versions=$version why
    [ $recorded_by_traced = 0 ] || versions="$version $([ "$version" = 47 ] && echo 58 || echo 47)"
    for v in $versions; do
        why=$(tp_missing "$v")
        if [ -n "$why" ]; then
            tp_not_checked="not checked in trace_processor v$v: $why"
            echo "$tp_not_checked"
            continue
        fi
        tpv=$v tp=$(tp_dir "$v")/trace_processor_shell
        echo "== trace_processor v$v ($(tp_version_line "$v"))"
        "$@"
        checks_run
    done
}

# The checks of the late session: whatever the session caught of a
# workload that named its objects before the session began.
check_late_session() {
    local pid=${workload_pids[0]} st
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
}

check_two_sessions() {
    local full=$trace
    check_workload_trace traced w1
    checks_run
    trace=$tmp/coarse.pftrace
    check_coarse_trace w1
    checks_run
    trace=$full
}

case $test_case in
embedded)
    export GPUTRACE_OUTPUT="$trace"
    start_workload w1 --frames 3
    wait_workloads w1
    [ -s "$trace" ] || fail "no trace written"
    in_each_trace_processor check_workload_trace embedded w1
    ;;
low-overhead)
    export GPUTRACE_OUTPUT="$trace" GPUTRACE_LOW_OVERHEAD=1
    start_workload w1 --frames 3
    wait_workloads w1
    [ -s "$trace" ] || fail "no trace written"
    in_each_trace_processor check_coarse_trace w1
    ;;
service)
    start_gputrace_service
    start_workload w1 --frames 3
    wait_workloads w1
    stop_gputrace_service
    in_each_trace_processor check_workload_trace service w1
    ;;
traced)
    start_session
    start_workload w1 --frames 3
    wait_workloads w1
    stop_session
    in_each_trace_processor check_workload_trace traced w1
    ;;
two-processes)
    start_session
    start_workload w1 --frames 3
    start_workload w2 --frames 2
    wait_workloads w1 w2
    stop_session
    in_each_trace_processor check_workload_trace traced w1 w2
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
    in_each_trace_processor check_two_sessions
    ;;
late-session)
    # The session starts after the workload named its objects and runs for
    # part of it only: the names must still be in the trace (written when
    # the data source starts).
    start_traced
    export GPUTRACE_BACKEND=system
    start_workload w1 --frames 100000
    wait_for "$log" "the service has no session for" 10 ||
        fail "the layer did not hear from traced: $(cat "$log")"
    sleep 0.5
    "$bin/perfetto" --txt -c "$here/session.cfg.txt" -o "$trace" > "$tmp/perfetto.log" 2>&1 &
    perfetto_pid=$!
    wait_for "$log" "tracing started" 10 || fail "the session did not start the data source: $(cat "$log")"
    sleep 1
    stop_session
    # (SIGTERM: a background job of a script ignores SIGINT.)
    kill -TERM "${workload_pids[0]}" 2> /dev/null || true
    wait "${workload_pids[0]}" 2> /dev/null || true
    in_each_trace_processor check_late_session
    ;;
zstd)
    # traced compresses what it writes (TraceConfig.compression.zstd).
    start_session "$here/zstd.cfg.txt"
    start_workload w1 --frames 3
    wait_workloads w1
    stop_session
    check_zstd_compressed
    in_each_trace_processor check_zstd_trace w1
    ;;
*)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac
[ -z "$tp_not_checked" ] || skip "$checks SQL checks passed; $tp_not_checked"
echo "PASS ($case_name): $checks SQL checks"
