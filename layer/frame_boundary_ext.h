/* SPDX-License-Identifier: MIT */
/* frame_boundary_ext.h — VK_EXT_frame_boundary for headers that predate it.
 *
 * Debian 12 ships Vulkan headers 1.3.239; the extension came later. The
 * values are the registry's (extension number 376: structure types
 * 1000000000 + (376 - 1) * 1000 + offset, offsets 0 for the feature
 * structure and 1 for VkFrameBoundaryEXT; VK_FRAME_BOUNDARY_FRAME_END_BIT_EXT
 * is bit 0). With newer headers their own definitions are used and this
 * adds nothing. Data only: how the layer provides the extension is in
 * layer_frame_boundary.h.
 */
#ifndef GPUTRACE_LAYER_FRAME_BOUNDARY_EXT_H
#define GPUTRACE_LAYER_FRAME_BOUNDARY_EXT_H

#include <vulkan/vulkan.h>

#ifndef VK_EXT_frame_boundary
#define VK_EXT_frame_boundary                                         1
#define VK_EXT_FRAME_BOUNDARY_SPEC_VERSION                            1
#define VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME                          "VK_EXT_frame_boundary"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT ((VkStructureType)1000375000)
#define VK_STRUCTURE_TYPE_FRAME_BOUNDARY_EXT                          ((VkStructureType)1000375001)

typedef enum VkFrameBoundaryFlagBitsEXT {
    VK_FRAME_BOUNDARY_FRAME_END_BIT_EXT = 0x00000001,
    VK_FRAME_BOUNDARY_FLAG_BITS_MAX_ENUM_EXT = 0x7FFFFFFF
} VkFrameBoundaryFlagBitsEXT;
typedef VkFlags VkFrameBoundaryFlagsEXT;

typedef struct VkPhysicalDeviceFrameBoundaryFeaturesEXT {
    VkStructureType sType;
    void *pNext;
    VkBool32 frameBoundary;
} VkPhysicalDeviceFrameBoundaryFeaturesEXT;

typedef struct VkFrameBoundaryEXT {
    VkStructureType sType;
    const void *pNext;
    VkFrameBoundaryFlagsEXT flags;
    uint64_t frameID;
    uint32_t imageCount;
    const VkImage *pImages;
    uint32_t bufferCount;
    const VkBuffer *pBuffers;
    uint64_t tagName;
    size_t tagSize;
    const void *pTag;
} VkFrameBoundaryEXT;
#endif

#endif
