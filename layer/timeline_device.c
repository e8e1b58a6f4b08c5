/* SPDX-License-Identifier: MIT */
/* timeline_device.c — the timing code's per-device state: what the device
 * can do (timestamp bits, period, clock domains, host query reset), its
 * queues, command pools and buffers, the lazily started collector, and its
 * place in the session. Lookups and fences: timeline_lookup.c.
 */
#include "layer/timeline_device.h"

#include <stdio.h>
#include <string.h>

#include "layer/collector.h"
#include "layer/config.h"
#include "layer/flows/flow_sync.h"
#include "layer/flows/host_waits.h"
#include "layer/frames/fr_frames.h"
#include "layer/gpu_identity.h"
#include "layer/log.h"
#include "layer/memory/mem_device.h"
#include "layer/memory/mem_sequence.h"
#include "layer/timeline.h"
#include "layer/timeline_context.h"
#include "layer/timeline_lookup.h"
#include "layer/timeline_query.h"
#include "layer/timeline_record.h"
#include "layer/timeline_recording.h"
#include "layer/timeline_submission.h"
#include "layer/timeline_util.h"

/* VkDevices this process created: numbers its devices for clock and queue
 * names (two VkDevices on one GPU share its gpu_id). */
static atomic_uint device_counter;

/* ---- command buffers -------------------------------------------------------- */

/* Called with td->lock held. */
static void cb_destroy_locked(tl_device *td, tl_cb *tcb)
{
    ht_remove(&td->cbs, (uint64_t)(uintptr_t)tcb->handle);
    tl_pool *pool = tcb->pool;
    if (pool) {
        if (tcb->prev)
            tcb->prev->next = tcb->next;
        else
            pool->cbs = tcb->next;
        if (tcb->next)
            tcb->next->prev = tcb->prev;
    }
    tl_cb_drop_recording(tcb);
    tl_free(td, tcb);
}

void tl_command_pool_created(gt_device *dev, VkCommandPool pool,
                             const VkCommandPoolCreateInfo *info)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    tl_pool *p = tl_alloc(td, sizeof *p);
    if (!p) {
        tl_warn_once(td, TL_WARN_OOM, "out of memory; some command buffers stay untimed");
        return;
    }
    p->handle = pool;
    p->family = info->queueFamilyIndex;
    pthread_mutex_lock(&td->lock);
    if (!ht_put(&td->pools, (uint64_t)pool, p)) {
        tl_free(td, p);
        tl_warn_once(td, TL_WARN_OOM, "out of memory; some command buffers stay untimed");
    }
    pthread_mutex_unlock(&td->lock);
}

void tl_command_pool_destroy(gt_device *dev, VkCommandPool pool)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    pthread_mutex_lock(&td->lock);
    tl_pool *p = ht_remove(&td->pools, (uint64_t)pool);
    if (p) {
        while (p->cbs)
            cb_destroy_locked(td, p->cbs);
    }
    pthread_mutex_unlock(&td->lock);
    tl_cb_cache_invalidate();
    tl_free(td, p);
}

void tl_command_pool_reset(gt_device *dev, VkCommandPool pool, VkCommandPoolResetFlags flags)
{
    (void)flags;
    tl_device *td = tl_device_of(dev);
    if (!td || !atomic_load_explicit(&td->live_recordings, memory_order_relaxed))
        return;
    pthread_mutex_lock(&td->lock);
    tl_pool *p = ht_get(&td->pools, (uint64_t)pool);
    for (tl_cb *c = p ? p->cbs : NULL; c; c = c->next)
        tl_cb_drop_recording(c);
    pthread_mutex_unlock(&td->lock);
}

void tl_command_buffers_allocated(gt_device *dev, const VkCommandBufferAllocateInfo *info,
                                  const VkCommandBuffer *buffers)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    pthread_mutex_lock(&td->lock);
    tl_pool *p = ht_get(&td->pools, (uint64_t)info->commandPool);
    for (uint32_t i = 0; i < info->commandBufferCount; i++) {
        tl_cb *tcb = tl_alloc(td, sizeof *tcb);
        if (!tcb || !ht_put(&td->cbs, (uint64_t)(uintptr_t)buffers[i], tcb)) {
            tl_free(td, tcb);
            tl_warn_once(td, TL_WARN_OOM, "out of memory; some command buffers stay untimed");
            continue;
        }
        tcb->handle = buffers[i];
        tcb->primary = info->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        tcb->pool = p;
        if (p) {
            tcb->next = p->cbs;
            if (p->cbs)
                p->cbs->prev = tcb;
            p->cbs = tcb;
        }
    }
    pthread_mutex_unlock(&td->lock);
}

