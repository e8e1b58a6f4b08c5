/* SPDX-License-Identifier: MIT */
/* layer_device.h — vkCreateDevice / vkDestroyDevice chaining (loader
 * plumbing, prefix gt_): the device's dispatch table, the amended create
 * info (device_setup.h), the timing feature's init and finish
 * (timeline.h). layer_interface.c hands them out through the
 * vkGet*ProcAddr pair.
 */
#ifndef GPUTRACE_LAYER_DEVICE_H
#define GPUTRACE_LAYER_DEVICE_H

#include <vulkan/vulkan.h>

VKAPI_ATTR VkResult VKAPI_CALL gt_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *info,
                                               const VkAllocationCallbacks *callbacks,
                                               VkDevice *device);
VKAPI_ATTR void VKAPI_CALL gt_DestroyDevice(VkDevice device,
                                            const VkAllocationCallbacks *callbacks);

#endif
