/* SPDX-License-Identifier: MIT */
/* mem_device.h — one device's memory tracking (prefix mem_): the live
 * objects (mem_table.h), the records waiting for the collector
 * (mem_queue.h), and what the application's threads do at each hook.
 *
 * Cost on the application's thread (docs/layer.md, "Memory events"):
 * always, the table's bookkeeping under the device's memory lock (a hash
 * insert or removal); while a session wants memory events, a timestamp and
 * one record appended too, and at the creation of a buffer or image the
 * driver is asked for its memory requirement (what its bind will count).
 * Everything else (encoding, interning, counters) happens on the
 * collector's thread (mem_sequence.h).
 */
#ifndef GPUTRACE_LAYER_MEMORY_MEM_DEVICE_H
#define GPUTRACE_LAYER_MEMORY_MEM_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/label_specs.h"
#include "layer/memory/mem_queue.h"
#include "layer/memory/mem_table.h"
#include "layer/object_names.h"
#include "layer/objects.h"
#include "layer/session.h"

/* The Vulkan functions a record names (InternedData.function_names: iid =
 * the value). */
enum mem_api {
    MEM_API_NONE,
    MEM_API_ALLOCATE_MEMORY,
    MEM_API_FREE_MEMORY,
    MEM_API_MAP_MEMORY,
    MEM_API_UNMAP_MEMORY,
    MEM_API_CREATE_BUFFER,
    MEM_API_DESTROY_BUFFER,
    MEM_API_CREATE_IMAGE,
    MEM_API_DESTROY_IMAGE,
    MEM_API_BIND_BUFFER_MEMORY,
    MEM_API_BIND_BUFFER_MEMORY2,
    MEM_API_BIND_BUFFER_MEMORY2_KHR,
    MEM_API_BIND_IMAGE_MEMORY,
    MEM_API_BIND_IMAGE_MEMORY2,
    MEM_API_BIND_IMAGE_MEMORY2_KHR,
    MEM_API_SET_NAME,
    MEM_API_COUNT,
};
const char *mem_api_name(enum mem_api api);

/* One session's memory sequence (mem_sequence.c owns it; here so the
 * device's state is in one place). */
typedef struct msq_slot msq_slot;
struct msq_slot {
    tw_writer *writer;
    uint32_t gen;       /* the slot's generation it was made for */
    uint64_t since;     /* records from this position on are its own */
    bool need_interned; /* its incremental state must be written again */
    bool after_loss;    /* ... marked previous_packet_dropped: events were lost */
    uint64_t lost_seen; /* the writer's and the queue's losses told */
    uint64_t queue_lost_seen;
    uint64_t allocated[VK_MAX_MEMORY_HEAPS], bound[VK_MAX_MEMORY_HEAPS];
    bool in_snapshot;   /* totals add up silently; written once it is done */
    uint64_t budget_at; /* MONOTONIC of the last budget sample */
    ls_table *strings;  /* interned string values (names, formats) */
};

/* What a session that started finds alive (mem_slot_started): taken at
 * once, under the memory lock, so that no object made and gone before the
 * collector gets to the session escapes both the snapshot and the
 * records; written by the collector later. */
typedef struct mem_snapshot mem_snapshot;
struct mem_snapshot {
    uint32_t gen;   /* the slot's generation it was taken for; 0: none */
    uint64_t since; /* the first record after it */
    uint64_t ts;    /* CLOCK_BOOTTIME it was taken at */
    uint64_t queue_lost;
    mt_object *objects; /* memory, then buffers, then images */
    uint32_t count, memory_end, buffer_end, cap;
    bool incomplete; /* out of memory: objects are missing */
};

typedef struct mem_device mem_device;
struct mem_device {
    gt_device *gt;
    const gt_allocator *alloc;
    int pid;
    uint32_t ordinal;       /* the VkDevice's number in the process */
    tl_object_names *names; /* the application's names, or NULL */
    VkPhysicalDeviceMemoryProperties props;
    bool budget; /* VK_EXT_memory_budget can be asked */

    /* The table and the queue; held for table work and a record's copy,
     * never while calling Vulkan or writing packets. */
    pthread_mutex_t lock;
    mt_table table;
    mq_queue queue;
    /* Over the device's life (the log at its destruction): what the
     * application allocated, freed, created. */
    uint64_t allocations, allocated_bytes, frees, freed_bytes, buffers, images;
    /* Wakes the collector when a block of records is full (set by it). */
    void (*wake)(void *ctx);
    void *wake_ctx;

    /* Per session slot, under the lock. */
    mem_snapshot snapshots[TL_SESSION_SLOTS];

    /* The collector's (mem_sequence.c); clear_req: bit per slot asking for
     * its interned data again (any thread). */
    msq_slot slots[TL_SESSION_SLOTS];
    atomic_uint clear_req;
};

/* At vkCreateDevice; NULL when out of memory (no memory events then). */
mem_device *mem_create(gt_device *dev, uint32_t ordinal, int pid, tl_object_names *names);
/* At vkDestroyDevice, after the collector ended: logs (info) what the
 * application allocated, freed and created over the device's life and
 * what it left alive. */
void mem_destroy(mem_device *md);

/* The hooks (mem_entry.c calls them on the application's threads). */
void mem_allocated(mem_device *md, VkDeviceMemory memory, const VkMemoryAllocateInfo *info);
void mem_free(mem_device *md, VkDeviceMemory memory);
void mem_mapped(mem_device *md, VkDeviceMemory memory, VkDeviceSize offset, VkDeviceSize size);
void mem_unmap(mem_device *md, VkDeviceMemory memory);
void mem_buffer_created(mem_device *md, VkBuffer buffer, const VkBufferCreateInfo *info);
void mem_image_created(mem_device *md, VkImage image, const VkImageCreateInfo *info);
void mem_destroy_object(mem_device *md, enum mt_kind kind, uint64_t handle);
void mem_bound(mem_device *md, enum mt_kind kind, enum mem_api api, uint64_t object,
               VkDeviceMemory memory, VkDeviceSize offset, VkImageAspectFlagBits plane);
/* (type, handle) got a name: a record, when it is one of ours. */
void mem_named(mem_device *md, VkObjectType type, uint64_t handle);

/* Session slot `slot` started (a session wanting memory events): its
 * snapshot of what is alive, taken now (any thread; once per period of the
 * slot). Bound sizes the hooks could not know are asked of the driver here,
 * under the memory lock (the objects cannot go meanwhile). */
void mem_slot_started(mem_device *md, unsigned slot);

/* The memory requirement of a buffer or image (of its `plane`, 0: whole),
 * asked of the driver; 0 when it cannot tell. Any thread. */
uint64_t mem_requirement(mem_device *md, enum mt_kind kind, uint64_t handle,
                         VkImageAspectFlagBits plane);

#endif
