/* SPDX-License-Identifier: MIT */
/* The verdict: violations from what the import counted and measured,
 * their severities (loss explains some symptoms), and the result. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_arith.h"
#include "toolkit/tk_checks_internal.h"

/* ---- names ------------------------------------------------------------------ */

static const struct {
    const char *name;
    tk_severity sev;
} violation_desc[TK_V_COUNT] = {
#define TK_VIOLATION_DESC(code, sev) { #code, sev },
    TK_VIOLATION_LIST(TK_VIOLATION_DESC)
#undef TK_VIOLATION_DESC
};

const char *tk_violation_name(tk_violation_code c)
{
    return violation_desc[c].name;
}
tk_severity tk_violation_severity(tk_violation_code c)
{
    return violation_desc[c].sev;
}

const char *tk_severity_name(tk_severity s)
{
    switch (s) {
    case TK_SEV_INFO:
        return "info";
    case TK_SEV_WARNING:
        return "warning";
    case TK_SEV_DATA_LOSS:
        return "data_loss";
    case TK_SEV_ERROR:
        return "error";
    }
    return "?";
}

/* ---- verdict ------------------------------------------------------------------------------ */

void tk_verdict_add(tk_vlist *l, tk_violation_code code, const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 8;
        tk_violation *nv = realloc(l->v, ncap * sizeof *nv);
        if (!nv)
            return;
        l->v = nv;
        l->cap = ncap;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tk_violation *v = &l->v[l->n];
    v->code = code;
    v->severity = tk_violation_severity(code);
    v->message = strdup(buf);
    if (v->message)
        l->n++;
}

static int64_t stat_total(const tk_checker *c, tk_stat_id id)
{
    return tk_stats_total(&c->st, id);
}

/* For counts read from TraceStats: a value of 2^63 or more reads as
 * negative, and is no less a loss. */
static bool stat_nonzero(const tk_checker *c, tk_stat_id id)
{
    return tk_stats_nonzero(&c->st, id);
}

/* The trace itself records that packets of the producers' sequences were
 * lost: buffer chunks overwritten (ring wrap), discarded, unpatched or
 * rejected, writer or sequence packet loss, failed flushes. Kernel
 * (ftrace) losses do not count: they cannot remove GPU or Vulkan packets. */
static bool trace_recorded_loss(const tk_checker *c)
{
    static const tk_stat_id loss_stats[] = {
        TK_STAT_traced_buf_chunks_overwritten,
        TK_STAT_traced_buf_chunks_discarded,
        TK_STAT_traced_chunks_discarded,
        TK_STAT_traced_buf_patches_failed,
        TK_STAT_traced_buf_abi_violations,
        TK_STAT_traced_buf_trace_writer_packet_loss,
        TK_STAT_sequence_packet_loss,
        TK_STAT_traced_buf_sequence_packet_loss,
        TK_STAT_incremental_state_skipped_after_loss,
        TK_STAT_traced_flushes_failed,
        TK_STAT_traced_final_flush_failed,
    };
    for (size_t i = 0; i < sizeof loss_stats / sizeof loss_stats[0]; i++)
        if (stat_nonzero(c, loss_stats[i]))
            return true;
    return false;
}

/* Violations that are a consequence of lost packets when the trace records
 * a loss: a sequence whose SEQ_INCREMENTAL_STATE_CLEARED packet was lost
 * looks never cleared, GPU stages whose interned queue was lost are dropped,
 * and lost stages are missing. Stages without event_id are a producer bug
 * whatever was lost. */
static bool loss_explains(const tk_checker *c, tk_violation_code code)
{
    switch (code) {
    case TK_V_incremental_state_missing:
    case TK_V_gpu_events_missing:
        return true;
    case TK_V_gpu_stage_dropped:
        return c->gpu_dropped_no_event_id == 0;
    default:
        return false;
    }
}

static bool any_indexed_positive(const tk_stats *st, tk_stat_id id)
{
    for (uint32_t i = 0; i < st->n_slots[id]; i++)
        if (st->slots[id][i].value > 0)
            return true;
    return false;
}

/* Clocks that named themselves in the trace join the declared names and
 * deviations (the user's first: they win where both say something); the
 * merged arrays live until the verdict is done. */
