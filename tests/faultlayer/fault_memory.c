/* SPDX-License-Identifier: MIT */
/* fault_memory.c — VK_LAYER_GPUTRACE_clockfault: timestamps that
 * vkCmdCopyQueryPoolResults wrote into mapped memory. The GPU's writes
 * cannot be altered, but the timing layer invalidates the mapped range
 * before every read of them (GPUTRACE_QUERY_READBACK=copy), so they are
 * rewritten in place there, once per value. The bindings and mappings seen
 * here also tell the query-reuse check where a copy's availability word
 * lands (rc_copy).
 *
 * GPUTRACE_FAULT_LATE_COPIES holds copied records back: at each
 * invalidation, a record that landed is taken out of the mapping (both
 * words zeroed) and kept. "late" is a copy that runs well after the
 * timestamps it copies (lavapipe's queue thread preempted between them):
 * the driver already has the queries, the mapping does not show them, and
 * they appear at the latest when anything can tell the copy ran (a later
 * submission, a fence or idle wait returning; fl_copies_land), never
 * through vkGetQueryPoolResults. "never" is a layer below shadowing mapped
 * memory (gfxreconstruct's page guard): they do not appear at all.
 */
#include <stdatomic.h>
#include <string.h>

#include "tests/faultlayer/fault_layer.h"

VKAPI_ATTR VkResult VKAPI_CALL fl_BindBufferMemory(VkDevice device, VkBuffer buffer,
                                                   VkDeviceMemory memory, VkDeviceSize offset)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->BindBufferMemory(device, buffer, memory, offset);
    if (r == VK_SUCCESS) {
        pthread_mutex_lock(&d->copy_lock);
        if (fl_grow((void **)&d->bindings, &d->bindings_cap, d->nbindings, sizeof *d->bindings))
            d->bindings[d->nbindings++] = (fl_binding){ buffer, memory, offset };
        pthread_mutex_unlock(&d->copy_lock);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL fl_MapMemory(VkDevice device, VkDeviceMemory memory,
                                            VkDeviceSize offset, VkDeviceSize size,
                                            VkMemoryMapFlags flags, void **data)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->MapMemory(device, memory, offset, size, flags, data);
    if (r == VK_SUCCESS) {
        pthread_mutex_lock(&d->copy_lock);
        if (fl_grow((void **)&d->mappings, &d->mappings_cap, d->nmappings, sizeof *d->mappings))
            d->mappings[d->nmappings++] = (fl_mapping){ memory, offset, *data };
        pthread_mutex_unlock(&d->copy_lock);
    }
    return r;
}

/* Remembers where timestamps are copied to (64-bit values with
 * availability, the only form the timing layer records). */
