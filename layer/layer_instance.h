/* SPDX-License-Identifier: MIT */
/* layer_instance.h — instance-level entry points of the loader plumbing
 * (prefix gt_): vkCreateInstance / vkDestroyInstance chaining, physical
 * device enumeration (recorded per instance), and the layer's
 * introspection. layer_interface.c hands them out through
 * vkGetInstanceProcAddr.
 */
#ifndef GPUTRACE_LAYER_INSTANCE_H
#define GPUTRACE_LAYER_INSTANCE_H

#include <vulkan/vulkan.h>

VKAPI_ATTR VkResult VKAPI_CALL gt_CreateInstance(const VkInstanceCreateInfo *info,
                                                 const VkAllocationCallbacks *callbacks,
                                                 VkInstance *instance);
VKAPI_ATTR void VKAPI_CALL gt_DestroyInstance(VkInstance instance,
                                              const VkAllocationCallbacks *callbacks);

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateInstanceLayerProperties(uint32_t *count,
                                                                   VkLayerProperties *props);
VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateDeviceLayerProperties(VkPhysicalDevice pd,
                                                                 uint32_t *count,
                                                                 VkLayerProperties *props);
VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateInstanceExtensionProperties(
    const char *layer, uint32_t *count, VkExtensionProperties *props);
VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateDeviceExtensionProperties(VkPhysicalDevice pd,
                                                                     const char *layer,
                                                                     uint32_t *count,
                                                                     VkExtensionProperties *props);

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDevices(VkInstance instance, uint32_t *count,
                                                           VkPhysicalDevice *handles);
VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDeviceGroups(
    VkInstance instance, uint32_t *count, VkPhysicalDeviceGroupProperties *groups);
VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDeviceGroupsKHR(
    VkInstance instance, uint32_t *count, VkPhysicalDeviceGroupProperties *groups);

/* VK_EXT_tooling_info, core in Vulkan 1.3: the layer as a tracing and
 * profiling tool, then the tools below it. */
VKAPI_ATTR VkResult VKAPI_CALL gt_GetPhysicalDeviceToolProperties(
    VkPhysicalDevice pd, uint32_t *count, VkPhysicalDeviceToolProperties *tools);
VKAPI_ATTR VkResult VKAPI_CALL gt_GetPhysicalDeviceToolPropertiesEXT(
    VkPhysicalDevice pd, uint32_t *count, VkPhysicalDeviceToolProperties *tools);

/* VK_EXT_frame_boundary's feature, answered by the layer where it provides
 * the extension (layer_frame_boundary.h). */
VKAPI_ATTR void VKAPI_CALL gt_GetPhysicalDeviceFeatures2(VkPhysicalDevice pd,
                                                         VkPhysicalDeviceFeatures2 *features);
VKAPI_ATTR void VKAPI_CALL gt_GetPhysicalDeviceFeatures2KHR(VkPhysicalDevice pd,
                                                            VkPhysicalDeviceFeatures2 *features);

#endif
