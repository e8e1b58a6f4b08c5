/* SPDX-License-Identifier: MIT */
/* The per-clock part of the verdict: a report for every clock of a
 * machine (names, error bounds, plot points) and our correlation checks on
 * custom clocks. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_checks_internal.h"

static const char *declared_name(const tk_check_options *o, uint32_t id)
{
    for (size_t i = 0; i < o->n_names; i++) {
        const tk_clock_name *n = &o->names[i];
        if (n->has_id ? n->id == id : tk_clock_global_id_for_name(n->name) == id)
            return n->name;
    }
    return NULL;
}

static int64_t deviation_for(const tk_check_options *o, uint32_t raw_id)
{
    for (size_t i = 0; i < o->n_deviations; i++)
        if (o->deviations[i].clock_id == raw_id)
            return o->deviations[i].ns;
    return 0;
}

static void clock_label(const tk_clock_report *r, char *buf, size_t len)
{
    if (r->info.scope == TK_SCOPE_SEQUENCE)
        snprintf(buf, len, "clock %u (sequence %u)", r->info.raw_id, r->info.seq_id);
    else if (r->name)
        snprintf(buf, len, "clock %u (%s)", r->info.raw_id, r->name);
    else
        snprintf(buf, len, "clock %u", r->info.raw_id);
}

static void make_plot_points(const tk_clock_graph *g, size_t i, tk_clock_report *rep)
{
    size_t n = tk_clock_graph_observation_count(g, i);
    if (n == 0)
        return;
    const size_t max_points = 4096;
    size_t step = n > max_points ? (n + max_points - 1) / max_points : 1;
    rep->points = calloc((n + step - 1) / step + 1, sizeof *rep->points);
    if (!rep->points)
        return;
    tk_clock_obs prev, cur;
    for (size_t k = 0; k < n; k++) {
        tk_clock_graph_observation(g, i, k, &cur);
        int64_t off = (int64_t)((uint64_t)cur.ref_ns - (uint64_t)cur.clock_ns);
        int64_t resid = 0;
        if (k > 0) {
            int64_t poff = (int64_t)((uint64_t)prev.ref_ns - (uint64_t)prev.clock_ns);
            resid = (int64_t)((uint64_t)off - (uint64_t)poff);
        }
        if (k % step == 0 || k + 1 == n) {
            tk_plot_point *pt = &rep->points[rep->n_points++];
            pt->t_ns = cur.ref_ns;
            pt->offset_ns = off;
            pt->residual_ns = resid;
        }
        prev = cur;
    }
}

/* Two readings each off by up to the clock's deviation move its offset by
 * up to twice that without any drift: bracket readings on a loaded machine
 * (hundreds of us wide) a few ms apart showed thousands of ppm. The limit
 * is broken only beyond that. */
static void check_drift(tk_vlist *vl, const tk_check_options *o, const tk_clock_report *r,
                        const char *label)
{
    const int64_t dev = deviation_for(o, r->info.raw_id);
    if (o->max_drift_ppm < 0 || fabs(r->info.max_drift_ppm) <= o->max_drift_ppm ||
        (dev > 0 && r->info.max_drift_excess_ns / 2 <= dev))
        return;
    if (dev > 0)
        tk_verdict_add(vl, TK_V_clock_drift_exceeded,
                       "%s drifts %.3f ppm against the trace clock between two snapshots "
                       "(limit %.3f ppm), %" PRId64 " ns beyond the limit over one interval: "
                       "more than twice its deviation of %" PRId64 " ns explains",
                       label, r->info.max_drift_ppm, o->max_drift_ppm, r->info.max_drift_excess_ns,
                       dev);
    else
        tk_verdict_add(vl, TK_V_clock_drift_exceeded,
                       "%s drifts %.3f ppm against the trace clock between two snapshots "
                       "(limit %.3f ppm)",
                       label, r->info.max_drift_ppm, o->max_drift_ppm);
}

