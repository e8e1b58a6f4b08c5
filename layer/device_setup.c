/* SPDX-License-Identifier: MIT */
/* device_setup.c — amending vkCreateDevice for the timing code; see
 * device_setup.h. */
#include "layer/device_setup.h"

#include <string.h>

#include "layer/layer_frame_boundary.h"
#include "layer/log.h"

/* Structures that may precede the one carrying hostQueryReset in a device
 * pNext chain and that we therefore may have to copy: the loader's own link
 * structures come first, then the application's. A chain with anything not
 * listed is left alone (the feature just stays off). */
#define GT_CLONABLE_STRUCTS(X)                                                                     \
    X(LOADER_DEVICE_CREATE_INFO, VkLayerDeviceCreateInfo)                                          \
    X(DEVICE_GROUP_DEVICE_CREATE_INFO, VkDeviceGroupDeviceCreateInfo)                              \
    X(DEVICE_PRIVATE_DATA_CREATE_INFO, VkDevicePrivateDataCreateInfo)                              \
    X(PHYSICAL_DEVICE_FEATURES_2, VkPhysicalDeviceFeatures2)                                       \
    X(PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, VkPhysicalDeviceVulkan11Features)                       \
    X(PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, VkPhysicalDeviceVulkan12Features)                       \
    X(PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, VkPhysicalDeviceVulkan13Features)                       \
    X(PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES, VkPhysicalDeviceHostQueryResetFeatures)           \
    X(PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, VkPhysicalDevice16BitStorageFeatures)                \
    X(PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, VkPhysicalDevice8BitStorageFeatures)                  \
    X(PHYSICAL_DEVICE_MULTIVIEW_FEATURES, VkPhysicalDeviceMultiviewFeatures)                       \
    X(PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES, VkPhysicalDeviceVariablePointersFeatures)        \
    X(PHYSICAL_DEVICE_PROTECTED_MEMORY_FEATURES, VkPhysicalDeviceProtectedMemoryFeatures)          \
    X(PHYSICAL_DEVICE_SAMPLER_YCBCR_CONVERSION_FEATURES,                                           \
      VkPhysicalDeviceSamplerYcbcrConversionFeatures)                                              \
    X(PHYSICAL_DEVICE_SHADER_DRAW_PARAMETERS_FEATURES,                                             \
      VkPhysicalDeviceShaderDrawParametersFeatures)                                                \
    X(PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES, VkPhysicalDeviceShaderAtomicInt64Features)     \
    X(PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, VkPhysicalDeviceShaderFloat16Int8Features)     \
    X(PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES, VkPhysicalDeviceDescriptorIndexingFeatures)    \
    X(PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES, VkPhysicalDeviceScalarBlockLayoutFeatures)     \
    X(PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, VkPhysicalDeviceVulkanMemoryModelFeatures)     \
    X(PHYSICAL_DEVICE_IMAGELESS_FRAMEBUFFER_FEATURES,                                              \
      VkPhysicalDeviceImagelessFramebufferFeatures)                                                \
    X(PHYSICAL_DEVICE_UNIFORM_BUFFER_STANDARD_LAYOUT_FEATURES,                                     \
      VkPhysicalDeviceUniformBufferStandardLayoutFeatures)                                         \
    X(PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES,                                     \
      VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures)                                         \
    X(PHYSICAL_DEVICE_SEPARATE_DEPTH_STENCIL_LAYOUTS_FEATURES,                                     \
      VkPhysicalDeviceSeparateDepthStencilLayoutsFeatures)                                         \
    X(PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES, VkPhysicalDeviceTimelineSemaphoreFeatures)      \
    X(PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES, VkPhysicalDeviceBufferDeviceAddressFeatures) \
    X(PHYSICAL_DEVICE_SHADER_TERMINATE_INVOCATION_FEATURES,                                        \
      VkPhysicalDeviceShaderTerminateInvocationFeatures)                                           \
    X(PHYSICAL_DEVICE_SHADER_DEMOTE_TO_HELPER_INVOCATION_FEATURES,                                 \
      VkPhysicalDeviceShaderDemoteToHelperInvocationFeatures)                                      \
    X(PHYSICAL_DEVICE_PRIVATE_DATA_FEATURES, VkPhysicalDevicePrivateDataFeatures)                  \
    X(PHYSICAL_DEVICE_PIPELINE_CREATION_CACHE_CONTROL_FEATURES,                                    \
      VkPhysicalDevicePipelineCreationCacheControlFeatures)                                        \
    X(PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES, VkPhysicalDeviceSynchronization2Features)        \
    X(PHYSICAL_DEVICE_ZERO_INITIALIZE_WORKGROUP_MEMORY_FEATURES,                                   \
      VkPhysicalDeviceZeroInitializeWorkgroupMemoryFeatures)                                       \
    X(PHYSICAL_DEVICE_IMAGE_ROBUSTNESS_FEATURES, VkPhysicalDeviceImageRobustnessFeatures)          \
    X(PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES, VkPhysicalDeviceSubgroupSizeControlFeatures) \
    X(PHYSICAL_DEVICE_INLINE_UNIFORM_BLOCK_FEATURES, VkPhysicalDeviceInlineUniformBlockFeatures)   \
    X(PHYSICAL_DEVICE_TEXTURE_COMPRESSION_ASTC_HDR_FEATURES,                                       \
      VkPhysicalDeviceTextureCompressionASTCHDRFeatures)                                           \
    X(PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES, VkPhysicalDeviceDynamicRenderingFeatures)        \
    X(PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,                                         \
      VkPhysicalDeviceShaderIntegerDotProductFeatures)                                             \
    X(PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES, VkPhysicalDeviceMaintenance4Features)

