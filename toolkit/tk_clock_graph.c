/* Clock graph: snapshot storage, path finding, conversion with the
 * trace_processor cache, and per-clock drift/error bookkeeping.
 * See tk_clock_graph.h for the semantics this file must preserve. */
#include "toolkit/tk_clock_graph.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_arith.h"
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

static bool ring_push(tk_clock_graph *g, ring *r, const void *elem, void *evicted, bool *did_evict)
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

/* Index of the series of shape `hash` in clock dom_idx, or -1. */
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

/* ---- path index -------------------------------------------------------------
 * trace_processor searches breadth first over whole paths (no visited set,
 * at most four hops, edges in (target, hash) order) and takes the first
 * path that ends on the target: the lexicographically smallest of the
 * shortest paths. With every clock's distance to the target known, that
 * path is found greedily: from each clock, the first edge (in that order)
 * to a clock one hop closer. So each clock keeps its distance and that
 * first edge, and conversions just follow them. */

static inline bool edge_before(const edge *a, const edge *b)
{
    return a->target < b->target || (a->target == b->target && a->hash < b->hash);
}

/* Position of the first edge of `d` not before (target, hash). */
static uint32_t edge_lower_bound(const domain *d, int64_t target, uint32_t hash)
{
    uint32_t lo = 0, hi = d->n_edges;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const edge *e = &d->edges[mid];
        if (e->target < target || (e->target == target && e->hash < hash))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool has_edge(const domain *d, int64_t target, uint32_t hash)
{
    uint32_t k = edge_lower_bound(d, target, hash);
    return k < d->n_edges && d->edges[k].target == target && d->edges[k].hash == hash;
}

/* Chooses the first hop of clock x from scratch. */
static void choose_next(tk_clock_graph *g, uint32_t x)
{
    domain *d = &g->dom[x];
    d->has_next = false;
    if (d->dist == 0 || d->dist == DIST_NONE)
        return;
    for (uint32_t k = 0; k < d->n_edges; k++) {
        g->c.path_steps++;
        if (g->dom[d->edges[k].target_idx].dist == d->dist - 1) {
            d->next = d->edges[k];
            d->has_next = true;
            return;
        }
    }
}

/* Edge e of clock y now leads one hop closer: it becomes y's first hop if
 * it comes before the current one. */
static void offer_next(tk_clock_graph *g, uint32_t y, const edge *e)
{
    domain *d = &g->dom[y];
    if (d->dist == 0 || d->dist == DIST_NONE || g->dom[e->target_idx].dist != d->dist - 1)
        return;
    if (!d->has_next || edge_before(e, &d->next)) {
        d->next = *e;
        d->has_next = true;
    }
}

/* Clock `start` just got closer to the target: carry that to every clock
 * with an edge into it, nearest first. A distance only ever shrinks here,
 * and it has five values, so each clock passes through at most five times
 * over the whole trace. */
static void propagate(tk_clock_graph *g, uint32_t start)
{
    uint32_t qh = 0, qt = 0;
    g->bfs_queue[qt++] = start;
    while (qh < qt) {
        const uint32_t x = g->bfs_queue[qh++];
        choose_next(g, x);
        const domain *dx = &g->dom[x];
        if (dx->dist >= TK_CLOCK_MAX_PATH)
            continue;
        const uint8_t via = (uint8_t)(dx->dist + 1);
        for (uint32_t k = 0; k < dx->n_in; k++) {
            g->c.path_steps++;
            const in_edge *ie = &dx->in[k];
            domain *dy = &g->dom[ie->from_idx];
            if (dy->non_monotonic)
                continue; /* its edges are gone */
            if (via < dy->dist) {
                dy->dist = via;
                if (qt < g->n_dom)
                    g->bfs_queue[qt++] = ie->from_idx;
                else
                    g->dist_dirty = true; /* cannot happen; rebuild to be safe */
            } else if (via == dy->dist) {
                const edge e = { dx->id, ie->hash, x, ie->from_series, ie->to_series };
                offer_next(g, ie->from_idx, &e);
            }
        }
    }
}

/* Distances and first hops from scratch: a breadth-first search backwards
 * from the trace clock, then every clock's first hop. Linear in the graph. */
static void rebuild_paths(tk_clock_graph *g)
{
    g->dist_dirty = false;
    g->dist_target = g->trace_clock;
    for (uint32_t i = 0; i < g->n_dom; i++) {
        g->dom[i].dist = DIST_NONE;
        g->dom[i].has_next = false;
    }
    const uint64_t *t = tk_map_find(&g->index, (uint64_t)g->dist_target);
    if (!t)
        return;
    uint32_t qh = 0, qt = 0;
    g->bfs_queue[qt++] = (uint32_t)*t;
    g->dom[*t].dist = 0;
    while (qh < qt) {
        const uint32_t x = g->bfs_queue[qh++];
        const domain *dx = &g->dom[x];
        g->c.path_steps++;
        if (dx->dist >= TK_CLOCK_MAX_PATH)
            continue;
        for (uint32_t k = 0; k < dx->n_in; k++) {
            g->c.path_steps++;
            const uint32_t y = dx->in[k].from_idx;
            domain *dy = &g->dom[y];
            if (dy->non_monotonic || dy->dist != DIST_NONE)
                continue;
            dy->dist = (uint8_t)(dx->dist + 1);
            g->bfs_queue[qt++] = y;
        }
    }
    for (uint32_t i = 0; i < g->n_dom; i++)
        choose_next(g, i);
}

static inline void paths_ready(tk_clock_graph *g)
{
    if (g->dist_dirty || g->dist_target != g->trace_clock)
        rebuild_paths(g);
}

/* Inserts the edge from -> target (sorted, unique like std::set's) and
 * updates the path index. */
static bool add_edge(tk_clock_graph *g, uint32_t from_idx, uint32_t target_idx, uint32_t hash,
                     uint32_t from_series, uint32_t to_series)
{
    domain *from = &g->dom[from_idx];
    domain *to = &g->dom[target_idx];
    const uint32_t lo = edge_lower_bound(from, to->id, hash);
    if (lo < from->n_edges && from->edges[lo].target == to->id && from->edges[lo].hash == hash)
        return true;
    if (from->n_edges == from->cap_edges) {
        uint32_t ncap = from->cap_edges ? from->cap_edges * 2 : 4;
        edge *ne = realloc(from->edges, ncap * sizeof *ne);
        if (!ne)
            return false;
        from->edges = ne;
        from->cap_edges = ncap;
    }
    if (to->n_in == to->cap_in) {
        uint32_t ncap = to->cap_in ? to->cap_in * 2 : 4;
        in_edge *ni = realloc(to->in, ncap * sizeof *ni);
        if (!ni)
            return false;
        to->in = ni;
        to->cap_in = ncap;
    }
    const edge e = { to->id, hash, target_idx, from_series, to_series };
    memmove(&from->edges[lo + 1], &from->edges[lo], (from->n_edges - lo) * sizeof(edge));
    from->edges[lo] = e;
    from->n_edges++;
    to->in[to->n_in++] = (in_edge){ from_idx, hash, from_series, to_series };
    g->n_edges_total++;

    if (g->dist_dirty || to->dist == DIST_NONE || to->dist >= TK_CLOCK_MAX_PATH)
        return true;
    const uint8_t via = (uint8_t)(to->dist + 1);
    if (via < from->dist) {
        from->dist = via;
        propagate(g, from_idx);
    } else if (via == from->dist) {
        offer_next(g, from_idx, &e);
    }
    return true;
}

/* A clock went backwards: it keeps only its incoming edges. Distances of
 * clocks whose paths ran through it may grow, which the incremental update
 * cannot express: rebuild on the next use (once per clock at most). */
static void drop_out_edges(tk_clock_graph *g, domain *d)
{
    d->non_monotonic = true;
    d->n_edges = 0;
    g->dist_dirty = true;
}

/* ---- error bookkeeping -------------------------------------------------------
 * A conversion at distance `dist` after a reading, while the clock drifts
 * by `ppm` against the trace clock, is off by about ppm * dist. */
static inline void fold_error(domain *d, double ppm, uint64_t dist)
{
    double err = fabs(ppm) * (double)dist * 1e-6;
    if (err > d->max_err_ns)
        d->max_err_ns = err;
}

/* A reading leaves the history: account for its conversions now. */
static void fold_evicted(domain *d, const entry *e)
{
    if (!e->max_after || e->settled)
        return;
    if (d->has_last_drift)
        fold_error(d, d->last_drift_ppm, e->max_after);
    else
        d->unbounded = true;
}

/* ---- AddSnapshot ----------------------------------------------------------- */

typedef struct reading {
    int64_t id;
    int64_t ts;
    int64_t unit;
    bool incremental;
} reading;

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
            if (j != i && (!di || !has_edge(di, r[j].id, hash)))
                count++;
    }
    return count;
}

