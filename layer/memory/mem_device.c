/* SPDX-License-Identifier: MIT */
/* mem_device.c — see mem_device.h. */
#include "layer/memory/mem_device.h"

#include <string.h>

#include "layer/gpu_clock.h"
#include "layer/log.h"

static const char *const api_names[MEM_API_COUNT] = {
    [MEM_API_ALLOCATE_MEMORY] = "vkAllocateMemory",
    [MEM_API_FREE_MEMORY] = "vkFreeMemory",
    [MEM_API_MAP_MEMORY] = "vkMapMemory",
    [MEM_API_UNMAP_MEMORY] = "vkUnmapMemory",
    [MEM_API_CREATE_BUFFER] = "vkCreateBuffer",
    [MEM_API_DESTROY_BUFFER] = "vkDestroyBuffer",
    [MEM_API_CREATE_IMAGE] = "vkCreateImage",
    [MEM_API_DESTROY_IMAGE] = "vkDestroyImage",
    [MEM_API_BIND_BUFFER_MEMORY] = "vkBindBufferMemory",
    [MEM_API_BIND_BUFFER_MEMORY2] = "vkBindBufferMemory2",
    [MEM_API_BIND_BUFFER_MEMORY2_KHR] = "vkBindBufferMemory2KHR",
    [MEM_API_BIND_IMAGE_MEMORY] = "vkBindImageMemory",
    [MEM_API_BIND_IMAGE_MEMORY2] = "vkBindImageMemory2",
    [MEM_API_BIND_IMAGE_MEMORY2_KHR] = "vkBindImageMemory2KHR",
    [MEM_API_SET_NAME] = "vkSetDebugUtilsObjectNameEXT",
};

const char *mem_api_name(enum mem_api api)
{
    return api > MEM_API_NONE && api < MEM_API_COUNT ? api_names[api] : NULL;
}

/* Whether the physical device offers `name` (VK_EXT_memory_budget). */
static bool device_has(gt_device *dev, const char *name)
{
    const gt_instance *inst = dev->instance;
    uint32_t n = 0;
    if (inst->vk.EnumerateDeviceExtensionProperties(dev->physical_device, NULL, &n, NULL) !=
            VK_SUCCESS ||
        !n)
        return false;
    VkExtensionProperties *ext =
        gt_zalloc(&dev->alloc, (size_t)n * sizeof *ext, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
    if (!ext)
        return false;
    bool found = false;
    VkResult r = inst->vk.EnumerateDeviceExtensionProperties(dev->physical_device, NULL, &n, ext);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n && !found; i++)
        found = strcmp(ext[i].extensionName, name) == 0;
    gt_free(&dev->alloc, ext);
    return found;
}

