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
#include <string.h>
#include <time.h>

#include "layer/config.h"
#include "layer/emit.h"
#include "layer/log.h"
#include "layer/timeline_internal.h"

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
/* Interned data is repeated this often (with SEQ_INCREMENTAL_STATE_CLEARED)
 * so a reader that lost the start of the sequence (ring buffer wrapped,
 * trace started late) can use the events after it. */
#define COL_INTERN_PERIOD_NS     (1000ull * 1000 * 1000)
#define COL_INTERN_PERIOD_EVENTS 8192u
/* A snapshot this recent is not repeated when the sequence restarts. */
#define COL_SNAPSHOT_FRESH_NS (10ull * 1000 * 1000)
/* The first and last snapshots of a sequence are at least this far apart. */
#define COL_MIN_SPAN_NS (2ull * 1000 * 1000)
/* On a loaded machine reading back a few hundred submissions takes a good
 * part of a second (lavapipe's query reads block). */
#define COL_EXIT_DRAIN_NS (1000ull * 1000 * 1000) /* within COL_EXIT_JOIN_NS */
/* A copied submission pending this long gets its results checked with the
 * driver (see copy_unseen), at most this often. */
#define COL_COPY_PROBE_NS (250ull * 1000 * 1000)

typedef struct tl_collector tl_collector;
struct tl_collector {
    tl_device *td;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake_cond;
    pthread_cond_t ack_cond;
    tl_submission *head, *tail;
    bool wake, stop, exiting, finished, joined;
    uint32_t release_req, release_ack;
    atomic_bool clear_req;
    /* Work submissions in the list (bounded: see col_backlog_full), and
    * those passed through untimed because it was full. */
    atomic_uint backlog;
    uint32_t max_backlog;
    atomic_uint_fast64_t dropped_subs, dropped_regions;

    /* The thread's own. */
    gc_clock clock;
    tw_writer *writer;
    uint32_t writer_gen;
    bool need_interned;
    uint64_t interned_queues; /* bit per queue slot */
    uint64_t interned_at;     /* MONOTONIC of the last full re-emission */
    uint64_t interned_events; /* events_emitted then */
    uint64_t event_id;
    uint64_t lost_seen;
    uint64_t dropped_seen; /* dropped_subs already reported */
    uint64_t events_emitted, events_unconverted;
    bool stop_seen; /* draining: take what calibration there is */
    bool no_stall;  /* the application waits for us: see never_stall() */
    uint64_t first_snapshot_at, last_snapshot_at; /* MONOTONIC, 0: none yet */
    uint64_t copy_probed_ns;                      /* MONOTONIC of the last copy_unseen probe */
};

static void abs_deadline(struct timespec *ts, uint64_t mono_ns)
{
    ts->tv_sec = (time_t)(mono_ns / 1000000000u);
    ts->tv_nsec = (long)(mono_ns % 1000000000u);
}

/* ---- writer and packets --------------------------------------------------------- */

static void check_loss(tl_collector *col)
{
    tw_stats st;
    tw_get_stats(col->writer, &st);
    uint64_t lost = st.packets_dropped + st.packets_aborted;
    if (lost != col->lost_seen) {
        /* The sequence's interned data is gone for the reader: say it again,
       * in a packet that clears the incremental state. */
        col->lost_seen = lost;
        col->need_interned = true;
    }
}

static void emit_snapshot(tl_collector *col)
{
    if (!col->writer || !col->clock.have_last)
        return;
    em_clock_snapshot(col->writer, col->td->clock_id, &col->clock.last);
    check_loss(col);
    col->last_snapshot_at = gc_monotonic_ns();
    if (!col->first_snapshot_at)
        col->first_snapshot_at = col->last_snapshot_at;
}

static void calibrate(tl_collector *col);

/* A snapshot for a (re)starting sequence: the last reading, and a fresh
 * one unless one was written a moment ago. */
static void refresh_snapshot(tl_collector *col)
{
    uint64_t now = gc_monotonic_ns();
    if (col->last_snapshot_at && now - col->last_snapshot_at < COL_SNAPSHOT_FRESH_NS)
        return;
    if (col->td->clock_source == GC_SOURCE_CALIBRATED)
        calibrate(col);
    else
        emit_snapshot(col);
}

