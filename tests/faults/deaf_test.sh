#!/bin/sh
# SPDX-License-Identifier: MIT
# deaf_test.sh — a tracing service that stops reading its socket must not
# hold up the application's exit (issue #13).
#
# stall_service --deaf (tests/faults/stall_service.c) starts
# gpu.renderstages and, when the producer sends its start-up Sync, sends it
# 10000 Flush commands, then the answer, and never reads again. The
# producer answers each Flush with a CommitData; a few hundred fit in the
# socket, the rest queue up in the producer. When gputrace-workload
# destroys its instance the layer's system backend stops the producer,
# whose last words can no longer go out: the stop must give up after
# GPUTRACE's farewell bound (100 ms, docs/producer.md) instead of waiting
# for the service (the old bound was the producer's 5 s send timeout), and
# the layer must say what it lost.
#
# What holds at any speed is asserted: the run finishes (a deadline catches
# a hang), the service went deaf, and the layer either says it cut its
# farewell short, or had lost the connection before the stop (a run slowed
# down past the producer's own 5 s send timeout by a loaded machine: the
# layer logs "tracing stopped" before the session ends, and the stop has
# nothing left to wait for). The exit's cost against a well-behaved service
# is a wall-time comparison: scripts/run-bench hostile-service
# (layer/bench/bench_hostile_service.sh, docs/BENCHMARKS.md).
#
# Environment (meson.build): GT_WORKLOAD, GT_GPUTRACE_SERVICE,
# GT_STALL_SERVICE, GT_EXPLICIT_DIR. Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=deaf-service
. "$GT_TEST_LIB"
. "$(dirname "$0")/faults_lib.sh"

# Frames: well under a second of work on a quiet machine, so the run
# normally ends long before the producer's send timeout drops the deaf
# connection (then there would be no farewell left to bound).
frames=${GT_DEAF_FRAMES:-20}
deadline_s=120

service_pair_setup
"$GT_STALL_SERVICE" --socket "$bad_sock" --deaf 10000 --policy drop \
    > "$tmp/stall.out" 2> "$tmp/stall.err" &
bad_pid=$!
stop_services() {
    kill -TERM $good_pid $bad_pid 2> /dev/null || true
    wait $good_pid 2> /dev/null || true
    wait $bad_pid 2> /dev/null || true
}
wait_socket "$bad_sock" stop_services

timed_workload "$bad_sock" "$log" $deadline_s
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    stop_services
    fail "the workload did not finish within $deadline_s s against the deaf service"
fi
[ $rc -eq 0 ] || { stop_services; fail "gputrace-workload failed ($rc) against the deaf service"; }
grep -q 'tracing started' "$log" || { stop_services; fail "the layer did not trace"; }
echo "against the deaf service: $took_ms ms (not judged)"
stop_services
cat "$tmp/stall.out"
grep -q 'deaf=1' "$tmp/stall.out" ||
    fail "stall_service never went deaf: $(cat "$tmp/stall.out" "$tmp/stall.err")"

cut="did not take the producer's last requests within 100 ms"
if grep -q "$cut" "$log"; then
    sed -n "s/.*\(the tracing service did not take.*\)/layer: \1/p" "$log" | head -n 1
elif sed -n '/tracing stopped/,$p' "$log" | grep -q 'session ended'; then
    echo "the producer lost the deaf connection before the stop (send timeout): no farewell to cut"
else
    fail "the layer neither cut its farewell short nor lost the connection before the stop"
fi
echo "ok: $case_name"
