/* SPDX-License-Identifier: MIT */
/* cmd_check_queues.c — see cmd_check_queues.h. */
#include "tests/layer/cmd_check_queues.h"

#include <stdlib.h>
#include <string.h>

uint32_t cq_wanted(void)
{
    static int wanted = -1;
    if (wanted < 0) {
        const char *v = getenv("GPUTRACE_CMDCHECK_QUEUES");
        long n = v ? strtol(v, NULL, 10) : 0;
        wanted = n >= 2 && n <= (long)CQ_MAX_QUEUES ? (int)n : 0;
    }
    return (uint32_t)wanted;
}

void cq_instance_created(cq_instance *ci, const tls_instance *base)
{
#define CQ_GET(name) ci->name = (PFN_vk##name)base->gipa(base->handle, "vk" #name);
    CQ_GET(GetPhysicalDeviceQueueFamilyProperties)
    CQ_GET(GetPhysicalDeviceQueueFamilyProperties2)
    CQ_GET(GetPhysicalDeviceQueueFamilyProperties2KHR)
#undef CQ_GET
}

static void widen(uint32_t *queue_count)
{
    if (cq_wanted() > *queue_count)
        *queue_count = cq_wanted();
}

void cq_queue_family_properties(const cq_instance *ci, VkPhysicalDevice pd, uint32_t *count,
                                VkQueueFamilyProperties *props)
{
    ci->GetPhysicalDeviceQueueFamilyProperties(pd, count, props);
    if (props && *count)
        widen(&props[0].queueCount);
}

void cq_queue_family_properties2(const cq_instance *ci, bool khr, VkPhysicalDevice pd,
                                 uint32_t *count, VkQueueFamilyProperties2 *props)
{
    (khr ? ci->GetPhysicalDeviceQueueFamilyProperties2KHR
         : ci->GetPhysicalDeviceQueueFamilyProperties2)(pd, count, props);
    if (props && *count)
        widen(&props[0].queueFamilyProperties.queueCount);
}

/* Between cq_amend_device_create and cq_device_created (one vkCreateDevice
 * on one thread). */
static _Thread_local struct {
    uint32_t real_count, count;
    VkDeviceCreateInfo info;
    VkDeviceQueueCreateInfo queues[16];
} pending;

const VkDeviceCreateInfo *cq_amend_device_create(const cq_instance *ci, VkPhysicalDevice pd,
                                                 const VkDeviceCreateInfo *info)
{
    pending.real_count = pending.count = 0;
    if (!cq_wanted() || info->queueCreateInfoCount > 16)
        return info;
    uint32_t n = 0;
    ci->GetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties *families = calloc(n ? n : 1, sizeof *families);
    if (!families)
        return info;
    ci->GetPhysicalDeviceQueueFamilyProperties(pd, &n, families);
    const uint32_t real = n ? families[0].queueCount : 0;
    free(families);
    pending.info = *info;
    memcpy(pending.queues, info->pQueueCreateInfos,
           info->queueCreateInfoCount * sizeof *pending.queues);
    for (uint32_t i = 0; i < info->queueCreateInfoCount; i++) {
        VkDeviceQueueCreateInfo *q = &pending.queues[i];
        if (q->queueFamilyIndex != 0 || q->queueCount <= real)
            continue;
        pending.real_count = real;
        pending.count = q->queueCount;
        q->queueCount = real;
    }
    pending.info.pQueueCreateInfos = pending.queues;
    return &pending.info;
}

void cq_device_created(cq_device *cd, const tls_device *base)
{
    cd->on = pending.count > pending.real_count && pending.real_count > 0;
    cd->real_count = pending.real_count;
    cd->count = pending.count;
    pending.real_count = pending.count = 0;
    pthread_mutex_init(&cd->lock, NULL);
    cd->GetDeviceQueue = (PFN_vkGetDeviceQueue)base->gdpa(base->handle, "vkGetDeviceQueue");
    cd->GetDeviceQueue2 = (PFN_vkGetDeviceQueue2)base->gdpa(base->handle, "vkGetDeviceQueue2");
    cd->QueueWaitIdle = (PFN_vkQueueWaitIdle)base->gdpa(base->handle, "vkQueueWaitIdle");
}

void cq_device_destroyed(cq_device *cd)
{
    pthread_mutex_destroy(&cd->lock);
}

/* One of ours for `index` (past the driver's), or NULL. */
static VkQueue extra_queue(cq_device *cd, VkDevice device, uint32_t family, uint32_t index)
{
    if (!cd->on || family != 0 || index < cd->real_count || index >= cd->count ||
        index - cd->real_count >= CQ_MAX_QUEUES)
        return VK_NULL_HANDLE;
    cq_queue *q = &cd->extra[index - cd->real_count];
    if (!q->real) {
        cd->GetDeviceQueue(device, 0, 0, &q->real);
        /* Dispatchable like the driver's queue: the layers above find the
         * device through the same first word (the loader writes it too). */
        q->loader_data = *(void **)q->real;
    }
    return (VkQueue)(void *)q;
}

void cq_get_queue(cq_device *cd, VkDevice device, uint32_t family, uint32_t index, VkQueue *queue)
{
    VkQueue extra = extra_queue(cd, device, family, index);
    if (extra)
        *queue = extra;
    else
        cd->GetDeviceQueue(device, family, index, queue);
}

void cq_get_queue2(cq_device *cd, VkDevice device, const VkDeviceQueueInfo2 *info, VkQueue *queue)
{
    VkQueue extra = info->flags ? VK_NULL_HANDLE
                                : extra_queue(cd, device, info->queueFamilyIndex, info->queueIndex);
    if (extra)
        *queue = extra;
    else
        cd->GetDeviceQueue2(device, info, queue);
}

VkQueue cq_begin(cq_device *cd, VkQueue queue)
{
    if (!cd->on)
        return queue;
    pthread_mutex_lock(&cd->lock);
    for (uint32_t i = 0; i < CQ_MAX_QUEUES; i++)
        if ((void *)queue == (void *)&cd->extra[i])
            return cd->extra[i].real;
    return queue;
}

bool cq_is_extra(const cq_device *cd, uint64_t handle)
{
    for (uint32_t i = 0; cd->on && i < CQ_MAX_QUEUES; i++)
        if (handle == (uint64_t)(uintptr_t)&cd->extra[i])
            return true;
    return false;
}

void cq_end(cq_device *cd)
{
    if (cd->on)
        pthread_mutex_unlock(&cd->lock);
}
