/* SPDX-License-Identifier: MIT */
/* timeline_query.c — the layer's own timestamp queries and command buffers.
 *
 * Queries: VkQueryPools of TL_CHUNKS_PER_POOL x TL_CHUNK_QUERIES timestamp
 * queries, handed out a chunk at a time to recordings and recycled when
 * the last reference to a recording goes (by then no submission that wrote
 * them is pending and their results have been read). A chunk the device
 * may have written is held until the collector has seen a later
 * submission's timestamps complete (tl_queries says why), then reset
 * on the host (host query reset) and free again, so recordings start with
 * reset queries and record nothing extra; without host query reset,
 * whoever takes a chunk records vkCmdResetQueryPool for it before its
 * first use (outside any render pass).
 *
 * Own command buffers: one command pool per queue, created on first use,
 * for the few submissions the layer makes itself (a timestamp around
 * simultaneous-use command buffers, bracket calibration). Recorded and
 * submitted under the application's synchronisation of that queue; the
 * collector only hands finished ones back through the free list.
 */
#include <string.h>

#include "layer/timeline_query.h"

#include "layer/timeline_util.h"

void tl_queries_init(tl_queries *q)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
}

void tl_queries_finish(tl_device *td)
{
    tl_queries *q = &td->queries;
    gt_device *dev = td->gt;
    tl_qblock *b = q->blocks;
    while (b) {
        tl_qblock *next = b->next;
        dev->vk.DestroyQueryPool(dev->handle, b->pool, tl_vk_alloc(td));
        if (b->buffer)
            dev->vk.DestroyBuffer(dev->handle, b->buffer, tl_vk_alloc(td));
        if (b->memory)
            dev->vk.FreeMemory(dev->handle, b->memory, tl_vk_alloc(td));
        tl_free(td, b);
        b = next;
    }
    q->blocks = NULL;
    q->free = NULL;
    q->held = q->held_tail = NULL;
    q->nheld = 0;
    pthread_mutex_destroy(&q->lock);
}

void tl_query_reset_host(tl_device *td, const tl_qchunk *chunk)
{
    td->reset_query_pool(td->gt->handle, chunk->pool, chunk->first, TL_CHUNK_QUERIES);
}

static VkMappedMemoryRange chunk_range(const tl_device *td, const tl_qchunk *chunk)
{
    const VkDeviceSize atom = td->props.limits.nonCoherentAtomSize;
    VkMappedMemoryRange range = {
        .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
        .memory = chunk->memory,
        .offset = chunk->offset,
        .size = TL_CHUNK_QUERIES * 2 * sizeof(uint64_t),
    };
    if (!atom || atom > range.size || range.size % atom) {
        range.offset = 0; /* the whole mapping: always aligned */
        range.size = VK_WHOLE_SIZE;
    }
    return range;
}

void tl_results_invalidate(tl_device *td, const tl_qchunk *chunk)
{
    const VkMappedMemoryRange range = chunk_range(td, chunk);
    td->gt->vk.InvalidateMappedMemoryRanges(td->gt->handle, 1, &range);
}

void tl_results_flush(tl_device *td, const tl_qchunk *chunk)
{
    const VkMappedMemoryRange range = chunk_range(td, chunk);
    td->gt->vk.FlushMappedMemoryRanges(td->gt->handle, 1, &range);
}

/* A host-visible buffer for a block's results, mapped. On
 * failure the block's chunks are read with vkGetQueryPoolResults. */
