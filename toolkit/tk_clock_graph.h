/* SPDX-License-Identifier: MIT */
/* Clock-domain graph with the conversion semantics of Perfetto's
 * trace_processor (v47, src/trace_processor/importers/common/clock_tracker.cc
 * and the ClockSnapshot handling of importers/proto/proto_trace_reader.cc),
 * plus the bookkeeping gputrace-check needs to judge each clock: drift and
 * residual between snapshots, and how far every converted timestamp was from
 * the snapshot it was converted with.
 *
 * Behaviour that must match trace_processor, in short:
 *  - clocks are nodes; every ClockSnapshot adds edges between all pairs of
 *    its clocks, labelled with a hash of the snapshot's clock-id list;
 *  - a conversion takes the shortest path (BFS, at most 4 hops, neighbours
 *    in (target id, hash) order) and, on each hop, the latest reading of the
 *    source clock <= the value being converted (the first reading when the
 *    value precedes all of them), adding the offset of that snapshot;
 *  - a clock whose readings go backwards inside one series keeps only its
 *    incoming edges (it can be a target, never a source again);
 *  - sequence-scoped ids (64..127) are made global as (seq << 32) | id;
 *  - invalid snapshots (duplicate clock, unit/incremental change, global
 *    incremental clock, trace clock going backwards) stop half-way, exactly
 *    where trace_processor stops, and count in invalid_clock_snapshots;
 *  - failed conversions count in clock_sync_failure; each path search counts
 *    in clock_sync_cache_miss, behind the same two-entry cache with the same
 *    pseudo-random replacement (it is observable with incremental clocks);
 *  - arithmetic wraps in 64 bits as trace_processor's does, but every
 *    overflow is counted (timestamp_overflows) instead of passing silently.
 *
 * Time is bounded too: the path to the trace clock is not searched per
 * conversion. Each clock keeps its distance to the trace clock (at most 4
 * hops) and the first hop of its path; a new edge updates these
 * incrementally (each distance can only shrink, at most four times), and
 * only a clock losing its edges (going backwards) or a change of trace clock
 * rebuilds them, in time linear in the graph. The path found is the one
 * trace_processor's search finds: of the shortest paths, the first in
 * (target id, snapshot hash) order at every hop.
 *
 * Memory is bounded: every series keeps its first reading and a ring of the
 * most recent ones under a global budget; a conversion that might have
 * needed an evicted reading is counted, not hidden. Error bounds are folded
 * in as soon as the drift of a reading's interval is known, so evicting
 * readings loses no bookkeeping.
 * No glib: the Vulkan layer's tests link this too. */
#ifndef TK_CLOCK_GRAPH_H
#define TK_CLOCK_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TK_CLOCK_REALTIME         1
#define TK_CLOCK_REALTIME_COARSE  2
#define TK_CLOCK_MONOTONIC        3
#define TK_CLOCK_MONOTONIC_COARSE 4
#define TK_CLOCK_MONOTONIC_RAW    5
#define TK_CLOCK_BOOTTIME         6
#define TK_CLOCK_BUILTIN_MAX      63

/* trace_processor allows paths of at most this many hops. */
#define TK_CLOCK_MAX_PATH 4

static inline bool tk_clock_is_sequence_scoped(int64_t id)
{
    return id >= 64 && id < 128;
}

/* The global id trace_processor gives a sequence-scoped clock. Computed with
 * unsigned arithmetic (the C++ original shifts a signed value). */
static inline int64_t tk_clock_sequence_to_global(uint32_t seq_id, uint32_t clock_id)
{
    return (int64_t)(((uint64_t)seq_id << 32) | clock_id);
}

/* True for ids produced by tk_clock_sequence_to_global with seq_id < 2^31
 * (the same test, and the same blind spot, as trace_processor's). */
static inline bool tk_clock_is_converted_sequence(int64_t id)
{
    return (id >> 32) > 0;
}

/* 32-bit FNV-1a of a clock domain's fully qualified name with the top bit
 * set: the recommended global clock id (Perfetto docs/concepts/clock-sync). */
uint32_t tk_clock_global_id_for_name(const char *name);

