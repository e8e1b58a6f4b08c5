/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map from uint64 keys to uint64 values, for the
 * toolkit's per-sequence, per-clock and per-index tables. No deletion:
 * tables only grow or are cleared wholesale (a new generation of
 * incremental state). Plain C, no glib.
 *
 * Keys come from the trace (sequence ids, interned ids, clock ids), so an
 * attacker chooses them. The hash is keyed with a random per-process seed:
 * without it, ids crafted to share a bucket would make every lookup walk one
 * long run of slots (quadratic time overall). Nothing the toolkit reports
 * may depend on the order of slots, which changes from run to run. */
#ifndef TK_MAP_H
#define TK_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tk_map {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *used;
    size_t cap; /* power of two, or 0 before the first insert */
    size_t len;
    uint64_t seed;
    /* Slots examined by finds and inserts so far: the work the table did,
     * for tests that bound it. */
    uint64_t probes;
} tk_map;

static inline uint64_t tk_hash_u64(uint64_t x)
{
    /* splitmix64 finalizer: cheap and mixes low bits well enough for
     * linear probing on sequential ids. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static inline void tk_map_init(tk_map *m)
{
    m->keys = NULL;
    m->vals = NULL;
    m->used = NULL;
    m->cap = 0;
    m->len = 0;
    m->seed = 0;
    m->probes = 0;
}

void tk_map_free(tk_map *m);
/* Forgets every entry but keeps the allocation. */
void tk_map_clear(tk_map *m);

/* The random key every map of this process hashes with (never 0). */
uint64_t tk_map_process_seed(void);

/* Returns a pointer to the value of `key`, or NULL when absent. The pointer
 * is valid until the next insert. */
static inline uint64_t *tk_map_find(tk_map *m, uint64_t key)
{
    if (m->len == 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)tk_hash_u64(key ^ m->seed) & mask;; i = (i + 1) & mask) {
        m->probes++;
        if (!m->used[i])
            return NULL;
        if (m->keys[i] == key)
            return &m->vals[i];
    }
}

/* Inserts `key` with `val` unless present. Returns the value slot (existing
 * or new) and sets *inserted; NULL when out of memory. */
uint64_t *tk_map_insert(tk_map *m, uint64_t key, uint64_t val, bool *inserted);

#endif /* TK_MAP_H */
