# SPDX-License-Identifier: MIT
# lavapipe_driver.sh — sourced by every test that runs Vulkan programs:
# gt_find_lavapipe sets $lvp to lavapipe's ICD manifest (empty when it is not
# installed), gt_use_lavapipe makes it the only driver the loader sees.
#
# lavapipe runs with LP_NUM_THREADS=0: its rasterizer works on the queue's
# own thread instead of on threads of its own. Mesa 22.3 (Debian 12) frees a
# rasterizer scene's fence while the thread that signalled it may still be
# about to unlock it: every waiter, and the scene's recycling, test the fence
# done without its lock. A thread preempted inside that gap then unlocks
# freed memory, so the heap is corrupted or the next fence allocated there
# loses a wakeup and the queue never finishes. It happens without the layer
# as well (docs/ci.md, "A lavapipe fence that never signalled": a use after
# free at start-up in every run with the gap held open, the layer loaded or
# not). Twice in about 3 500 test runs it hung a program for good. With no
# rasterizer threads there is no such gap. The layer's own lavapipe rules
# (a barrier before each bottom-of-pipe timestamp, query resets held back)
# are still checked from below by the query-reuse tests, which do not need
# the race to happen.

gt_find_lavapipe() {
    lvp=
    for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
        [ -f "$f" ] && lvp=$f && break
    done
    [ -n "$lvp" ]
}

gt_use_lavapipe() {
    export VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp" LP_NUM_THREADS=0
}
