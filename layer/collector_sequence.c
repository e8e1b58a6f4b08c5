/* SPDX-License-Identifier: MIT */
/* collector_sequence.c — see collector_sequence.h. */
#include "layer/collector_sequence.h"

#include <inttypes.h>
#include <stdio.h>

#include "layer/collector_unwritten.h"
#include "layer/emit.h"
#include "layer/emit_context.h"
#include "layer/flows/event_ids.h"
#include "layer/flows/flow_sync.h"
#include "layer/flows/host_waits.h"
#include "layer/frames/fr_busy.h"
#include "layer/log.h"
#include "layer/memory/mem_sequence.h"
#include "layer/process_info.h"
#include "layer/timeline_lookup.h"
#include "layer/timeline_meta.h"
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

/* What the device's sequences lost before they were written: submissions
 * passed through untimed and frames given up (each only grows). */
static uint64_t losses(const tl_collector *col)
{
    return (uint64_t)atomic_load(&col->dropped_subs) + (uint64_t)atomic_load(&col->dropped_frames) +
           (uint64_t)atomic_load(&col->unread_regions);
}

static void check_loss(tl_col_seq *s)
{
    tw_stats st;
    tw_get_stats(s->writer, &st);
    uint64_t lost = st.packets_dropped + st.packets_aborted;
    if (lost != s->lost_seen) {
        /* The sequence's interned data is gone for the reader: say it again,
       * in a packet that clears the incremental state. */
        s->lost_seen = lost;
        s->need_interned = true;
    }
}

/* The published snapshot (snapshot_placement.h) on one sequence. */
static void emit_snapshot_on(tl_collector *col, tl_col_seq *s)
{
    if (!s->writer || !col->placement.have_published)
        return;
    const sp_point *p = &col->placement.published;
    em_clock_snapshot(s->writer, col->td->clock_id, p->device_ns, p->boottime_ns, p->monotonic_ns,
                      p->monotonic_raw_ns);
    check_loss(s);
    s->last_snapshot_at = gc_monotonic_ns();
    if (!s->first_snapshot_at)
        s->first_snapshot_at = s->last_snapshot_at;
}

static const char *const where_names[] = { "kept", "at its reading", "in a gap", "forced" };

/* Every published snapshot goes to every sequence: each session's trace
 * converts its GPU times on its own, through the same snapshots. */
static void publish(tl_collector *col, enum sp_where where, const sp_point *p)
{
    const int64_t before =
        col->placement.have_published ? sp_offset(&col->placement.published) : sp_offset(p);
    sp_published(&col->placement, &col->clock_model, where, p);
    for (unsigned i = 0; i < TL_SESSION_SLOTS && col->nwriters; i++)
        emit_snapshot_on(col, &col->seqs[i]);
    if (gt_log_enabled(GT_LOG_DEBUG))
        gt_debug("gpu %u clock snapshot %s: device %" PRIu64 " ns, offset step %" PRId64
                 " ns, %" PRId64 " ns from its reading",
                 col->td->gpu_id, where_names[where], p->device_ns, sp_offset(p) - before,
                 (int64_t)(p->device_ns - col->clock_model.reading.device_ns));
}

/* A calibration was accepted (col->clock.last): into the model, and
 * published at once where nothing can straddle it. */
void seq_reading_accepted(tl_collector *col)
{
    const gc_reading *r = &col->clock.last;
    const sp_point p = { r->device_ns, r->boottime_ns, r->monotonic_ns, r->monotonic_raw_ns };
    sp_model_update(&col->clock_model, &p, r->deviation_ns + r->host_uncertainty_ns);
    sp_reading_accepted(&col->placement);
    sp_point out;
    if (col->placement.have_published && col_work_unwritten(col, NULL))
        return; /* at the next gap (seq_process_work) */
    enum sp_where where =
        sp_at_reading(&col->placement, &col->clock_model, col->written_end, col->closing, &out);
    if (where != SP_KEEP)
        publish(col, where, &out);
}

/* A snapshot for a (re)starting sequence: the published one, and a fresh
 * calibration unless one was written a moment ago. `always`: the published
 * one even then, for a reader that starts right here (the packet before
 * started the incremental state afresh: a flight recorder's window begins
 * there, tracing/flight_recorder.h). */
