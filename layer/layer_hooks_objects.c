/* SPDX-License-Identifier: MIT */
/* layer_hooks_objects.c — the device-level entry points of memory objects,
 * semaphores, fences and host waits the layer intercepts (loader plumbing,
 * prefix gt_; GT_OBJECT_HOOKS in layer_dispatch.h): like layer_hooks.c,
 * each finds the gt_device, tells the feature through timeline.h (memory
 * events, flows) and calls the next entity. Objects are followed whether a
 * session traces or not (a session that starts later first gets the live
 * ones); waits only while one does. The memory hooks are handed out only
 * where some session may want memory events (gt_hook_is_memory below,
 * layer_interface.c); reached anyway (a layer above kept one), they find
 * no memory tracking on the device and only call down.
 */
#include <string.h>

#include "layer/layer_hooks.h"
#include "layer/timeline.h"

/* ---- host waits, semaphores and fences --------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL gt_WaitForFences(VkDevice device, uint32_t count,
                                                       const VkFence *fences, VkBool32 wait_all,
                                                       uint64_t timeout)
{
    GT_HOOK_ENTER(device, WaitForFences, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    if (dev->disabled)
        return next(device, count, fences, wait_all, timeout);
    const uint64_t begin = tl_wait_begin(dev);
    VkResult res = next(device, count, fences, wait_all, timeout);
    tl_fences_waited(dev, begin, count, fences, wait_all, timeout, res);
    return res;
}

static VkResult wait_semaphores(gt_device *dev, PFN_vkWaitSemaphores next, VkDevice device,
                                const VkSemaphoreWaitInfo *info, uint64_t timeout, const char *api)
{
    if (dev->disabled)
        return next(device, info, timeout);
    const uint64_t begin = tl_wait_begin(dev);
    VkResult res = next(device, info, timeout);
    tl_semaphores_waited(dev, begin, api, info, timeout, res);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_WaitSemaphores(VkDevice device,
                                                        const VkSemaphoreWaitInfo *info,
                                                        uint64_t timeout)
{
    GT_HOOK_ENTER(device, WaitSemaphores, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    return wait_semaphores(dev, next, device, info, timeout, "vkWaitSemaphores");
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_WaitSemaphoresKHR(VkDevice device,
                                                           const VkSemaphoreWaitInfo *info,
                                                           uint64_t timeout)
{
    GT_HOOK_ENTER(device, WaitSemaphoresKHR, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    return wait_semaphores(dev, next, device, info, timeout, "vkWaitSemaphoresKHR");
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_SignalSemaphore(VkDevice device,
                                                         const VkSemaphoreSignalInfo *info)
{
    GT_HOOK_ENTER(device, SignalSemaphore, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_semaphore_signaled(dev, info);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_SignalSemaphoreKHR(VkDevice device,
                                                            const VkSemaphoreSignalInfo *info)
{
    GT_HOOK_ENTER(device, SignalSemaphoreKHR, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_semaphore_signaled(dev, info);
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateSemaphore(VkDevice device,
                                                         const VkSemaphoreCreateInfo *info,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkSemaphore *semaphore)
{
    GT_HOOK_ENTER(device, CreateSemaphore, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, semaphore);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_semaphore_created(dev, *semaphore, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroySemaphore(VkDevice device, VkSemaphore semaphore,
                                                      const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroySemaphore, , )
    if (!dev->disabled && semaphore != VK_NULL_HANDLE)
        tl_semaphore_destroy(dev, semaphore);
    next(device, semaphore, alloc);
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroyFence(VkDevice device, VkFence fence,
                                                  const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroyFence, , )
    if (!dev->disabled && fence != VK_NULL_HANDLE)
        tl_fence_destroy(dev, fence);
    next(device, fence, alloc);
}

/* ---- memory, buffers and images ---------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL gt_AllocateMemory(VkDevice device,
                                                        const VkMemoryAllocateInfo *info,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDeviceMemory *memory)
{
    GT_HOOK_ENTER(device, AllocateMemory, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, memory);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_memory_allocated(dev, *memory, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_FreeMemory(VkDevice device, VkDeviceMemory memory,
                                                const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, FreeMemory, , )
    if (!dev->disabled && memory != VK_NULL_HANDLE)
        tl_memory_free(dev, memory);
    next(device, memory, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_MapMemory(VkDevice device, VkDeviceMemory memory,
                                                   VkDeviceSize offset, VkDeviceSize size,
                                                   VkMemoryMapFlags flags, void **data)
{
    GT_HOOK_ENTER(device, MapMemory, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, memory, offset, size, flags, data);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_memory_mapped(dev, memory, offset, size);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_UnmapMemory(VkDevice device, VkDeviceMemory memory)
{
    GT_HOOK_ENTER(device, UnmapMemory, , )
    if (!dev->disabled)
        tl_memory_unmap(dev, memory);
    next(device, memory);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateBuffer(VkDevice device,
                                                      const VkBufferCreateInfo *info,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkBuffer *buffer)
{
    GT_HOOK_ENTER(device, CreateBuffer, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, buffer);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_buffer_created(dev, *buffer, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroyBuffer(VkDevice device, VkBuffer buffer,
                                                   const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroyBuffer, , )
    if (!dev->disabled && buffer != VK_NULL_HANDLE)
        tl_buffer_destroy(dev, buffer);
    next(device, buffer, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_CreateImage(VkDevice device, const VkImageCreateInfo *info,
                                                     const VkAllocationCallbacks *alloc,
                                                     VkImage *image)
{
    GT_HOOK_ENTER(device, CreateImage, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, info, alloc, image);
    if (!dev->disabled && res == VK_SUCCESS)
        tl_image_created(dev, *image, info);
    return res;
}

static VKAPI_ATTR void VKAPI_CALL gt_DestroyImage(VkDevice device, VkImage image,
                                                  const VkAllocationCallbacks *alloc)
{
    GT_HOOK_ENTER(device, DestroyImage, , )
    if (!dev->disabled && image != VK_NULL_HANDLE)
        tl_image_destroy(dev, image);
    next(device, image, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_BindBufferMemory(VkDevice device, VkBuffer buffer,
                                                          VkDeviceMemory memory,
                                                          VkDeviceSize offset)
{
    GT_HOOK_ENTER(device, BindBufferMemory, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, buffer, memory, offset);
    if (!dev->disabled && res == VK_SUCCESS) {
        const VkBindBufferMemoryInfo bind = { VK_STRUCTURE_TYPE_BIND_BUFFER_MEMORY_INFO, NULL,
                                              buffer, memory, offset };
        tl_buffers_bound(dev, "vkBindBufferMemory", 1, &bind);
    }
    return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL gt_BindImageMemory(VkDevice device, VkImage image,
                                                         VkDeviceMemory memory, VkDeviceSize offset)
{
    GT_HOOK_ENTER(device, BindImageMemory, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)
    VkResult res = next(device, image, memory, offset);
    if (!dev->disabled && res == VK_SUCCESS) {
        const VkBindImageMemoryInfo bind = { VK_STRUCTURE_TYPE_BIND_IMAGE_MEMORY_INFO, NULL, image,
                                             memory, offset };
        tl_images_bound(dev, "vkBindImageMemory", 1, &bind);
    }
    return res;
}

/* vkBindBufferMemory2(KHR), vkBindImageMemory2(KHR): one body each. */
#define GT_BIND2_HOOK(name, Info, call)                                              \
    static VKAPI_ATTR VkResult VKAPI_CALL gt_##name(VkDevice device, uint32_t count, \
                                                    const Info *infos)               \
    {                                                                                \
        GT_HOOK_ENTER(device, name, VK_ERROR_DEVICE_LOST, GT_RESULT_ABSENT)          \
        VkResult res = next(device, count, infos);                                   \
        if (!dev->disabled && res == VK_SUCCESS)                                     \
            call(dev, "vk" #name, count, infos);                                     \
        return res;                                                                  \
    }
GT_BIND2_HOOK(BindBufferMemory2, VkBindBufferMemoryInfo, tl_buffers_bound)
GT_BIND2_HOOK(BindBufferMemory2KHR, VkBindBufferMemoryInfo, tl_buffers_bound)
GT_BIND2_HOOK(BindImageMemory2, VkBindImageMemoryInfo, tl_images_bound)
GT_BIND2_HOOK(BindImageMemory2KHR, VkBindImageMemoryInfo, tl_images_bound)

/* ---- lookup ----------------------------------------------------------- */

static const gt_hook flow_hooks[] = { GT_FLOW_HOOKS(GT_HOOK_ENTRY) };
static const gt_hook memory_hooks[] = { GT_MEMORY_HOOKS(GT_HOOK_ENTRY) };

const gt_hook *gt_object_hook_find(const char *name)
{
    for (size_t i = 0; i < sizeof flow_hooks / sizeof flow_hooks[0]; i++) {
        if (strcmp(flow_hooks[i].name, name) == 0)
            return &flow_hooks[i];
    }
    for (size_t i = 0; i < sizeof memory_hooks / sizeof memory_hooks[0]; i++) {
        if (strcmp(memory_hooks[i].name, name) == 0)
            return &memory_hooks[i];
    }
    return NULL;
}

bool gt_hook_is_memory(const gt_hook *hook)
{
    const size_t n = sizeof memory_hooks / sizeof memory_hooks[0];
    for (size_t i = 0; i < n; i++)
        if (hook == &memory_hooks[i])
            return true;
    return false;
}
