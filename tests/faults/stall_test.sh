#!/bin/sh
# SPDX-License-Identifier: MIT
# stall_test.sh — a tracing service that asks for the stall policy and never
# frees shared memory must not hold the traced application up.
#
# stall_service (tests/faults/stall_service.c) starts gpu.renderstages with
# BufferExhaustedPolicy "stall then drop" and a 64 KiB SMB, then ignores
# every CommitData: the SMB fills within the first frames and stays full.
# gputrace-workload --frames 1000 runs under the layer (system backend)
# against it. What does not depend on the machine's speed is asserted: the
# run finishes (a deadline catches a layer that waits for the service: the
# old one took 62 s for 50 frames, so minutes here), the SMB really filled,
# and the layer logged the packets it lost. How much slower the application
# is than against a well-behaved service is a wall-time comparison, which a
# busy machine upsets: scripts/run-bench hostile-service
# (layer/bench/bench_hostile_service.sh, docs/BENCHMARKS.md).
#
# Environment (meson.build): GT_WORKLOAD, GT_GPUTRACE_SERVICE,
# GT_STALL_SERVICE, GT_EXPLICIT_DIR. Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=hostile-stall-service
. "$GT_TEST_LIB"
. "$(dirname "$0")/faults_lib.sh"

frames=${GT_STALL_FRAMES:-1000}
# Hang deadline: 1000 frames take 1-2 s on a quiet 2-core machine.
deadline_s=180

service_pair_setup
"$GT_STALL_SERVICE" --socket "$bad_sock" > "$tmp/stall.out" 2> "$tmp/stall.err" &
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
    fail "the workload did not finish within $deadline_s s against the hostile service: held up by it"
fi
[ $rc -eq 0 ] || { stop_services; fail "gputrace-workload failed ($rc) against the hostile service"; }
grep -q 'tracing started' "$log" || { stop_services; fail "the layer did not trace"; }
echo "against the hostile service: $(workload_field frames) frames in $took_ms ms (not judged)"
stop_services

# The hostile condition must have happened: the SMB of some producer ran
# out of free chunks, and the layer counted the loss.
cat "$tmp/stall.out"
all=$(sed -n 's/.* smb_chunks=\([0-9]*\).*/\1/p' "$tmp/stall.out")
taken=$(sed -n 's/.* smb_chunks_taken=\([0-9]*\).*/\1/p' "$tmp/stall.out")
if [ -z "$all" ] || [ "$all" -eq 0 ]; then
    fail "stall_service printed no summary"
fi
[ "$taken" -eq "$all" ] ||
    fail "the SMB never filled ($taken of $all chunks taken): the hostile case was not reached"

lost=$(sed -n 's/.*: \([0-9]*\) trace packets lost: .*/\1/p' "$log" | head -n 1)
if [ -z "$lost" ] || [ "$lost" -eq 0 ]; then
    fail "the layer did not report the packets it lost to the full SMB"
fi
echo "the layer counted $lost lost packets"
echo "ok: $case_name"
