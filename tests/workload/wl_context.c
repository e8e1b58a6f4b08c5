/* SPDX-License-Identifier: MIT */
/* wl_context.c — instance (with optional validation), device selection,
 * device and queue creation for gputrace-workload. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layer/layer_settings_ext.h"
#include "tests/workload/wl.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

const char *wl_result_name(VkResult res)
{
    switch (res) {
#define WL_RESULT(r) \
    case r:          \
        return #r;
        WL_RESULT(VK_SUCCESS)
        WL_RESULT(VK_NOT_READY)
        WL_RESULT(VK_TIMEOUT)
        WL_RESULT(VK_INCOMPLETE)
        WL_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
        WL_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        WL_RESULT(VK_ERROR_INITIALIZATION_FAILED)
        WL_RESULT(VK_ERROR_DEVICE_LOST)
        WL_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
        WL_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
        WL_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
        WL_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
        WL_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
        WL_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
        WL_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
        WL_RESULT(VK_ERROR_UNKNOWN)
#undef WL_RESULT
    default:
        return "unknown VkResult";
    }
}

void wl_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, WL_PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool wl_check(VkResult res, const char *fn)
{
    if (res == VK_SUCCESS)
        return true;
    wl_error("%s failed: %s (%d)", fn, wl_result_name(res), (int)res);
    return false;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    wl_context *ctx = user;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        atomic_fetch_add(&ctx->validation_errors, 1);
        fprintf(stderr, WL_PROG ": validation error: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static bool has_extension(const VkExtensionProperties *props, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(props[i].extensionName, name) == 0)
            return true;
    }
    return false;
}

/* Instance extensions offered by the implementation, or by one layer. */
static VkExtensionProperties *instance_extensions(const char *layer, uint32_t *count)
{
    *count = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, count, NULL) != VK_SUCCESS)
        return NULL;
    VkExtensionProperties *props = calloc(*count ? *count : 1, sizeof *props);
    if (!props || vkEnumerateInstanceExtensionProperties(layer, count, props) < 0) {
        free(props);
        *count = 0;
        return NULL;
    }
    return props;
}

static bool validation_layer_present(void)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS)
        return false;
    VkLayerProperties *props = calloc(count ? count : 1, sizeof *props);
    bool found = false;
    if (props && vkEnumerateInstanceLayerProperties(&count, props) >= 0) {
        for (uint32_t i = 0; i < count && !found; i++)
            found = strcmp(props[i].layerName, VALIDATION_LAYER) == 0;
    }
    free(props);
    return found;
}