mem_device *mem_create(gt_device *dev, uint32_t ordinal, int pid, tl_object_names *names)
{
    mem_device *md = gt_zalloc(&dev->alloc, sizeof *md, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!md)
        return NULL;
    const gt_instance *inst = dev->instance;
    md->gt = dev;
    md->alloc = &dev->alloc;
    md->pid = pid;
    md->ordinal = ordinal;
    md->names = names;
    inst->vk.GetPhysicalDeviceMemoryProperties(dev->physical_device, &md->props);
    /* The budget is read with vkGetPhysicalDeviceMemoryProperties2 (core
     * 1.1 or the instance extension) where the device has the extension. */
    const bool props2 = inst->vk.GetPhysicalDeviceMemoryProperties2 ||
                        (inst->has_gpdp2 && inst->vk.GetPhysicalDeviceMemoryProperties2KHR);
    md->budget = props2 && device_has(dev, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    pthread_mutex_init(&md->lock, NULL);
    mt_init(&md->table, &dev->alloc);
    mq_init(&md->queue);
    return md;
}

void mem_destroy(mem_device *md)
{
    if (!md)
        return;
    gt_info("device %u memory at vkDestroyDevice: allocations=%llu bytes=%llu frees=%llu "
            "freed_bytes=%llu buffers=%llu images=%llu alive_memory=%u alive_buffers=%u "
            "alive_images=%u",
            md->ordinal, (unsigned long long)md->allocations,
            (unsigned long long)md->allocated_bytes, (unsigned long long)md->frees,
            (unsigned long long)md->freed_bytes, (unsigned long long)md->buffers,
            (unsigned long long)md->images, md->table.kinds[MT_MEMORY].count,
            md->table.kinds[MT_BUFFER].count, md->table.kinds[MT_IMAGE].count);
    mq_finish(&md->queue, md->alloc);
    mt_finish(&md->table);
    pthread_mutex_destroy(&md->lock);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        gt_free(md->alloc, md->snapshots[i].objects);
    gt_free(md->alloc, md);
}

/* ---- records ---------------------------------------------------------------------- */

/* With md->lock held: a record of `o` (as it is now), when a session wants
 * them. Returns whether a block became full (wake the collector after
 * unlocking). */
static bool record(mem_device *md, enum mq_kind kind, enum mem_api api, enum mt_kind object_kind,
                   const mt_object *o, uint32_t binding, uint64_t offset, uint64_t size)
{
    uint64_t seq;
    bool filled;
    mq_record *r = mq_push(&md->queue, md->alloc, &seq, &filled);
    if (!r)
        return false;
    /* Read under the lock: records are in time order, as the totals
     * change. */
    r->ts = gc_boottime_ns();
    r->kind = (uint8_t)kind;
    r->api = (uint8_t)api;
    r->object_kind = (uint8_t)object_kind;
    r->binding = (uint8_t)binding;
    r->offset = offset;
    r->size = size;
    r->obj = *o;
    return filled;
}

static void unlock_and_wake(mem_device *md, bool wake)
{
    /* The collector goes with the lock held (msq_detach): call it inside. */
    if (wake && md->wake)
        md->wake(md->wake_ctx);
    pthread_mutex_unlock(&md->lock);
}

/* ---- hooks --------------------------------------------------------------------- */

void mem_allocated(mem_device *md, VkDeviceMemory memory, const VkMemoryAllocateInfo *info)
{
    if (!md || !info)
        return;
    const bool rec = tl_session_memory();
    uint64_t dedicated = 0;
    bool dedicated_image = false;
    uint32_t export_types = 0, allocate_flags = 0;
    uint8_t import = MT_IMPORT_NONE;
    for (const VkBaseInStructure *p = info->pNext; p; p = p->pNext) {
        switch (p->sType) {
        case VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO: {
            const VkMemoryDedicatedAllocateInfo *d = (const void *)p;
            dedicated_image = d->image != VK_NULL_HANDLE;
            dedicated = dedicated_image ? (uint64_t)d->image : (uint64_t)d->buffer;
            break;
        }
        case VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO:
            export_types = ((const VkExportMemoryAllocateInfo *)(const void *)p)->handleTypes;
            break;
        case VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO:
            allocate_flags = ((const VkMemoryAllocateFlagsInfo *)(const void *)p)->flags;
            break;
        case VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR:
            import = MT_IMPORT_FD;
            break;
        case VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT:
            import = MT_IMPORT_HOST_POINTER;
            break;
        case VK_STRUCTURE_TYPE_IMPORT_MEMORY_WIN32_HANDLE_INFO_KHR:
            import = MT_IMPORT_OTHER;
            break;
        default:
            break;
        }
    }
    pthread_mutex_lock(&md->lock);
    mt_object *o = mt_put(&md->table, MT_MEMORY, (uint64_t)memory);
    bool wake = false;
    if (o) {
        o->size = info->allocationSize;
        o->type = info->memoryTypeIndex;
        o->heap = info->memoryTypeIndex < md->props.memoryTypeCount
                      ? md->props.memoryTypes[info->memoryTypeIndex].heapIndex
                      : UINT32_MAX;
        o->u.memory.dedicated = dedicated;
        o->u.memory.dedicated_image = dedicated_image;
        o->u.memory.export_types = export_types;
        o->u.memory.allocate_flags = allocate_flags;
        o->u.memory.import = import;
        mt_allocated(&md->table, o);
        md->allocations++;
        md->allocated_bytes += o->size;
        if (rec)
            wake = record(md, MQ_ALLOCATE, MEM_API_ALLOCATE_MEMORY, MT_MEMORY, o, 0, 0, 0);
    }
    unlock_and_wake(md, wake);
}

void mem_free(mem_device *md, VkDeviceMemory memory)
{
    if (!md)
        return;
    const bool rec = tl_session_memory();
    pthread_mutex_lock(&md->lock);
    const mt_object *o = mt_get(&md->table, MT_MEMORY, (uint64_t)memory);
    bool wake = false;
    if (o) {
        md->frees++;
        md->freed_bytes += o->size;
    }
    if (o && rec)
        wake = record(md, MQ_FREE, MEM_API_FREE_MEMORY, MT_MEMORY, o, 0, 0, 0);
    mt_remove(&md->table, MT_MEMORY, (uint64_t)memory);
    unlock_and_wake(md, wake);
}

static void set_mapped(mem_device *md, VkDeviceMemory memory, bool mapped, VkDeviceSize offset,
                       VkDeviceSize size)
{
    if (!md)
        return;
    const bool rec = tl_session_memory();
    pthread_mutex_lock(&md->lock);
    mt_object *o = mt_get(&md->table, MT_MEMORY, (uint64_t)memory);
    bool wake = false;
    if (o) {
        o->u.memory.mapped = mapped;
        if (rec)
            wake =
                record(md, mapped ? MQ_MAP : MQ_UNMAP,
                       mapped ? MEM_API_MAP_MEMORY : MEM_API_UNMAP_MEMORY, MT_MEMORY, o, 0, offset,
                       size == VK_WHOLE_SIZE && offset < o->size ? o->size - offset : size);
    }
    unlock_and_wake(md, wake);
}

void mem_mapped(mem_device *md, VkDeviceMemory memory, VkDeviceSize offset, VkDeviceSize size)
{
    set_mapped(md, memory, true, offset, size);
}

void mem_unmap(mem_device *md, VkDeviceMemory memory)
{
    set_mapped(md, memory, false, 0, 0);
}

uint64_t mem_requirement(mem_device *md, enum mt_kind kind, uint64_t handle,
                         VkImageAspectFlagBits plane)
{
    gt_device *dev = md->gt;
    VkMemoryRequirements req = { 0 };
    if (kind == MT_BUFFER) {
        dev->vk.GetBufferMemoryRequirements(dev->handle, (VkBuffer)handle, &req);
        return req.size;
    }
    if (kind != MT_IMAGE)
        return 0;
    if (!plane) {
        dev->vk.GetImageMemoryRequirements(dev->handle, (VkImage)handle, &req);
        return req.size;
    }
    /* A plane of a disjoint image: only through the *2 query. */
    PFN_vkGetImageMemoryRequirements2 get2 = dev->vk.GetImageMemoryRequirements2
                                                 ? dev->vk.GetImageMemoryRequirements2
                                                 : dev->vk.GetImageMemoryRequirements2KHR;
    if (!get2)
        return 0;
    const VkImagePlaneMemoryRequirementsInfo plane_info = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_PLANE_MEMORY_REQUIREMENTS_INFO,
        .planeAspect = plane,
    };
    const VkImageMemoryRequirementsInfo2 info = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_REQUIREMENTS_INFO_2,
        .pNext = &plane_info,
        .image = (VkImage)handle,
    };
    VkMemoryRequirements2 out = { .sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2 };
    get2(dev->handle, &info, &out);
    return out.memoryRequirements.size;
}

