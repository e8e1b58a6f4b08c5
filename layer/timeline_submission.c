/* SPDX-License-Identifier: MIT */
/* timeline_submission.c — see timeline_submission.h.
 *
 * Finished submissions are kept with their arrays, up to TL_POOL_KEEP per
 * device, so the steady state allocates nothing.
 */
#include "layer/timeline_submission.h"

#include <string.h>

#include "layer/log.h"
#include "layer/timeline_lookup.h"
#include "layer/timeline_query.h"
#include "layer/timeline_recording.h"
#include "layer/timeline_util.h"

/* ---- results ------------------------------------------------------------------ */

bool tl_copy_landed(tl_device *td, const tl_recording *rec)
{
    const tl_qchunk *chunk = rec->chunks[(rec->nslots - 1) / TL_CHUNK_QUERIES];
    const uint32_t last = (rec->nslots - 1) % TL_CHUNK_QUERIES;
    tl_results_invalidate(td, chunk);
    return __atomic_load_n(&chunk->results[2 * last + 1], __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&chunk->results[2 * last], __ATOMIC_ACQUIRE);
}

void tl_result_read(tl_device *td, tl_result *res)
{
    const tl_recording *rec = res->rec;
    gt_device *dev = td->gt;
    res->collected = true;
    res->ok = res->values != NULL;
    if (res->ok && res->bulk_read)
        return; /* the collector's bulk read filled them */
    /* The work is complete, yet its copy may not show (a layer below
     * shadowing mapped memory, before the collector noticed): the driver
     * has the values. */
    if (res->ok && tl_reads_copy(td, rec) && tl_copy_landed(td, rec)) {
        for (uint32_t c = 0; c < rec->nchunks; c++) {
            uint32_t first = c * TL_CHUNK_QUERIES;
            uint32_t n = rec->nslots - first;
            if (n > TL_CHUNK_QUERIES)
                n = TL_CHUNK_QUERIES;
            /* Availability words first (acquire), then the values behind them. */
            tl_results_invalidate(td, rec->chunks[c]);
            const uint64_t *src = rec->chunks[c]->results;
            for (uint32_t i = 0; i < n; i++) {
                uint64_t avail = __atomic_load_n(&src[2 * i + 1], __ATOMIC_ACQUIRE);
                uint64_t value = __atomic_load_n(&src[2 * i], __ATOMIC_ACQUIRE);
                /* A driver may write either word first; a zero value is taken
             * as not written yet (a device counter reading exactly 0 costs
             * one region, never a wrong one). */
                res->values[2 * (first + i) + 1] = avail && value;
                res->values[2 * (first + i)] = avail && value ? value : 0;
            }
        }
        return;
    }
    for (uint32_t c = 0; res->ok && c < rec->nchunks; c++) {
        uint32_t first = c * TL_CHUNK_QUERIES;
        if (first >= rec->nslots)
            break;
        uint32_t n = rec->nslots - first;
        if (n > TL_CHUNK_QUERIES)
            n = TL_CHUNK_QUERIES;
        VkResult r = dev->vk.GetQueryPoolResults(
            dev->handle, rec->chunks[c]->pool, rec->chunks[c]->first, n,
            (size_t)n * 2 * sizeof(uint64_t), &res->values[2 * first], 2 * sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        /* NOT_READY: some slots were never written (e.g. an unterminated
       * label); their availability words say which. */
        if (r != VK_SUCCESS && r != VK_NOT_READY) {
            res->ok = false;
            tl_warn_once(td, TL_WARN_RESULTS, "vkGetQueryPoolResults failed (%d)", (int)r);
        }
    }
}

/* ---- lifetime ------------------------------------------------------------------ */

tl_submission *tl_submission_new(tl_device *td)
{
    pthread_mutex_lock(&td->pool_lock);
    tl_submission *sub = td->free_submissions;
    if (sub) {
        td->free_submissions = sub->next;
        td->nfree_submissions--;
    }
    pthread_mutex_unlock(&td->pool_lock);
    if (!sub)
        return tl_alloc(td, sizeof *sub);
    /* Keep the arrays (and their capacities), clear the rest. */
    tl_entry *entries = sub->entries;
    tl_result *results = sub->results;
    uint64_t *values = sub->values;
    uint32_t entries_cap = sub->entries_cap, results_cap = sub->results_cap;
    uint32_t values_cap = sub->values_cap;
    fs_submission flow = sub->flow;
    memset(sub, 0, sizeof *sub);
    sub->flow = flow;
    fs_submission_reset(&sub->flow);
    sub->entries = entries;
    sub->results = results;
    sub->values = values;
    sub->entries_cap = entries_cap;
    sub->results_cap = results_cap;
    sub->values_cap = values_cap;
    return sub;
}

void tl_submission_free(tl_device *td, tl_submission *sub)
{
    /* Collected or not, its frame no longer waits for it. */
    if (sub->frame.stream)
        fr_submission_done(td->frames, sub->frame, &sub->gpu);
    sub->frame.stream = 0;
    for (uint32_t i = 0; i < sub->nresults; i++) {
        tl_result *res = &sub->results[i];
        tl_recording *rec = res->rec;
        if (rec->nslots) {
            /* Never left behind as a dangling "pending" pointer. */
            pthread_mutex_lock(&rec->lock);
            if (rec->pending == res)
                rec->pending = NULL;
            pthread_mutex_unlock(&rec->lock);
        }
        tl_recording_unref(rec);
    }
    sub->nresults = sub->nentries = sub->nvalues = 0;
    for (int i = 0; i < 2; i++)
        tl_own_cb_put(td, sub->queue, sub->span_cbs[i]);
    tl_own_cb_put(td, sub->queue, sub->cal_cb);
    tl_own_cb_put(td, sub->queue, sub->reset_cb);
    tl_query_give(td, sub->span_chunk, true);
    tl_query_give(td, sub->cal_chunk, true);
    tl_query_give(td, sub->reset_chunk, true);
    if (sub->fence)
        tl_fence_put(td, sub->fence);
    pthread_mutex_lock(&td->pool_lock);
    bool keep = td->nfree_submissions < TL_POOL_KEEP;
    if (keep) {
        sub->next = td->free_submissions;
        td->free_submissions = sub;
        td->nfree_submissions++;
    }
    pthread_mutex_unlock(&td->pool_lock);
    if (keep)
        return;
    tl_free(td, sub->results);
    tl_free(td, sub->entries);
    tl_free(td, sub->values);
    fs_submission_free(&td->gt->alloc, &sub->flow);
    tl_free(td, sub);
}

void tl_submissions_finish(tl_device *td)
{
    while (td->free_submissions) {
        tl_submission *sub = td->free_submissions;
        td->free_submissions = sub->next;
        tl_free(td, sub->results);
        tl_free(td, sub->entries);
        tl_free(td, sub->values);
        fs_submission_free(&td->gt->alloc, &sub->flow);
        tl_free(td, sub);
    }
    td->nfree_submissions = 0;
}
