/* SPDX-License-Identifier: MIT */
/* event_ids.c — see event_ids.h. */
#include "layer/flows/event_ids.h"

#include <stdatomic.h>
#include <unistd.h>

static _Atomic uint64_t next_id = 1;
/* pid << EID_COUNTER_BITS, read once (getpid() is a system call): a fork()
 * child never traces (session.c), so it never needs its own. */
static _Atomic uint64_t base;

uint64_t eid_take(uint32_t n)
{
    uint64_t b = atomic_load_explicit(&base, memory_order_relaxed);
    if (!b) {
        b = ((uint64_t)getpid() & 0x3fffffu) << EID_COUNTER_BITS;
        atomic_store_explicit(&base, b, memory_order_relaxed);
    }
    const uint64_t mask = (UINT64_C(1) << EID_COUNTER_BITS) - 1;
    return b | (atomic_fetch_add_explicit(&next_id, n, memory_order_relaxed) & mask);
}