typedef enum tk_clock_scope {
    TK_SCOPE_BUILTIN,  /* 0..63 */
    TK_SCOPE_SEQUENCE, /* 64..127, per trusted_packet_sequence_id */
    TK_SCOPE_GLOBAL,   /* >= 128 */
} tk_clock_scope;

const char *tk_clock_scope_name(tk_clock_scope s);
/* "BOOTTIME", ... for builtin ids; NULL otherwise. */
const char *tk_clock_builtin_name(int64_t id);

typedef struct tk_clock_limits {
    uint32_t max_domains; /* distinct clocks */
    uint32_t max_clocks_per_snapshot;
    uint32_t max_series_per_domain; /* distinct snapshot shapes per clock */
    uint32_t max_edges;             /* graph edges, all clocks */
    uint64_t max_history_bytes;     /* readings + observations, all clocks */
    /* Snapshots closer than this are not used to measure drift: the few tens
     * of ns between the readings of one snapshot would dominate. */
    int64_t min_drift_interval_ns;
    /* The drift limit (ppm; negative: none) that
     * tk_clock_info.max_drift_excess_ns is measured against. */
    double drift_limit_ppm;
} tk_clock_limits;

void tk_clock_limits_default(tk_clock_limits *l);

/* One clock of a ClockSnapshot packet, as decoded (raw proto values). */
typedef struct tk_snapshot_clock {
    uint32_t clock_id;
    uint64_t timestamp;
    uint64_t unit_multiplier_ns; /* 0 = unset (means 1) */
    bool is_incremental;
} tk_snapshot_clock;

typedef enum tk_snapshot_status {
    TK_SNAPSHOT_OK = 0,
    /* Rejected like trace_processor does (invalid_clock_snapshots++). */
    TK_SNAPSHOT_INVALID,
    /* trace_processor refuses the whole trace: a sequence-scoped clock in a
     * snapshot without trusted_packet_sequence_id. */
    TK_SNAPSHOT_FATAL,
    /* Our own memory limits; the snapshot was ignored. */
    TK_SNAPSHOT_LIMIT,
} tk_snapshot_status;

typedef struct tk_clock_graph tk_clock_graph;

tk_clock_graph *tk_clock_graph_new(const tk_clock_limits *limits);
void tk_clock_graph_free(tk_clock_graph *g);

/* ClockSnapshot packet handling (ProtoTraceReader::ParseClockSnapshot):
 * switches the trace clock when primary_trace_clock is non-zero (unless a
 * conversion already used the old one), adds the snapshot, then converts
 * every clock of it to trace time as trace_processor does (which may count
 * clock_sync_failure and warms the cache). `seq_id` is the packet's
 * trusted_packet_sequence_id (0 when absent). `reason` (optional) receives a
 * short static explanation on failure. */
tk_snapshot_status tk_clock_graph_add_clock_snapshot(tk_clock_graph *g, uint32_t seq_id,
                                                     int32_t primary_trace_clock,
                                                     const tk_snapshot_clock *clocks, size_t n,
                                                     const char **reason);

/* ClockTracker::ToTraceTime. `clock_id` is already global (sequence-scoped
 * ids converted with tk_clock_sequence_to_global). Returns false, counting
 * clock_sync_failure, when no path exists. */
bool tk_clock_graph_to_trace_time(tk_clock_graph *g, int64_t clock_id, int64_t ts, int64_t *out);

/* ClockTracker::Convert between two arbitrary clocks (src != target). */
bool tk_clock_graph_convert(tk_clock_graph *g, int64_t src, int64_t ts, int64_t target,
                            int64_t *out);

/* Whether a path from `src` to the trace clock exists now (no side effects,
 * nothing counted). */
bool tk_clock_graph_resolvable(tk_clock_graph *g, int64_t src);

/* Whether `id` has appeared in a ClockSnapshot (nothing counted). */
bool tk_clock_graph_known(tk_clock_graph *g, int64_t id);

int64_t tk_clock_graph_trace_clock(const tk_clock_graph *g);