static void merge_learned_clocks(tk_checker *c, tk_result *res, tk_clock_name **names_out,
                                 tk_clock_deviation **devs_out)
{
    tk_clock_name *merged_names = NULL;
    tk_clock_deviation *merged_devs = NULL;
    if (c->n_learned) {
        merged_names = calloc(c->o.n_names + c->n_learned, sizeof *merged_names);
        merged_devs = calloc(c->o.n_deviations + c->n_learned, sizeof *merged_devs);
        res->learned_names = calloc(c->n_learned, sizeof *res->learned_names);
    }
    if (merged_names && merged_devs && res->learned_names) {
        if (c->o.n_names)
            memcpy(merged_names, c->o.names, c->o.n_names * sizeof *merged_names);
        if (c->o.n_deviations)
            memcpy(merged_devs, c->o.deviations, c->o.n_deviations * sizeof *merged_devs);
        size_t nn = c->o.n_names, nd = c->o.n_deviations;
        for (size_t k = 0; k < c->n_learned; k++) {
            tk_learned_clock *lc = &c->learned[k];
            merged_names[nn++] = (tk_clock_name){ lc->has_id, lc->id, lc->name };
            if (lc->has_id && lc->deviation_ns > 0)
                merged_devs[nd++] = (tk_clock_deviation){ lc->id, lc->deviation_ns };
            /* Ownership moves to the result, which the reports point into. */
            res->learned_names[res->n_learned_names++] = lc->name;
            lc->name = NULL;
        }
        c->n_learned = 0;
        c->o.names = merged_names;
        c->o.n_learned_names = nn - c->o.n_names;
        c->o.n_names = nn;
        c->o.deviations = merged_devs;
        c->o.n_deviations = nd;
    }
    *names_out = merged_names;
    *devs_out = merged_devs;
}

/* v58 retries a packet whose clock did not convert at the end of the file
 * and drops it only then: it converts those whose clock has a path to the
 * trace clock by then; the rest count by why (the clock was in no snapshot,
 * or in snapshots with no path) and as dropped packets. (v47 counts them
 * all in clock_sync_failure as they come, with failed snapshot readings.) */
static void failed_as_v58(tk_checker *c, tk_machine *m)
{
    uint64_t dropped = m->failed_unlisted;
    for (uint32_t k = 0; k < m->n_failed; k++) {
        const tk_failed_clock *fc = &m->failed[k];
        if (tk_clock_graph_resolvable(m->g, fc->id))
            continue;
        const int64_t trace_clock = tk_clock_graph_trace_clock(m->g);
        tk_stat_id why = !tk_clock_graph_known(m->g, fc->id)
                             ? TK_STAT_clock_sync_failure_unknown_source_clock
                         : !tk_clock_graph_known(m->g, trace_clock)
                             ? TK_STAT_clock_sync_failure_unknown_target_clock
                             : TK_STAT_clock_sync_failure_no_path;
        tk_stats_add(&c->st, why, tk_sat_from_u64(fc->count));
        dropped += fc->count;
    }
    if (m->failed_unlisted) {
        /* Beyond the list's bound: dropped, why unknown. */
        tk_stats_add(&c->st, TK_STAT_state_limit_hits, 1);
        if (!c->first_limit_reason)
            c->first_limit_reason = "conversions failed on more than 4096 clocks";
    }
    tk_stats_add(&c->st, TK_STAT_clock_sync_failure_undeferrable_packet_loss,
                 tk_sat_from_u64(dropped));
}

/* Counters kept elsewhere (clock graphs, stats table, raw overflows) into
 * the stats; returns the number of sequences seen. */