static uint64_t *results_buffer(tl_device *td, tl_qblock *b, uint32_t queries)
{
    gt_device *dev = td->gt;
    const VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = (VkDeviceSize)queries * 2 * sizeof(uint64_t),
        .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    if (dev->vk.CreateBuffer(dev->handle, &info, tl_vk_alloc(td), &b->buffer) != VK_SUCCESS) {
        b->buffer = VK_NULL_HANDLE;
        return NULL;
    }
    VkMemoryRequirements req;
    dev->vk.GetBufferMemoryRequirements(dev->handle, b->buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    dev->instance->vk.GetPhysicalDeviceMemoryProperties(dev->physical_device, &mp);
    const VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    uint32_t type = UINT32_MAX;
    for (int pass = 0; pass < 2 && type == UINT32_MAX; pass++) {
        /* Cached first: the collector reads every word (flushes and
       * invalidations make any host-visible type work). */
        VkMemoryPropertyFlags want = pass ? need : need | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
        for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++) {
            if ((req.memoryTypeBits & (1u << i)) &&
                (mp.memoryTypes[i].propertyFlags & want) == want)
                type = i;
        }
    }
    void *map = NULL;
    const VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    if (type == UINT32_MAX ||
        dev->vk.AllocateMemory(dev->handle, &alloc, tl_vk_alloc(td), &b->memory) != VK_SUCCESS) {
        b->memory = VK_NULL_HANDLE;
    } else if (dev->vk.BindBufferMemory(dev->handle, b->buffer, b->memory, 0) == VK_SUCCESS &&
               dev->vk.MapMemory(dev->handle, b->memory, 0, VK_WHOLE_SIZE, 0, &map) == VK_SUCCESS) {
        memset(map, 0, (size_t)info.size);
        return map;
    }
    dev->vk.DestroyBuffer(dev->handle, b->buffer, tl_vk_alloc(td));
    b->buffer = VK_NULL_HANDLE;
    if (b->memory)
        dev->vk.FreeMemory(dev->handle, b->memory, tl_vk_alloc(td));
    b->memory = VK_NULL_HANDLE;
    return NULL;
}

/* Called with the lock held. */
static bool add_pool(tl_device *td)
{
    gt_device *dev = td->gt;
    tl_queries *q = &td->queries;
    tl_qblock *b = tl_alloc(td, sizeof *b);
    if (!b)
        return false;
    const VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = TL_CHUNKS_PER_POOL * TL_CHUNK_QUERIES,
    };
    memset(b, 0, sizeof *b);
    if (dev->vk.CreateQueryPool(dev->handle, &info, tl_vk_alloc(td), &b->pool) != VK_SUCCESS) {
        tl_free(td, b);
        return false;
    }
    uint64_t *results = td->readback_copy ? results_buffer(td, b, info.queryCount) : NULL;
    /* New queries are in an undefined state until reset. */
    if (td->host_reset)
        td->reset_query_pool(dev->handle, b->pool, 0, info.queryCount);
    for (uint32_t i = 0; i < TL_CHUNKS_PER_POOL; i++) {
        b->chunks[i].pool = b->pool;
        b->chunks[i].first = i * TL_CHUNK_QUERIES;
        b->chunks[i].buffer = results ? b->buffer : VK_NULL_HANDLE;
        b->chunks[i].memory = results ? b->memory : VK_NULL_HANDLE;
        b->chunks[i].offset = (VkDeviceSize)i * TL_CHUNK_QUERIES * 2 * sizeof(uint64_t);
        b->chunks[i].results = results ? results + (size_t)i * TL_CHUNK_QUERIES * 2 : NULL;
        b->chunks[i].next_free = q->free;
        q->free = &b->chunks[i];
    }
    b->next = q->blocks;
    q->blocks = b;
    q->npools++;
    return true;
}

tl_qchunk *tl_query_take(tl_device *td)
{
    tl_queries *q = &td->queries;
    pthread_mutex_lock(&q->lock);
    if (!q->free && !add_pool(td)) {
        pthread_mutex_unlock(&q->lock);
        tl_warn_once(td, TL_WARN_NO_SLOTS,
                     "cannot create a timestamp query pool; "
                     "some regions stay untimed");
        return NULL;
    }
    tl_qchunk *c = q->free;
    q->free = c->next_free;
    pthread_mutex_unlock(&q->lock);
    c->next_free = NULL;
    return c;
}

