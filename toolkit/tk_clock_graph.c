/* SPDX-License-Identifier: MIT */
/* Clock graph: snapshot storage, path finding, conversion with the
 * trace_processor cache, and per-clock drift/error bookkeeping.
 * See tk_clock_graph.h for the semantics this file must preserve. */
#include "toolkit/tk_clock_graph.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_clock_graph_internal.h"

/* ---- small helpers -------------------------------------------------------- */

uint32_t tk_clock_global_id_for_name(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h | 0x80000000u;
}

const char *tk_clock_scope_name(tk_clock_scope s)
{
    switch (s) {
    case TK_SCOPE_BUILTIN:
        return "builtin";
    case TK_SCOPE_SEQUENCE:
        return "sequence";
    case TK_SCOPE_GLOBAL:
        return "global";
    }
    return "?";
}

const char *tk_clock_builtin_name(int64_t id)
{
    switch (id) {
    case 1:
        return "REALTIME";
    case 2:
        return "REALTIME_COARSE";
    case 3:
        return "MONOTONIC";
    case 4:
        return "MONOTONIC_COARSE";
    case 5:
        return "MONOTONIC_RAW";
    case 6:
        return "BOOTTIME";
    case 9:
        return "TSC";
    case 10:
        return "PERF";
    case 11:
        return "TRACE_FILE";
    default:
        return NULL;
    }
}

void tk_clock_limits_default(tk_clock_limits *l)
{
    l->max_domains = 1024;
    l->max_clocks_per_snapshot = 64;
    l->max_series_per_domain = 64;
    l->max_edges = 65536;
    l->max_history_bytes = 16u << 20;
    l->min_drift_interval_ns = 1000000;
    l->drift_limit_ppm = -1;
}

const tk_clock_graph_counters *tk_clock_graph_counters_get(const tk_clock_graph *g)
{
    return &g->c;
}

int64_t tk_clock_graph_trace_clock(const tk_clock_graph *g)
{
    return g->trace_clock;
}

static uint32_t next_random(tk_clock_graph *g)
{
    /* std::minstd_rand: Lehmer generator, multiplier 48271, modulus 2^31-1,
     * default seed 1. Replacement choices must follow the same sequence as
     * trace_processor's, because a cache hit on an incremental clock advances
     * its decoding base a second time there. */
    g->rnd = (g->rnd * 48271u) % 2147483647u;
    return (uint32_t)g->rnd;
}

/* Appends `elem`. When the ring is full and the budget spent, the oldest
 * element (after the first) is overwritten; it is copied to `evicted` first
 * if that is not NULL. Returns false only when nothing could be stored. */
/* Fixed-size copies the compiler turns into a few moves. */
static inline void elem_copy(void *dst, const void *src, uint32_t elem)
{
    if (elem == sizeof(entry))
        memcpy(dst, src, sizeof(entry));
    else
        memcpy(dst, src, sizeof(tk_clock_obs));
}

bool tk_cg_ring_push(tk_clock_graph *g, ring *r, const void *elem, void *evicted, bool *did_evict)
{
    if (did_evict)
        *did_evict = false;
    if (r->len == 0) {
        elem_copy(r->first, elem, r->elem);
        r->len = 1;
        return true;
    }
    uint32_t in_ring = r->len - 1;
    if (in_ring == r->cap && !r->full) {
        uint32_t ncap = r->cap ? r->cap * 2 : 4;
        size_t extra = (size_t)(ncap - r->cap) * r->elem;
        uint8_t *nd = NULL;
        if (r->cap == 0 || g->retained_bytes + extra <= g->lim.max_history_bytes)
            nd = malloc((size_t)ncap * r->elem);
        if (nd) {
            /* Linearize: oldest first. */
            for (uint32_t i = 0; i < in_ring; i++)
                memcpy(nd + (size_t)i * r->elem, ring_at(r, i + 1), r->elem);
            free(r->data);
            r->data = nd;
            r->head = 0;
            r->cap = ncap;
            g->retained_bytes += extra;
        } else if (r->cap) {
            r->full = true;
        } else {
            return false;
        }
    }
    if (in_ring < r->cap) {
        elem_copy(r->data + (size_t)((r->head + in_ring) & (r->cap - 1)) * r->elem, elem, r->elem);
        r->len++;
        return true;
    }
    uint8_t *slot = r->data + (size_t)r->head * r->elem;
    if (evicted)
        elem_copy(evicted, slot, r->elem);
    if (did_evict)
        *did_evict = true;
    elem_copy(slot, elem, r->elem);
    r->head = (r->head + 1) & (r->cap - 1);
    r->evicted++;
    g->c.history_evictions++;
    return true;
}