static uint64_t gather_counters(tk_checker *c, tk_vlist *vl)
{
    tk_stats_add(&c->st, TK_STAT_timestamp_overflow, tk_sat_from_u64(c->raw_ts_overflows));
    if (c->st.dropped_indices) {
        tk_stats_add(&c->st, TK_STAT_state_limit_hits, tk_sat_from_u64(c->st.dropped_indices));
        if (!c->first_limit_reason)
            c->first_limit_reason = "more than 4096 buffers or cpus in one indexed stat";
    }
    if (c->o.self_check)
        for (uint32_t i = 0; i < c->n_m; i++)
            if (tk_clock_graph_verify_paths(c->m[i].g))
                abort();
    uint64_t sequences = 0;
    for (uint32_t i = 0; i < c->n_m; i++) {
        tk_machine *m = &c->m[i];
        const tk_clock_graph_counters *gc = tk_clock_graph_counters_get(m->g);
        tk_stats_add(&c->st, TK_STAT_clock_sync_failure, (int64_t)gc->clock_sync_failure);
        tk_stats_add(&c->st, TK_STAT_clock_sync_cache_miss, (int64_t)gc->clock_sync_cache_miss);
        tk_stats_add(&c->st, TK_STAT_invalid_clock_snapshots, (int64_t)gc->invalid_clock_snapshots);
        tk_stats_add(&c->st, TK_STAT_timestamp_overflow, tk_sat_from_u64(gc->timestamp_overflows));
        if (gc->history_misses) {
            tk_stats_add(&c->st, TK_STAT_state_limit_hits, (int64_t)gc->history_misses);
            if (!c->first_limit_reason)
                c->first_limit_reason = "a conversion needed a clock snapshot evicted from the "
                                        "bounded history";
        }
        failed_as_v58(c, m);
        if (gc->trace_clock_change_ignored)
            tk_verdict_add(vl, TK_V_trace_clock_change_ignored,
                           "%" PRIu64 " ClockSnapshot(s) asked for another trace clock after "
                           "timestamps had been converted; ignored as trace_processor does",
                           gc->trace_clock_change_ignored);
        for (uint32_t s = 0; s < m->n_seqs; s++)
            if (m->seqs[s].id)
                sequences++;
    }
    return sequences;
}

/* Why the import stopped, failed conversions, invalid snapshots. */
static void judge_import(tk_checker *c, tk_vlist *vl, int64_t trace_clock)
{
    if (c->stop)
        tk_verdict_add(vl, c->input_error ? TK_V_input_error : TK_V_import_error, "%s",
                       c->stop_msg);

    const int64_t sync_fail = stat_total(c, TK_STAT_clock_sync_failure);
    if (sync_fail > 0) {
        char detail[256] = "";
        size_t used = 0;
        int shown = 0;
        for (uint32_t i = 0; i < c->n_m && shown < 4; i++) {
            const tk_machine *fm = &c->m[i];
            for (uint32_t k = 0; k < fm->n_failed && shown < 4; k++) {
                const int64_t id = fm->failed[k].id;
                int w;
                if (tk_clock_is_converted_sequence(id))
                    w = snprintf(detail + used, sizeof detail - used,
                                 "%sclock %u of sequence %u: %" PRIu64, shown ? ", " : "; ",
                                 (uint32_t)(id & 0xffffffff), (uint32_t)((uint64_t)id >> 32),
                                 fm->failed[k].count);
                else
                    w = snprintf(detail + used, sizeof detail - used,
                                 "%sclock %" PRId64 ": %" PRIu64, shown ? ", " : "; ", id,
                                 fm->failed[k].count);
                if (w > 0 && (size_t)w < sizeof detail - used)
                    used += (size_t)w;
                shown++;
            }
        }
        tk_verdict_add(
            vl, TK_V_clock_sync_failure,
            "%" PRId64 " timestamp conversion(s) found no path to the trace clock %s%s", sync_fail,
            tk_clock_builtin_name(trace_clock) ? tk_clock_builtin_name(trace_clock) : "(custom)",
            detail);
    }
    if (stat_total(c, TK_STAT_invalid_clock_snapshots) > 0)
        tk_verdict_add(vl, TK_V_invalid_clock_snapshots,
                       "%" PRId64 " invalid ClockSnapshot(s); first at offset %" PRIu64 ": %s",
                       stat_total(c, TK_STAT_invalid_clock_snapshots),
                       c->first_invalid_snapshot_offset,
                       c->first_invalid_snapshot_reason ? c->first_invalid_snapshot_reason : "?");
}

/* Losses the trace records (buffers, writers, sequences, flushes, ftrace)
 * and what the import saw of them. */
