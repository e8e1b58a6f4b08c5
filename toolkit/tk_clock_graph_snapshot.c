/* SPDX-License-Identifier: MIT */
/* ClockSnapshot packets into the clock graph (readings, observations for
 * the drift and residual statistics, the trace clock), and the per-clock
 * reports read back from it. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_clock_graph_internal.h"

/* ---- ClockSnapshot packets ---------------------------------------------------- */

static void add_observation(tk_clock_graph *g, domain *d, uint32_t series_idx,
                            const tk_clock_obs *o)
{
    if (d->obs.len) {
        const tk_clock_obs *a = &d->last_obs;
        int64_t dc = wdiff(o->clock_ns, a->clock_ns);
        int64_t dr = wdiff(o->ref_ns, a->ref_ns);
        int64_t resid = wdiff(dr, dc);
        const bool measured = dc > 0 && dc >= g->lim.min_drift_interval_ns;
        double ppm = 0;
        if (measured) {
            ppm = (double)resid / (double)dc * 1e6;
            if (d->intervals == 0 || fabs(ppm) > fabs(d->max_drift_ppm))
                d->max_drift_ppm = ppm;
            if (d->intervals == 0 || tk_abs_u64(resid) > tk_abs_u64(d->max_resid_ns))
                d->max_resid_ns = resid;
            if (g->lim.drift_limit_ppm >= 0) {
                double excess =
                    (double)tk_abs_u64(resid) - g->lim.drift_limit_ppm * 1e-6 * (double)dc;
                int64_t ex = excess >= 9.2e18    ? INT64_MAX
                             : excess <= -9.2e18 ? INT64_MIN
                                                 : (int64_t)ceil(excess);
                if (d->intervals == 0 || ex > d->max_drift_excess_ns)
                    d->max_drift_excess_ns = ex;
            }
            if (!d->has_first_drift) {
                d->has_first_drift = true;
                d->first_drift_ppm = ppm;
            }
            d->has_last_drift = true;
            d->last_drift_ppm = ppm;
            d->intervals++;
        }
        if (dr > d->max_gap_ns)
            d->max_gap_ns = dr;
        /* The previous reading's interval is over: settle its bound. */
        entry *e = tk_cg_find_snapshot(&d->series[d->last_obs_series].r, a->snapshot_id);
        if (e && !e->settled && d->has_last_drift) {
            e->settled = 1;
            e->drift_ppm = measured ? ppm : d->last_drift_ppm;
            if (e->max_after)
                tk_cg_fold_error(d, e->drift_ppm, e->max_after);
        }
    } else {
        d->first_obs = *o;
    }
    d->last_obs = *o;
    d->last_obs_series = series_idx;
    tk_cg_ring_push(g, &d->obs, o, NULL, NULL);
}

static void set_trace_clock(tk_clock_graph *g, int64_t id)
{
    if (g->trace_clock_used && g->trace_clock != id) {
        /* Too late: timestamps were already converted to the old clock. */
        g->c.trace_clock_change_ignored++;
        return;
    }
    g->trace_clock = id;
}

