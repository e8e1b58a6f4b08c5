/* SPDX-License-Identifier: MIT */
/* timeline_recording.c — see timeline_recording.h.
 *
 * Recordings are reference counted (timeline_recording_types.h says who
 * holds references). Finished ones are kept with their arrays, up to
 * TL_POOL_KEEP per device, so recording in the steady state allocates
 * nothing.
 */
#include "layer/timeline_recording.h"

#include "layer/timeline_query.h"
#include "layer/timeline_util.h"

void tl_recording_clear(tl_recording *rec)
{
    tl_device *td = rec->td;
    for (uint32_t i = 0; i < rec->nchunks; i++)
        tl_query_give(td, rec->chunks[i], rec->used);
    for (uint32_t i = 0; i < rec->nexecuted; i++)
        tl_recording_unref(rec->executed[i]);
    rec->nchunks = rec->nslots = rec->nregions = rec->names_len = rec->nexecuted = 0;
    rec->nlabels = 0;
    rec->rp_region = TL_NO_SLOT;
    rec->rp_instance = rec->rp_counter = 0;
    rec->in_render_pass = rec->subpass_inline = false;
    rec->in_rendering = rec->rendering_inline = false;
    rec->views = 1;
    rec->rp_nmasks = rec->subpass = 0;
    rec->rp_handle = rec->rp_target = 0;
    rec->rendering_flags = 0;
    rec->maybe_suspended = rec->start_pending = false;
    rec->starts = TL_STARTS_NONE;
    rec->suspend_slot = TL_NO_SLOT;
    rec->last_stamp = TL_NO_SLOT;
    rec->work_since_stamp = true;
    rec->full_barrier = false;
    rec->natts = rec->draws = rec->dispatches = rec->inst_draws = rec->inst_dispatches = 0;
    rec->compute_pipeline = rec->graphics_pipeline = 0;
    rec->inst_pipeline = rec->first_draw_pipeline = 0;
    rec->exhausted = false;
    rec->copied = rec->multiview_stamps = false;
    rec->pending = NULL;
    rec->used = false;
}

static void recording_destroy(tl_recording *rec)
{
    tl_device *td = rec->td;
    tl_recording_clear(rec);
    atomic_fetch_sub_explicit(&td->live_recordings, 1, memory_order_relaxed);
    pthread_mutex_lock(&td->pool_lock);
    if (td->nfree_recordings < TL_POOL_KEEP) {
        /* Kept with its arrays for the next recording. */
        rec->next_free = td->free_recordings;
        td->free_recordings = rec;
        td->nfree_recordings++;
        rec = NULL;
    }
    pthread_mutex_unlock(&td->pool_lock);
    if (!rec)
        return;
    tl_free(td, rec->chunks);
    tl_free(td, rec->regions);
    tl_free(td, rec->names);
    tl_free(td, rec->executed);
    tl_free(td, rec->rp_masks);
    tl_free(td, rec->atts);
    pthread_mutex_destroy(&rec->lock);
    tl_free(td, rec);
}

tl_recording *tl_recording_new(tl_device *td)
{
    pthread_mutex_lock(&td->pool_lock);
    tl_recording *rec = td->free_recordings;
    if (rec) {
        td->free_recordings = rec->next_free;
        td->nfree_recordings--;
    }
    pthread_mutex_unlock(&td->pool_lock);
    if (!rec) {
        rec = tl_alloc(td, sizeof *rec);
        if (!rec) {
            tl_warn_once(td, TL_WARN_OOM, "out of memory; some command buffers stay untimed");
            return NULL;
        }
        pthread_mutex_init(&rec->lock, NULL);
    }
    atomic_init(&rec->refs, 1);
    rec->td = td;
    rec->next_free = NULL;
    tl_recording_clear(rec);
    atomic_fetch_add_explicit(&td->live_recordings, 1, memory_order_relaxed);
    return rec;
}

