/* layer_interface.c — loader plumbing for VK_LAYER_GPUTRACE_timeline.
 *
 * Owns: interface negotiation (the only exported symbol), the
 * vkGet*ProcAddr pair, instance and device creation/destruction chaining,
 * the layer's introspection (enumerate) functions, the maps from handles to
 * gt_instance / gt_device / gt_physical_device, and the application-allocator
 * helpers. Everything the timing feature does happens behind timeline.h.
 */
#include "layer/layer_interface.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer/config.h"
#include "layer/device_setup.h"
#include "layer/log.h"
#include "layer/timeline.h"

static gt_map instances = GT_MAP_INITIALIZER;
static gt_map devices = GT_MAP_INITIALIZER;
/* Keyed on the VkPhysicalDevice handle itself; entries are owned by their
 * instance. Enumeration may run on several threads at once: tracking (find,
 * insert, link into the instance's list) happens under one lock. */
static gt_map physical_devices = GT_MAP_INITIALIZER;
static pthread_mutex_t physical_devices_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- allocation -------------------------------------------------------- */

void gt_allocator_init(gt_allocator *alloc, const VkAllocationCallbacks *callbacks)
{
    alloc->set = callbacks != NULL;
    if (callbacks)
        alloc->callbacks = *callbacks;
    else
        memset(&alloc->callbacks, 0, sizeof alloc->callbacks);
}

void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope)
{
    void *p;
    if (alloc && alloc->set)
        p = alloc->callbacks.pfnAllocation(alloc->callbacks.pUserData, size, alignof(max_align_t),
                                           scope);
    else
        p = malloc(size);
    if (p)
        memset(p, 0, size);
    return p;
}

void gt_free(const gt_allocator *alloc, void *ptr)
{
    if (!ptr)
        return;
    if (alloc && alloc->set)
        alloc->callbacks.pfnFree(alloc->callbacks.pUserData, ptr);
    else
        free(ptr);
}

/* ---- lookups ----------------------------------------------------------- */

gt_instance *gt_instance_get(const void *dispatchable)
{
    gt_map_node *n = gt_map_find(&instances, gt_dispatch_key(dispatchable));
    return n ? gt_container_of(n, gt_instance, node) : NULL;
}

gt_device *gt_device_get(const void *dispatchable)
{
    gt_map_node *n = gt_map_find(&devices, gt_dispatch_key(dispatchable));
    return n ? gt_container_of(n, gt_device, node) : NULL;
}

gt_instance *gt_instance_of_physical_device(VkPhysicalDevice physical_device)
{
    gt_map_node *n = gt_map_find(&physical_devices, physical_device);
    if (n)
        return gt_container_of(n, gt_physical_device, node)->instance;
    /* Not enumerated through us (a layer above made it up?). With the
    * Khronos loader, physical devices carry their instance's dispatch key. */
    return gt_instance_get(physical_device);
}

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

