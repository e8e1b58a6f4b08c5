/* SPDX-License-Identifier: MIT */
/* layer_frame_boundary.c — see layer_frame_boundary.h. */
#include "layer/layer_frame_boundary.h"

#include <stdatomic.h>
#include <string.h>

#include "layer/log.h"

#define FB_STRUCT   VK_STRUCTURE_TYPE_FRAME_BOUNDARY_EXT
#define FB_FEATURES VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT

/* Structures that may come before a VkFrameBoundaryEXT in the chains of
 * VkSubmitInfo(2), VkPresentInfoKHR and VkBindSparseInfo (Vulkan 1.3.239),
 * which the layer can therefore copy. */
#define GT_FB_CHAIN_STRUCTS(X)                                            \
    X(DEVICE_GROUP_SUBMIT_INFO, VkDeviceGroupSubmitInfo)                  \
    X(PROTECTED_SUBMIT_INFO, VkProtectedSubmitInfo)                       \
    X(TIMELINE_SEMAPHORE_SUBMIT_INFO, VkTimelineSemaphoreSubmitInfo)      \
    X(PERFORMANCE_QUERY_SUBMIT_INFO_KHR, VkPerformanceQuerySubmitInfoKHR) \
    X(AMIGO_PROFILING_SUBMIT_INFO_SEC, VkAmigoProfilingSubmitInfoSEC)     \
    X(DEVICE_GROUP_BIND_SPARSE_INFO, VkDeviceGroupBindSparseInfo)         \
    X(DISPLAY_PRESENT_INFO_KHR, VkDisplayPresentInfoKHR)                  \
    X(PRESENT_REGIONS_KHR, VkPresentRegionsKHR)                           \
    X(DEVICE_GROUP_PRESENT_INFO_KHR, VkDeviceGroupPresentInfoKHR)         \
    X(PRESENT_ID_KHR, VkPresentIdKHR)                                     \
    X(PRESENT_TIMES_INFO_GOOGLE, VkPresentTimesInfoGOOGLE)                \
    X(SWAPCHAIN_PRESENT_FENCE_INFO_EXT, VkSwapchainPresentFenceInfoEXT)   \
    X(SWAPCHAIN_PRESENT_MODE_INFO_EXT, VkSwapchainPresentModeInfoEXT)

static size_t chain_struct_size(VkStructureType type)
{
    switch (type) {
#define GT_FB_SIZE_CASE(stype, ctype) \
    case VK_STRUCTURE_TYPE_##stype:   \
        return sizeof(ctype);
        GT_FB_CHAIN_STRUCTS(GT_FB_SIZE_CASE)
#undef GT_FB_SIZE_CASE
    default:
        return 0;
    }
}

/* ---- what the next entity has ------------------------------------------------------ */

/* The next entity's device extensions (owned, gt_free), or NULL. */
static VkExtensionProperties *next_extensions(const gt_instance *inst, VkPhysicalDevice pd,
                                              uint32_t *count, VkResult *res)
{
    *count = 0;
    uint32_t n = 0;
    *res = inst->vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    if (*res != VK_SUCCESS || n == 0)
        return NULL;
    VkExtensionProperties *list =
        gt_zalloc(&inst->alloc, n * sizeof *list, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
    if (!list) {
        *res = VK_ERROR_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    *res = inst->vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, list);
    if (*res < 0) {
        gt_free(&inst->alloc, list);
        return NULL;
    }
    *res = VK_SUCCESS; /* VK_INCOMPLETE: a shorter list is still a correct one */
    *count = n;
    return list;
}

static bool lists_frame_boundary(const VkExtensionProperties *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(list[i].extensionName, VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME) == 0)
            return true;
    return false;
}

static PFN_vkGetPhysicalDeviceFeatures2 features2_of(const gt_instance *inst, bool khr)
{
    PFN_vkGetPhysicalDeviceFeatures2 core = inst->vk.GetPhysicalDeviceFeatures2;
    PFN_vkGetPhysicalDeviceFeatures2 ext = inst->vk.GetPhysicalDeviceFeatures2KHR;
    return khr ? (ext ? ext : core) : (core ? core : ext);
}

