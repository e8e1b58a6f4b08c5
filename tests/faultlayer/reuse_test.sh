#!/bin/sh
# SPDX-License-Identifier: MIT
# reuse_test.sh CASE — when VK_LAYER_GPUTRACE_timeline resets the timestamp
# queries it wrote, checked from below by VK_LAYER_GPUTRACE_clockfault
# (GPUTRACE_FAULT_CHECK_QUERY_REUSE=1, reuse_check.h), on lavapipe.
#
#   application -> VK_LAYER_GPUTRACE_timeline -> VK_LAYER_GPUTRACE_clockfault -> lavapipe
#
# The rules (docs/layer.md, "Query reuse on lavapipe"): a query a
# submission wrote is reset again only once a later submission that wrote
# timestamps is known complete, or by a reset the layer records after a
# timestamp and a barrier of its own; and a timestamp that makes lavapipe
# end its current scene (any but top-of-pipe) comes right after a barrier.
# On lavapipe (Mesa 22.3) breaking them can free a rasterizer fence while
# the rasterizer still signals it: heap corruption or a queue that never
# finishes, seen as a rare crash or hang under load. The check makes every
# break visible in every run.
#
# Cases:
#   workload  gputrace-workload, 2 threads, bracket calibration (the
#             calibrated-timestamp extensions hidden): chunks recycled
#             between threads, the layer's own calibration submissions
#   cases     timeline_cases: re-submissions right after the wait (the
#             layer cannot reset on the host yet), secondaries, batches,
#             render passes, suspended rendering
#
# A run that takes longer than its bound is a hang and fails as one.
# Environment (meson.build): GT_WORKLOAD, GT_CASES, GT_EXPLICIT_DIR,
# GT_FAULT_DIR. Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: reuse_test.sh CASE}
. "$(dirname "$0")/../common/gt_test_lib.sh"

export VK_LAYER_PATH="$GT_EXPLICIT_DIR:$GT_FAULT_DIR"
export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_GPUTRACE_clockfault
export GPUTRACE_OUTPUT="$tmp/trace.pftrace" GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
export GPUTRACE_FAULT_CHECK_QUERY_REUSE=1

# ~2-5 s of work each; a minute is a hang.
case $case_name in
workload)
    need_exe "$GT_WORKLOAD" gputrace-workload
    export GPUTRACE_FAULT_HIDE_CALIBRATION=1
    run_ok 60 "$GT_WORKLOAD" --frames 300 --threads 2 --queues 2
    grep -q 'timing with bracket calibration' "$log" ||
        fail "the layer did not fall back to bracket calibration"
    ;;
cases)
    need_exe "$GT_CASES" timeline_cases
    run_ok 60 "$GT_CASES"
    ;;
*)
    echo "reuse_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

grep -q 'tracing started' "$log" || fail "the layer did not trace"
# One summary line per device.
grep '^clockfault: query reuse: ' "$tmp/err" > "$tmp/summary" ||
    fail "no query reuse summary: the check did not run"
cat "$tmp/summary"
checked=$(sed -n 's/.* checked=\([0-9]*\).*/\1/p' "$tmp/summary" | awk '{ n += $1 } END { print n + 0 }')
unsafe=$(sed -n 's/.* unsafe=\([0-9]*\).*/\1/p' "$tmp/summary" | awk '{ n += $1 } END { print n + 0 }')
sum() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp/summary" | awk '{ n += $1 } END { print n + 0 }'; }
stamps=$(sum stamps)
unwaited=$(sum unwaited)
[ "$checked" -gt 0 ] || fail "no query reset was checked"
[ "$stamps" -gt 0 ] || fail "no timestamp was seen"
[ "$unsafe" -eq 0 ] || fail "$unsafe query reset(s) before the device was known done with them"
[ "$unwaited" -eq 0 ] ||
    fail "$unwaited of $stamps timestamps end lavapipe's current scene without a barrier before them"
echo "ok: $case_name (checked=$checked)"