static void calibrate(tl_collector *col)
{
    tl_device *td = col->td;
    gt_device *dev = td->gt;
    gc_reading r;
    uint64_t now = gc_monotonic_ns();
    VkResult res = gc_calibrate(&col->clock, dev->handle, dev->get_calibrated_timestamps,
                                GC_CALIBRATION_TRIES, &r);
    if (res != VK_SUCCESS) {
        tl_warn_once(td, TL_WARN_RESULTS, "vkGetCalibratedTimestamps failed (%d)", (int)res);
        col->clock.next_due_ns = now + GC_INTERVAL_MIN_NS;
        return;
    }
    if (!gc_accept(&col->clock, &r, now)) {
        col->clock.next_due_ns = now + GC_INTERVAL_MIN_NS;
        return;
    }
    emit_snapshot(col);
    if (gt_log_enabled(GT_LOG_DEBUG))
        gt_debug("gpu %u clock: deviation %" PRIu64 " ns (+%" PRIu64 " host), drift %.3f ppm, "
                 "next calibration in %" PRIu64 " ms",
                 td->gpu_id, r.deviation_ns, r.host_uncertainty_ns, col->clock.drift * 1e6,
                 col->clock.interval_ns / 1000000);
}

static void release_writer_now(tl_collector *col)
{
    if (col->writer) {
        tl_session_release_writer(col->writer);
        col->writer = NULL;
    }
}

/* Once the application waits for the collector (vkDestroyDevice's drain,
 * the exit drain), its writer no longer waits for the service either: a
 * stall there would be the application's wait. */
static void never_stall(tl_collector *col)
{
    col->no_stall = true;
    if (col->writer)
        tw_cap_stall(col->writer, 0);
}

static void update_writer(tl_collector *col)
{
    uint32_t gen = tl_session_generation();
    if (col->writer && col->writer_gen != gen)
        release_writer_now(col);
    if (col->writer || !tl_session_tracing())
        return;
    col->writer = tl_session_new_collector_writer(gen);
    col->writer_gen = gen;
    if (!col->writer)
        return;
    if (col->no_stall)
        tw_cap_stall(col->writer, 0);
    tw_stats st;
    tw_get_stats(col->writer, &st);
    col->lost_seen = st.packets_dropped + st.packets_aborted;
    col->need_interned = true;
    col->first_snapshot_at = col->last_snapshot_at = 0;
    /* The sequence starts with the clock: the reading taken when the device
    * was created (before any of its work), then a fresh one. */
    if (col->clock.have_last)
        emit_snapshot(col);
    col->last_snapshot_at = 0;
    refresh_snapshot(col);
}

static void queue_spec(const tl_collector *col, const tl_queue *q, char *name, size_t name_size,
                       char *desc, size_t desc_size, em_queue_spec *out)
{
    const tl_device *td = col->td;
    snprintf(name, name_size, "Vulkan queue %u.%u", q->family, q->index);
    VkQueueFlags f = q->family < td->nfamilies ? td->families[q->family].queueFlags : 0;
    snprintf(desc, desc_size,
             "%s, queue family %u (%s%s%s%s), index %u; clock_domain=%s clock_id=0x%08x "
             "clock_source=%s deviation_ns=%" PRIu64,
             td->props.deviceName, q->family, f & VK_QUEUE_GRAPHICS_BIT ? "G" : "",
             f & VK_QUEUE_COMPUTE_BIT ? "C" : "", f & VK_QUEUE_TRANSFER_BIT ? "T" : "",
             f & VK_QUEUE_SPARSE_BINDING_BIT ? "S" : "", q->index, td->clock_name, td->clock_id,
             td->clock_source == GC_SOURCE_CALIBRATED ? "calibrated" : "bracket",
             col->clock.max_deviation_ns);
    out->iid = TL_QUEUE_IID_BASE + q->slot;
    out->name = name;
    out->description = desc;
}