bool gt_fb_native(const gt_instance *inst, VkPhysicalDevice pd, bool probe)
{
    uint32_t n;
    VkResult res;
    VkExtensionProperties *list = next_extensions(inst, pd, &n, &res);
    const bool listed = lists_frame_boundary(list, n);
    gt_free(&inst->alloc, list);
    if (!listed || !probe)
        return listed;
    PFN_vkGetPhysicalDeviceFeatures2 features2 = features2_of(inst, false);
    if (!features2)
        return false;
    VkPhysicalDeviceFrameBoundaryFeaturesEXT fb = { .sType = FB_FEATURES };
    VkPhysicalDeviceFeatures2 all = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                      .pNext = &fb };
    features2(pd, &all);
    return fb.frameBoundary == VK_TRUE;
}

VkResult gt_fb_enumerate_device_extensions(const gt_instance *inst, VkPhysicalDevice pd,
                                           uint32_t *count, VkExtensionProperties *props)
{
    uint32_t n;
    VkResult res;
    VkExtensionProperties *list = next_extensions(inst, pd, &n, &res);
    if (res != VK_SUCCESS) {
        gt_free(&inst->alloc, list);
        return res;
    }
    const bool add = !lists_frame_boundary(list, n);
    const uint32_t total = n + (add ? 1u : 0u);
    if (!props) {
        *count = total;
        gt_free(&inst->alloc, list);
        return VK_SUCCESS;
    }
    uint32_t copied = 0;
    for (; copied < *count && copied < n; copied++)
        props[copied] = list[copied];
    if (add && copied < *count) {
        memset(&props[copied], 0, sizeof props[copied]);
        strcpy(props[copied].extensionName, VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME);
        props[copied].specVersion = VK_EXT_FRAME_BOUNDARY_SPEC_VERSION;
        copied++;
    }
    gt_free(&inst->alloc, list);
    *count = copied;
    return copied < total ? VK_INCOMPLETE : VK_SUCCESS;
}

void gt_fb_get_features2(const gt_instance *inst, VkPhysicalDevice pd,
                         VkPhysicalDeviceFeatures2 *features, bool khr)
{
    PFN_vkGetPhysicalDeviceFeatures2 next = features2_of(inst, khr);
    if (!next)
        return; /* handed out only where the next entity has one of them */
    VkBaseOutStructure *prev = (VkBaseOutStructure *)(void *)features, *fb = NULL;
    for (VkBaseOutStructure *s = features ? features->pNext : NULL; s; prev = s, s = s->pNext) {
        if (s->sType == FB_FEATURES) {
            fb = s;
            break;
        }
    }
    if (!fb) {
        next(pd, features);
        return;
    }
    if (gt_fb_native(inst, pd, false)) {
        /* Listed below: whoever lists it answers; a driver that does not
         * know the structure leaves it alone, and then it is ours. */
        ((VkPhysicalDeviceFrameBoundaryFeaturesEXT *)(void *)fb)->frameBoundary = VK_FALSE;
        next(pd, features);
        VkPhysicalDeviceFrameBoundaryFeaturesEXT *f = (void *)fb;
        if (!f->frameBoundary)
            f->frameBoundary = VK_TRUE;
        return;
    }
    /* Unknown below: out of the chain while the call is down (the
     * application's output structures, put back as they were). */
    prev->pNext = fb->pNext;
    next(pd, features);
    prev->pNext = fb;
    ((VkPhysicalDeviceFrameBoundaryFeaturesEXT *)(void *)fb)->frameBoundary = VK_TRUE;
}

enum gt_frame_boundary gt_fb_plan_device(const gt_instance *inst, VkPhysicalDevice pd,
                                         const VkDeviceCreateInfo *app)
{
    bool enabled = false;
    for (uint32_t i = 0; i < app->enabledExtensionCount && !enabled; i++)
        enabled =
            strcmp(app->ppEnabledExtensionNames[i], VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME) == 0;
    if (!enabled)
        return GT_FB_OFF;
    if (gt_fb_native(inst, pd, true)) {
        gt_info("device: VK_EXT_frame_boundary provided below; passed through");
        return GT_FB_NATIVE;
    }
    gt_info("device: VK_EXT_frame_boundary provided by the layer (not below)");
    return GT_FB_EMULATED;
}

/* ---- copies without VkFrameBoundaryEXT --------------------------------------------- */

