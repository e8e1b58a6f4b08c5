/* SPDX-License-Identifier: MIT */
/* test_frame_boundary — unit tests of layer/layer_frame_boundary.c, the
 * layer's own VK_EXT_frame_boundary: the extension list and the feature
 * answered over a fake next entity, the plan for a device (off, native,
 * emulated), and the copies of submission, present and sparse-binding
 * chains without VkFrameBoundaryEXT (the application's structures never
 * changed, what cannot be copied passed as it is). The sparse-binding copy
 * is tested only here: lavapipe has no sparse-binding queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layer/layer_frame_boundary.h"
#include "layer/log.h"

/* ---- what the module needs from the rest of the layer ------------------ */

static long live_allocs;
static int fail_alloc_after = -1; /* allocations left before one fails; -1: never */

void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope)
{
    (void)alloc, (void)scope;
    if (fail_alloc_after == 0)
        return NULL;
    if (fail_alloc_after > 0)
        fail_alloc_after--;
    void *p = calloc(1, size);
    if (p)
        live_allocs++;
    return p;
}

void gt_free(const gt_allocator *alloc, void *ptr)
{
    (void)alloc;
    if (ptr)
        live_allocs--;
    free(ptr);
}

static int logged;

void gt_log(enum gt_log_level level, const char *fmt, ...)
{
    (void)level, (void)fmt;
    logged++;
}

/* ---- a fake next entity ------------------------------------------------ */

static const char *next_exts[4];
static uint32_t next_nexts;
static VkBool32 next_answers_fb = VK_FALSE; /* what its features2 writes, if it knows it */
static bool next_knows_fb;
static bool saw_fb_features; /* the feature structure reached it */

static VKAPI_ATTR VkResult VKAPI_CALL fake_enumerate(VkPhysicalDevice pd, const char *layer,
                                                     uint32_t *count, VkExtensionProperties *props)
{
    (void)pd, (void)layer;
    if (!props) {
        *count = next_nexts;
        return VK_SUCCESS;
    }
    uint32_t i = 0;
    for (; i < *count && i < next_nexts; i++) {
        memset(&props[i], 0, sizeof props[i]);
        strcpy(props[i].extensionName, next_exts[i]);
        props[i].specVersion = 1;
    }
    *count = i;
    return i < next_nexts ? VK_INCOMPLETE : VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL fake_features2(VkPhysicalDevice pd,
                                                 VkPhysicalDeviceFeatures2 *features)
{
    (void)pd;
    features->features.robustBufferAccess = VK_TRUE;
    for (VkBaseOutStructure *s = features->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT) {
            saw_fb_features = true;
            if (next_knows_fb)
                ((VkPhysicalDeviceFrameBoundaryFeaturesEXT *)(void *)s)->frameBoundary =
                    next_answers_fb;
        }
    }
}

static gt_instance inst;
static const VkPhysicalDevice pd = (VkPhysicalDevice)(uintptr_t)0x1234;

static int setup(void **state)
{
    (void)state;
    live_allocs = 0;
    logged = 0;
    fail_alloc_after = -1;
    memset(&inst, 0, sizeof inst);
    inst.vk.EnumerateDeviceExtensionProperties = fake_enumerate;
    inst.vk.GetPhysicalDeviceFeatures2 = fake_features2;
    next_exts[0] = "VK_KHR_swapchain";
    next_exts[1] = "VK_KHR_maintenance1";
    next_nexts = 2;
    next_knows_fb = false;
    next_answers_fb = VK_FALSE;
    saw_fb_features = false;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(live_allocs, 0);
    return 0;
}

/* ---- extension list and feature ---------------------------------------- */

static void enumerate_adds_it_once(void **state)
{
    (void)state;
    uint32_t n = 0;
    assert_int_equal(gt_fb_enumerate_device_extensions(&inst, pd, &n, NULL), VK_SUCCESS);
    assert_int_equal(n, 3);
    VkExtensionProperties props[4];
    n = 4;
    assert_int_equal(gt_fb_enumerate_device_extensions(&inst, pd, &n, props), VK_SUCCESS);
    assert_int_equal(n, 3);
    assert_string_equal(props[0].extensionName, "VK_KHR_swapchain");
    assert_string_equal(props[2].extensionName, VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME);
    assert_int_equal(props[2].specVersion, VK_EXT_FRAME_BOUNDARY_SPEC_VERSION);

    /* Too short an array: VK_INCOMPLETE, as many as fit. */
    n = 2;
    assert_int_equal(gt_fb_enumerate_device_extensions(&inst, pd, &n, props), VK_INCOMPLETE);
    assert_int_equal(n, 2);

    /* Listed below already: not twice. */
    next_exts[2] = VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME;
    next_nexts = 3;
    n = 0;
    assert_int_equal(gt_fb_enumerate_device_extensions(&inst, pd, &n, NULL), VK_SUCCESS);
    assert_int_equal(n, 3);
}