bool tl_queries_reusable(tl_device *td, uint32_t reuse_after)
{
    const tl_queries *q = &td->queries;
    return atomic_load_explicit(&q->have_seen, memory_order_acquire) &&
           (int32_t)(atomic_load_explicit(&q->seen_complete, memory_order_relaxed) - reuse_after) >=
               0;
}

void tl_query_give(tl_device *td, tl_qchunk *chunk, bool written)
{
    if (!chunk)
        return;
    tl_queries *q = &td->queries;
    pthread_mutex_lock(&q->lock);
    if (written) {
        /* Numbers only grow, and are read under the lock: the held list
       * stays ordered. */
        chunk->reuse_after = tl_peek_submission_id();
        chunk->next_free = NULL;
        if (q->held_tail)
            q->held_tail->next_free = chunk;
        else
            q->held = chunk;
        q->held_tail = chunk;
        q->nheld++;
    } else {
        /* Never written since its last reset. */
        chunk->next_free = q->free;
        q->free = chunk;
    }
    pthread_mutex_unlock(&q->lock);
}

void tl_queries_seen_complete(tl_device *td, uint32_t id)
{
    tl_queries *q = &td->queries;
    /* Only the collector moves it. */
    if (!atomic_load_explicit(&q->have_seen, memory_order_relaxed) ||
        (int32_t)(id - atomic_load_explicit(&q->seen_complete, memory_order_relaxed)) > 0) {
        atomic_store_explicit(&q->seen_complete, id, memory_order_relaxed);
        atomic_store_explicit(&q->have_seen, true, memory_order_release);
    }
    pthread_mutex_lock(&q->lock);
    tl_qchunk *ready = NULL, **tail = &ready;
    while (q->held && tl_queries_reusable(td, q->held->reuse_after)) {
        tl_qchunk *c = q->held;
        q->held = c->next_free;
        q->nheld--;
        c->next_free = NULL;
        *tail = c;
        tail = &c->next_free;
    }
    if (!q->held)
        q->held_tail = NULL;
    pthread_mutex_unlock(&q->lock);
    if (!ready)
        return;
    if (td->host_reset) {
        for (tl_qchunk *c = ready; c; c = c->next_free)
            tl_query_reset_host(td, c);
    }
    pthread_mutex_lock(&q->lock);
    *tail = q->free;
    q->free = ready;
    pthread_mutex_unlock(&q->lock);
}

/* ---- own command buffers -------------------------------------------------- */

/* Command buffers of the layer's own are dispatchable objects the loader
 * never saw: pfnSetDeviceLoaderData (from the loader, kept in gt_device)
 * gives them the device's dispatch pointer before any call goes through
 * them. On failure nothing is left allocated. */
static VkResult allocate_own_cbs(gt_device *dev, const VkCommandBufferAllocateInfo *info,
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

static VkCommandBuffer own_get(tl_device *td, tl_queue *q)
{
    gt_device *dev = td->gt;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    pthread_mutex_lock(&q->own_lock);
    if (q->own_nfree)
        cb = q->own_free[--q->own_nfree];
    pthread_mutex_unlock(&q->own_lock);
    if (cb)
        return cb;

    if (!q->own_pool) {
        const VkCommandPoolCreateInfo info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT |
                     VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
            .queueFamilyIndex = q->family,
        };
        if (dev->vk.CreateCommandPool(dev->handle, &info, tl_vk_alloc(td), &q->own_pool) !=
            VK_SUCCESS) {
            q->own_pool = VK_NULL_HANDLE;
            return VK_NULL_HANDLE;
        }
    }
    const VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = q->own_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    /* Makes the handle dispatchable through the loader as well. */
    if (allocate_own_cbs(dev, &alloc, &cb) != VK_SUCCESS)
        return VK_NULL_HANDLE;
    /* Grow the free list now, so handing it back can never fail. */
    pthread_mutex_lock(&q->own_lock);
    bool ok =
        tl_grow(td, (void **)&q->own_free, &q->own_cap, q->own_total + 1, sizeof *q->own_free);
    if (ok)
        q->own_total++;
    pthread_mutex_unlock(&q->own_lock);
    if (!ok) {
        dev->vk.FreeCommandBuffers(dev->handle, q->own_pool, 1, &cb);
        return VK_NULL_HANDLE;
    }
    return cb;
}

