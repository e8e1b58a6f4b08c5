/* SPDX-License-Identifier: MIT */
/* Short names for the generated field numbers (protoc-gen-pbc, from our
 * protos/perfetto subset) that the checker and gputrace-dump use, plus the
 * enum values they test. Fields outside our schema are in tk_fields.h. */
#ifndef TK_SCHEMA_H
#define TK_SCHEMA_H

#include "protos/perfetto/trace_packet.pbc.h"

enum {
    /* TracePacket */
    TK_TP_TRUSTED_UID = perfetto_protos_TracePacket_FIELD_trusted_uid,
    TK_TP_TRUSTED_PID = perfetto_protos_TracePacket_FIELD_trusted_pid,
    TK_TP_CLOCK_SNAPSHOT = perfetto_protos_TracePacket_FIELD_clock_snapshot,
    TK_TP_TIMESTAMP = perfetto_protos_TracePacket_FIELD_timestamp,
    TK_TP_TRUSTED_PACKET_SEQUENCE_ID = perfetto_protos_TracePacket_FIELD_trusted_packet_sequence_id,
    TK_TP_INTERNED_DATA = perfetto_protos_TracePacket_FIELD_interned_data,
    TK_TP_SEQUENCE_FLAGS = perfetto_protos_TracePacket_FIELD_sequence_flags,
    TK_TP_TRACE_CONFIG = perfetto_protos_TracePacket_FIELD_trace_config,
    TK_TP_TRACE_STATS = perfetto_protos_TracePacket_FIELD_trace_stats,
    TK_TP_SYNCHRONIZATION_MARKER = perfetto_protos_TracePacket_FIELD_synchronization_marker,
    TK_TP_INCREMENTAL_STATE_CLEARED = perfetto_protos_TracePacket_FIELD_incremental_state_cleared,
    TK_TP_PREVIOUS_PACKET_DROPPED = perfetto_protos_TracePacket_FIELD_previous_packet_dropped,
    TK_TP_COMPRESSED_PACKETS = perfetto_protos_TracePacket_FIELD_compressed_packets,
    TK_TP_GPU_RENDER_STAGE_EVENT = perfetto_protos_TracePacket_FIELD_gpu_render_stage_event,
    TK_TP_TIMESTAMP_CLOCK_ID = perfetto_protos_TracePacket_FIELD_timestamp_clock_id,
    TK_TP_TRACE_PACKET_DEFAULTS = perfetto_protos_TracePacket_FIELD_trace_packet_defaults,
    TK_TP_VULKAN_API_EVENT = perfetto_protos_TracePacket_FIELD_vulkan_api_event,
    TK_TP_SERVICE_EVENT = perfetto_protos_TracePacket_FIELD_service_event,
    TK_TP_FIRST_PACKET_ON_SEQUENCE = perfetto_protos_TracePacket_FIELD_first_packet_on_sequence,
    TK_TP_MACHINE_ID = perfetto_protos_TracePacket_FIELD_machine_id,
    TK_TP_ZSTD_COMPRESSED_PACKETS = perfetto_protos_TracePacket_FIELD_zstd_compressed_packets,
    TK_TP_FOR_TESTING = perfetto_protos_TracePacket_FIELD_for_testing,
    TK_TP_TRACK_EVENT = perfetto_protos_TracePacket_FIELD_track_event,
    TK_TP_TRACK_DESCRIPTOR = perfetto_protos_TracePacket_FIELD_track_descriptor,

    TK_SEQ_INCREMENTAL_STATE_CLEARED =
        perfetto_protos_TracePacket_SequenceFlags_SEQ_INCREMENTAL_STATE_CLEARED,
    TK_SEQ_NEEDS_INCREMENTAL_STATE =
        perfetto_protos_TracePacket_SequenceFlags_SEQ_NEEDS_INCREMENTAL_STATE,

    /* ClockSnapshot */
    TK_CS_CLOCKS = perfetto_protos_ClockSnapshot_FIELD_clocks,

    /* TraceStats */
    TK_TS_BUFFER_STATS = perfetto_protos_TraceStats_FIELD_buffer_stats,
    TK_TS_WRITER_STATS = perfetto_protos_TraceStats_FIELD_writer_stats,
    TK_TS_FINAL_FLUSH_SUCCEEDED =
        perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_SUCCEEDED,
    TK_TS_FINAL_FLUSH_FAILED = perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_FAILED,
    TK_FS_BYTES_DISCARDED_PER_BUFFER =
        perfetto_protos_TraceStats_FilterStats_FIELD_bytes_discarded_per_buffer,

    /* GpuRenderStageEvent */
    TK_GRS_EVENT_ID = perfetto_protos_GpuRenderStageEvent_FIELD_event_id,
    TK_GRS_DURATION = perfetto_protos_GpuRenderStageEvent_FIELD_duration,
    TK_GRS_HW_QUEUE_ID = perfetto_protos_GpuRenderStageEvent_FIELD_hw_queue_id,
    TK_GRS_CONTEXT = perfetto_protos_GpuRenderStageEvent_FIELD_context,
    TK_GRS_SUBMISSION_ID = perfetto_protos_GpuRenderStageEvent_FIELD_submission_id,
    TK_GRS_HW_QUEUE_IID = perfetto_protos_GpuRenderStageEvent_FIELD_hw_queue_iid,
    TK_GRS_STAGE_IID = perfetto_protos_GpuRenderStageEvent_FIELD_stage_iid,

    /* InternedData */
    TK_ID_GRAPHICS_CONTEXTS = perfetto_protos_InternedData_FIELD_graphics_contexts,
    TK_ID_GPU_SPECIFICATIONS = perfetto_protos_InternedData_FIELD_gpu_specifications,
};

#endif /* TK_SCHEMA_H */