void mem_buffer_created(mem_device *md, VkBuffer buffer, const VkBufferCreateInfo *info)
{
    if (!md || !info)
        return;
    const bool rec = tl_session_memory();
    /* What its bind will count, asked now that nobody else knows the
     * buffer (outside the lock: a driver call). */
    const uint64_t req = rec ? mem_requirement(md, MT_BUFFER, (uint64_t)buffer, 0) : 0;
    pthread_mutex_lock(&md->lock);
    mt_object *o = mt_put(&md->table, MT_BUFFER, (uint64_t)buffer);
    bool wake = false;
    if (o) {
        o->size = info->size;
        o->req_size = req;
        o->usage = info->usage;
        o->flags = info->flags;
        md->buffers++;
        if (rec)
            wake = record(md, MQ_CREATE, MEM_API_CREATE_BUFFER, MT_BUFFER, o, 0, 0, 0);
    }
    unlock_and_wake(md, wake);
}

void mem_image_created(mem_device *md, VkImage image, const VkImageCreateInfo *info)
{
    if (!md || !info)
        return;
    const bool rec = tl_session_memory();
    const bool disjoint = info->flags & VK_IMAGE_CREATE_DISJOINT_BIT;
    const uint64_t req = rec && !disjoint ? mem_requirement(md, MT_IMAGE, (uint64_t)image, 0) : 0;
    pthread_mutex_lock(&md->lock);
    mt_object *o = mt_put(&md->table, MT_IMAGE, (uint64_t)image);
    bool wake = false;
    if (o) {
        o->size = o->req_size = req;
        o->usage = info->usage;
        o->flags = info->flags;
        o->u.image.format = info->format;
        o->u.image.width = info->extent.width;
        o->u.image.height = info->extent.height;
        o->u.image.depth = info->extent.depth;
        o->u.image.mip_levels = (uint16_t)info->mipLevels;
        o->u.image.array_layers = (uint16_t)info->arrayLayers;
        o->u.image.samples = (uint8_t)info->samples;
        o->u.image.tiling = (uint8_t)info->tiling;
        o->u.image.disjoint = disjoint;
        md->images++;
        if (rec)
            wake = record(md, MQ_CREATE, MEM_API_CREATE_IMAGE, MT_IMAGE, o, 0, 0, 0);
    }
    unlock_and_wake(md, wake);
}

