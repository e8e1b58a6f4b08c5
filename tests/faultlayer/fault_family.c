/* SPDX-License-Identifier: MIT */
/* fault_family.c — VK_LAYER_GPUTRACE_clockfault: which queue family wrote
 * each timestamp query, for GPUTRACE_FAULT_FAMILY_OFFSET_NS (one family's
 * stamps offset from the others' and from the calibrated DEVICE domain,
 * as a driver reading another engine's counter would be). A command
 * buffer can only run on queues of its command pool's family, so the
 * family is known when the timestamp is recorded. Maps are searched
 * linearly: made for tests with a few pools and queries (gputrace-probe),
 * and left empty unless the fault is on.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tests/faultlayer/fault_layer.h"

static fl_family_entry *find(fl_family_map *m, uint64_t handle, uint32_t query)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->e[i].handle == handle && m->e[i].query == query)
            return &m->e[i];
    }
    return NULL;
}

/* Sets (or adds) the entry; an entry that does not fit is left out (the
 * stamp then stays untouched). */
static void put(fl_family_map *m, uint64_t handle, uint32_t query, uint32_t family)
{
    fl_family_entry *e = find(m, handle, query);
    if (!e && fl_grow((void **)&m->e, &m->cap, m->n, sizeof *m->e))
        e = &m->e[m->n++];
    if (e)
        *e = (fl_family_entry){ handle, query, family };
}

static uint32_t lookup(fl_family_map *m, uint64_t handle, uint32_t query)
{
    const fl_family_entry *e = find(m, handle, query);
    return e ? e->family : UINT32_MAX;
}

VKAPI_ATTR VkResult VKAPI_CALL fl_CreateCommandPool(VkDevice device,
                                                    const VkCommandPoolCreateInfo *info,
                                                    const VkAllocationCallbacks *alloc,
                                                    VkCommandPool *pool)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->CreateCommandPool(device, info, alloc, pool);
    if (r == VK_SUCCESS && fl_cfg.family_offset_ns) {
        pthread_mutex_lock(&d->family_lock);
        put(&d->command_pools, (uint64_t)*pool, 0, info->queueFamilyIndex);
        pthread_mutex_unlock(&d->family_lock);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL fl_AllocateCommandBuffers(VkDevice device,
                                                         const VkCommandBufferAllocateInfo *info,
                                                         VkCommandBuffer *cbs)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->AllocateCommandBuffers(device, info, cbs);
    if (r == VK_SUCCESS && fl_cfg.family_offset_ns) {
        pthread_mutex_lock(&d->family_lock);
        const uint32_t family = lookup(&d->command_pools, (uint64_t)info->commandPool, 0);
        for (uint32_t i = 0; i < info->commandBufferCount; i++)
            put(&d->command_buffers, (uint64_t)(uintptr_t)cbs[i], 0, family);
        pthread_mutex_unlock(&d->family_lock);
    }
    return r;
}

void fl_family_stamp(fl_device *d, VkCommandBuffer cb, VkQueryPool pool, uint32_t query)
{
    if (!fl_cfg.family_offset_ns)
        return;
    pthread_mutex_lock(&d->family_lock);
    const uint32_t family = lookup(&d->command_buffers, (uint64_t)(uintptr_t)cb, 0);
    put(&d->stamps, (uint64_t)pool, query, family);
    pthread_mutex_unlock(&d->family_lock);
}

uint32_t fl_family_of_query(fl_device *d, VkQueryPool pool, uint32_t query)
{
    pthread_mutex_lock(&d->family_lock);
    const uint32_t family = lookup(&d->stamps, (uint64_t)pool, query);
    pthread_mutex_unlock(&d->family_lock);
    return family;
}

void fl_family_release(fl_device *d)
{
    free(d->command_pools.e);
    free(d->command_buffers.e);
    free(d->stamps.e);
}