static void feature_answered_and_kept_from_below(void **state)
{
    (void)state;
    VkPhysicalDeviceFrameBoundaryFeaturesEXT fb = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = &fb,
    };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                     .pNext = &v12 };
    gt_fb_get_features2(&inst, pd, &f2, false);
    assert_false(saw_fb_features); /* out of the chain while down */
    assert_true(f2.features.robustBufferAccess);
    assert_int_equal(fb.frameBoundary, VK_TRUE);
    assert_ptr_equal(v12.pNext, &fb); /* put back */

    /* The KHR spelling falls back on the core one. */
    fb.frameBoundary = VK_FALSE;
    gt_fb_get_features2(&inst, pd, &f2, true);
    assert_int_equal(fb.frameBoundary, VK_TRUE);

    /* Listed below: the structure goes down. */
    next_exts[2] = VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME;
    next_nexts = 3;
    next_knows_fb = true;
    next_answers_fb = VK_TRUE;
    fb.frameBoundary = VK_FALSE;
    gt_fb_get_features2(&inst, pd, &f2, false);
    assert_true(saw_fb_features);
    assert_int_equal(fb.frameBoundary, VK_TRUE);

    /* No structure of ours: the call as it is. */
    saw_fb_features = false;
    v12.pNext = NULL;
    gt_fb_get_features2(&inst, pd, &f2, false);
    assert_false(saw_fb_features);
}

static void plan_device(void **state)
{
    (void)state;
    const char *none[] = { "VK_KHR_swapchain" };
    const char *with[] = { "VK_KHR_swapchain", VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME };
    VkDeviceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                .enabledExtensionCount = 1,
                                .ppEnabledExtensionNames = none };
    assert_int_equal(gt_fb_plan_device(&inst, pd, &info), GT_FB_OFF);
    info.enabledExtensionCount = 2;
    info.ppEnabledExtensionNames = with;
    assert_int_equal(gt_fb_plan_device(&inst, pd, &info), GT_FB_EMULATED);

    /* Listed below, but the feature left alone (the loader listed the
     * layer's own manifest entry): still the layer's. */
    next_exts[2] = VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME;
    next_nexts = 3;
    assert_int_equal(gt_fb_plan_device(&inst, pd, &info), GT_FB_EMULATED);
    assert_true(saw_fb_features);

    /* Listed and answered below: the real thing. */
    next_knows_fb = true;
    next_answers_fb = VK_TRUE;
    assert_int_equal(gt_fb_plan_device(&inst, pd, &info), GT_FB_NATIVE);
}

/* ---- chains without VkFrameBoundaryEXT --------------------------------- */

static VkFrameBoundaryEXT boundary(const void *next)
{
    return (VkFrameBoundaryEXT){ .sType = VK_STRUCTURE_TYPE_FRAME_BOUNDARY_EXT,
                                 .pNext = next,
                                 .flags = VK_FRAME_BOUNDARY_FRAME_END_BIT_EXT,
                                 .frameID = 7 };
}

static void chain_has_no_boundary(const void *pnext)
{
    assert_false(gt_fb_in_chain(pnext));
}

static void submits_without_boundary_unchanged(void **state)
{
    (void)state;
    gt_fb_scratch s = { .alloc = &inst.alloc };
    VkTimelineSemaphoreSubmitInfo ts = { .sType =
                                             VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO };
    VkSubmitInfo submits[2] = {
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &ts },
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO },
    };
    assert_ptr_equal(gt_fb_strip_submits(&s, 2, submits), submits);
    assert_ptr_equal(gt_fb_strip_submits(&s, 0, NULL), NULL);
    assert_int_equal(s.nblocks, 0);
}

