/* SPDX-License-Identifier: MIT */
/* mem_entry.c — the timeline.h hook points of memory events: device
 * memory, buffers and images (mem_device.h does the work).
 *
 * Called tracing or not: the live objects are kept for a session that
 * starts later. While a session wants memory events, the device's
 * collector (which writes them) is started here if nothing else did.
 * Where no session can ever want them the device has no memory tracking
 * (timeline_device.c) and the plumbing does not hand these hooks out.
 */
#include <string.h>

#include "layer/memory/mem_device.h"
#include "layer/timeline.h"
#include "layer/timeline_device.h"

bool tl_memory_events_possible(void)
{
    return tl_session_memory_possible();
}

bool tl_device_tracks_memory(gt_device *dev)
{
    tl_device *td = tl_device_of(dev);
    return td && td->memory;
}

static mem_device *memory_of(gt_device *dev)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return NULL;
    if (tl_session_memory() && !atomic_load_explicit(&td->started, memory_order_acquire))
        tl_device_ensure_started(td);
    return td->memory;
}

void tl_memory_allocated(gt_device *dev, VkDeviceMemory memory, const VkMemoryAllocateInfo *info)
{
    mem_allocated(memory_of(dev), memory, info);
}

void tl_memory_free(gt_device *dev, VkDeviceMemory memory)
{
    mem_free(memory_of(dev), memory);
}

void tl_memory_mapped(gt_device *dev, VkDeviceMemory memory, VkDeviceSize offset, VkDeviceSize size)
{
    mem_mapped(memory_of(dev), memory, offset, size);
}

void tl_memory_unmap(gt_device *dev, VkDeviceMemory memory)
{
    mem_unmap(memory_of(dev), memory);
}

void tl_buffer_created(gt_device *dev, VkBuffer buffer, const VkBufferCreateInfo *info)
{
    mem_buffer_created(memory_of(dev), buffer, info);
}

void tl_buffer_destroy(gt_device *dev, VkBuffer buffer)
{
    mem_destroy_object(memory_of(dev), MT_BUFFER, (uint64_t)buffer);
}

void tl_image_created(gt_device *dev, VkImage image, const VkImageCreateInfo *info)
{
    mem_image_created(memory_of(dev), image, info);
}

void tl_image_destroy(gt_device *dev, VkImage image)
{
    mem_destroy_object(memory_of(dev), MT_IMAGE, (uint64_t)image);
}

/* The entry point a bind came through (layer_hooks_objects.c names it). */
static enum mem_api bind_api(const char *api, bool image)
{
    const size_t n = strlen(api);
    const bool v2 = n > 0 && (api[n - 1] == '2' || strcmp(api + (n > 4 ? n - 4 : 0), "2KHR") == 0);
    const bool khr = v2 && api[n - 1] == 'R';
    if (image)
        return khr  ? MEM_API_BIND_IMAGE_MEMORY2_KHR
               : v2 ? MEM_API_BIND_IMAGE_MEMORY2
                    : MEM_API_BIND_IMAGE_MEMORY;
    return khr  ? MEM_API_BIND_BUFFER_MEMORY2_KHR
           : v2 ? MEM_API_BIND_BUFFER_MEMORY2
                : MEM_API_BIND_BUFFER_MEMORY;
}

void tl_buffers_bound(gt_device *dev, const char *api, uint32_t count,
                      const VkBindBufferMemoryInfo *infos)
{
    mem_device *md = memory_of(dev);
    if (!md || !infos)
        return;
    const enum mem_api which = bind_api(api, false);
    for (uint32_t i = 0; i < count; i++)
        mem_bound(md, MT_BUFFER, which, (uint64_t)infos[i].buffer, infos[i].memory,
                  infos[i].memoryOffset, 0);
}

void tl_images_bound(gt_device *dev, const char *api, uint32_t count,
                     const VkBindImageMemoryInfo *infos)
{
    mem_device *md = memory_of(dev);
    if (!md || !infos)
        return;
    const enum mem_api which = bind_api(api, true);
    for (uint32_t i = 0; i < count; i++) {
        VkImageAspectFlagBits plane = 0;
        for (const VkBaseInStructure *p = infos[i].pNext; p; p = p->pNext)
            if (p->sType == VK_STRUCTURE_TYPE_BIND_IMAGE_PLANE_MEMORY_INFO)
                plane = ((const VkBindImagePlaneMemoryInfo *)(const void *)p)->planeAspect;
        mem_bound(md, MT_IMAGE, which, (uint64_t)infos[i].image, infos[i].memory,
                  infos[i].memoryOffset, plane);
    }
}