static int64_t find_series_idx(tk_clock_graph *g, uint32_t dom_idx, uint32_t hash)
{
    const uint64_t *v = tk_map_find(&g->series_index, series_key(dom_idx, hash));
    return v ? (int64_t)*v : -1;
}

/* ---- lifecycle ------------------------------------------------------------ */

tk_clock_graph *tk_clock_graph_new(const tk_clock_limits *limits)
{
    tk_clock_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    if (limits)
        g->lim = *limits;
    else
        tk_clock_limits_default(&g->lim);
    if (g->lim.max_domains < 2)
        g->lim.max_domains = 2;
    if (!g->lim.max_edges)
        g->lim.max_edges = 65536;
    g->trace_clock = TK_CLOCK_BOOTTIME;
    g->dist_target = g->trace_clock;
    g->rnd = 1;
    tk_map_init(&g->index);
    tk_map_init(&g->series_index);
    return g;
}

void tk_clock_graph_free(tk_clock_graph *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_dom; i++) {
        domain *d = &g->dom[i];
        for (uint32_t k = 0; k < d->n_series; k++)
            free(d->series[k].r.data);
        free(d->series);
        free(d->edges);
        free(d->in);
        free(d->obs.data);
    }
    free(g->dom);
    tk_map_free(&g->index);
    tk_map_free(&g->series_index);
    free(g->bfs_stamp);
    free(g->bfs_parent);
    free(g->bfs_edge);
    free(g->bfs_queue);
    free(g->bfs_depth);
    free(g);
}

static domain *create_domain(tk_clock_graph *g, int64_t id)
{
    if (g->n_dom == g->cap_dom) {
        uint32_t ncap = g->cap_dom ? g->cap_dom * 2 : 16;
        domain *nd = realloc(g->dom, ncap * sizeof *nd);
        if (!nd)
            return NULL;
        g->dom = nd;
        uint32_t *a = realloc(g->bfs_stamp, ncap * sizeof *a);
        if (a)
            g->bfs_stamp = a;
        uint32_t *b = realloc(g->bfs_parent, ncap * sizeof *b);
        if (b)
            g->bfs_parent = b;
        uint32_t *c = realloc(g->bfs_edge, ncap * sizeof *c);
        if (c)
            g->bfs_edge = c;
        uint32_t *q = realloc(g->bfs_queue, ncap * sizeof *q);
        if (q)
            g->bfs_queue = q;
        uint8_t *dp = realloc(g->bfs_depth, ncap);
        if (dp)
            g->bfs_depth = dp;
        if (!a || !b || !c || !q || !dp)
            return NULL;
        for (uint32_t i = g->cap_dom; i < ncap; i++)
            g->bfs_stamp[i] = 0;
        g->cap_dom = ncap;
    }
    bool inserted;
    if (!tk_map_insert(&g->index, (uint64_t)id, g->n_dom, &inserted))
        return NULL;
    domain *d = &g->dom[g->n_dom++];
    memset(d, 0, sizeof *d);
    d->id = id;
    d->unit = 1;
    d->obs.elem = sizeof(tk_clock_obs);
    d->dist = id == g->dist_target ? 0 : DIST_NONE;
    return d;
}

static int64_t create_series(tk_clock_graph *g, domain *d, uint32_t hash)
{
    if (d->n_series == d->cap_series) {
        uint32_t ncap = d->cap_series ? d->cap_series * 2 : 2;
        series *ns = realloc(d->series, ncap * sizeof *ns);
        if (!ns)
            return -1;
        d->series = ns;
        d->cap_series = ncap;
    }
    bool inserted;
    if (!tk_map_insert(&g->series_index, series_key(dom_index(g, d), hash), d->n_series, &inserted))
        return -1;
    series *s = &d->series[d->n_series];
    memset(s, 0, sizeof *s);
    s->hash = hash;
    s->r.elem = sizeof(entry);
    return d->n_series++;
}

