/* SPDX-License-Identifier: MIT */
/* layer_probe — small Vulkan client for the layer tests.
 *
 *   layer_probe
 *     Creates an instance and a device on the first physical device through
 *     whatever layers the environment enables, submits an empty batch with a
 *     fence, checks a few vkGetDeviceProcAddr answers, destroys everything.
 *     All host memory goes through counting VkAllocationCallbacks; prints
 *       layer_probe: ok allocations=N
 *     where N is how many allocations went through the callbacks (a layer
 *     honouring the application's allocator makes it larger), and fails if
 *     any allocation was not freed.
 *
 *   layer_probe --negotiate LIBRARY
 *     dlopens the layer itself and checks the loader-facing contract:
 *     interface negotiation and the pre-instance entry points.
 *
 * Exit 0 when every check passed, 1 otherwise (with a message on stderr).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#define LAYER_NAME "VK_LAYER_GPUTRACE_timeline"

static int failures;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "layer_probe: %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
            failures++;                                                  \
        }                                                                \
    } while (0)

/* ---- counting allocator -------------------------------------------------- */

static atomic_long live, total;

/* Each block remembers where malloc put it and how big it is, just below
 * the aligned pointer handed out. */
typedef struct header header;
struct header {
    void *base;
    size_t size;
};

static VKAPI_ATTR void *VKAPI_CALL count_alloc(void *user, size_t size, size_t align,
                                               VkSystemAllocationScope scope)
{
    (void)user, (void)scope;
    if (align < _Alignof(header))
        align = _Alignof(header);
    char *base = malloc(size + align + sizeof(header));
    if (!base)
        return NULL;
    uintptr_t p = ((uintptr_t)base + sizeof(header) + align - 1) & ~(uintptr_t)(align - 1);
    header *h = (header *)p - 1;
    h->base = base;
    h->size = size;
    atomic_fetch_add(&live, 1);
    atomic_fetch_add(&total, 1);
    return (void *)p;
}

static VKAPI_ATTR void VKAPI_CALL count_free(void *user, void *ptr)
{
    (void)user;
    if (!ptr)
        return;
    atomic_fetch_sub(&live, 1);
    free(((header *)ptr - 1)->base);
}

static VKAPI_ATTR void *VKAPI_CALL count_realloc(void *user, void *old, size_t size, size_t align,
                                                 VkSystemAllocationScope scope)
{
    if (!old)
        return count_alloc(user, size, align, scope);
    if (size == 0) {
        count_free(user, old);
        return NULL;
    }
    size_t old_size = ((header *)old - 1)->size;
    void *p = count_alloc(user, size, align, scope);
    if (p) {
        memcpy(p, old, old_size < size ? old_size : size);
        count_free(user, old);
    }
    return p;
}

static const VkAllocationCallbacks counting = {
    .pfnAllocation = count_alloc,
    .pfnReallocation = count_realloc,
    .pfnFree = count_free,
};

/* ---- through the loader --------------------------------------------------- */

static int probe(void)
{
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "layer_probe",
        .apiVersion = VK_API_VERSION_1_3,
    };
    const VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    VkInstance instance;
    VkResult res = vkCreateInstance(&info, &counting, &instance);
    if (res != VK_SUCCESS) {
        fprintf(stderr, "layer_probe: vkCreateInstance: %d\n", res);
        return 1;
    }

    uint32_t count = 1;
    VkPhysicalDevice pd;
    res = vkEnumeratePhysicalDevices(instance, &count, &pd);
    CHECK((res == VK_SUCCESS || res == VK_INCOMPLETE) && count == 1, "no physical device (%d)",
          res);
    if (failures)
        goto out_instance;

    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);

    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = 0,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const VkDeviceCreateInfo device_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue_info,
    };
    VkDevice device;
    res = vkCreateDevice(pd, &device_info, &counting, &device);
    CHECK(res == VK_SUCCESS, "vkCreateDevice: %d", res);
    if (failures)
        goto out_instance;

    /* An extension nobody enabled stays invisible, core entry points do
    * not. */
    CHECK(vkGetDeviceProcAddr(device, "vkCmdBeginRenderingKHR") == NULL,
          "vkCmdBeginRenderingKHR visible without VK_KHR_dynamic_rendering");
    CHECK(vkGetDeviceProcAddr(device, "vkQueueSubmit") != NULL, "no vkQueueSubmit");
    if (props.apiVersion >= VK_API_VERSION_1_3)
        CHECK(vkGetDeviceProcAddr(device, "vkQueueSubmit2") != NULL, "no vkQueueSubmit2");

    VkQueue queue;
    vkGetDeviceQueue(device, 0, 0, &queue);
    const VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    VkFence fence;
    res = vkCreateFence(device, &fence_info, &counting, &fence);
    CHECK(res == VK_SUCCESS, "vkCreateFence: %d", res);
    if (res == VK_SUCCESS) {
        res = vkQueueSubmit(queue, 0, NULL, fence);
        CHECK(res == VK_SUCCESS, "vkQueueSubmit: %d", res);
        res = vkWaitForFences(device, 1, &fence, VK_TRUE, 10ull * 1000 * 1000 * 1000);
        CHECK(res == VK_SUCCESS, "vkWaitForFences: %d", res);
        vkDestroyFence(device, fence, &counting);
    }
    CHECK(vkQueueWaitIdle(queue) == VK_SUCCESS, "vkQueueWaitIdle");
    CHECK(vkDeviceWaitIdle(device) == VK_SUCCESS, "vkDeviceWaitIdle");
    vkDestroyDevice(device, &counting);