VKAPI_ATTR void VKAPI_CALL fl_CmdCopyQueryPoolResults(VkCommandBuffer cb, VkQueryPool pool,
                                                      uint32_t first, uint32_t count,
                                                      VkBuffer buffer, VkDeviceSize offset,
                                                      VkDeviceSize stride, VkQueryResultFlags flags)
{
    fl_device *d = fl_device_of(cb);
    const VkQueryResultFlags need = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT;
    if ((fl_cfg.transforms || fl_cfg.late_copies) && (flags & need) == need && stride == 16 &&
        fl_pool_is_timestamp(d, pool)) {
        pthread_mutex_lock(&d->copy_lock);
        const fl_binding *b = NULL;
        for (size_t i = 0; i < d->nbindings && !b; i++)
            b = d->bindings[i].buffer == buffer ? &d->bindings[i] : NULL;
        if (b) {
            const VkDeviceSize at = b->offset + offset;
            fl_copy *c = NULL;
            for (size_t i = 0; i < d->ncopies && !c; i++)
                c = d->copies[i].memory == b->memory && d->copies[i].offset == at ? &d->copies[i]
                                                                                  : NULL;
            if (!c && fl_grow((void **)&d->copies, &d->copies_cap, d->ncopies, sizeof *d->copies)) {
                c = &d->copies[d->ncopies++];
                *c = (fl_copy){ .memory = b->memory, .offset = at };
            }
            if (c)
                c->cb = cb;
            if (c && count > c->count) {
                uint64_t *out = realloc(c->out, (size_t)count * sizeof *out);
                if (out)
                    c->out = out;
                uint64_t *shown = out ? realloc(c->shown, (size_t)count * sizeof *shown) : NULL;
                if (shown)
                    c->shown = shown;
                if (out && shown) {
                    memset(out + c->count, 0, (size_t)(count - c->count) * sizeof *out);
                    memset(shown + c->count, 0, (size_t)(count - c->count) * sizeof *shown);
                    c->count = count;
                }
            }
        }
        pthread_mutex_unlock(&d->copy_lock);
    }
    if (d->reuse && count && (flags & need) == need) {
        /* Where the last query's availability word lands, if mapped. */
        const uint64_t *avail = NULL;
        pthread_mutex_lock(&d->copy_lock);
        const fl_binding *b = NULL;
        for (size_t i = 0; i < d->nbindings && !b; i++)
            b = d->bindings[i].buffer == buffer ? &d->bindings[i] : NULL;
        for (size_t i = 0; b && i < d->nmappings && !avail; i++) {
            const fl_mapping *m = &d->mappings[i];
            const VkDeviceSize at = b->offset + offset + (VkDeviceSize)(count - 1) * stride + 8;
            if (m->memory == b->memory && at >= m->offset)
                avail = (const uint64_t *)(const void *)(m->ptr + (at - m->offset));
        }
        pthread_mutex_unlock(&d->copy_lock);
        rc_copy(d->reuse, cb, avail);
    }
    d->CmdCopyQueryPoolResults(cb, pool, first, count, buffer, offset, stride, flags);
}

/* Rewrites the copied timestamps that landed since the last look. A value
 * is taken once both it and its availability word are non-zero (a driver
 * may write either first). */
/* Takes record `q` of copy `ci` out of the mapping if it landed and was
 * not shown before. Under copy_lock. */
static void hold_back(fl_device *d, size_t ci, uint32_t q, uint64_t *words)
{
    fl_copy *c = &d->copies[ci];
    uint64_t avail = __atomic_load_n(&words[1], __ATOMIC_ACQUIRE);
    uint64_t value = __atomic_load_n(&words[0], __ATOMIC_ACQUIRE);
    if (!avail || !value || value == c->shown[q])
        return;
    /* Copied by work known to have run: on time by now. */
    if (fl_cfg.late_copies == FM_COPIES_LATE && c->submitted <= d->ran_serial)
        return;
    if (!fl_grow((void **)&d->held, &d->held_cap, d->nheld, sizeof *d->held))
        return;
    d->held[d->nheld++] = (fl_held){ .copy = ci, .query = q, .value = value, .avail = avail };
    __atomic_store_n(&words[0], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&words[1], 0, __ATOMIC_RELEASE);
    atomic_fetch_add(&fl_count.copies_held, 1);
}

/* The record's words in the mapping, or NULL. Under copy_lock. */
static uint64_t *record_words(fl_device *d, const fl_copy *c, uint32_t q)
{
    for (size_t i = 0; i < d->nmappings; i++) {
        const fl_mapping *m = &d->mappings[i];
        if (m->memory == c->memory && c->offset >= m->offset)
            return (uint64_t *)(void *)(m->ptr + (c->offset - m->offset)) + 2 * q;
    }
    return NULL;
}