tk_snapshot_status tk_clock_graph_add_clock_snapshot(tk_clock_graph *g, uint32_t seq_id,
                                                     int32_t primary_trace_clock,
                                                     const tk_snapshot_clock *clocks, size_t n,
                                                     const char **reason)
{
    const char *dummy;
    if (!reason)
        reason = &dummy;
    *reason = NULL;
    g->c.snapshots++;
    if (primary_trace_clock)
        set_trace_clock(g, primary_trace_clock);

    if (n > g->lim.max_clocks_per_snapshot) {
        *reason = "too many clocks in one snapshot";
        g->c.limit_hits++;
        return TK_SNAPSHOT_LIMIT;
    }
    /* Snapshots are small; the heap only for unusual ones. */
    reading r_stack[16] = { { 0 } }; /* (zeroed: the compiler cannot see that only n are read) */
    int64_t conv_stack[16];
    bool ok_stack[16];
    uint32_t didx_stack[16], sidx_stack[16];
    const bool heap = n > 16;
    reading *r = heap ? malloc(n * sizeof *r) : r_stack;
    int64_t *conv = heap ? malloc(n * sizeof *conv) : conv_stack;
    bool *ok = heap ? malloc(n * sizeof *ok) : ok_stack;
    uint32_t *didx = heap ? malloc(n * sizeof *didx) : didx_stack;
    uint32_t *sidx = heap ? malloc(n * sizeof *sidx) : sidx_stack;
    tk_snapshot_status st = TK_SNAPSHOT_OK;
    if (!r || !conv || !ok || !didx || !sidx) {
        *reason = "out of memory";
        g->c.limit_hits++;
        st = TK_SNAPSHOT_LIMIT;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t id = clocks[i].clock_id;
        if (tk_clock_is_sequence_scoped(id)) {
            if (!seq_id) {
                *reason = "sequence-scoped clock in a snapshot without trusted_packet_sequence_id";
                st = TK_SNAPSHOT_FATAL;
                goto out;
            }
            id = tk_clock_sequence_to_global(seq_id, clocks[i].clock_id);
        }
        r[i].id = id;
        r[i].ts = (int64_t)clocks[i].timestamp;
        r[i].unit = clocks[i].unit_multiplier_ns ? (int64_t)clocks[i].unit_multiplier_ns : 1;
        r[i].incremental = clocks[i].is_incremental;
    }

    uint32_t snapshot_id = 0;
    st = tk_cg_add_snapshot(g, r, n, didx, sidx, &snapshot_id, reason);
    if (st != TK_SNAPSHOT_OK)
        goto out;

    /* Like trace_processor, convert every clock of the snapshot right away
     * (it fills its clock_snapshot table this way). This can fail and count
     * clock_sync_failure, and it warms the conversion cache. */
    bool has_trace_reading = false;
    int64_t trace_reading = 0;
    size_t trace_idx = n;
    for (size_t i = 0; i < n; i++) {
        if (r[i].id == g->trace_clock) {
            has_trace_reading = true;
            trace_reading = r[i].ts;
            trace_idx = i;
            break;
        }
    }
    g->in_snapshot = true;
    for (size_t i = 0; i < n; i++) {
        int64_t v = 0;
        ok[i] = tk_clock_graph_to_trace_time(g, r[i].id, r[i].incremental ? 0 : r[i].ts, &v);
        conv[i] = v;
    }
    g->in_snapshot = false;

    /* Our bookkeeping: the trace time of this instant, taken from another
     * clock of the snapshot, next to each clock's own reading. */
    for (size_t i = 0; i < n; i++) {
        domain *d = &g->dom[didx[i]];
        if (!d->seq_known) {
            d->seq_known = true;
            d->first_seq = seq_id;
        } else if (d->first_seq != seq_id) {
            d->multi_seq = true;
        }
        if (r[i].id == g->trace_clock)
            continue;
        bool ignored = false;
        tk_clock_obs o = { .snapshot_id = snapshot_id,
                           .clock_ns = wmul(r[i].ts, d->unit, &ignored) };
        if (has_trace_reading && trace_idx != i) {
            o.has_ref = true;
            o.ref_ns = trace_reading;
        } else {
            for (size_t j = 0; j < n; j++) {
                if (j != i && ok[j] && !r[j].incremental) {
                    o.has_ref = true;
                    o.ref_ns = conv[j];
                    break;
                }
            }
        }
        if (o.has_ref)
            add_observation(g, d, sidx[i], &o);
    }

out:
    if (heap) {
        free(r);
        free(conv);
        free(ok);
        free(didx);
        free(sidx);
    }
    return st;
}

/* ---- reporting ----------------------------------------------------------------- */

size_t tk_clock_graph_clock_count(const tk_clock_graph *g)
{
    return g->n_dom;
}

bool tk_clock_graph_index_of(tk_clock_graph *g, int64_t id, size_t *i)
{
    const uint64_t *v = tk_map_find(&g->index, (uint64_t)id);
    if (v)
        *i = (size_t)*v;
    return v != NULL;
}