VkCommandBuffer tl_own_timestamp_cb(tl_device *td, tl_queue *q, const tl_qchunk *chunk,
                                    uint32_t query)
{
    gt_device *dev = td->gt;
    VkCommandBuffer cb = own_get(td, q);
    if (!cb) {
        tl_warn_once(td, TL_WARN_OWN_CB,
                     "cannot create a command buffer of the layer's own "
                     "on queue family %u",
                     q->family);
        return VK_NULL_HANDLE;
    }
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    /* Begin resets it implicitly (the pool allows that). */
    if (dev->vk.BeginCommandBuffer(cb, &begin) != VK_SUCCESS) {
        tl_own_cb_put(td, q, cb);
        return VK_NULL_HANDLE;
    }
    if (!td->host_reset)
        dev->vk.CmdResetQueryPool(cb, chunk->pool, chunk->first + query, 1);
    if (td->llvmpipe)
        tl_full_barrier(td, cb); /* see stamp() in timeline_record.c */
    dev->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, chunk->pool,
                              chunk->first + query);
    if (dev->vk.EndCommandBuffer(cb) != VK_SUCCESS) {
        tl_own_cb_put(td, q, cb);
        return VK_NULL_HANDLE;
    }
    return cb;
}

void tl_full_barrier(tl_device *td, VkCommandBuffer cb)
{
    const VkMemoryBarrier all = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
    };
    td->gt->vk.CmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                                  VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &all, 0, NULL, 0, NULL);
}

VkCommandBuffer tl_own_reset_begin(tl_device *td, tl_queue *q, tl_qchunk **stamp_chunk)
{
    *stamp_chunk = tl_query_take(td);
    if (!*stamp_chunk)
        return VK_NULL_HANDLE;
    VkCommandBuffer cb = own_get(td, q);
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (cb && td->gt->vk.BeginCommandBuffer(cb, &begin) != VK_SUCCESS) {
        tl_own_cb_put(td, q, cb);
        cb = VK_NULL_HANDLE;
    }
    if (!cb) {
        tl_query_give(td, *stamp_chunk, false);
        *stamp_chunk = NULL;
        return VK_NULL_HANDLE;
    }
    /* A timestamp of our own (after a barrier, like every bottom-of-pipe
    * one on lavapipe) before the barrier the resets follow: the newest
    * scene that barrier waits for is newer than any the reset queries
    * were written in. */
    if (!td->host_reset)
        td->gt->vk.CmdResetQueryPool(cb, (*stamp_chunk)->pool, (*stamp_chunk)->first, 1);
    tl_full_barrier(td, cb);
    td->gt->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, (*stamp_chunk)->pool,
                                 (*stamp_chunk)->first);
    tl_full_barrier(td, cb);
    return cb;
}

void tl_own_cb_put(tl_device *td, tl_queue *q, VkCommandBuffer cb)
{
    (void)td;
    if (!cb)
        return;
    pthread_mutex_lock(&q->own_lock);
    /* Room was made when the buffer was allocated. */
    q->own_free[q->own_nfree++] = cb;
    pthread_mutex_unlock(&q->own_lock);
}

void tl_own_finish(tl_device *td, tl_queue *q)
{
    gt_device *dev = td->gt;
    if (q->own_pool) /* frees its command buffers */
        dev->vk.DestroyCommandPool(dev->handle, q->own_pool, tl_vk_alloc(td));
    q->own_pool = VK_NULL_HANDLE;
    tl_free(td, q->own_free);
    q->own_free = NULL;
    q->own_nfree = q->own_cap = 0;
}