void tl_command_buffers_free(gt_device *dev, VkCommandPool pool, uint32_t count,
                             const VkCommandBuffer *buffers)
{
    (void)pool;
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    pthread_mutex_lock(&td->lock);
    for (uint32_t i = 0; i < count; i++) {
        if (!buffers[i])
            continue;
        tl_cb *tcb = ht_get(&td->cbs, (uint64_t)(uintptr_t)buffers[i]);
        if (tcb)
            cb_destroy_locked(td, tcb);
    }
    pthread_mutex_unlock(&td->lock);
    tl_cb_cache_invalidate();
}

void tl_command_buffer_reset(gt_device *dev, VkCommandBuffer cb, VkCommandBufferResetFlags flags)
{
    (void)flags;
    tl_device *td = tl_device_of(dev);
    if (!td || !atomic_load_explicit(&td->live_recordings, memory_order_relaxed))
        return;
    tl_cb *tcb = tl_cb_find(td, cb);
    if (tcb)
        tl_cb_drop_recording(tcb);
}

/* ---- queues ------------------------------------------------------------------ */

void tl_queue_acquired(gt_device *dev, VkQueue queue, uint32_t family, uint32_t index)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    pthread_mutex_lock(&td->lock);
    uint32_t n = atomic_load_explicit(&td->nqueues, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        if (td->queues[i]->handle == queue) {
            pthread_mutex_unlock(&td->lock);
            return;
        }
    }
    tl_queue *q = NULL;
    if (n < TL_MAX_QUEUES)
        q = tl_alloc(td, sizeof *q);
    if (!q) {
        pthread_mutex_unlock(&td->lock);
        tl_warn_once(td, TL_WARN_QUEUES, "queue %u.%u is not timed (too many queues)", family,
                     index);
        return;
    }
    q->handle = queue;
    q->family = family;
    q->index = index;
    q->slot = n;
    q->valid_bits = family < td->nfamilies ? td->families[family].timestampValidBits : 0;
    pthread_mutex_init(&q->writer_lock, NULL);
    pthread_mutex_init(&q->own_lock, NULL);
    td->queues[n] = q;
    atomic_store_explicit(&td->nqueues, n + 1, memory_order_release);
    pthread_mutex_unlock(&td->lock);
}

/* ---- fences -------------------------------------------------------------------- */

/* ---- session client ------------------------------------------------------------- */

