/* SPDX-License-Identifier: MIT */
/* mem_emit.h — the packets of memory events (prefix me_): VulkanMemoryEvent,
 * its interned function names and annotation keys, and the heaps' counter
 * tracks.
 *
 * Pure encoding like emit.h: no Vulkan calls, no locks; the caller (the
 * device's collector, mem_sequence.c) owns the writer. Perfetto takes
 * VulkanMemoryEvent.timestamp as it is, whatever clock the packet names:
 * every event is written with the same BOOTTIME value as its packet's
 * timestamp.
 */
#ifndef GPUTRACE_LAYER_MEMORY_MEM_EMIT_H
#define GPUTRACE_LAYER_MEMORY_MEM_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "tracing/trace_writer.h"

/* Annotation keys (InternedData.vulkan_memory_keys: iid = the value; the
 * string values of a sequence follow from LS_IID_BASE on). */
enum me_key {
    ME_KEY_NONE,
    ME_KEY_NAME,         /* string: the object's debug-utils name */
    ME_KEY_SNAPSHOT,     /* 1: alive when the session started */
    ME_KEY_USAGE,        /* VkBufferUsageFlags / VkImageUsageFlags */
    ME_KEY_CREATE_FLAGS, /* VkBufferCreateFlags / VkImageCreateFlags */
    ME_KEY_FORMAT,       /* string: VkFormat without VK_FORMAT_ */
    ME_KEY_WIDTH,
    ME_KEY_HEIGHT,
    ME_KEY_DEPTH,
    ME_KEY_MIP_LEVELS,
    ME_KEY_ARRAY_LAYERS,
    ME_KEY_SAMPLES,
    ME_KEY_TILING, /* VkImageTiling */
    ME_KEY_OFFSET, /* a bind's memory offset */
    ME_KEY_PLANE,  /* a bind's VkImageAspectFlagBits (disjoint images) */
    ME_KEY_MAPPED, /* 1 mapped, 0 unmapped */
    ME_KEY_MAP_OFFSET,
    ME_KEY_MAP_SIZE,
    ME_KEY_DEDICATED_BUFFER, /* VkMemoryDedicatedAllocateInfo */
    ME_KEY_DEDICATED_IMAGE,
    ME_KEY_EXPORT_HANDLE_TYPES, /* VkExportMemoryAllocateInfo::handleTypes */
    ME_KEY_IMPORT,              /* string: "fd", "host pointer", "other" */
    ME_KEY_ALLOCATE_FLAGS,      /* VkMemoryAllocateFlagsInfo::flags */
    ME_KEY_PROPERTY_FLAGS,      /* the memory type's VkMemoryPropertyFlags */
    ME_KEY_COUNT,
};
const char *me_key_name(enum me_key key);

typedef struct me_annotation me_annotation;
struct me_annotation {
    enum me_key key;
    bool is_string; /* string_iid, else int_value */
    int64_t int_value;
    uint64_t string_iid;
};

/* VulkanMemoryEvent's Source and Operation (same numbers). */
enum me_source {
    ME_SOURCE_DEVICE_MEMORY = 3,
    ME_SOURCE_BUFFER = 4,
    ME_SOURCE_IMAGE = 5
};
enum me_op {
    ME_OP_CREATE = 1,
    ME_OP_DESTROY = 2,
    ME_OP_BIND = 3,
    ME_OP_DESTROY_BOUND = 4,
    ME_OP_ANNOTATIONS = 5,
};

typedef struct me_event me_event;
struct me_event {
    uint64_t timestamp; /* BOOTTIME: the packet's and the event's */
    int32_t pid;
    enum me_source source;
    enum me_op op;
    uint64_t device;
    uint64_t device_memory; /* 0: none */
    uint64_t object;        /* buffer or image, 0: none */
    bool has_type;          /* memory_type and heap are set */
    uint32_t memory_type, heap;
    bool has_size;
    uint64_t size;
    uint64_t caller_iid; /* enum mem_api, 0: none */
    const me_annotation *annotations;
    uint32_t nannotations;
};

/* InternedData starting the sequence's incremental state afresh
 * (SEQ_INCREMENTAL_STATE_CLEARED, and previous_packet_dropped after a
 * loss): function names 1..nfunctions (entry 0 unused) and every
 * annotation key. */
void me_interned(tw_writer *tw, bool after_loss, const char *const *functions, uint32_t nfunctions);
/* InternedData adding one string value (vulkan_memory_keys). */
void me_string(tw_writer *tw, uint64_t iid, const char *value);
void me_event_packet(tw_writer *tw, const me_event *e);

/* A counter track of the process (bytes, SIZE_BYTES), and one value of it
 * at `timestamp` (BOOTTIME). */
void me_counter_track(tw_writer *tw, uint64_t timestamp, uint64_t uuid, uint64_t parent_uuid,
                      const char *name);
void me_counter(tw_writer *tw, uint64_t timestamp, uint64_t uuid, int64_t value);

#endif