static void refresh_snapshot(tl_collector *col, tl_col_seq *s, bool always)
{
    uint64_t now = gc_monotonic_ns();
    if (s->last_snapshot_at && now - s->last_snapshot_at < COL_SNAPSHOT_FRESH_NS) {
        if (always)
            emit_snapshot_on(col, s);
        return;
    }
    emit_snapshot_on(col, s);
    if (col->td->clock_source == GC_SOURCE_CALIBRATED)
        seq_calibrate(col);
}

bool seq_any_writer(const tl_collector *col)
{
    return col->nwriters != 0;
}

uint64_t seq_newest_start(const tl_collector *col)
{
    uint64_t newest = 0;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (col->seqs[i].writer && col->seqs[i].first_snapshot_at > newest)
            newest = col->seqs[i].first_snapshot_at;
    return newest;
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
    if (gt_log_enabled(GT_LOG_DEBUG))
        gt_debug("gpu %u clock: reading at device %" PRIu64 " ns, deviation %" PRIu64
                 " ns (+%" PRIu64 " host), drift %.3f ppm, next calibration in %" PRIu64 " ms",
                 td->gpu_id, r.device_ns, r.deviation_ns, r.host_uncertainty_ns,
                 col->clock.drift * 1e6, col->clock.interval_ns / 1000000);
    seq_reading_accepted(col);
}

static void release_seq(tl_collector *col, tl_col_seq *s)
{
    if (s->writer) {
        tl_session_release_writer(s->slot, s->writer);
        s->writer = NULL;
        col->nwriters--;
    }
}

void seq_release_writer(tl_collector *col)
{
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        release_seq(col, &col->seqs[i]);
}

void seq_release_stale(tl_collector *col)
{
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        tl_col_seq *s = &col->seqs[i];
        if (s->writer && s->writer_gen != tl_session_slot_generation(i))
            release_seq(col, s);
    }
}

/* Quiet this long, a sequence's chunk goes out: with the collector's
 * checks at least once a second and the backend's write-out every 2 s, its
 * last packets reach the file within ~3.5 s of being written, inside
 * gputrace-check's 5 s out-of-order window (realapps-glxgears' memory
 * counters of its first second came 5.6 s late at load 2 before). */
#define SEQ_QUIET_FLUSH_NS (500ull * 1000 * 1000)
/* Looks no more often than this (the host waits' lock is the waiting
 * threads'). */
#define SEQ_QUIET_LOOK_NS (100ull * 1000 * 1000)

void seq_flush_quiet(tl_collector *col)
{
    const uint64_t now = gc_monotonic_ns();
    if (now - col->quiet_checked_ns < SEQ_QUIET_LOOK_NS)
        return;
    col->quiet_checked_ns = now;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (col->seqs[i].writer)
            tw_flush_when_quiet(col->seqs[i].writer, now, SEQ_QUIET_FLUSH_NS);
    msq_flush_quiet(col->td->memory, now, SEQ_QUIET_FLUSH_NS);
    hwait_flush_quiet(col->td->waits, now, SEQ_QUIET_FLUSH_NS);
    const uint32_t n = atomic_load_explicit(&col->td->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        tl_queue_flush_quiet(col->td->queues[i], now, SEQ_QUIET_FLUSH_NS);
}

/* Once the application waits for the collector (vkDestroyDevice's drain,
 * the exit drain), its writer no longer waits for the service either: a
 * stall there would be the application's wait. */
void seq_never_stall(tl_collector *col)
{
    col->no_stall = true;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (col->seqs[i].writer)
            tw_cap_stall(col->seqs[i].writer, 0);
}

/* A new sequence for the current period of slot `i`. */
static void start_seq(tl_collector *col, unsigned i, uint32_t gen)
{
    tl_col_seq *s = &col->seqs[i];
    s->slot = i;
    s->writer = tl_session_new_collector_writer(i, gen);
    s->writer_gen = gen;
    if (!s->writer)
        return;
    col->nwriters++;
    if (col->no_stall)
        tw_cap_stall(s->writer, 0);
    tw_stats st;
    tw_get_stats(s->writer, &st);
    s->lost_seen = st.packets_dropped + st.packets_aborted;
    /* Submissions left untimed and frames given up before this session
     * began are not its loss. */
    s->dropped_seen = losses(col);
    s->need_interned = true;
    s->names_written = 0;
    s->interned_queues = 0;
    s->events = s->interned_events = 0;
    s->first_snapshot_at = s->last_snapshot_at = 0;
    s->frame_tracks = 0;
    /* The sequence starts with the clock: the snapshot published last
    * (the first one was taken before any of the device's work), then a
    * fresh calibration, published where it cannot split work. */
    refresh_snapshot(col, s, false);
}

void seq_update_writer(tl_collector *col)
{
    seq_release_stale(col);
    /* Memory-only sessions get their events on the memory module's own
     * sequence (memory/mem_sequence.h), none of these. */
    uint32_t active = tl_session_stage_slots();
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        if ((active & (1u << i)) && !col->seqs[i].writer)
            start_seq(col, i, tl_session_slot_generation(i));
    }
}

