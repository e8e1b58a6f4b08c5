/* SPDX-License-Identifier: MIT */
/* layer_lookup.h — finding the layer's gt_instance / gt_device /
 * gt_physical_device from a Vulkan handle (loader plumbing, prefix gt_).
 *
 * Dispatchable objects created under one VkInstance/VkDevice share that
 * parent's dispatch key, so a VkQueue or VkCommandBuffer resolves to its
 * VkDevice with the same lookup (layer_map.h). Physical devices are keyed
 * on the handle itself and recorded per instance when enumerated through
 * the layer.
 */
#ifndef GPUTRACE_LAYER_LOOKUP_H
#define GPUTRACE_LAYER_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "layer/objects.h"

/* State for any handle created under an instance / device. NULL if
 * unknown. */
gt_instance *gt_instance_get(const void *dispatchable);
gt_device *gt_device_get(const void *dispatchable);
gt_instance *gt_instance_of_physical_device(VkPhysicalDevice physical_device);

/* Publishes a created object under its handle (set before the call);
 * false if the handle's key is already known. */
bool gt_instance_register(gt_instance *inst);
bool gt_device_register(gt_device *dev);
/* Unpublishes the object of a handle and returns it; NULL if unknown. */
gt_instance *gt_instance_unregister(VkInstance instance);
gt_device *gt_device_unregister(VkDevice device);

/* Remembers which instance handed out these physical devices (allocated
 * with the instance's allocator). */
VkResult gt_physical_devices_track(gt_instance *inst, uint32_t count,
                                   const VkPhysicalDevice *handles);
/* Forgets and frees every physical device recorded for `inst`. */
void gt_physical_devices_forget(gt_instance *inst);

#endif
