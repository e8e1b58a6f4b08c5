/* SPDX-License-Identifier: MIT */
/* collector.c — see collector.h.
 *
 * The thread's loop: (re)acquire the device's writer when a tracing period
 * starts, answer writer-release requests, process every submission whose
 * work has completed (in submission order), calibrate when due, then wait:
 * on the oldest fence, or a short poll interval for submissions whose
 * completion shows in their last timestamp, or on the condition variable
 * when nothing is pending, until the next calibration at the latest.
 */
#include "layer/collector.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layer/collector_copies.h"
#include "layer/collector_sequence.h"
#include "layer/collector_types.h"
#include "layer/config.h"
#include "layer/frames/fr_sequence.h"
#include "layer/log.h"
#include "layer/memory/mem_sequence.h"
#include "layer/timeline_query.h"
#include "layer/timeline_submission.h"
#include "layer/timeline_util.h"

#define COL_POLL_NS       (100ull * 1000 * 1000) /* fence wait slice */
#define COL_SHORT_POLL_NS (2ull * 1000 * 1000)   /* exit drain slice */
/* Completion polling of submissions without a fence: fast enough for
 * events to follow the work closely, rare enough to cost nothing. */
#define COL_POLL_QUERY_NS   (1ull * 1000 * 1000)
#define COL_IDLE_NS         (1000ull * 1000 * 1000) /* nothing pending */
#define COL_DRAIN_NS        (2000ull * 1000 * 1000) /* at device destruction */
#define COL_ACK_TIMEOUT_NS  (2000ull * 1000 * 1000)
#define COL_SERVE_PERIOD_NS (1ull * 1000 * 1000) /* session checks inside a long pass */
#define COL_EXIT_JOIN_NS    (1500ull * 1000 * 1000)
/* The first and last snapshots of a sequence are at least this far apart. */
#define COL_MIN_SPAN_NS (2ull * 1000 * 1000)
/* On a loaded machine reading back a few hundred submissions takes a good
 * part of a second (lavapipe's query reads block). */
#define COL_EXIT_DRAIN_NS (1000ull * 1000 * 1000) /* within COL_EXIT_JOIN_NS */

static void abs_deadline(struct timespec *ts, uint64_t mono_ns)
{
    ts->tv_sec = (time_t)(mono_ns / 1000000000u);
    ts->tv_nsec = (long)(mono_ns % 1000000000u);
}

/* ---- list -------------------------------------------------------------------------- */

static void unlink_sub(tl_collector *col, tl_submission *sub)
{
    pthread_mutex_lock(&col->lock);
    tl_submission **p = &col->head, *prev = NULL;
    while (*p && *p != sub) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p) {
        *p = sub->next;
        if (col->tail == sub)
            col->tail = prev;
        if (sub->kind == TL_SUB_WORK)
            atomic_fetch_sub(&col->backlog, 1);
    }
    pthread_mutex_unlock(&col->lock);
}

/* ---- reading in bulk ------------------------------------------------------------------ */

/* Whether `res` still needs its values from the driver. */
static bool needs_driver_read(tl_device *td, tl_result *res)
{
    tl_recording *rec = res->rec;
    pthread_mutex_lock(&rec->lock);
    bool needs =
        !res->collected && !res->bulk_read && res->values && rec->nslots && !tl_reads_copy(td, rec);
    pthread_mutex_unlock(&rec->lock);
    return needs;
}