/* ---- error bookkeeping ------------------------------------------------------- */

/* A reading leaves the history: account for its conversions now. */
static void fold_evicted(domain *d, const entry *e)
{
    if (!e->max_after || e->settled)
        return;
    if (d->has_last_drift)
        tk_cg_fold_error(d, d->last_drift_ppm, e->max_after);
    else
        d->unbounded = true;
}

/* ---- AddSnapshot ----------------------------------------------------------- */

static uint32_t snapshot_hash(const reading *r, size_t n)
{
    /* 64-bit FNV-1a over the little-endian bytes of each 64-bit clock id, in
     * snapshot order, truncated to 32 bits: the key trace_processor files a
     * snapshot's readings under. Edge order in the path search depends on
     * it, so it has to be the same function. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)r[i].id;
        for (int b = 0; b < 8; b++) {
            h ^= (uint8_t)(v >> (8 * b));
            h *= 0x100000001b3ull;
        }
    }
    return (uint32_t)h;
}

/* New edges a snapshot could add (an upper bound), for the edge limit. */
static uint64_t new_edges_bound(tk_clock_graph *g, const reading *r, size_t n, uint32_t hash)
{
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const domain *di = find_domain(g, r[i].id);
        if (di && di->non_monotonic)
            continue;
        for (size_t j = 0; j < n; j++)
            if (j != i && (!di || !tk_cg_has_edge(di, r[j].id, hash)))
                count++;
    }
    return count;
}

tk_snapshot_status tk_cg_add_snapshot(tk_clock_graph *g, const reading *r, size_t n, uint32_t *didx,
                                      uint32_t *sidx, uint32_t *out_id, const char **reason)
{
    const uint32_t hash = snapshot_hash(r, n);

    /* Our limits are checked up front so that hitting one never leaves a
     * half-applied snapshot behind (trace_processor has no such limits). */
    uint32_t new_domains = 0;
    for (size_t i = 0; i < n; i++) {
        domain *d = find_domain(g, r[i].id);
        if (!d)
            new_domains++;
        else if (find_series_idx(g, dom_index(g, d), hash) < 0 &&
                 d->n_series >= g->lim.max_series_per_domain) {
            *reason = "too many distinct snapshot shapes for one clock";
            g->c.limit_hits++;
            return TK_SNAPSHOT_LIMIT;
        }
    }
    if (g->n_dom + new_domains > g->lim.max_domains) {
        *reason = "too many distinct clocks";
        g->c.limit_hits++;
        return TK_SNAPSHOT_LIMIT;
    }
    if (g->n_edges_total + (uint64_t)n * (n - (n > 0)) > g->lim.max_edges &&
        g->n_edges_total + new_edges_bound(g, r, n, hash) > g->lim.max_edges) {
        *reason = "too many clock graph edges";
        g->c.limit_hits++;
        return TK_SNAPSHOT_LIMIT;
    }

    const uint32_t snapshot_id = g->next_snapshot_id++;
    *out_id = snapshot_id;
    g->cache[0].valid = false;
    g->cache[1].valid = false;

    for (size_t i = 0; i < n; i++) {
        domain *d = find_domain(g, r[i].id);
        if (!d && !(d = create_domain(g, r[i].id))) {
            *reason = "out of memory";
            g->c.limit_hits++;
            return TK_SNAPSHOT_LIMIT;
        }
        didx[i] = dom_index(g, d);
        if (d->n_series == 0) {
            if (r[i].incremental && !tk_clock_is_converted_sequence(r[i].id)) {
                g->c.invalid_clock_snapshots++;
                *reason = "a global clock cannot use incremental encoding";
                return TK_SNAPSHOT_INVALID;
            }
            d->unit = r[i].unit;
            d->incremental = r[i].incremental;
        } else if (d->unit != r[i].unit || d->incremental != r[i].incremental) {
            g->c.invalid_clock_snapshots++;
            *reason = "clock changed unit_multiplier_ns or is_incremental";
            return TK_SNAPSHOT_INVALID;
        }
        /* A raw reading or unit of 2^63 or more reads as negative. */
        bool ovf = r[i].ts < 0 || d->unit < 0;
        const int64_t ts_ns = wmul(r[i].ts, d->unit, &ovf);
        if (ovf)
            g->c.timestamp_overflows++;
        d->last_ts_ns = ts_ns;

        int64_t si = find_series_idx(g, didx[i], hash);
        if (si < 0 && (si = create_series(g, d, hash)) < 0) {
            *reason = "out of memory";
            g->c.limit_hits++;
            return TK_SNAPSHOT_LIMIT;
        }
        sidx[i] = (uint32_t)si;
        series *s = &d->series[si];
        if (s->r.len) {
            const entry *back = ring_at(&s->r, s->r.len - 1);
            if (back->snapshot_id == snapshot_id) {
                g->c.invalid_clock_snapshots++;
                *reason = "the same clock appears twice in one snapshot";
                return TK_SNAPSHOT_INVALID;
            }
            if (ts_ns < back->ts_ns) {
                if (r[i].id == g->trace_clock) {
                    g->c.invalid_clock_snapshots++;
                    *reason = "the trace clock went backwards";
                    return TK_SNAPSHOT_INVALID;
                }
                /* Usable as a target only from now on (REALTIME across a
                 * daylight-saving change maps one value to two instants). */
                tk_cg_drop_out_edges(g, d);
            }
        }
        entry e = { .ts_ns = ts_ns, .snapshot_id = snapshot_id };
        entry old;
        bool evicted;
        if (!tk_cg_ring_push(g, &s->r, &e, &old, &evicted)) {
            *reason = "out of memory";
            g->c.limit_hits++;
            return TK_SNAPSHOT_LIMIT;
        }
        if (evicted)
            fold_evicted(d, &old);
        d->readings++;
    }

    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (!g->dom[didx[i]].non_monotonic)
                tk_cg_add_edge(g, didx[i], didx[j], hash, sidx[i], sidx[j]);
            if (!g->dom[didx[j]].non_monotonic)
                tk_cg_add_edge(g, didx[j], didx[i], hash, sidx[j], sidx[i]);
        }
    }
    return TK_SNAPSHOT_OK;
}