/* The commands of every device extension plan_* may add: what
 * gt_device_setup_hides keeps from the application. An extension added
 * without its commands listed here would leak them. */
static const struct {
    const char *extension;
    const char *command;
} added_extension_commands[] = {
    { VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME, "vkGetCalibratedTimestampsEXT" },
    { VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME, "vkGetCalibratedTimestampsKHR" },
    { VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME, "vkResetQueryPoolEXT" },
};

bool gt_device_setup_hides(const gt_device *dev, const char *name)
{
    for (uint32_t i = 0; i < dev->layer_extension_count; i++) {
        for (size_t j = 0; j < sizeof added_extension_commands / sizeof added_extension_commands[0];
             j++) {
            if (strcmp(added_extension_commands[j].extension, dev->layer_extensions[i]) == 0 &&
                strcmp(added_extension_commands[j].command, name) == 0)
                return true;
        }
    }
    return false;
}

static size_t clonable_size(VkStructureType type)
{
    /* Newer than Debian's headers (frame_boundary_ext.h): not in the enum. */
    if (type == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT)
        return sizeof(VkPhysicalDeviceFrameBoundaryFeaturesEXT);
    switch (type) {
#define GT_SIZE_CASE(stype, ctype)  \
    case VK_STRUCTURE_TYPE_##stype: \
        return sizeof(ctype);
        GT_CLONABLE_STRUCTS(GT_SIZE_CASE)
#undef GT_SIZE_CASE
    default:
        return 0;
    }
}

static bool has_name(const char *const *names, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(names[i], name) == 0)
            return true;
    }
    return false;
}

static bool app_enabled(const VkDeviceCreateInfo *info, const char *name)
{
    return has_name(info->ppEnabledExtensionNames, info->enabledExtensionCount, name);
}

static bool supported(const VkExtensionProperties *props, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(props[i].extensionName, name) == 0)
            return true;
    }
    return false;
}

/* Replaces s->info.pNext by a copy of the chain up to and including target,
 * whose copy is returned; the copy of target keeps pointing into the
 * original chain after it. Returns NULL in *copy (and VK_SUCCESS) when the
 * chain holds a structure we cannot size. */
