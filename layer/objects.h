/* SPDX-License-Identifier: MIT */
/* objects.h — the layer's state per VkInstance, VkPhysicalDevice and
 * VkDevice. Data only: no functions here, and nothing to link.
 *
 * The loader plumbing creates these objects in vkCreateInstance /
 * vkCreateDevice after the call down succeeded (layer_instance.c,
 * layer_device.c), finds them from any dispatchable handle (layer_lookup.c)
 * and frees them in vkDestroy*. The timing feature receives them through
 * the calls of timeline.h, reads what it needs (the dispatch table `vk`,
 * the allocator, what device_setup.c enabled, the loader's
 * pfnSetDeviceLoaderData), hangs its own state off the `timeline` members
 * and never frees these structs.
 */
#ifndef GPUTRACE_LAYER_OBJECTS_H
#define GPUTRACE_LAYER_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "layer/alloc.h"
#include "layer/layer_dispatch.h"
#include "layer/layer_map.h"

/* VK_KHR_calibrated_timestamps is newer than the Vulkan headers on Debian 12;
 * its name is all the layer needs (the entry points have the EXT types). */
#ifndef VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME
#define VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME "VK_KHR_calibrated_timestamps"
#endif

/* How many device extensions the layer may add to vkCreateDevice
 * (device_setup.c: calibrated timestamps, host query reset). */
#define GT_MAX_LAYER_EXTENSIONS 2

typedef struct gt_physical_device gt_physical_device;

typedef struct gt_instance gt_instance;
struct gt_instance {
    gt_map_node node; /* keyed on the VkInstance's dispatch key */
    VkInstance handle;
    gt_allocator alloc;
    PFN_vkGetInstanceProcAddr next_gipa;
    gt_instance_dispatch vk;

    uint32_t api_version; /* VkApplicationInfo::apiVersion, 1.0 if absent */
    bool has_gpdp2;       /* VK_KHR_get_physical_device_properties2 enabled */
    bool disabled;        /* GPUTRACE_DISABLE: chain only, hook nothing */

    /* Every VkPhysicalDevice handed out through this instance, freed with
    * it (layer_lookup.c guards the list). */
    gt_physical_device *physical_devices;

    void *timeline; /* the timing feature's state (timeline.h), owned by it */
};

struct gt_physical_device {
    gt_map_node node; /* keyed on the VkPhysicalDevice handle */
    VkPhysicalDevice handle;
    gt_instance *instance;
    gt_physical_device *next_in_instance;
};

enum gt_calibrated_timestamps {
    GT_CALIBRATED_NONE,
    GT_CALIBRATED_EXT, /* VK_EXT_calibrated_timestamps enabled */
    GT_CALIBRATED_KHR, /* VK_KHR_calibrated_timestamps enabled */
};

enum gt_host_query_reset {
    GT_HOST_QUERY_RESET_NONE,
    GT_HOST_QUERY_RESET_CORE, /* Vulkan 1.2 feature: vkResetQueryPool */
    GT_HOST_QUERY_RESET_EXT,  /* VK_EXT_host_query_reset: vkResetQueryPoolEXT */
};

/* VK_EXT_frame_boundary on a device (layer_frame_boundary.h). */
enum gt_frame_boundary {
    GT_FB_OFF,      /* the application did not enable it */
    GT_FB_NATIVE,   /* enabled and provided below: passed through */
    GT_FB_EMULATED, /* enabled, provided by the layer: kept from what goes down */
};

typedef struct gt_device gt_device;
struct gt_device {
    gt_map_node node; /* keyed on the VkDevice's dispatch key */
    VkDevice handle;
    VkPhysicalDevice physical_device;
    gt_instance *instance;
    gt_allocator alloc;
    PFN_vkGetDeviceProcAddr next_gdpa;
    gt_device_dispatch vk;

    /* From the loader's VK_LOADER_DATA_CALLBACK: must be called on every
    * dispatchable object the layer itself creates (command buffers). */
    PFN_vkSetDeviceLoaderData set_loader_data;

    uint32_t api_version; /* min(instance's, physical device's); 0 if disabled */
    /* Pass-through: GPUTRACE_DISABLE, or the next entity lacks a Vulkan 1.0
    * function the layer needs (layer_dispatch.h, *_REQUIRED). Hooks that
    * are reached anyway (handed out through vkGetInstanceProcAddr) only
    * call down. */
    bool disabled;
    /* vkGetDeviceProcAddr hands out the layer's memory hooks
    * (GT_MEMORY_HOOKS): the timing feature tracks this device's memory
    * (tl_device_tracks_memory), decided at vkCreateDevice for the device's
    * life. Else the next entity's functions: no cost at all. */
    bool memory_hooks;

    /* What the layer made sure is enabled for the timing code; NONE when the
    * device cannot do it, or when the layer is disabled. */
    enum gt_calibrated_timestamps calibrated_timestamps;
    enum gt_host_query_reset host_query_reset;
    enum gt_frame_boundary frame_boundary;
    /* Device extensions the layer enabled for itself that the application
    * did not: vkGetDeviceProcAddr hides their commands
    * (gt_device_setup_hides). Static strings. */
    const char *layer_extensions[GT_MAX_LAYER_EXTENSIONS];
    uint32_t layer_extension_count;
    /* Resolved for whichever calibrated-timestamps extension is enabled. */
    PFN_vkGetCalibratedTimestampsEXT get_calibrated_timestamps;
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT get_time_domains;

    void *timeline; /* the timing feature's state (timeline.h), owned by it */
};

#endif
