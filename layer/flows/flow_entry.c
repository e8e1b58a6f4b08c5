/* SPDX-License-Identifier: MIT */
/* flow_entry.c — the timeline.h hook points of flows: semaphore and fence
 * lifetimes, and the host waits (slices naming what they waited for).
 *
 * Without a session that gets the GPU stages, a wait costs the hook one
 * relaxed atomic load (tl_wait_begin answers 0); outside the
 * GPUTRACE_FRAMES window one more (frames/fr_frames.h), as the stages'
 * hooks: a wait there is not written, like the rest of its frame (even
 * one for the work of the window's last frames). A wait with a zero
 * timeout is a poll, not a stall: no slice.
 */
#include "layer/collector.h"
#include "layer/flows/flow_sync.h"
#include "layer/flows/host_waits.h"
#include "layer/frames/fr_frames.h"
#include "layer/timeline.h"
#include "layer/timeline_device_types.h"
#include "layer/timeline_lookup.h"

/* Stages one wait slice names at most. */
#define WAIT_IDS 64u

/* Timing now: a session traces and the frame is inside GPUTRACE_FRAMES
 * (the test of timeline_entry.c). */
static inline bool timing(const tl_device *td)
{
    return tl_session_tracing() && td && fr_window_open(td->frames);
}

void tl_semaphore_created(gt_device *dev, VkSemaphore semaphore, const VkSemaphoreCreateInfo *info)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        fs_semaphore_created(td->flows, semaphore, info);
}

void tl_semaphore_destroy(gt_device *dev, VkSemaphore semaphore)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        fs_semaphore_destroyed(td->flows, semaphore);
}

void tl_semaphore_signaled(gt_device *dev, const VkSemaphoreSignalInfo *info)
{
    tl_device *td = tl_device_of(dev);
    if (info && timing(td))
        fs_semaphore_signaled(td->flows, info->semaphore, info->value);
}

void tl_fence_destroy(gt_device *dev, VkFence fence)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        fs_fence_destroyed(td->flows, fence);
}

uint64_t tl_wait_begin(gt_device *dev)
{
    /* The session first: without one, no device lookup either. */
    if (!tl_session_tracing())
        return 0;
    return timing(tl_device_of(dev)) ? gc_boottime_ns() : 0;
}

void tl_fences_waited(gt_device *dev, uint64_t begin, uint32_t count, const VkFence *fences,
                      VkBool32 wait_all, uint64_t timeout, VkResult result)
{
    tl_device *td = tl_device_of(dev);
    if (!begin || !td || !timeout || (result != VK_SUCCESS && result != VK_TIMEOUT))
        return;
    const uint64_t end = gc_boottime_ns();
    uint64_t ids[WAIT_IDS];
    uint32_t n = 0;
    for (uint32_t i = 0; result == VK_SUCCESS && fences && i < count; i++) {
        /* Waiting for any: only the fences that did signal. */
        if (!wait_all && dev->vk.GetFenceStatus(dev->handle, fences[i]) != VK_SUCCESS)
            continue;
        fs_fence_ids(td->flows, fences[i], ids, &n, WAIT_IDS);
    }
    hwait_write(td->waits, "vkWaitForFences", begin, end, ids, n);
}

void tl_semaphores_waited(gt_device *dev, uint64_t begin, const char *api,
                          const VkSemaphoreWaitInfo *info, uint64_t timeout, VkResult result)
{
    tl_device *td = tl_device_of(dev);
    if (!begin || !td || !info || !timeout || (result != VK_SUCCESS && result != VK_TIMEOUT))
        return;
    const uint64_t end = gc_boottime_ns();
    const bool any = info->flags & VK_SEMAPHORE_WAIT_ANY_BIT;
    PFN_vkGetSemaphoreCounterValue counter = dev->vk.GetSemaphoreCounterValue
                                                 ? dev->vk.GetSemaphoreCounterValue
                                                 : dev->vk.GetSemaphoreCounterValueKHR;
    uint64_t ids[WAIT_IDS];
    uint32_t n = 0;
    for (uint32_t i = 0; result == VK_SUCCESS && i < info->semaphoreCount; i++) {
        uint64_t value = 0;
        /* Waiting for any: only the semaphores that got there. */
        if (any && (!counter || counter(dev->handle, info->pSemaphores[i], &value) != VK_SUCCESS ||
                    value < info->pValues[i]))
            continue;
        fs_value_ids(td->flows, info->pSemaphores[i], info->pValues[i], ids, &n, WAIT_IDS);
    }
    hwait_write(td->waits, api, begin, end, ids, n);
}

void tl_queue_idle(gt_device *dev, uint64_t begin, VkQueue queue)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    if (atomic_load_explicit(&td->started, memory_order_acquire))
        col_nudge(td->collector);
    const tl_queue *q = begin ? tl_queue_find(td, queue) : NULL;
    if (!q)
        return;
    uint64_t ids[WAIT_IDS];
    uint32_t n = 0;
    fs_queue_ids(td->flows, q->slot, ids, &n, WAIT_IDS);
    hwait_write(td->waits, "vkQueueWaitIdle", begin, gc_boottime_ns(), ids, n);
}

void tl_device_idle(gt_device *dev, uint64_t begin)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    if (atomic_load_explicit(&td->started, memory_order_acquire))
        col_nudge(td->collector);
    if (!begin)
        return;
    uint64_t ids[WAIT_IDS];
    uint32_t n = 0;
    fs_device_ids(td->flows, ids, &n, WAIT_IDS);
    hwait_write(td->waits, "vkDeviceWaitIdle", begin, gc_boottime_ns(), ids, n);
}