static void submits_stripped(void **state)
{
    (void)state;
    gt_fb_scratch s = { .alloc = &inst.alloc };
    /* submit 0: timeline info -> boundary -> protected info;
     * submit 1: boundary alone; submit 2: nothing. */
    VkProtectedSubmitInfo prot = { .sType = VK_STRUCTURE_TYPE_PROTECTED_SUBMIT_INFO };
    VkFrameBoundaryEXT fb0 = boundary(&prot);
    VkTimelineSemaphoreSubmitInfo ts = { .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                         .pNext = &fb0,
                                         .waitSemaphoreValueCount = 3 };
    VkFrameBoundaryEXT fb1 = boundary(NULL);
    VkSubmitInfo submits[3] = {
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &ts, .commandBufferCount = 1 },
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &fb1, .commandBufferCount = 2 },
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 3 },
    };
    const VkSubmitInfo *down = gt_fb_strip_submits(&s, 3, submits);
    assert_non_null(down);
    assert_ptr_not_equal(down, submits);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(down[i].commandBufferCount, (uint32_t)i + 1);
        chain_has_no_boundary(down[i].pNext);
    }
    /* The copy of the timeline info keeps its fields and leads on to the
     * protected info, shared. */
    const VkTimelineSemaphoreSubmitInfo *ts_copy = down[0].pNext;
    assert_ptr_not_equal(ts_copy, &ts);
    assert_int_equal(ts_copy->sType, VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
    assert_int_equal(ts_copy->waitSemaphoreValueCount, 3);
    assert_ptr_equal(ts_copy->pNext, &prot);
    assert_ptr_equal(down[1].pNext, NULL);
    assert_ptr_equal(down[2].pNext, NULL);
    /* The application's structures as they were. */
    assert_ptr_equal(submits[0].pNext, &ts);
    assert_ptr_equal(ts.pNext, &fb0);
    assert_ptr_equal(submits[1].pNext, &fb1);
    gt_fb_scratch_release(&s);
}

static void two_boundaries_in_one_chain(void **state)
{
    (void)state;
    gt_fb_scratch s = { .alloc = &inst.alloc };
    VkFrameBoundaryEXT second = boundary(NULL);
    VkDeviceGroupSubmitInfo group = { .sType = VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO,
                                      .pNext = &second };
    VkFrameBoundaryEXT first = boundary(&group);
    VkSubmitInfo submit = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &first };
    const VkSubmitInfo *down = gt_fb_strip_submits(&s, 1, &submit);
    assert_non_null(down);
    chain_has_no_boundary(down->pNext);
    const VkDeviceGroupSubmitInfo *g = down->pNext;
    assert_int_equal(g->sType, VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO);
    assert_null(g->pNext);
    gt_fb_scratch_release(&s);
}

static void unknown_structure_before_passes_as_is(void **state)
{
    (void)state;
    gt_fb_scratch s = { .alloc = &inst.alloc };
    VkFrameBoundaryEXT fb = boundary(NULL);
    VkBaseInStructure unknown = { .sType = (VkStructureType)1000999000,
                                  .pNext = (const void *)&fb };
    VkSubmitInfo submit = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &unknown };
    const VkSubmitInfo *down = gt_fb_strip_submits(&s, 1, &submit);
    assert_non_null(down);
    assert_ptr_equal(down->pNext, &unknown); /* the chain as it is */
    assert_int_equal(logged, 1);
    down = gt_fb_strip_submits(&s, 1, &submit);
    assert_int_equal(logged, 1); /* once */
    gt_fb_scratch_release(&s);
}

