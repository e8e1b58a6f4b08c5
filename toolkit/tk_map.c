/* SPDX-License-Identifier: MIT */
/* Growth and insertion for tk_map (lookups are inline in the header). */
#include "toolkit/tk_map.h"
#include "tracing/util/util_time.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

uint64_t tk_map_process_seed(void)
{
    static _Atomic uint64_t seed;
    uint64_t s = atomic_load_explicit(&seed, memory_order_relaxed);
    if (s)
        return s;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        /* No entropy yet (early boot): time and addresses still keep the
         * seed out of an attacker's reach in practice. */
        s = tk_hash_u64(util_now_ns() ^ (uint64_t)(uintptr_t)&seed ^ ((uint64_t)getpid() << 17));
    }
    s |= 1;
    /* Racing threads may each pick one; any of them will do, as long as a
     * map keeps the seed it started with. */
    uint64_t expected = 0;
    if (!atomic_compare_exchange_strong(&seed, &expected, s))
        s = expected;
    return s;
}

void tk_map_free(tk_map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    tk_map_init(m);
}

void tk_map_clear(tk_map *m)
{
    if (m->used)
        memset(m->used, 0, m->cap);
    m->len = 0;
}

static bool grow(tk_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    uint64_t *nk = malloc(ncap * sizeof *nk);
    uint64_t *nv = malloc(ncap * sizeof *nv);
    uint8_t *nu = calloc(ncap, 1);
    if (!nk || !nv || !nu) {
        free(nk);
        free(nv);
        free(nu);
        return false;
    }
    if (!m->seed)
        m->seed = tk_map_process_seed();
    size_t mask = ncap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t j = (size_t)tk_hash_u64(m->keys[i] ^ m->seed) & mask;
        while (nu[j]) {
            j = (j + 1) & mask;
            m->probes++;
        }
        nu[j] = 1;
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = nk;
    m->vals = nv;
    m->used = nu;
    m->cap = ncap;
    return true;
}

uint64_t *tk_map_insert(tk_map *m, uint64_t key, uint64_t val, bool *inserted)
{
    *inserted = false;
    /* Keep the load under 1/2 so probe runs stay short. */
    if ((m->len + 1) * 2 > m->cap && !grow(m))
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = (size_t)tk_hash_u64(key ^ m->seed) & mask;
    for (;; i = (i + 1) & mask) {
        m->probes++;
        if (!m->used[i])
            break;
        if (m->keys[i] == key)
            return &m->vals[i];
    }
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = val;
    m->len++;
    *inserted = true;
    return &m->vals[i];
}
