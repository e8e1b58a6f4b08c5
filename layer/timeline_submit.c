/* SPDX-License-Identifier: MIT */
/* timeline_submit.c — what happens at vkQueueSubmit / vkQueueSubmit2.
 *
 * Before the call down: every submitted command buffer's current recording
 * (and, depth first, the secondaries it executes) is taken into a
 * tl_submission by reference: recordings are immutable once ended, so the
 * reference is the snapshot of its region list. After the call down the
 * collector is told; it finds out about completion off the application's
 * threads, in one of two ways:
 * - every submitted primary ends with its command-buffer timestamp, written
 *   bottom-of-pipe, i.e. after all of the command buffer's work: the
 *   collector polls the availability of those last timestamps (no extra
 *   submission, the common case);
 * - otherwise (a command buffer without its end timestamp, a simultaneous-
 *   use span) an empty vkQueueSubmit on the same queue carries a fence of
 *   ours, signalled once all work submitted to the queue before it has
 *   completed, and the collector waits for that fence.
 *
 * Re-submission. A recording's query slots are fixed when it is recorded,
 * so executing it again overwrites them. A command buffer that is not
 * SIMULTANEOUS_USE can only be submitted again once its previous execution
 * has completed (Vulkan forbids re-submitting a pending one), so if the
 * collector has not read that execution yet, the submitting thread reads it
 * now, without waiting (the results are there), and then resets the
 * queries on the host for the new execution (without host query reset the
 * recording resets its own queries each time it runs). On lavapipe, until
 * later work is seen complete, an own command buffer submitted before the
 * batch resets them instead (reset_plan; docs/layer.md, "Query
 * reuse on lavapipe"). Recording and collector serialise on the
 * recording's lock.
 *
 * SIMULTANEOUS_USE command buffers may be pending several times at once, so
 * per-region timestamps in them would be written concurrently into the
 * same queries. They are recorded without any timestamp; instead the
 * submission gets one "Submission" event from two timestamps written by
 * command buffers of the layer's own, submitted right before and right
 * after the application's batch on the same queue (bottom-of-pipe: the
 * first after all earlier work, the second after all of the batch).
 *
 * The CPU side: a VulkanApiEvent.vk_queue_submit packet on the queue's own
 * trace writer, written on the submitting thread (under the queue's
 * external synchronisation; the queue's writer lock only guards against the
 * session ending meanwhile), at BOOTTIME with the call's duration.
 */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "layer/timeline_submit.h"

#include "layer/collector.h"
#include "layer/emit.h"
#include "layer/log.h"
#include "layer/timeline_context.h"
#include "layer/timeline_device.h"
#include "layer/timeline_lookup.h"
#include "layer/timeline_query.h"
#include "layer/timeline_stage.h"
#include "layer/timeline_recording.h"
#include "layer/timeline_submission.h"
#include "layer/timeline_util.h"

typedef struct reset_plan reset_plan;

static int32_t thread_id(void)
{
    static _Thread_local int32_t tid;
    if (!tid)
        tid = (int32_t)syscall(SYS_gettid);
    return tid;
}

/* ---- results ------------------------------------------------------------------ */

/* ---- building a submission ------------------------------------------------------ */

/* Queries of re-submitted recordings that cannot be reset on the host yet
 * (lavapipe, no later work seen complete since their last execution; see
 * tl_queries): they are reset by an own command buffer submitted
 * right before the batch, after a timestamp and a barrier of its own. */
struct reset_plan {
    tl_queue *q;
    VkCommandBuffer cb;
    tl_qchunk *stamp_chunk;
    bool failed;        /* no own command buffer: reset on the host after all */
    tl_qchunk **chunks; /* reset in cb, for the fallback */
    uint32_t nchunks, chunks_cap;
};

static bool plan_resets(tl_device *td, reset_plan *plan, const tl_recording *rec)
{
    if (!plan->cb && !plan->failed) {
        plan->cb = tl_own_reset_begin(td, plan->q, &plan->stamp_chunk);
        plan->failed = !plan->cb;
    }
    if (!plan->cb || !tl_grow(td, (void **)&plan->chunks, &plan->chunks_cap,
                              plan->nchunks + rec->nchunks, sizeof *plan->chunks))
        return false;
    for (uint32_t i = 0; i < rec->nchunks; i++) {
        const tl_qchunk *c = rec->chunks[i];
        td->gt->vk.CmdResetQueryPool(plan->cb, c->pool, c->first, TL_CHUNK_QUERIES);
        plan->chunks[plan->nchunks++] = rec->chunks[i];
    }
    return true;
}

