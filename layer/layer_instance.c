/* SPDX-License-Identifier: MIT */
/* layer_instance.c — see layer_instance.h. */
#include "layer/layer_instance.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "layer/config.h"
#include "layer/layer_frame_boundary.h"
#include "layer/layer_info.h"
#include "layer/layer_lookup.h"
#include "layer/log.h"
#include "layer/settings.h"
#include "layer/timeline.h"

/* ---- loader chain info ------------------------------------------------- */

/* The loader's structures are const only by declaration: advancing the link
 * in place is how the next layer finds its own entry. */
static VkLayerInstanceCreateInfo *instance_chain_info(const VkInstanceCreateInfo *info,
                                                      VkLayerFunction function)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType != VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO)
            continue;
        VkLayerInstanceCreateInfo *ci = (VkLayerInstanceCreateInfo *)(void *)s;
        if (ci->function == function)
            return ci;
    }
    return NULL;
}

/* ---- introspection ----------------------------------------------------- */

static VkResult fill_layer_properties(uint32_t *count, VkLayerProperties *props)
{
    if (!props) {
        *count = 1;
        return VK_SUCCESS;
    }
    if (*count < 1)
        return VK_INCOMPLETE;
    *count = 1;
    memset(props, 0, sizeof *props);
    strncpy(props->layerName, GT_LAYER_NAME, sizeof props->layerName - 1);
    strncpy(props->description, GT_LAYER_DESCRIPTION, sizeof props->description - 1);
    props->specVersion = VK_HEADER_VERSION_COMPLETE;
    props->implementationVersion = GT_LAYER_IMPLEMENTATION_VERSION;
    return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateInstanceLayerProperties(uint32_t *count,
                                                                   VkLayerProperties *props)
{
    return fill_layer_properties(count, props);
}

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateDeviceLayerProperties(VkPhysicalDevice pd,
                                                                 uint32_t *count,
                                                                 VkLayerProperties *props)
{
    (void)pd;
    return fill_layer_properties(count, props);
}

/* The layer's own extensions, as its manifest lists them:
 * VK_EXT_tooling_info (it answers vkGetPhysicalDeviceToolPropertiesEXT),
 * VK_EXT_frame_boundary (provided where nothing below has it:
 * layer_frame_boundary.h) and,
 * with headers from 1.3.272 on, VK_EXT_layer_settings (it reads
 * VkLayerSettingsCreateInfoEXT). */
#if VK_HEADER_VERSION >= 272 /* 1.3.272, VK_HEADER_VERSION keeps counting in 1.4 */
static const VkExtensionProperties own_instance_extensions[] = {
    { VK_EXT_LAYER_SETTINGS_EXTENSION_NAME, VK_EXT_LAYER_SETTINGS_SPEC_VERSION },
};
#define OWN_INSTANCE_EXTENSIONS (sizeof own_instance_extensions / sizeof own_instance_extensions[0])
#else
/* Older loaders (Debian 12's 1.3.239) refuse an instance extension they do
 * not know, and programs enable what is listed: not listed, as in the
 * manifest (manifests/gen_manifest.py). The structure is read anyway. */
static const VkExtensionProperties *const own_instance_extensions = NULL;
#define OWN_INSTANCE_EXTENSIONS 0u
#endif
static const VkExtensionProperties own_device_extensions[] = {
    { VK_EXT_TOOLING_INFO_EXTENSION_NAME, VK_EXT_TOOLING_INFO_SPEC_VERSION },
    { VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME, VK_EXT_FRAME_BOUNDARY_SPEC_VERSION },
};

/* The count/fill idiom over a fixed list. */
static VkResult fill_extensions(const VkExtensionProperties *own, uint32_t n, uint32_t *count,
                                VkExtensionProperties *props)
{
    if (!props) {
        *count = n;
        return VK_SUCCESS;
    }
    uint32_t copied = *count < n ? *count : n;
    if (copied)
        memcpy(props, own, copied * sizeof *own);
    *count = copied;
    return copied < n ? VK_INCOMPLETE : VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateInstanceExtensionProperties(const char *layer,
                                                                       uint32_t *count,
                                                                       VkExtensionProperties *props)
{
    if (!layer || strcmp(layer, GT_LAYER_NAME) != 0)
        return VK_ERROR_LAYER_NOT_PRESENT;
    return fill_extensions(own_instance_extensions, OWN_INSTANCE_EXTENSIONS, count, props);
}

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateDeviceExtensionProperties(VkPhysicalDevice pd,
                                                                     const char *layer,
                                                                     uint32_t *count,
                                                                     VkExtensionProperties *props)
{
    if (layer && strcmp(layer, GT_LAYER_NAME) == 0)
        return fill_extensions(own_device_extensions,
                               sizeof own_device_extensions / sizeof own_device_extensions[0],
                               count, props);
    gt_instance *inst = gt_instance_of_physical_device(pd);
    if (!inst || !inst->vk.EnumerateDeviceExtensionProperties)
        return VK_ERROR_INITIALIZATION_FAILED;
    /* The device's own list, with VK_EXT_frame_boundary, which the layer
     * provides where nothing below does. */
    if (!layer && !inst->disabled)
        return gt_fb_enumerate_device_extensions(inst, pd, count, props);
    return inst->vk.EnumerateDeviceExtensionProperties(pd, layer, count, props);
}

static void get_features2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2 *features, bool khr)
{
    gt_instance *inst = gt_instance_of_physical_device(pd);
    if (!inst)
        return;
    if (inst->disabled) {
        PFN_vkGetPhysicalDeviceFeatures2 next =
            khr ? inst->vk.GetPhysicalDeviceFeatures2KHR : inst->vk.GetPhysicalDeviceFeatures2;
        if (next)
            next(pd, features);
        return;
    }
    gt_fb_get_features2(inst, pd, features, khr);
}

VKAPI_ATTR void VKAPI_CALL gt_GetPhysicalDeviceFeatures2(VkPhysicalDevice pd,
                                                         VkPhysicalDeviceFeatures2 *features)
{
    get_features2(pd, features, false);
}

VKAPI_ATTR void VKAPI_CALL gt_GetPhysicalDeviceFeatures2KHR(VkPhysicalDevice pd,
                                                            VkPhysicalDeviceFeatures2 *features)
{
    get_features2(pd, features, true);
}

/* ---- tooling info ------------------------------------------------------ */

static void describe_self(VkPhysicalDeviceToolProperties *tool)
{
    void *next = tool->pNext;
    memset(tool, 0, sizeof *tool);
    tool->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES;
    tool->pNext = next;
    strncpy(tool->name, GT_LAYER_TOOL_NAME, sizeof tool->name - 1);
    snprintf(tool->version, sizeof tool->version, "%d", GT_LAYER_IMPLEMENTATION_VERSION);
    tool->purposes = VK_TOOL_PURPOSE_TRACING_BIT | VK_TOOL_PURPOSE_PROFILING_BIT;
    strncpy(tool->description, GT_LAYER_DESCRIPTION, sizeof tool->description - 1);
    strncpy(tool->layer, GT_LAYER_NAME, sizeof tool->layer - 1);
}

/* Ourselves first, then what the next entity reports through the same
 * entry point, else the other (a layer below may list itself through one
 * only: Debian 12's validation layer answers the EXT alias); neither:
 * ourselves only. */
static VkResult tool_properties(VkPhysicalDevice pd, uint32_t *count,
                                VkPhysicalDeviceToolProperties *tools, bool ext)
{
    gt_instance *inst = gt_instance_of_physical_device(pd);
    PFN_vkGetPhysicalDeviceToolProperties next = NULL;
    if (inst) {
        PFN_vkGetPhysicalDeviceToolProperties core = inst->vk.GetPhysicalDeviceToolProperties;
        PFN_vkGetPhysicalDeviceToolPropertiesEXT alias =
            inst->vk.GetPhysicalDeviceToolPropertiesEXT;
        next = ext ? (alias ? alias : core) : (core ? core : alias);
    }
    if (inst && inst->disabled) {
        /* Passing through: as if the layer were not there. */
        return next ? next(pd, count, tools) : VK_ERROR_EXTENSION_NOT_PRESENT;
    }
    if (!tools) {
        uint32_t theirs = 0;
        VkResult res = next ? next(pd, &theirs, NULL) : VK_SUCCESS;
        if (res < 0)
            return res;
        *count = theirs + 1;
        return VK_SUCCESS;
    }
    if (*count == 0)
        return VK_INCOMPLETE;
    describe_self(&tools[0]);
    uint32_t room = *count - 1, theirs = 0;
    VkResult res = VK_SUCCESS;
    if (next && room > 0) {
        theirs = room;
        res = next(pd, &theirs, tools + 1);
        if (res < 0)
            return res;
    } else if (next) {
        /* Room for ourselves only: incomplete if there is more below. */
        uint32_t below = 0;
        if (next(pd, &below, NULL) >= 0 && below > 0)
            res = VK_INCOMPLETE;
    }
    *count = theirs + 1;
    return res;
}

VKAPI_ATTR VkResult VKAPI_CALL gt_GetPhysicalDeviceToolProperties(
    VkPhysicalDevice pd, uint32_t *count, VkPhysicalDeviceToolProperties *tools)
{
    return tool_properties(pd, count, tools, false);
}

VKAPI_ATTR VkResult VKAPI_CALL gt_GetPhysicalDeviceToolPropertiesEXT(
    VkPhysicalDevice pd, uint32_t *count, VkPhysicalDeviceToolProperties *tools)
{
    return tool_properties(pd, count, tools, true);
}

/* ---- instance ---------------------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDevices(VkInstance instance, uint32_t *count,
                                                           VkPhysicalDevice *handles)
{
    gt_instance *inst = gt_instance_get(instance);
    if (!inst || !inst->vk.EnumeratePhysicalDevices)
        return VK_ERROR_INITIALIZATION_FAILED;
    VkResult res = inst->vk.EnumeratePhysicalDevices(instance, count, handles);
    if ((res == VK_SUCCESS || res == VK_INCOMPLETE) && handles) {
        VkResult tracked = gt_physical_devices_track(inst, *count, handles);
        if (tracked != VK_SUCCESS)
            return tracked;
    }
    return res;
}

static VkResult enumerate_groups(VkInstance instance, uint32_t *count,
                                 VkPhysicalDeviceGroupProperties *groups, bool khr)
{
    gt_instance *inst = gt_instance_get(instance);
    if (!inst)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkEnumeratePhysicalDeviceGroups next =
        khr ? inst->vk.EnumeratePhysicalDeviceGroupsKHR : inst->vk.EnumeratePhysicalDeviceGroups;
    /* Handed out only where the next entity has it, but a pointer fetched
    * from one instance may be called with another. */
    if (!next)
        return VK_ERROR_EXTENSION_NOT_PRESENT;
    VkResult res = next(instance, count, groups);
    if ((res == VK_SUCCESS || res == VK_INCOMPLETE) && groups) {
        for (uint32_t i = 0; i < *count; i++) {
            VkResult tracked = gt_physical_devices_track(inst, groups[i].physicalDeviceCount,
                                                         groups[i].physicalDevices);
            if (tracked != VK_SUCCESS)
                return tracked;
        }
    }
    return res;
}

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDeviceGroups(
    VkInstance instance, uint32_t *count, VkPhysicalDeviceGroupProperties *groups)
{
    return enumerate_groups(instance, count, groups, false);
}

VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDeviceGroupsKHR(
    VkInstance instance, uint32_t *count, VkPhysicalDeviceGroupProperties *groups)
{
    return enumerate_groups(instance, count, groups, true);
}

static void fill_instance_dispatch(gt_instance *inst)
{
#define GT_FILL(name) inst->vk.name = (PFN_vk##name)inst->next_gipa(inst->handle, "vk" #name);
    GT_INSTANCE_HOOKS(GT_FILL)
    GT_INSTANCE_CALLS(GT_FILL)
#undef GT_FILL
}

/* The first Vulkan 1.0 function the layer needs from the next entity that
 * it does not have, or NULL. */
static const char *instance_lacks(const gt_instance *inst)
{
#define GT_LACKS(name)  \
    if (!inst->vk.name) \
        return "vk" #name;
    GT_INSTANCE_HOOKS_REQUIRED(GT_LACKS)
    GT_INSTANCE_CALLS_REQUIRED(GT_LACKS)
#undef GT_LACKS
    return NULL;
}

static bool instance_enables(const VkInstanceCreateInfo *info, const char *name)
{
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++) {
        if (strcmp(info->ppEnabledExtensionNames[i], name) == 0)
            return true;
    }
    return false;
}

VKAPI_ATTR VkResult VKAPI_CALL gt_CreateInstance(const VkInstanceCreateInfo *info,
                                                 const VkAllocationCallbacks *callbacks,
                                                 VkInstance *instance)
{
    VkResult res;
    VkLayerInstanceCreateInfo *chain = instance_chain_info(info, VK_LAYER_LINK_INFO);
    if (!chain || !chain->u.pLayerInfo)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr next_gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkCreateInstance next_create =
        (PFN_vkCreateInstance)next_gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (!next_create)
        return VK_ERROR_INITIALIZATION_FAILED;

    gt_allocator alloc;
    gt_allocator_init(&alloc, callbacks);
    gt_instance *inst = gt_zalloc(&alloc, sizeof *inst, VK_SYSTEM_ALLOCATION_SCOPE_INSTANCE);
    if (!inst)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    inst->alloc = alloc;
    inst->next_gipa = next_gipa;
    inst->disabled = gt_config_instance(info->pNext);
    inst->api_version = info->pApplicationInfo && info->pApplicationInfo->apiVersion
                            ? info->pApplicationInfo->apiVersion
                            : VK_API_VERSION_1_0;
    inst->has_gpdp2 =
        instance_enables(info, VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME);

    /* The next layer must find its own link, not ours. */
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    res = next_create(info, callbacks, instance);
    if (res != VK_SUCCESS)
        goto fail_free;

    inst->handle = *instance;
    fill_instance_dispatch(inst);
    if (!inst->vk.DestroyInstance) {
        /* Cannot happen with a working loader; without it we could not even
       * undo the creation, so leak rather than crash. */
        gt_error("next layer returned no vkDestroyInstance");
        res = VK_ERROR_INITIALIZATION_FAILED;
        goto fail_free;
    }

    const char *lacking = inst->disabled ? NULL : instance_lacks(inst);
    if (lacking) {
        /* A broken layer below us: stay in the chain, touch nothing. */
        gt_warn("next layer has no %s: passing this instance's calls through", lacking);
        inst->disabled = true;
    }

    if (!inst->disabled) {
        res = tl_instance_init(inst);
        if (res != VK_SUCCESS)
            goto fail_destroy;
    }

    if (!gt_instance_register(inst)) {
        gt_error("instance %p is already known", (void *)*instance);
        res = VK_ERROR_INITIALIZATION_FAILED;
        goto fail_timeline;
    }

    if (inst->disabled && !lacking)
        gt_info("layer disabled by GPUTRACE_DISABLE: passing calls through (pid %d)",
                (int)getpid());
    else if (!inst->disabled)
        gt_info("layer active (pid %d, %s %d, Vulkan %u.%u requested)", (int)getpid(),
                GT_LAYER_NAME, GT_LAYER_IMPLEMENTATION_VERSION,
                VK_API_VERSION_MAJOR(inst->api_version), VK_API_VERSION_MINOR(inst->api_version));
    return VK_SUCCESS;

fail_timeline:
    if (!inst->disabled)
        tl_instance_finish(inst);
fail_destroy:
    inst->vk.DestroyInstance(*instance, callbacks);
fail_free:
    gt_free(&alloc, inst);
    return res;
}

VKAPI_ATTR void VKAPI_CALL gt_DestroyInstance(VkInstance instance,
                                              const VkAllocationCallbacks *callbacks)
{
    if (instance == VK_NULL_HANDLE)
        return;
    gt_instance *inst = gt_instance_unregister(instance);
    if (!inst) {
        gt_error("vkDestroyInstance: instance %p unknown to the layer", (void *)instance);
        return;
    }
    if (!inst->disabled)
        tl_instance_finish(inst);
    gt_physical_devices_forget(inst);
    inst->vk.DestroyInstance(instance, callbacks);
    gt_allocator alloc = inst->alloc;
    gt_free(&alloc, inst);
}
