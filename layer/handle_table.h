/* SPDX-License-Identifier: MIT */
/* handle_table.h — a growable map from a Vulkan handle (dispatchable or not,
 * as a 64-bit value) to a pointer, for the timing code's per-object state
 * (command buffers, command pools).
 *
 * Open addressing with linear probing and backward-shift deletion, so there
 * are no tombstones and lookups stay short however many objects come and
 * go. Not locked: the owner (timeline_device.c) holds its own mutex around
 * every call. Memory comes from the device's allocator.
 */
#ifndef GPUTRACE_LAYER_HANDLE_TABLE_H
#define GPUTRACE_LAYER_HANDLE_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "layer/alloc.h"

typedef struct gt_allocator gt_allocator;

typedef struct ht_slot ht_slot;
struct ht_slot {
    uint64_t key; /* 0: empty (no valid handle is 0) */
    void *value;
};

typedef struct ht_table ht_table;
struct ht_table {
    ht_slot *slots;
    uint32_t capacity; /* power of two, or 0 before the first insert */
    uint32_t count;
    const gt_allocator *alloc;
};

void ht_init(ht_table *t, const gt_allocator *alloc);
void ht_finish(ht_table *t);

/* Inserts or replaces. False only when growing failed (out of memory). */
bool ht_put(ht_table *t, uint64_t key, void *value);
void *ht_get(const ht_table *t, uint64_t key);
/* Removes key and returns its value, or NULL. */
void *ht_remove(ht_table *t, uint64_t key);

#endif