static bool create_instance(wl_context *ctx, const wl_options *opt)
{
    uint32_t loader_version = VK_API_VERSION_1_0;
    if (!WL_VK(vkEnumerateInstanceVersion, (&loader_version)))
        return false;
    uint32_t api = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : loader_version;
    ctx->api_version = api;

    if (opt->validate && !validation_layer_present()) {
        wl_error("--validate: %s is not installed (Debian: vulkan-validationlayers)",
                 VALIDATION_LAYER);
        return false;
    }

    uint32_t n_impl, n_layer = 0;
    VkExtensionProperties *impl = instance_extensions(NULL, &n_impl);
    VkExtensionProperties *layer =
        opt->validate ? instance_extensions(VALIDATION_LAYER, &n_layer) : NULL;
    const char *exts[2];
    uint32_t n_exts = 0;
    ctx->labels = has_extension(impl, n_impl, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                  has_extension(layer, n_layer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (ctx->labels)
        exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    bool sync_validation =
        opt->validate && has_extension(layer, n_layer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    if (sync_validation)
        exts[n_exts++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
    free(impl);
    free(layer);

    if (opt->validate && !ctx->labels) {
        wl_error("--validate: no VK_EXT_debug_utils to receive validation messages");
        return false;
    }
    if (opt->validate && !sync_validation)
        wl_error("--validate: VK_EXT_validation_features missing; no synchronization validation");

    /* Chained into the instance create info, the messenger also sees
    * messages about vkCreateInstance/vkDestroyInstance themselves. */
    VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation_message,
        .pUserData = ctx,
    };
    const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
    };
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .pNext = &messenger_info,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    const char *layers[2];
    uint32_t n_layers = 0;
    if (opt->validate)
        layers[n_layers++] = VALIDATION_LAYER;
    if (opt->layer)
        layers[n_layers++] = opt->layer;
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = WL_PROG,
        .applicationVersion = 1,
        .apiVersion = api,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = n_layers,
        .ppEnabledLayerNames = n_layers ? layers : NULL,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    if (opt->validate)
        info.pNext = sync_validation ? (const void *)&features : (const void *)&messenger_info;
    /* --layer-setting: first in the chain (where an application puts it is
     * up to it; the layer searches the whole chain). */
    VkLayerSettingEXT settings[WL_MAX_LAYER_SETTINGS];
    for (uint32_t i = 0; i < opt->nsettings; i++)
        settings[i] = (VkLayerSettingEXT){
            .pLayerName = "VK_LAYER_GPUTRACE_timeline",
            .pSettingName = opt->setting_keys[i],
            .type = VK_LAYER_SETTING_TYPE_STRING_EXT,
            .valueCount = 1,
            .pValues = &opt->setting_values[i],
        };
    VkLayerSettingsCreateInfoEXT layer_settings = {
        .sType = VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT,
        .pNext = info.pNext,
        .settingCount = opt->nsettings,
        .pSettings = settings,
    };
    if (opt->nsettings)
        info.pNext = &layer_settings;
    if (!WL_VK(vkCreateInstance, (&info, NULL, &ctx->instance)))
        return false;

    if (opt->validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                ctx->instance, "vkCreateDebugUtilsMessengerEXT");
        if (!create_messenger) {
            wl_error("vkCreateDebugUtilsMessengerEXT missing");
            return false;
        }
        messenger_info.pNext = NULL;
        if (!WL_VK(create_messenger, (ctx->instance, &messenger_info, NULL, &ctx->messenger)))
            return false;
    }
    return true;
}

/* GPUTRACE_WORKLOAD_DEVICE: an index, or part of the device name
 * (case-insensitive); the first device otherwise. */
static bool pick_physical_device(wl_context *ctx)
{
    uint32_t count = 0;
    if (!WL_VK(vkEnumeratePhysicalDevices, (ctx->instance, &count, NULL)))
        return false;
    if (count == 0) {
        wl_error("no Vulkan device found");
        return false;
    }
    VkPhysicalDevice *devs = calloc(count, sizeof *devs);
    if (!devs || vkEnumeratePhysicalDevices(ctx->instance, &count, devs) < 0) {
        free(devs);
        wl_error("cannot list Vulkan devices");
        return false;
    }

    const char *want = getenv("GPUTRACE_WORKLOAD_DEVICE");
    bool by_index = want && *want;
    for (const char *p = want; by_index && *p; p++)
        by_index = isdigit((unsigned char)*p);

    int chosen = -1;
    for (uint32_t i = 0; i < count && chosen < 0; i++) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(devs[i], &props);
        if (!want || !*want || (by_index && strtoul(want, NULL, 10) == i) ||
            (!by_index && strcasestr(props.deviceName, want)))
            chosen = (int)i;
    }
    if (chosen < 0) {
        wl_error("GPUTRACE_WORKLOAD_DEVICE=%s matches none of these devices:", want);
        for (uint32_t i = 0; i < count; i++) {
            VkPhysicalDeviceProperties props;
            vkGetPhysicalDeviceProperties(devs[i], &props);
            fprintf(stderr, "  %u: %s\n", i, props.deviceName);
        }
        free(devs);
        return false;
    }
    ctx->physical_device = devs[chosen];
    free(devs);
    vkGetPhysicalDeviceProperties(ctx->physical_device, &ctx->props);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical_device, &ctx->memory);
    return true;
}

/* --app-timestamps resets its queries on the host, as the layer does. */
static bool enable_host_reset(wl_context *ctx, VkPhysicalDeviceVulkan12Features *want12,
                              void *want13, VkDeviceCreateInfo *info)
{
    if (!ctx->app_stamps)
        return true;
    VkPhysicalDeviceVulkan12Features have12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    };
    VkPhysicalDeviceFeatures2 have = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &have12,
    };
    if (ctx->props.apiVersion >= VK_API_VERSION_1_2 && ctx->api_version >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceFeatures2(ctx->physical_device, &have);
    if (!have12.hostQueryReset || !ctx->props.limits.timestampComputeAndGraphics) {
        wl_error("--app-timestamps: %s has no hostQueryReset or no timestamps",
                 ctx->props.deviceName);
        return false;
    }
    want12->hostQueryReset = VK_TRUE;
    want12->pNext = want13;
    info->pNext = want12;
    return true;
}

