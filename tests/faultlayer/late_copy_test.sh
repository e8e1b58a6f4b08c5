#!/bin/sh
# SPDX-License-Identifier: MIT
# late_copy_test.sh CASE — timestamps copied into mapped memory that show up
# late, or never, under VK_LAYER_GPUTRACE_timeline on lavapipe.
#
#   application -> VK_LAYER_GPUTRACE_timeline -> VK_LAYER_GPUTRACE_clockfault -> lavapipe
#
# The fault layer holds back each copied record that lands
# (GPUTRACE_FAULT_LATE_COPIES, fault_memory.c):
#   late   until anything shows the copy ran (a later submission, a fence
#          or idle wait returning), never through vkGetQueryPoolResults: a
#          copy running well after the timestamps it copies, as when
#          lavapipe's queue thread is preempted between them. The workload
#          sleeps 700 ms before each frame's last submission, with earlier
#          submissions' copies held all that time. The layer must wait for
#          them: no switch to vkGetQueryPoolResults (docs/layer.md,
#          "Reading results"), every region timed, no loss.
#   never  a layer below shadowing mapped memory (gfxreconstruct's page
#          guard): the layer must notice, switch to vkGetQueryPoolResults,
#          and still time every region, with no loss.
#   never-cases  the same under timeline_cases: a recording re-submitted
#          right after the wait for its last execution, whose results the
#          submitting thread reads before reusing the queries (from the
#          driver, when the copy does not show), secondaries, batches,
#          render passes, two devices.
# Both are decided by what ran, not by how long anything took, so neither
# depends on the machine's speed.
#
# Environment (meson.build): GT_WORKLOAD, GT_CASES, GT_EXPLICIT_DIR,
# GT_FAULT_DIR, GT_GPUTRACE_CHECK. Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: late_copy_test.sh CASE}
. "$(dirname "$0")/../common/gt_test_lib.sh"

need_exe "$GT_GPUTRACE_CHECK" gputrace-check

trace=$tmp/trace.pftrace
truth=$tmp/truth.txt
switched='do not show up there'

case $case_name in
late)
    export GPUTRACE_FAULT_LATE_COPIES=late
    set -- "$GT_WORKLOAD" --frames 4 --threads 1 --queues 1 --stall-every 1 --stall-ms 700
    ;;
never)
    export GPUTRACE_FAULT_LATE_COPIES=never
    set -- "$GT_WORKLOAD" --frames 40 --threads 2 --queues 2
    ;;
never-cases)
    export GPUTRACE_FAULT_LATE_COPIES=never
    set -- "$GT_CASES"
    ;;
*)
    echo "late_copy_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

export VK_LAYER_PATH="$GT_EXPLICIT_DIR:$GT_FAULT_DIR"
export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_GPUTRACE_clockfault
export GPUTRACE_OUTPUT="$trace" GPUTRACE_LOG=debug GPUTRACE_LOG_FILE="$log"
export GPUTRACE_FAULT_TRUTH_FILE="$truth"
# The default readback (copies into mapped memory) is what is under test.
unset GPUTRACE_QUERY_READBACK

need_exe "$1" "$(basename "$1")"
run_ok 120 "$@"
if [ "$case_name" = never-cases ]; then
    regions=$(sed -n 's/^timeline_cases: events=\([0-9]*\) .*/\1/p' "$tmp/out")
    [ -n "$regions" ] || fail "no timeline_cases summary line"
else
    regions=$(workload_regions)
fi
[ -s "$trace" ] || fail "no trace written"
[ -s "$truth" ] || fail "the fault layer wrote no truth file (not loaded?)"
unset VK_INSTANCE_LAYERS GPUTRACE_OUTPUT

tv() { sed -n "s/^$1=//p" "$truth" | head -n 1; }
held=$(tv copies_held)
revealed=$(tv copies_revealed)
[ "${held:-0}" -gt 0 ] || fail "no copied timestamp was held back"

crc=0
"$GT_GPUTRACE_CHECK" --no-progress --expect-gpu-events "$regions" "$trace" \
    > "$tmp/check" 2>&1 || crc=$?
echo "LATE_COPY $case_name regions=$regions copies_held=$held copies_revealed=$revealed" \
     "switched=$(grep -c "$switched" "$log" || true) check_exit=$crc"

[ $crc -eq 0 ] || fail "gputrace-check fails the trace (exit $crc)"
! grep -q 'no timestamps to read' "$log" || fail "regions of complete work went unread"
case $case_name in
late)
    [ "${revealed:-0}" -gt 0 ] || fail "no held-back copy was ever put in place"
    ! grep -q "$switched" "$log" ||
        fail "late copies taken for a layer shadowing mapped memory"
    ;;
never*)
    grep -q "$switched" "$log" || fail "the layer did not notice its copies never show up"
    ;;
esac
exit 0
