#!/bin/sh
# SPDX-License-Identifier: MIT
# bench_hostile_service.sh — what a hostile tracing service costs the traced
# application, against gputrace-service, side by side on lavapipe. These
# were the wall-time comparisons of the faults-hostile-stall-service and
# faults-deaf-service tests, which a busy machine upset; the tests keep
# what holds at any speed (the service filled / went deaf, the loss was
# logged, the run finished).
#
#   BENCH hostile_stall_ms_good     median wall time of gputrace-workload
#                                   --frames 1000 under the layer (system
#                                   backend) against gputrace-service
#   BENCH hostile_stall_ms_hostile  the same against stall_service, which
#                                   starts gpu.renderstages with the stall
#                                   policy and a 64 KiB SMB and never frees
#                                   a chunk
#   BENCH hostile_stall_added_pct   (hostile - good) / good, of the medians;
#                                   a layer whose application threads waited
#                                   for the service took minutes
#   BENCH deaf_exit_ms_good         median wall time of gputrace-workload
#                                   --frames 20 against gputrace-service
#   BENCH deaf_exit_ms_deaf         the same against a fresh
#                                   stall_service --deaf 10000 (stops
#                                   reading its socket after flooding the
#                                   producer with Flush commands)
#   BENCH deaf_exit_added_ms        deaf - good, of the medians: the exit's
#                                   farewell is bounded at 100 ms, where the
#                                   producer's 5 s send timeout held it before
#   BENCH deaf_farewells_cut        runs against the deaf service whose
#                                   farewell was cut short (the layer said
#                                   so), of GT_BENCH_REPS
#
# Runs alternate (good, hostile), GT_BENCH_REPS rounds each (default 7),
# after one warm-up of each. Environment (meson): GT_WORKLOAD,
# GT_GPUTRACE_SERVICE, GT_STALL_SERVICE, GT_EXPLICIT_DIR.
set -eu

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-bench-hostile.XXXXXX")
pids=
cleanup() {
    for p in $pids; do kill -TERM "$p" 2> /dev/null || true; done
    for p in $pids; do wait "$p" 2> /dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
reps=${GT_BENCH_REPS:-7}

lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
    [ -f "$f" ] && lvp=$f && break
done
[ -n "$lvp" ] || { echo "SKIP: lavapipe not found"; exit 77; }
for exe in "$GT_WORKLOAD" "$GT_GPUTRACE_SERVICE" "$GT_STALL_SERVICE"; do
    [ -x "$exe" ] || { echo "SKIP: $exe not built"; exit 77; }
done
export VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp"
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
unset VK_INSTANCE_LAYERS VK_LAYER_PATH GPUTRACE_ENABLE GPUTRACE_DISABLE GPUTRACE_OUTPUT \
      GPUTRACE_STARTUP_WAIT_MS GPUTRACE_MAX_PENDING_SUBMISSIONS GPUTRACE_BUFFER_KB
export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
export GPUTRACE_BACKEND=system GPUTRACE_LOG=info

now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
wait_socket() {
    i=0
    while [ ! -S "$1" ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { echo "bench_hostile_service: no service on $1" >&2; exit 1; }
        sleep 0.05
    done
}

# run SOCKET FRAMES LOG: the workload against SOCKET; wall time in $took.
run() {
    t0=$(now_ms)
    PERFETTO_PRODUCER_SOCK_NAME="$1" GPUTRACE_LOG_FILE="$3" \
        timeout -k 5 600 "$GT_WORKLOAD" --frames "$2" > /dev/null 2> "$tmp/err" || {
        echo "bench_hostile_service: gputrace-workload failed against $1" >&2
        cat "$tmp/err" "$3" >&2
        exit 1
    }
    took=$(($(now_ms) - t0))
}

"$GT_GPUTRACE_SERVICE" --socket "$tmp/good.sock" --data-source gpu.renderstages \
    --output "$tmp/good.pftrace" > "$tmp/service.log" 2>&1 &
pids="$pids $!"
"$GT_STALL_SERVICE" --socket "$tmp/stall.sock" > "$tmp/stall.out" 2> "$tmp/stall.err" &
pids="$pids $!"
wait_socket "$tmp/good.sock"
wait_socket "$tmp/stall.sock"

# ---- a service that never frees shared memory ----
run "$tmp/good.sock" 1000 "$tmp/log"
run "$tmp/stall.sock" 1000 "$tmp/log"
good=
bad=
r=0
while [ $r -lt "$reps" ]; do
    r=$((r + 1))
    run "$tmp/good.sock" 1000 "$tmp/log"
    good="$good $took"
    run "$tmp/stall.sock" 1000 "$tmp/log"
    bad="$bad $took"
done
# shellcheck disable=SC2086 # word splitting intended
g=$(median $good)
# shellcheck disable=SC2086
b=$(median $bad)
echo "# stall service: well-behaved$good ms; hostile$bad ms"
echo "BENCH hostile_stall_ms_good $g ms"
echo "BENCH hostile_stall_ms_hostile $b ms"
echo "BENCH hostile_stall_added_pct $(awk -v g="$g" -v b="$b" 'BEGIN { printf "%.1f", (b - g) * 100 / g }') %"

# ---- a service that stops reading its socket (one per run) ----
deaf_run() {
    rm -f "$tmp/deaf.sock"
    "$GT_STALL_SERVICE" --socket "$tmp/deaf.sock" --deaf 10000 --policy drop \
        > "$tmp/deaf.out" 2> "$tmp/deaf.err" &
    dpid=$!
    wait_socket "$tmp/deaf.sock"
    rm -f "$tmp/deaf.log"
    run "$tmp/deaf.sock" 20 "$tmp/deaf.log"
    kill -TERM $dpid
    wait $dpid || true
}
run "$tmp/good.sock" 20 "$tmp/log"
deaf_run
good=
bad=
cuts=0
r=0
while [ $r -lt "$reps" ]; do
    r=$((r + 1))
    run "$tmp/good.sock" 20 "$tmp/log"
    good="$good $took"
    deaf_run
    bad="$bad $took"
    if grep -q "did not take the producer's last requests" "$tmp/deaf.log"; then
        cuts=$((cuts + 1))
    fi
done
# shellcheck disable=SC2086
g=$(median $good)
# shellcheck disable=SC2086
b=$(median $bad)
echo "# deaf service: well-behaved$good ms; deaf$bad ms"
echo "BENCH deaf_exit_ms_good $g ms"
echo "BENCH deaf_exit_ms_deaf $b ms"
echo "BENCH deaf_exit_added_ms $((b - g)) ms"
echo "BENCH deaf_farewells_cut $cuts runs"