/* --cross-queue-semaphore waits on timeline semaphores (Vulkan 1.2). */
static bool enable_timeline(wl_context *ctx, const wl_options *opt,
                            VkPhysicalDeviceVulkan12Features *want12, void *want13,
                            VkDeviceCreateInfo *info)
{
    if (!opt->cross_queue)
        return true;
    VkPhysicalDeviceVulkan12Features have12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    };
    VkPhysicalDeviceFeatures2 have = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &have12,
    };
    if (ctx->props.apiVersion >= VK_API_VERSION_1_2 && ctx->api_version >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceFeatures2(ctx->physical_device, &have);
    if (!have12.timelineSemaphore) {
        wl_error("--cross-queue-semaphore: %s has no timeline semaphores (Vulkan 1.2)",
                 ctx->props.deviceName);
        return false;
    }
    want12->timelineSemaphore = VK_TRUE;
    want12->pNext = want13;
    info->pNext = want12;
    ctx->cross_queue = true;
    return true;
}

/* --frame-boundary: the device (or a layer, as VK_LAYER_GPUTRACE_timeline
 * does) must list VK_EXT_frame_boundary and have its feature. */
static bool frame_boundary_available(wl_context *ctx)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(ctx->physical_device, NULL, &n, NULL);
    VkExtensionProperties *exts = calloc(n ? n : 1, sizeof *exts);
    if (!exts)
        return false;
    vkEnumerateDeviceExtensionProperties(ctx->physical_device, NULL, &n, exts);
    bool listed = false;
    for (uint32_t i = 0; i < n && !listed; i++)
        listed = strcmp(exts[i].extensionName, VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME) == 0;
    free(exts);
    VkPhysicalDeviceFrameBoundaryFeaturesEXT fb = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT,
    };
    VkPhysicalDeviceFeatures2 all = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &fb,
    };
    if (listed && ctx->api_version >= VK_API_VERSION_1_1 &&
        ctx->props.apiVersion >= VK_API_VERSION_1_1)
        vkGetPhysicalDeviceFeatures2(ctx->physical_device, &all);
    if (!listed || !fb.frameBoundary) {
        wl_error("--frame-boundary: %s has no VK_EXT_frame_boundary (%s)", ctx->props.deviceName,
                 listed ? "its frameBoundary feature is off" : "not listed");
        return false;
    }
    return true;
}

