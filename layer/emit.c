/* SPDX-License-Identifier: MIT */
/* emit.c — see emit.h. */
#include "layer/emit.h"

#include <inttypes.h>
#include <stdio.h>

#include "layer/timeline_stage.h"
#include "protos/perfetto/builtin_clock.pbc.h"
#include "protos/perfetto/trace_packet.pbc.h"

#define SEQ_CLEARED perfetto_protos_TracePacket_SequenceFlags_SEQ_INCREMENTAL_STATE_CLEARED
#define SEQ_NEEDS   perfetto_protos_TracePacket_SequenceFlags_SEQ_NEEDS_INCREMENTAL_STATE
#define CAT_OTHER   perfetto_protos_InternedGpuRenderStageSpecification_RenderStageCategory_OTHER
#define CAT_GRAPHICS \
    perfetto_protos_InternedGpuRenderStageSpecification_RenderStageCategory_GRAPHICS
#define CAT_COMPUTE perfetto_protos_InternedGpuRenderStageSpecification_RenderStageCategory_COMPUTE

static const struct {
    const char *name;
    const char *description;
    int category;
} stages[TL_STAGE_COUNT] = {
    [TL_STAGE_COMMAND_BUFFER] = { "Command buffer",
                                  "A submitted primary command buffer, from "
                                  "vkBeginCommandBuffer to vkEndCommandBuffer",
                                  CAT_OTHER },
    [TL_STAGE_RENDER_PASS] = { "Render pass", "vkCmdBeginRenderPass .. vkCmdEndRenderPass",
                               CAT_GRAPHICS },
    [TL_STAGE_RENDERING] = { "Dynamic rendering", "vkCmdBeginRendering .. vkCmdEndRendering",
                             CAT_GRAPHICS },
    [TL_STAGE_DISPATCH] = { "Dispatch", "vkCmdDispatch, vkCmdDispatchIndirect, vkCmdDispatchBase",
                            CAT_COMPUTE },
    [TL_STAGE_COPY] = { "Copy", "Buffer and image copies", CAT_OTHER },
    [TL_STAGE_BLIT] = { "Blit", "vkCmdBlitImage", CAT_GRAPHICS },
    [TL_STAGE_RESOLVE] = { "Resolve", "vkCmdResolveImage", CAT_GRAPHICS },
    [TL_STAGE_CLEAR] = { "Clear", "Image and attachment clears", CAT_GRAPHICS },
    [TL_STAGE_FILL] = { "Fill", "vkCmdFillBuffer", CAT_OTHER },
    [TL_STAGE_UPDATE] = { "Update", "vkCmdUpdateBuffer", CAT_OTHER },
    [TL_STAGE_LABEL] = { "Debug label",
                         "A VK_EXT_debug_utils label region; the slice is named "
                         "after the label",
                         CAT_OTHER },
    [TL_STAGE_SUBMISSION] = { "Submission",
                              "A queue submission holding command buffers begun "
                              "with SIMULTANEOUS_USE (not timed individually)",
                              CAT_OTHER },
};

const char *em_stage_name(uint32_t stage)
{
    return stage > 0 && stage < TL_STAGE_COUNT ? stages[stage].name : NULL;
}

static void clock_entry(perfetto_protos_ClockSnapshot *cs, uint32_t id, uint64_t ts)
{
    perfetto_protos_ClockSnapshot_Clock c;
    perfetto_protos_ClockSnapshot_begin_clocks(cs, &c);
    perfetto_protos_ClockSnapshot_Clock_set_clock_id(&c, id);
    perfetto_protos_ClockSnapshot_Clock_set_timestamp(&c, ts);
    perfetto_protos_ClockSnapshot_Clock_end(&c);
}

void em_clock_snapshot(tw_writer *tw, uint32_t clock_id, uint64_t device_ns, uint64_t boottime_ns,
                       uint64_t monotonic_ns, uint64_t monotonic_raw_ns)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_ClockSnapshot cs;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, boottime_ns);
    perfetto_protos_TracePacket_begin_clock_snapshot(&pkt, &cs);
    clock_entry(&cs, clock_id, device_ns);
    clock_entry(&cs, perfetto_protos_BuiltinClock_BUILTIN_CLOCK_BOOTTIME, boottime_ns);
    clock_entry(&cs, perfetto_protos_BuiltinClock_BUILTIN_CLOCK_MONOTONIC, monotonic_ns);
    clock_entry(&cs, perfetto_protos_BuiltinClock_BUILTIN_CLOCK_MONOTONIC_RAW, monotonic_raw_ns);
    perfetto_protos_ClockSnapshot_end(&cs);
    tw_end_packet(tw);
}

