/* SPDX-License-Identifier: MIT */
/* timeline_lookup.c — see timeline_lookup.h.
 *
 * Command buffers are looked up on every recorded command. The table is
 * behind the device's mutex, so each thread keeps its last lookup in a
 * thread-local cache, invalidated through a process-wide epoch whenever any
 * command buffer goes away (its handle may then be reused).
 */
#include "layer/timeline_lookup.h"

#include "layer/timeline_util.h"

static atomic_uint cb_epoch = 1;

static _Thread_local struct {
    const tl_device *td;
    VkCommandBuffer cb;
    tl_cb *tcb;
    unsigned epoch;
} cb_cache;

/* ---- command buffers and queues ----------------------------------------------- */

tl_cb *tl_cb_find(tl_device *td, VkCommandBuffer cb)
{
    unsigned epoch = atomic_load_explicit(&cb_epoch, memory_order_acquire);
    if (cb_cache.td == td && cb_cache.cb == cb && cb_cache.epoch == epoch)
        return cb_cache.tcb;
    pthread_mutex_lock(&td->lock);
    tl_cb *tcb = ht_get(&td->cbs, (uint64_t)(uintptr_t)cb);
    pthread_mutex_unlock(&td->lock);
    cb_cache.td = td;
    cb_cache.cb = cb;
    cb_cache.tcb = tcb;
    cb_cache.epoch = epoch;
    return tcb;
}

void tl_cb_cache_invalidate(void)
{
    atomic_fetch_add_explicit(&cb_epoch, 1, memory_order_release);
}

tl_queue *tl_queue_find(tl_device *td, VkQueue queue)
{
    uint32_t n = atomic_load_explicit(&td->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        if (td->queues[i]->handle == queue)
            return td->queues[i];
    }
    return NULL;
}

static void release_writers(tl_queue *q, bool all)
{
    pthread_mutex_lock(&q->writer_lock);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        if (q->writer[i] && (all || q->writer_gen[i] != tl_session_slot_generation(i))) {
            tl_session_release_writer(i, q->writer[i]);
            q->writer[i] = NULL;
        }
    }
    pthread_mutex_unlock(&q->writer_lock);
}

void tl_queue_flush_quiet(tl_queue *q, uint64_t now_ns, uint64_t quiet_ns)
{
    if (pthread_mutex_trylock(&q->writer_lock) != 0)
        return;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (q->writer[i])
            tw_flush_when_quiet(q->writer[i], now_ns, quiet_ns);
    pthread_mutex_unlock(&q->writer_lock);
}

void tl_queue_release_writer(tl_queue *q)
{
    release_writers(q, true);
}

void tl_queue_release_stale_writers(tl_queue *q)
{
    release_writers(q, false);
}

/* ---- fences -------------------------------------------------------------------- */

VkFence tl_fence_get(tl_device *td)
{
    gt_device *dev = td->gt;
    VkFence fence = VK_NULL_HANDLE;
    pthread_mutex_lock(&td->fence_lock);
    if (td->nfree_fences) {
        fence = td->free_fences[--td->nfree_fences];
    } else if (tl_grow(td, (void **)&td->free_fences, &td->fences_cap, td->nfences + 1,
                       sizeof *td->free_fences)) {
        /* Room for every fence in the free list, so putting back never fails. */
        const VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
        if (dev->vk.CreateFence(dev->handle, &info, tl_vk_alloc(td), &fence) == VK_SUCCESS)
            td->nfences++;
        else
            fence = VK_NULL_HANDLE;
    }
    pthread_mutex_unlock(&td->fence_lock);
    if (!fence)
        tl_warn_once(td, TL_WARN_FENCE, "cannot create a fence; some submissions stay untimed");
    return fence;
}

void tl_fence_put(tl_device *td, VkFence fence)
{
    gt_device *dev = td->gt;
    dev->vk.ResetFences(dev->handle, 1, &fence);
    pthread_mutex_lock(&td->fence_lock);
    td->free_fences[td->nfree_fences++] = fence;
    pthread_mutex_unlock(&td->fence_lock);
}