static void *scratch_alloc(gt_fb_scratch *s, size_t size)
{
    size = (size + 15u) & ~(size_t)15u;
    if (!s->nblocks || s->used + size > s->size) {
        if (s->nblocks == GT_FB_SCRATCH_BLOCKS)
            return NULL;
        const size_t block = size > GT_FB_SCRATCH_BLOCK ? size : GT_FB_SCRATCH_BLOCK;
        void *p = gt_zalloc(s->alloc, block, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
        if (!p)
            return NULL;
        s->blocks[s->nblocks++] = p;
        s->used = 0;
        s->size = block;
    }
    void *p = (char *)s->blocks[s->nblocks - 1] + s->used;
    s->used += size;
    return p;
}

void gt_fb_scratch_release(gt_fb_scratch *s)
{
    for (uint32_t i = 0; i < s->nblocks; i++)
        gt_free(s->alloc, s->blocks[i]);
    s->nblocks = 0;
    s->used = s->size = 0;
}

bool gt_fb_in_chain(const void *pnext)
{
    for (const VkBaseInStructure *p = pnext; p; p = p->pNext)
        if (p->sType == FB_STRUCT)
            return true;
    return false;
}

/* `head` without VkFrameBoundaryEXT: copies of what comes before the last
 * one, the rest shared. `head` itself when a structure before it cannot
 * be sized (logged once); *oom when a copy could not be made. */
static const void *strip_chain(gt_fb_scratch *s, const void *head, bool *oom)
{
    const VkBaseInStructure *last = NULL;
    for (const VkBaseInStructure *p = head; p; p = p->pNext)
        if (p->sType == FB_STRUCT)
            last = p;
    if (!last)
        return head;
    for (const VkBaseInStructure *p = head; p != last; p = p->pNext) {
        if (p->sType != FB_STRUCT && !chain_struct_size(p->sType)) {
            static atomic_bool told;
            if (!atomic_exchange(&told, true))
                gt_info("VkFrameBoundaryEXT after a structure of type %d the layer cannot copy: "
                        "passed down as it is",
                        (int)p->sType);
            return head;
        }
    }
    VkBaseOutStructure *first = NULL, *prev = NULL;
    for (const VkBaseInStructure *p = head; p != last; p = p->pNext) {
        if (p->sType == FB_STRUCT)
            continue;
        const size_t size = chain_struct_size(p->sType);
        VkBaseOutStructure *copy = scratch_alloc(s, size);
        if (!copy) {
            *oom = true;
            return head;
        }
        memcpy(copy, p, size);
        if (prev)
            prev->pNext = copy;
        else
            first = copy;
        prev = copy;
    }
    if (!prev)
        return last->pNext;
    prev->pNext = (VkBaseOutStructure *)(void *)last->pNext;
    return first;
}

/* The array copy and each element's chain: `type` is the element type. */
#define GT_FB_STRIP_ARRAY(s, count, items, type)                         \
    do {                                                                 \
        bool any = false, oom = false;                                   \
        for (uint32_t i = 0; i < (count) && !any; i++)                   \
            any = gt_fb_in_chain((items)[i].pNext);                      \
        if (!any)                                                        \
            return (items);                                              \
        type *copy = scratch_alloc((s), (size_t)(count) * sizeof *copy); \
        if (!copy)                                                       \
            return NULL;                                                 \
        for (uint32_t i = 0; i < (count); i++) {                         \
            copy[i] = (items)[i];                                        \
            copy[i].pNext = strip_chain((s), (items)[i].pNext, &oom);    \
        }                                                                \
        return oom ? NULL : copy;                                        \
    } while (0)

const VkSubmitInfo *gt_fb_strip_submits(gt_fb_scratch *s, uint32_t count,
                                        const VkSubmitInfo *submits)
{
    GT_FB_STRIP_ARRAY(s, count, submits, VkSubmitInfo);
}

const VkSubmitInfo2 *gt_fb_strip_submits2(gt_fb_scratch *s, uint32_t count,
                                          const VkSubmitInfo2 *submits)
{
    GT_FB_STRIP_ARRAY(s, count, submits, VkSubmitInfo2);
}

const VkBindSparseInfo *gt_fb_strip_bind_sparse(gt_fb_scratch *s, uint32_t count,
                                                const VkBindSparseInfo *infos)
{
    GT_FB_STRIP_ARRAY(s, count, infos, VkBindSparseInfo);
}

const VkPresentInfoKHR *gt_fb_strip_present(gt_fb_scratch *s, const VkPresentInfoKHR *info)
{
    GT_FB_STRIP_ARRAY(s, 1u, info, VkPresentInfoKHR);
}