/* ---- conversion -------------------------------------------------------------- */

static inline int64_t to_ns(domain *d, int64_t ts, bool *ovf)
{
    if (!d->incremental)
        return wmul(ts, d->unit, ovf);
    d->last_ts_ns = wadd(d->last_ts_ns, wmul(ts, d->unit, ovf), ovf);
    return d->last_ts_ns;
}

/* Remembers how far from its snapshot a value was converted (first hop). */
static inline void note_distance(domain *d, series *s, entry *e, int64_t ns)
{
    if (ns < e->ts_ns) {
        /* Only possible against the first reading. */
        uint64_t dist = (uint64_t)e->ts_ns - (uint64_t)ns;
        if (dist > s->max_before)
            s->max_before = dist;
        d->before_first++;
    } else {
        uint64_t dist = (uint64_t)ns - (uint64_t)e->ts_ns;
        if (dist > e->max_after) {
            e->max_after = dist;
            if (e->settled)
                tk_cg_fold_error(d, e->drift_ppm, dist);
        }
    }
}

static uint32_t upper_bound(const ring *r, int64_t ns)
{
    /* Usually the value is past the latest reading. */
    if (r->len && ((const entry *)ring_at(r, r->len - 1))->ts_ns <= ns)
        return r->len;
    uint32_t lo = 0, hi = r->len;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (((const entry *)ring_at(r, mid))->ts_ns <= ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

entry *tk_cg_find_snapshot(const ring *r, uint32_t snapshot_id)
{
    if (!r->len)
        return NULL;
    entry *last = ring_at(r, r->len - 1);
    if (last->snapshot_id <= snapshot_id)
        return last->snapshot_id == snapshot_id ? last : NULL;
    uint32_t lo = 0, hi = r->len;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (((const entry *)ring_at(r, mid))->snapshot_id < snapshot_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->len) {
        entry *e = ring_at(r, lo);
        if (e->snapshot_id == snapshot_id)
            return e;
    }
    return NULL;
}

static bool convert_slow(tk_clock_graph *g, int64_t src, int64_t ts, int64_t target, int64_t *out,
                         bool *ovf)
{
    g->c.clock_sync_cache_miss++;
    path p;
    if (!tk_cg_find_path(g, src, target, &p)) {
        g->c.clock_sync_failure++;
        return false;
    }
    const bool cacheable = p.len == 1;
    cache_entry ce;
    memset(&ce, 0, sizeof ce);
    domain *sd = &g->dom[p.from[0]];
    int64_t ns = to_ns(sd, ts, ovf);
    for (uint32_t i = 0; i < p.len; i++) {
        domain *cur = &g->dom[p.from[i]];
        domain *next = &g->dom[p.hop[i].target_idx];
        series *cs = &cur->series[p.hop[i].from_series];
        series *nx = &next->series[p.hop[i].to_series];
        if (!cs->r.len)
            continue;
        uint32_t idx = upper_bound(&cs->r, ns);
        if (idx == 1 && cs->r.evicted)
            g->c.history_misses++; /* the right reading may have been evicted */
        if (idx)
            idx--;
        entry *e = ring_at(&cs->r, idx);
        if (i == 0 && !g->in_snapshot)
            note_distance(sd, cs, e, ns);
        const entry *ne = tk_cg_find_snapshot(&nx->r, e->snapshot_id);
        if (!ne && nx->r.evicted)
            g->c.history_misses++;
        if (!ne) {
            /* trace_processor skips the hop (a half-applied snapshot, or
             * for us a reading evicted from a full ring). */
            continue;
        }
        const int64_t adj = wsub(ne->ts_ns, e->ts_ns, ovf);
        ns = wadd(ns, adj, ovf);
        if (cacheable) {
            ce.min_ns = idx == 0 ? INT64_MIN : e->ts_ns;
            ce.max_ns =
                idx + 1 == cs->r.len ? INT64_MAX : ((const entry *)ring_at(&cs->r, idx + 1))->ts_ns;
            ce.translation = adj;
            ce.hop_series = cs;
            ce.hop_entry = e;
        }
    }
    if (cacheable) {
        ce.valid = true;
        ce.src = src;
        ce.target = target;
        ce.src_idx = p.from[0];
        g->cache[next_random(g) % 2] = ce;
    }
    if (!g->in_snapshot)
        sd->conversions++;
    *out = ns;
    return true;
}

static inline bool convert(tk_clock_graph *g, int64_t src, int64_t ts, int64_t target, int64_t *out)
{
    /* One count per timestamp, however many steps overflowed. */
    bool ovf = false;
    bool ok = false;
    for (int i = 0; i < 2 && !ok; i++) {
        cache_entry *c = &g->cache[i];
        if (!c->valid || c->src != src || c->target != target)
            continue;
        domain *d = &g->dom[c->src_idx];
        int64_t ns = to_ns(d, ts, &ovf);
        if (ns >= c->min_ns && ns < c->max_ns) {
            *out = wadd(ns, c->translation, &ovf);
            if (!g->in_snapshot) {
                if (c->hop_entry)
                    note_distance(d, c->hop_series, c->hop_entry, ns);
                d->conversions++;
            }
            ok = true;
        }
    }
    if (!ok)
        ok = convert_slow(g, src, ts, target, out, &ovf);
    if (ok && ovf && !g->in_snapshot)
        g->c.timestamp_overflows++;
    return ok;
}

bool tk_clock_graph_to_trace_time(tk_clock_graph *g, int64_t clock_id, int64_t ts, int64_t *out)
{
    g->trace_clock_used = true;
    if (clock_id == g->trace_clock) {
        *out = ts;
        return true;
    }
    return convert(g, clock_id, ts, g->trace_clock, out);
}

bool tk_clock_graph_convert(tk_clock_graph *g, int64_t src, int64_t ts, int64_t target,
                            int64_t *out)
{
    if (src == target) {
        *out = ts;
        return true;
    }
    return convert(g, src, ts, target, out);
}
