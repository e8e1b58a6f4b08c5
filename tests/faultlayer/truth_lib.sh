# SPDX-License-Identifier: MIT
# truth_lib.sh — the true conversion error of a trace written beside
# VK_LAYER_GPUTRACE_clockfault, sourced by fault_test.sh and
# nesting_test.sh after gt_test_lib.sh.
#
# measure_truth TRUTH TRACE: runs fault_truth (GT_FAULT_TRUTH) into
# $tmp/truth.out and sets
#   conv_error    the largest error of a converted event start, in ns (an
#                 end adds the drift over the event's own duration, which
#                 is in device ns and no snapshot removes: under load
#                 lavapipe's command buffers last 100 ms, 2 us at 20 ppm)
#   oracle_shift  what of it may be the oracle's own: it takes MONOTONIC to
#                 trace time from one snapshot of the trace, whose clocks
#                 were read tens of ns apart, which shifts every error
#                 alike; when all errors share a sign the smallest bounds
#                 the shift (a run: every error between +11 and +1017 ns,
#                 the checker's bound 999 ns, the budget 1000)
# and tf NAME prints a field of fault_truth's line.
tf() { sed -n "s/.* $1=\([-0-9.]*\).*/\1/p" "$tmp/truth.out"; }
measure_truth() {
    "$GT_FAULT_TRUTH" "$1" "$2" > "$tmp/truth.out" 2>&1 || fail "fault_truth failed: $(cat "$tmp/truth.out")"
    cat "$tmp/truth.out"
    [ "$(tf converted)" -gt 0 ] || fail "no GPU event could be converted"
    conv_error=$(tf max_start_error_ns)
    oracle_shift=0
    if [ "$(tf min_error_ns)" -gt 0 ]; then
        oracle_shift=$(tf min_error_ns)
    elif [ "$(tf max_signed_error_ns)" -lt 0 ]; then
        oracle_shift=$((-$(tf max_signed_error_ns)))
    fi
}