static bool submit_own(tl_device *td, tl_queue *q, VkCommandBuffer cb, VkFence fence);

/* Ends and submits the plan's command buffer, before the batch; if that
 * fails the resets are done on the host after all. */
static void finish_plan(tl_device *td, reset_plan *plan)
{
    if (plan->cb && (td->gt->vk.EndCommandBuffer(plan->cb) != VK_SUCCESS ||
                     !submit_own(td, plan->q, plan->cb, VK_NULL_HANDLE))) {
        for (uint32_t i = 0; i < plan->nchunks; i++)
            tl_query_reset_host(td, plan->chunks[i]);
        tl_own_cb_put(td, plan->q, plan->cb);
        tl_query_give(td, plan->stamp_chunk, false);
        plan->cb = VK_NULL_HANDLE;
        plan->stamp_chunk = NULL;
    }
    tl_free(td, plan->chunks);
    plan->chunks = NULL;
    plan->nchunks = plan->chunks_cap = 0;
}

/* The previous execution of `rec` is complete (see the file comment):
 * read it if nobody did, and make the queries ready to be written again. */
static void prepare_reuse(tl_device *td, reset_plan *plan, tl_recording *rec)
{
    if (!rec->nslots)
        return;
    pthread_mutex_lock(&rec->lock);
    if (rec->pending && !rec->pending->collected)
        tl_result_read(td, rec->pending);
    rec->pending = NULL;
    if (rec->used && td->host_reset &&
        (!td->llvmpipe || tl_queries_reusable(td, rec->reuse_after) ||
         !plan_resets(td, plan, rec))) {
        for (uint32_t i = 0; i < rec->nchunks; i++)
            tl_query_reset_host(td, rec->chunks[i]);
    }
    /* This execution's copy must be told from the last one's. */
    if (rec->copied) {
        for (uint32_t c = 0; c < rec->nchunks; c++) {
            uint32_t n = rec->nslots - c * TL_CHUNK_QUERIES;
            if (n > TL_CHUNK_QUERIES)
                n = TL_CHUNK_QUERIES;
            memset(rec->chunks[c]->results, 0, (size_t)n * 2 * sizeof(uint64_t));
            tl_results_flush(td, rec->chunks[c]);
        }
    }
    rec->used = true;
    /* This execution's submission number, if it has one, was given out
    * already. */
    rec->reuse_after = tl_peek_submission_id();
    pthread_mutex_unlock(&rec->lock);
}

/* Adds `rec` and, depth first, what it executes. */
static bool add_results(tl_device *td, reset_plan *plan, tl_submission *sub, tl_recording *rec)
{
    prepare_reuse(td, plan, rec);
    if (sub) {
        if (!tl_grow(td, (void **)&sub->results, &sub->results_cap, sub->nresults + 1,
                     sizeof *sub->results))
            return false;
        tl_result *res = &sub->results[sub->nresults];
        memset(res, 0, sizeof *res);
        if (rec->nslots) {
            /* Pointers into the array are set once it stops growing. */
            if (!tl_grow(td, (void **)&sub->values, &sub->values_cap,
                         sub->nvalues + 2 * rec->nslots, sizeof *sub->values))
                return false;
            res->values_offset = sub->nvalues;
            sub->nvalues += 2 * rec->nslots;
        }
        tl_recording_ref(rec);
        res->rec = rec;
        sub->nresults++;
    }
    for (uint32_t i = 0; i < rec->nexecuted; i++) {
        if (!add_results(td, plan, sub, rec->executed[i]))
            return false;
    }
    return true;
}

