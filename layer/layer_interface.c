/* SPDX-License-Identifier: MIT */
/* layer_interface.c — how the loader finds VK_LAYER_GPUTRACE_timeline.
 *
 * Owns interface negotiation (the only exported symbol) and the
 * vkGet*ProcAddr pair, which hand out the entry points of
 * layer_instance.c, layer_device.c and layer_hooks.c by the dispatch rules
 * (docs/layer.md). Instance and device chaining live in those files; the
 * timing feature is reached only through timeline.h, from them.
 */
#include <stddef.h>
#include <string.h>

#include <vulkan/vk_layer.h>

#include "layer/device_setup.h"
#include "layer/layer_device.h"
#include "layer/layer_hooks.h"
#include "layer/layer_info.h"
#include "layer/layer_instance.h"
#include "layer/layer_lookup.h"
#include "layer/timeline.h"

/* ---- proc addr --------------------------------------------------------- */

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL gt_GetInstanceProcAddr(VkInstance instance,
                                                                       const char *name);
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL gt_GetDeviceProcAddr(VkDevice device,
                                                                     const char *name);

/* Entry points that are how the layer takes part in the chain at all, or
 * that answer for the layer itself: returned whatever the next entity says,
 * also when the layer is disabled. */
static const struct {
    const char *name;
    PFN_vkVoidFunction fn;
    bool global; /* answered with any instance handle or none */
} always_instance[] = {
    /* The global ones also for an instance we do not know: the loader asks
    * for vkCreateInstance with the handle of the instance being created. */
    { "vkGetInstanceProcAddr", (PFN_vkVoidFunction)gt_GetInstanceProcAddr, true },
    { "vkCreateInstance", (PFN_vkVoidFunction)gt_CreateInstance, true },
    { "vkEnumerateInstanceLayerProperties", (PFN_vkVoidFunction)gt_EnumerateInstanceLayerProperties,
      true },
    { "vkEnumerateInstanceExtensionProperties",
      (PFN_vkVoidFunction)gt_EnumerateInstanceExtensionProperties, true },
    /* vkCreateDevice also without an instance: layers above us (MangoHud,
    * vkBasalt) look it up with a NULL instance while chaining device
    * creation. */
    { "vkCreateDevice", (PFN_vkVoidFunction)gt_CreateDevice, true },
    { "vkDestroyInstance", (PFN_vkVoidFunction)gt_DestroyInstance, false },
    { "vkEnumerateDeviceLayerProperties", (PFN_vkVoidFunction)gt_EnumerateDeviceLayerProperties,
      false },
    { "vkEnumerateDeviceExtensionProperties",
      (PFN_vkVoidFunction)gt_EnumerateDeviceExtensionProperties, false },
    { "vkGetDeviceProcAddr", (PFN_vkVoidFunction)gt_GetDeviceProcAddr, false },
    { "vkDestroyDevice", (PFN_vkVoidFunction)gt_DestroyDevice, false },
};

/* Instance-level hooks returned only if the next entity has the function.
 * vkDestroyInstance and vkEnumerateDeviceExtensionProperties are found in
 * always_instance first. */
#define GT_INSTANCE_HOOK_ENTRY(name) \
    { "vk" #name, (PFN_vkVoidFunction)gt_##name, offsetof(gt_instance_dispatch, name) },
static const gt_hook instance_hooks[] = { GT_INSTANCE_HOOKS(GT_INSTANCE_HOOK_ENTRY) };
#undef GT_INSTANCE_HOOK_ENTRY

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL gt_GetInstanceProcAddr(VkInstance instance,
                                                                       const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof always_instance / sizeof always_instance[0]; i++) {
        if (strcmp(always_instance[i].name, name) == 0)
            return instance != VK_NULL_HANDLE || always_instance[i].global ? always_instance[i].fn
                                                                           : NULL;
    }
    if (instance == VK_NULL_HANDLE)
        return NULL;
    gt_instance *inst = gt_instance_get(instance);
    if (!inst)
        return NULL;

    /* Physical-device tracking is plumbing: kept even when disabled. */
    for (size_t i = 0; i < sizeof instance_hooks / sizeof instance_hooks[0]; i++) {
        if (strcmp(instance_hooks[i].name, name) == 0)
            return gt_hook_next(&inst->vk, &instance_hooks[i]) ? instance_hooks[i].fn : NULL;
    }
    if (!inst->disabled) {
        /* Device-level names asked through the instance: there is no device
       * to ask, so follow the next entity's instance-level answer. It may
       * be non-NULL for a command no device enabled (the loader answers
       * the debug-utils commands for every instance): the hooks check
       * their device's table on every call (GT_HOOK_ENTER). The memory
       * hooks only where memory events can be wanted at all (as
       * vkGetDeviceProcAddr, below). */
        const gt_hook *hook = gt_device_hook_find(name);
        if (hook && !(gt_hook_is_memory(hook) && !tl_memory_events_possible()))
            return inst->next_gipa(instance, name) ? hook->fn : NULL;
    }
    return inst->next_gipa(instance, name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL gt_GetDeviceProcAddr(VkDevice device,
                                                                     const char *name)
{
    if (!name || device == VK_NULL_HANDLE)
        return NULL;
    if (strcmp(name, "vkGetDeviceProcAddr") == 0)
        return (PFN_vkVoidFunction)gt_GetDeviceProcAddr;
    if (strcmp(name, "vkDestroyDevice") == 0)
        return (PFN_vkVoidFunction)gt_DestroyDevice;
    gt_device *dev = gt_device_get(device);
    if (!dev)
        return NULL;
    /* Also when disabled: the extensions were added before we knew. */
    if (gt_device_setup_hides(dev, name))
        return NULL;
    if (!dev->disabled) {
        /* The device's own table, filled from the next entity's
       * vkGetDeviceProcAddr: what this device has enabled. The
       * debug-utils entries may come from its vkGetInstanceProcAddr
       * instead (fill_device_dispatch in layer_device.c); this lookup
       * still answers as the next entity's vkGetDeviceProcAddr does. */
        const gt_hook *hook = gt_device_hook_find(name);
        /* The memory hooks only where this device's memory is tracked:
        * elsewhere the next entity's function costs nothing. */
        if (hook && !(gt_hook_is_memory(hook) && !dev->memory_hooks))
            return gt_hook_next(&dev->vk, hook) && dev->next_gdpa(device, name) ? hook->fn : NULL;
    }
    return dev->next_gdpa(device, name);
}

/* ---- negotiation ------------------------------------------------------- */

VK_LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *version)
{
    if (!version || version->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT)
        return VK_ERROR_INITIALIZATION_FAILED;
    /* Version 2 is the first where this function is how the loader finds
    * the vkGet*ProcAddr pair; we export nothing else to fall back on. */
    if (version->loaderLayerInterfaceVersion < GT_LAYER_INTERFACE_VERSION)
        return VK_ERROR_INITIALIZATION_FAILED;
    version->loaderLayerInterfaceVersion = GT_LAYER_INTERFACE_VERSION;
    version->pfnGetInstanceProcAddr = gt_GetInstanceProcAddr;
    version->pfnGetDeviceProcAddr = gt_GetDeviceProcAddr;
    /* No physical-device-level entry points are intercepted. */
    version->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