static void client_stop(tl_session_client *client, bool exiting)
{
    tl_device *td = (tl_device *)((char *)client - offsetof(tl_device, client));
    if (atomic_load(&td->started) && td->collector)
        col_release_writer(td->collector, exiting);
    uint32_t n = atomic_load_explicit(&td->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        tl_queue_release_stale_writers(td->queues[i]);
    hwait_release_stale(td->waits);
}

static void client_drain_at_exit(tl_session_client *client)
{
    tl_device *td = (tl_device *)((char *)client - offsetof(tl_device, client));
    if (!atomic_load(&td->started) || !td->collector)
        return;
    /* A release with no slot stopped is one turn of the collector's
     * session service, which takes a writer for every running slot before
     * it answers: a collector that has not run since it was created holds
     * none, and its exit drain takes none. Then the drain itself. */
    col_release_writer(td->collector, false);
    col_release_writer(td->collector, true);
}

static void client_clear(tl_session_client *client, unsigned slot)
{
    tl_device *td = (tl_device *)((char *)client - offsetof(tl_device, client));
    if (atomic_load(&td->started) && td->collector)
        col_clear_incremental_state(td->collector, slot);
    tl_context_clear(td, slot);
    hwait_clear(td->waits, slot);
    msq_clear_incremental_state(td->memory, slot);
}

/* A session wanting memory events gets what is alive now (an object made
 * and gone before the collector writes it is then in neither the snapshot
 * nor the records), and at once, even from a device that does nothing
 * meanwhile: its collector writes it. */
static void client_started(tl_session_client *client, unsigned slot)
{
    tl_device *td = (tl_device *)((char *)client - offsetof(tl_device, client));
    if (!td->memory || !tl_session_slot_memory(slot))
        return;
    mem_slot_started(td->memory, slot);
    if (tl_device_ensure_started(td))
        col_nudge(td->collector);
}

/* ---- device --------------------------------------------------------------------- */

bool tl_device_ensure_started(tl_device *td)
{
    if (atomic_load_explicit(&td->started, memory_order_acquire))
        return true;
    bool ok = false;
    pthread_mutex_lock(&td->lock);
    if (atomic_load_explicit(&td->started, memory_order_relaxed)) {
        ok = true;
    } else if (!td->start_failed) {
        td->collector = col_create(td);
        ok = td->collector != NULL;
        if (ok) {
            atomic_store_explicit(&td->started, true, memory_order_release);
            gt_info("gpu %u (%s): timing with %s, results read %s, clock %s id 0x%08x", td->gpu_id,
                    td->props.deviceName,
                    td->clock_source == GC_SOURCE_CALIBRATED ? "calibrated timestamps"
                                                             : "bracket calibration",
                    td->one_time_in_bulk ? "from mapped memory (one-time-submit command buffers: "
                                           "with vkGetQueryPoolResults, in bulk)"
                    : td->readback_copy  ? "from mapped memory"
                                         : "with vkGetQueryPoolResults",
                    td->clock_name, td->clock_id);
        } else {
            td->start_failed = true;
        }
    }
    pthread_mutex_unlock(&td->lock);
    if (!ok)
        tl_warn_once(td, TL_WARN_OOM, "cannot start the collector thread; not timing this device");
    return ok;
}

static void read_uuid(tl_device *td)
{
    gt_device *dev = td->gt;
    const gt_instance *inst = dev->instance;
    memcpy(td->uuid, td->props.pipelineCacheUUID, VK_UUID_SIZE);
    PFN_vkGetPhysicalDeviceProperties2 get2 = NULL;
    if (inst->api_version >= VK_API_VERSION_1_1 && td->props.apiVersion >= VK_API_VERSION_1_1)
        get2 = inst->vk.GetPhysicalDeviceProperties2;
    if (!get2 && inst->has_gpdp2)
        get2 = inst->vk.GetPhysicalDeviceProperties2KHR;
    if (!get2)
        return;
    VkPhysicalDeviceIDProperties id = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES };
    VkPhysicalDeviceProperties2 props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &id,
    };
    get2(dev->physical_device, &props);
    memcpy(td->uuid, id.deviceUUID, VK_UUID_SIZE);
}

/* Whether command buffers copy their results into mapped memory (see
 * tl_recording_copy_results in timeline_recording.c) rather than the collector asking
 * vkGetQueryPoolResults. By default only where that call is known to
 * idle the whole device: lavapipe. Elsewhere it is a cheap read, and it
 * keeps working under layers that shadow mapped memory (gfxreconstruct's
 * page guard refreshes host copies of device writes only at its own sync
 * points, so polled memory may never change; collector.c notices that and
 * switches, see copy_unseen). */
static bool readback_copy(const tl_device *td)
{
    switch (gt_config_get()->readback) {
    case GT_READBACK_COPY:
    case GT_READBACK_BULK:
        return true;
    case GT_READBACK_DRIVER:
        return false;
    case GT_READBACK_AUTO:
        break;
    }
    return td->llvmpipe;
}

/* GPUTRACE_QUERY_READBACK=bulk. lavapipe waits for the scene of a command
 * buffer's last timestamp when its copy runs (its queue thread stalls on
 * the rasterizer once per command buffer), where a command buffer that
 * ends without the copy has that scene flushed without a wait. One-time-
 * submit command buffers are never read on the submitting thread (they
 * cannot be submitted again without being recorded anew), so the collector
 * can read them with vkGetQueryPoolResults instead, a few calls per pass
 * for all of them (collector.c, read_in_bulk). Command buffers submitted
 * repeatedly keep the copy: re-submitting one whose results the collector
 * has not read yet reads them on the application's thread, which must not
 * wait for the device there. Not the default: on lavapipe, with any such
 * read from our thread mpv under the validation layer reported a semaphore
 * destroyed while in use at its exit, in every run (docs/layer.md,
 * "Reading results"). */
