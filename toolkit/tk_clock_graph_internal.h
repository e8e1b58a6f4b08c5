/* SPDX-License-Identifier: MIT */
/* What the clock graph's files share (tk_clock_graph.c: storage,
 * AddSnapshot and conversion; tk_clock_paths.c: the path index and search;
 * tk_clock_graph_snapshot.c: ClockSnapshot packets and reporting): the
 * graph's types and the helpers they call across files (tk_cg_*). Only
 * those files include it; the library's interface is tk_clock_graph.h. */
#ifndef TK_CLOCK_GRAPH_INTERNAL_H
#define TK_CLOCK_GRAPH_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "toolkit/tk_arith.h"
#include "toolkit/tk_clock_graph.h"
#include "toolkit/tk_map.h"

/* ---- wrapping arithmetic ---------------------------------------------------
 * trace_processor does these in int64_t and relies on two's complement
 * wrap-around for absurd inputs; we compute the same bits (tk_arith.h) and
 * note in *ovf that it happened. */
static inline int64_t wadd(int64_t a, int64_t b, bool *ovf)
{
    return tk_wrap_add(a, b, ovf);
}
static inline int64_t wsub(int64_t a, int64_t b, bool *ovf)
{
    return tk_wrap_sub(a, b, ovf);
}
static inline int64_t wmul(int64_t a, int64_t b, bool *ovf)
{
    return tk_wrap_mul(a, b, ovf);
}
/* Differences of readings for our statistics: the overflow is not news. */
static inline int64_t wdiff(int64_t a, int64_t b)
{
    bool ignored = false;
    return tk_wrap_sub(a, b, &ignored);
}

/* ---- bounded history ring ------------------------------------------------
 * Logical element 0 is the first ever pushed and is never evicted; the rest
 * is a power-of-two ring that grows while the history budget allows and then
 * overwrites its oldest element. */
#define RING_MAX_ELEM 32

typedef struct ring {
    uint8_t first[RING_MAX_ELEM];
    uint8_t *data;
    uint32_t elem;
    uint32_t cap;  /* power of two, or 0 */
    uint32_t head; /* oldest element of the ring part */
    uint32_t len;  /* logical length: first + ring part */
    bool full;     /* budget exhausted: overwrite instead of growing */
    uint64_t evicted;
} ring;

static inline void *ring_at(const ring *r, uint32_t i)
{
    if (i == 0)
        return (void *)r->first;
    return r->data + (size_t)((r->head + i - 1) & (r->cap - 1)) * r->elem;
}

typedef struct entry {
    int64_t ts_ns;
    uint32_t snapshot_id;
    /* The drift of the interval this reading starts is known (settled):
     * error bounds of conversions through it are folded in right away. */
    uint32_t settled;
    /* Largest distance of a converted value after this reading. */
    uint64_t max_after;
    double drift_ppm;
} entry;

typedef struct series {
    uint32_t hash;
    /* Largest distance of a converted value before the first reading. */
    uint64_t max_before;
    ring r;
} series;

_Static_assert(sizeof(entry) <= RING_MAX_ELEM, "entry fits a ring slot");
_Static_assert(sizeof(tk_clock_obs) <= RING_MAX_ELEM, "observation fits a ring slot");

/* An edge from one clock to another, labelled with the hash of the
 * snapshot shape that relates them; the series indices say where that
 * shape's readings are kept in either clock. */
typedef struct edge {
    int64_t target;
    uint32_t hash;
    uint32_t target_idx;
    uint32_t from_series;
    uint32_t to_series;
} edge;

/* The same edge as seen from its target. */
typedef struct in_edge {
    uint32_t from_idx;
    uint32_t hash;
    uint32_t from_series;
    uint32_t to_series;
} in_edge;

/* No path to the trace clock within TK_CLOCK_MAX_PATH hops. */
#define DIST_NONE 0xff