static tk_snapshot_status add_snapshot(tk_clock_graph *g, const reading *r, size_t n,
                                       uint32_t *didx, uint32_t *sidx, uint32_t *out_id,
                                       const char **reason)
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
                drop_out_edges(g, d);
            }
        }
        entry e = { .ts_ns = ts_ns, .snapshot_id = snapshot_id };
        entry old;
        bool evicted;
        if (!ring_push(g, &s->r, &e, &old, &evicted)) {
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
                add_edge(g, didx[i], didx[j], hash, sidx[i], sidx[j]);
            if (!g->dom[didx[j]].non_monotonic)
                add_edge(g, didx[j], didx[i], hash, sidx[j], sidx[i]);
        }
    }
    return TK_SNAPSHOT_OK;
}

/* ---- path search ------------------------------------------------------------
 * Paths to the trace clock come from the index. Other targets (conversions
 * between two arbitrary clocks, and the index's own check) use a
 * breadth-first search with a visited set marked on enqueue and the same
 * neighbour order, which finds the same path as trace_processor's search
 * over whole paths without its exponential blow-up on dense graphs. */
static bool search_path(tk_clock_graph *g, uint32_t s, uint32_t t, path *p)
{
    if (++g->stamp == 0) {
        memset(g->bfs_stamp, 0, g->cap_dom * sizeof *g->bfs_stamp);
        g->stamp = 1;
    }
    uint32_t qh = 0, qt = 0;
    g->bfs_queue[qt++] = s;
    g->bfs_stamp[s] = g->stamp;
    g->bfs_depth[s] = 0;
    while (qh < qt) {
        uint32_t u = g->bfs_queue[qh++];
        g->c.path_steps++;
        if (u == t) {
            p->len = g->bfs_depth[u];
            for (uint32_t k = p->len; k > 0; k--) {
                const uint32_t parent = g->bfs_parent[u];
                p->hop[k - 1] = g->dom[parent].edges[g->bfs_edge[u]];
                p->from[k - 1] = parent;
                u = parent;
            }
            return p->len > 0;
        }
        if (g->bfs_depth[u] >= TK_CLOCK_MAX_PATH)
            continue;
        const domain *d = &g->dom[u];
        for (uint32_t k = 0; k < d->n_edges; k++) {
            g->c.path_steps++;
            uint32_t v = d->edges[k].target_idx;
            if (g->bfs_stamp[v] == g->stamp)
                continue;
            g->bfs_stamp[v] = g->stamp;
            g->bfs_parent[v] = u;
            g->bfs_edge[v] = k;
            g->bfs_depth[v] = (uint8_t)(g->bfs_depth[u] + 1);
            g->bfs_queue[qt++] = v;
        }
    }
    return false;
}

