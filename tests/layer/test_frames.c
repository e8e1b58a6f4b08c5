/* SPDX-License-Identifier: MIT */
/* test_frames — layer/frames/fr_frames.c when the collector falls behind:
 * frames ended while nothing takes them are all written later, in order,
 * with the GPU work that came back for them (the ring grows); past its
 * largest size the oldest are given up and every one of them is counted,
 * so written + lost is what ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "layer/frames/fr_frames.h"

static const VkFrameBoundaryEXT frame_end = {
    .sType = VK_STRUCTURE_TYPE_FRAME_BOUNDARY_EXT,
    .flags = VK_FRAME_BOUNDARY_FRAME_END_BIT_EXT,
};

static fr_device *boundary_device(void)
{
    gt_allocator alloc;
    gt_allocator_init(&alloc, NULL); /* malloc */
    fr_device *fd = fr_device_create(&alloc, 0, 0, true);
    assert_non_null(fd);
    return fd;
}

/* Ends `n` frames, 2 ms apart from `*now`, none taken. */
static void end_frames(fr_device *fd, uint64_t n, uint64_t *now)
{
    for (uint64_t i = 0; i < n; i++) {
        *now += 2000000;
        fr_boundary(fd, &frame_end, *now, true);
    }
}

/* Takes every frame that is ready; checks they come in order from `first`;
 * returns how many. */
static uint64_t take_all(fr_device *fd, uint64_t first, bool all)
{
    fr_record recs[16];
    uint64_t taken = 0, expect = first;
    uint32_t n;
    while ((n = fr_take_ready(fd, recs, 16, all)) > 0) {
        for (uint32_t i = 0; i < n; i++) {
            assert_true(recs[i].frame >= expect);
            expect = recs[i].frame + 1;
        }
        taken += n;
    }
    return taken;
}

static void collector_far_behind_keeps_every_frame(void **state)
{
    (void)state;
    fr_device *fd = boundary_device();
    uint64_t now = 1000000000;
    /* 1000 frames (2 s at 500 a second) while the collector does not run:
     * 64 fitted the ring before it could grow. */
    end_frames(fd, 1000, &now);
    fr_record recs[16];
    uint64_t taken = 0;
    uint32_t n;
    while ((n = fr_take_ready(fd, recs, 16, false)) > 0) {
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(recs[i].frame, taken + i + 1);
        taken += n;
    }
    assert_int_equal(taken, 1000);
    assert_int_equal(fr_frames_lost(fd), 0);
    fr_device_destroy(fd);
}

static void work_of_a_frame_survives_the_growth(void **state)
{
    (void)state;
    fr_device *fd = boundary_device();
    uint64_t now = 1000000000;
    end_frames(fd, 2, &now); /* the stream exists; frame 3 is open */
    assert_int_equal(take_all(fd, 1, false), 2);
    const fr_tag tag = fr_tag_submission(fd, now);
    assert_int_equal(tag.frame, 3);
    /* Frames 3..302 end before the collector runs again; it then hands
     * frame 3's work back, and takes. */
    end_frames(fd, 300, &now);
    fr_busy gpu = { 0 };
    fr_busy_add(&gpu, 5000, 905000);
    fr_submission_done(fd, tag, &gpu);
    fr_record recs[16];
    assert_int_equal(fr_take_ready(fd, recs, 16, false), 16);
    assert_int_equal(recs[0].frame, 3);
    assert_true(recs[0].gpu_known);
    assert_false(recs[0].incomplete);
    assert_int_equal(recs[0].gpu_time_ns, 900000);
    assert_int_equal(recs[0].submissions, 1);
    assert_int_equal(recs[1].frame, 4);
    assert_false(recs[1].gpu_known);
    assert_int_equal(take_all(fd, 19, false), 300 - 16);
    assert_int_equal(fr_frames_lost(fd), 0);
    fr_device_destroy(fd);
}

static void frames_past_the_largest_ring_are_counted(void **state)
{
    (void)state;
    fr_device *fd = boundary_device();
    uint64_t now = 1000000000;
    const uint64_t ended = FR_RING_MAX + 100;
    end_frames(fd, ended, &now);
    const uint64_t lost = fr_frames_lost(fd);
    assert_true(lost > 0);
    const uint64_t taken = take_all(fd, 1, false);
    assert_int_equal(taken + lost, ended);
    /* The newest are the ones kept. */
    end_frames(fd, 1, &now);
    fr_record r;
    assert_int_equal(fr_take_ready(fd, &r, 1, false), 1);
    assert_int_equal(r.frame, ended + 1);
    fr_device_destroy(fd);
}

static void unrecorded_frames_are_no_loss(void **state)
{
    (void)state;
    fr_device *fd = boundary_device();
    uint64_t now = 1000000000;
    for (uint64_t i = 0; i < FR_RING_MAX + 100; i++) {
        now += 2000000;
        fr_boundary(fd, &frame_end, now, false); /* no session traces them */
    }
    assert_int_equal(fr_frames_lost(fd), 0);
    assert_int_equal(take_all(fd, 1, true), 0);
    fr_device_destroy(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(collector_far_behind_keeps_every_frame),
        cmocka_unit_test(work_of_a_frame_survives_the_growth),
        cmocka_unit_test(frames_past_the_largest_ring_are_counted),
        cmocka_unit_test(unrecorded_frames_are_no_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
