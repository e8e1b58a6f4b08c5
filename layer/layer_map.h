/* SPDX-License-Identifier: MIT */
/* layer_map.h — locked hash maps from a dispatchable handle's key to the
 * layer's state for it.
 *
 * The layer never wraps handles: it finds its state from the handle itself.
 * Dispatchable objects created under one VkInstance/VkDevice share that
 * parent's dispatch key (the first pointer-sized word of the object), so a
 * VkQueue or VkCommandBuffer resolves to its VkDevice with the same lookup.
 *
 * Nodes are embedded in the objects they index (intrusive), so inserting
 * never allocates: all memory stays with the application's allocator, and an
 * insert cannot fail half-way.
 */
#ifndef GPUTRACE_LAYER_MAP_H
#define GPUTRACE_LAYER_MAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define GT_MAP_BUCKETS 64

typedef struct gt_map_node gt_map_node;
struct gt_map_node {
    gt_map_node *next;
    const void *key;
};

/* Readers (every hooked call) share the lock; create/destroy take it
 * exclusively. */
typedef struct gt_map gt_map;
struct gt_map {
    pthread_rwlock_t lock;
    gt_map_node *bucket[GT_MAP_BUCKETS];
};

#define GT_MAP_INITIALIZER                 \
    {                                      \
        .lock = PTHREAD_RWLOCK_INITIALIZER \
    }

#define gt_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* The loader's dispatch pointer stored at the start of every dispatchable
 * object. */
static inline const void *gt_dispatch_key(const void *handle)
{
    return *(const void *const *)handle;
}

/* Returns false (and leaves the map unchanged) if the key is present. */
bool gt_map_insert(gt_map *map, gt_map_node *node, const void *key);

gt_map_node *gt_map_find(gt_map *map, const void *key);

/* Unlinks and returns the node for key, or NULL. */
gt_map_node *gt_map_remove(gt_map *map, const void *key);

#endif
