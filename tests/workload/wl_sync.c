/* SPDX-License-Identifier: MIT */
/* wl_sync.c — --cross-queue-semaphore: each frame's render pass runs on
 * the thread's second queue, after the compute submission signalled a
 * binary semaphore; the dynamic-rendering submission on the first queue
 * waits for the render pass through a timeline semaphore, and so does the
 * host (vkWaitSemaphores) before it waits for the frame's fences. The
 * cause and effect a tracer should draw as flows (docs/layer.md, "Flows").
 */
#include <stdint.h>

#include "tests/workload/wl.h"

#define WL_SEMAPHORE_TIMEOUT_NS (30ull * 1000 * 1000 * 1000)

bool wl_sync_init(wl_thread *t)
{
    if (!t->ctx->cross_queue)
        return true;
    VkDevice dev = t->ctx->device;
    const VkSemaphoreCreateInfo binary = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO };
    const VkSemaphoreTypeCreateInfo type = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
    };
    const VkSemaphoreCreateInfo timeline = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                             .pNext = &type };
    return WL_VK(vkCreateSemaphore, (dev, &binary, NULL, &t->binary)) &&
           WL_VK(vkCreateSemaphore, (dev, &timeline, NULL, &t->timeline));
}

void wl_sync_finish(wl_thread *t)
{
    vkDestroySemaphore(t->ctx->device, t->binary, NULL);
    vkDestroySemaphore(t->ctx->device, t->timeline, NULL);
}

bool wl_sync_host_wait(wl_thread *t)
{
    if (!t->ctx->cross_queue)
        return true;
    const VkSemaphoreWaitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = 1,
        .pSemaphores = &t->timeline,
        .pValues = &t->timeline_value,
    };
    if (!WL_VK(vkWaitSemaphores, (t->ctx->device, &info, WL_SEMAPHORE_TIMEOUT_NS)))
        return false;
    t->host_waits++;
    return true;
}
