/* SPDX-License-Identifier: MIT */
/* bench_fake_driver.c — see bench_fake_driver.h. */
#include "layer/bench/bench_fake_driver.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Command buffers with objects of their own; later ones share a ring. */
#define FAKE_CBS 64

/* ---- fake dispatchable objects ------------------------------------------------ */

/* The loader's dispatch pointer comes first in every dispatchable object;
 * the layer keys its state on it. */
typedef struct fake_object fake_object;
struct fake_object {
    void *key;
};

static void *instance_key = &instance_key;
static void *device_key = &device_key;
static fake_object fake_instance, fake_physical, fake_device, fake_queue;
static fake_object fake_cbs[FAKE_CBS];
static atomic_ulong handle_counter = 1000;
static atomic_ulong query_counter;

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- fake instance level ------------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL fake_success(void)
{
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo *info,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkInstance *out)
{
    (void)info, (void)alloc;
    fake_instance.key = instance_key;
    *out = (VkInstance)(void *)&fake_instance;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_EnumeratePhysicalDevices(VkInstance instance,
                                                                    uint32_t *count,
                                                                    VkPhysicalDevice *out)
{
    (void)instance;
    fake_physical.key = instance_key;
    if (out && *count >= 1)
        out[0] = (VkPhysicalDevice)(void *)&fake_physical;
    *count = 1;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceProperties(VkPhysicalDevice pd,
                                                                   VkPhysicalDeviceProperties *p)
{
    (void)pd;
    memset(p, 0, sizeof *p);
    p->apiVersion = VK_API_VERSION_1_3;
    p->limits.timestampPeriod = 1.0f;
    p->limits.timestampComputeAndGraphics = VK_TRUE;
    strcpy(p->deviceName, "bench fake device");
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceProperties2(VkPhysicalDevice pd,
                                                                    VkPhysicalDeviceProperties2 *p)
{
    fake_GetPhysicalDeviceProperties(pd, &p->properties);
    for (VkBaseOutStructure *s = p->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES)
            memset(((VkPhysicalDeviceIDProperties *)(void *)s)->deviceUUID, 0xab, VK_UUID_SIZE);
    }
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceQueueFamilyProperties(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties *out)
{
    (void)pd;
    if (out && *count >= 1) {
        memset(out, 0, sizeof *out);
        out[0].queueFlags = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT;
        out[0].queueCount = 1;
        out[0].timestampValidBits = 64;
    }
    *count = 1;
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceFeatures2(VkPhysicalDevice pd,
                                                                  VkPhysicalDeviceFeatures2 *f)
{
    (void)pd;
    for (VkBaseOutStructure *s = f->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES)
            ((VkPhysicalDeviceHostQueryResetFeatures *)(void *)s)->hostQueryReset = VK_TRUE;
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_EnumerateDeviceExtensionProperties(
    VkPhysicalDevice pd, const char *layer, uint32_t *count, VkExtensionProperties *out)
{
    (void)pd, (void)layer;
    if (out && *count >= 1) {
        memset(out, 0, sizeof *out);
        strcpy(out[0].extensionName, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
        out[0].specVersion = 2;
    }
    *count = 1;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_GetTimeDomains(VkPhysicalDevice pd, uint32_t *count,
                                                          VkTimeDomainEXT *out)
{
    (void)pd;
    if (out && *count >= 2) {
        out[0] = VK_TIME_DOMAIN_DEVICE_EXT;
        out[1] = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    *count = 2;
    return VK_SUCCESS;
}

/* One host-visible, coherent type: what the layer asks for when it sets up
 * its result memory (and a required instance call since the layer checks
 * its dispatch: without it the layer passes everything through, and the
 * benchmark would measure nothing). */
static VKAPI_ATTR void VKAPI_CALL
fake_GetPhysicalDeviceMemoryProperties(VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties *p)
{
    (void)pd;
    memset(p, 0, sizeof *p);
    p->memoryTypeCount = 1;
    p->memoryTypes[0].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    p->memoryHeapCount = 1;
    p->memoryHeaps[0].size = UINT64_C(1) << 30;
    p->memoryHeaps[0].flags = VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
}

/* ---- fake device level ---------------------------------------------------------- */

static atomic_ulong timestamps_written;

unsigned long fake_timestamps_written(void)
{
    return atomic_load(&timestamps_written);
}

static VKAPI_ATTR void VKAPI_CALL fake_CmdWriteTimestamp(VkCommandBuffer cb,
                                                         VkPipelineStageFlagBits stage,
                                                         VkQueryPool pool, uint32_t query)
{
    (void)cb, (void)stage, (void)pool, (void)query;
    atomic_fetch_add_explicit(&timestamps_written, 1, memory_order_relaxed);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetDeviceQueue(VkDevice dev, uint32_t family, uint32_t index,
                                                      VkQueue *q)
{
    (void)dev, (void)family, (void)index;
    fake_queue.key = device_key;
    *q = (VkQueue)(void *)&fake_queue;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateHandle(VkDevice dev, const void *info,
                                                        const VkAllocationCallbacks *alloc,
                                                        uint64_t *out)
{
    (void)dev, (void)info, (void)alloc;
    *out = atomic_fetch_add(&handle_counter, 1);
    return VK_SUCCESS;
}

static atomic_uint next_cb;

static VKAPI_ATTR void VKAPI_CALL fake_GetBufferMemoryRequirements(VkDevice dev, VkBuffer buffer,
                                                                   VkMemoryRequirements *req)
{
    (void)dev, (void)buffer;
    *req = (VkMemoryRequirements){ .size = 4096, .alignment = 256, .memoryTypeBits = 1 };
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_AllocateCommandBuffers(
    VkDevice dev, const VkCommandBufferAllocateInfo *info, VkCommandBuffer *out)
{
    (void)dev;
    for (uint32_t i = 0; i < info->commandBufferCount; i++) {
        unsigned n = atomic_fetch_add(&next_cb, 1);
        static fake_object extra[256];
        fake_object *o = n < FAKE_CBS ? &fake_cbs[n] : &extra[(n - FAKE_CBS) % 256];
        o->key = device_key;
        out[i] = (VkCommandBuffer)(void *)o;
    }
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_GetQueryPoolResults(VkDevice dev, VkQueryPool pool,
                                                               uint32_t first, uint32_t count,
                                                               size_t size, void *data,
                                                               VkDeviceSize stride,
                                                               VkQueryResultFlags flags)
{
    (void)dev, (void)pool, (void)first, (void)size, (void)flags;
    uint64_t base = monotonic_ns();
    for (uint32_t i = 0; i < count; i++) {
        uint64_t *v = (uint64_t *)(void *)((char *)data + i * stride);
        v[0] = base + i * 10 + (atomic_fetch_add(&query_counter, 1) & 1);
        v[1] = 1;
    }
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL
fake_GetCalibratedTimestamps(VkDevice dev, uint32_t count, const VkCalibratedTimestampInfoEXT *in,
                             uint64_t *ts, uint64_t *deviation)
{
    (void)dev, (void)in;
    uint64_t now = monotonic_ns();
    for (uint32_t i = 0; i < count; i++)
        ts[i] = now;
    *deviation = 1;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL fake_void(void)
{
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice pd,
                                                        const VkDeviceCreateInfo *info,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDevice *out)
{
    (void)pd, (void)info, (void)alloc;
    fake_device.key = device_key;
    *out = (VkDevice)(void *)&fake_device;
    return VK_SUCCESS;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_gipa(VkInstance instance, const char *name)
{
    (void)instance;
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } table[] = {
        { "vkCreateInstance", (PFN_vkVoidFunction)fake_CreateInstance },
        { "vkDestroyInstance", (PFN_vkVoidFunction)fake_void },
        { "vkEnumeratePhysicalDevices", (PFN_vkVoidFunction)fake_EnumeratePhysicalDevices },
        { "vkGetPhysicalDeviceProperties", (PFN_vkVoidFunction)fake_GetPhysicalDeviceProperties },
        { "vkGetPhysicalDeviceProperties2", (PFN_vkVoidFunction)fake_GetPhysicalDeviceProperties2 },
        { "vkGetPhysicalDeviceQueueFamilyProperties",
          (PFN_vkVoidFunction)fake_GetPhysicalDeviceQueueFamilyProperties },
        { "vkGetPhysicalDeviceMemoryProperties",
          (PFN_vkVoidFunction)fake_GetPhysicalDeviceMemoryProperties },
        { "vkGetPhysicalDeviceFeatures2", (PFN_vkVoidFunction)fake_GetPhysicalDeviceFeatures2 },
        { "vkEnumerateDeviceExtensionProperties",
          (PFN_vkVoidFunction)fake_EnumerateDeviceExtensionProperties },
        { "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT",
          (PFN_vkVoidFunction)fake_GetTimeDomains },
        { "vkCreateDevice", (PFN_vkVoidFunction)fake_CreateDevice },
        { "vkGetDeviceProcAddr", (PFN_vkVoidFunction)fake_gdpa },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, name) == 0)
            return table[i].fn;
    }
    return NULL;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_gdpa(VkDevice dev, const char *name)
{
    (void)dev;
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } table[] = {
        { "vkGetDeviceQueue", (PFN_vkVoidFunction)fake_GetDeviceQueue },
        { "vkCreateCommandPool", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkCreateQueryPool", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkCreateFence", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkAllocateMemory", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkCreateBuffer", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkCreateImage", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkGetBufferMemoryRequirements", (PFN_vkVoidFunction)fake_GetBufferMemoryRequirements },
        { "vkCreateSwapchainKHR", (PFN_vkVoidFunction)fake_CreateHandle },
        { "vkAllocateCommandBuffers", (PFN_vkVoidFunction)fake_AllocateCommandBuffers },
        { "vkGetQueryPoolResults", (PFN_vkVoidFunction)fake_GetQueryPoolResults },
        { "vkCmdWriteTimestamp", (PFN_vkVoidFunction)fake_CmdWriteTimestamp },
        { "vkGetCalibratedTimestampsEXT", (PFN_vkVoidFunction)fake_GetCalibratedTimestamps },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, name) == 0)
            return table[i].fn;
    }
    /* Everything else: commands return nothing, the rest VK_SUCCESS. */
    if (strncmp(name, "vkCmd", 5) == 0 || strncmp(name, "vkDestroy", 9) == 0 ||
        strncmp(name, "vkFree", 6) == 0)
        return (PFN_vkVoidFunction)fake_void;
    return (PFN_vkVoidFunction)fake_success;
}

VKAPI_ATTR VkResult VKAPI_CALL fake_set_loader_data(VkDevice dev, void *object)
{
    (void)dev;
    ((fake_object *)object)->key = device_key;
    return VK_SUCCESS;
}
