/* SPDX-License-Identifier: MIT */
/* test_reuse_check.c — the query reuse check (reuse_check.h) on a device of
 * stubs: what it counts as a reset before the device was known done, and
 * what it takes as knowing it done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/faultlayer/reuse_check.h"

/* ---- a device of stubs: fences are counters, none signals on its own -------- */

static uint64_t g_next_fence = 1;

static VKAPI_ATTR VkResult VKAPI_CALL stub_CreateFence(VkDevice device,
                                                       const VkFenceCreateInfo *info,
                                                       const VkAllocationCallbacks *alloc,
                                                       VkFence *fence)
{
    (void)device, (void)info, (void)alloc;
    *fence = (VkFence)(uintptr_t)(0x1000 + g_next_fence++);
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL stub_DestroyFence(VkDevice device, VkFence fence,
                                                    const VkAllocationCallbacks *alloc)
{
    (void)device, (void)fence, (void)alloc;
}

static VKAPI_ATTR VkResult VKAPI_CALL stub_GetFenceStatus(VkDevice device, VkFence fence)
{
    (void)device, (void)fence;
    return VK_NOT_READY; /* the check's own fences lag: only what it is told counts */
}

static VKAPI_ATTR VkResult VKAPI_CALL stub_ResetFences(VkDevice device, uint32_t n,
                                                       const VkFence *fences)
{
    (void)device, (void)n, (void)fences;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL stub_QueueSubmit(VkQueue queue, uint32_t n,
                                                       const VkSubmitInfo *submits, VkFence fence)
{
    (void)queue, (void)n, (void)submits, (void)fence;
    return VK_SUCCESS;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL stub_gdpa(VkDevice device, const char *name)
{
    (void)device;
    if (!strcmp(name, "vkCreateFence"))
        return (PFN_vkVoidFunction)stub_CreateFence;
    if (!strcmp(name, "vkDestroyFence"))
        return (PFN_vkVoidFunction)stub_DestroyFence;
    if (!strcmp(name, "vkGetFenceStatus"))
        return (PFN_vkVoidFunction)stub_GetFenceStatus;
    if (!strcmp(name, "vkResetFences"))
        return (PFN_vkVoidFunction)stub_ResetFences;
    if (!strcmp(name, "vkQueueSubmit"))
        return (PFN_vkVoidFunction)stub_QueueSubmit;
    return NULL;
}

#define DEV     ((VkDevice)(uintptr_t)0x10)
#define QUEUE   ((VkQueue)(uintptr_t)0x20)
#define POOL    ((VkQueryPool)(uintptr_t)0x30)
#define CB_A    ((VkCommandBuffer)(uintptr_t)0x41)
#define CB_B    ((VkCommandBuffer)(uintptr_t)0x42)
#define FENCE_A ((VkFence)(uintptr_t)0x51)
#define FENCE_B ((VkFence)(uintptr_t)0x52)

/* The count of unsafe resets, from the summary rc_destroy prints. */
static unsigned long finish(rc_state *s)
{
    char buf[512] = { 0 };
    fflush(stderr);
    FILE *saved = stderr;
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    stderr = tmp;
    rc_destroy(s);
    stderr = saved;
    rewind(tmp);
    assert_non_null(fgets(buf, sizeof buf, tmp));
    fclose(tmp);
    fprintf(stderr, "%s", buf);
    const char *u = strstr(buf, " unsafe=");
    assert_non_null(u);
    return strtoul(u + 8, NULL, 10);
}

/* Submission 1 (CB_A) writes query 0 with fence `fa`, submission 2 (CB_B)
 * query 1 with fence `fb`. */
static rc_state *two_submissions(VkFence fa, VkFence fb)
{
    setenv("GPUTRACE_FAULT_CHECK_QUERY_REUSE", "1", 1);
    rc_state *s = rc_create(DEV, stub_gdpa);
    assert_non_null(s);
    rc_pool_created(s, POOL, 4);
    rc_cb_begin(s, CB_A);
    rc_timestamp(s, CB_A, POOL, 0, true);
    rc_cb_begin(s, CB_B);
    rc_timestamp(s, CB_B, POOL, 1, true);
    const VkCommandBuffer a = CB_A, b = CB_B;
    rc_submitted(s, QUEUE, 1, &a, fa);
    rc_submitted(s, QUEUE, 1, &b, fb);
    return s;
}

/* two_submissions() with their own fences, `fence` found signalled above
 * (VK_NULL_HANDLE: none), then a host reset of `query`: the number of
 * unsafe resets. */
static unsigned long unsafe_after(VkFence fence, uint32_t query)
{
    rc_state *s = two_submissions(FENCE_A, FENCE_B);
    if (fence)
        rc_fences_signalled(s, 1, &fence);
    rc_host_reset(s, POOL, query, 1);
    return finish(s);
}

/* Nothing known complete: resetting what submission 1 wrote is a break. */
static void test_reset_before_anything_known(void **state)
{
    (void)state;
    assert_int_equal(unsafe_after(VK_NULL_HANDLE, 0), 1);
}

/* The later submission's fence found signalled above: the reset of what
 * the earlier one wrote is safe, of what the later one wrote is not. */
static void test_batch_fence_seen_signalled(void **state)
{
    (void)state;
    assert_int_equal(unsafe_after(FENCE_B, 0), 0);
    assert_int_equal(unsafe_after(FENCE_B, 1), 1);
}

/* Only the earlier submission's fence: it proves nothing about itself. */
static void test_own_fence_proves_only_earlier(void **state)
{
    (void)state;
    assert_int_equal(unsafe_after(FENCE_A, 0), 1);
}

/* A fence submitted again is about its newest submission. */
static void test_reused_fence_is_about_the_newest(void **state)
{
    (void)state;
    rc_state *s = two_submissions(FENCE_A, FENCE_A); /* reset between */
    const VkFence f = FENCE_A;
    rc_fences_signalled(s, 1, &f);
    rc_host_reset(s, POOL, 0, 1); /* submission 2 complete: safe */
    assert_int_equal(finish(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_before_anything_known),
        cmocka_unit_test(test_batch_fence_seen_signalled),
        cmocka_unit_test(test_own_fence_proves_only_earlier),
        cmocka_unit_test(test_reused_fence_is_about_the_newest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