static bool one_time_in_bulk(void)
{
    return gt_config_get()->readback == GT_READBACK_BULK;
}

static void choose_clock(tl_device *td)
{
    gt_device *dev = td->gt;
    bool device = false, monotonic = false, raw = false;
    if (dev->calibrated_timestamps != GT_CALIBRATED_NONE && dev->get_calibrated_timestamps &&
        dev->get_time_domains) {
        VkTimeDomainEXT domains[16];
        uint32_t n = 16;
        VkResult r = dev->get_time_domains(dev->physical_device, &n, domains);
        if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
            for (uint32_t i = 0; i < n; i++) {
                device |= domains[i] == VK_TIME_DOMAIN_DEVICE_EXT;
                monotonic |= domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
                raw |= domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT;
            }
        }
    }
    bool calibrated = device && monotonic;
    switch (gt_config_get()->clock_source) {
    case GT_CLOCK_SOURCE_BRACKET:
        calibrated = false;
        break;
    case GT_CLOCK_SOURCE_CALIBRATED:
        if (!calibrated)
            gt_warn("GPUTRACE_CLOCK_SOURCE=calibrated: the device cannot; using the bracket "
                    "fallback");
        break;
    case GT_CLOCK_SOURCE_AUTO:
        break;
    }
    td->clock_source = calibrated ? GC_SOURCE_CALIBRATED : GC_SOURCE_BRACKET;
    td->clock_has_raw = calibrated && raw;

    /* One clock domain (this device's counter) and one writer (this
    * process's collector for this VkDevice): see docs/layer.md. */
    char hex[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        snprintf(hex + 2 * i, 3, "%02x", td->uuid[i]);
    snprintf(td->clock_name, sizeof td->clock_name, "gputrace/vk/%s/pid%d/dev%u", hex, td->pid,
             td->ordinal);
    td->clock_id = gc_global_clock_id(td->clock_name);
}

