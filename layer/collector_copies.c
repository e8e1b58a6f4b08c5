/* SPDX-License-Identifier: MIT */
/* collector_copies.c — see collector_copies.h. */
#include "layer/collector_copies.h"

#include "layer/gpu_clock.h"
#include "layer/log.h"
#include "layer/timeline_stage.h"
#include "layer/timeline_submission.h"

/* A copied submission pending this long is looked at (col_copy_unseen),
 * at most this often. */
#define COL_COPY_PROBE_NS (250ull * 1000 * 1000)

/* Whether `rec`'s command-buffer timestamp, written at the bottom of the
 * pipe after everything submitted before it on its queue, is known
 * written: our mapping shows the copy (which waits for it), or, asked
 * when `ask_driver`, the driver has it. */
static bool end_stamp_written(tl_collector *col, const tl_result *res, bool ask_driver)
{
    tl_device *td = col->td;
    tl_recording *rec = res->rec;
    bool written = false;
    pthread_mutex_lock(&rec->lock);
    /* Collected early: its queries may be reset for the next execution. */
    if (!res->collected && rec->nregions && rec->regions[0].stage == TL_STAGE_COMMAND_BUFFER &&
        rec->regions[0].end != TL_NO_SLOT && !rec->regions[0].dropped) {
        if (tl_reads_copy(td, rec))
            written = tl_copy_landed(td, rec);
        if (!written && ask_driver) {
            const uint32_t slot = rec->regions[0].end;
            const tl_qchunk *chunk = rec->chunks[slot / TL_CHUNK_QUERIES];
            uint64_t v[2] = { 0, 0 };
            VkResult r = td->gt->vk.GetQueryPoolResults(
                td->gt->handle, chunk->pool, chunk->first + slot % TL_CHUNK_QUERIES, 1, sizeof v, v,
                sizeof v, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
            written = r == VK_SUCCESS && v[1];
        }
    }
    pthread_mutex_unlock(&rec->lock);
    return written;
}

/* Whether `sub`'s work is known complete without its copies: the device is
 * idle (vkDestroyDevice), or a later submission on the same queue wrote
 * its command-buffer timestamp, which waits for everything submitted
 * before it, `sub`'s copies and their barrier to the host included. The
 * mapping is looked at for a few of them, the driver asked about one. */
static bool later_work_complete(tl_collector *col, const tl_submission *sub)
{
    enum {
        LOOKED_AT_MOST = 16
    };
    if (col->stop_seen)
        return true;
    pthread_mutex_lock(&col->lock);
    const tl_submission *y = sub->next;
    pthread_mutex_unlock(&col->lock);
    bool asked = false;
    for (unsigned looked = 0; y && looked < LOOKED_AT_MOST; looked++) {
        if (y->queue == sub->queue && y->kind == TL_SUB_WORK && !y->carrier && y->nentries) {
            /* Its last command buffer's stamp is its latest. */
            const tl_result *last = &y->results[y->entries[y->nentries - 1].first];
            if (end_stamp_written(col, last, !asked))
                return true;
            asked = true;
        }
        pthread_mutex_lock(&col->lock);
        y = y->next;
        pthread_mutex_unlock(&col->lock);
    }
    return false;
}

bool col_copy_unseen(tl_collector *col, const tl_submission *sub, tl_result *res)
{
    tl_device *td = col->td;
    const uint64_t now = gc_monotonic_ns();
    if (!col->stop_seen &&
        (now - sub->queued_ns < COL_COPY_PROBE_NS || now - col->copy_probed_ns < COL_COPY_PROBE_NS))
        return false;
    col->copy_probed_ns = now;
    if (!later_work_complete(col, sub))
        return false;
    tl_recording *rec = res->rec;
    pthread_mutex_lock(&rec->lock);
    const bool unseen = !res->collected && tl_reads_copy(td, rec) && !tl_copy_landed(td, rec);
    pthread_mutex_unlock(&rec->lock);
    if (!unseen)
        return false;
    atomic_store(&td->copies_unseen, true);
    gt_warn("gpu %u: timestamps copied into mapped memory do not show up there (a layer below "
            "shadowing mapped memory?); reading them with vkGetQueryPoolResults from now on "
            "(GPUTRACE_QUERY_READBACK=driver avoids the copies)",
            td->gpu_id);
    return true;
}
