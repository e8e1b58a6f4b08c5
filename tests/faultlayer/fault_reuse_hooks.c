/* SPDX-License-Identifier: MIT */
/* fault_reuse_hooks.c — VK_LAYER_GPUTRACE_clockfault: the commands the
 * query-reuse check (reuse_check.h, GPUTRACE_FAULT_CHECK_QUERY_REUSE=1)
 * watches, handed to it on their way down. With the check off (d->reuse
 * NULL) every rc_ call does nothing and the hooks only pass through.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/faultlayer/fault_layer.h"

VKAPI_ATTR VkResult VKAPI_CALL fl_BeginCommandBuffer(VkCommandBuffer cb,
                                                     const VkCommandBufferBeginInfo *info)
{
    fl_device *d = fl_device_of(cb);
    rc_cb_begin(d->reuse, cb);
    return d->BeginCommandBuffer(cb, info);
}

VKAPI_ATTR VkResult VKAPI_CALL fl_ResetCommandBuffer(VkCommandBuffer cb,
                                                     VkCommandBufferResetFlags flags)
{
    fl_device *d = fl_device_of(cb);
    rc_cb_begin(d->reuse, cb);
    return d->ResetCommandBuffer(cb, flags);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp(VkCommandBuffer cb, VkPipelineStageFlagBits stage,
                                                VkQueryPool pool, uint32_t query)
{
    fl_device *d = fl_device_of(cb);
    rc_timestamp(d->reuse, cb, pool, query, stage == VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT);
    fl_family_stamp(d, cb, pool, query);
    d->CmdWriteTimestamp(cb, stage, pool, query);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp2(VkCommandBuffer cb, VkPipelineStageFlags2 stage,
                                                 VkQueryPool pool, uint32_t query)
{
    fl_device *d = fl_device_of(cb);
    rc_timestamp(d->reuse, cb, pool, query, stage == VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    fl_family_stamp(d, cb, pool, query);
    d->CmdWriteTimestamp2(cb, stage, pool, query);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp2KHR(VkCommandBuffer cb, VkPipelineStageFlags2 stage,
                                                    VkQueryPool pool, uint32_t query)
{
    fl_device *d = fl_device_of(cb);
    rc_timestamp(d->reuse, cb, pool, query, stage == VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    fl_family_stamp(d, cb, pool, query);
    d->CmdWriteTimestamp2KHR(cb, stage, pool, query);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdResetQueryPool(VkCommandBuffer cb, VkQueryPool pool,
                                                uint32_t first, uint32_t count)
{
    fl_device *d = fl_device_of(cb);
    rc_cmd_reset(d->reuse, cb, pool, first, count);
    d->CmdResetQueryPool(cb, pool, first, count);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier(VkCommandBuffer cb, VkPipelineStageFlags src,
                                                 VkPipelineStageFlags dst, VkDependencyFlags deps,
                                                 uint32_t nmem, const VkMemoryBarrier *mem,
                                                 uint32_t nbuf, const VkBufferMemoryBarrier *buf,
                                                 uint32_t nimg, const VkImageMemoryBarrier *img)
{
    fl_device *d = fl_device_of(cb);
    rc_barrier(d->reuse, cb);
    d->CmdPipelineBarrier(cb, src, dst, deps, nmem, mem, nbuf, buf, nimg, img);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier2(VkCommandBuffer cb, const VkDependencyInfo *dep)
{
    fl_device *d = fl_device_of(cb);
    rc_barrier(d->reuse, cb);
    d->CmdPipelineBarrier2(cb, dep);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier2KHR(VkCommandBuffer cb,
                                                     const VkDependencyInfo *dep)
{
    fl_device *d = fl_device_of(cb);
    rc_barrier(d->reuse, cb);
    d->CmdPipelineBarrier2KHR(cb, dep);
}

VKAPI_ATTR void VKAPI_CALL fl_CmdExecuteCommands(VkCommandBuffer cb, uint32_t count,
                                                 const VkCommandBuffer *secondaries)
{
    fl_device *d = fl_device_of(cb);
    rc_execute(d->reuse, cb, count, secondaries);
    d->CmdExecuteCommands(cb, count, secondaries);
}

VKAPI_ATTR void VKAPI_CALL fl_ResetQueryPool(VkDevice device, VkQueryPool pool, uint32_t first,
                                             uint32_t count)
{
    fl_device *d = fl_device_of(device);
    rc_host_reset(d->reuse, pool, first, count);
    d->ResetQueryPool(device, pool, first, count);
}

VKAPI_ATTR void VKAPI_CALL fl_ResetQueryPoolEXT(VkDevice device, VkQueryPool pool, uint32_t first,
                                                uint32_t count)
{
    fl_device *d = fl_device_of(device);
    rc_host_reset(d->reuse, pool, first, count);
    d->ResetQueryPoolEXT(device, pool, first, count);
}

void fl_reuse_submitted(fl_device *d, VkQueue queue, uint32_t n, const VkSubmitInfo *submits,
                        const VkSubmitInfo2 *submits2, VkFence fence)
{
    if (!d->reuse)
        return;
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += submits ? submits[i].commandBufferCount : submits2[i].commandBufferInfoCount;
    VkCommandBuffer *cbs = malloc((total ? total : 1) * sizeof *cbs);
    if (!cbs) {
        fprintf(stderr, "clockfault: out of memory: a submission is not checked\n");
        return;
    }
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (submits) {
            for (uint32_t j = 0; j < submits[i].commandBufferCount; j++)
                cbs[k++] = submits[i].pCommandBuffers[j];
        } else {
            for (uint32_t j = 0; j < submits2[i].commandBufferInfoCount; j++)
                cbs[k++] = submits2[i].pCommandBufferInfos[j].commandBuffer;
        }
    }
    rc_submitted(d->reuse, queue, (uint32_t)k, cbs, fence);
    free(cbs);
}
