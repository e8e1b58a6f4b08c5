/* SPDX-License-Identifier: MIT */
/* fr_emit.c — see fr_emit.h. */
#include "layer/frames/fr_emit.h"

#include <stdio.h>

#include "protos/perfetto/trace_packet.pbc.h"

#define SLICE_BEGIN perfetto_protos_TrackEvent_Type_TYPE_SLICE_BEGIN
#define SLICE_END   perfetto_protos_TrackEvent_Type_TYPE_SLICE_END
#define COUNTER     perfetto_protos_TrackEvent_Type_TYPE_COUNTER
#define MERGE_NONE  perfetto_protos_TrackDescriptor_SiblingMergeBehavior_SIBLING_MERGE_BEHAVIOR_NONE

enum {
    TRACK_FRAMES,
    TRACK_GPU_TIME,
    TRACK_INTERVAL
};
static const char *const track_names[] = { "Frames", "GPU frame time", "frame interval" };

/* splitmix64's finaliser: spreads the salt over the whole uuid. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t fr_emit_track_uuid(uint64_t process_uuid, uint32_t process_stream, unsigned which)
{
    /* "frm" in the top bytes keeps these apart from the thread tracks'
     * salts (process_info.c). */
    const uint64_t salt = (0x66726dull << 40) | ((uint64_t)process_stream << 8) | which;
    return mix(process_uuid ^ mix(salt)) | 1u;
}

static void track_name(char *out, size_t size, unsigned which, uint32_t process_stream)
{
    if (process_stream <= 1)
        snprintf(out, size, "%s", track_names[which]);
    else
        snprintf(out, size, "%s #%u", track_names[which], process_stream);
}

static void describe_stream(char *out, size_t size, const fr_record *r)
{
    if (r->kind == FR_BOUNDARY) {
        snprintf(out, size, "frames marked with VK_EXT_frame_boundary (FRAME_END)");
        return;
    }
    const char *mode = fr_present_mode_name(r->present_mode);
    snprintf(out, size,
             "frames presented to surface 0x%llx (vkQueuePresentKHR to present), "
             "present mode %s",
             (unsigned long long)r->surface, mode ? mode : "unknown");
}

static void one_track(tw_writer *tw, uint64_t timestamp, uint64_t process_uuid, const fr_record *r,
                      unsigned which)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackDescriptor td;
    char name[64], desc[160];
    track_name(name, sizeof name, which, r->process_stream);
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_track_descriptor(&pkt, &td);
    perfetto_protos_TrackDescriptor_set_uuid(
        &td, fr_emit_track_uuid(process_uuid, r->process_stream, which));
    perfetto_protos_TrackDescriptor_set_parent_uuid(&td, process_uuid);
    perfetto_protos_TrackDescriptor_set_name(&td, name);
    if (which == TRACK_FRAMES) {
        describe_stream(desc, sizeof desc, r);
        perfetto_protos_TrackDescriptor_set_description(&td, desc);
    } else {
        perfetto_protos_CounterDescriptor cd;
        perfetto_protos_TrackDescriptor_begin_counter(&td, &cd);
        perfetto_protos_CounterDescriptor_set_unit_name(&cd, "ms");
        perfetto_protos_CounterDescriptor_end(&cd);
    }
    perfetto_protos_TrackDescriptor_set_sibling_merge_behavior(&td, MERGE_NONE);
    perfetto_protos_TrackDescriptor_end(&td);
    tw_end_packet(tw);
}

void fr_emit_tracks(tw_writer *tw, uint64_t timestamp, uint64_t process_uuid, const fr_record *r)
{
    for (unsigned which = TRACK_FRAMES; which <= TRACK_INTERVAL; which++)
        one_track(tw, timestamp, process_uuid, r, which);
}

static void arg_uint(perfetto_protos_TrackEvent *ev, const char *name, uint64_t value)
{
    perfetto_protos_DebugAnnotation a;
    perfetto_protos_TrackEvent_begin_debug_annotations(ev, &a);
    perfetto_protos_DebugAnnotation_set_name(&a, name);
    perfetto_protos_DebugAnnotation_set_uint_value(&a, value);
    perfetto_protos_DebugAnnotation_end(&a);
}

static void arg_string(perfetto_protos_TrackEvent *ev, const char *name, const char *value)
{
    perfetto_protos_DebugAnnotation a;
    perfetto_protos_TrackEvent_begin_debug_annotations(ev, &a);
    perfetto_protos_DebugAnnotation_set_name(&a, name);
    perfetto_protos_DebugAnnotation_set_string_value(&a, value);
    perfetto_protos_DebugAnnotation_end(&a);
}

static void counter(tw_writer *tw, uint64_t timestamp, uint64_t uuid, uint64_t ns)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, COUNTER);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, uuid);
    perfetto_protos_TrackEvent_set_double_counter_value(&ev, (double)ns / 1e6);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);
}

void fr_emit_frame(tw_writer *tw, uint64_t process_uuid, const fr_record *r)
{
    const uint64_t track = fr_emit_track_uuid(process_uuid, r->process_stream, TRACK_FRAMES);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackEvent ev;
    char name[32];
    snprintf(name, sizeof name, "Frame %llu", (unsigned long long)r->frame);
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, r->start_ns);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, SLICE_BEGIN);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, track);
    perfetto_protos_TrackEvent_set_name(&ev, name);
    arg_uint(&ev, "frame_number", r->frame);
    if (r->kind == FR_SWAPCHAIN) {
        arg_uint(&ev, "swapchain", r->swapchain);
        arg_uint(&ev, "image_index", r->image_index);
        const char *mode = fr_present_mode_name(r->present_mode);
        if (mode)
            arg_string(&ev, "present_mode", mode);
        arg_uint(&ev, "image_count", r->image_count);
    } else {
        arg_uint(&ev, "frame_id", r->frame_id);
    }
    arg_uint(&ev, "submissions", r->submissions);
    if (r->gpu_known) {
        arg_uint(&ev, "gpu_time_ns", r->gpu_time_ns);
        arg_uint(&ev, "gpu_busy_ns", r->gpu_busy_ns);
    }
    if (r->incomplete)
        arg_uint(&ev, "incomplete", 1);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);

    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, r->end_ns);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, SLICE_END);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, track);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);

    if (r->gpu_known)
        counter(tw, r->start_ns,
                fr_emit_track_uuid(process_uuid, r->process_stream, TRACK_GPU_TIME),
                r->gpu_time_ns);
    if (r->has_interval)
        counter(tw, r->start_ns,
                fr_emit_track_uuid(process_uuid, r->process_stream, TRACK_INTERVAL),
                r->end_ns - r->start_ns);
}
