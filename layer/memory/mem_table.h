/* SPDX-License-Identifier: MIT */
/* mem_table.h — the device memory, buffers and images alive on one device,
 * with what they are bound to, and the running totals per heap (prefix
 * mt_).
 *
 * Kept whether a session traces or not: a session that starts later first
 * gets these objects (memory/mem_sequence.h), or its totals would not add
 * up. Open addressing with the objects inline (no allocation per object),
 * one table per kind (Vulkan does not promise handles unique across
 * types). No locks: the device's memory lock (mem_device.h) guards it.
 */
#ifndef GPUTRACE_LAYER_MEMORY_MEM_TABLE_H
#define GPUTRACE_LAYER_MEMORY_MEM_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/alloc.h"

enum mt_kind {
    MT_MEMORY,
    MT_BUFFER,
    MT_IMAGE,
    MT_KINDS,
};

/* Bindings one image holds: one, or one per plane of a disjoint image. */
#define MT_MAX_BINDINGS 3u

/* Where a buffer or image (or an image's plane) is bound: `size` bytes of
 * `memory`, of type `type` in `heap`. */
typedef struct mt_binding mt_binding;
struct mt_binding {
    uint64_t memory;
    uint64_t offset;
    uint64_t size; /* 0 while not known */
    uint32_t type, heap;
    uint32_t plane; /* VkImageAspectFlagBits of a disjoint image's plane, else 0 */
};

/* What a VkDeviceMemory was allocated with (annotations). */
enum mt_import {
    MT_IMPORT_NONE,
    MT_IMPORT_FD,
    MT_IMPORT_HOST_POINTER,
    MT_IMPORT_OTHER,
};

typedef struct mt_object mt_object;
struct mt_object {
    uint64_t handle; /* 0: free slot */
    /* Memory: the allocation's size. Buffer: VkBufferCreateInfo::size.
     * Image: its memory requirement (0 while not known). */
    uint64_t size;
    /* Buffer or image: the memory requirement a bind counts (0: not known
     * yet; found when needed, mem_device.c). */
    uint64_t req_size;
    uint32_t type, heap;   /* memory: its type and heap */
    uint32_t usage, flags; /* buffer/image create usage and flags */
    union {
        struct {
            uint64_t dedicated;      /* VkMemoryDedicatedAllocateInfo's buffer or image */
            uint32_t export_types;   /* VkExportMemoryAllocateInfo::handleTypes */
            uint32_t allocate_flags; /* VkMemoryAllocateFlagsInfo::flags */
            uint8_t dedicated_image; /* `dedicated` is an image, not a buffer */
            uint8_t import;          /* enum mt_import */
            uint8_t mapped;
        } memory;
        struct {
            uint32_t format, width, height, depth;
            uint16_t mip_levels, array_layers;
            uint8_t samples, tiling;
            uint8_t disjoint;
        } image;
    } u;
    uint32_t nbindings;
    mt_binding bindings[MT_MAX_BINDINGS];
};

typedef struct mt_kind_table mt_kind_table;
struct mt_kind_table {
    mt_object *slots;
    uint32_t capacity; /* power of two, or 0 */
    uint32_t count;
};

typedef struct mt_table mt_table;
struct mt_table {
    const gt_allocator *alloc;
    mt_kind_table kinds[MT_KINDS];
    /* Bytes allocated and bound per heap, now. */
    uint64_t allocated[VK_MAX_MEMORY_HEAPS];
    uint64_t bound[VK_MAX_MEMORY_HEAPS];
};

void mt_init(mt_table *t, const gt_allocator *alloc);
void mt_finish(mt_table *t);

/* The object, or NULL. */
mt_object *mt_get(mt_table *t, enum mt_kind kind, uint64_t handle);
/* A new object (zeroed but for its handle; an old one of that handle is
 * replaced), or NULL when out of memory. Counts nothing: the caller fills
 * it and calls mt_allocated for memory. */
mt_object *mt_put(mt_table *t, enum mt_kind kind, uint64_t handle);
/* Removes it (its bytes from the totals: the allocation, or what it had
 * bound). */
void mt_remove(mt_table *t, enum mt_kind kind, uint64_t handle);

/* Totals: memory `o` was just put; binding `b` was just added. */
void mt_allocated(mt_table *t, const mt_object *o);
void mt_bound(mt_table *t, const mt_binding *b);

/* The objects of `kind` one after another: start with *cursor = 0; NULL
 * at the end. The table must not change meanwhile. */
mt_object *mt_next(mt_table *t, enum mt_kind kind, uint32_t *cursor);

#endif