static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateInstanceLayerProperties(uint32_t *count,
                                                                          VkLayerProperties *props)
{
    return fill_layer_properties(count, props);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateDeviceLayerProperties(VkPhysicalDevice pd,
                                                                        uint32_t *count,
                                                                        VkLayerProperties *props)
{
    (void)pd;
    return fill_layer_properties(count, props);
}

/* The layer exposes no extensions of its own. */
static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateInstanceExtensionProperties(
    const char *layer, uint32_t *count, VkExtensionProperties *props)
{
    (void)props;
    if (!layer || strcmp(layer, GT_LAYER_NAME) != 0)
        return VK_ERROR_LAYER_NOT_PRESENT;
    *count = 0;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumerateDeviceExtensionProperties(
    VkPhysicalDevice pd, const char *layer, uint32_t *count, VkExtensionProperties *props)
{
    if (layer && strcmp(layer, GT_LAYER_NAME) == 0) {
        *count = 0;
        return VK_SUCCESS;
    }
    gt_instance *inst = gt_instance_of_physical_device(pd);
    if (!inst || !inst->vk.EnumerateDeviceExtensionProperties)
        return VK_ERROR_INITIALIZATION_FAILED;
    return inst->vk.EnumerateDeviceExtensionProperties(pd, layer, count, props);
}

/* ---- instance ---------------------------------------------------------- */

static void free_physical_devices(gt_instance *inst)
{
    pthread_mutex_lock(&physical_devices_lock);
    gt_physical_device *pd = inst->physical_devices;
    while (pd) {
        gt_physical_device *next = pd->next_in_instance;
        gt_map_remove(&physical_devices, pd->handle);
        gt_free(&inst->alloc, pd);
        pd = next;
    }
    inst->physical_devices = NULL;
    pthread_mutex_unlock(&physical_devices_lock);
}

/* Remembers which instance handed out these physical devices. */
static VkResult track_physical_devices(gt_instance *inst, uint32_t count,
                                       const VkPhysicalDevice *handles)
{
    VkResult res = VK_SUCCESS;
    pthread_mutex_lock(&physical_devices_lock);
    for (uint32_t i = 0; i < count; i++) {
        if (gt_map_find(&physical_devices, handles[i]))
            continue;
        gt_physical_device *pd =
            gt_zalloc(&inst->alloc, sizeof *pd, VK_SYSTEM_ALLOCATION_SCOPE_INSTANCE);
        if (!pd) {
            res = VK_ERROR_OUT_OF_HOST_MEMORY;
            break;
        }
        pd->handle = handles[i];
        pd->instance = inst;
        gt_map_insert(&physical_devices, &pd->node, handles[i]); /* absent: checked above */
        pd->next_in_instance = inst->physical_devices;
        inst->physical_devices = pd;
    }
    pthread_mutex_unlock(&physical_devices_lock);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDevices(VkInstance instance,
                                                                  uint32_t *count,
                                                                  VkPhysicalDevice *handles)
{
    gt_instance *inst = gt_instance_get(instance);
    if (!inst || !inst->vk.EnumeratePhysicalDevices)
        return VK_ERROR_INITIALIZATION_FAILED;
    VkResult res = inst->vk.EnumeratePhysicalDevices(instance, count, handles);
    if ((res == VK_SUCCESS || res == VK_INCOMPLETE) && handles) {
        VkResult tracked = track_physical_devices(inst, *count, handles);
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
            VkResult tracked = track_physical_devices(inst, groups[i].physicalDeviceCount,
                                                      groups[i].physicalDevices);
            if (tracked != VK_SUCCESS)
                return tracked;
        }
    }
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDeviceGroups(
    VkInstance instance, uint32_t *count, VkPhysicalDeviceGroupProperties *groups)
{
    return enumerate_groups(instance, count, groups, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_EnumeratePhysicalDeviceGroupsKHR(
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

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateInstance(const VkInstanceCreateInfo *info,
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
    inst->disabled = gt_config_get()->disabled;
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

    if (!gt_map_insert(&instances, &inst->node, gt_dispatch_key(*instance))) {
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

static VKAPI_ATTR void VKAPI_CALL gt_DestroyInstance(VkInstance instance,
                                                     const VkAllocationCallbacks *callbacks)
{
    if (instance == VK_NULL_HANDLE)
        return;
    gt_map_node *n = gt_map_remove(&instances, gt_dispatch_key(instance));
    if (!n) {
        gt_error("vkDestroyInstance: instance %p unknown to the layer", (void *)instance);
        return;
    }
    gt_instance *inst = gt_container_of(n, gt_instance, node);
    if (!inst->disabled)
        tl_instance_finish(inst);
    free_physical_devices(inst);
    inst->vk.DestroyInstance(instance, callbacks);
    gt_allocator alloc = inst->alloc;
    gt_free(&alloc, inst);
}

/* ---- device ------------------------------------------------------------ */

static void fill_device_dispatch(gt_device *dev)
{
#define GT_FILL(name) dev->vk.name = (PFN_vk##name)dev->next_gdpa(dev->handle, "vk" #name);
    GT_DEVICE_HOOKS(GT_FILL)
    GT_DEVICE_CALLS(GT_FILL)
#undef GT_FILL

    const gt_instance *inst = dev->instance;
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

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateDevice(VkPhysicalDevice pd,
                                                      const VkDeviceCreateInfo *info,
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
    }

    if (!gt_map_insert(&devices, &dev->node, gt_dispatch_key(*device))) {
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

static VKAPI_ATTR void VKAPI_CALL gt_DestroyDevice(VkDevice device,
                                                   const VkAllocationCallbacks *callbacks)
{
    if (device == VK_NULL_HANDLE)
        return;
    gt_map_node *n = gt_map_remove(&devices, gt_dispatch_key(device));
    if (!n) {
        gt_error("vkDestroyDevice: device %p unknown to the layer", (void *)device);
        return;
    }
    gt_device *dev = gt_container_of(n, gt_device, node);
    if (!dev->disabled)
        tl_device_finish(dev);
    dev->vk.DestroyDevice(device, callbacks);
    gt_allocator alloc = dev->alloc;
    gt_free(&alloc, dev);
}

VkResult gt_device_allocate_command_buffers(gt_device *dev, const VkCommandBufferAllocateInfo *info,
                                            VkCommandBuffer *out)
{
    if (!dev->set_loader_data)
        return VK_ERROR_INITIALIZATION_FAILED;
    VkResult res = dev->vk.AllocateCommandBuffers(dev->handle, info, out);
    if (res != VK_SUCCESS)
        return res;
    for (uint32_t i = 0; i < info->commandBufferCount; i++) {
        res = dev->set_loader_data(dev->handle, out[i]);
        if (res != VK_SUCCESS)
            goto fail_free;
    }
    return VK_SUCCESS;

fail_free:
    dev->vk.FreeCommandBuffers(dev->handle, info->commandPool, info->commandBufferCount, out);
    memset(out, 0, info->commandBufferCount * sizeof *out);
    return res;
}

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
       * their device's table on every call (GT_HOOK_ENTER). */
        const gt_hook *hook = gt_device_hook_find(name);
        if (hook)
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
       * vkGetDeviceProcAddr: what this device has enabled. */
        const gt_hook *hook = gt_device_hook_find(name);
        if (hook)
            return gt_hook_next(&dev->vk, hook) ? hook->fn : NULL;
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
