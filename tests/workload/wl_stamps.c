/* SPDX-License-Identifier: MIT */
/* wl_stamps.c — gputrace-workload --app-timestamps: the application writes
 * the timestamps VK_LAYER_GPUTRACE_timeline would write, where the layer
 * would write them, and never reads them back. It is the control of the
 * layer benchmark (layer/bench/bench_limit.sh): what the timestamps alone
 * cost on this driver, so that the layer's cost can be put beside it.
 *
 * The rules mirrored (docs/layer.md, "Regions and their timestamps"):
 *   - a timestamp at the start of every command buffer, before and after
 *     every region command outside render pass instances and around render
 *     pass and rendering instances (outside them), at every debug label's
 *     begin and end, and before vkEndCommandBuffer;
 *   - outside instances, a boundary shares the previous timestamp when no
 *     command doing work was recorded since (labels and barriers do none);
 *     inside instances nothing is shared;
 *   - on lavapipe (llvmpipe) a full pipeline barrier before each
 *     bottom-of-pipe timestamp, and top-of-pipe timestamps inside
 *     instances ("Query reuse on lavapipe");
 *   - queries are reset on the host (hostQueryReset, as the layer does by
 *     default), and only once a later frame completed: each frame uses one
 *     half of the thread's pool, reset two frames later.
 * Nothing the layer adds to read its results (the copy into mapped memory,
 * its barriers, the collector's polling) is here: that is the layer's cost
 * beyond the limit.
 */
#include "tests/workload/wl.h"

/* Queries per frame half: the three command buffers take 19 timestamps
 * with labels, a tiny submission 2. */
#define WL_STAMPS_MAIN 64u
#define WL_STAMPS_TINY 2u

static uint32_t half_size(const wl_context *ctx)
{
    return WL_STAMPS_MAIN + WL_STAMPS_TINY * ctx->tiny;
}

bool wl_stamps_init(wl_thread *t)
{
    wl_context *ctx = t->ctx;
    if (!ctx->app_stamps)
        return true;
    const VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * half_size(ctx),
    };
    if (!WL_VK(vkCreateQueryPool, (ctx->device, &info, NULL, &t->stamps.pool)))
        return false;
    vkResetQueryPool(ctx->device, t->stamps.pool, 0, info.queryCount);
    return true;
}

void wl_stamps_finish(wl_thread *t)
{
    vkDestroyQueryPool(t->ctx->device, t->stamps.pool, NULL);
}

void wl_stamps_frame(wl_thread *t, uint32_t frame)
{
    wl_context *ctx = t->ctx;
    if (!ctx->app_stamps)
        return;
    const uint32_t n = half_size(ctx);
    t->stamps.next = (frame % 2u) * n;
    t->stamps.end = t->stamps.next + n;
    /* This half was written two frames ago; the last frame has completed
     * since, so lavapipe is done with the scenes those queries hold. */
    if (frame >= 2)
        vkResetQueryPool(ctx->device, t->stamps.pool, t->stamps.next, n);
}

void wl_stamps_begin(wl_thread *t)
{
    t->stamps.work = true;
    t->stamps.shared = false;
    t->stamps.inside = false;
}

void wl_stamp(wl_thread *t, VkCommandBuffer cb)
{
    wl_context *ctx = t->ctx;
    wl_stamps *s = &t->stamps;
    if (!ctx->app_stamps || (!s->work && !s->inside && s->shared) || s->next >= s->end)
        return;
    VkPipelineStageFlagBits where = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    if (ctx->llvmpipe && s->inside) {
        where = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
    } else if (ctx->llvmpipe) {
        const VkMemoryBarrier all = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
        };
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                             VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &all, 0, NULL, 0, NULL);
    }
    vkCmdWriteTimestamp(cb, where, s->pool, s->next++);
    s->shared = !s->inside;
    s->work = false;
    s->written++;
}

void wl_stamp_after(wl_thread *t, VkCommandBuffer cb)
{
    t->stamps.work = true;
    wl_stamp(t, cb);
}

void wl_stamps_inside(wl_thread *t, VkCommandBuffer cb, bool inside)
{
    t->stamps.work = true;
    t->stamps.inside = inside;
    if (!inside)
        wl_stamp(t, cb); /* the instance's end, outside it */
}
