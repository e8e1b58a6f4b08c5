/* layer_interface.h — the layer's per-instance and per-device state and the
 * loader plumbing's services to the rest of the layer.
 *
 * layer_interface.c owns these objects: it creates them in vkCreateInstance
 * / vkCreateDevice after the call down succeeded, finds them from any
 * dispatchable handle, and frees them in vkDestroy*. The timeline code hangs
 * its own state off the `timeline` members and never frees these structs.
 */
#ifndef GPUTRACE_LAYER_INTERFACE_H
#define GPUTRACE_LAYER_INTERFACE_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "layer/layer_dispatch.h"
#include "layer/layer_map.h"

typedef struct gt_device_dispatch gt_device_dispatch;
typedef struct gt_instance_dispatch gt_instance_dispatch;
typedef struct gt_map_node gt_map_node;

#define GT_LAYER_NAME                   "VK_LAYER_GPUTRACE_timeline"
#define GT_LAYER_DESCRIPTION            "gputrace: timestamps GPU work and writes Perfetto traces"
#define GT_LAYER_IMPLEMENTATION_VERSION 1
#define GT_LAYER_INTERFACE_VERSION      2

/* VK_KHR_calibrated_timestamps is newer than the Vulkan headers on Debian 12;
 * its name is all the layer needs (the entry points have the EXT types). */
#ifndef VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME
#define VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME "VK_KHR_calibrated_timestamps"
#endif

/* How many device extensions the layer may add to vkCreateDevice
 * (device_setup.c: calibrated timestamps, host query reset). */
#define GT_MAX_LAYER_EXTENSIONS 2

/* Application allocator, copied because the application's struct need not
 * outlive the call that passed it. */
typedef struct gt_allocator gt_allocator;
struct gt_allocator {
    VkAllocationCallbacks callbacks;
    bool set;
};

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
    * it (layer_interface.c guards the list). */
    gt_physical_device *physical_devices;

    void *timeline; /* owned by timeline.c */
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

    /* What the layer made sure is enabled for the timing code; NONE when the
    * device cannot do it, or when the layer is disabled. */
    enum gt_calibrated_timestamps calibrated_timestamps;
    enum gt_host_query_reset host_query_reset;
    /* Device extensions the layer enabled for itself that the application
    * did not: vkGetDeviceProcAddr hides their commands
    * (gt_device_setup_hides). Static strings. */
    const char *layer_extensions[GT_MAX_LAYER_EXTENSIONS];
    uint32_t layer_extension_count;
    /* Resolved for whichever calibrated-timestamps extension is enabled. */
    PFN_vkGetCalibratedTimestampsEXT get_calibrated_timestamps;
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT get_time_domains;

    void *timeline; /* owned by timeline.c */
};

/* State for any handle created under an instance / device (a VkQueue or
 * VkCommandBuffer resolves to its VkDevice). NULL if unknown. */
gt_instance *gt_instance_get(const void *dispatchable);
gt_device *gt_device_get(const void *dispatchable);
gt_instance *gt_instance_of_physical_device(VkPhysicalDevice physical_device);

/* Allocation through the application's callbacks when it gave some. */
void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope);
void gt_free(const gt_allocator *alloc, void *ptr);
void gt_allocator_init(gt_allocator *alloc, const VkAllocationCallbacks *callbacks);

/* For the timing code: allocates command buffers for the layer's own use and
 * makes them dispatchable (loader data set). On failure nothing is left
 * allocated. */
VkResult gt_device_allocate_command_buffers(gt_device *dev, const VkCommandBufferAllocateInfo *info,
                                            VkCommandBuffer *out);

#endif
