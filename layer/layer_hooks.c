/* SPDX-License-Identifier: MIT */
/* layer_hooks.c — the device-level entry points the layer intercepts.
 *
 * Each hook finds the gt_device from the handle's dispatch key, tells the
 * timeline (timeline.h) what is happening and calls the next entity. The
 * hooks hold no state of their own; the list of hooks is
 * GT_DEVICE_COMMAND_HOOKS in layer_dispatch.h, and a name listed there
 * without a gt_<name> here does not compile.
 *
 * Every hook starts with GT_HOOK_ENTER (layer_hooks.h), which is also the
 * only place a hook reads its next pointer: the rule that a hook never
 * calls a NULL next pointer lives in one macro. The hooks of memory
 * objects, semaphores, fences and host waits are in layer_hooks_objects.c.
 */
#include <stddef.h>
#include <string.h>

#include "layer/layer_hooks.h"
#include "layer/layer_frame_boundary.h"
#include "layer/timeline.h"

/* ---- queues ----------------------------------------------------------- */

static VKAPI_ATTR void VKAPI_CALL gt_GetDeviceQueue(VkDevice device, uint32_t family,
                                                    uint32_t index, VkQueue *queue)
{
    *queue = VK_NULL_HANDLE; /* what the caller finds if there is nothing to call */
    GT_HOOK_ENTER(device, GetDeviceQueue, , )
    next(device, family, index, queue);
    if (!dev->disabled && *queue)
        tl_queue_acquired(dev, *queue, family, index);
}