static void judge_loss(tk_checker *c, tk_vlist *vl)
{
    const tk_check_options *o = &c->o;
    if (stat_nonzero(c, TK_STAT_traced_buf_chunks_overwritten))
        tk_verdict_add(vl, TK_V_buffer_chunks_overwritten,
                       "%" PRId64 " chunk(s) (%" PRId64 " bytes) overwritten in the ring buffer "
                       "before being read (%" PRId64 " wrap(s))",
                       stat_total(c, TK_STAT_traced_buf_chunks_overwritten),
                       stat_total(c, TK_STAT_traced_buf_bytes_overwritten),
                       stat_total(c, TK_STAT_traced_buf_write_wrap_count));
    const int64_t discarded = tk_sat_add(stat_total(c, TK_STAT_traced_buf_chunks_discarded),
                                         stat_total(c, TK_STAT_traced_chunks_discarded));
    if (stat_nonzero(c, TK_STAT_traced_buf_chunks_discarded) ||
        stat_nonzero(c, TK_STAT_traced_chunks_discarded))
        tk_verdict_add(vl, TK_V_buffer_chunks_discarded,
                       "%" PRId64 " chunk(s) discarded (buffer full, or no buffer)", discarded);
    if (stat_nonzero(c, TK_STAT_traced_buf_patches_failed))
        tk_verdict_add(vl, TK_V_buffer_patches_failed, "%" PRId64 " chunk patch(es) failed",
                       stat_total(c, TK_STAT_traced_buf_patches_failed));
    if (stat_nonzero(c, TK_STAT_traced_buf_abi_violations))
        tk_verdict_add(vl, TK_V_buffer_abi_violations,
                       "%" PRId64 " shared-memory ABI violation(s) by producers",
                       stat_total(c, TK_STAT_traced_buf_abi_violations));
    if (stat_nonzero(c, TK_STAT_traced_buf_trace_writer_packet_loss))
        tk_verdict_add(vl, TK_V_writer_packet_loss,
                       "writers reported %" PRId64 " lost packet(s) (shared memory full)",
                       stat_total(c, TK_STAT_traced_buf_trace_writer_packet_loss));
    if (stat_nonzero(c, TK_STAT_sequence_packet_loss) ||
        stat_nonzero(c, TK_STAT_traced_buf_sequence_packet_loss))
        tk_verdict_add(vl, TK_V_sequence_packet_loss,
                       "%" PRId64 " packet(s) after a gap (previous_packet_dropped, first packet "
                       "of each sequence excluded); first on sequence %u at offset %" PRIu64,
                       stat_total(c, TK_STAT_sequence_packet_loss), c->first_loss_seq,
                       c->first_loss_offset);
    if (stat_total(c, TK_STAT_incremental_state_skipped_after_loss) > 0)
        tk_verdict_add(vl, TK_V_incremental_state_lost,
                       "%" PRId64 " packet(s) needing incremental state skipped after a loss and "
                       "before SEQ_INCREMENTAL_STATE_CLEARED (first on sequence %u)",
                       stat_total(c, TK_STAT_incremental_state_skipped_after_loss),
                       c->first_lost_state_seq);
    if (stat_total(c, TK_STAT_incremental_state_skipped_never_cleared) > 0)
        tk_verdict_add(vl, TK_V_incremental_state_missing,
                       "%" PRId64 " packet(s) needing incremental state on a sequence that never "
                       "set SEQ_INCREMENTAL_STATE_CLEARED (first on sequence %u)",
                       stat_total(c, TK_STAT_incremental_state_skipped_never_cleared),
                       c->first_missing_state_seq);
    if (stat_total(c, TK_STAT_interned_data_tokenizer_errors) > 0)
        tk_verdict_add(vl, TK_V_interned_data_missing,
                       "%" PRId64 " interned-data problem(s) (lookup of an unknown iid, entry "
                       "without iid, or sequence state without sequence id)",
                       stat_total(c, TK_STAT_interned_data_tokenizer_errors));
    if (stat_nonzero(c, TK_STAT_traced_flushes_failed))
        tk_verdict_add(vl, TK_V_flushes_failed, "%" PRId64 " flush(es) failed",
                       stat_total(c, TK_STAT_traced_flushes_failed));
    if (stat_nonzero(c, TK_STAT_traced_final_flush_failed))
        tk_verdict_add(vl, TK_V_final_flush_failed,
                       "the final flush failed: data still in producers was lost");
    bool ftrace_overrun = any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_overrun_delta);
    for (uint32_t i = 0; i < c->st.n_slots[TK_STAT_ftrace_cpu_overrun_end]; i++) {
        const tk_stat_slot *sl = &c->st.slots[TK_STAT_ftrace_cpu_overrun_end][i];
        int64_t begin;
        if (sl->value > 0 &&
            !tk_stats_get_indexed(&c->st, TK_STAT_ftrace_cpu_overrun_begin, sl->idx, &begin))
            ftrace_overrun = true;
    }
    if (ftrace_overrun)
        tk_verdict_add(vl, TK_V_ftrace_overrun,
                       "the kernel overwrote ftrace events before traced_probes read them "
                       "(overrun %" PRId64 ")",
                       stat_total(c, TK_STAT_ftrace_cpu_overrun_delta));
    if (any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_commit_overrun_delta) ||
        any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_dropped_events_delta))
        tk_verdict_add(vl, TK_V_ftrace_dropped_events,
                       "ftrace dropped %" PRId64 " event(s) and had %" PRId64 " commit overrun(s)",
                       stat_total(c, TK_STAT_ftrace_cpu_dropped_events_delta),
                       stat_total(c, TK_STAT_ftrace_cpu_commit_overrun_delta));
    if (any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_has_data_loss))
        tk_verdict_add(vl, TK_V_ftrace_lost_events,
                       "ftrace bundles report lost events on %" PRId64 " cpu(s)",
                       stat_total(c, TK_STAT_ftrace_cpu_has_data_loss));
    if (stat_total(c, TK_STAT_packets_out_of_order) > 0)
        tk_verdict_add(vl, TK_V_packets_out_of_order,
                       "%" PRId64 " packet(s) more than %.3f s older than a packet before them "
                       "(worst %.3f s)",
                       stat_total(c, TK_STAT_packets_out_of_order), (double)o->ooo_window_ns / 1e9,
                       (double)c->worst_ooo_ns / 1e9);
    if (stat_total(c, TK_STAT_timestamp_overflow) > 0)
        tk_verdict_add(
            vl, TK_V_timestamp_overflow,
            "%" PRId64 " timestamp(s) do not fit in 64 signed bits: written as 2^63 or "
            "more, or overflowing when scaled by unit_multiplier_ns, summed as "
            "incremental deltas or shifted by a clock offset; trace_processor wraps them "
            "into meaningless times",
            stat_total(c, TK_STAT_timestamp_overflow));
}