static void add_command_buffer(tl_device *td, reset_plan *plan, tl_submission *sub,
                               VkCommandBuffer cb)
{
    tl_cb *tcb = tl_cb_find(td, cb);
    tl_recording *rec = tcb ? tcb->rec : NULL;
    if (!rec)
        return;
    if (!sub) {
        add_results(td, plan, NULL, rec);
        return;
    }
    if (rec->simultaneous && !sub->span_app_cb)
        sub->span_app_cb = cb;
    if (!tl_grow(td, (void **)&sub->entries, &sub->entries_cap, sub->nentries + 1,
                 sizeof *sub->entries)) {
        tl_warn_once(td, TL_WARN_OOM, "out of memory; some submissions stay untimed");
        return;
    }
    uint32_t first = sub->nresults;
    if (!add_results(td, plan, sub, rec)) {
        tl_warn_once(td, TL_WARN_OOM, "out of memory; some submissions stay untimed");
        /* Keep what was added: each result is complete in itself. */
    }
    if (sub->nresults > first)
        sub->entries[sub->nentries++] = (tl_entry){ cb, first, sub->nresults - first };
}

static bool submit_own(tl_device *td, tl_queue *q, VkCommandBuffer cb, VkFence fence)
{
    const VkSubmitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = cb ? 1 : 0,
        .pCommandBuffers = cb ? &cb : NULL,
    };
    VkResult r = td->gt->vk.QueueSubmit(q->handle, cb ? 1 : 0, cb ? &info : NULL, fence);
    if (r != VK_SUCCESS) {
        tl_warn_once(td, TL_WARN_SUBMIT,
                     "the layer's own vkQueueSubmit failed (%d); "
                     "results of this queue may be lost",
                     (int)r);
        return false;
    }
    return true;
}

/* Fallback clock: a timestamp between two host readings, submitted before
 * the application's batch so that it runs as soon as the queue is free. */
static void submit_calibration(tl_device *td, tl_queue *q, uint64_t since)
{
    tl_submission *cal = tl_submission_new(td);
    if (!cal)
        goto fail;
    cal->kind = TL_SUB_CALIBRATION;
    cal->queue = q;
    cal->submitted_ns = since;
    /* Numbered in queue order like every submission (see tl_queries). */
    cal->id = tl_next_submission_id();
    cal->cal_chunk = tl_query_take(td);
    cal->fence = tl_fence_get(td);
    if (!cal->cal_chunk || !cal->fence)
        goto fail_free;
    cal->cal_cb = tl_own_timestamp_cb(td, q, cal->cal_chunk, 0);
    if (!cal->cal_cb)
        goto fail_free;
    gc_host_now(&cal->before);
    if (!submit_own(td, q, cal->cal_cb, cal->fence))
        goto fail_free;
    if (!col_push(td->collector, cal))
        goto fail_leak; /* in flight: its fence and buffer cannot be reused */
    return;

fail_free:
    tl_submission_free(td, cal);
fail:
    atomic_store(&td->bracket_state, 1u); /* try again at the next submission */
    return;
fail_leak:
    atomic_store(&td->bracket_state, 1u);
}

static uint32_t cb_regions(tl_device *td, VkCommandBuffer cb)
{
    tl_cb *tcb = tl_cb_find(td, cb);
    return tcb && tcb->rec ? tcb->rec->nregions : 0;
}

/* Regions of the submitted primaries (what the trace would have shown). */
static uint32_t count_regions(tl_device *td, const tl_submit *submit)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < submit->count; i++) {
        if (submit->submits) {
            const VkSubmitInfo *s = &submit->submits[i];
            for (uint32_t j = 0; j < s->commandBufferCount; j++)
                n += cb_regions(td, s->pCommandBuffers[j]);
        } else {
            const VkSubmitInfo2 *s = &submit->submits2[i];
            for (uint32_t j = 0; j < s->commandBufferInfoCount; j++)
                n += cb_regions(td, s->pCommandBufferInfos[j].commandBuffer);
        }
    }
    return n;
}

