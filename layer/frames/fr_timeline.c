/* SPDX-License-Identifier: MIT */
/* fr_timeline.c — see fr_timeline.h. */
#include "layer/frames/fr_timeline.h"

#include "layer/collector.h"
#include "layer/frames/fr_frames.h"
#include "layer/gpu_clock.h"
#include "layer/session.h"

/* A frame is ready to be written: the collector, if it runs, looks now
 * rather than at its next wake-up (up to a second away when idle). */
static void ready(tl_device *td)
{
    if (atomic_load_explicit(&td->started, memory_order_acquire) && td->collector)
        col_nudge(td->collector);
}

/* Every VkFrameBoundaryEXT in a pNext chain. */
static bool boundaries(tl_device *td, const void *pnext, uint64_t now, bool record)
{
    bool any = false;
    for (const VkBaseInStructure *p = pnext; p; p = p->pNext)
        if (p->sType == VK_STRUCTURE_TYPE_FRAME_BOUNDARY_EXT)
            any =
                fr_boundary(td->frames, (const VkFrameBoundaryEXT *)(const void *)p, now, record) ||
                any;
    return any;
}

void tl_swapchain_created(gt_device *dev, VkSwapchainKHR swapchain,
                          const VkSwapchainCreateInfoKHR *info)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        fr_swapchain_created(td->frames, swapchain, info, gc_boottime_ns());
}

void tl_swapchain_destroy(gt_device *dev, VkSwapchainKHR swapchain)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        fr_swapchain_destroyed(td->frames, swapchain);
}

void tl_queue_present(gt_device *dev, VkQueue queue, const VkPresentInfoKHR *info)
{
    (void)queue;
    tl_device *td = tl_device_of(dev);
    if (!td || !td->frames || !info)
        return;
    const uint64_t now = gc_boottime_ns();
    const bool record = tl_session_tracing();
    bool any = fr_present(td->frames, info, now, record);
    if (dev->frame_boundary != GT_FB_OFF)
        any = boundaries(td, info->pNext, now, record) || any;
    if (any)
        ready(td);
}

void tl_queue_bind_sparse(gt_device *dev, VkQueue queue, uint32_t count,
                          const VkBindSparseInfo *infos)
{
    (void)queue;
    tl_device *td = tl_device_of(dev);
    if (!td || !td->frames)
        return;
    const uint64_t now = gc_boottime_ns();
    const bool record = tl_session_tracing();
    bool any = false;
    for (uint32_t i = 0; i < count; i++)
        any = boundaries(td, infos[i].pNext, now, record) || any;
    if (any)
        ready(td);
}

void fr_tl_submitted(tl_device *td, const tl_submit *submit)
{
    if (!td->frames)
        return;
    const uint64_t now = gc_boottime_ns();
    const bool record = tl_session_tracing();
    bool any = false;
    for (uint32_t i = 0; i < submit->count; i++)
        any = boundaries(td, submit->submits ? submit->submits[i].pNext : submit->submits2[i].pNext,
                         now, record) ||
              any;
    if (any)
        ready(td);
}