/* Under copy_lock. */
static void land_held(fl_device *d)
{
    d->ran_serial = d->submit_serial;
    for (size_t i = 0; i < d->nheld; i++) {
        const fl_held *h = &d->held[i];
        fl_copy *c = &d->copies[h->copy];
        uint64_t *words = record_words(d, c, h->query);
        /* Not where a later execution's copy (or its reset) wrote since. */
        if (words && !__atomic_load_n(&words[0], __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&words[1], __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&words[0], h->value, __ATOMIC_RELEASE);
            __atomic_store_n(&words[1], h->avail, __ATOMIC_RELEASE);
        }
        c->shown[h->query] = h->value;
        atomic_fetch_add(&fl_count.copies_revealed, 1);
    }
    d->nheld = 0;
}

void fl_copies_land(fl_device *d)
{
    if (fl_cfg.late_copies != FM_COPIES_LATE)
        return;
    pthread_mutex_lock(&d->copy_lock);
    land_held(d);
    pthread_mutex_unlock(&d->copy_lock);
}

static void mark_submitted(fl_device *d, VkCommandBuffer cb)
{
    for (size_t i = 0; i < d->ncopies; i++) {
        if (d->copies[i].cb == cb)
            d->copies[i].submitted = d->submit_serial;
    }
}

void fl_copies_submit(fl_device *d, uint32_t n, const VkSubmitInfo *s1, const VkSubmitInfo2 *s2)
{
    if (fl_cfg.late_copies == FM_COPIES_ON_TIME)
        return;
    pthread_mutex_lock(&d->copy_lock);
    if (fl_cfg.late_copies == FM_COPIES_LATE)
        land_held(d);
    d->submit_serial++;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t ncbs = s1 ? s1[i].commandBufferCount : s2[i].commandBufferInfoCount;
        for (uint32_t k = 0; k < ncbs; k++)
            mark_submitted(d, s1 ? s1[i].pCommandBuffers[k]
                                 : s2[i].pCommandBufferInfos[k].commandBuffer);
    }
    pthread_mutex_unlock(&d->copy_lock);
}

VKAPI_ATTR VkResult VKAPI_CALL fl_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n,
                                                               const VkMappedMemoryRange *ranges)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->InvalidateMappedMemoryRanges(device, n, ranges);
    if (r != VK_SUCCESS || !(fl_cfg.transforms || fl_cfg.late_copies))
        return r;
    pthread_mutex_lock(&d->copy_lock);
    for (uint32_t k = 0; k < n; k++) {
        const fl_mapping *m = NULL;
        for (size_t i = 0; i < d->nmappings && !m; i++)
            m = d->mappings[i].memory == ranges[k].memory ? &d->mappings[i] : NULL;
        if (!m)
            continue;
        for (size_t i = 0; i < d->ncopies; i++) {
            fl_copy *c = &d->copies[i];
            if (c->memory != ranges[k].memory || c->offset < m->offset)
                continue;
            uint64_t *rec = (uint64_t *)(m->ptr + (c->offset - m->offset));
            for (uint32_t q = 0; q < c->count; q++) {
                /* Not combined with the clock transforms. */
                if (fl_cfg.late_copies) {
                    hold_back(d, i, q, &rec[2 * q]);
                    continue;
                }
                uint64_t avail = __atomic_load_n(&rec[2 * q + 1], __ATOMIC_ACQUIRE);
                uint64_t value = __atomic_load_n(&rec[2 * q], __ATOMIC_ACQUIRE);
                if (!avail || !value || value == c->out[q])
                    continue;
                c->out[q] = fm_forward(&fl_cfg, value);
                __atomic_store_n(&rec[2 * q], c->out[q], __ATOMIC_RELEASE);
                atomic_fetch_add(&fl_count.query_values, 1);
            }
        }
    }
    pthread_mutex_unlock(&d->copy_lock);
    return r;
}

void fl_memory_release(fl_device *d)
{
    for (size_t i = 0; i < d->ncopies; i++) {
        free(d->copies[i].out);
        free(d->copies[i].shown);
    }
    free(d->copies);
    free(d->held);
    free(d->bindings);
    free(d->mappings);
}