static VkResult clone_chain_through(gt_device_setup *s, const VkBaseInStructure *target,
                                    const gt_allocator *alloc, VkBaseOutStructure **copy)
{
    const void *original = s->info.pNext;
    VkBaseOutStructure *prev = NULL;
    *copy = NULL;
    for (const VkBaseInStructure *in = original; in; in = in->pNext) {
        size_t size = clonable_size(in->sType);
        if (size == 0 || s->clone_count == GT_SETUP_MAX_CLONES) {
            gt_info("device: pNext chain holds structure type %d before the one to change; "
                    "left as it is",
                    (int)in->sType);
            s->info.pNext = original; /* the partial copies are freed on release */
            return VK_SUCCESS;
        }
        VkBaseOutStructure *out = gt_zalloc(alloc, size, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
        if (!out)
            return VK_ERROR_OUT_OF_HOST_MEMORY;
        memcpy(out, in, size);
        s->clones[s->clone_count++] = out;
        if (prev)
            prev->pNext = out;
        else
            s->info.pNext = out;
        prev = out;
        if (in == target) {
            *copy = out;
            return VK_SUCCESS;
        }
    }
    return VK_SUCCESS;
}

static const VkBaseInStructure *find_host_query_reset_struct(const VkDeviceCreateInfo *info,
                                                             VkBool32 *enabled)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            *enabled = ((const VkPhysicalDeviceVulkan12Features *)(const void *)s)->hostQueryReset;
            return s;
        }
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES) {
            *enabled =
                ((const VkPhysicalDeviceHostQueryResetFeatures *)(const void *)s)->hostQueryReset;
            return s;
        }
    }
    return NULL;
}

static VkResult plan_host_query_reset(gt_device_setup *s, const gt_instance *inst,
                                      VkPhysicalDevice pd, const VkDeviceCreateInfo *app,
                                      const VkExtensionProperties *avail, uint32_t avail_count,
                                      const gt_allocator *alloc, const char **add,
                                      uint32_t *add_count)
{
    bool core = s->api_version >= VK_API_VERSION_1_2;
    bool app_ext = app_enabled(app, VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME);
    enum gt_host_query_reset mode = GT_HOST_QUERY_RESET_NONE;
    if (core)
        mode = GT_HOST_QUERY_RESET_CORE;
    else if (app_ext || supported(avail, avail_count, VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME))
        mode = GT_HOST_QUERY_RESET_EXT;

    VkBool32 app_on = VK_FALSE;
    const VkBaseInStructure *found = find_host_query_reset_struct(app, &app_on);
    if (found && app_on) {
        s->host_query_reset = mode;
        return VK_SUCCESS;
    }
    if (mode == GT_HOST_QUERY_RESET_NONE)
        return VK_SUCCESS;

    /* Ask whether the feature is there; needs vkGetPhysicalDeviceFeatures2 in
    * one of its two spellings. */
    PFN_vkGetPhysicalDeviceFeatures2 features2 = NULL;
    if (s->api_version >= VK_API_VERSION_1_1)
        features2 = inst->vk.GetPhysicalDeviceFeatures2;
    else if (inst->has_gpdp2)
        features2 = inst->vk.GetPhysicalDeviceFeatures2KHR;
    if (!features2) {
        gt_info("device: cannot query features (Vulkan 1.0 without "
                "VK_KHR_get_physical_device_properties2); hostQueryReset stays off");
        return VK_SUCCESS;
    }
    VkPhysicalDeviceHostQueryResetFeatures query = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
    };
    VkPhysicalDeviceFeatures2 all = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &query,
    };
    features2(pd, &all);
    if (!query.hostQueryReset)
        return VK_SUCCESS;

    if (found) {
        /* The application's own struct says VK_FALSE and a second struct for
       * the same feature is not allowed: switch it on in a copy. */
        VkBaseOutStructure *copy;
        VkResult res = clone_chain_through(s, found, alloc, &copy);
        if (res != VK_SUCCESS || !copy)
            return res;
        if (copy->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)
            ((VkPhysicalDeviceVulkan12Features *)(void *)copy)->hostQueryReset = VK_TRUE;
        else
            ((VkPhysicalDeviceHostQueryResetFeatures *)(void *)copy)->hostQueryReset = VK_TRUE;
    } else {
        s->host_query_reset_features = (VkPhysicalDeviceHostQueryResetFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
            .pNext = (void *)s->info.pNext,
            .hostQueryReset = VK_TRUE,
        };
        s->info.pNext = &s->host_query_reset_features;
    }
    if (mode == GT_HOST_QUERY_RESET_EXT && !app_ext)
        add[(*add_count)++] = VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME;
    s->host_query_reset = mode;
    return VK_SUCCESS;
}

