/* SPDX-License-Identifier: MIT */
/* mem_table.c — see mem_table.h. Linear probing with backward-shift
 * deletion (no tombstones), so a table that sees objects come and go for
 * hours never degrades. */
#include "layer/memory/mem_table.h"

#include <string.h>

static uint32_t home_of(uint64_t handle, uint32_t capacity)
{
    /* Handles are pointers or small counters: mix all bits into the top. */
    return (uint32_t)((handle * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (capacity - 1);
}

void mt_init(mt_table *t, const gt_allocator *alloc)
{
    memset(t, 0, sizeof *t);
    t->alloc = alloc;
}

void mt_finish(mt_table *t)
{
    for (unsigned k = 0; k < MT_KINDS; k++) {
        gt_free(t->alloc, t->kinds[k].slots);
        t->kinds[k].slots = NULL;
        t->kinds[k].capacity = t->kinds[k].count = 0;
    }
}

static mt_object *find(const mt_kind_table *k, uint64_t handle)
{
    if (!k->capacity || !handle)
        return NULL;
    for (uint32_t i = home_of(handle, k->capacity);; i = (i + 1) & (k->capacity - 1)) {
        if (k->slots[i].handle == handle)
            return &k->slots[i];
        if (!k->slots[i].handle)
            return NULL;
    }
}

mt_object *mt_get(mt_table *t, enum mt_kind kind, uint64_t handle)
{
    return find(&t->kinds[kind], handle);
}

static bool grow(const gt_allocator *alloc, mt_kind_table *k)
{
    const uint32_t capacity = k->capacity ? k->capacity * 2 : 64;
    mt_object *slots =
        gt_zalloc(alloc, (size_t)capacity * sizeof *slots, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!slots)
        return false;
    for (uint32_t i = 0; i < k->capacity; i++) {
        const mt_object *o = &k->slots[i];
        if (!o->handle)
            continue;
        uint32_t j = home_of(o->handle, capacity);
        while (slots[j].handle)
            j = (j + 1) & (capacity - 1);
        slots[j] = *o;
    }
    gt_free(alloc, k->slots);
    k->slots = slots;
    k->capacity = capacity;
    return true;
}

mt_object *mt_put(mt_table *t, enum mt_kind kind, uint64_t handle)
{
    if (!handle)
        return NULL;
    mt_kind_table *k = &t->kinds[kind];
    mt_object *o = find(k, handle);
    if (o) {
        /* A handle the driver reused without our seeing its destruction
         * (never in valid use): the old one's bytes go first. */
        mt_remove(t, kind, handle);
    }
    /* At most half full: probes stay short. */
    if ((k->count + 1) * 2 > k->capacity && !grow(t->alloc, k))
        return NULL;
    uint32_t i = home_of(handle, k->capacity);
    while (k->slots[i].handle)
        i = (i + 1) & (k->capacity - 1);
    o = &k->slots[i];
    memset(o, 0, sizeof *o);
    o->handle = handle;
    k->count++;
    return o;
}

static void sub_saturating(uint64_t *total, uint64_t n)
{
    *total = *total > n ? *total - n : 0;
}

void mt_remove(mt_table *t, enum mt_kind kind, uint64_t handle)
{
    mt_kind_table *k = &t->kinds[kind];
    mt_object *o = find(k, handle);
    if (!o)
        return;
    if (kind == MT_MEMORY && o->heap < VK_MAX_MEMORY_HEAPS)
        sub_saturating(&t->allocated[o->heap], o->size);
    for (uint32_t b = 0; b < o->nbindings; b++)
        if (o->bindings[b].heap < VK_MAX_MEMORY_HEAPS)
            sub_saturating(&t->bound[o->bindings[b].heap], o->bindings[b].size);
    /* Backward shift: pull later members of the probe run into the hole
     * wherever their home allows. */
    uint32_t hole = (uint32_t)(o - k->slots);
    const uint32_t mask = k->capacity - 1;
    for (uint32_t j = (hole + 1) & mask; k->slots[j].handle; j = (j + 1) & mask) {
        const uint32_t home = home_of(k->slots[j].handle, k->capacity);
        /* Movable when its home is not within (hole, j], cyclically. */
        const bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            k->slots[hole] = k->slots[j];
            hole = j;
        }
    }
    memset(&k->slots[hole], 0, sizeof k->slots[hole]);
    k->count--;
}

void mt_allocated(mt_table *t, const mt_object *o)
{
    if (o->heap < VK_MAX_MEMORY_HEAPS)
        t->allocated[o->heap] += o->size;
}

void mt_bound(mt_table *t, const mt_binding *b)
{
    if (b->heap < VK_MAX_MEMORY_HEAPS)
        t->bound[b->heap] += b->size;
}

mt_object *mt_next(mt_table *t, enum mt_kind kind, uint32_t *cursor)
{
    mt_kind_table *k = &t->kinds[kind];
    while (*cursor < k->capacity) {
        mt_object *o = &k->slots[(*cursor)++];
        if (o->handle)
            return o;
    }
    return NULL;
}