static VKAPI_ATTR void VKAPI_CALL gt_GetDeviceQueue2(VkDevice device,
                                                     const VkDeviceQueueInfo2 *info, VkQueue *queue)
{
    *queue = VK_NULL_HANDLE;
    GT_HOOK_ENTER(device, GetDeviceQueue2, , )
    next(device, info, queue);
    if (!dev->disabled && *queue)
        tl_queue_acquired(dev, *queue, info->queueFamilyIndex, info->queueIndex);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_QueueSubmit(VkQueue queue, uint32_t count,
                                                     const VkSubmitInfo *submits, VkFence fence)
{
    GT_HOOK_ENTER(queue, QueueSubmit, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (dev->disabled)
        return next(queue, count, submits, fence);
    const tl_submit submit = {
        .api = "vkQueueSubmit", .count = count, .submits = submits, .fence = fence
    };
    tl_queue_submit_pre(dev, queue, &submit);
    /* The layer's VK_EXT_frame_boundary stops here (layer_frame_boundary.h). */
    gt_fb_scratch scratch = { .alloc = &dev->alloc };
    const VkSubmitInfo *down = submits;
    if (dev->frame_boundary == GT_FB_EMULATED &&
        !(down = gt_fb_strip_submits(&scratch, count, submits)))
        down = submits;
    VkResult res = next(queue, count, down, fence);
    gt_fb_scratch_release(&scratch);
    tl_queue_submit_post(dev, queue, &submit, res);
    return res;
}

static VkResult queue_submit2(gt_device *dev, PFN_vkQueueSubmit2 next, VkQueue queue,
                              uint32_t count, const VkSubmitInfo2 *submits, VkFence fence,
                              const char *api)
{
    if (dev->disabled)
        return next(queue, count, submits, fence);
    const tl_submit submit = { .api = api, .count = count, .submits2 = submits, .fence = fence };
    tl_queue_submit_pre(dev, queue, &submit);
    gt_fb_scratch scratch = { .alloc = &dev->alloc };
    const VkSubmitInfo2 *down = submits;
    if (dev->frame_boundary == GT_FB_EMULATED &&
        !(down = gt_fb_strip_submits2(&scratch, count, submits)))
        down = submits;
    VkResult res = next(queue, count, down, fence);
    gt_fb_scratch_release(&scratch);
    tl_queue_submit_post(dev, queue, &submit, res);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_QueueSubmit2(VkQueue queue, uint32_t count,
                                                      const VkSubmitInfo2 *submits, VkFence fence)
{
    GT_HOOK_ENTER(queue, QueueSubmit2, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    return queue_submit2(dev, next, queue, count, submits, fence, "vkQueueSubmit2");
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_QueueSubmit2KHR(VkQueue queue, uint32_t count,
                                                         const VkSubmitInfo2 *submits,
                                                         VkFence fence)
{
    GT_HOOK_ENTER(queue, QueueSubmit2KHR, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    return queue_submit2(dev, next, queue, count, submits, fence, "vkQueueSubmit2KHR");
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_QueueWaitIdle(VkQueue queue)
{
    GT_HOOK_ENTER(queue, QueueWaitIdle, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (dev->disabled)
        return next(queue);
    const uint64_t begin = tl_wait_begin(dev);
    VkResult res = next(queue);
    if (res == VK_SUCCESS)
        tl_queue_idle(dev, begin, queue);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_DeviceWaitIdle(VkDevice device)
{
    GT_HOOK_ENTER(device, DeviceWaitIdle, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (dev->disabled)
        return next(device);
    const uint64_t begin = tl_wait_begin(dev);
    VkResult res = next(device);
    if (res == VK_SUCCESS)
        tl_device_idle(dev, begin);
    return res;
}

/* ---- frames: swapchains, presents, sparse binding ---------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateSwapchainKHR(VkDevice device,
                                                            const VkSwapchainCreateInfoKHR *info,
                                                            const VkAllocationCallbacks *alloc,
                                                            VkSwapchainKHR *swapchain)
{
    GT_HOOK_ENTER(device, CreateSwapchainKHR, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, swapchain);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_swapchain_created(dev, *swapchain, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroySwapchainKHR(VkDevice device, VkSwapchainKHR swapchain,
                                                         const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroySwapchainKHR, , )
    if (!dev->disabled && swapchain != VK_NULL_HANDLE)
        tl_swapchain_destroy(dev, swapchain);
    next(device, swapchain, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_QueuePresentKHR(VkQueue queue,
                                                         const VkPresentInfoKHR *info)
{
    GT_HOOK_ENTER(queue, QueuePresentKHR, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (dev->disabled)
        return next(queue, info);
    tl_queue_present(dev, queue, info);
    if (dev->frame_boundary != GT_FB_EMULATED)
        return next(queue, info);
    gt_fb_scratch scratch = { .alloc = &dev->alloc };
    const VkPresentInfoKHR *down = gt_fb_strip_present(&scratch, info);
    VkResult res = next(queue, down ? down : info);
    gt_fb_scratch_release(&scratch);
    return res;
}

/* Only frame boundaries make the layer look at sparse binding. */
static VKAPI_ATTR VkResult VKAPI_CALL gt_QueueBindSparse(VkQueue queue, uint32_t count,
                                                         const VkBindSparseInfo *infos,
                                                         VkFence fence)
{
    GT_HOOK_ENTER(queue, QueueBindSparse, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (dev->disabled || dev->frame_boundary == GT_FB_OFF)
        return next(queue, count, infos, fence);
    gt_fb_scratch scratch = { .alloc = &dev->alloc };
    const VkBindSparseInfo *down = infos;
    if (dev->frame_boundary == GT_FB_EMULATED &&
        !(down = gt_fb_strip_bind_sparse(&scratch, count, infos)))
        down = infos;
    VkResult res = next(queue, count, down, fence);
    gt_fb_scratch_release(&scratch);
    if (res == VK_SUCCESS)
        tl_queue_bind_sparse(dev, queue, count, infos);
    return res;
}

/* ---- command pools and buffers ---------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateCommandPool(VkDevice device,
                                                           const VkCommandPoolCreateInfo *info,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkCommandPool *pool)
{
    GT_HOOK_ENTER(device, CreateCommandPool, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, pool);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_command_pool_created(dev, *pool, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroyCommandPool(VkDevice device, VkCommandPool pool,
                                                        const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroyCommandPool, , )
    if (!dev->disabled && pool != VK_NULL_HANDLE)
        tl_command_pool_destroy(dev, pool);
    next(device, pool, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_ResetCommandPool(VkDevice device, VkCommandPool pool,
                                                          VkCommandPoolResetFlags flags)
{
    GT_HOOK_ENTER(device, ResetCommandPool, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (!dev->disabled)
        tl_command_pool_reset(dev, pool, flags);
    return next(device, pool, flags);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_AllocateCommandBuffers(
    VkDevice device, const VkCommandBufferAllocateInfo *info, VkCommandBuffer *buffers)
{
    GT_HOOK_ENTER(device, AllocateCommandBuffers, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, buffers);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_command_buffers_allocated(dev, info, buffers);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_FreeCommandBuffers(VkDevice device, VkCommandPool pool,
                                                        uint32_t count,
                                                        const VkCommandBuffer *buffers)
{
    GT_HOOK_ENTER(device, FreeCommandBuffers, , )
    if (!dev->disabled)
        tl_command_buffers_free(dev, pool, count, buffers);
    next(device, pool, count, buffers);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_BeginCommandBuffer(VkCommandBuffer cb,
                                                            const VkCommandBufferBeginInfo *info)
{
    GT_HOOK_ENTER(cb, BeginCommandBuffer, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(cb, info);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_cmd_begin(dev, cb, info);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_EndCommandBuffer(VkCommandBuffer cb)
{
    GT_HOOK_ENTER(cb, EndCommandBuffer, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (!dev->disabled)
        tl_cmd_end(dev, cb);
    return next(cb);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_ResetCommandBuffer(VkCommandBuffer cb,
                                                            VkCommandBufferResetFlags flags)
{
    GT_HOOK_ENTER(cb, ResetCommandBuffer, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (!dev->disabled)
        tl_command_buffer_reset(dev, cb, flags);
    return next(cb, flags);
}

/* ---- render passes ---------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateRenderPass(VkDevice device,
                                                          const VkRenderPassCreateInfo *info,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkRenderPass *rp)
{
    GT_HOOK_ENTER(device, CreateRenderPass, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, rp);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_render_pass_created(dev, *rp, info, NULL);
    return res;
}

static VkResult create_render_pass2(gt_device *dev, PFN_vkCreateRenderPass2 next, VkDevice device,
                                    const VkRenderPassCreateInfo2 *info,
                                    const VkAllocationCallbacks *alloc, VkRenderPass *rp)
{
    VkResult res = next(device, info, alloc, rp);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_render_pass_created(dev, *rp, NULL, info);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateRenderPass2(VkDevice device,
                                                           const VkRenderPassCreateInfo2 *info,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkRenderPass *rp)
{
    GT_HOOK_ENTER(device, CreateRenderPass2, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    return create_render_pass2(dev, next, device, info, alloc, rp);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateRenderPass2KHR(VkDevice device,
                                                              const VkRenderPassCreateInfo2 *info,
                                                              const VkAllocationCallbacks *alloc,
                                                              VkRenderPass *rp)
{
    GT_HOOK_ENTER(device, CreateRenderPass2KHR, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    return create_render_pass2(dev, next, device, info, alloc, rp);
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroyRenderPass(VkDevice device, VkRenderPass rp,
                                                       const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroyRenderPass, , )
    if (!dev->disabled && rp != VK_NULL_HANDLE)
        tl_render_pass_destroy(dev, rp);
    next(device, rp, alloc);
}

/* ---- image views ------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateImageView(VkDevice device,
                                                         const VkImageViewCreateInfo *info,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkImageView *view)
{
    GT_HOOK_ENTER(device, CreateImageView, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, view);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_image_view_created(dev, *view, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroyImageView(VkDevice device, VkImageView view,
                                                      const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroyImageView, , )
    if (!dev->disabled && view != VK_NULL_HANDLE)
        tl_image_view_destroy(dev, view);
    next(device, view, alloc);
}

/* ---- recorded commands ------------------------------------------------ */

/* One hook for a command: PARAMS must call the command buffer `cb`, ARGS
 * passes them on, the rest (designated initializers) fills tl_cmd.u. */
#define GT_CMD_HOOK(name, kind_, PARAMS, ARGS, ...)                           \
    static VKAPI_ATTR void VKAPI_CALL gt_##name PARAMS                        \
    {                                                                         \
        GT_HOOK_ENTER(cb, name, , )                                           \
        if (dev->disabled) {                                                  \
            next ARGS;                                                        \
            return;                                                           \
        }                                                                     \
        const tl_cmd cmd = { .kind = kind_, .api = "vk" #name, __VA_ARGS__ }; \
        tl_cmd_pre(dev, cb, &cmd);                                            \
        next ARGS;                                                            \
        tl_cmd_post(dev, cb, &cmd);                                           \
    }

#define NO_PAYLOAD .u.label = NULL

/* A transfer command's parameters, read by the timing code only when the
 * command is timed (tl_cmd.u.transfer). */
#define XFER(form_, count_, data_, size_) \
    .u.transfer = { .form = form_, .count = count_, .data = data_, .size = size_ }

/* The contents of a subpass begun with a VkSubpassBeginInfo. */
#define SUBPASS_CONTENTS(begin) ((begin) ? (begin)->contents : TL_SUBPASS_CONTENTS_UNKNOWN)

GT_CMD_HOOK(CmdBeginRenderPass, TL_CMD_BEGIN_RENDER_PASS,
            (VkCommandBuffer cb, const VkRenderPassBeginInfo *info, VkSubpassContents contents),
            (cb, info, contents), .u.render_pass = { info, contents })
GT_CMD_HOOK(CmdNextSubpass, TL_CMD_NEXT_SUBPASS, (VkCommandBuffer cb, VkSubpassContents contents),
            (cb, contents), .u.contents = contents)
GT_CMD_HOOK(CmdEndRenderPass, TL_CMD_END_RENDER_PASS, (VkCommandBuffer cb), (cb), NO_PAYLOAD)
GT_CMD_HOOK(CmdBeginRenderPass2, TL_CMD_BEGIN_RENDER_PASS,
            (VkCommandBuffer cb, const VkRenderPassBeginInfo *info,
             const VkSubpassBeginInfo *subpass),
            (cb, info, subpass), .u.render_pass = { info, SUBPASS_CONTENTS(subpass) })
GT_CMD_HOOK(CmdNextSubpass2, TL_CMD_NEXT_SUBPASS,
            (VkCommandBuffer cb, const VkSubpassBeginInfo *begin, const VkSubpassEndInfo *end),
            (cb, begin, end), .u.contents = SUBPASS_CONTENTS(begin))
GT_CMD_HOOK(CmdEndRenderPass2, TL_CMD_END_RENDER_PASS,
            (VkCommandBuffer cb, const VkSubpassEndInfo *end), (cb, end), NO_PAYLOAD)
GT_CMD_HOOK(CmdBeginRenderPass2KHR, TL_CMD_BEGIN_RENDER_PASS,
            (VkCommandBuffer cb, const VkRenderPassBeginInfo *info,
             const VkSubpassBeginInfo *subpass),
            (cb, info, subpass), .u.render_pass = { info, SUBPASS_CONTENTS(subpass) })
GT_CMD_HOOK(CmdNextSubpass2KHR, TL_CMD_NEXT_SUBPASS,
            (VkCommandBuffer cb, const VkSubpassBeginInfo *begin, const VkSubpassEndInfo *end),
            (cb, begin, end), .u.contents = SUBPASS_CONTENTS(begin))
GT_CMD_HOOK(CmdEndRenderPass2KHR, TL_CMD_END_RENDER_PASS,
            (VkCommandBuffer cb, const VkSubpassEndInfo *end), (cb, end), NO_PAYLOAD)

GT_CMD_HOOK(CmdBeginRendering, TL_CMD_BEGIN_RENDERING,
            (VkCommandBuffer cb, const VkRenderingInfo *info), (cb, info), .u.rendering = info)
GT_CMD_HOOK(CmdEndRendering, TL_CMD_END_RENDERING, (VkCommandBuffer cb), (cb), NO_PAYLOAD)
GT_CMD_HOOK(CmdBeginRenderingKHR, TL_CMD_BEGIN_RENDERING,
            (VkCommandBuffer cb, const VkRenderingInfo *info), (cb, info), .u.rendering = info)
GT_CMD_HOOK(CmdEndRenderingKHR, TL_CMD_END_RENDERING, (VkCommandBuffer cb), (cb), NO_PAYLOAD)

GT_CMD_HOOK(CmdDispatch, TL_CMD_DISPATCH, (VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z),
            (cb, x, y, z), .u.dispatch = { .x = x, .y = y, .z = z })
GT_CMD_HOOK(CmdDispatchIndirect, TL_CMD_DISPATCH,
            (VkCommandBuffer cb, VkBuffer buffer, VkDeviceSize offset), (cb, buffer, offset),
            .u.dispatch = { .buffer = buffer, .offset = offset })
GT_CMD_HOOK(CmdDispatchBase, TL_CMD_DISPATCH,
            (VkCommandBuffer cb, uint32_t bx, uint32_t by, uint32_t bz, uint32_t x, uint32_t y,
             uint32_t z),
            (cb, bx, by, bz, x, y, z), .u.dispatch = { x, y, z, bx, by, bz, VK_NULL_HANDLE, 0 })
GT_CMD_HOOK(CmdDispatchBaseKHR, TL_CMD_DISPATCH,
            (VkCommandBuffer cb, uint32_t bx, uint32_t by, uint32_t bz, uint32_t x, uint32_t y,
             uint32_t z),
            (cb, bx, by, bz, x, y, z), .u.dispatch = { x, y, z, bx, by, bz, VK_NULL_HANDLE, 0 })

GT_CMD_HOOK(CmdCopyBuffer, TL_CMD_COPY,
            (VkCommandBuffer cb, VkBuffer src, VkBuffer dst, uint32_t count,
             const VkBufferCopy *regions),
            (cb, src, dst, count, regions), XFER(TL_XFER_BUFFER_COPY, count, regions, 0))
GT_CMD_HOOK(CmdCopyImage, TL_CMD_COPY,
            (VkCommandBuffer cb, VkImage src, VkImageLayout src_layout, VkImage dst,
             VkImageLayout dst_layout, uint32_t count, const VkImageCopy *regions),
            (cb, src, src_layout, dst, dst_layout, count, regions),
            XFER(TL_XFER_IMAGE_COPY, count, regions, 0))
GT_CMD_HOOK(CmdCopyBufferToImage, TL_CMD_COPY,
            (VkCommandBuffer cb, VkBuffer src, VkImage dst, VkImageLayout dst_layout,
             uint32_t count, const VkBufferImageCopy *regions),
            (cb, src, dst, dst_layout, count, regions),
            XFER(TL_XFER_BUFFER_IMAGE, count, regions, 0))
GT_CMD_HOOK(CmdCopyImageToBuffer, TL_CMD_COPY,
            (VkCommandBuffer cb, VkImage src, VkImageLayout src_layout, VkBuffer dst,
             uint32_t count, const VkBufferImageCopy *regions),
            (cb, src, src_layout, dst, count, regions),
            XFER(TL_XFER_BUFFER_IMAGE, count, regions, 0))
GT_CMD_HOOK(CmdCopyBuffer2, TL_CMD_COPY, (VkCommandBuffer cb, const VkCopyBufferInfo2 *info),
            (cb, info), XFER(TL_XFER_BUFFER_COPY2, 1, info, 0))
GT_CMD_HOOK(CmdCopyImage2, TL_CMD_COPY, (VkCommandBuffer cb, const VkCopyImageInfo2 *info),
            (cb, info), XFER(TL_XFER_IMAGE_COPY2, 1, info, 0))
GT_CMD_HOOK(CmdCopyBufferToImage2, TL_CMD_COPY,
            (VkCommandBuffer cb, const VkCopyBufferToImageInfo2 *info), (cb, info),
            XFER(TL_XFER_BUFFER_TO_IMAGE2, 1, info, 0))
GT_CMD_HOOK(CmdCopyImageToBuffer2, TL_CMD_COPY,
            (VkCommandBuffer cb, const VkCopyImageToBufferInfo2 *info), (cb, info),
            XFER(TL_XFER_IMAGE_TO_BUFFER2, 1, info, 0))
GT_CMD_HOOK(CmdCopyBuffer2KHR, TL_CMD_COPY, (VkCommandBuffer cb, const VkCopyBufferInfo2 *info),
            (cb, info), XFER(TL_XFER_BUFFER_COPY2, 1, info, 0))
GT_CMD_HOOK(CmdCopyImage2KHR, TL_CMD_COPY, (VkCommandBuffer cb, const VkCopyImageInfo2 *info),
            (cb, info), XFER(TL_XFER_IMAGE_COPY2, 1, info, 0))
GT_CMD_HOOK(CmdCopyBufferToImage2KHR, TL_CMD_COPY,
            (VkCommandBuffer cb, const VkCopyBufferToImageInfo2 *info), (cb, info),
            XFER(TL_XFER_BUFFER_TO_IMAGE2, 1, info, 0))
GT_CMD_HOOK(CmdCopyImageToBuffer2KHR, TL_CMD_COPY,
            (VkCommandBuffer cb, const VkCopyImageToBufferInfo2 *info), (cb, info),
            XFER(TL_XFER_IMAGE_TO_BUFFER2, 1, info, 0))

GT_CMD_HOOK(CmdBlitImage, TL_CMD_BLIT,
            (VkCommandBuffer cb, VkImage src, VkImageLayout src_layout, VkImage dst,
             VkImageLayout dst_layout, uint32_t count, const VkImageBlit *regions, VkFilter filter),
            (cb, src, src_layout, dst, dst_layout, count, regions, filter),
            XFER(TL_XFER_BLIT, count, regions, 0))
GT_CMD_HOOK(CmdBlitImage2, TL_CMD_BLIT, (VkCommandBuffer cb, const VkBlitImageInfo2 *info),
            (cb, info), XFER(TL_XFER_BLIT2, 1, info, 0))
GT_CMD_HOOK(CmdBlitImage2KHR, TL_CMD_BLIT, (VkCommandBuffer cb, const VkBlitImageInfo2 *info),
            (cb, info), XFER(TL_XFER_BLIT2, 1, info, 0))

GT_CMD_HOOK(CmdClearColorImage, TL_CMD_CLEAR,
            (VkCommandBuffer cb, VkImage image, VkImageLayout layout,
             const VkClearColorValue *color, uint32_t count, const VkImageSubresourceRange *ranges),
            (cb, image, layout, color, count, ranges), XFER(TL_XFER_CLEAR_IMAGE, count, ranges, 0))
GT_CMD_HOOK(CmdClearDepthStencilImage, TL_CMD_CLEAR,
            (VkCommandBuffer cb, VkImage image, VkImageLayout layout,
             const VkClearDepthStencilValue *value, uint32_t count,
             const VkImageSubresourceRange *ranges),
            (cb, image, layout, value, count, ranges), XFER(TL_XFER_CLEAR_IMAGE, count, ranges, 0))
GT_CMD_HOOK(CmdClearAttachments, TL_CMD_CLEAR,
            (VkCommandBuffer cb, uint32_t count, const VkClearAttachment *attachments,
             uint32_t rect_count, const VkClearRect *rects),
            (cb, count, attachments, rect_count, rects),
            XFER(TL_XFER_CLEAR_ATTACHMENTS, count, attachments, rect_count))

GT_CMD_HOOK(CmdResolveImage, TL_CMD_RESOLVE,
            (VkCommandBuffer cb, VkImage src, VkImageLayout src_layout, VkImage dst,
             VkImageLayout dst_layout, uint32_t count, const VkImageResolve *regions),
            (cb, src, src_layout, dst, dst_layout, count, regions),
            XFER(TL_XFER_RESOLVE, count, regions, 0))
GT_CMD_HOOK(CmdResolveImage2, TL_CMD_RESOLVE, (VkCommandBuffer cb, const VkResolveImageInfo2 *info),
            (cb, info), XFER(TL_XFER_RESOLVE2, 1, info, 0))
GT_CMD_HOOK(CmdResolveImage2KHR, TL_CMD_RESOLVE,
            (VkCommandBuffer cb, const VkResolveImageInfo2 *info), (cb, info),
            XFER(TL_XFER_RESOLVE2, 1, info, 0))

GT_CMD_HOOK(CmdFillBuffer, TL_CMD_FILL,
            (VkCommandBuffer cb, VkBuffer dst, VkDeviceSize offset, VkDeviceSize size,
             uint32_t data),
            (cb, dst, offset, size, data), XFER(TL_XFER_FILL, 0, NULL, size))
GT_CMD_HOOK(CmdUpdateBuffer, TL_CMD_UPDATE,
            (VkCommandBuffer cb, VkBuffer dst, VkDeviceSize offset, VkDeviceSize size,
             const void *data),
            (cb, dst, offset, size, data), XFER(TL_XFER_UPDATE, 0, NULL, size))

/* Draws and pipeline binds are no regions; the timing code counts draws
 * and remembers the bound pipelines for the regions' arguments. */
#define GT_DRAW_HOOK(name, PARAMS, ARGS)               \
    static VKAPI_ATTR void VKAPI_CALL gt_##name PARAMS \
    {                                                  \
        GT_HOOK_ENTER(cb, name, , )                    \
        if (!dev->disabled)                            \
            tl_cmd_draw(dev, cb);                      \
        next ARGS;                                     \
    }

GT_DRAW_HOOK(CmdDraw,
             (VkCommandBuffer cb, uint32_t vertices, uint32_t instances, uint32_t first,
              uint32_t first_instance),
             (cb, vertices, instances, first, first_instance))
GT_DRAW_HOOK(CmdDrawIndexed,
             (VkCommandBuffer cb, uint32_t indices, uint32_t instances, uint32_t first,
              int32_t vertex_offset, uint32_t first_instance),
             (cb, indices, instances, first, vertex_offset, first_instance))
GT_DRAW_HOOK(CmdDrawIndirect,
             (VkCommandBuffer cb, VkBuffer buffer, VkDeviceSize offset, uint32_t count,
              uint32_t stride),
             (cb, buffer, offset, count, stride))
GT_DRAW_HOOK(CmdDrawIndexedIndirect,
             (VkCommandBuffer cb, VkBuffer buffer, VkDeviceSize offset, uint32_t count,
              uint32_t stride),
             (cb, buffer, offset, count, stride))
#define GT_DRAW_COUNT_HOOK(name)                                                                   \
    GT_DRAW_HOOK(name,                                                                             \
                 (VkCommandBuffer cb, VkBuffer buffer, VkDeviceSize offset, VkBuffer count_buffer, \
                  VkDeviceSize count_offset, uint32_t max_count, uint32_t stride),                 \
                 (cb, buffer, offset, count_buffer, count_offset, max_count, stride))
GT_DRAW_COUNT_HOOK(CmdDrawIndirectCount)
GT_DRAW_COUNT_HOOK(CmdDrawIndexedIndirectCount)
GT_DRAW_COUNT_HOOK(CmdDrawIndirectCountKHR)
GT_DRAW_COUNT_HOOK(CmdDrawIndexedIndirectCountKHR)
GT_DRAW_COUNT_HOOK(CmdDrawMeshTasksIndirectCountEXT)
GT_DRAW_HOOK(CmdDrawMeshTasksEXT, (VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z),
             (cb, x, y, z))
GT_DRAW_HOOK(CmdDrawMeshTasksIndirectEXT,
             (VkCommandBuffer cb, VkBuffer buffer, VkDeviceSize offset, uint32_t count,
              uint32_t stride),
             (cb, buffer, offset, count, stride))

static VKAPI_ATTR void VKAPI_CALL gt_CmdBindPipeline(VkCommandBuffer cb, VkPipelineBindPoint point,
                                                     VkPipeline pipeline)
{
    GT_HOOK_ENTER(cb, CmdBindPipeline, , )
    if (!dev->disabled)
        tl_cmd_bind_pipeline(dev, cb, point, pipeline);
    next(cb, point, pipeline);
}

GT_CMD_HOOK(CmdExecuteCommands, TL_CMD_EXECUTE_COMMANDS,
            (VkCommandBuffer cb, uint32_t count, const VkCommandBuffer *buffers),
            (cb, count, buffers), .u.execute = { count, buffers })

/* Barriers are hooked only as the first synchronization command a command
 * buffer may start with (see timeline_record.c, suspended rendering). */
GT_CMD_HOOK(CmdPipelineBarrier, TL_CMD_BARRIER,
            (VkCommandBuffer cb, VkPipelineStageFlags src, VkPipelineStageFlags dst,
             VkDependencyFlags flags, uint32_t memory_count, const VkMemoryBarrier *memory,
             uint32_t buffer_count, const VkBufferMemoryBarrier *buffers, uint32_t image_count,
             const VkImageMemoryBarrier *images),
            (cb, src, dst, flags, memory_count, memory, buffer_count, buffers, image_count, images),
            NO_PAYLOAD)
GT_CMD_HOOK(CmdPipelineBarrier2, TL_CMD_BARRIER, (VkCommandBuffer cb, const VkDependencyInfo *info),
            (cb, info), NO_PAYLOAD)
GT_CMD_HOOK(CmdPipelineBarrier2KHR, TL_CMD_BARRIER,
            (VkCommandBuffer cb, const VkDependencyInfo *info), (cb, info), NO_PAYLOAD)

GT_CMD_HOOK(CmdBeginDebugUtilsLabelEXT, TL_CMD_BEGIN_LABEL,
            (VkCommandBuffer cb, const VkDebugUtilsLabelEXT *label), (cb, label), .u.label = label)
GT_CMD_HOOK(CmdEndDebugUtilsLabelEXT, TL_CMD_END_LABEL, (VkCommandBuffer cb), (cb), NO_PAYLOAD)
GT_CMD_HOOK(CmdInsertDebugUtilsLabelEXT, TL_CMD_INSERT_LABEL,
            (VkCommandBuffer cb, const VkDebugUtilsLabelEXT *label), (cb, label), .u.label = label)

/* ---- object names ----------------------------------------------------- */

/* The name is recorded whatever the call down answers: it is what the
 * application meant, and drivers rarely refuse one. Absent below us (the
 * application fetched it through vkGetInstanceProcAddr without enabling
 * VK_EXT_debug_utils on this device), the loader's own terminator answers
 * VK_SUCCESS, and so does the hook (tests/layer/dispatch_test.sh compares
 * every result with a run without the layer). */
static VKAPI_ATTR VkResult VKAPI_CALL
gt_SetDebugUtilsObjectNameEXT(VkDevice device, const VkDebugUtilsObjectNameInfoEXT *info)
{
    GT_HOOK_ENTER(device, SetDebugUtilsObjectNameEXT, VK_ERROR_DEVICE_LOST, VK_SUCCESS)
    if (!dev->disabled && info)
        tl_object_named(dev, info->objectType, info->objectHandle, info->pObjectName);
    return next(device, info);
}

static VKAPI_ATTR VkResult VKAPI_CALL
gt_DebugMarkerSetObjectNameEXT(VkDevice device, const VkDebugMarkerObjectNameInfoEXT *info)
{
    GT_HOOK_ENTER(device, DebugMarkerSetObjectNameEXT, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (!dev->disabled && info)
        tl_object_marker_named(dev, info->objectType, info->object, info->pObjectName);
    return next(device, info);
}

/* ---- lookup ----------------------------------------------------------- */

static const gt_hook device_hooks[] = { GT_DEVICE_COMMAND_HOOKS(GT_HOOK_ENTRY) };

const gt_hook *gt_device_hook_find(const char *name)
{
    /* Callers cache what vkGetDeviceProcAddr returns; a linear scan is
    * cheap enough for that. */
    for (size_t i = 0; i < sizeof device_hooks / sizeof device_hooks[0]; i++) {
        if (strcmp(device_hooks[i].name, name) == 0)
            return &device_hooks[i];
    }
    return gt_object_hook_find(name);
}
