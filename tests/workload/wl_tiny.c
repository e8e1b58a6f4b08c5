/* SPDX-License-Identifier: MIT */
/* wl_tiny.c — gputrace-workload --submissions-per-frame N: after the frame's
 * usual submissions, N more, each a command buffer that fills one word of a
 * host-visible buffer (and makes it visible to the host). Almost no GPU
 * work, so what a layer adds per submission (its timestamps, copies,
 * barriers, bookkeeping) is most of the time: the submission-heavy case of
 * the layer benchmark. Each is 2 regions (the command buffer and the fill);
 * the words are checked after the frame.
 */
#include "tests/workload/wl.h"

bool wl_tiny_init(wl_thread *t)
{
    wl_context *ctx = t->ctx;
    if (!ctx->tiny)
        return true;
    const VkCommandBufferAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = t->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = ctx->tiny,
    };
    return WL_VK(vkAllocateCommandBuffers, (ctx->device, &info, t->tiny_cb)) &&
           wl_buffer_make(ctx, &t->tiny_words, (VkDeviceSize)ctx->tiny * 4,
                          VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
}

void wl_tiny_finish(wl_thread *t)
{
    wl_buffer_destroy(t->ctx, &t->tiny_words); /* the pool frees the command buffers */
}

/* Different in every frame and submission, never the buffer's zeros. */
static uint32_t tiny_value(uint32_t frame, uint32_t i)
{
    return frame * WL_MAX_TINY + i + 1;
}

static bool record_tiny(wl_thread *t, uint32_t frame, uint32_t i, uint64_t *regions)
{
    VkCommandBuffer cb = t->tiny_cb[i];
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (!WL_VK(vkBeginCommandBuffer, (cb, &begin)))
        return false;
    wl_stamps_begin(t);
    wl_stamp(t, cb); /* the command buffer's start, shared with the fill's */
    vkCmdFillBuffer(cb, t->tiny_words.handle, (VkDeviceSize)i * 4, 4, tiny_value(frame, i));
    wl_stamp_after(t, cb);
    const VkMemoryBarrier to_host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, NULL, 0, NULL);
    wl_stamp(t, cb); /* the command buffer's end: shared, a barrier does no work */
    *regions += 2;
    return WL_VK(vkEndCommandBuffer, (cb));
}

bool wl_tiny_run(wl_thread *t, uint32_t frame, VkFence fence, uint64_t *regions)
{
    const uint32_t n = t->ctx->tiny;
    for (uint32_t i = 0; i < n; i++) {
        if (!record_tiny(t, frame, i, regions) ||
            !wl_submit(t, t->tiny_cb[i], i + 1 == n ? fence : VK_NULL_HANDLE))
            return false;
    }
    return true;
}

bool wl_tiny_check(const wl_thread *t, uint32_t frame)
{
    const uint32_t *got = t->tiny_words.map;
    for (uint32_t i = 0; i < t->ctx->tiny; i++) {
        if (got[i] != tiny_value(frame, i)) {
            wl_error("thread %u frame %u: tiny submission %u wrote %u, expected %u", t->index,
                     frame, i, got[i], tiny_value(frame, i));
            return false;
        }
    }
    return true;
}
