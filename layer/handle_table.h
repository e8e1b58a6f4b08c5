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

#include "layer/layer_interface.h"

struct ht_slot {
   uint64_t key; /* 0: empty (no valid handle is 0) */
   void *value;
};

struct ht_table {
   struct ht_slot *slots;
   uint32_t capacity; /* power of two, or 0 before the first insert */
   uint32_t count;
   const struct gt_allocator *alloc;
};

void ht_init(struct ht_table *t, const struct gt_allocator *alloc);
void ht_finish(struct ht_table *t);

/* Inserts or replaces. False only when growing failed (out of memory). */
bool ht_put(struct ht_table *t, uint64_t key, void *value);
void *ht_get(const struct ht_table *t, uint64_t key);
/* Removes key and returns its value, or NULL. */
void *ht_remove(struct ht_table *t, uint64_t key);

#endif
