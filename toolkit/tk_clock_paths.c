/* SPDX-License-Identifier: MIT */
/* The clock graph's paths: the index of shortest paths to the trace
 * clock kept up to date as edges arrive, and the full search it must agree
 * with (trace_processor's breadth-first search, ties to the lower id). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_clock_graph_internal.h"

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

bool tk_cg_has_edge(const domain *d, int64_t target, uint32_t hash)
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

void tk_cg_paths_ready(tk_clock_graph *g)
{
    if (g->dist_dirty || g->dist_target != g->trace_clock)
        rebuild_paths(g);
}

/* Inserts the edge from -> target (sorted, unique like std::set's) and
 * updates the path index. */
bool tk_cg_add_edge(tk_clock_graph *g, uint32_t from_idx, uint32_t target_idx, uint32_t hash,
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
void tk_cg_drop_out_edges(tk_clock_graph *g, domain *d)
{
    d->non_monotonic = true;
    d->n_edges = 0;
    g->dist_dirty = true;
}

/* ---- path search ------------------------------------------------------------
 * Paths to the trace clock come from the index. Other targets (conversions
 * between two arbitrary clocks, and the index's own check) use a
 * breadth-first search with a visited set marked on enqueue and the same
 * neighbour order, which finds the same path as trace_processor's search
 * over whole paths without its exponential blow-up on dense graphs. */
bool tk_cg_search_path(tk_clock_graph *g, uint32_t s, uint32_t t, path *p)
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
bool tk_cg_index_path(tk_clock_graph *g, uint32_t s, path *p)
{
    tk_cg_paths_ready(g);
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

bool tk_cg_find_path(tk_clock_graph *g, int64_t src, int64_t target, path *p)
{
    const uint64_t *si = tk_map_find(&g->index, (uint64_t)src);
    const uint64_t *ti = tk_map_find(&g->index, (uint64_t)target);
    if (!si || !ti)
        return false;
    if (target == g->trace_clock)
        return tk_cg_index_path(g, (uint32_t)*si, p);
    return tk_cg_search_path(g, (uint32_t)*si, (uint32_t)*ti, p);
}

bool tk_clock_graph_resolvable(tk_clock_graph *g, int64_t src)
{
    if (src == g->trace_clock)
        return find_domain(g, src) != NULL;
    path p;
    return tk_cg_find_path(g, src, g->trace_clock, &p);
}

bool tk_clock_graph_known(tk_clock_graph *g, int64_t id)
{
    return tk_map_find(&g->index, (uint64_t)id) != NULL;
}
