# SPDX-License-Identifier: MIT
# hang_stacks.sh — sourced by the test libraries (after $tmp is set): what a
# hang needs to be diagnosed, taken before the deadline kills it. A hang
# that shows once in thousands of runs cannot be reproduced on demand; its
# threads' stacks are the evidence. POSIX sh.
#
# gt_stacks PID...: each PID and every process below it, with the stacks of
# all their threads (gdb, when installed), appended to $tmp/stacks.
# gt_watch SECONDS: from now on, if a process started by this shell is still
# running after SECONDS, gt_stacks of it (a child of the test script: the
# `timeout` a bounded run goes through, a background job). gt_unwatch ends
# the watch. The watcher's output goes only to $tmp/stacks, so it never
# holds the test's stdout open.

gt_descendants() {
    for c in $(pgrep -P "$1" 2> /dev/null); do
        echo "$c"
        gt_descendants "$c"
    done
}

gt_stacks() {
    for p in "$@"; do
        for q in "$p" $(gt_descendants "$p"); do
            echo "=== $(ps -o pid=,etime=,args= -p "$q" 2> /dev/null || echo "$q (gone)")"
            if command -v gdb > /dev/null 2>&1; then
                timeout 60 gdb -q -batch -p "$q" -ex 'thread apply all bt' 2>&1 |
                    grep -v '^\[New LWP\|^\[Thread debugging\|^Using host libthread_db'
            fi
        done
    done >> "$tmp/stacks" 2>&1
}

gt_watch() {
    gt_unwatch
    gt_watch_parent=$$
    (
        trap 'kill $s 2> /dev/null; exit 0' TERM
        sleep "$1" &
        s=$!
        wait $s
        trap - TERM
        # Every child of the script but this watcher (its pid, from the
        # parent: a POSIX subshell cannot tell its own).
        gt_stacks $(pgrep -P "$gt_watch_parent" 2> /dev/null | grep -vx "$(cat "$tmp/watcher.pid")")
    ) < /dev/null > /dev/null 2>&1 &
    gt_watcher=$!
    echo "$gt_watcher" > "$tmp/watcher.pid"
}

gt_unwatch() {
    if [ -n "${gt_watcher:-}" ]; then
        kill "$gt_watcher" 2> /dev/null || true
        wait "$gt_watcher" 2> /dev/null || true
        gt_watcher=
    fi
}
