/* SPDX-License-Identifier: MIT */
/* mem_emit.c — see mem_emit.h. */
#include "layer/memory/mem_emit.h"

#include <string.h>

#include "protos/perfetto/trace_packet.pbc.h"

#define SEQ_CLEARED perfetto_protos_TracePacket_SequenceFlags_SEQ_INCREMENTAL_STATE_CLEARED
#define SEQ_NEEDS   perfetto_protos_TracePacket_SequenceFlags_SEQ_NEEDS_INCREMENTAL_STATE

static const char *const key_names[ME_KEY_COUNT] = {
    [ME_KEY_NAME] = "name",
    [ME_KEY_SNAPSHOT] = "before_session",
    [ME_KEY_USAGE] = "usage",
    [ME_KEY_CREATE_FLAGS] = "create_flags",
    [ME_KEY_FORMAT] = "format",
    [ME_KEY_WIDTH] = "width",
    [ME_KEY_HEIGHT] = "height",
    [ME_KEY_DEPTH] = "depth",
    [ME_KEY_MIP_LEVELS] = "mip_levels",
    [ME_KEY_ARRAY_LAYERS] = "array_layers",
    [ME_KEY_SAMPLES] = "samples",
    [ME_KEY_TILING] = "tiling",
    [ME_KEY_OFFSET] = "offset",
    [ME_KEY_PLANE] = "plane",
    [ME_KEY_MAPPED] = "mapped",
    [ME_KEY_MAP_OFFSET] = "map_offset",
    [ME_KEY_MAP_SIZE] = "map_size",
    [ME_KEY_DEDICATED_BUFFER] = "dedicated_buffer",
    [ME_KEY_DEDICATED_IMAGE] = "dedicated_image",
    [ME_KEY_EXPORT_HANDLE_TYPES] = "export_handle_types",
    [ME_KEY_IMPORT] = "import",
    [ME_KEY_ALLOCATE_FLAGS] = "allocate_flags",
    [ME_KEY_PROPERTY_FLAGS] = "memory_property_flags",
};

const char *me_key_name(enum me_key key)
{
    return key > ME_KEY_NONE && key < ME_KEY_COUNT ? key_names[key] : NULL;
}

static void interned_string(perfetto_protos_InternedData *in, bool function, uint64_t iid,
                            const char *s)
{
    perfetto_protos_InternedString str;
    if (function)
        perfetto_protos_InternedData_begin_function_names(in, &str);
    else
        perfetto_protos_InternedData_begin_vulkan_memory_keys(in, &str);
    perfetto_protos_InternedString_set_iid(&str, iid);
    perfetto_protos_InternedString_set_str(&str, (const uint8_t *)s, strlen(s));
    perfetto_protos_InternedString_end(&str);
}

void me_interned(tw_writer *tw, bool after_loss, const char *const *functions, uint32_t nfunctions)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_InternedData in;
    tw_begin_packet(tw, &pkt);
    if (after_loss)
        perfetto_protos_TracePacket_set_previous_packet_dropped(&pkt, 1);
    perfetto_protos_TracePacket_set_sequence_flags(&pkt, SEQ_CLEARED);
    perfetto_protos_TracePacket_begin_interned_data(&pkt, &in);
    for (uint32_t i = 1; i < nfunctions; i++)
        if (functions[i])
            interned_string(&in, true, i, functions[i]);
    for (uint32_t k = 1; k < ME_KEY_COUNT; k++)
        interned_string(&in, false, k, key_names[k]);
    perfetto_protos_InternedData_end(&in);
    tw_end_packet(tw);
}

void me_string(tw_writer *tw, uint64_t iid, const char *value)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_InternedData in;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_sequence_flags(&pkt, SEQ_NEEDS);
    perfetto_protos_TracePacket_begin_interned_data(&pkt, &in);
    interned_string(&in, false, iid, value);
    perfetto_protos_InternedData_end(&in);
    tw_end_packet(tw);
}