out_instance:
    vkDestroyInstance(instance, &counting);
    CHECK(atomic_load(&live) == 0, "%ld allocations through the callbacks never freed",
          atomic_load(&live));
    if (failures)
        return 1;
    printf("layer_probe: ok allocations=%ld\n", atomic_load(&total));
    return 0;
}

/* ---- the layer library on its own ---------------------------------------- */

static int negotiate(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "layer_probe: %s\n", dlerror());
        return 1;
    }
    PFN_vkNegotiateLoaderLayerInterfaceVersion nego =
        (PFN_vkNegotiateLoaderLayerInterfaceVersion)dlsym(lib,
                                                          "vkNegotiateLoaderLayerInterfaceVersion");
    CHECK(nego, "vkNegotiateLoaderLayerInterfaceVersion not exported");
    CHECK(!dlsym(lib, "vkGetInstanceProcAddr"), "vkGetInstanceProcAddr exported");
    if (!nego)
        goto out;

    /* A loader older than interface 2 cannot use us. */
    VkNegotiateLayerInterface v = { .sType = LAYER_NEGOTIATE_INTERFACE_STRUCT,
                                    .loaderLayerInterfaceVersion = 1 };
    CHECK(nego(&v) != VK_SUCCESS, "accepted interface version 1");

    /* A newer loader is answered with 2. */
    v = (VkNegotiateLayerInterface){ .sType = LAYER_NEGOTIATE_INTERFACE_STRUCT,
                                     .loaderLayerInterfaceVersion = 7 };
    CHECK(nego(&v) == VK_SUCCESS, "refused interface version 7");
    CHECK(v.loaderLayerInterfaceVersion == 2, "negotiated %u, want 2",
          v.loaderLayerInterfaceVersion);
    CHECK(v.pfnGetInstanceProcAddr && v.pfnGetDeviceProcAddr, "no vkGet*ProcAddr returned");
    if (!v.pfnGetInstanceProcAddr)
        goto out;

    PFN_vkGetInstanceProcAddr gipa = v.pfnGetInstanceProcAddr;
    CHECK(gipa(VK_NULL_HANDLE, "vkCreateInstance"), "no vkCreateInstance");
    CHECK(gipa(VK_NULL_HANDLE, "vkGetInstanceProcAddr") == (PFN_vkVoidFunction)gipa,
          "vkGetInstanceProcAddr is not itself");
    CHECK(!gipa(VK_NULL_HANDLE, "vkQueueSubmit"), "device function without an instance");
    /* Layers above ours (MangoHud, vkBasalt) fetch vkCreateDevice this way
    * while chaining device creation. */
    CHECK(gipa(VK_NULL_HANDLE, "vkCreateDevice"), "no vkCreateDevice without an instance");

    PFN_vkEnumerateInstanceLayerProperties layers = (PFN_vkEnumerateInstanceLayerProperties)gipa(
        VK_NULL_HANDLE, "vkEnumerateInstanceLayerProperties");
    CHECK(layers, "no vkEnumerateInstanceLayerProperties");
    if (layers) {
        uint32_t n = 0;
        CHECK(layers(&n, NULL) == VK_SUCCESS && n == 1, "layer count %u", n);
        VkLayerProperties props;
        n = 1;
        CHECK(layers(&n, &props) == VK_SUCCESS, "layer properties");
        CHECK(strcmp(props.layerName, LAYER_NAME) == 0, "layer name %s", props.layerName);
        CHECK(props.implementationVersion == 1, "implementation version %u",
              props.implementationVersion);
        n = 0;
        CHECK(layers(&n, &props) == VK_INCOMPLETE, "no VK_INCOMPLETE for a short array");
    }

    PFN_vkEnumerateInstanceExtensionProperties exts =
        (PFN_vkEnumerateInstanceExtensionProperties)gipa(VK_NULL_HANDLE,
                                                         "vkEnumerateInstanceExtensionProperties");
    CHECK(exts, "no vkEnumerateInstanceExtensionProperties");
    if (exts) {
        uint32_t n = 99;
        CHECK(exts(LAYER_NAME, &n, NULL) == VK_SUCCESS && n == 0, "own extensions: %u", n);
        CHECK(exts(NULL, &n, NULL) == VK_ERROR_LAYER_NOT_PRESENT, "NULL layer name answered");
        CHECK(exts("VK_LAYER_other", &n, NULL) == VK_ERROR_LAYER_NOT_PRESENT,
              "other layer's extensions answered");
    }

out:
    dlclose(lib);
    if (failures)
        return 1;
    printf("layer_probe: negotiation ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--negotiate") == 0)
        return negotiate(argv[2]);
    if (argc == 1)
        return probe();
    fprintf(stderr, "usage: layer_probe [--negotiate LIBRARY]\n");
    return 2;
}
