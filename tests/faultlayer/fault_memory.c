/* SPDX-License-Identifier: MIT */
/* fault_memory.c — VK_LAYER_GPUTRACE_clockfault: timestamps that
 * vkCmdCopyQueryPoolResults wrote into mapped memory. The GPU's writes
 * cannot be altered, but the timing layer invalidates the mapped range
 * before every read of them (GPUTRACE_QUERY_READBACK=copy), so they are
 * rewritten in place there, once per value. The bindings and mappings seen
 * here also tell the query-reuse check where a copy's availability word
 * lands (rc_copy).
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
    if (fl_cfg.transforms && (flags & need) == need && stride == 16 &&
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
            if (c && count > c->count) {
                uint64_t *out = realloc(c->out, (size_t)count * sizeof *out);
                if (out) {
                    memset(out + c->count, 0, (size_t)(count - c->count) * sizeof *out);
                    c->out = out;
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
VKAPI_ATTR VkResult VKAPI_CALL fl_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n,
                                                               const VkMappedMemoryRange *ranges)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->InvalidateMappedMemoryRanges(device, n, ranges);
    if (r != VK_SUCCESS || !fl_cfg.transforms)
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
    for (size_t i = 0; i < d->ncopies; i++)
        free(d->copies[i].out);
    free(d->copies);
    free(d->bindings);
    free(d->mappings);
}