static void queue_spec(const tl_collector *col, const tl_queue *q, char *name, size_t name_size,
                       char *desc, size_t desc_size, em_queue_spec *out)
{
    const tl_device *td = col->td;
    /* Perfetto v47 keeps one track per queue name across the whole trace:
     * the name says whose queue it is (process, and VkDevice after the
     * process's first), so processes and devices never share a track. */
    const pi_process *proc = pi_process_get();
    if (td->ordinal)
        snprintf(name, name_size, "Vulkan queue %u.%u (%s %d, device %u)", q->family, q->index,
                 proc->name, td->pid, td->ordinal + 1);
    else
        snprintf(name, name_size, "Vulkan queue %u.%u (%s %d)", q->family, q->index, proc->name,
                 td->pid);
    VkQueueFlags f = q->family < td->nfamilies ? td->families[q->family].queueFlags : 0;
    snprintf(desc, desc_size,
             "%s (gpu %u), queue family %u (%s%s%s%s), index %u; clock_domain=%s clock_id=0x%08x "
             "clock_source=%s deviation_ns=%" PRIu64,
             td->props.deviceName, td->gpu_id, q->family, f & VK_QUEUE_GRAPHICS_BIT ? "G" : "",
             f & VK_QUEUE_COMPUTE_BIT ? "C" : "", f & VK_QUEUE_TRANSFER_BIT ? "T" : "",
             f & VK_QUEUE_SPARSE_BINDING_BIT ? "S" : "", q->index, td->clock_name, td->clock_id,
             td->clock_source == GC_SOURCE_CALIBRATED ? "calibrated" : "bracket",
             col->clock.max_deviation_ns);
    out->iid = TL_QUEUE_IID_BASE + q->slot;
    out->name = name;
    out->description = desc;
}

/* Interned data on one sequence: for `q`, or everything when the
 * sequence needs it again. The one place that emits a sequence's interned
 * state: whatever else a sequence must repeat at its start and after loss
 * belongs here. */
