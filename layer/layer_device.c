/* SPDX-License-Identifier: MIT */
/* layer_device.c — see layer_device.h. */
#include "layer/layer_device.h"

#include "layer/device_setup.h"
#include "layer/layer_lookup.h"
#include "layer/log.h"
#include "layer/timeline.h"

/* As instance_chain_info in layer_instance.c: the link is advanced in
 * place. */
static VkLayerDeviceCreateInfo *device_chain_info(const VkDeviceCreateInfo *info,
                                                  VkLayerFunction function)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType != VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO)
            continue;
        VkLayerDeviceCreateInfo *ci = (VkLayerDeviceCreateInfo *)(void *)s;
        if (ci->function == function)
            return ci;
    }
    return NULL;
}

/* ---- device ------------------------------------------------------------ */

static void fill_device_dispatch(gt_device *dev)
{
#define GT_FILL(name) dev->vk.name = (PFN_vk##name)dev->next_gdpa(dev->handle, "vk" #name);
    GT_DEVICE_HOOKS(GT_FILL)
    GT_DEVICE_CALLS(GT_FILL)
#undef GT_FILL

    const gt_instance *inst = dev->instance;
    /* VK_EXT_debug_utils is an instance extension, and a layer below may
     * hand out its device commands through vkGetInstanceProcAddr only: the
     * Khronos validation layer (1.3.239) answers NULL to vkGetDeviceProcAddr
     * for them, and the loader, at the top of the chain, takes them from
     * vkGetInstanceProcAddr too (even when the application did not enable
     * the extension, which the validation layer provides: libplacebo names
     * its objects that way). Without this the names and labels the
     * application gives would stop here (a hook with nothing to call
     * returns, see GT_HOOK_ENTER in layer_hooks.c), under exactly the layer
     * that reports objects by those names, and the label regions would go
     * untimed. */
#define GT_FILL_FROM_INSTANCE(name) \
    if (!dev->vk.name)              \
        dev->vk.name = (PFN_vk##name)inst->next_gipa(inst->handle, "vk" #name);
    GT_FILL_FROM_INSTANCE(SetDebugUtilsObjectNameEXT)
    GT_FILL_FROM_INSTANCE(CmdBeginDebugUtilsLabelEXT)
    GT_FILL_FROM_INSTANCE(CmdEndDebugUtilsLabelEXT)
    GT_FILL_FROM_INSTANCE(CmdInsertDebugUtilsLabelEXT)
#undef GT_FILL_FROM_INSTANCE
    if (dev->calibrated_timestamps == GT_CALIBRATED_KHR) {
        dev->get_calibrated_timestamps = (PFN_vkGetCalibratedTimestampsEXT)dev->next_gdpa(
            dev->handle, "vkGetCalibratedTimestampsKHR");
        dev->get_time_domains = (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)inst->next_gipa(
            inst->handle, "vkGetPhysicalDeviceCalibrateableTimeDomainsKHR");
    } else if (dev->calibrated_timestamps == GT_CALIBRATED_EXT) {
        dev->get_calibrated_timestamps = dev->vk.GetCalibratedTimestampsEXT;
        dev->get_time_domains = inst->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT;
    }
}

static const char *device_lacks(const gt_device *dev)
{
#define GT_LACKS(name) \
    if (!dev->vk.name) \
        return "vk" #name;
    GT_DEVICE_HOOKS_REQUIRED(GT_LACKS)
    GT_OBJECT_HOOKS_REQUIRED(GT_LACKS)
    GT_DEVICE_CALLS_REQUIRED(GT_LACKS)
#undef GT_LACKS
    return NULL;
}

static const char *const calibrated_names[] = {
    [GT_CALIBRATED_NONE] = "none",
    [GT_CALIBRATED_EXT] = "VK_EXT_calibrated_timestamps",
    [GT_CALIBRATED_KHR] = "VK_KHR_calibrated_timestamps",
};
static const char *const host_query_reset_names[] = {
    [GT_HOST_QUERY_RESET_NONE] = "none",
    [GT_HOST_QUERY_RESET_CORE] = "core",
    [GT_HOST_QUERY_RESET_EXT] = "VK_EXT_host_query_reset",
};

VKAPI_ATTR VkResult VKAPI_CALL gt_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *info,
                                               const VkAllocationCallbacks *callbacks,
                                               VkDevice *device)
{
    VkResult res;
    gt_instance *inst = gt_instance_of_physical_device(pd);
    VkLayerDeviceCreateInfo *chain = device_chain_info(info, VK_LAYER_LINK_INFO);
    VkLayerDeviceCreateInfo *loader_data = device_chain_info(info, VK_LOADER_DATA_CALLBACK);
    if (!inst || !chain || !chain->u.pLayerInfo)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr next_gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr next_gdpa = chain->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    PFN_vkCreateDevice next_create = (PFN_vkCreateDevice)next_gipa(inst->handle, "vkCreateDevice");
    if (!next_create)
        return VK_ERROR_INITIALIZATION_FAILED;

    gt_allocator alloc;
    gt_allocator_init(&alloc, callbacks);
    gt_device *dev = gt_zalloc(&alloc, sizeof *dev, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!dev)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    dev->alloc = alloc;
    dev->instance = inst;
    dev->physical_device = pd;
    dev->next_gdpa = next_gdpa;
    dev->disabled = inst->disabled;
    dev->set_loader_data = loader_data ? loader_data->u.pfnSetDeviceLoaderData : NULL;

    /* The next layer must find its own link, not ours; advance before the
    * create info is copied so the copy carries the advanced link. */
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;

    gt_device_setup setup;
    const VkDeviceCreateInfo *down = info;
    if (!dev->disabled) {
        res = gt_device_setup_prepare(&setup, inst, pd, info, &alloc);
        if (res != VK_SUCCESS)
            goto fail_free;
        down = &setup.info;
        dev->api_version = setup.api_version;
        dev->calibrated_timestamps = setup.calibrated_timestamps;
        dev->host_query_reset = setup.host_query_reset;
        dev->frame_boundary = setup.frame_boundary;
        for (uint32_t i = 0; i < setup.added_count; i++)
            dev->layer_extensions[i] = setup.added[i];
        dev->layer_extension_count = setup.added_count;
    }

    res = next_create(pd, down, callbacks, device);
    if (!dev->disabled)
        gt_device_setup_release(&setup, &alloc);
    if (res != VK_SUCCESS)
        goto fail_free;

    dev->handle = *device;
    fill_device_dispatch(dev);
    if (!dev->vk.DestroyDevice) {
        gt_error("next layer returned no vkDestroyDevice");
        res = VK_ERROR_INITIALIZATION_FAILED;
        goto fail_free;
    }
    const char *lacking = dev->disabled ? NULL : device_lacks(dev);
    if (lacking) {
        /* Extensions the layer added stay enabled (and hidden): the device
       * exists now, only the timing is off. */
        gt_warn("device %p: next layer has no %s: passing this device's calls through",
                (void *)*device, lacking);
        dev->disabled = true;
    }

    if (!dev->disabled) {
        res = tl_device_init(dev);
        if (res != VK_SUCCESS)
            goto fail_destroy;
        /* Before the device is registered: no lookup can see it change. */
        dev->memory_hooks = tl_device_tracks_memory(dev);
    }

    if (!gt_device_register(dev)) {
        gt_error("device %p is already known", (void *)*device);
        res = VK_ERROR_INITIALIZATION_FAILED;
        goto fail_timeline;
    }

    if (!dev->disabled)
        gt_info("device %p: Vulkan %u.%u, calibrated timestamps: %s, host query reset: %s",
                (void *)*device, VK_API_VERSION_MAJOR(dev->api_version),
                VK_API_VERSION_MINOR(dev->api_version),
                calibrated_names[dev->calibrated_timestamps],
                host_query_reset_names[dev->host_query_reset]);
    return VK_SUCCESS;

fail_timeline:
    if (!dev->disabled)
        tl_device_finish(dev);
fail_destroy:
    dev->vk.DestroyDevice(*device, callbacks);
fail_free:
    gt_free(&alloc, dev);
    return res;
}

VKAPI_ATTR void VKAPI_CALL gt_DestroyDevice(VkDevice device, const VkAllocationCallbacks *callbacks)
{
    if (device == VK_NULL_HANDLE)
        return;
    gt_device *dev = gt_device_unregister(device);
    if (!dev) {
        gt_error("vkDestroyDevice: device %p unknown to the layer", (void *)device);
        return;
    }
    if (!dev->disabled)
        tl_device_finish(dev);
    dev->vk.DestroyDevice(device, callbacks);
    gt_allocator alloc = dev->alloc;
    gt_free(&alloc, dev);
}