static bool create_device(wl_context *ctx, const wl_options *opt)
{
    uint32_t n_families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &n_families, NULL);
    VkQueueFamilyProperties *families = calloc(n_families ? n_families : 1, sizeof *families);
    if (!families)
        return false;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &n_families, families);
    /* Every thread records compute and graphics work: one family must do
    * both (graphics families can always transfer). */
    const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
    uint32_t family = UINT32_MAX;
    for (uint32_t i = 0; i < n_families && family == UINT32_MAX; i++) {
        if ((families[i].queueFlags & need) == need)
            family = i;
    }
    if (family == UINT32_MAX) {
        free(families);
        wl_error("%s has no queue family with graphics and compute", ctx->props.deviceName);
        return false;
    }
    ctx->family = family;
    ctx->queue_count =
        opt->queues < families[family].queueCount ? opt->queues : families[family].queueCount;
    free(families);

    float priorities[WL_MAX_QUEUES];
    for (uint32_t i = 0; i < WL_MAX_QUEUES; i++)
        priorities[i] = 1.0f;
    const VkDeviceQueueCreateInfo queue_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = family,
        .queueCount = ctx->queue_count,
        .pQueuePriorities = priorities,
    };

    /* Like most Vulkan 1.3 programs, pass the whole 1.2 and 1.3 feature
    * blocks, asking only for what is used (nothing from 1.2). */
    VkPhysicalDeviceVulkan13Features want13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
    };
    VkPhysicalDeviceVulkan12Features want12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = &want13,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue_info,
    };
    bool v13 =
        ctx->props.apiVersion >= VK_API_VERSION_1_3 && ctx->api_version >= VK_API_VERSION_1_3;
    if (v13) {
        VkPhysicalDeviceVulkan13Features have13 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        };
        VkPhysicalDeviceFeatures2 have = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            .pNext = &have13,
        };
        vkGetPhysicalDeviceFeatures2(ctx->physical_device, &have);
        want13.dynamicRendering = have13.dynamicRendering;
        want13.synchronization2 = have13.synchronization2;
        info.pNext = &want12;
    }
    if (!enable_host_reset(ctx, &want12, v13 ? &want13 : NULL, &info) ||
        !enable_timeline(ctx, opt, &want12, v13 ? &want13 : NULL, &info))
        return false;
    VkPhysicalDeviceFrameBoundaryFeaturesEXT want_fb = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT,
    };
    const char *fb_name = VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME;
    if (opt->frame_boundary) {
        if (!frame_boundary_available(ctx))
            return false;
        want_fb.frameBoundary = VK_TRUE;
        want_fb.pNext = (void *)info.pNext;
        info.pNext = &want_fb;
        info.enabledExtensionCount = 1;
        info.ppEnabledExtensionNames = &fb_name;
        ctx->frame_boundary = true;
    }
    if (!WL_VK(vkCreateDevice, (ctx->physical_device, &info, NULL, &ctx->device)))
        return false;
    ctx->dynamic_rendering = want13.dynamicRendering;
    ctx->submit2 = want13.synchronization2;

    for (uint32_t i = 0; i < ctx->queue_count; i++) {
        vkGetDeviceQueue(ctx->device, family, i, &ctx->queues[i].handle);
        pthread_mutex_init(&ctx->queues[i].lock, NULL);
    }
    if (ctx->labels) {
        ctx->begin_label = (PFN_vkCmdBeginDebugUtilsLabelEXT)vkGetDeviceProcAddr(
            ctx->device, "vkCmdBeginDebugUtilsLabelEXT");
        ctx->end_label = (PFN_vkCmdEndDebugUtilsLabelEXT)vkGetDeviceProcAddr(
            ctx->device, "vkCmdEndDebugUtilsLabelEXT");
        ctx->labels = ctx->begin_label && ctx->end_label;
        ctx->set_name = (PFN_vkSetDebugUtilsObjectNameEXT)vkGetDeviceProcAddr(
            ctx->device, "vkSetDebugUtilsObjectNameEXT");
    }
    return true;
}

bool wl_context_init(wl_context *ctx, const wl_options *opt)
{
    ctx->validate = opt->validate;
    ctx->app_stamps = opt->app_stamps;
    ctx->tiny = opt->tiny;
    ctx->work = opt->work;
    ctx->stall_every = opt->stall_every;
    ctx->stall_ms = opt->stall_ms;
    atomic_init(&ctx->validation_errors, 0);
    atomic_init(&ctx->frame_ids, 1u);
    if (!create_instance(ctx, opt) || !pick_physical_device(ctx))
        return false;
    /* What the layer calls lavapipe (its workarounds apply there). */
    ctx->llvmpipe = ctx->props.vendorID == VK_VENDOR_ID_MESA &&
                    strncmp(ctx->props.deviceName, "llvmpipe", 8) == 0;
    if (!create_device(ctx, opt))
        return false;
    fprintf(stderr,
            WL_PROG ": %s, Vulkan %u.%u, %u queue(s) of family %u, dynamic rendering %s, "
                    "vkQueueSubmit2 %s, labels %s%s%s\n",
            ctx->props.deviceName, VK_API_VERSION_MAJOR(ctx->props.apiVersion),
            VK_API_VERSION_MINOR(ctx->props.apiVersion), ctx->queue_count, ctx->family,
            ctx->dynamic_rendering ? "yes" : "no", ctx->submit2 ? "yes" : "no",
            ctx->labels ? "yes" : "no", opt->validate ? ", validation on" : "",
            ctx->frame_boundary ? ", frames marked with VK_EXT_frame_boundary" : "");
    return true;
}

void wl_context_finish(wl_context *ctx)
{
    if (ctx->device) {
        for (uint32_t i = 0; i < ctx->queue_count; i++)
            pthread_mutex_destroy(&ctx->queues[i].lock);
        vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy_messenger)
            destroy_messenger(ctx->instance, ctx->messenger, NULL);
    }
    if (ctx->instance)
        vkDestroyInstance(ctx->instance, NULL);
}
