/* SPDX-License-Identifier: MIT */
/* layer_lookup.c — see layer_lookup.h. */
#include "layer/layer_lookup.h"

#include <pthread.h>

#include "layer/layer_map.h"

static gt_map instances = GT_MAP_INITIALIZER;
static gt_map devices = GT_MAP_INITIALIZER;
/* Keyed on the VkPhysicalDevice handle itself; entries are owned by their
 * instance. Enumeration may run on several threads at once: tracking (find,
 * insert, link into the instance's list) happens under one lock. */
static gt_map physical_devices = GT_MAP_INITIALIZER;
static pthread_mutex_t physical_devices_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- lookups ----------------------------------------------------------- */

gt_instance *gt_instance_get(const void *dispatchable)
{
    gt_map_node *n = gt_map_find(&instances, gt_dispatch_key(dispatchable));
    return n ? gt_container_of(n, gt_instance, node) : NULL;
}

gt_device *gt_device_get(const void *dispatchable)
{
    gt_map_node *n = gt_map_find(&devices, gt_dispatch_key(dispatchable));
    return n ? gt_container_of(n, gt_device, node) : NULL;
}

gt_instance *gt_instance_of_physical_device(VkPhysicalDevice physical_device)
{
    gt_map_node *n = gt_map_find(&physical_devices, physical_device);
    if (n)
        return gt_container_of(n, gt_physical_device, node)->instance;
    /* Not enumerated through us (a layer above made it up?). With the
    * Khronos loader, physical devices carry their instance's dispatch key. */
    return gt_instance_get(physical_device);
}

bool gt_instance_register(gt_instance *inst)
{
    return gt_map_insert(&instances, &inst->node, gt_dispatch_key(inst->handle));
}

gt_instance *gt_instance_unregister(VkInstance instance)
{
    gt_map_node *n = gt_map_remove(&instances, gt_dispatch_key(instance));
    return n ? gt_container_of(n, gt_instance, node) : NULL;
}

bool gt_device_register(gt_device *dev)
{
    return gt_map_insert(&devices, &dev->node, gt_dispatch_key(dev->handle));
}

gt_device *gt_device_unregister(VkDevice device)
{
    gt_map_node *n = gt_map_remove(&devices, gt_dispatch_key(device));
    return n ? gt_container_of(n, gt_device, node) : NULL;
}

/* ---- physical devices ------------------------------------------------------ */

void gt_physical_devices_forget(gt_instance *inst)
{
    pthread_mutex_lock(&physical_devices_lock);
    gt_physical_device *pd = inst->physical_devices;
    while (pd) {
        gt_physical_device *next = pd->next_in_instance;
        gt_map_remove(&physical_devices, pd->handle);
        gt_free(&inst->alloc, pd);
        pd = next;
    }
    inst->physical_devices = NULL;
    pthread_mutex_unlock(&physical_devices_lock);
}

VkResult gt_physical_devices_track(gt_instance *inst, uint32_t count,
                                   const VkPhysicalDevice *handles)
{
    VkResult res = VK_SUCCESS;
    pthread_mutex_lock(&physical_devices_lock);
    for (uint32_t i = 0; i < count; i++) {
        if (gt_map_find(&physical_devices, handles[i]))
            continue;
        gt_physical_device *pd =
            gt_zalloc(&inst->alloc, sizeof *pd, VK_SYSTEM_ALLOCATION_SCOPE_INSTANCE);
        if (!pd) {
            res = VK_ERROR_OUT_OF_HOST_MEMORY;
            break;
        }
        pd->handle = handles[i];
        pd->instance = inst;
        gt_map_insert(&physical_devices, &pd->node, handles[i]); /* absent: checked above */
        pd->next_in_instance = inst->physical_devices;
        inst->physical_devices = pd;
    }
    pthread_mutex_unlock(&physical_devices_lock);
    return res;
}