void tk_verdict_clocks(tk_checker *c, tk_machine *m, tk_vlist *vl, tk_result *res)
{
    const tk_check_options *o = &c->o;
    size_t n = tk_clock_graph_clock_count(m->g);
    /* Clocks that only appear in packets (never in a snapshot) too. */
    size_t extra = 0, ignored;
    for (uint32_t k = 0; k < m->n_failed; k++)
        if (!tk_clock_graph_index_of(m->g, m->failed[k].id, &ignored))
            extra++;
    tk_clock_report *reps = realloc(res->clocks, (res->n_clocks + n + extra) * sizeof *reps);
    if (!reps)
        return;
    res->clocks = reps;

    for (size_t i = 0; i < n; i++) {
        tk_clock_report *r = &res->clocks[res->n_clocks++];
        memset(r, 0, sizeof *r);
        tk_clock_graph_clock_info(m->g, i, &r->info);
        r->resolvable = tk_clock_graph_resolvable(m->g, r->info.id);
        const uint64_t *failed = tk_map_find(&m->failed_index, (uint64_t)r->info.id);
        r->failed_conversions = failed ? m->failed[*failed].count : 0;
        if (r->info.scope == TK_SCOPE_BUILTIN)
            r->name = tk_clock_builtin_name(r->info.id);
        else if (r->info.scope == TK_SCOPE_GLOBAL)
            r->name = declared_name(o, r->info.raw_id);
        const bool is_trace_clock = r->info.id == tk_clock_graph_trace_clock(m->g);
        int64_t err = 0;
        bool bounded = tk_clock_graph_max_error(m->g, i, deviation_for(o, r->info.raw_id), &err);
        r->error_known = bounded && r->info.conversions > 0;
        r->max_error_ns = r->error_known ? err : 0;
        if (o->keep_plot_points && !is_trace_clock)
            make_plot_points(m->g, i, r);

        if (r->info.scope == TK_SCOPE_BUILTIN || is_trace_clock)
            continue;
        /* Custom clocks: our correlation checks. */
        char label[96];
        clock_label(r, label, sizeof label);
        if (!r->resolvable)
            tk_verdict_add(vl, TK_V_clock_unresolvable,
                           "%s has %" PRIu64 " snapshot(s) but no path to the trace clock", label,
                           r->info.snapshots);
        if (!r->info.monotonic)
            tk_verdict_add(vl, TK_V_clock_non_monotonic,
                           "%s went backwards between snapshots; it can only be a conversion "
                           "target from then on",
                           label);
        if (r->info.conversions > 0 && r->info.intervals == 0)
            tk_verdict_add(vl, TK_V_clock_single_snapshot,
                           "%s converted %" PRIu64 " timestamp(s) with a single usable snapshot; "
                           "drift cannot be measured",
                           label, r->info.conversions);
        if (o->max_snapshot_gap_ns >= 0 && r->info.max_gap_ns > o->max_snapshot_gap_ns)
            tk_verdict_add(vl, TK_V_clock_snapshot_gap,
                           "%s: %.3f s between two snapshots (limit %.3f s)", label,
                           (double)r->info.max_gap_ns / 1e9, (double)o->max_snapshot_gap_ns / 1e9);
        check_drift(vl, o, r, label);
        if (r->info.conversions > 0) {
            if (bounded && o->max_error_ns >= 0 && err > o->max_error_ns)
                tk_verdict_add(vl, TK_V_clock_error_exceeded,
                               "%s: converted timestamps may be off by up to %" PRId64
                               " ns (limit %" PRId64 " ns)",
                               label, err, o->max_error_ns);
        }
        if (r->info.conversions_before_first > 0)
            tk_verdict_add(vl, TK_V_clock_used_before_first_snapshot,
                           "%s: %" PRIu64 " timestamp(s) precede its first snapshot and were "
                           "extrapolated backwards",
                           label, r->info.conversions_before_first);
        if (r->info.scope == TK_SCOPE_GLOBAL) {
            const uint32_t id = r->info.raw_id;
            if (!(id & 0x80000000u))
                tk_verdict_add(vl, TK_V_global_clock_id_not_hashed,
                               "%s is global but lacks the top bit: use FNV-1a(name) | 0x80000000",
                               label);
            for (size_t k = 0; k < o->n_names; k++) {
                const tk_clock_name *nm = &o->names[k];
                uint32_t want = tk_clock_global_id_for_name(nm->name);
                if (nm->has_id && nm->id == id && want != id)
                    tk_verdict_add(vl, TK_V_global_clock_id_mismatch,
                                   "%s is declared as \"%s\", whose id is %u (0x%08x)", label,
                                   nm->name, want, want);
            }
            if (o->n_names > o->n_learned_names && !r->name)
                tk_verdict_add(vl, TK_V_global_clock_id_unknown,
                               "%s matches no declared clock name", label);
            if (r->info.multi_sequence)
                tk_verdict_add(vl, TK_V_global_clock_multiple_sequences,
                               "%s is snapshotted from more than one sequence; its readings may "
                               "look non-monotonic in file order",
                               label);
        }
    }

    for (uint32_t k = 0; k < m->n_failed; k++) {
        const int64_t id = m->failed[k].id;
        if (tk_clock_graph_index_of(m->g, id, &ignored))
            continue;
        tk_clock_report *r = &res->clocks[res->n_clocks++];
        memset(r, 0, sizeof *r);
        r->info.id = id;
        r->info.monotonic = true;
        r->info.unit_multiplier_ns = 1;
        if (tk_clock_is_converted_sequence(id)) {
            r->info.scope = TK_SCOPE_SEQUENCE;
            r->info.raw_id = (uint32_t)(id & 0xffffffff);
            r->info.seq_id = (uint32_t)((uint64_t)id >> 32);
        } else {
            r->info.raw_id = (uint32_t)id;
            r->info.scope = id <= TK_CLOCK_BUILTIN_MAX ? TK_SCOPE_BUILTIN : TK_SCOPE_GLOBAL;
            r->name = r->info.scope == TK_SCOPE_BUILTIN ? tk_clock_builtin_name(id)
                                                        : declared_name(o, (uint32_t)id);
        }
        r->failed_conversions = m->failed[k].count;
    }
}