void mem_destroy_object(mem_device *md, enum mt_kind kind, uint64_t handle)
{
    if (!md)
        return;
    const bool rec = tl_session_memory();
    pthread_mutex_lock(&md->lock);
    const mt_object *o = mt_get(&md->table, kind, handle);
    bool wake = false;
    if (o && rec)
        wake = record(md, MQ_DESTROY,
                      kind == MT_BUFFER ? MEM_API_DESTROY_BUFFER : MEM_API_DESTROY_IMAGE, kind, o,
                      0, 0, 0);
    mt_remove(&md->table, kind, handle);
    unlock_and_wake(md, wake);
}

void mem_bound(mem_device *md, enum mt_kind kind, enum mem_api api, uint64_t object,
               VkDeviceMemory memory, VkDeviceSize offset, VkImageAspectFlagBits plane)
{
    /* A swapchain's image is bound to no memory of ours. */
    if (!md || !memory)
        return;
    const bool rec = tl_session_memory();
    pthread_mutex_lock(&md->lock);
    mt_object *o = mt_get(&md->table, kind, object);
    uint64_t size = o && !plane ? o->req_size : 0;
    if (o && !size && rec) {
        /* Created before the session: ask now, outside the lock. */
        pthread_mutex_unlock(&md->lock);
        size = mem_requirement(md, kind, object, plane);
        pthread_mutex_lock(&md->lock);
        o = mt_get(&md->table, kind, object);
        if (o && !plane)
            o->req_size = size;
    }
    const mt_object *m = mt_get(&md->table, MT_MEMORY, (uint64_t)memory);
    bool wake = false;
    if (o && m && o->nbindings < MT_MAX_BINDINGS) {
        mt_binding *b = &o->bindings[o->nbindings++];
        *b = (mt_binding){ (uint64_t)memory, offset, size, m->type, m->heap, (uint32_t)plane };
        if (kind == MT_IMAGE && !o->size && !plane)
            o->size = size;
        mt_bound(&md->table, b);
        if (rec)
            wake = record(md, MQ_BIND, api, kind, o, o->nbindings - 1, 0, 0);
    }
    unlock_and_wake(md, wake);
}

