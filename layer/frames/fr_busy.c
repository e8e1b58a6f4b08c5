/* SPDX-License-Identifier: MIT */
/* fr_busy.c — see fr_busy.h. */
#include "layer/frames/fr_busy.h"

#include <string.h>

/* Joins the two neighbours with the smallest gap between them. */
static void join_closest(fr_busy *b)
{
    uint32_t best = 0;
    uint64_t gap = UINT64_MAX;
    for (uint32_t i = 0; i + 1 < b->n; i++) {
        const uint64_t g = b->spans[i + 1].begin - b->spans[i].end;
        if (g < gap) {
            gap = g;
            best = i;
        }
    }
    b->spans[best].end = b->spans[best + 1].end;
    memmove(&b->spans[best + 1], &b->spans[best + 2], (b->n - best - 2) * sizeof b->spans[0]);
    b->n--;
    b->approximate = true;
}

void fr_busy_add(fr_busy *b, uint64_t begin, uint64_t end)
{
    if (end <= begin)
        return;
    if (!b->n || begin < b->first)
        b->first = begin;
    if (!b->n || end > b->last)
        b->last = end;
    /* The first interval ending at or after `begin`: everything before it
     * stays; the ones it overlaps or touches are absorbed. */
    uint32_t i = 0;
    while (i < b->n && b->spans[i].end < begin)
        i++;
    uint32_t j = i;
    while (j < b->n && b->spans[j].begin <= end) {
        if (b->spans[j].begin < begin)
            begin = b->spans[j].begin;
        if (b->spans[j].end > end)
            end = b->spans[j].end;
        j++;
    }
    if (j > i) {
        /* [i, j) become one. */
        b->spans[i] = (fr_span){ begin, end };
        memmove(&b->spans[i + 1], &b->spans[j], (b->n - j) * sizeof b->spans[0]);
        b->n -= j - i - 1;
        return;
    }
    if (b->n == FR_BUSY_MAX) {
        join_closest(b);
        fr_busy_add(b, begin, end); /* at most one more level: there is room now */
        return;
    }
    memmove(&b->spans[i + 1], &b->spans[i], (b->n - i) * sizeof b->spans[0]);
    b->spans[i] = (fr_span){ begin, end };
    b->n++;
}

void fr_busy_merge(fr_busy *into, const fr_busy *from)
{
    for (uint32_t i = 0; i < from->n; i++)
        fr_busy_add(into, from->spans[i].begin, from->spans[i].end);
    into->approximate = into->approximate || from->approximate;
}

uint64_t fr_busy_total(const fr_busy *b)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < b->n; i++)
        sum += b->spans[i].end - b->spans[i].begin;
    return sum;
}

uint64_t fr_busy_span(const fr_busy *b)
{
    return b->n ? b->last - b->first : 0;
}