void me_event_packet(tw_writer *tw, const me_event *e)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_VulkanMemoryEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, e->timestamp);
    perfetto_protos_TracePacket_set_sequence_flags(&pkt, SEQ_NEEDS);
    perfetto_protos_TracePacket_begin_vulkan_memory_event(&pkt, &ev);
    perfetto_protos_VulkanMemoryEvent_set_source(
        &ev, (perfetto_protos_VulkanMemoryEvent_Source)e->source);
    perfetto_protos_VulkanMemoryEvent_set_operation(
        &ev, (perfetto_protos_VulkanMemoryEvent_Operation)e->op);
    perfetto_protos_VulkanMemoryEvent_set_timestamp(&ev, (int64_t)e->timestamp);
    perfetto_protos_VulkanMemoryEvent_set_pid(&ev, (uint32_t)e->pid);
    if (e->has_size)
        perfetto_protos_VulkanMemoryEvent_set_memory_size(&ev, e->size);
    if (e->caller_iid)
        perfetto_protos_VulkanMemoryEvent_set_caller_iid(&ev, e->caller_iid);
    for (uint32_t i = 0; i < e->nannotations; i++) {
        const me_annotation *a = &e->annotations[i];
        perfetto_protos_VulkanMemoryEventAnnotation an;
        perfetto_protos_VulkanMemoryEvent_begin_annotations(&ev, &an);
        perfetto_protos_VulkanMemoryEventAnnotation_set_key_iid(&an, a->key);
        if (a->is_string)
            perfetto_protos_VulkanMemoryEventAnnotation_set_string_iid(&an, a->string_iid);
        else
            perfetto_protos_VulkanMemoryEventAnnotation_set_int_value(&an, a->int_value);
        perfetto_protos_VulkanMemoryEventAnnotation_end(&an);
    }
    perfetto_protos_VulkanMemoryEvent_set_device(&ev, e->device);
    if (e->device_memory)
        perfetto_protos_VulkanMemoryEvent_set_device_memory(&ev, e->device_memory);
    if (e->has_type) {
        perfetto_protos_VulkanMemoryEvent_set_memory_type(&ev, e->memory_type);
        perfetto_protos_VulkanMemoryEvent_set_heap(&ev, e->heap);
    }
    if (e->object)
        perfetto_protos_VulkanMemoryEvent_set_object_handle(&ev, e->object);
    perfetto_protos_VulkanMemoryEvent_end(&ev);
    tw_end_packet(tw);
}

void me_counter_track(tw_writer *tw, uint64_t timestamp, uint64_t uuid, uint64_t parent_uuid,
                      const char *name)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackDescriptor td;
    perfetto_protos_CounterDescriptor cd;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_track_descriptor(&pkt, &td);
    perfetto_protos_TrackDescriptor_set_uuid(&td, uuid);
    perfetto_protos_TrackDescriptor_set_parent_uuid(&td, parent_uuid);
    perfetto_protos_TrackDescriptor_set_name(&td, name);
    perfetto_protos_TrackDescriptor_begin_counter(&td, &cd);
    perfetto_protos_CounterDescriptor_set_unit(
        &cd, perfetto_protos_CounterDescriptor_Unit_UNIT_SIZE_BYTES);
    perfetto_protos_CounterDescriptor_end(&cd);
    perfetto_protos_TrackDescriptor_end(&td);
    tw_end_packet(tw);
}

void me_counter(tw_writer *tw, uint64_t timestamp, uint64_t uuid, int64_t value)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TrackEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, timestamp);
    perfetto_protos_TracePacket_begin_track_event(&pkt, &ev);
    perfetto_protos_TrackEvent_set_type(&ev, perfetto_protos_TrackEvent_Type_TYPE_COUNTER);
    perfetto_protos_TrackEvent_set_track_uuid(&ev, uuid);
    perfetto_protos_TrackEvent_set_counter_value(&ev, value);
    perfetto_protos_TrackEvent_end(&ev);
    tw_end_packet(tw);
}