typedef struct tk_clock_graph_counters {
    /* trace_processor stats (same names, same meaning) */
    uint64_t clock_sync_failure;
    uint64_t clock_sync_cache_miss;
    uint64_t invalid_clock_snapshots;
    /* ours */
    uint64_t snapshots;                  /* ClockSnapshot packets seen */
    uint64_t trace_clock_change_ignored; /* primary_trace_clock arrived too late */
    uint64_t limit_hits;                 /* snapshots/clocks dropped by our limits */
    uint64_t history_evictions;          /* readings dropped from full rings */
    uint64_t history_misses;             /* conversions that may have needed one */
    /* Readings or converted timestamps that do not fit 64 signed bits: raw
     * values >= 2^63, or an overflow scaling by unit_multiplier_ns, adding an
     * incremental delta or an offset. trace_processor wraps them. */
    uint64_t timestamp_overflows;
    /* Work of path finding: edges and clocks examined. Bounded by the
     * graph's size times a constant, not by the number of conversions. */
    uint64_t path_steps;
} tk_clock_graph_counters;

const tk_clock_graph_counters *tk_clock_graph_counters_get(const tk_clock_graph *g);

/* ---- per-clock analysis --------------------------------------------------- */

/* One snapshot of one clock next to the trace time of the same instant
 * (taken from another clock of the snapshot). */
typedef struct tk_clock_obs {
    uint32_t snapshot_id;
    bool has_ref;
    int64_t clock_ns; /* reading * unit_multiplier_ns */
    int64_t ref_ns;   /* trace time of the snapshot */
} tk_clock_obs;

typedef struct tk_clock_info {
    int64_t id;      /* global form (sequence clocks: (seq << 32) | id) */
    uint32_t raw_id; /* as written in the trace */
    uint32_t seq_id; /* sequence-scoped clocks only */
    tk_clock_scope scope;
    bool monotonic;
    bool incremental;
    int64_t unit_multiplier_ns;
    uint64_t snapshots;  /* readings accepted into the graph */
    bool multi_sequence; /* snapshotted from more than one sequence */
    uint32_t first_seq_id;

    uint64_t conversions;              /* timestamps converted from this clock */
    uint64_t conversions_before_first; /* ... that preceded its first reading */

    /* Between consecutive snapshots with a trace-time reference, at least
     * min_drift_interval_ns apart. */
    uint64_t intervals;
    double drift_ppm;        /* overall: offset change / clock span, first to last */
    double max_drift_ppm;    /* largest |drift| of one interval, sign kept */
    int64_t max_residual_ns; /* largest |offset change| of one interval, sign kept */
    /* Largest amount by which one interval's |offset change| exceeds what
     * drift_limit_ppm allows over it (<= 0: none did; 0 without a limit).
     * Readings each off by up to D ns (their deviation) change the offset
     * by up to 2 D without any drift: the drift limit is broken only when
     * this exceeds 2 D. */
    int64_t max_drift_excess_ns;
    int64_t max_gap_ns; /* longest trace-time span between two snapshots */
    int64_t first_ref_ns, last_ref_ns;
    bool has_ref;
} tk_clock_info;

size_t tk_clock_graph_clock_count(const tk_clock_graph *g);
/* Index (for the functions below) of the clock with global id `id`. */
bool tk_clock_graph_index_of(tk_clock_graph *g, int64_t id, size_t *i);
/* Fills `info` for the i-th clock (in order of first appearance). */
void tk_clock_graph_clock_info(const tk_clock_graph *g, size_t i, tk_clock_info *info);

/* Bound on the conversion error of any timestamp converted from clock i:
 * max over the snapshots used of |drift of the interval that snapshot starts|
 * x distance to it, plus `deviation_ns`. Returns false when some timestamp
 * was converted but no drift is known (fewer than two snapshots with a
 * reference); *out_ns then holds the part that could be bounded. */
bool tk_clock_graph_max_error(const tk_clock_graph *g, size_t i, int64_t deviation_ns,
                              int64_t *out_ns);

/* Observations of clock i in snapshot order: the first one, then the
 * retained most recent ones; for plots. */
size_t tk_clock_graph_observation_count(const tk_clock_graph *g, size_t i);
void tk_clock_graph_observation(const tk_clock_graph *g, size_t i, size_t k, tk_clock_obs *out);

/* For tests and fuzzing: compares the path of every clock to the trace
 * clock, as the incremental index has it, with a full breadth-first search.
 * Returns the number of clocks where they differ (0 when all agree). */
size_t tk_clock_graph_verify_paths(tk_clock_graph *g);

#endif /* TK_CLOCK_GRAPH_H */