void tk_clock_graph_clock_info(const tk_clock_graph *g, size_t i, tk_clock_info *info)
{
    const domain *d = &g->dom[i];
    memset(info, 0, sizeof *info);
    info->id = d->id;
    if (tk_clock_is_converted_sequence(d->id)) {
        info->scope = TK_SCOPE_SEQUENCE;
        info->raw_id = (uint32_t)(d->id & 0xffffffff);
        info->seq_id = (uint32_t)((uint64_t)d->id >> 32);
    } else {
        info->raw_id = (uint32_t)d->id;
        info->scope = d->id <= TK_CLOCK_BUILTIN_MAX        ? TK_SCOPE_BUILTIN
                      : tk_clock_is_sequence_scoped(d->id) ? TK_SCOPE_SEQUENCE
                                                           : TK_SCOPE_GLOBAL;
    }
    info->monotonic = !d->non_monotonic;
    info->incremental = d->incremental;
    info->unit_multiplier_ns = d->unit;
    info->snapshots = d->readings;
    info->multi_sequence = d->multi_seq;
    info->first_seq_id = d->first_seq;
    info->conversions = d->conversions;
    info->conversions_before_first = d->before_first;
    info->intervals = d->intervals;
    info->max_drift_ppm = d->max_drift_ppm;
    info->max_residual_ns = d->max_resid_ns;
    info->max_drift_excess_ns = d->max_drift_excess_ns;
    info->max_gap_ns = d->max_gap_ns;
    if (d->obs.len) {
        info->has_ref = true;
        info->first_ref_ns = d->first_obs.ref_ns;
        info->last_ref_ns = d->last_obs.ref_ns;
        int64_t dc = wdiff(d->last_obs.clock_ns, d->first_obs.clock_ns);
        int64_t dr = wdiff(d->last_obs.ref_ns, d->first_obs.ref_ns);
        if (dc > 0 && dc >= g->lim.min_drift_interval_ns)
            info->drift_ppm = (double)wdiff(dr, dc) / (double)dc * 1e6;
    }
}

bool tk_clock_graph_max_error(const tk_clock_graph *g, size_t i, int64_t deviation_ns,
                              int64_t *out_ns)
{
    const domain *d = &g->dom[i];
    double worst = d->max_err_ns;
    bool bounded = !d->unbounded;
    for (uint32_t k = 0; k < d->n_series; k++) {
        const series *se = &d->series[k];
        if (se->max_before) {
            if (d->has_first_drift)
                worst = fmax(worst, fabs(d->first_drift_ppm) * (double)se->max_before * 1e-6);
            else
                bounded = false;
        }
        /* Readings whose interval never closed: the last drift seen. */
        for (uint32_t n = 0; n < se->r.len; n++) {
            const entry *e = ring_at(&se->r, n);
            if (e->settled || !e->max_after)
                continue;
            if (d->has_last_drift)
                worst = fmax(worst, fabs(d->last_drift_ppm) * (double)e->max_after * 1e-6);
            else
                bounded = false;
        }
    }
    double total = worst + (double)(deviation_ns > 0 ? deviation_ns : 0);
    *out_ns = total >= 9.2e18 ? INT64_MAX : (int64_t)ceil(total);
    return bounded;
}

size_t tk_clock_graph_observation_count(const tk_clock_graph *g, size_t i)
{
    return g->dom[i].obs.len;
}

void tk_clock_graph_observation(const tk_clock_graph *g, size_t i, size_t k, tk_clock_obs *out)
{
    *out = *(const tk_clock_obs *)ring_at(&g->dom[i].obs, (uint32_t)k);
}

size_t tk_clock_graph_verify_paths(tk_clock_graph *g)
{
    size_t bad = 0;
    const uint64_t *t = tk_map_find(&g->index, (uint64_t)g->trace_clock);
    tk_cg_paths_ready(g);
    for (uint32_t s = 0; s < g->n_dom; s++) {
        if (t && s == *t)
            continue;
        path a, b;
        const bool found_a = tk_cg_index_path(g, s, &a);
        const bool found_b = t && tk_cg_search_path(g, s, (uint32_t)*t, &b);
        bool same = found_a == found_b;
        if (same && found_a) {
            same = a.len == b.len;
            for (uint32_t k = 0; same && k < a.len; k++)
                same = a.from[k] == b.from[k] && a.hop[k].target_idx == b.hop[k].target_idx &&
                       a.hop[k].hash == b.hop[k].hash &&
                       a.hop[k].from_series == b.hop[k].from_series &&
                       a.hop[k].to_series == b.hop[k].to_series;
        }
        bad += !same;
    }
    return bad;
}