typedef struct domain {
    int64_t id;
    int64_t unit;
    bool incremental;
    bool non_monotonic;
    int64_t last_ts_ns; /* incremental decoding base */
    series *series;
    uint32_t n_series, cap_series;
    edge *edges; /* outgoing, sorted by (target, hash) */
    uint32_t n_edges, cap_edges;
    in_edge *in; /* incoming, in insertion order */
    uint32_t n_in, cap_in;

    /* Path index: hops to the trace clock (DIST_NONE: none within the limit)
     * and the first hop of the path trace_processor's search would take. */
    uint8_t dist;
    bool has_next;
    edge next;

    uint64_t readings;
    uint64_t conversions;
    uint64_t before_first;
    uint32_t first_seq;
    bool seq_known;
    bool multi_seq;

    ring obs; /* tk_clock_obs with a reference, in snapshot order */
    tk_clock_obs first_obs, last_obs;
    uint32_t last_obs_series; /* series holding last_obs's reading */
    uint64_t intervals;
    double max_drift_ppm;
    int64_t max_resid_ns;
    int64_t max_drift_excess_ns; /* tk_clock_info.max_drift_excess_ns */
    int64_t max_gap_ns;
    bool has_first_drift, has_last_drift;
    double first_drift_ppm, last_drift_ppm;
    /* Error bound of conversions through settled readings, in ns. */
    double max_err_ns;
    bool unbounded; /* a reading evicted before its drift was known */
} domain;

typedef struct cache_entry {
    bool valid;
    int64_t src, target;
    uint32_t src_idx;
    int64_t min_ns, max_ns, translation;
    series *hop_series;
    entry *hop_entry;
} cache_entry;

struct tk_clock_graph {
    tk_clock_limits lim;
    tk_clock_graph_counters c;
    int64_t trace_clock;
    bool trace_clock_used;
    /* Converting a snapshot's own readings: not timestamps of the trace,
     * so left out of the per-clock conversion bookkeeping. */
    bool in_snapshot;
    uint32_t next_snapshot_id;
    uint64_t retained_bytes;

    domain *dom;
    uint32_t n_dom, cap_dom;
    tk_map index;        /* clock id -> domain index */
    tk_map series_index; /* domain index << 32 | snapshot hash -> series index */
    uint64_t n_edges_total;

    /* The path index is valid for dist_target unless dist_dirty. */
    bool dist_dirty;
    int64_t dist_target;

    cache_entry cache[2];
    uint64_t rnd; /* std::minstd_rand, default seed */

    /* Search scratch, sized to cap_dom */
    uint32_t *bfs_stamp, *bfs_parent, *bfs_edge, *bfs_queue;
    uint8_t *bfs_depth;
    uint32_t stamp;
};

typedef struct path {
    uint32_t len;
    uint32_t from[TK_CLOCK_MAX_PATH];
    edge hop[TK_CLOCK_MAX_PATH];
} path;

static inline domain *find_domain(tk_clock_graph *g, int64_t id)
{
    const uint64_t *v = tk_map_find(&g->index, (uint64_t)id);
    return v ? &g->dom[*v] : NULL;
}

static inline uint32_t dom_index(const tk_clock_graph *g, const domain *d)
{
    return (uint32_t)(d - g->dom);
}

static inline uint64_t series_key(uint32_t dom_idx, uint32_t hash)
{
    return (uint64_t)dom_idx << 32 | hash;
}

typedef struct reading {
    int64_t id;
    int64_t ts;
    int64_t unit;
    bool incremental;
} reading;

/* ---- error bookkeeping -------------------------------------------------------
 * A conversion at distance `dist` after a reading, while the clock drifts
 * by `ppm` against the trace clock, is off by about ppm * dist. */
static inline void tk_cg_fold_error(domain *d, double ppm, uint64_t dist)
{
    double err = fabs(ppm) * (double)dist * 1e-6;
    if (err > d->max_err_ns)
        d->max_err_ns = err;
}

/* ---- across files ---- */

bool tk_cg_ring_push(tk_clock_graph *g, ring *r, const void *elem, void *evicted, bool *did_evict);
bool tk_cg_has_edge(const domain *d, int64_t target, uint32_t hash);
/* Brings the path index up to date for the current trace clock. */
void tk_cg_paths_ready(tk_clock_graph *g);
bool tk_cg_add_edge(tk_clock_graph *g, uint32_t from_idx, uint32_t target_idx, uint32_t hash,
                    uint32_t from_series, uint32_t to_series);
void tk_cg_drop_out_edges(tk_clock_graph *g, domain *d);
tk_snapshot_status tk_cg_add_snapshot(tk_clock_graph *g, const reading *r, size_t n, uint32_t *didx,
                                      uint32_t *sidx, uint32_t *out_id, const char **reason);
bool tk_cg_search_path(tk_clock_graph *g, uint32_t s, uint32_t t, path *p);
bool tk_cg_index_path(tk_clock_graph *g, uint32_t s, path *p);
bool tk_cg_find_path(tk_clock_graph *g, int64_t src, int64_t target, path *p);
entry *tk_cg_find_snapshot(const ring *r, uint32_t snapshot_id);

#endif /* TK_CLOCK_GRAPH_INTERNAL_H */
