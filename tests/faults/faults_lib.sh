# SPDX-License-Identifier: MIT
# faults_lib.sh — sourced by the scripts of tests/faults (faults_test.sh,
# stall_test.sh, deaf_test.sh, output_test.sh) after gt_test_lib.sh: wall
# times, medians, and the helpers of the cases that run the layer's system
# backend against a tracing service. POSIX sh.

# now_ms: the wall clock in milliseconds (GNU date), fine for coarse bounds.
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# median VALUES...: the middle one (the lower middle of an even count).
median() {
    printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"
}

# wait_socket PATH [CLEANUP]: waits up to 5 s for a service to listen on
# PATH; otherwise runs CLEANUP (a command, e.g. one that stops the
# services) and fails.
wait_socket() {
    i=0
    while [ ! -S "$1" ]; do
        i=$((i + 1))
        if [ $i -gt 100 ]; then
            [ -z "${2:-}" ] || $2
            fail "no service listens on $1"
        fi
        sleep 0.05
    done
}

# need_system_backend: skips unless the layer (GT_EXPLICIT_DIR) has its
# system backend, i.e. was built with the Perfetto producer, and
# gputrace-service is built. Uses $log for the probe run, removes it after.
need_system_backend() {
    rm -f "$log"
    GPUTRACE_BACKEND=system VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
        VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" PERFETTO_PRODUCER_SOCK_NAME="$tmp/none.sock" \
        GPUTRACE_LOG_FILE="$log" timeout 60 "$GT_WORKLOAD" --frames 1 > /dev/null 2>&1 || true
    if grep -q 'system backend unavailable' "$log" 2> /dev/null; then
        skip "the layer has no system backend: $(grep 'system backend unavailable' "$log" | head -n 1)"
    fi
    need_exe "$GT_GPUTRACE_SERVICE" gputrace-service
    rm -f "$log"
}

# ---- side by side against a well-behaved and a hostile service ------------
# (stall_test.sh, deaf_test.sh)

# service_pair_setup: needs gputrace-workload, gputrace-service,
# stall_service and the layer's system backend; sets $good_sock, $bad_sock
# and $layer_env (the assignments that enable our layer) and starts
# gputrace-service on $good_sock (its pid in $good_pid).
service_pair_setup() {
    need_exe "$GT_WORKLOAD" gputrace-workload
    need_exe "$GT_GPUTRACE_SERVICE" gputrace-service
    need_exe "$GT_STALL_SERVICE" stall_service
    good_sock=$tmp/good.sock
    bad_sock=$tmp/bad.sock
    layer_env="VK_ADD_LAYER_PATH=$GT_EXPLICIT_DIR VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline"
    export GPUTRACE_BACKEND=system GPUTRACE_LOG=info
    unset GPUTRACE_STARTUP_WAIT_MS GPUTRACE_MAX_PENDING_SUBMISSIONS GPUTRACE_BUFFER_KB
    need_system_backend
    "$GT_GPUTRACE_SERVICE" --socket "$good_sock" --data-source gpu.renderstages \
        --output "$tmp/good.pftrace" > "$tmp/service.log" 2>&1 &
    good_pid=$!
}

# timed_workload SOCKET LOG BOUND_S: gputrace-workload --frames $frames
# under the layer against SOCKET, logging to LOG, output in $tmp/out and
# $tmp/err, killed after BOUND_S seconds; its exit status in $rc and its
# wall time in $took_ms.
timed_workload() {
    t0=$(now_ms)
    rc=0
    # shellcheck disable=SC2086 # $layer_env is two assignments
    env $layer_env PERFETTO_PRODUCER_SOCK_NAME="$1" GPUTRACE_LOG_FILE="$2" \
        LD_PRELOAD="${gt_preload:-${LD_PRELOAD:-}}" \
        timeout -k 5 "$3" "$GT_WORKLOAD" --frames "$frames" > "$tmp/out" 2> "$tmp/err" || rc=$?
    took_ms=$(($(now_ms) - t0))
}