static void ensure_interned(tl_collector *col, const tl_queue *q)
{
    tl_device *td = col->td;
    if (atomic_exchange(&col->clear_req, false))
        col->need_interned = true;
    const uint64_t dropped = atomic_load(&col->dropped_subs);
    const bool after_loss = dropped != col->dropped_seen;
    if (after_loss) {
        /* Submissions passed through untimed: their events are missing from
       * the sequence. Say so in the next packet (previous_packet_dropped),
       * which starts the incremental state afresh. */
        gt_debug("gpu %u: %" PRIu64 " submissions (%" PRIu64 " regions) untimed so far: "
                 "the collector's backlog was full",
                 td->gpu_id, dropped, (uint64_t)atomic_load(&col->dropped_regions));
        col->dropped_seen = dropped;
        col->need_interned = true;
    }
    uint64_t now = gc_monotonic_ns();
    if (now - col->interned_at > COL_INTERN_PERIOD_NS ||
        col->events_emitted - col->interned_events > COL_INTERN_PERIOD_EVENTS)
        col->need_interned = true;
    const uint64_t bit = UINT64_C(1) << q->slot;
    if (!col->need_interned && (col->interned_queues & bit))
        return;

    char names[TL_MAX_QUEUES][48];
    char descs[TL_MAX_QUEUES][640];
    em_queue_spec specs[TL_MAX_QUEUES];
    uint32_t n = 0;
    if (col->need_interned) {
        /* A reader that lost the start of the sequence needs a snapshot of
       * the clock as much as the interned data. */
        refresh_snapshot(col);
        uint32_t count = atomic_load_explicit(&td->nqueues, memory_order_acquire);
        for (uint32_t i = 0; i < count; i++)
            queue_spec(col, td->queues[i], names[n], sizeof names[n], descs[n], sizeof descs[n],
                       &specs[n]),
                n++;
        (after_loss ? em_interned_after_loss : em_interned)(
            col->writer, true, (uint64_t)(uintptr_t)td->gt->handle, td->pid, specs, n);
        col->interned_queues = count >= 64 ? UINT64_MAX : (UINT64_C(1) << count) - 1;
        col->need_interned = false;
        col->interned_at = now;
        col->interned_events = col->events_emitted;
    } else {
        queue_spec(col, q, names[0], sizeof names[0], descs[0], sizeof descs[0], &specs[0]);
        em_interned(col->writer, false, 0, td->pid, specs, 1);
        col->interned_queues |= bit;
    }
    check_loss(col);
}

/* ---- results ------------------------------------------------------------------- */

static uint64_t to_device_ns(const tl_collector *col, const tl_queue *q, uint64_t raw)
{
    gc_domain d = col->clock.domain;
    if (q->valid_bits)
        d.valid_bits = q->valid_bits;
    return gc_ticks_to_ns(&d, gc_extend(&d, col->clock.last.device_ticks, raw));
}

typedef struct emit_ctx emit_ctx;
struct emit_ctx {
    tl_collector *col;
    tl_submission *sub;
    uint32_t cursor, end;
    uint64_t collected_boottime_ns;
};

static void emit_event(emit_ctx *x, const tl_recording *rec, const tl_region *r, uint64_t start,
                       uint64_t end)
{
    tl_collector *col = x->col;
    tl_device *td = col->td;
    const bool top = r->stage == TL_STAGE_COMMAND_BUFFER || r->stage == TL_STAGE_SUBMISSION;
    const em_stage_event ev = {
        .timestamp = start,
        .clock_id = td->clock_id,
        .event_id = ++col->event_id,
        .duration = end > start ? end - start : 0,
        .hw_queue_iid = TL_QUEUE_IID_BASE + x->sub->queue->slot,
        .stage_iid = r->stage,
        .context_iid = (uint64_t)(uintptr_t)td->gt->handle,
        .gpu_id = (int32_t)td->gpu_id,
        .submission_id = x->sub->id,
        .command_buffer = (uint64_t)(uintptr_t)rec->cb,
        .render_pass = r->handle,
        .render_target = r->target,
        .name = tl_region_name(rec, r),
        .api = r->stage == TL_STAGE_LABEL ? NULL : r->api,
        .collected_boottime_ns = top ? x->collected_boottime_ns : 0,
    };
    em_render_stage(col->writer, &ev);
    col->events_emitted++;
    check_loss(col);
}

/* One recording's regions, with the secondaries it executes emitted where
 * they were executed (parents before children, as recorded). */