/* A trace without TraceStats was cut short; returns whether it was. */
static bool judge_unfinished(tk_checker *c, tk_vlist *vl)
{
    /* traced and our backends write TraceStats when a session ends: a trace
     * without one was cut short (the application or the service crashed or
     * was killed), and whatever was still buffered is lost. */
    const bool unfinished = !c->stop && stat_total(c, TK_STAT_trace_stats_packets) == 0;
    if (unfinished && c->packets > 0)
        tk_verdict_add(vl, TK_V_no_trace_stats,
                       "no TraceStats packet: the trace was not finished (its writer crashed, was "
                       "killed or never stopped the session), so data still buffered was lost and "
                       "losses before that cannot be assessed");
    else if (unfinished)
        tk_verdict_add(vl, TK_V_no_trace_stats,
                       "the trace holds no packets: nothing was written before it ended");

    return unfinished;
}

static void judge_gpu(tk_checker *c, tk_vlist *vl)
{
    const tk_check_options *o = &c->o;
    if (stat_total(c, TK_STAT_gpu_render_stage_parser_errors) > 0)
        tk_verdict_add(vl, TK_V_gpu_render_stage_parser_errors,
                       "%" PRId64 " GPU render stage event(s) with an invalid hw_queue_id",
                       stat_total(c, TK_STAT_gpu_render_stage_parser_errors));
    if (c->gpu_dropped_no_event_id || c->gpu_dropped_unknown_queue)
        tk_verdict_add(vl, TK_V_gpu_stage_dropped,
                       "%" PRIu64 " GPU render stage event(s) would not be imported (%" PRIu64
                       " without event_id, %" PRIu64 " with an hw_queue_iid not interned)",
                       c->gpu_dropped_no_event_id + c->gpu_dropped_unknown_queue,
                       c->gpu_dropped_no_event_id, c->gpu_dropped_unknown_queue);
    if (stat_total(c, TK_STAT_gpu_stage_before_submit) > 0)
        tk_verdict_add(vl, TK_V_gpu_stage_before_submit,
                       "%" PRId64 " GPU stage(s) start before the vkQueueSubmit that carries "
                       "them (worst by %" PRIu64 " ns): the clocks are not correlated",
                       stat_total(c, TK_STAT_gpu_stage_before_submit), c->worst_before_submit_ns);
    if (stat_total(c, TK_STAT_gpu_stage_after_submit_window) > 0)
        tk_verdict_add(vl, TK_V_gpu_stage_after_submit_window,
                       "%" PRId64 " GPU stage(s) start more than %.3f s after their submission "
                       "ended (worst %.3f s)",
                       stat_total(c, TK_STAT_gpu_stage_after_submit_window),
                       (double)o->max_submit_latency_ns / 1e9,
                       (double)c->worst_after_window_ns / 1e9);
    if (o->expect_gpu_events >= 0 && c->gpu_events < (uint64_t)o->expect_gpu_events)
        tk_verdict_add(vl, TK_V_gpu_events_missing,
                       "%" PRIu64 " GPU render stage event(s) imported, expected at least %" PRId64,
                       c->gpu_events, o->expect_gpu_events);
}