static void ensure_interned_on(tl_collector *col, tl_col_seq *s, const tl_queue *q,
                               uint32_t cleared)
{
    tl_device *td = col->td;
    /* Asked for a restart point (a flight recorder's window may begin
     * there, or the system service cleared the incremental state). */
    const bool asked = (cleared & (1u << s->slot)) != 0;
    if (asked)
        s->need_interned = true;
    const uint64_t dropped = losses(col);
    const bool after_loss = dropped != s->dropped_seen;
    if (after_loss) {
        /* Submissions passed through untimed, or frames given up: their
       * events are missing from the sequence. Say so in the next packet
       * (previous_packet_dropped), which starts the incremental state
       * afresh. */
        gt_debug("gpu %u: %" PRIu64 " submissions (%" PRIu64 " regions) untimed so far (the "
                 "collector's backlog was full), %" PRIu64 " frames given up, %" PRIu64
                 " regions without timestamps",
                 td->gpu_id, (uint64_t)atomic_load(&col->dropped_subs),
                 (uint64_t)atomic_load(&col->dropped_regions),
                 (uint64_t)atomic_load(&col->dropped_frames),
                 (uint64_t)atomic_load(&col->unread_regions));
        s->dropped_seen = dropped;
        s->need_interned = true;
    }
    uint64_t now = gc_monotonic_ns();
    if (now - s->interned_at > COL_INTERN_PERIOD_NS ||
        s->events - s->interned_events > COL_INTERN_PERIOD_EVENTS)
        s->need_interned = true;
    const uint64_t bit = UINT64_C(1) << q->slot;
    if (!s->need_interned && (s->interned_queues & bit))
        return;

    char names[TL_MAX_QUEUES][112];
    char descs[TL_MAX_QUEUES][640];
    em_queue_spec specs[TL_MAX_QUEUES];
    uint32_t n = 0;
    if (s->need_interned) {
        uint32_t count = atomic_load_explicit(&td->nqueues, memory_order_acquire);
        for (uint32_t i = 0; i < count; i++)
            queue_spec(col, td->queues[i], names[n], sizeof names[n], descs[n], sizeof descs[n],
                       &specs[n]),
                n++;
        (after_loss ? em_interned_after_loss : em_interned)(
            s->writer, true, (uint64_t)(uintptr_t)td->gt->handle, td->pid, specs, n);
        /* A reader that lost the start of the sequence needs a snapshot of
         * the clock as much as the interned data: right after it, so one
         * that starts at the interned data has it too (repeated even if
         * recent only where a restart point was asked for: elsewhere an
         * identical copy is no second reading). */
        refresh_snapshot(col, s, asked);
        if (td->identity.ngpus)
            emc_gpu_info(s->writer, gc_boottime_ns(), td->identity.gpus, td->identity.ngpus);
        s->interned_queues = count >= 64 ? UINT64_MAX : (UINT64_C(1) << count) - 1;
        s->need_interned = false;
        s->interned_at = now;
        s->interned_events = s->events;
        /* A new incremental generation: label stages and object names are
         * written again as they are used. */
        if (s->labels)
            ls_reset(s->labels);
        s->names_since = 0;
        s->frame_tracks = 0;
    } else {
        queue_spec(col, q, names[0], sizeof names[0], descs[0], sizeof descs[0], &specs[0]);
        em_interned(s->writer, false, 0, td->pid, specs, 1);
        s->interned_queues |= bit;
    }
    check_loss(s);
}

void seq_ensure_interned(tl_collector *col, const tl_queue *q)
{
    const uint32_t cleared = atomic_exchange(&col->clear_req, 0u);
    for (unsigned i = 0; i < TL_SESSION_SLOTS && col->nwriters; i++)
        if (col->seqs[i].writer)
            ensure_interned_on(col, &col->seqs[i], q, cleared);
}

/* ---- results ------------------------------------------------------------------- */

static uint64_t to_device_ns(const tl_collector *col, const tl_queue *q, uint64_t raw)
{
    gc_domain d = col->clock.domain;
    if (q->valid_bits)
        d.valid_bits = q->valid_bits;
    return gc_ticks_to_ns(&d, gc_extend(&d, col->clock.last.device_ticks, raw));
}

/* ---- names --------------------------------------------------------------------- */

/* The stage of a label region on sequence `s`: one named after its text,
 * its specification written first when new. A full table starts the
 * sequence's incremental state afresh (programs that put a frame number in
 * a label fill it in a few hundred frames): the interned data is written
 * again and the table emptied, so every label keeps its text. The generic
 * "Debug label" stage only when no table can be had. */
static uint64_t label_stage(tl_collector *col, tl_col_seq *s, const tl_queue *q, const char *text)
{
    if (!text)
        return TL_STAGE_LABEL;
    if (!s->labels) {
        s->labels = tl_alloc(col->td, sizeof *s->labels);
        if (!s->labels)
            return TL_STAGE_LABEL;
        ls_reset(s->labels);
    }
    bool fresh;
    uint64_t iid = ls_intern(s->labels, text, &fresh);
    if (!iid && strlen(text) < LS_MAX_BYTES / 4) {
        /* (A giant text would empty the table for itself alone each time.) */
        s->need_interned = true;
        ensure_interned_on(col, s, q, 0);
        iid = ls_intern(s->labels, text, &fresh);
    }
    if (!iid)
        return TL_STAGE_LABEL;
    if (fresh)
        em_label_spec(s->writer, iid, text);
    return iid;
}

/* Object names not yet written in each sequence's incremental generation,
 * before the GPU events that may use them. Trace processors apply a name
 * to the events after it in time. A name's first packet on a sequence is
 * dated when it was set, or when its session started if that is later:
 * before every event of the session that can refer to it, and never
 * before the session. A repeat (the incremental state started afresh, once
 * a second) is for a reader that lost the first: the events after the
 * restart are all it can read, so the repeat is dated at the oldest work
 * still to be written (less the model's slack), not when the object was
 * named. Dated then, it would lie further behind the packets around it in
 * the file the longer the program ran: 9 s into a run, names of its first
 * moment, which gputrace-check warns of (packets_out_of_order) and a
 * reader of windows must hold back for. */