void tl_recordings_finish(tl_device *td)
{
    while (td->free_recordings) {
        tl_recording *rec = td->free_recordings;
        td->free_recordings = rec->next_free;
        tl_free(td, rec->chunks);
        tl_free(td, rec->regions);
        tl_free(td, rec->names);
        tl_free(td, rec->executed);
        tl_free(td, rec->rp_masks);
        tl_free(td, rec->atts);
        pthread_mutex_destroy(&rec->lock);
        tl_free(td, rec);
    }
    td->nfree_recordings = 0;
}

void tl_recording_ref(tl_recording *rec)
{
    atomic_fetch_add_explicit(&rec->refs, 1, memory_order_relaxed);
}

void tl_recording_unref(tl_recording *rec)
{
    if (rec && atomic_fetch_sub_explicit(&rec->refs, 1, memory_order_acq_rel) == 1)
        recording_destroy(rec);
}

/* ---- results readback ---------------------------------------------------------- */

/* Results travel with the command buffer: at its end, a copy of every
 * query it wrote into the chunks' mapped buffers (waiting for them, so the
 * values are there when the copy is), made visible to the host. Reading
 * them is then a memory read, for the collector and for a thread that
 * re-submits, where vkGetQueryPoolResults may be a device-wide wait:
 * lavapipe idles the whole device for every call, which made a collector
 * reading per submission fall behind a few submitting threads and would
 * stall a re-submitting application thread. The wait in the copy is safe
 * because every slot a recording takes is written by the timestamp that
 * took it. */
void tl_recording_copy_results(tl_device *td, tl_recording *rec)
{
    /* Multiview timestamps fill several queries each; the validation layer
    * (1.3.239) counts only the first as written and would report a copy
    * waiting for the others, so those recordings are read the slow way. */
    if (!rec->nslots || rec->in_render_pass || rec->in_rendering || rec->multiview_stamps ||
        atomic_load_explicit(&td->copies_unseen, memory_order_relaxed))
        return;
    /* Read by the collector instead (tl_device.one_time_in_bulk). */
    if (rec->one_time && td->one_time_in_bulk)
        return;
    /* vkCmdCopyQueryPoolResults needs a graphics or compute queue. */
    const VkQueueFlags family_flags =
        rec->family < td->nfamilies ? td->families[rec->family].queueFlags : 0;
    if (!(family_flags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)))
        return;
    for (uint32_t c = 0; c < rec->nchunks; c++) {
        if (!rec->chunks[c]->results)
            return;
    }
    /* Executed secondaries with timestamps of their own are read with
    * vkGetQueryPoolResults: they may run inside several primaries. */
    for (uint32_t i = 0; i < rec->nexecuted; i++) {
        if (rec->executed[i]->nslots)
            return;
    }
    const gt_device_dispatch *vk = &td->gt->vk;
    /* After earlier executions' copies into the same words (WAW). A full
    * barrier of ours anywhere before in this command buffer (on lavapipe,
    * the one before each bottom-of-pipe timestamp) already orders them, so
    * lavapipe gets one barrier fewer per submission. */
    if (!rec->full_barrier) {
        const VkMemoryBarrier before = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        };
        vk->CmdPipelineBarrier(rec->cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL, 0, NULL);
    }
    for (uint32_t c = 0; c < rec->nchunks; c++) {
        const uint32_t first = c * TL_CHUNK_QUERIES;
        if (first >= rec->nslots)
            break;
        uint32_t n = rec->nslots - first;
        if (n > TL_CHUNK_QUERIES)
            n = TL_CHUNK_QUERIES;
        const tl_qchunk *chunk = rec->chunks[c];
        vk->CmdCopyQueryPoolResults(rec->cb, chunk->pool, chunk->first, n, chunk->buffer,
                                    chunk->offset, 2 * sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT |
                                        VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    }
    const VkMemoryBarrier after = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vk->CmdPipelineBarrier(rec->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                           1, &after, 0, NULL, 0, NULL);
    rec->copied = true;
}