tk_result *tk_checker_finish(tk_checker *c)
{
    tk_result *res = calloc(1, sizeof *res);
    if (!res) {
        tk_checker_free(c);
        return NULL;
    }
    tk_vlist vl = { 0 };
    tk_clock_name *merged_names = NULL;
    tk_clock_deviation *merged_devs = NULL;
    merge_learned_clocks(c, res, &merged_names, &merged_devs);

    /* Stop accounting: unmatched GPU stages still waiting for a submit. */
    tk_match_finish(c);

    const uint64_t sequences = gather_counters(c, &vl);
    res->trace_clock = tk_clock_graph_trace_clock(c->m[0].g);

    judge_import(c, &vl, res->trace_clock);
    for (uint32_t i = 0; i < c->n_m; i++)
        tk_verdict_clocks(c, &c->m[i], &vl, res);

    judge_loss(c, &vl);
    const bool unfinished = judge_unfinished(c, &vl);
    judge_gpu(c, &vl);

    /* Symptoms the recorded loss accounts for are loss, not errors. A trace
     * cut short lost its end: missing GPU events, nothing else. */
    const bool recorded_loss = trace_recorded_loss(c);
    for (size_t i = 0; i < vl.n; i++)
        if ((recorded_loss && loss_explains(c, vl.v[i].code)) ||
            (unfinished && vl.v[i].code == TK_V_gpu_events_missing))
            vl.v[i].severity = TK_SEV_DATA_LOSS;

    if (stat_total(c, TK_STAT_state_limit_hits) > 0)
        tk_verdict_add(&vl, TK_V_state_limit_reached,
                       "memory bounds reached %" PRId64 " time(s) (%s); results may be incomplete",
                       stat_total(c, TK_STAT_state_limit_hits),
                       c->first_limit_reason ? c->first_limit_reason : "limit");

    res->input_error = c->stop && c->input_error;
    res->aborted = c->stop && !c->input_error;
    res->bytes = c->bytes;
    res->packets = c->packets;
    res->sequences = sequences;
    res->gpu_render_stage_events = c->gpu_events;
    res->vulkan_api_events = c->vk_events;
    res->vk_queue_submits = c->vk_submits;
    res->has_time_range = c->has_range;
    res->first_ts = c->first_ts;
    res->last_ts = c->last_ts;
    res->stats = c->st;
    tk_stats_init(&c->st); /* moved into the result */
    res->violations = vl.v;
    res->n_violations = vl.n;
    free(merged_names);
    free(merged_devs);
    tk_checker_free(c);
    return res;
}

void tk_result_free(tk_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_clocks; i++)
        free(r->clocks[i].points);
    free(r->clocks);
    for (size_t i = 0; i < r->n_violations; i++)
        free(r->violations[i].message);
    free(r->violations);
    for (size_t i = 0; i < r->n_learned_names; i++)
        free(r->learned_names[i]);
    free(r->learned_names);
    tk_stats_free(&r->stats);
    free(r);
}

bool tk_result_failed(const tk_result *r, const tk_check_options *o)
{
    for (size_t i = 0; i < r->n_violations; i++) {
        switch (r->violations[i].severity) {
        case TK_SEV_ERROR:
            return true;
        case TK_SEV_DATA_LOSS:
            if (!o->allow_loss)
                return true;
            break;
        case TK_SEV_WARNING:
            if (o->fatal_warnings)
                return true;
            break;
        case TK_SEV_INFO:
            break;
        }
    }
    return false;
}