static void emit_names(tl_collector *col)
{
    tl_device *td = col->td;
    const uint64_t version = tl_names_version(td->names);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        tl_col_seq *s = &col->seqs[i];
        if (!s->writer || s->names_since == version)
            continue;
        if (!col->names_snap)
            col->names_snap = tl_alloc(td, sizeof *col->names_snap);
        if (!col->names_snap)
            return;
        const tl_names_snapshot *snap = col->names_snap;
        s->names_since = tl_names_collect(td->names, s->names_since, col->names_snap);
        const uint64_t started = tl_session_slot_started_ns(i);
        uint64_t repeat_at = 0; /* looked up at the first repeat */
        for (uint32_t k = 0; k < snap->count; k++) {
            const tl_name_item *it = &snap->items[k];
            uint64_t at = it->set_ns > started ? it->set_ns : started;
            if (it->seq <= s->names_written) {
                if (!repeat_at) {
                    bool complete;
                    const uint64_t since = col_unwritten_since(col, NULL, &complete);
                    const uint64_t slack = col_model_slack(col);
                    repeat_at = since > slack ? since - slack : 1;
                }
                at = repeat_at > at ? repeat_at : at;
            } else {
                s->names_written = it->seq;
            }
            em_object_name(s->writer, at, td->pid, (uint64_t)(uintptr_t)td->gt->handle,
                           (int32_t)it->type, it->handle, it->text);
        }
        check_loss(s);
    }
}

void seq_finish(tl_collector *col)
{
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        tl_free(col->td, col->seqs[i].labels);
        col->seqs[i].labels = NULL;
    }
    tl_free(col->td, col->names_snap);
    col->names_snap = NULL;
}

/* Stages a stage's event_wait_ids name at most. */
#define SEQ_WAIT_IDS 16u

typedef struct emit_ctx emit_ctx;
struct emit_ctx {
    tl_collector *col;
    tl_submission *sub;
    uint32_t cursor, end;
    uint64_t collected_boottime_ns;
    tl_meta_scratch *meta; /* one event's stage arguments at a time */
    /* Flows: the id the vkQueueSubmit slice named for the submitted
     * primary being written (0: none), and what its batch waited for; both
     * go to its first stage written (its "Command buffer" stage). */
    uint64_t reserved_id;
    uint64_t waits[SEQ_WAIT_IDS];
    uint32_t nwaits;
};

static void emit_event(emit_ctx *x, const tl_recording *rec, const tl_region *r, uint64_t start,
                       uint64_t end)
{
    tl_collector *col = x->col;
    tl_device *td = col->td;
    const bool top = r->stage == TL_STAGE_COMMAND_BUFFER || r->stage == TL_STAGE_SUBMISSION;
    tl_meta_args(rec, r, td->names, x->meta);
    em_stage_event ev = {
        .timestamp = start,
        .clock_id = td->clock_id,
        .event_id = x->reserved_id ? x->reserved_id : eid_take(1),
        .wait_ids = x->waits,
        .nwait_ids = x->nwaits,
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
        .args = x->meta->args,
        .nargs = x->meta->nargs,
        .frame_number = x->sub->frame.stream ? x->sub->frame.frame : 0,
    };
    /* The frame's GPU time and busy time come from its command buffers. */
    if (top)
        fr_busy_add(&x->sub->gpu, start, end);
    /* Each session gets the stages it asked for (session.h). */
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        tl_col_seq *s = &col->seqs[i];
        if (!s->writer || !tl_session_slot_wants(i, r->stage))
            continue;
        ev.stage_iid =
            r->stage == TL_STAGE_LABEL ? label_stage(col, s, x->sub->queue, ev.name) : r->stage;
        em_render_stage(s->writer, &ev);
        s->events++;
        check_loss(s);
    }
    x->reserved_id = 0;
    x->nwaits = 0;
    col->events_emitted++;
    if (end > col->written_end)
        col->written_end = end;
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
        if (!b[1] || !e[1]) {
            /* The submission is complete and both timestamps were recorded:
             * a value missing now is a region lost, never a silent gap. */
            if (atomic_fetch_add(&x->col->unread_regions, 1) == 0)
                gt_warn("gpu %u: a region of complete work had no timestamps to read; such "
                        "regions are counted as lost",
                        x->col->td->gpu_id);
            continue;
        }
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