static void spec(perfetto_protos_InternedData *in, uint64_t iid, const char *name,
                 const char *description, int category)
{
    perfetto_protos_InternedGpuRenderStageSpecification s;
    perfetto_protos_InternedData_begin_gpu_specifications(in, &s);
    perfetto_protos_InternedGpuRenderStageSpecification_set_iid(&s, iid);
    perfetto_protos_InternedGpuRenderStageSpecification_set_name(&s, name);
    if (description)
        perfetto_protos_InternedGpuRenderStageSpecification_set_description(&s, description);
    perfetto_protos_InternedGpuRenderStageSpecification_set_category(
        &s, (perfetto_protos_InternedGpuRenderStageSpecification_RenderStageCategory)category);
    perfetto_protos_InternedGpuRenderStageSpecification_end(&s);
}

static void interned(tw_writer *tw, bool cleared, bool after_loss, uint64_t context_iid,
                     int32_t pid, const em_queue_spec *queues, uint32_t nqueues);

void em_interned(tw_writer *tw, bool cleared, uint64_t context_iid, int32_t pid,
                 const em_queue_spec *queues, uint32_t nqueues)
{
    interned(tw, cleared, false, context_iid, pid, queues, nqueues);
}

void em_interned_after_loss(tw_writer *tw, bool cleared, uint64_t context_iid, int32_t pid,
                            const em_queue_spec *queues, uint32_t nqueues)
{
    interned(tw, cleared, true, context_iid, pid, queues, nqueues);
}

static void interned(tw_writer *tw, bool cleared, bool after_loss, uint64_t context_iid,
                     int32_t pid, const em_queue_spec *queues, uint32_t nqueues)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_InternedData in;
    tw_begin_packet(tw, &pkt);
    if (after_loss)
        perfetto_protos_TracePacket_set_previous_packet_dropped(&pkt, 1);
    perfetto_protos_TracePacket_set_sequence_flags(&pkt, cleared ? SEQ_CLEARED : SEQ_NEEDS);
    perfetto_protos_TracePacket_begin_interned_data(&pkt, &in);
    if (cleared) {
        perfetto_protos_InternedGraphicsContext ctx;
        perfetto_protos_InternedData_begin_graphics_contexts(&in, &ctx);
        perfetto_protos_InternedGraphicsContext_set_iid(&ctx, context_iid);
        perfetto_protos_InternedGraphicsContext_set_pid(&ctx, pid);
        perfetto_protos_InternedGraphicsContext_set_api(
            &ctx, perfetto_protos_InternedGraphicsContext_Api_VULKAN);
        perfetto_protos_InternedGraphicsContext_end(&ctx);
        for (uint32_t s = 1; s < TL_STAGE_COUNT; s++)
            spec(&in, s, stages[s].name, stages[s].description, stages[s].category);
    }
    for (uint32_t i = 0; i < nqueues; i++)
        spec(&in, queues[i].iid, queues[i].name, queues[i].description, CAT_OTHER);
    perfetto_protos_InternedData_end(&in);
    tw_end_packet(tw);
}

static void extra(perfetto_protos_GpuRenderStageEvent *ev, const char *name, const char *value)
{
    perfetto_protos_GpuRenderStageEvent_ExtraData x;
    perfetto_protos_GpuRenderStageEvent_begin_extra_data(ev, &x);
    perfetto_protos_GpuRenderStageEvent_ExtraData_set_name(&x, name);
    perfetto_protos_GpuRenderStageEvent_ExtraData_set_value(&x, value);
    perfetto_protos_GpuRenderStageEvent_ExtraData_end(&x);
}