static void submits2_present_and_sparse(void **state)
{
    (void)state;
    gt_fb_scratch s = { .alloc = &inst.alloc };
    VkFrameBoundaryEXT fb = boundary(NULL);

    VkSubmitInfo2 submit2 = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                              .pNext = &fb,
                              .commandBufferInfoCount = 4 };
    const VkSubmitInfo2 *down2 = gt_fb_strip_submits2(&s, 1, &submit2);
    assert_non_null(down2);
    assert_null(down2->pNext);
    assert_int_equal(down2->commandBufferInfoCount, 4);

    VkPresentIdKHR id = { .sType = VK_STRUCTURE_TYPE_PRESENT_ID_KHR,
                          .pNext = &fb,
                          .swapchainCount = 1 };
    VkPresentInfoKHR present = { .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR,
                                 .pNext = &id,
                                 .swapchainCount = 1 };
    const VkPresentInfoKHR *downp = gt_fb_strip_present(&s, &present);
    assert_non_null(downp);
    assert_ptr_not_equal(downp, &present);
    const VkPresentIdKHR *id_copy = downp->pNext;
    assert_int_equal(id_copy->sType, VK_STRUCTURE_TYPE_PRESENT_ID_KHR);
    assert_null(id_copy->pNext);
    assert_int_equal(downp->swapchainCount, 1);
    assert_ptr_equal(id.pNext, &fb);

    VkDeviceGroupBindSparseInfo group = { .sType = VK_STRUCTURE_TYPE_DEVICE_GROUP_BIND_SPARSE_INFO,
                                          .pNext = &fb,
                                          .resourceDeviceIndex = 1 };
    VkBindSparseInfo binds[2] = {
        { .sType = VK_STRUCTURE_TYPE_BIND_SPARSE_INFO, .pNext = &group, .bufferBindCount = 0 },
        { .sType = VK_STRUCTURE_TYPE_BIND_SPARSE_INFO, .pNext = &fb },
    };
    const VkBindSparseInfo *downs = gt_fb_strip_bind_sparse(&s, 2, binds);
    assert_non_null(downs);
    const VkDeviceGroupBindSparseInfo *g = downs[0].pNext;
    assert_int_equal(g->sType, VK_STRUCTURE_TYPE_DEVICE_GROUP_BIND_SPARSE_INFO);
    assert_int_equal(g->resourceDeviceIndex, 1);
    assert_null(g->pNext);
    assert_null(downs[1].pNext);
    gt_fb_scratch_release(&s);
    assert_int_equal(s.nblocks, 0);
}

static void many_and_out_of_memory(void **state)
{
    (void)state;
    /* More than one block's worth: an array of 600 submits (over 4096
     * bytes) gets a block of its own, the chains' copies more. */
    enum {
        N = 600
    };
    static VkSubmitInfo submits[N];
    static VkTimelineSemaphoreSubmitInfo ts[N];
    VkFrameBoundaryEXT fb = boundary(NULL);
    for (int i = 0; i < N; i++) {
        ts[i] = (VkTimelineSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .pNext = &fb,
            .signalSemaphoreValueCount = (uint32_t)i,
        };
        submits[i] = (VkSubmitInfo){ .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &ts[i] };
    }
    gt_fb_scratch s = { .alloc = &inst.alloc };
    const VkSubmitInfo *down = gt_fb_strip_submits(&s, N, submits);
    assert_non_null(down);
    for (int i = 0; i < N; i++) {
        const VkTimelineSemaphoreSubmitInfo *c = down[i].pNext;
        assert_int_equal(c->signalSemaphoreValueCount, (uint32_t)i);
        assert_null(c->pNext);
    }
    gt_fb_scratch_release(&s);

    /* The scratch's blocks run out: NULL (the caller passes the
     * original), nothing leaked. */
    enum {
        M = 4096
    };
    static VkSubmitInfo big[M];
    static VkTimelineSemaphoreSubmitInfo bts[M];
    for (int i = 0; i < M; i++) {
        bts[i] = ts[0];
        big[i] = (VkSubmitInfo){ .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &bts[i] };
    }
    assert_null(gt_fb_strip_submits(&s, M, big));
    gt_fb_scratch_release(&s);

    /* An allocation fails: a chain's copy (the array has a block of its
     * own), the array's. */
    fail_alloc_after = 1;
    assert_null(gt_fb_strip_submits(&s, N, submits));
    gt_fb_scratch_release(&s);
    fail_alloc_after = 0;
    assert_null(gt_fb_strip_submits(&s, 2, submits));
    gt_fb_scratch_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(enumerate_adds_it_once, setup, teardown),
        cmocka_unit_test_setup_teardown(feature_answered_and_kept_from_below, setup, teardown),
        cmocka_unit_test_setup_teardown(plan_device, setup, teardown),
        cmocka_unit_test_setup_teardown(submits_without_boundary_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(submits_stripped, setup, teardown),
        cmocka_unit_test_setup_teardown(two_boundaries_in_one_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_structure_before_passes_as_is, setup, teardown),
        cmocka_unit_test_setup_teardown(submits2_present_and_sparse, setup, teardown),
        cmocka_unit_test_setup_teardown(many_and_out_of_memory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