static void plan_calibrated_timestamps(gt_device_setup *s, const gt_instance *inst,
                                       const VkDeviceCreateInfo *app,
                                       const VkExtensionProperties *avail, uint32_t avail_count,
                                       const char **add, uint32_t *add_count)
{
    if (app_enabled(app, VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) {
        s->calibrated_timestamps = GT_CALIBRATED_KHR;
        return;
    }
    if (app_enabled(app, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) {
        s->calibrated_timestamps = GT_CALIBRATED_EXT;
        return;
    }
    /* Both extensions depend on VK_KHR_get_physical_device_properties2 or
    * Vulkan 1.1; enabling them otherwise would be invalid usage. */
    if (s->api_version < VK_API_VERSION_1_1 && !inst->has_gpdp2) {
        gt_info("device: calibrated timestamps need Vulkan 1.1 or "
                "VK_KHR_get_physical_device_properties2; not enabled");
        return;
    }
    if (supported(avail, avail_count, VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) {
        add[(*add_count)++] = VK_KHR_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
        s->calibrated_timestamps = GT_CALIBRATED_KHR;
    } else if (supported(avail, avail_count, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) {
        add[(*add_count)++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
        s->calibrated_timestamps = GT_CALIBRATED_EXT;
    }
}

/* The first structure of `type` out of the chain that goes down (copies of
 * what precedes it); left in when one of those cannot be copied. */
static VkResult drop_struct(gt_device_setup *s, VkStructureType type, const gt_allocator *alloc)
{
    const VkBaseInStructure *target = NULL, *before = NULL;
    for (const VkBaseInStructure *p = s->info.pNext; p; before = p, p = p->pNext) {
        if (p->sType == type) {
            target = p;
            break;
        }
    }
    if (!target)
        return VK_SUCCESS;
    if (!before) {
        s->info.pNext = target->pNext;
        return VK_SUCCESS;
    }
    VkBaseOutStructure *copy;
    VkResult res = clone_chain_through(s, before, alloc, &copy);
    if (res == VK_SUCCESS && copy)
        copy->pNext = (VkBaseOutStructure *)(void *)target->pNext;
    return res;
}

/* VK_EXT_frame_boundary provided by the layer: neither its name nor its
 * feature structure goes down (layer_frame_boundary.h). */
static VkResult plan_frame_boundary(gt_device_setup *s, const gt_instance *inst,
                                    VkPhysicalDevice pd, const VkDeviceCreateInfo *app,
                                    const gt_allocator *alloc)
{
    s->frame_boundary = gt_fb_plan_device(inst, pd, app);
    if (s->frame_boundary != GT_FB_EMULATED)
        return VK_SUCCESS;
    VkResult res =
        drop_struct(s, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT, alloc);
    if (res != VK_SUCCESS)
        return res;
    const uint32_t n = s->info.enabledExtensionCount;
    const char **names = (const char **)s->extension_names;
    if (!names) {
        names = gt_zalloc(alloc, (n ? n : 1) * sizeof(char *), VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
        if (!names)
            return VK_ERROR_OUT_OF_HOST_MEMORY;
        for (uint32_t i = 0; i < n; i++)
            names[i] = s->info.ppEnabledExtensionNames[i];
        s->extension_names = names;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(names[i], VK_EXT_FRAME_BOUNDARY_EXTENSION_NAME) != 0)
            names[kept++] = names[i];
    s->info.enabledExtensionCount = kept;
    s->info.ppEnabledExtensionNames = names;
    return VK_SUCCESS;
}

/* The device's extensions, in *out (freed by the caller). */
static VkResult list_extensions(const gt_instance *inst, VkPhysicalDevice pd,
                                const gt_allocator *alloc, VkExtensionProperties **out,
                                uint32_t *count)
{
    *out = NULL;
    *count = 0;
    uint32_t n = 0;
    VkResult res = inst->vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    if (res != VK_SUCCESS || n == 0)
        return res;
    VkExtensionProperties *props =
        gt_zalloc(alloc, n * sizeof *props, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
    if (!props)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    res = inst->vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, props);
    if (res < 0) {
        gt_free(alloc, props);
        return res;
    }
    *out = props;
    *count = n; /* VK_INCOMPLETE: a shorter list is still a correct list */
    return VK_SUCCESS;
}

VkResult gt_device_setup_prepare(gt_device_setup *s, const gt_instance *inst, VkPhysicalDevice pd,
                                 const VkDeviceCreateInfo *app, const gt_allocator *alloc)
{
    VkExtensionProperties *avail;
    uint32_t avail_count;
    const char **add = s->added;

    memset(s, 0, sizeof *s);
    s->info = *app;

    VkPhysicalDeviceProperties props;
    inst->vk.GetPhysicalDeviceProperties(pd, &props);
    s->api_version = props.apiVersion < inst->api_version ? props.apiVersion : inst->api_version;

    VkResult res = list_extensions(inst, pd, alloc, &avail, &avail_count);
    if (res == VK_ERROR_OUT_OF_HOST_MEMORY)
        return res;
    if (res != VK_SUCCESS) {
        /* Not the application's problem: pass its create info down unchanged
       * and let the timing code do without. */
        gt_warn("device: cannot list device extensions (VkResult %d); not amending "
                "vkCreateDevice",
                (int)res);
        return VK_SUCCESS;
    }

    plan_calibrated_timestamps(s, inst, app, avail, avail_count, add, &s->added_count);
    res = plan_host_query_reset(s, inst, pd, app, avail, avail_count, alloc, add, &s->added_count);
    gt_free(alloc, avail);
    if (res != VK_SUCCESS)
        goto fail_release;

    if (s->added_count) {
        uint32_t total = app->enabledExtensionCount + s->added_count;
        s->extension_names =
            gt_zalloc(alloc, total * sizeof(char *), VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
        if (!s->extension_names) {
            res = VK_ERROR_OUT_OF_HOST_MEMORY;
            goto fail_release;
        }
        for (uint32_t i = 0; i < app->enabledExtensionCount; i++)
            s->extension_names[i] = app->ppEnabledExtensionNames[i];
        for (uint32_t i = 0; i < s->added_count; i++) {
            s->extension_names[app->enabledExtensionCount + i] = add[i];
            gt_debug("device: enabling %s", add[i]);
        }
        s->info.enabledExtensionCount = total;
        s->info.ppEnabledExtensionNames = s->extension_names;
    }
    res = plan_frame_boundary(s, inst, pd, app, alloc);
    if (res != VK_SUCCESS)
        goto fail_release;
    return VK_SUCCESS;

fail_release:
    gt_device_setup_release(s, alloc);
    return res;
}

void gt_device_setup_release(gt_device_setup *s, const gt_allocator *alloc)
{
    for (uint32_t i = 0; i < s->clone_count; i++)
        gt_free(alloc, s->clones[i]);
    s->clone_count = 0;
    gt_free(alloc, (void *)s->extension_names);
    s->extension_names = NULL;
}
