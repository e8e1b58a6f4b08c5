/* SPDX-License-Identifier: MIT */
/* fr_busy.h — the GPU side of one frame (prefix fr_busy_): the span from
 * its first GPU start to its last GPU end, and the union of its command
 * buffers' intervals (how long the GPU was busy with it, overlapping work
 * on several queues counted once). Pure: no locks, no allocation.
 *
 * The union is kept as at most FR_BUSY_MAX disjoint intervals; when work
 * arrives with more gaps than that, the two intervals closest together are
 * joined, which counts their gap as busy: the busy time is then an upper
 * bound, exact whenever a frame's GPU work has fewer than FR_BUSY_MAX gaps
 * (each submission's command buffers usually run back to back).
 */
#ifndef GPUTRACE_LAYER_FRAMES_FR_BUSY_H
#define GPUTRACE_LAYER_FRAMES_FR_BUSY_H

#include <stdbool.h>
#include <stdint.h>

#define FR_BUSY_MAX 16u

typedef struct fr_span fr_span;
struct fr_span {
    uint64_t begin, end; /* device ns, begin < end */
};

typedef struct fr_busy fr_busy;
struct fr_busy {
    uint32_t n; /* intervals in use, sorted and disjoint */
    fr_span spans[FR_BUSY_MAX];
    uint64_t first, last; /* earliest begin, latest end; valid when n > 0 */
    bool approximate;     /* a gap was counted as busy */
};

/* Adds [begin, end) (device ns); an empty or reversed interval is ignored. */
void fr_busy_add(fr_busy *b, uint64_t begin, uint64_t end);
/* Adds every interval of `from`. */
void fr_busy_merge(fr_busy *into, const fr_busy *from);
/* The union's length, and first start to last end (0 when empty). */
uint64_t fr_busy_total(const fr_busy *b);
uint64_t fr_busy_span(const fr_busy *b);

#endif