void mem_named(mem_device *md, VkObjectType type, uint64_t handle)
{
    if (!md || !tl_session_memory())
        return;
    enum mt_kind kind;
    switch (type) {
    case VK_OBJECT_TYPE_DEVICE_MEMORY:
        kind = MT_MEMORY;
        break;
    case VK_OBJECT_TYPE_BUFFER:
        kind = MT_BUFFER;
        break;
    case VK_OBJECT_TYPE_IMAGE:
        kind = MT_IMAGE;
        break;
    default:
        return;
    }
    pthread_mutex_lock(&md->lock);
    const mt_object *o = mt_get(&md->table, kind, handle);
    const bool wake = o && record(md, MQ_NAMED, MEM_API_SET_NAME, kind, o, 0, 0, 0);
    unlock_and_wake(md, wake);
}

/* ---- snapshots ------------------------------------------------------------------- */

/* Bound sizes the hooks could not know (bound while no session wanted
 * memory events). With md->lock held. */
static void complete_sizes(mem_device *md)
{
    for (unsigned k = MT_BUFFER; k <= MT_IMAGE; k++) {
        uint32_t cursor = 0;
        mt_object *o;
        while ((o = mt_next(&md->table, (enum mt_kind)k, &cursor))) {
            for (uint32_t b = 0; b < o->nbindings; b++) {
                mt_binding *bd = &o->bindings[b];
                if (bd->size)
                    continue;
                if (!bd->plane && !o->req_size)
                    o->req_size = mem_requirement(md, (enum mt_kind)k, o->handle, 0);
                bd->size = bd->plane ? mem_requirement(md, (enum mt_kind)k, o->handle,
                                                       (VkImageAspectFlagBits)bd->plane)
                                     : o->req_size;
                if (k == MT_IMAGE && !o->size && !bd->plane)
                    o->size = bd->size;
                mt_bound(&md->table, bd);
            }
        }
    }
}

void mem_slot_started(mem_device *md, unsigned slot)
{
    if (!md || slot >= TL_SESSION_SLOTS)
        return;
    const uint32_t gen = tl_session_slot_generation(slot);
    pthread_mutex_lock(&md->lock);
    mem_snapshot *sn = &md->snapshots[slot];
    if (sn->gen == gen) {
        pthread_mutex_unlock(&md->lock);
        return;
    }
    complete_sizes(md);
    const uint32_t n = md->table.kinds[MT_MEMORY].count + md->table.kinds[MT_BUFFER].count +
                       md->table.kinds[MT_IMAGE].count;
    if (n > sn->cap) {
        gt_free(md->alloc, sn->objects);
        sn->cap = n + n / 2 + 16;
        sn->objects = gt_zalloc(md->alloc, (size_t)sn->cap * sizeof *sn->objects,
                                VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
        if (!sn->objects)
            sn->cap = 0;
    }
    sn->count = 0;
    sn->incomplete = n && !sn->objects;
    for (unsigned k = 0; k < MT_KINDS && sn->objects; k++) {
        uint32_t cursor = 0;
        const mt_object *o;
        while ((o = mt_next(&md->table, (enum mt_kind)k, &cursor)))
            sn->objects[sn->count++] = *o;
        if (k == MT_MEMORY)
            sn->memory_end = sn->count;
        else if (k == MT_BUFFER)
            sn->buffer_end = sn->count;
    }
    sn->gen = gen;
    sn->since = md->queue.next_seq;
    sn->queue_lost = md->queue.lost;
    sn->ts = gc_boottime_ns();
    pthread_mutex_unlock(&md->lock);
}
