/* SPDX-License-Identifier: MIT */
/* collector_sequence.c — see collector_sequence.h. */
#include "layer/collector_sequence.h"

#include <inttypes.h>
#include <stdio.h>

#include "layer/emit.h"
#include "layer/log.h"
#include "layer/timeline_stage.h"
#include "layer/timeline_submission.h"
#include "layer/timeline_util.h"

/* Interned data is repeated this often (with SEQ_INCREMENTAL_STATE_CLEARED)
 * so a reader that lost the start of the sequence (ring buffer wrapped,
 * trace started late) can use the events after it. */
#define COL_INTERN_PERIOD_NS     (1000ull * 1000 * 1000)
#define COL_INTERN_PERIOD_EVENTS 8192u

/* A snapshot this recent is not repeated when the sequence restarts. */
#define COL_SNAPSHOT_FRESH_NS (10ull * 1000 * 1000)

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

void seq_emit_snapshot(tl_collector *col)
{
    if (!col->writer || !col->clock.have_last)
        return;
    em_clock_snapshot(col->writer, col->td->clock_id, &col->clock.last);
    check_loss(col);
    col->last_snapshot_at = gc_monotonic_ns();
    if (!col->first_snapshot_at)
        col->first_snapshot_at = col->last_snapshot_at;
}

/* A snapshot for a (re)starting sequence: the last reading, and a fresh
 * one unless one was written a moment ago. */
static void refresh_snapshot(tl_collector *col)
{
    uint64_t now = gc_monotonic_ns();
    if (col->last_snapshot_at && now - col->last_snapshot_at < COL_SNAPSHOT_FRESH_NS)
        return;
    if (col->td->clock_source == GC_SOURCE_CALIBRATED)
        seq_calibrate(col);
    else
        seq_emit_snapshot(col);
}

void seq_calibrate(tl_collector *col)
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
    seq_emit_snapshot(col);
    if (gt_log_enabled(GT_LOG_DEBUG))
        gt_debug("gpu %u clock: deviation %" PRIu64 " ns (+%" PRIu64 " host), drift %.3f ppm, "
                 "next calibration in %" PRIu64 " ms",
                 td->gpu_id, r.deviation_ns, r.host_uncertainty_ns, col->clock.drift * 1e6,
                 col->clock.interval_ns / 1000000);
}

void seq_release_writer(tl_collector *col)
{
    if (col->writer) {
        tl_session_release_writer(col->writer);
        col->writer = NULL;
    }
}

/* Once the application waits for the collector (vkDestroyDevice's drain,
 * the exit drain), its writer no longer waits for the service either: a
 * stall there would be the application's wait. */
void seq_never_stall(tl_collector *col)
{
    col->no_stall = true;
    if (col->writer)
        tw_cap_stall(col->writer, 0);
}

void seq_update_writer(tl_collector *col)
{
    uint32_t gen = tl_session_generation();
    if (col->writer && col->writer_gen != gen)
        seq_release_writer(col);
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
        seq_emit_snapshot(col);
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

void seq_ensure_interned(tl_collector *col, const tl_queue *q)
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

void seq_process_work(tl_collector *col, tl_submission *sub, uint64_t collected)
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
        seq_emit_snapshot(col);
        gt_debug("gpu %u bracket calibration: +-%" PRIu64 " ns (the narrowest of %u)", td->gpu_id,
                 col->clock.last.deviation_ns, col->clock.rejected);
    }
    if (!col->clock.have_last) {
        col->events_unconverted++;
        tl_warn_once(td, TL_WARN_RESULTS, "no clock reading for gpu %u yet: GPU events lost",
                     td->gpu_id);
        return;
    }
    seq_ensure_interned(col, sub->queue);
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

void seq_process_calibration(tl_collector *col, tl_submission *sub, const gc_host_time *after)
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
            seq_emit_snapshot(col);
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