void tl_submit_pre(tl_device *td, VkQueue queue, const tl_submit *submit)
{
    tl_queue *q = tl_queue_find(td, queue);
    if (!q)
        return;
    q->pending = NULL;
    bool tracing = tl_session_tracing() && tl_device_ensure_started(td);
    if (tracing && td->collector && col_backlog_full(td->collector)) {
        /* The collector is behind: never block the application, and never
       * let the backlog (and the recordings it holds) grow without bound.
       * This submission runs untimed; the loss is counted and reported. */
        col_count_dropped(td->collector, count_regions(td, submit));
        tracing = false;
    }
    /* Before anything of it goes down: the collector must not put a clock
     * snapshot where this work may run (snapshot_placement.h). Cleared
     * once the collector has it (tl_submit_post). */
    const uint64_t since = tracing ? gc_boottime_ns() : 0;
    if (since)
        atomic_store_explicit(&q->submitting_since, since, memory_order_seq_cst);
    /* Submitted first, so it runs as soon as the queue is free, and
    * numbered before the batch's submission like it is queued before it. */
    if (tracing && td->clock_source == GC_SOURCE_BRACKET) {
        unsigned wanted = 1;
        if (atomic_compare_exchange_strong(&td->bracket_state, &wanted, 2u))
            submit_calibration(td, q, since);
    }
    tl_submission *sub = NULL;
    if (tracing) {
        q->pre_boottime_ns = gc_boottime_ns();
        sub = tl_submission_new(td);
        if (sub) {
            sub->kind = TL_SUB_WORK;
            sub->queue = q;
            sub->id = tl_next_submission_id();
            sub->submitted_ns = since;
        }
    }
    reset_plan plan = { .q = q };
    for (uint32_t i = 0; i < submit->count; i++) {
        if (submit->submits) {
            const VkSubmitInfo *s = &submit->submits[i];
            for (uint32_t j = 0; j < s->commandBufferCount; j++)
                add_command_buffer(td, &plan, sub, s->pCommandBuffers[j]);
        } else {
            const VkSubmitInfo2 *s = &submit->submits2[i];
            for (uint32_t j = 0; j < s->commandBufferInfoCount; j++)
                add_command_buffer(td, &plan, sub, s->pCommandBufferInfos[j].commandBuffer);
        }
    }
    finish_plan(td, &plan);
    if (plan.cb && !sub) {
        /* An untimed batch: a submission of its own brings the command
       * buffer back once the batch is done. */
        sub = tl_submission_new(td);
        if (!sub)
            return; /* in flight: leaked rather than reused */
        sub->kind = TL_SUB_WORK;
        sub->queue = q;
        sub->id = tl_next_submission_id();
        sub->carrier = true;
    }
    if (!sub)
        return;
    sub->reset_cb = plan.cb;
    sub->reset_chunk = plan.stamp_chunk;
    for (uint32_t i = 0; i < sub->nresults; i++) {
        tl_result *res = &sub->results[i];
        res->values = res->rec->nslots ? sub->values + res->values_offset : NULL;
    }

    if (sub->span_app_cb) {
        sub->span_chunk = tl_query_take(td);
        if (sub->span_chunk)
            sub->span_cbs[0] = tl_own_timestamp_cb(td, q, sub->span_chunk, 0);
        if (sub->span_cbs[0] && !submit_own(td, q, sub->span_cbs[0], VK_NULL_HANDLE)) {
            /* Never submitted: free to reuse. */
            tl_own_cb_put(td, q, sub->span_cbs[0]);
            sub->span_cbs[0] = VK_NULL_HANDLE;
        }
        if (!sub->span_cbs[0]) {
            tl_query_give(td, sub->span_chunk, false);
            sub->span_chunk = NULL;
        }
    }
    q->pending = sub;
}

static void write_submit_event(tl_device *td, tl_queue *q, const tl_submit *submit, uint32_t id,
                               uint64_t start, uint64_t end)
{
    /* Every running session gets the event on its own sequence. */
    pthread_mutex_lock(&q->writer_lock);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        const uint32_t gen = tl_session_slot_generation(i);
        if (q->writer[i] && q->writer_gen[i] != gen) {
            tl_session_release_writer(i, q->writer[i]);
            q->writer[i] = NULL;
        }
        if (!q->writer[i] && q->writer_gen[i] != gen) {
            /* One attempt per tracing period (NULL while the slot is off). */
            q->writer[i] = tl_session_new_writer(i, gen);
            q->writer_gen[i] = gen;
        }
        if (q->writer[i]) {
            /* A mark of no length: trace processors put every process's
             * vk_queue_submit on one "Vulkan Events" track, and v58 drops
             * (an error stat, slice_drop_overlapping_complete_event) one
             * that overlaps another thread's or process's call. The call's
             * duration is on its thread's slice (tl_context_submit). */
            em_queue_submit(q->writer[i], start, 0, td->pid, thread_id(),
                            (uint64_t)(uintptr_t)q->handle, submit->count, submit->submits,
                            submit->submits2, id);
            tl_context_submit(q, i, gen, q->writer[i], start, end, id);
        }
    }
    pthread_mutex_unlock(&q->writer_lock);
}