/* ---- where the clock's snapshots go (snapshot_placement.h) ----------------------- */

/* The device span of the events a submission will write: its first start
 * and last end. False when it has none. */
static bool submission_span(const tl_collector *col, const tl_submission *sub, const uint64_t *span,
                            uint64_t *first, uint64_t *last)
{
    const tl_queue *q = sub->queue;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < sub->nresults; i++) {
        const tl_result *res = &sub->results[i];
        if (!res->values || !res->ok)
            continue;
        const tl_recording *rec = res->rec;
        for (uint32_t k = 0; k < rec->nregions; k++) {
            const tl_region *r = &rec->regions[k];
            if (r->stage == TL_STAGE_EXECUTE || r->dropped || r->begin == TL_NO_SLOT ||
                r->end == TL_NO_SLOT)
                continue;
            const uint64_t *b = &res->values[2 * r->begin], *e = &res->values[2 * r->end];
            if (!b[1] || !e[1])
                continue;
            const uint64_t start = to_device_ns(col, q, b[0]), end = to_device_ns(col, q, e[0]);
            lo = start < lo ? start : lo;
            hi = end > hi ? end : hi;
        }
    }
    if (span) {
        const uint64_t start = to_device_ns(col, q, span[0]), end = to_device_ns(col, q, span[2]);
        lo = start < lo ? start : lo;
        hi = end > hi ? end : hi;
    }
    *first = lo;
    *last = hi > lo ? hi : lo;
    return lo != UINT64_MAX;
}

/* Before a submission's events: a snapshot where none of its work (nor
 * other unwritten work) can straddle it, when one is due. */
static void place_snapshot(tl_collector *col, const tl_submission *sub, const uint64_t *span)
{
    uint64_t first, last;
    if (!submission_span(col, sub, span, &first, &last) ||
        !sp_wants(&col->placement, &col->clock_model, first, last))
        return;
    const sp_window w = {
        .written_end = col->written_end,
        .next_start = first,
        .next_end = last,
        .horizon = col_unwritten_horizon(col, sub),
    };
    sp_point p;
    enum sp_where where = sp_before_submission(&col->placement, &col->clock_model, &w, &p);
    if (where != SP_KEEP)
        publish(col, where, &p);
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
    if (!col->nwriters)
        return;
    if (!col->clock.have_last && col->stop_seen && gc_accept_best(&col->clock, gc_monotonic_ns())) {
        /* Draining: the narrowest refused bracket is all there will be. */
        seq_reading_accepted(col);
        gt_debug("gpu %u bracket calibration: +-%" PRIu64 " ns (the narrowest of %u)", td->gpu_id,
                 col->clock.last.deviation_ns, col->clock.rejected);
    }
    if (!col->clock.have_last) {
        col->events_unconverted++;
        tl_warn_once(td, TL_WARN_RESULTS, "no clock reading for gpu %u yet: GPU events lost",
                     td->gpu_id);
        return;
    }
    uint64_t span[4];
    const bool have_span = sub->span_chunk && read_span(td, sub->span_chunk, span);
    place_snapshot(col, sub, have_span ? span : NULL);
    seq_ensure_interned(col, sub->queue);
    emit_names(col);
    tl_meta_scratch meta; /* the collector's (its thread's stack) */
    emit_ctx x = { .col = col, .sub = sub, .collected_boottime_ns = collected, .meta = &meta };
    for (uint32_t i = 0; i < sub->nentries; i++) {
        x.cursor = sub->entries[i].first;
        x.end = sub->entries[i].first + sub->entries[i].count;
        x.reserved_id = sub->flow.first_id && i < sub->flow.nids ? sub->flow.first_id + i : 0;
        x.nwaits = fs_entry_waits(td->flows, &sub->flow, i, x.waits, SEQ_WAIT_IDS);
        emit_recording(&x);
    }
    if (have_span) {
        const tl_region r = { .stage = TL_STAGE_SUBMISSION, .api = "vkQueueSubmit" };
        const tl_recording fake = { .cb = sub->span_app_cb };
        x.reserved_id = sub->flow.span_id;
        x.nwaits = fs_entry_waits(td->flows, &sub->flow, FS_SPAN, x.waits, SEQ_WAIT_IDS);
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
            seq_reading_accepted(col);
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