/* The indexed path from clock s to the trace clock. */
static bool index_path(tk_clock_graph *g, uint32_t s, path *p)
{
    paths_ready(g);
    const domain *d = &g->dom[s];
    if (d->dist == 0 || d->dist == DIST_NONE)
        return false;
    p->len = d->dist;
    uint32_t x = s;
    for (uint32_t k = 0; k < p->len; k++) {
        const domain *dx = &g->dom[x];
        g->c.path_steps++;
        if (!dx->has_next)
            return false; /* cannot happen: a distance implies a first hop */
        p->from[k] = x;
        p->hop[k] = dx->next;
        x = dx->next.target_idx;
    }
    return true;
}

static bool find_path(tk_clock_graph *g, int64_t src, int64_t target, path *p)
{
    const uint64_t *si = tk_map_find(&g->index, (uint64_t)src);
    const uint64_t *ti = tk_map_find(&g->index, (uint64_t)target);
    if (!si || !ti)
        return false;
    if (target == g->trace_clock)
        return index_path(g, (uint32_t)*si, p);
    return search_path(g, (uint32_t)*si, (uint32_t)*ti, p);
}

bool tk_clock_graph_resolvable(tk_clock_graph *g, int64_t src)
{
    if (src == g->trace_clock)
        return find_domain(g, src) != NULL;
    path p;
    return find_path(g, src, g->trace_clock, &p);
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
                fold_error(d, e->drift_ppm, dist);
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

static entry *find_snapshot(const ring *r, uint32_t snapshot_id)
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
    if (!find_path(g, src, target, &p)) {
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
        const entry *ne = find_snapshot(&nx->r, e->snapshot_id);
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
        entry *e = find_snapshot(&d->series[d->last_obs_series].r, a->snapshot_id);
        if (e && !e->settled && d->has_last_drift) {
            e->settled = 1;
            e->drift_ppm = measured ? ppm : d->last_drift_ppm;
            if (e->max_after)
                fold_error(d, e->drift_ppm, e->max_after);
        }
    } else {
        d->first_obs = *o;
    }
    d->last_obs = *o;
    d->last_obs_series = series_idx;
    ring_push(g, &d->obs, o, NULL, NULL);
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
    reading r_stack[16];
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
    st = add_snapshot(g, r, n, didx, sidx, &snapshot_id, reason);
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
    paths_ready(g);
    for (uint32_t s = 0; s < g->n_dom; s++) {
        if (t && s == *t)
            continue;
        path a, b;
        const bool found_a = index_path(g, s, &a);
        const bool found_b = t && search_path(g, s, (uint32_t)*t, &b);
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
