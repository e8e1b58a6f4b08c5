/* SPDX-License-Identifier: MIT */
/* gpu_id.h — the machine-wide GPU number (prefix gid_): the same physical
 * GPU gets the same gpu_id in every process, distinct GPUs distinct ids,
 * small enough to index GpuInfo.gpus. Pure: the lists come from libdrm and
 * Vulkan in gpu_identity.c, or from a unit test.
 *
 * The scheme (docs/layer.md, "GPU identity"): the machine's DRM devices
 * that have a render node, sorted by bus (PCI domain:bus:device.function
 * first, then other buses by name), are ids 0..n-1. A Vulkan device is one
 * of them when its VK_EXT_physical_device_drm render (or primary) node, or
 * else its VK_EXT_pci_bus_info address, is theirs. Every other device
 * (lavapipe, a device libdrm does not list) comes after them, ranked by
 * device UUID among the instance's devices that are not DRM devices.
 */
#ifndef GPUTRACE_LAYER_GPU_ID_H
#define GPUTRACE_LAYER_GPU_ID_H

#include <stdbool.h>
#include <stdint.h>

#define GID_UUID_SIZE 16u

/* One device as libdrm lists it. */
typedef struct gid_drm_device gid_drm_device;
struct gid_drm_device {
    bool pci;
    uint16_t pci_domain;
    uint8_t pci_bus, pci_dev, pci_func;
    uint16_t vendor_id, device_id; /* PCI only; 0 when unknown */
    char bus_name[64];             /* other buses: a stable name to sort by */
    bool has_primary, has_render;
    uint32_t primary_major, primary_minor;
    uint32_t render_major, render_minor;
};

/* One Vulkan physical device as the layer sees it. */
typedef struct gid_vk_device gid_vk_device;
struct gid_vk_device {
    bool has_drm; /* VK_EXT_physical_device_drm answered */
    bool has_primary, has_render;
    uint32_t primary_major, primary_minor;
    uint32_t render_major, render_minor;
    bool has_pci; /* VK_EXT_pci_bus_info answered */
    uint16_t pci_domain;
    uint8_t pci_bus, pci_dev, pci_func;
    uint8_t uuid[GID_UUID_SIZE];
};

/* Keeps the devices with a render node, sorted into gpu_id order; returns
 * how many are kept (at the front of `devs`). */
uint32_t gid_order_drm(gid_drm_device *devs, uint32_t n);

/* The position in the ordered list of the DRM device `vk` is, or -1. */
int32_t gid_match_drm(const gid_drm_device *drm, uint32_t ndrm, const gid_vk_device *vk);

/* gpu_id of `self`: its DRM position, else ndrm + its rank by UUID among
 * the distinct UUIDs of the devices of `all` that are no DRM device
 * (`self` counts as one of them whether or not it is in `all`). */
uint32_t gid_assign(const gid_drm_device *drm, uint32_t ndrm, const gid_vk_device *self,
                    const gid_vk_device *all, uint32_t nall);

/* The device of `all` (first with that UUID) that has id `gpu_id` >= ndrm,
 * or -1. */
int32_t gid_non_drm_at(const gid_drm_device *drm, uint32_t ndrm, const gid_vk_device *all,
                       uint32_t nall, uint32_t gpu_id);

#endif
