/* SPDX-License-Identifier: MIT */
/* device_setup.h — what the layer adds to vkCreateDevice for the timing code.
 *
 * Timestamps need calibrated timestamps (to put GPU ticks on the host
 * clock) and host query reset (to recycle query pools without recording a
 * reset). When the physical device supports them and the application did
 * not already ask, this builds an amended copy of the application's
 * VkDeviceCreateInfo to pass down; the application's structures are never
 * written. Copies live until gt_device_setup_release, i.e. for the duration
 * of the call down. It also keeps VK_EXT_frame_boundary (name and feature
 * structure) from going down when the layer provides it
 * (layer_frame_boundary.h).
 */
#ifndef GPUTRACE_LAYER_DEVICE_SETUP_H
#define GPUTRACE_LAYER_DEVICE_SETUP_H

#include "layer/objects.h"

typedef struct gt_allocator gt_allocator;
typedef struct gt_device gt_device;
typedef struct gt_instance gt_instance;

/* A pNext chain is cloned only up to the structure that is changed; deeper
 * chains than this are left alone. */
#define GT_SETUP_MAX_CLONES 32

typedef struct gt_device_setup gt_device_setup;
struct gt_device_setup {
    VkDeviceCreateInfo info; /* what to pass down */

    enum gt_calibrated_timestamps calibrated_timestamps;
    enum gt_host_query_reset host_query_reset;
    enum gt_frame_boundary frame_boundary; /* layer_frame_boundary.h */
    uint32_t api_version;                  /* min(instance, physical device) */
    /* Extensions added to the application's list (static strings). */
    const char *added[GT_MAX_LAYER_EXTENSIONS];
    uint32_t added_count;

    /* Owned copies, released by gt_device_setup_release. */
    const char **extension_names;
    void *clones[GT_SETUP_MAX_CLONES];
    uint32_t clone_count;
    /* Prepended to the chain when the application passed no structure
    * carrying hostQueryReset. */
    VkPhysicalDeviceHostQueryResetFeatures host_query_reset_features;
};

/* Fills *setup (which must not move until released). Fails only on
 * VK_ERROR_OUT_OF_HOST_MEMORY; anything the device cannot do is simply not
 * enabled. */
VkResult gt_device_setup_prepare(gt_device_setup *setup, const gt_instance *inst,
                                 VkPhysicalDevice physical_device,
                                 const VkDeviceCreateInfo *app_info, const gt_allocator *alloc);

void gt_device_setup_release(gt_device_setup *setup, const gt_allocator *alloc);

/* Whether `name` is a command of a device extension the layer enabled for
 * itself on this device (dev->layer_extensions). vkGetDeviceProcAddr must
 * answer NULL for it, as it would without the layer: the application did
 * not enable the extension, so the command does not exist for it. */
bool gt_device_setup_hides(const gt_device *dev, const char *name);

#endif