void em_render_stage(tw_writer *tw, const em_stage_event *e)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_GpuRenderStageEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, e->timestamp);
    perfetto_protos_TracePacket_set_timestamp_clock_id(&pkt, e->clock_id);
    perfetto_protos_TracePacket_set_sequence_flags(&pkt, SEQ_NEEDS);
    perfetto_protos_TracePacket_begin_gpu_render_stage_event(&pkt, &ev);
    perfetto_protos_GpuRenderStageEvent_set_event_id(&ev, e->event_id);
    perfetto_protos_GpuRenderStageEvent_set_duration(&ev, e->duration);
    perfetto_protos_GpuRenderStageEvent_set_hw_queue_iid(&ev, e->hw_queue_iid);
    perfetto_protos_GpuRenderStageEvent_set_stage_iid(&ev, e->stage_iid);
    perfetto_protos_GpuRenderStageEvent_set_context(&ev, e->context_iid);
    perfetto_protos_GpuRenderStageEvent_set_gpu_id(&ev, e->gpu_id);
    perfetto_protos_GpuRenderStageEvent_set_submission_id(&ev, e->submission_id);
    perfetto_protos_GpuRenderStageEvent_set_command_buffer_handle(&ev, e->command_buffer);
    if (e->render_pass)
        perfetto_protos_GpuRenderStageEvent_set_render_pass_handle(&ev, e->render_pass);
    if (e->render_target)
        perfetto_protos_GpuRenderStageEvent_set_render_target_handle(&ev, e->render_target);
    if (e->name)
        perfetto_protos_GpuRenderStageEvent_set_name(&ev, e->name);
    if (e->api)
        extra(&ev, "api", e->api);
    if (e->collected_boottime_ns) {
        char v[24];
        snprintf(v, sizeof v, "%" PRIu64, e->collected_boottime_ns);
        extra(&ev, "collected_boottime_ns", v);
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        extra(&ev, e->args[i].name, e->args[i].value);
    perfetto_protos_GpuRenderStageEvent_end(&ev);
    tw_end_packet(tw);
}

void em_queue_submit(tw_writer *tw, uint64_t timestamp, uint64_t duration_ns, int32_t pid,
                     int32_t tid, uint64_t queue, uint32_t count, const VkSubmitInfo *submits,
                     const VkSubmitInfo2 *submits2, uint32_t submission_id)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_VulkanApiEvent api;
    perfetto_protos_VulkanApiEvent_VkQueueSubmit qs;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_vulkan_api_event(&pkt, &api);
    perfetto_protos_VulkanApiEvent_begin_vk_queue_submit(&api, &qs);
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_set_duration_ns(&qs, duration_ns);
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_set_pid(&qs, (uint32_t)pid);
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_set_tid(&qs, (uint32_t)tid);
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_set_vk_queue(&qs, queue);
    for (uint32_t i = 0; i < count; i++) {
        if (submits) {
            const VkSubmitInfo *s = &submits[i];
            for (uint32_t j = 0; j < s->commandBufferCount; j++)
                perfetto_protos_VulkanApiEvent_VkQueueSubmit_add_vk_command_buffers(
                    &qs, (uint64_t)(uintptr_t)s->pCommandBuffers[j]);
        } else {
            const VkSubmitInfo2 *s = &submits2[i];
            for (uint32_t j = 0; j < s->commandBufferInfoCount; j++)
                perfetto_protos_VulkanApiEvent_VkQueueSubmit_add_vk_command_buffers(
                    &qs, (uint64_t)(uintptr_t)s->pCommandBufferInfos[j].commandBuffer);
        }
    }
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_set_submission_id(&qs, submission_id);
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_end(&qs);
    perfetto_protos_VulkanApiEvent_end(&api);
    tw_end_packet(tw);
}

void em_label_spec(tw_writer *tw, uint64_t iid, const char *label)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_InternedData in;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_sequence_flags(&pkt, SEQ_NEEDS);
    perfetto_protos_TracePacket_begin_interned_data(&pkt, &in);
    spec(&in, iid, label, "A VK_EXT_debug_utils label region (vkCmdBeginDebugUtilsLabelEXT)",
         CAT_OTHER);
    perfetto_protos_InternedData_end(&in);
    tw_end_packet(tw);
}

void em_object_name(tw_writer *tw, uint64_t timestamp, int32_t pid, uint64_t device,
                    int32_t object_type, uint64_t object, const char *name)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_VulkanApiEvent api;
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName on;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_vulkan_api_event(&pkt, &api);
    perfetto_protos_VulkanApiEvent_begin_vk_debug_utils_object_name(&api, &on);
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_set_pid(&on, (uint32_t)pid);
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_set_vk_device(&on, device);
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_set_object_type(&on, object_type);
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_set_object(&on, object);
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_set_object_name(&on, name);
    perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_end(&on);
    perfetto_protos_VulkanApiEvent_end(&api);
    tw_end_packet(tw);
}