static int cmp_bulk_chunk(const void *a, const void *b)
{
    const col_bulk_chunk *x = a, *y = b;
    if (x->pool != y->pool)
        return (uint64_t)x->pool < (uint64_t)y->pool ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

/* Copies what one run read into the result owning `e`'s chunk. */
static void take_chunk(tl_collector *col, const col_bulk_chunk *e, uint32_t run_first)
{
    col_bulk_result *b = &col->bulk_results[e->result];
    tl_recording *rec = b->res->rec;
    const uint32_t first_slot = e->chunk * TL_CHUNK_QUERIES;
    uint32_t n = rec->nslots - first_slot;
    if (n > TL_CHUNK_QUERIES)
        n = TL_CHUNK_QUERIES;
    pthread_mutex_lock(&rec->lock);
    /* Collected meanwhile: a re-submission read it (prepare_reuse in
     * timeline_submit.c) before resetting the queries; what this run read
     * may already be the next execution's. */
    if (!b->res->collected) {
        memcpy(&b->res->values[2 * first_slot], &col->bulk_values[2 * (e->first - run_first)],
               (size_t)n * 2 * sizeof(uint64_t));
        b->chunks_left--;
    }
    pthread_mutex_unlock(&rec->lock);
}

/* GPUTRACE_QUERY_READBACK=bulk (tl_device.one_time_in_bulk): lavapipe
 * makes every vkGetQueryPoolResults a wait for the whole device (an empty
 * submission on its queue thread and a wait for it), so reading each
 * submission's results (and, before that, polling its last timestamp)
 * would cost two such round trips per submission. Once per pass instead,
 * the chunks of every result still to be read are sorted by pool and query
 * and read in runs of adjacent chunks, one call per run; a result whose
 * every slot turned out available is then collected without a further call
 * (sub_status, tl_result_read). One that did not fit, or with a slot not
 * available, is read the usual way. Only chunks of listed submissions are
 * read: on lavapipe those were submitted before the first call, which
 * waits for them (reading a query lavapipe has not finished with would
 * make it flush the queue's context from this thread). */
static void read_in_bulk(tl_collector *col)
{
    tl_device *td = col->td;
    gt_device *dev = td->gt;
    if (!td->one_time_in_bulk)
        return;
    uint32_t nres = 0, nchunks = 0;
    pthread_mutex_lock(&col->lock);
    tl_submission *sub = col->head;
    pthread_mutex_unlock(&col->lock);
    while (sub) {
        bool full = false;
        for (uint32_t i = 0; i < sub->nresults && !full; i++) {
            tl_result *res = &sub->results[i];
            const tl_recording *rec = res->rec;
            const uint32_t used = (rec->nslots + TL_CHUNK_QUERIES - 1) / TL_CHUNK_QUERIES;
            if (!needs_driver_read(td, res))
                continue;
            full = nres == COL_BULK_RESULTS || nchunks + used > COL_BULK_CHUNKS;
            if (full)
                break;
            for (uint32_t c = 0; c < used; c++) {
                col->bulk_chunks[nchunks++] = (col_bulk_chunk){
                    .pool = rec->chunks[c]->pool,
                    .first = rec->chunks[c]->first,
                    .result = nres,
                    .chunk = c,
                };
            }
            col->bulk_results[nres++] = (col_bulk_result){ .res = res, .chunks_left = used };
        }
        if (full)
            break;
        sub->bulk_listed = true;
        pthread_mutex_lock(&col->lock);
        sub = sub->next;
        pthread_mutex_unlock(&col->lock);
    }
    if (!nres)
        return;
    qsort(col->bulk_chunks, nchunks, sizeof col->bulk_chunks[0], cmp_bulk_chunk);
    for (uint32_t start = 0; start < nchunks;) {
        /* A run: chunks of one pool, each right after the last. */
        uint32_t end = start + 1;
        while (end < nchunks && col->bulk_chunks[end].pool == col->bulk_chunks[start].pool &&
               col->bulk_chunks[end].first == col->bulk_chunks[end - 1].first + TL_CHUNK_QUERIES)
            end++;
        const uint32_t first = col->bulk_chunks[start].first;
        const uint32_t count = col->bulk_chunks[end - 1].first + TL_CHUNK_QUERIES - first;
        VkResult r = dev->vk.GetQueryPoolResults(
            dev->handle, col->bulk_chunks[start].pool, first, count,
            (size_t)count * 2 * sizeof(uint64_t), col->bulk_values, 2 * sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        /* NOT_READY: chunks' unused queries, or work still running. */
        if (r == VK_SUCCESS || r == VK_NOT_READY) {
            for (uint32_t k = start; k < end; k++)
                take_chunk(col, &col->bulk_chunks[k], first);
        }
        start = end;
    }
    for (uint32_t i = 0; i < nres; i++) {
        tl_result *res = col->bulk_results[i].res;
        tl_recording *rec = res->rec;
        pthread_mutex_lock(&rec->lock);
        bool all = !res->collected && col->bulk_results[i].chunks_left == 0;
        for (uint32_t s = 0; all && s < rec->nslots; s++)
            all = res->values[2 * s + 1] != 0;
        res->bulk_read = all;
        pthread_mutex_unlock(&rec->lock);
    }
}

/* Whether a submission's work is complete: its fence, or, for submissions
 * without one, the last timestamp of every submitted command buffer (a
 * bottom-of-pipe timestamp is written only after everything recorded
 * before it). VK_NOT_READY while not; an error if the device is lost. */
static VkResult sub_status(tl_collector *col, tl_submission *sub)
{
    tl_device *td = col->td;
    gt_device *dev = td->gt;
    if (sub->fence)
        return dev->vk.GetFenceStatus(dev->handle, sub->fence);
    for (uint32_t i = 0; i < sub->nentries; i++) {
        tl_result *res = &sub->results[sub->entries[i].first];
        tl_recording *rec = res->rec;
        pthread_mutex_lock(&rec->lock);
        VkResult r = VK_SUCCESS;
        bool copy_missing = false;
        if (!res->collected && tl_reads_copy(td, rec)) {
            /* The copy is the command buffer's last work: its last value
          * landing means all of it is complete. */
            copy_missing = !tl_copy_landed(td, rec);
            if (copy_missing)
                r = VK_NOT_READY;
        } else if (!res->collected && !res->bulk_read) {
            /* Collected early means the submitter knew it complete; read
             * in bulk, that every slot (the last one too) was written. */
            const uint32_t slot = rec->regions[0].end;
            const tl_qchunk *chunk = rec->chunks[slot / TL_CHUNK_QUERIES];
            uint64_t v[2] = { 0, 0 };
            r = dev->vk.GetQueryPoolResults(
                dev->handle, chunk->pool, chunk->first + slot % TL_CHUNK_QUERIES, 1, sizeof v, v,
                sizeof v, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
            if (r == VK_SUCCESS && !v[1])
                r = VK_NOT_READY;
        }
        pthread_mutex_unlock(&rec->lock);
        /* Shown complete with the rest of its work: all of it is. */
        if (copy_missing && col_copy_unseen(col, sub, res))
            return VK_SUCCESS;
        if (r != VK_SUCCESS)
            return r;
    }
    return VK_SUCCESS;
}

static void maybe_calibrate(tl_collector *col);

/* Whether seeing `sub` complete shows that the device is done with all
 * work submitted before it, down to the driver's bookkeeping: it wrote
 * timestamps (so on lavapipe a rasterizer scene of its own, newer than
 * every earlier one, is known complete), and its batch is numbered after
 * everything submitted before it (a carrier is numbered after its batch's
 * recordings were prepared, so it proves nothing about them). */
static bool proves_earlier_work_over(const tl_submission *sub)
{
    if (sub->kind == TL_SUB_CALIBRATION)
        return true;
    return !sub->carrier && (sub->nvalues || sub->span_cbs[0] || sub->reset_chunk);
}

/* Follows the session: releases the writer when asked (the backend's
 * stop waits for the acknowledgement) and takes a writer for a new
 * tracing period. Cheap when nothing changed, so the loop over a long
 * backlog calls it between submissions: a collector busy with the backlog
 * must neither hold up the backend's stop (and with it the producer's
 * reconnection) nor keep writing into a session that is gone while the
 * new one gets nothing. */
static void serve_session(tl_collector *col)
{
    seq_update_writer(col);
    /* Memory events have sequences of their own (memory/mem_sequence.h). */
    msq_serve(col->td->memory);
    /* Between a backlog's submissions too: silent sequences' last packets. */
    seq_flush_quiet(col);
    pthread_mutex_lock(&col->lock);
    if (col->release_req != col->release_ack) {
        uint32_t req = col->release_req;
        pthread_mutex_unlock(&col->lock);
        /* The writers of the sessions that stopped; the others go on. */
        seq_release_stale(col);
        msq_release_stale(col->td->memory);
        pthread_mutex_lock(&col->lock);
        col->release_ack = req;
        pthread_cond_broadcast(&col->ack_cond);
    }
    pthread_mutex_unlock(&col->lock);
}

static void collect_ready(tl_collector *col)
{
    tl_device *td = col->td;
    pthread_mutex_lock(&col->lock);
    tl_submission *sub = col->head;
    pthread_mutex_unlock(&col->lock);
    /* Each status check is a driver call. Polling the whole backlog every
    * pass makes a pass cost O(backlog), so a collector that fell behind
    * would spend its time polling and fall further behind. Work completes
    * roughly in order, so after a bounded number of not-ready answers the
    * rest waits for the next pass; a submission that never completes costs
    * one of those answers, not the whole queue behind it. */
    enum {
        MAX_NOT_READY_PER_PASS = 32
    };
    unsigned not_ready = 0;
    uint64_t served_at = gc_monotonic_ns();
    read_in_bulk(col);
    while (sub) {
        /* Past what the last bulk read could take: the next one, from here
         * (what came before is unlinked by now, or not complete). */
        if (td->one_time_in_bulk && !sub->bulk_listed)
            read_in_bulk(col);
        VkResult st = sub_status(col, sub);
        pthread_mutex_lock(&col->lock);
        tl_submission *next = sub->next;
        pthread_mutex_unlock(&col->lock);
        if (st == VK_NOT_READY) {
            if (++not_ready >= MAX_NOT_READY_PER_PASS)
                break;
            sub = next;
            continue;
        }
        if (st == VK_SUCCESS) {
            gc_host_time after;
            gc_host_now(&after);
            if (proves_earlier_work_over(sub))
                tl_queries_seen_complete(td, sub->id);
            if (sub->kind == TL_SUB_CALIBRATION) {
                seq_process_calibration(col, sub, &after);
            } else {
                /* Without any clock reading yet, hold the events while the
             * first bracket calibration is still on its way. */
                if (!col->clock.have_last && !col->stop_seen &&
                    td->clock_source == GC_SOURCE_BRACKET) {
                    sub = next;
                    continue;
                }
                seq_process_work(col, sub, after.boottime_ns);
            }
        } else {
            tl_warn_once(td, TL_WARN_FENCE, "gpu %u: completion status %d; results dropped",
                         td->gpu_id, (int)st);
        }
        unlink_sub(col, sub);
        tl_submission_free(td, sub);
        sub = next;
        /* Every millisecond or so between submissions, so a long backlog
       * never holds up the producer or the next session (the release
       * handshake waits up to seconds), without taking the lock the
       * submitting threads need after every submission. Not while
       * draining at exit: the session ends and its writer must stay until
       * the drain is done. */
        uint64_t now = gc_monotonic_ns();
        if (now - served_at >= COL_SERVE_PERIOD_NS) {
            served_at = now;
            pthread_mutex_lock(&col->lock);
            bool exiting = col->exiting;
            pthread_mutex_unlock(&col->lock);
            if (!exiting)
                serve_session(col);
        }
        /* Keep the calibration cadence however long the backlog is. */
        if (col->clock.have_last)
            maybe_calibrate(col);
    }
    /* The frames whose work is all in now (and those presented since). */
    fr_seq_write(col, false);
}

static void maybe_calibrate(tl_collector *col)
{
    uint64_t now = gc_monotonic_ns();
    if (col->clock.have_last && now < col->clock.next_due_ns)
        return;
    if (col->td->clock_source == GC_SOURCE_CALIBRATED) {
        seq_calibrate(col);
    } else {
        unsigned idle = 0;
        atomic_compare_exchange_strong(&col->td->bracket_state, &idle, 1u);
    }
}

/* With a fence at the head, waits for that one fence only: drivers
 * commonly implement a wait for "any of several fences" by spinning
 * (Mesa's common code does, for lavapipe), which would burn a core next to
 * the application. Submissions without a fence are polled every
 * COL_POLL_QUERY_NS; so is a head fence while several queues are busy, so
 * a queue that finishes first is not held up. */
static void wait_for_work(tl_collector *col)
{
    tl_device *td = col->td;
    gt_device *dev = td->gt;
    uint64_t now = gc_monotonic_ns();
    VkFence oldest = VK_NULL_HANDLE;
    bool poll = false;

    pthread_mutex_lock(&col->lock);
    if (col->head) {
        oldest = col->head->fence;
        for (tl_submission *s = col->head; s && !poll; s = s->next)
            poll = !s->fence || s->queue != col->head->queue;
        /* A bracket calibration is as narrow as we notice its completion:
       * wait for exactly that fence. */
        for (tl_submission *s = col->head; s; s = s->next) {
            if (s->kind == TL_SUB_CALIBRATION) {
                oldest = s->fence;
                poll = false;
                break;
            }
        }
    }
    uint64_t deadline = now + (poll ? COL_POLL_QUERY_NS : oldest ? COL_POLL_NS : COL_IDLE_NS);
    if (td->clock_source == GC_SOURCE_CALIBRATED && col->clock.next_due_ns < deadline)
        deadline = col->clock.next_due_ns > now ? col->clock.next_due_ns : now;
    if (!oldest || poll) {
        struct timespec ts;
        abs_deadline(&ts, deadline);
        while (!col->stop && col->release_req == col->release_ack && (poll || !col->wake)) {
            if (pthread_cond_timedwait(&col->wake_cond, &col->lock, &ts) == ETIMEDOUT)
                break;
        }
        oldest = VK_NULL_HANDLE;
    }
    col->wake = false;
    pthread_mutex_unlock(&col->lock);
    if (oldest && deadline > now)
        dev->vk.WaitForFences(dev->handle, 1, &oldest, VK_TRUE, deadline - now);
}

/* A drain (at exit, or at vkDestroyDevice) ran out of time: what is still
 * pending is lost. Count it with the untimed submissions and mark the
 * sequence, so the loss shows in the trace (previous_packet_dropped)
 * instead of events silently missing. */
static void abandon_pending(tl_collector *col)
{
    uint64_t subs = 0;
    const tl_queue *q = NULL;
    pthread_mutex_lock(&col->lock);
    for (tl_submission *s = col->head; s; s = s->next) {
        subs++;
        if (!q)
            q = s->queue;
    }
    pthread_mutex_unlock(&col->lock);
    if (!subs)
        return;
    atomic_fetch_add(&col->dropped_subs, subs);
    gt_warn("gpu %u: %" PRIu64 " submission(s) still pending were not collected", col->td->gpu_id,
            subs);
    if (q)
        seq_ensure_interned(col, q);
}

/* At process exit, for applications that never destroy their device: what
 * has completed (typically everything the application waited for) is
 * still collected, with a short bound on the wait for the rest. */
static void drain_at_exit(tl_collector *col)
{
    gt_device *dev = col->td->gt;
    const uint64_t deadline = gc_monotonic_ns() + COL_EXIT_DRAIN_NS;
    seq_never_stall(col);
    msq_serve(col->td->memory);
    for (;;) {
        collect_ready(col);
        pthread_mutex_lock(&col->lock);
        bool empty = !col->head;
        VkFence oldest = col->head ? col->head->fence : VK_NULL_HANDLE;
        pthread_mutex_unlock(&col->lock);
        uint64_t now = gc_monotonic_ns();
        if (empty)
            return;
        if (now >= deadline) {
            abandon_pending(col);
            return;
        }
        uint64_t slice = deadline - now < COL_SHORT_POLL_NS ? deadline - now : COL_SHORT_POLL_NS;
        if (oldest) {
            dev->vk.WaitForFences(dev->handle, 1, &oldest, VK_TRUE, slice);
        } else {
            struct timespec ts = { 0, (long)COL_POLL_QUERY_NS };
            nanosleep(&ts, NULL);
        }
    }
}

static void *collector_main(void *arg)
{
    tl_collector *col = arg;
    tl_device *td = col->td;
    pthread_setname_np(pthread_self(), "gputrace-gpu");

    uint64_t drain_deadline = 0;
    for (;;) {
        pthread_mutex_lock(&col->lock);
        bool exiting = col->exiting;
        pthread_mutex_unlock(&col->lock);
        if (exiting) {
            drain_at_exit(col);
            break;
        }
        serve_session(col);

        pthread_mutex_lock(&col->lock);
        bool stop = col->stop;
        bool empty = col->head == NULL;
        pthread_mutex_unlock(&col->lock);

        if (stop) {
            uint64_t now = gc_monotonic_ns();
            if (!col->stop_seen) {
                col->stop_seen = true;
                seq_never_stall(col);
                /* No more submissions will bring a better bracket. */
                if (gc_accept_best(&col->clock, now)) {
                    seq_reading_accepted(col);
                    gt_debug("gpu %u bracket calibration: +-%" PRIu64 " ns (the narrowest of %u)",
                             td->gpu_id, col->clock.last.deviation_ns, col->clock.rejected);
                }
            }
            if (empty)
                break;
            if (!drain_deadline) {
                drain_deadline = now + COL_DRAIN_NS;
            } else if (now > drain_deadline) {
                tl_warn_once(td, TL_WARN_FENCE,
                             "gpu %u: work still pending at vkDestroyDevice; "
                             "its results are dropped",
                             td->gpu_id);
                /* Counted and marked in the trace like the exit drain's. */
                abandon_pending(col);
                break;
            }
        }
        collect_ready(col);
        maybe_calibrate(col);
        wait_for_work(col);
    }

    /* Every frame that ended, with what came back of its work. */
    fr_seq_write(col, true);
    /* A last snapshot, so conversions of the last events need no
    * extrapolation beyond one (also at process exit: the drain above
    * already used the device). */
    if (seq_any_writer(col) && td->clock_source == GC_SOURCE_CALIBRATED) {
        /* Readers measure drift only between snapshots some time apart
       * (gputrace-check: 1 ms): a very short trace waits that long. */
        const uint64_t first = seq_newest_start(col);
        uint64_t since = gc_monotonic_ns() - first;
        if (first && since < COL_MIN_SPAN_NS) {
            struct timespec ts = { 0, (long)(COL_MIN_SPAN_NS - since) };
            nanosleep(&ts, NULL);
        }
        col->closing = true;
        seq_calibrate(col);
    }
    seq_release_writer(col);
    msq_release_all(td->memory);
    if (atomic_load(&col->dropped_subs))
        gt_warn("gpu %u: %" PRIu64 " submissions (%" PRIu64 " regions) were not timed: the "
                "collector's backlog was full (GPUTRACE_MAX_PENDING_SUBMISSIONS=%u)",
                td->gpu_id, (uint64_t)atomic_load(&col->dropped_subs),
                (uint64_t)atomic_load(&col->dropped_regions), col->max_backlog);
    if (atomic_load(&col->unread_regions))
        gt_warn("gpu %u: %" PRIu64 " regions of complete work had no timestamps to read; "
                "counted as lost",
                td->gpu_id, (uint64_t)atomic_load(&col->unread_regions));
    fr_seq_report_loss(col);
    gt_debug("gpu %u collector: %" PRIu64 " events, %" PRIu64 " submissions without clock, "
             "%u calibrations (%u rejected), max deviation %" PRIu64 " ns, %" PRIu64
             " submissions (%" PRIu64 " regions) untimed for a full backlog",
             td->gpu_id, col->events_emitted, col->events_unconverted, col->clock.accepted,
             col->clock.rejected, col->clock.max_deviation_ns,
             (uint64_t)atomic_load(&col->dropped_subs),
             (uint64_t)atomic_load(&col->dropped_regions));
    const sp_state *sp = &col->placement;
    gt_debug("gpu %u clock snapshots: %" PRIu64 " at their reading, %" PRIu64 " in gaps, %" PRIu64
             " forced; largest offset step %" PRIu64 " ns (forced %" PRIu64
             " ns), largest extrapolation %" PRIu64 " us",
             td->gpu_id, sp->count[SP_AT_READING], sp->count[SP_IN_GAP], sp->count[SP_FORCED],
             sp->max_step_ns, sp->max_forced_step_ns, sp->max_extrapolation_ns / 1000);
    pthread_mutex_lock(&col->lock);
    col->finished = true;
    col->release_ack = col->release_req;
    pthread_cond_broadcast(&col->ack_cond);
    pthread_mutex_unlock(&col->lock);
    return NULL;
}

/* ---- public ------------------------------------------------------------------------ */

/* A block of memory records filled up (memory/mem_sequence.h): called on an
 * application thread under the memory lock. */
static void wake_for_memory(void *ctx)
{
    col_nudge(ctx);
}

tl_collector *col_create(tl_device *td)
{
    tl_collector *col = tl_alloc(td, sizeof *col);
    if (!col)
        return NULL;
    col->td = td;
    atomic_init(&col->clear_req, 0u);
    atomic_init(&col->backlog, 0);
    atomic_init(&col->dropped_subs, 0);
    atomic_init(&col->dropped_frames, 0);
    atomic_init(&col->dropped_regions, 0);
    atomic_init(&col->unread_regions, 0);
    col->max_backlog = gt_config_get()->max_pending_submissions;
    /* The calibrated DEVICE value is a counter value like any timestamp:
    * extended (relative to the last calibration) with the counter's valid
    * bits, or no calibration is accepted after its first wrap. */
    gc_domain domain;
    gc_domain_init(&domain, td->props.limits.timestampPeriod,
                   gc_device_valid_bits(td->families, td->nfamilies));
    gc_clock_init(&col->clock, &domain, td->clock_source, td->clock_has_raw,
                  gt_config_get()->clock_budget_ns);
    sp_init(&col->placement, gt_config_get()->clock_budget_ns);
    if (td->clock_source == GC_SOURCE_BRACKET)
        atomic_store(&td->bracket_state, 1u); /* at the first submission */
    else
        seq_calibrate(col); /* now, before the device can run any work */

    pthread_mutex_init(&col->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&col->wake_cond, &ca);
    pthread_cond_init(&col->ack_cond, &ca);
    pthread_condattr_destroy(&ca);
    if (td->memory)
        msq_attach(td->memory, wake_for_memory, col);
    if (pthread_create(&col->thread, NULL, collector_main, col) != 0) {
        if (td->memory)
            msq_detach(td->memory);
        pthread_cond_destroy(&col->wake_cond);
        pthread_cond_destroy(&col->ack_cond);
        pthread_mutex_destroy(&col->lock);
        tl_free(td, col);
        return NULL;
    }
    return col;
}

static bool join(tl_collector *col, bool exiting)
{
    if (col->joined)
        return true;
    if (!exiting) {
        pthread_join(col->thread, NULL);
    } else {
        /* pthread_timedjoin_np waits against CLOCK_REALTIME. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + COL_EXIT_JOIN_NS;
        abs_deadline(&ts, at);
        if (pthread_timedjoin_np(col->thread, NULL, &ts) != 0)
            return false;
    }
    col->joined = true;
    return true;
}

void col_destroy(tl_collector *col, bool exiting)
{
    if (!col)
        return;
    tl_device *td = col->td;
    pthread_mutex_lock(&col->lock);
    col->stop = true;
    col->exiting = col->exiting || exiting;
    pthread_cond_signal(&col->wake_cond);
    pthread_mutex_unlock(&col->lock);
    if (!join(col, exiting))
        return; /* stuck in the driver at exit: leave it be */

    tl_submission *sub = col->head;
    while (sub) {
        tl_submission *next = sub->next;
        tl_submission_free(td, sub);
        sub = next;
    }
    seq_finish(col);
    if (td->memory) {
        msq_detach(td->memory);
        msq_finish(td->memory);
    }
    pthread_cond_destroy(&col->wake_cond);
    pthread_cond_destroy(&col->ack_cond);
    pthread_mutex_destroy(&col->lock);
    tl_free(td, col);
}

bool col_push(tl_collector *col, tl_submission *sub)
{
    sub->queued_ns = gc_monotonic_ns();
    pthread_mutex_lock(&col->lock);
    bool ok = !col->finished && !col->exiting;
    if (ok) {
        sub->next = NULL;
        if (col->tail)
            col->tail->next = sub;
        else
            col->head = sub;
        col->tail = sub;
        if (sub->kind == TL_SUB_WORK)
            atomic_fetch_add(&col->backlog, 1);
        col->wake = true;
        pthread_cond_signal(&col->wake_cond);
    }
    pthread_mutex_unlock(&col->lock);
    return ok;
}

void col_release_writer(tl_collector *col, bool exiting)
{
    pthread_mutex_lock(&col->lock);
    if (exiting)
        col->exiting = true;
    uint32_t req = ++col->release_req;
    pthread_cond_signal(&col->wake_cond);
    struct timespec ts;
    abs_deadline(&ts, gc_monotonic_ns() + (exiting ? COL_EXIT_JOIN_NS : COL_ACK_TIMEOUT_NS));
    while (!col->finished && (int32_t)(col->release_ack - req) < 0) {
        if (pthread_cond_timedwait(&col->ack_cond, &col->lock, &ts) == ETIMEDOUT)
            break;
    }
    bool reap = exiting && col->finished && !col->joined;
    pthread_mutex_unlock(&col->lock);
    /* At exit nobody destroys the device: reap the thread here. */
    if (reap && pthread_join(col->thread, NULL) == 0)
        col->joined = true;
}

void col_clear_incremental_state(tl_collector *col, unsigned slot)
{
    atomic_fetch_or(&col->clear_req, 1u << slot);
}

void col_nudge(tl_collector *col)
{
    pthread_mutex_lock(&col->lock);
    col->wake = true;
    pthread_cond_signal(&col->wake_cond);
    pthread_mutex_unlock(&col->lock);
}

bool col_backlog_full(tl_collector *col)
{
    return atomic_load_explicit(&col->backlog, memory_order_relaxed) >= col->max_backlog;
}

void col_count_dropped(tl_collector *col, uint32_t regions)
{
    if (atomic_fetch_add(&col->dropped_subs, 1) == 0)
        tl_warn_once(col->td, TL_WARN_BACKLOG,
                     "gpu %u: more than %u submissions waiting for the collector; further "
                     "ones stay untimed until it catches up (GPUTRACE_MAX_PENDING_SUBMISSIONS)",
                     col->td->gpu_id, col->max_backlog);
    atomic_fetch_add(&col->dropped_regions, regions);
}