VkResult tl_device_create(gt_device *dev)
{
    tl_device *td = gt_zalloc(&dev->alloc, sizeof *td, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!td)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    const gt_instance *inst = dev->instance;
    td->gt = dev;
    td->pid = tl_session_pid();
    td->ordinal = atomic_fetch_add(&device_counter, 1);
    inst->vk.GetPhysicalDeviceProperties(dev->physical_device, &td->props);
    gi_identify(&td->identity, inst, dev->physical_device, &dev->alloc);
    td->gpu_id = td->identity.gpu_id;
    inst->vk.GetPhysicalDeviceQueueFamilyProperties(dev->physical_device, &td->nfamilies, NULL);
    td->families = tl_alloc(td, (size_t)(td->nfamilies ? td->nfamilies : 1) * sizeof *td->families);
    if (!td->families) {
        gi_finish(&td->identity, &dev->alloc);
        gt_free(&dev->alloc, td);
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    inst->vk.GetPhysicalDeviceQueueFamilyProperties(dev->physical_device, &td->nfamilies,
                                                    td->families);
    switch (dev->host_query_reset) {
    case GT_HOST_QUERY_RESET_CORE:
        td->reset_query_pool = dev->vk.ResetQueryPool;
        break;
    case GT_HOST_QUERY_RESET_EXT:
        td->reset_query_pool = (PFN_vkResetQueryPool)dev->vk.ResetQueryPoolEXT;
        break;
    case GT_HOST_QUERY_RESET_NONE:
        break;
    }
    if (!gt_config_get()->host_query_reset)
        td->reset_query_pool = NULL;
    td->host_reset = td->reset_query_pool != NULL;
    td->llvmpipe = td->props.vendorID == VK_VENDOR_ID_MESA &&
                   strncmp(td->props.deviceName, "llvmpipe", 8) == 0;
    td->readback_copy = readback_copy(td);
    td->one_time_in_bulk = one_time_in_bulk();
    read_uuid(td);
    choose_clock(td);

    pthread_mutex_init(&td->lock, NULL);
    pthread_mutex_init(&td->fence_lock, NULL);
    pthread_mutex_init(&td->pool_lock, NULL);
    ht_init(&td->cbs, &dev->alloc);
    ht_init(&td->pools, &dev->alloc);
    td->names = tl_names_create(&dev->alloc);
    td->flows = fs_create(&dev->alloc);
    td->waits = hwait_create(&dev->alloc);
    /* The live objects only where a session may ever want memory events:
     * elsewhere their table is pure cost, and the plumbing passes the memory
     * calls through untouched (tl_device_tracks_memory). */
    if (tl_session_memory_possible())
        td->memory = mem_create(dev, td->ordinal, td->pid, td->names);
    else
        gt_info("device %u memory not tracked: no session of this process can want memory "
                "events (in-process backend without GPUTRACE_MEMORY, or GPUTRACE_BACKEND=none); "
                "its memory calls are passed through",
                td->ordinal);
    td->frames = fr_device_create(&dev->alloc, gt_config_get()->frames_first,
                                  gt_config_get()->frames_last, dev->frame_boundary != GT_FB_OFF);
    tl_queries_init(&td->queries);
    td->client.stop = client_stop;
    td->client.drain_at_exit = client_drain_at_exit;
    td->client.clear_incremental_state = client_clear;
    td->client.started = client_started;
    dev->timeline = td;

    /* May begin the session (first device of the process). */
    tl_session_add_client(&td->client);
    /* Sessions that started before this client was there (this one's, the
     * embedded backend's, or a running one): nothing is alive yet. */
    const uint32_t memory_slots = tl_session_memory_slots();
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (memory_slots & (1u << i))
            mem_slot_started(td->memory, i);
    if (tl_session_tracing())
        tl_device_ensure_started(td);
    return VK_SUCCESS;
}

void tl_device_destroy(gt_device *dev)
{
    tl_device *td = tl_device_of(dev);
    if (!td)
        return;
    tl_session_remove_client(&td->client);
    /* The application waited for its work (vkDestroyDevice requires it), so
    * this drains quickly. */
    if (td->collector)
        col_destroy(td->collector, false);
    td->collector = NULL;
    hwait_destroy(td->waits);
    td->waits = NULL;

    uint32_t n = atomic_load(&td->nqueues);
    for (uint32_t i = 0; i < n; i++) {
        tl_queue *q = td->queues[i];
        tl_queue_release_writer(q);
        tl_own_finish(td, q);
        pthread_mutex_destroy(&q->writer_lock);
        pthread_mutex_destroy(&q->own_lock);
        tl_free(td, q);
    }
    for (uint32_t i = 0; i < td->cbs.capacity; i++) {
        tl_cb *tcb = td->cbs.slots[i].value;
        if (td->cbs.slots[i].key && tcb) {
            tl_cb_drop_recording(tcb);
            tl_free(td, tcb);
        }
    }
    for (uint32_t i = 0; i < td->pools.capacity; i++) {
        if (td->pools.slots[i].key)
            tl_free(td, td->pools.slots[i].value);
    }
    ht_finish(&td->cbs);
    ht_finish(&td->pools);
    tl_cb_cache_invalidate();

    for (uint32_t i = 0; i < td->nfree_fences; i++)
        dev->vk.DestroyFence(dev->handle, td->free_fences[i], tl_vk_alloc(td));
    tl_free(td, td->free_fences);
    tl_submissions_finish(td);
    tl_recordings_finish(td);
    tl_queries_finish(td);
    pthread_mutex_destroy(&td->lock);
    pthread_mutex_destroy(&td->fence_lock);
    pthread_mutex_destroy(&td->pool_lock);
    tl_free(td, td->families);
    gi_finish(&td->identity, &dev->alloc);
    tl_names_destroy(td->names);
    fs_destroy(td->flows);
    mem_destroy(td->memory);
    fr_device_destroy(td->frames); /* after the last submission went */
    dev->timeline = NULL;
    gt_free(&dev->alloc, td);
}
