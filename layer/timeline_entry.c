/* SPDX-License-Identifier: MIT */
/* timeline_entry.c — most of the timeline.h hook points (the command pool,
 * command buffer and queue ones are in timeline_device.c, the waits and
 * semaphores in flows/flow_entry.c, memory in memory/mem_entry.c): the
 * cheap "nothing to do" checks, then the work in timeline_*.c.
 *
 * When no session traces (no GPUTRACE_OUTPUT and no traced, or
 * GPUTRACE_BACKEND=none), every recorded command costs one relaxed atomic
 * load of the tracing flag and one of the device's live-recording count;
 * submissions the same. Recordings made while tracing keep being served
 * after it stops, so their queries stay consistent until they are
 * re-recorded or freed.
 */
#include "layer/frames/fr_frames.h"
#include "layer/frames/fr_timeline.h"
#include "layer/log.h"
#include "layer/memory/mem_device.h"
#include "layer/timeline.h"
#include "layer/timeline_device.h"
#include "layer/timeline_lookup.h"
#include "layer/timeline_meta.h"
#include "layer/timeline_record.h"
#include "layer/timeline_render_pass.h"
#include "layer/timeline_submit.h"

/* Timing now: a session traces and the frame is inside GPUTRACE_FRAMES. */
static inline bool timing(const tl_device *td)
{
    return tl_session_tracing() && fr_window_open(td->frames);
}

static inline bool active(const tl_device *td)
{
    return td && (timing(td) || atomic_load_explicit(&td->live_recordings, memory_order_relaxed));
}

VkResult tl_instance_init(gt_instance *inst)
{
    (void)inst;
    tl_session_instance_created();
    return VK_SUCCESS;
}

void tl_instance_finish(gt_instance *inst)
{
    (void)inst;
    tl_session_instance_destroyed();
}

VkResult tl_device_init(gt_device *dev)
{
    /* Fail closed: a device the timing code cannot follow is passed
    * through untouched (dev->timeline stays NULL). */
    if (tl_device_create(dev) != VK_SUCCESS)
        gt_error("out of memory setting up timing for device %p; not timing it",
                 (void *)dev->handle);
    else
        tl_render_passes_init(tl_device_of(dev));
    return VK_SUCCESS;
}

void tl_object_named(gt_device *dev, VkObjectType type, uint64_t handle, const char *name)
{
    tl_device *td = tl_device_of(dev);
    if (td && td->names && type != VK_OBJECT_TYPE_UNKNOWN) {
        tl_names_set(td->names, type, handle, name, gc_boottime_ns());
        /* Memory events carry their objects' names (memory/mem_device.h). */
        mem_named(td->memory, type, handle);
    }
}

void tl_object_marker_named(gt_device *dev, VkDebugReportObjectTypeEXT type, uint64_t handle,
                            const char *name)
{
    tl_object_named(dev, tl_names_from_debug_report(type), handle, name);
}

void tl_device_finish(gt_device *dev)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        tl_render_passes_finish(td);
    tl_device_destroy(dev);
}

/* Not gated on active(): a render pass may be created long before a
 * session starts and then used while tracing. */
void tl_render_pass_created(gt_device *dev, VkRenderPass rp, const VkRenderPassCreateInfo *info,
                            const VkRenderPassCreateInfo2 *info2)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        tl_render_pass_add(td, rp, info, info2);
}

void tl_render_pass_destroy(gt_device *dev, VkRenderPass rp)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        tl_render_pass_remove(td, rp);
}

/* Like render passes, not gated on active(). */
void tl_image_view_created(gt_device *dev, VkImageView view, const VkImageViewCreateInfo *info)
{
    tl_device *td = tl_device_of(dev);
    if (td && info)
        tl_image_view_add(td, view, info->format);
}

void tl_image_view_destroy(gt_device *dev, VkImageView view)
{
    tl_device *td = tl_device_of(dev);
    if (td)
        tl_image_view_remove(td, view);
}

void tl_queue_submit_pre(gt_device *dev, VkQueue queue, const tl_submit *submit)
{
    tl_device *td = tl_device_of(dev);
    if (active(td))
        tl_submit_pre(td, queue, submit);
}

void tl_queue_submit_post(gt_device *dev, VkQueue queue, const tl_submit *submit, VkResult result)
{
    tl_device *td = tl_device_of(dev);
    if (active(td))
        tl_submit_post(td, queue, submit, result);
    /* Frame boundaries count whether timing or not (GPUTRACE_FRAMES). */
    if (td && dev->frame_boundary != GT_FB_OFF && result == VK_SUCCESS)
        fr_tl_submitted(td, submit);
}

void tl_cmd_begin(gt_device *dev, VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
    tl_device *td = tl_device_of(dev);
    if (!active(td))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (!tcb)
        return;
    if (timing(td) && tl_device_ensure_started(td))
        tl_record_begin(td, tcb, info);
    else
        tl_cb_drop_recording(tcb);
}

void tl_cmd_end(gt_device *dev, VkCommandBuffer cb)
{
    tl_device *td = tl_device_of(dev);
    if (!active(td))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb)
        tl_record_end(td, tcb);
}

/* A suspended or resumed rendering instance recorded while not tracing:
 * remembered on the command buffer (see tl_cb.untracked_suspend). Rare, so
 * the lookup costs nothing on the idle path of other commands. */
static void note_untracked(tl_device *td, VkCommandBuffer cb, const tl_cmd *cmd)
{
    const VkRenderingFlags susp = VK_RENDERING_SUSPENDING_BIT | VK_RENDERING_RESUMING_BIT;
    if (!td || cmd->kind != TL_CMD_BEGIN_RENDERING || !cmd->u.rendering ||
        !(cmd->u.rendering->flags & susp))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb)
        tcb->untracked_suspend = true;
}

void tl_cmd_pre(gt_device *dev, VkCommandBuffer cb, const tl_cmd *cmd)
{
    tl_device *td = tl_device_of(dev);
    if (!active(td)) {
        note_untracked(td, cb, cmd);
        return;
    }
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb)
        tl_record_cmd_pre(td, tcb, cmd);
}

void tl_cmd_post(gt_device *dev, VkCommandBuffer cb, const tl_cmd *cmd)
{
    tl_device *td = tl_device_of(dev);
    if (!active(td))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb)
        tl_record_cmd_post(td, tcb, cmd);
}

void tl_cmd_draw(gt_device *dev, VkCommandBuffer cb)
{
    tl_device *td = tl_device_of(dev);
    if (!active(td))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb && tcb->rec)
        tl_meta_draw(tcb->rec);
}

void tl_cmd_bind_pipeline(gt_device *dev, VkCommandBuffer cb, VkPipelineBindPoint point,
                          VkPipeline pipeline)
{
    tl_device *td = tl_device_of(dev);
    if (!active(td))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb && tcb->rec)
        tl_meta_bind_pipeline(tcb->rec, point, pipeline);
}
