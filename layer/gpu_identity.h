/* SPDX-License-Identifier: MIT */
/* gpu_identity.h — which GPU of the machine a VkDevice runs on, and what
 * the trace says about it (prefix gi_): the machine-wide gpu_id (gpu_id.h,
 * from libdrm's device list and the device's VK_EXT_physical_device_drm or
 * VK_EXT_pci_bus_info) and the GpuInfo entries up to that id.
 *
 * Called at vkCreateDevice on the application's thread: reads sysfs through
 * libdrm and asks the next entity about the instance's physical devices.
 * Never fails: without libdrm's list every device is ranked by UUID.
 */
#ifndef GPUTRACE_LAYER_GPU_IDENTITY_H
#define GPUTRACE_LAYER_GPU_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/emit_context.h"
#include "layer/objects.h"

typedef struct gi_gpu gi_gpu;

typedef struct gi_identity gi_identity;
struct gi_identity {
    uint32_t gpu_id;
    /* GpuInfo: entries 0..gpu_id (the others with what libdrm or Vulkan
     * tells about them), or none when memory ran out. */
    emc_gpu *gpus;
    uint32_t ngpus;
    gi_gpu *store; /* what `gpus` points into */
    /* The device's DRM render node "major:minor", or "". */
    char drm_node[24];
};

/* Fills `id` for physical device `pd` of `inst`. */
void gi_identify(gi_identity *id, const gt_instance *inst, VkPhysicalDevice pd,
                 const gt_allocator *alloc);
void gi_finish(gi_identity *id, const gt_allocator *alloc);

/* A readable vendor for a PCI or Khronos vendor id ("AMD", "Mesa"), else
 * the id in hex. */
void gi_vendor_name(uint32_t vendor_id, char *out, size_t size);

#endif
