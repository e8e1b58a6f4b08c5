/* SPDX-License-Identifier: MIT */
/* emit_context.c — see emit_context.h. */
#include "layer/emit_context.h"

#include <string.h>

#include "protos/perfetto/trace_packet.pbc.h"

#define SLICE_BEGIN perfetto_protos_TrackEvent_Type_TYPE_SLICE_BEGIN
#define SLICE_END   perfetto_protos_TrackEvent_Type_TYPE_SLICE_END

static bool present(const char *s)
{
    return s && s[0];
}

static void gpu_entry(perfetto_protos_GpuInfo *info, const emc_gpu *g)
{
    perfetto_protos_GpuInfo_Gpu gpu;
    perfetto_protos_GpuInfo_begin_gpus(info, &gpu);
    if (present(g->name))
        perfetto_protos_GpuInfo_Gpu_set_name(&gpu, g->name);
    if (present(g->vendor))
        perfetto_protos_GpuInfo_Gpu_set_vendor(&gpu, g->vendor);
    if (present(g->model))
        perfetto_protos_GpuInfo_Gpu_set_model(&gpu, g->model);
    if (g->uuid)
        perfetto_protos_GpuInfo_Gpu_set_uuid(&gpu, g->uuid, 16);
    for (uint32_t i = 0; i < g->nextra; i++) {
        perfetto_protos_GpuInfo_Gpu_KeyValue kv;
        perfetto_protos_GpuInfo_Gpu_begin_extra_info(&gpu, &kv);
        perfetto_protos_GpuInfo_Gpu_KeyValue_set_key(&kv, g->extra[i].key);
        perfetto_protos_GpuInfo_Gpu_KeyValue_set_value(&kv, g->extra[i].value);
        perfetto_protos_GpuInfo_Gpu_KeyValue_end(&kv);
    }
    if (present(g->pci_bdf))
        perfetto_protos_GpuInfo_Gpu_set_pci_bdf(&gpu, g->pci_bdf);
    perfetto_protos_GpuInfo_Gpu_end(&gpu);
}

void emc_gpu_info(tw_writer *tw, uint64_t timestamp, const emc_gpu *gpus, uint32_t n)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_GpuInfo info;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_gpu_info(&pkt, &info);
    for (uint32_t i = 0; i < n; i++)
        gpu_entry(&info, &gpus[i]);
    perfetto_protos_GpuInfo_end(&info);
    tw_end_packet(tw);
}

void emc_process_track(tw_writer *tw, uint64_t timestamp, uint64_t uuid, int32_t pid,
                       const char *name, const char *cmdline, size_t cmdline_len, bool restart)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackDescriptor td;
    perfetto_protos_ProcessDescriptor pd;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    if (restart)
        perfetto_protos_TracePacket_set_sequence_flags(
            &pkt, perfetto_protos_TracePacket_SequenceFlags_SEQ_INCREMENTAL_STATE_CLEARED);
    perfetto_protos_TracePacket_begin_track_descriptor(&pkt, &td);
    perfetto_protos_TrackDescriptor_set_uuid(&td, uuid);
    perfetto_protos_TrackDescriptor_begin_process(&td, &pd);
    perfetto_protos_ProcessDescriptor_set_pid(&pd, pid);
    for (size_t at = 0; at < cmdline_len;) {
        const char *arg = cmdline + at;
        size_t len = strnlen(arg, cmdline_len - at);
        perfetto_protos_ProcessDescriptor_add_cmdline_len(&pd, arg, len);
        at += len + 1;
    }
    if (present(name))
        perfetto_protos_ProcessDescriptor_set_process_name(&pd, name);
    perfetto_protos_ProcessDescriptor_end(&pd);
    perfetto_protos_TrackDescriptor_end(&td);
    tw_end_packet(tw);
}

void emc_process_tree(tw_writer *tw, uint64_t timestamp, int32_t pid, int32_t ppid,
                      const char *cmdline, size_t cmdline_len)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_ProcessTree tree;
    perfetto_protos_ProcessTree_Process proc;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_process_tree(&pkt, &tree);
    perfetto_protos_ProcessTree_begin_processes(&tree, &proc);
    perfetto_protos_ProcessTree_Process_set_pid(&proc, pid);
    perfetto_protos_ProcessTree_Process_set_ppid(&proc, ppid);
    for (size_t at = 0; at < cmdline_len;) {
        const char *arg = cmdline + at;
        size_t len = strnlen(arg, cmdline_len - at);
        perfetto_protos_ProcessTree_Process_add_cmdline_len(&proc, arg, len);
        at += len + 1;
    }
    perfetto_protos_ProcessTree_Process_end(&proc);
    perfetto_protos_ProcessTree_end(&tree);
    tw_end_packet(tw);
}

void emc_thread_track(tw_writer *tw, uint64_t timestamp, uint64_t uuid, uint64_t process_uuid,
                      int32_t pid, int32_t tid, const char *name)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackDescriptor td;
    perfetto_protos_ThreadDescriptor thd;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_track_descriptor(&pkt, &td);
    perfetto_protos_TrackDescriptor_set_uuid(&td, uuid);
    perfetto_protos_TrackDescriptor_set_parent_uuid(&td, process_uuid);
    perfetto_protos_TrackDescriptor_begin_thread(&td, &thd);
    perfetto_protos_ThreadDescriptor_set_pid(&thd, pid);
    perfetto_protos_ThreadDescriptor_set_tid(&thd, tid);
    if (present(name))
        perfetto_protos_ThreadDescriptor_set_thread_name(&thd, name);
    perfetto_protos_ThreadDescriptor_end(&thd);
    perfetto_protos_TrackDescriptor_end(&td);
    tw_end_packet(tw);
}

void emc_submit_slice(tw_writer *tw, uint64_t begin, uint64_t end, uint64_t track_uuid,
                      uint32_t submission_id, const fe_submitted *flow)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackEvent ev;
    perfetto_protos_DebugAnnotation arg;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, begin);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, SLICE_BEGIN);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, track_uuid);
    perfetto_protos_TrackEvent_set_name(&ev, "vkQueueSubmit");
    perfetto_protos_TrackEvent_begin_debug_annotations(&ev, &arg);
    perfetto_protos_DebugAnnotation_set_name(&arg, "submission_id");
    perfetto_protos_DebugAnnotation_set_uint_value(&arg, submission_id);
    perfetto_protos_DebugAnnotation_end(&arg);
    fe_correlation(&ev, flow, NULL, 0);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);

    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, end);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, SLICE_END);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, track_uuid);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);
}