/* Every submitted primary ends with its command-buffer timestamp, written
 * after all its work (bottom of pipe): completion is visible there. */
static bool ends_with_timestamps(const tl_submission *sub)
{
    if (!sub->nentries)
        return false;
    for (uint32_t i = 0; i < sub->nentries; i++) {
        const tl_recording *rec = sub->results[sub->entries[i].first].rec;
        if (!rec->nregions || rec->regions[0].stage != TL_STAGE_COMMAND_BUFFER ||
            rec->regions[0].end == TL_NO_SLOT || rec->regions[0].dropped)
            return false;
    }
    return true;
}

/* From now on a re-submission must read these results first. */
static void mark_pending(tl_submission *sub)
{
    for (uint32_t i = 0; i < sub->nresults; i++) {
        tl_recording *rec = sub->results[i].rec;
        if (!rec->nslots)
            continue;
        pthread_mutex_lock(&rec->lock);
        rec->pending = &sub->results[i];
        pthread_mutex_unlock(&rec->lock);
    }
}

static void drop_results(tl_submission *sub)
{
    for (uint32_t i = 0; i < sub->nresults; i++)
        tl_recording_unref(sub->results[i].rec);
    sub->nresults = sub->nentries = sub->nvalues = 0;
}

static void post_submission(tl_device *td, tl_queue *q, const tl_submit *submit, VkResult result)
{
    if (!q->pending)
        return;
    tl_submission *sub = q->pending;
    q->pending = NULL;
    const uint64_t end = gc_boottime_ns();
    const bool ok = result == VK_SUCCESS;
    if (!ok)
        drop_results(sub); /* nothing of it ran */
    else if (!sub->carrier)
        write_submit_event(td, q, submit, sub->id, q->pre_boottime_ns, end);

    /* Something to collect, or an own command buffer already in flight:
    * our fence goes behind the application's work. */
    if (!sub->nresults && !sub->span_cbs[0] && !sub->reset_cb) {
        tl_submission_free(td, sub);
        return;
    }
    if (ok && !sub->span_cbs[0] && ends_with_timestamps(sub)) {
        /* The collector sees completion in the last timestamps: no extra
       * submission needed. */
        mark_pending(sub);
        if (!col_push(td->collector, sub)) {
            /* Collector gone (process exit): leak what the GPU may still use. */
            sub->reset_cb = VK_NULL_HANDLE;
            sub->reset_chunk = NULL;
            tl_submission_free(td, sub);
        }
        return;
    }
    if (ok && sub->span_chunk)
        sub->span_cbs[1] = tl_own_timestamp_cb(td, q, sub->span_chunk, 1);
    sub->fence = tl_fence_get(td);
    if (!sub->fence || !submit_own(td, q, sub->span_cbs[1], sub->fence)) {
        tl_own_cb_put(td, q, sub->span_cbs[1]);
        sub->span_cbs[1] = VK_NULL_HANDLE;
        if (sub->fence)
            tl_fence_put(td, sub->fence);
        sub->fence = VK_NULL_HANDLE;
        /* In flight with no fence to wait for: leaked rather than reused. */
        if (sub->span_cbs[0]) {
            sub->span_cbs[0] = VK_NULL_HANDLE;
            sub->span_chunk = NULL;
        }
        sub->reset_cb = VK_NULL_HANDLE;
        sub->reset_chunk = NULL;
        tl_submission_free(td, sub);
        return;
    }
    mark_pending(sub);
    if (!col_push(td->collector, sub)) {
        /* Collector gone (process exit): leak what the GPU may still use. */
        sub->fence = VK_NULL_HANDLE;
        sub->span_cbs[0] = sub->span_cbs[1] = VK_NULL_HANDLE;
        sub->span_chunk = NULL;
        sub->reset_cb = VK_NULL_HANDLE;
        sub->reset_chunk = NULL;
        tl_submission_free(td, sub);
    }
}

void tl_submit_post(tl_device *td, VkQueue queue, const tl_submit *submit, VkResult result)
{
    tl_queue *q = tl_queue_find(td, queue);
    if (!q)
        return;
    post_submission(td, q, submit, result);
    /* The collector has the submission now (or nothing of it is timed). */
    atomic_store_explicit(&q->submitting_since, 0, memory_order_seq_cst);
}
