/* SPDX-License-Identifier: MIT */
/* handle_table.c — see handle_table.h. */
#include "layer/handle_table.h"

#include <string.h>

static uint32_t home_of(uint64_t key, uint32_t capacity)
{
    /* Handles are pointers or small counters: mix all bits into the top. */
    uint64_t h = key * UINT64_C(0x9e3779b97f4a7c15);
    return (uint32_t)(h >> 32) & (capacity - 1);
}

void ht_init(ht_table *t, const gt_allocator *alloc)
{
    memset(t, 0, sizeof *t);
    t->alloc = alloc;
}

void ht_finish(ht_table *t)
{
    gt_free(t->alloc, t->slots);
    t->slots = NULL;
    t->capacity = t->count = 0;
}

static void place(ht_slot *slots, uint32_t capacity, uint64_t key, void *value)
{
    uint32_t i = home_of(key, capacity);
    while (slots[i].key)
        i = (i + 1) & (capacity - 1);
    slots[i].key = key;
    slots[i].value = value;
}

static bool grow(ht_table *t)
{
    uint32_t capacity = t->capacity ? t->capacity * 2 : 64;
    ht_slot *slots =
        gt_zalloc(t->alloc, (size_t)capacity * sizeof *slots, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!slots)
        return false;
    for (uint32_t i = 0; i < t->capacity; i++) {
        if (t->slots[i].key)
            place(slots, capacity, t->slots[i].key, t->slots[i].value);
    }
    gt_free(t->alloc, t->slots);
    t->slots = slots;
    t->capacity = capacity;
    return true;
}

bool ht_put(ht_table *t, uint64_t key, void *value)
{
    if (t->capacity) {
        for (uint32_t i = home_of(key, t->capacity); t->slots[i].key;
             i = (i + 1) & (t->capacity - 1)) {
            if (t->slots[i].key == key) {
                t->slots[i].value = value;
                return true;
            }
        }
    }
    /* Keep the load under 3/4 so probe runs stay short. */
    if ((t->count + 1) * 4 > t->capacity * 3 && !grow(t))
        return false;
    place(t->slots, t->capacity, key, value);
    t->count++;
    return true;
}

void *ht_get(const ht_table *t, uint64_t key)
{
    if (!t->capacity)
        return NULL;
    for (uint32_t i = home_of(key, t->capacity); t->slots[i].key; i = (i + 1) & (t->capacity - 1)) {
        if (t->slots[i].key == key)
            return t->slots[i].value;
    }
    return NULL;
}

void *ht_remove(ht_table *t, uint64_t key)
{
    if (!t->capacity)
        return NULL;
    const uint32_t mask = t->capacity - 1;
    uint32_t i = home_of(key, t->capacity);
    while (t->slots[i].key && t->slots[i].key != key)
        i = (i + 1) & mask;
    if (!t->slots[i].key)
        return NULL;
    void *value = t->slots[i].value;

    /* Backward shift: move later members of the run into the hole when
    * their home does not lie cyclically in (hole, current]. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & mask; t->slots[j].key; j = (j + 1) & mask) {
        uint32_t home = home_of(t->slots[j].key, t->capacity);
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            t->slots[hole] = t->slots[j];
            hole = j;
        }
    }
    t->slots[hole].key = 0;
    t->slots[hole].value = NULL;
    t->count--;
    return value;
}