static void emit_recording(emit_ctx *x)
{
    if (x->cursor >= x->end)
        return;
    const tl_result *res = &x->sub->results[x->cursor++];
    const tl_recording *rec = res->rec;
    const tl_queue *q = x->sub->queue;
    for (uint32_t i = 0; i < rec->nregions; i++) {
        const tl_region *r = &rec->regions[i];
        if (r->stage == TL_STAGE_EXECUTE) {
            emit_recording(x);
            continue;
        }
        if (r->dropped || r->begin == TL_NO_SLOT || r->end == TL_NO_SLOT || !res->values ||
            !res->ok)
            continue;
        const uint64_t *b = &res->values[2 * r->begin], *e = &res->values[2 * r->end];
        if (!b[1] || !e[1])
            continue;
        emit_event(x, rec, r, to_device_ns(x->col, q, b[0]), to_device_ns(x->col, q, e[0]));
    }
}

static bool read_span(tl_device *td, const tl_qchunk *chunk, uint64_t out[4])
{
    VkResult r = td->gt->vk.GetQueryPoolResults(
        td->gt->handle, chunk->pool, chunk->first, 2, 4 * sizeof(uint64_t), out,
        2 * sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    return (r == VK_SUCCESS || r == VK_NOT_READY) && out[1] && out[3];
}

static void process_work(tl_collector *col, tl_submission *sub, uint64_t collected)
{
    tl_device *td = col->td;
    for (uint32_t i = 0; i < sub->nresults; i++) {
        tl_result *res = &sub->results[i];
        tl_recording *rec = res->rec;
        if (!rec->nslots)
            continue;
        pthread_mutex_lock(&rec->lock);
        if (!res->collected)
            tl_result_read(td, res);
        if (rec->pending == res)
            rec->pending = NULL;
        pthread_mutex_unlock(&rec->lock);
    }
    if (!col->writer)
        return;
    if (!col->clock.have_last && col->stop_seen && gc_accept_best(&col->clock, gc_monotonic_ns())) {
        /* Draining: the narrowest refused bracket is all there will be. */
        emit_snapshot(col);
        gt_debug("gpu %u bracket calibration: +-%" PRIu64 " ns (the narrowest of %u)", td->gpu_id,
                 col->clock.last.deviation_ns, col->clock.rejected);
    }
    if (!col->clock.have_last) {
        col->events_unconverted++;
        tl_warn_once(td, TL_WARN_RESULTS, "no clock reading for gpu %u yet: GPU events lost",
                     td->gpu_id);
        return;
    }
    ensure_interned(col, sub->queue);
    emit_ctx x = { .col = col, .sub = sub, .collected_boottime_ns = collected };
    for (uint32_t i = 0; i < sub->nentries; i++) {
        x.cursor = sub->entries[i].first;
        x.end = sub->entries[i].first + sub->entries[i].count;
        emit_recording(&x);
    }
    uint64_t span[4];
    if (sub->span_chunk && read_span(td, sub->span_chunk, span)) {
        const tl_region r = { .stage = TL_STAGE_SUBMISSION, .api = "vkQueueSubmit" };
        const tl_recording fake = { .cb = sub->span_app_cb };
        emit_event(&x, &fake, &r, to_device_ns(col, sub->queue, span[0]),
                   to_device_ns(col, sub->queue, span[2]));
    }
}

static void process_calibration(tl_collector *col, tl_submission *sub, const gc_host_time *after)
{
    tl_device *td = col->td;
    uint64_t v[2] = { 0, 0 };
    VkResult r = td->gt->vk.GetQueryPoolResults(
        td->gt->handle, sub->cal_chunk->pool, sub->cal_chunk->first, 1, sizeof v, v, sizeof v,
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (r == VK_SUCCESS && v[1]) {
        gc_domain d = col->clock.domain;
        if (sub->queue->valid_bits)
            d.valid_bits = sub->queue->valid_bits;
        gc_clock tmp = col->clock;
        tmp.domain = d;
        gc_reading reading;
        gc_bracket(&tmp, v[0], &sub->before, after, &reading);
        if (gc_accept(&col->clock, &reading, after->monotonic_ns)) {
            emit_snapshot(col);
            gt_debug("gpu %u bracket calibration: +-%" PRIu64 " ns, next in %" PRIu64 " ms",
                     td->gpu_id, reading.deviation_ns, col->clock.interval_ns / 1000000);
            atomic_store(&td->bracket_state, 0);
            return;
        }
        col->clock.next_due_ns = after->monotonic_ns + GC_INTERVAL_MIN_NS;
        if (!col->clock.have_last) {
            /* Try again at the next submission: work waits for a reference. */
            atomic_store(&td->bracket_state, 1);
            return;
        }
    }
    atomic_store(&td->bracket_state, 0);
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

/* Whether a submission's work is complete: its fence, or, for submissions
 * without one, the last timestamp of every submitted command buffer (a
 * bottom-of-pipe timestamp is written only after everything recorded
 * before it). VK_NOT_READY while not; an error if the device is lost. */
/* The last copied value of `rec` in our mapping: both words non-zero (a
 * driver may write either first). */
static bool copy_landed(tl_device *td, const tl_recording *rec)
{
    const tl_qchunk *chunk = rec->chunks[(rec->nslots - 1) / TL_CHUNK_QUERIES];
    const uint32_t last = (rec->nslots - 1) % TL_CHUNK_QUERIES;
    tl_results_invalidate(td, chunk);
    return __atomic_load_n(&chunk->results[2 * last + 1], __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&chunk->results[2 * last], __ATOMIC_ACQUIRE);
}

/* A copied submission pending for long: asks the driver whether its last
 * query is there. If it is and our mapping still does not show the copy,
 * the mapping is not what the GPU wrote (gfxreconstruct's page guard below
 * us refreshes its host copies of device writes only at its own sync
 * points), and the device switches to vkGetQueryPoolResults for good. At
 * most one probe per COL_COPY_PROBE_NS: on lavapipe each is a device-idle
 * wait. */
static bool copy_unseen(tl_collector *col, const tl_submission *sub, const tl_recording *rec)
{
    tl_device *td = col->td;
    const uint64_t now = gc_monotonic_ns();
    if (now - sub->queued_ns < COL_COPY_PROBE_NS || now - col->copy_probed_ns < COL_COPY_PROBE_NS)
        return false;
    col->copy_probed_ns = now;
    const uint32_t slot = rec->nslots - 1;
    const tl_qchunk *chunk = rec->chunks[slot / TL_CHUNK_QUERIES];
    uint64_t v[2] = { 0, 0 };
    VkResult r = td->gt->vk.GetQueryPoolResults(
        td->gt->handle, chunk->pool, chunk->first + slot % TL_CHUNK_QUERIES, 1, sizeof v, v,
        sizeof v, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    /* The copy follows the query in the command buffer: once the driver has
    * the query and, a moment later, our mapping still lacks the copy... */
    if (r != VK_SUCCESS || !v[1] || copy_landed(td, rec))
        return false;
    struct timespec pause = { 0, 50 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    if (copy_landed(td, rec))
        return false;
    atomic_store(&td->copies_unseen, true);
    gt_warn("gpu %u: timestamps copied into mapped memory do not show up there (a layer below "
            "shadowing mapped memory?); reading them with vkGetQueryPoolResults from now on "
            "(GPUTRACE_QUERY_READBACK=driver avoids the copies)",
            td->gpu_id);
    return true;
}

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
        if (!res->collected && tl_reads_copy(td, rec)) {
            /* The copy is the command buffer's last work: its last value
          * landing means all of it is complete. */
            if (!copy_landed(td, rec) && !copy_unseen(col, sub, rec))
                r = VK_NOT_READY;
        } else if (!res->collected) {
            /* Collected early means the submitter knew it complete. */
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
    update_writer(col);
    pthread_mutex_lock(&col->lock);
    if (col->release_req != col->release_ack) {
        uint32_t req = col->release_req;
        pthread_mutex_unlock(&col->lock);
        release_writer_now(col);
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
    while (sub) {
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
                process_calibration(col, sub, &after);
            } else {
                /* Without any clock reading yet, hold the events while the
             * first bracket calibration is still on its way. */
                if (!col->clock.have_last && !col->stop_seen &&
                    td->clock_source == GC_SOURCE_BRACKET) {
                    sub = next;
                    continue;
                }
                process_work(col, sub, after.boottime_ns);
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
}

static void maybe_calibrate(tl_collector *col)
{
    uint64_t now = gc_monotonic_ns();
    if (col->clock.have_last && now < col->clock.next_due_ns)
        return;
    if (col->td->clock_source == GC_SOURCE_CALIBRATED) {
        calibrate(col);
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
    if (col->writer && q)
        ensure_interned(col, q);
}

/* At process exit, for applications that never destroy their device: what
 * has completed (typically everything the application waited for) is
 * still collected, with a short bound on the wait for the rest. */
static void drain_at_exit(tl_collector *col)
{
    gt_device *dev = col->td->gt;
    const uint64_t deadline = gc_monotonic_ns() + COL_EXIT_DRAIN_NS;
    never_stall(col);
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
                never_stall(col);
                /* No more submissions will bring a better bracket. */
                if (gc_accept_best(&col->clock, now)) {
                    emit_snapshot(col);
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

    /* A last snapshot, so conversions of the last events need no
    * extrapolation beyond one (also at process exit: the drain above
    * already used the device). */
    if (col->writer && td->clock_source == GC_SOURCE_CALIBRATED) {
        /* Readers measure drift only between snapshots some time apart
       * (gputrace-check: 1 ms): a very short trace waits that long. */
        uint64_t since = gc_monotonic_ns() - col->first_snapshot_at;
        if (col->first_snapshot_at && since < COL_MIN_SPAN_NS) {
            struct timespec ts = { 0, (long)(COL_MIN_SPAN_NS - since) };
            nanosleep(&ts, NULL);
        }
        calibrate(col);
    }
    release_writer_now(col);
    if (atomic_load(&col->dropped_subs))
        gt_warn("gpu %u: %" PRIu64 " submissions (%" PRIu64 " regions) were not timed: the "
                "collector's backlog was full (GPUTRACE_MAX_PENDING_SUBMISSIONS=%u)",
                td->gpu_id, (uint64_t)atomic_load(&col->dropped_subs),
                (uint64_t)atomic_load(&col->dropped_regions), col->max_backlog);
    gt_debug("gpu %u collector: %" PRIu64 " events, %" PRIu64 " submissions without clock, "
             "%u calibrations (%u rejected), max deviation %" PRIu64 " ns, %" PRIu64
             " submissions (%" PRIu64 " regions) untimed for a full backlog",
             td->gpu_id, col->events_emitted, col->events_unconverted, col->clock.accepted,
             col->clock.rejected, col->clock.max_deviation_ns,
             (uint64_t)atomic_load(&col->dropped_subs),
             (uint64_t)atomic_load(&col->dropped_regions));
    pthread_mutex_lock(&col->lock);
    col->finished = true;
    col->release_ack = col->release_req;
    pthread_cond_broadcast(&col->ack_cond);
    pthread_mutex_unlock(&col->lock);
    return NULL;
}

/* ---- public ------------------------------------------------------------------------ */

tl_collector *col_create(tl_device *td)
{
    tl_collector *col = tl_alloc(td, sizeof *col);
    if (!col)
        return NULL;
    col->td = td;
    atomic_init(&col->clear_req, false);
    atomic_init(&col->backlog, 0);
    atomic_init(&col->dropped_subs, 0);
    atomic_init(&col->dropped_regions, 0);
    col->max_backlog = gt_config_get()->max_pending_submissions;
    /* The calibrated DEVICE value is a counter value like any timestamp:
    * extended (relative to the last calibration) with the counter's valid
    * bits, or no calibration is accepted after its first wrap. */
    gc_domain domain;
    gc_domain_init(&domain, td->props.limits.timestampPeriod,
                   gc_device_valid_bits(td->families, td->nfamilies));
    gc_clock_init(&col->clock, &domain, td->clock_source, td->clock_has_raw,
                  gt_config_get()->clock_budget_ns);
    if (td->clock_source == GC_SOURCE_BRACKET)
        atomic_store(&td->bracket_state, 1u); /* at the first submission */
    else
        calibrate(col); /* now, before the device can run any work */

    pthread_mutex_init(&col->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&col->wake_cond, &ca);
    pthread_cond_init(&col->ack_cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&col->thread, NULL, collector_main, col) != 0) {
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

void col_clear_incremental_state(tl_collector *col)
{
    atomic_store(&col->clear_req, true);
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
