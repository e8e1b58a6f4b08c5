/* SPDX-License-Identifier: MIT */
/* test_layer_skeleton.h — the loader plumbing of the repository's test-only
 * Vulkan layers (VK_LAYER_GPUTRACE_clockfault in tests/faultlayer/,
 * VK_LAYER_GPUTRACE_cmdcheck in tests/layer/cmd_check_layer.c), so that
 * each layer's file holds only what it checks or fakes.
 *
 * The skeleton negotiates interface 2, walks the loader's chain info,
 * creates and destroys instances and devices down the chain, keeps them in
 * tables keyed on the dispatch key (the loader's rule: never on the handle
 * itself) and answers vkGetInstanceProcAddr / vkGetDeviceProcAddr: a hook
 * of the layer where the next layer has the function, the next layer's
 * function otherwise, NULL for what the layer hides.
 *
 * A layer defines `tls_the_layer` (its hooks and callbacks) and exports
 *
 *   VK_LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
 *   vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
 *   {
 *       return tls_negotiate(v);
 *   }
 *
 * Its instance and device structs begin with a tls_instance / tls_device
 * (the skeleton allocates them zeroed, `instance_size` / `device_size`
 * bytes). The skeleton is a static library built with hidden visibility:
 * two test layers in one process each keep their own tables.
 */
#ifndef GPUTRACE_TEST_LAYER_SKELETON_H
#define GPUTRACE_TEST_LAYER_SKELETON_H

#include <stdbool.h>
#include <stddef.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

typedef struct tls_instance tls_instance;
struct tls_instance {
    void *key; /* the dispatch key; must stay first */
    VkInstance handle;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkDestroyInstance DestroyInstance;
};

typedef struct tls_device tls_device;
struct tls_device {
    void *key; /* the dispatch key; must stay first */
    VkDevice handle;
    PFN_vkGetDeviceProcAddr gdpa;
    PFN_vkDestroyDevice DestroyDevice;
};

typedef struct tls_hook tls_hook;
struct tls_hook {
    const char *name;
    PFN_vkVoidFunction fn;
};

/* { "vkName", prefix##Name }: a hook table entry for the layer's function
 * PREFIX##NAME standing in for vkNAME. */
#define TLS_HOOK(prefix, name)                       \
    {                                                \
        "vk" #name, (PFN_vkVoidFunction)prefix##name \
    }

#define TLS_COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef struct tls_layer tls_layer;
struct tls_layer {
    /* Instance-level hooks are looked up through vkGetInstanceProcAddr
     * only (vkGetDeviceProcAddr answers NULL for them, as the Khronos
     * validation layer does for the VK_EXT_debug_utils device commands);
     * device-level hooks through both. */
    const tls_hook *instance_hooks;
    size_t n_instance_hooks;
    const tls_hook *device_hooks;
    size_t n_device_hooks;
    size_t instance_size, device_size; /* >= sizeof tls_instance / tls_device */

    /* All optional (NULL). */
    /* Before each vkCreateInstance goes down the chain. */
    void (*before_create_instance)(void);
    /* A new instance or device, its base filled in, before it is published:
     * the layer fetches its next functions here. */
    void (*instance_created)(tls_instance *inst);
    void (*device_created)(tls_device *dev);
    /* After vkDestroyInstance went down and the instance was freed; `last`
     * when no instance of this layer is left. */
    void (*instance_destroyed)(bool last);
    /* Around vkDestroyDevice going down (before: what must go while the
     * device lives; after: the layer's own state, before the skeleton
     * frees `dev`). Also on the failure path of vkCreateDevice after
     * device_created ran. */
    void (*device_destroy_before)(tls_device *dev);
    void (*device_destroy_after)(tls_device *dev);
    /* True for a function name the layer withholds (NULL from both
     * vkGet*ProcAddr). */
    bool (*hidden)(const char *name);
    /* Before vkCreateDevice goes down the chain: the create info to pass
     * instead of `info` (the layer's own copy, valid until
     * device_created), or `info` itself. */
    const VkDeviceCreateInfo *(*amend_device_create)(tls_instance *inst, VkPhysicalDevice pd,
                                                     const VkDeviceCreateInfo *info);
};

/* Defined by the layer. */
extern const tls_layer tls_the_layer;

/* The layer's instance / device whose dispatch key `dispatchable` (an
 * instance, physical device, device, queue or command buffer) carries;
 * NULL when unknown. */
tls_instance *tls_instance_of(const void *dispatchable);
tls_device *tls_device_of(const void *dispatchable);

/* The body of the layer's exported vkNegotiateLoaderLayerInterfaceVersion. */
VkResult tls_negotiate(VkNegotiateLayerInterface *v);

#endif
