/* SPDX-License-Identifier: MIT */
/* layer_map.c — see layer_map.h. */
#include "layer/layer_map.h"

#include <stdint.h>

static size_t bucket_of(const void *key)
{
    /* Dispatch tables and handles are heap pointers: the low bits carry
    * alignment, not information, so mix before taking the top bits. */
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 58) % GT_MAP_BUCKETS;
}

static gt_map_node **slot_of(gt_map *map, const void *key)
{
    gt_map_node **slot = &map->bucket[bucket_of(key)];
    while (*slot && (*slot)->key != key)
        slot = &(*slot)->next;
    return slot;
}

bool gt_map_insert(gt_map *map, gt_map_node *node, const void *key)
{
    pthread_rwlock_wrlock(&map->lock);
    gt_map_node **slot = slot_of(map, key);
    bool inserted = *slot == NULL;
    if (inserted) {
        node->key = key;
        node->next = NULL;
        *slot = node;
    }
    pthread_rwlock_unlock(&map->lock);
    return inserted;
}

gt_map_node *gt_map_find(gt_map *map, const void *key)
{
    pthread_rwlock_rdlock(&map->lock);
    gt_map_node *node = *slot_of(map, key);
    pthread_rwlock_unlock(&map->lock);
    return node;
}

gt_map_node *gt_map_remove(gt_map *map, const void *key)
{
    pthread_rwlock_wrlock(&map->lock);
    gt_map_node **slot = slot_of(map, key);
    gt_map_node *node = *slot;
    if (node)
        *slot = node->next;
    pthread_rwlock_unlock(&map->lock);
    return node;
}
