/* SPDX-License-Identifier: MIT */
/* flow_emit.c — see flow_emit.h. */
#include "layer/flows/flow_emit.h"

#include "gpu_track_event_descriptor.h"
#include "protos/perfetto/extension_descriptor.pbc.h"
#include "protos/perfetto/gpu_track_event.pbc.h"
#include "protos/perfetto/trace_packet.pbc.h"

/* GpuTrackEvent.gpu_correlation, an extension of TrackEvent: our generated
 * code has no accessor for extensions. */
#define FE_FIELD_GPU_CORRELATION 3000u

void fe_correlation(perfetto_protos_TrackEvent *ev, const fe_submitted *submitted,
                    const uint64_t *waited, uint32_t nwaited)
{
    const bool any_submitted = submitted && (submitted->count || submitted->span);
    if (!any_submitted && !nwaited)
        return;
    perfetto_protos_GpuCorrelation c;
    pb_msg_begin_nested(&ev->msg, FE_FIELD_GPU_CORRELATION, &c.msg);
    for (uint32_t i = 0; any_submitted && i < submitted->count; i++)
        perfetto_protos_GpuCorrelation_add_render_stage_submission_event_ids(&c,
                                                                             submitted->first + i);
    if (any_submitted && submitted->span)
        perfetto_protos_GpuCorrelation_add_render_stage_submission_event_ids(&c, submitted->span);
    for (uint32_t i = 0; i < nwaited; i++)
        perfetto_protos_GpuCorrelation_add_render_stage_wait_event_ids(&c, waited[i]);
    perfetto_protos_GpuCorrelation_end(&c);
}

void fe_extension_descriptor(tw_writer *tw)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_ExtensionDescriptor ed;
    perfetto_protos_FileDescriptorSet set;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_begin_extension_descriptor(&pkt, &ed);
    /* protoc's FileDescriptorSet is already a list of `file` fields. */
    perfetto_protos_ExtensionDescriptor_begin_extension_set(&ed, &set);
    pb_msg_append_raw(&set.msg, fe_gpu_track_event_descriptor,
                      sizeof fe_gpu_track_event_descriptor);
    perfetto_protos_FileDescriptorSet_end(&set);
    perfetto_protos_ExtensionDescriptor_end(&ed);
    tw_end_packet(tw);
}

void fe_wait_slice(tw_writer *tw, uint64_t begin, uint64_t end, uint64_t track_uuid,
                   const char *name, const uint64_t *waited, uint32_t nwaited)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, begin);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, perfetto_protos_TrackEvent_Type_TYPE_SLICE_BEGIN);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, track_uuid);
    perfetto_protos_TrackEvent_set_name(&ev, name);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);

    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, end);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, perfetto_protos_TrackEvent_Type_TYPE_SLICE_END);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, track_uuid);
    fe_correlation(&ev, NULL, waited, nwaited);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);
}
