/* SPDX-License-Identifier: MIT */
/* host_waits.c — see host_waits.h. */
#include "layer/flows/host_waits.h"

#include <pthread.h>
#include <stdatomic.h>

#include "layer/flows/flow_emit.h"
#include "layer/session.h"
#include "layer/timeline_context.h"

struct hwait_writers {
    const gt_allocator *alloc;
    /* Taken by waiting threads (briefly, to write two packets) and by the
     * session's stop; never while calling Vulkan. */
    pthread_mutex_t lock;
    tw_writer *writer[TL_SESSION_SLOTS];
    uint32_t gen[TL_SESSION_SLOTS]; /* the slot's generation of the last attempt */
    tl_queue_tracks tracks[TL_SESSION_SLOTS];
    atomic_uint redescribe; /* bit per slot whose incremental state was cleared */
};

hwait_writers *hwait_create(const gt_allocator *alloc)
{
    hwait_writers *hw = gt_zalloc(alloc, sizeof *hw, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!hw)
        return NULL;
    hw->alloc = alloc;
    pthread_mutex_init(&hw->lock, NULL);
    return hw;
}

static void release(hwait_writers *hw, bool all)
{
    pthread_mutex_lock(&hw->lock);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        if (hw->writer[i] && (all || hw->gen[i] != tl_session_slot_generation(i))) {
            tl_session_release_writer(i, hw->writer[i]);
            hw->writer[i] = NULL;
        }
    }
    pthread_mutex_unlock(&hw->lock);
}

void hwait_destroy(hwait_writers *hw)
{
    if (!hw)
        return;
    release(hw, true);
    pthread_mutex_destroy(&hw->lock);
    gt_free(hw->alloc, hw);
}

void hwait_release_stale(hwait_writers *hw)
{
    if (hw)
        release(hw, false);
}

void hwait_flush_quiet(hwait_writers *hw, uint64_t now_ns, uint64_t quiet_ns)
{
    if (!hw)
        return;
    pthread_mutex_lock(&hw->lock);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (hw->writer[i])
            tw_flush_when_quiet(hw->writer[i], now_ns, quiet_ns);
    pthread_mutex_unlock(&hw->lock);
}

void hwait_clear(hwait_writers *hw, unsigned slot)
{
    if (hw && slot < TL_SESSION_SLOTS)
        atomic_fetch_or(&hw->redescribe, 1u << slot);
}

void hwait_write(hwait_writers *hw, const char *api, uint64_t begin, uint64_t end,
                 const uint64_t *ids, uint32_t nids)
{
    if (!hw)
        return;
    pthread_mutex_lock(&hw->lock);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        const uint32_t gen = tl_session_slot_generation(i);
        if (hw->writer[i] && hw->gen[i] != gen) {
            tl_session_release_writer(i, hw->writer[i]);
            hw->writer[i] = NULL;
        }
        if (!hw->writer[i] && hw->gen[i] != gen) {
            /* One attempt per tracing period (none for a slot off, or one
             * that gets no GPU stages: the ids would name nothing). */
            hw->writer[i] = tl_session_slot_times(i) ? tl_session_new_writer(i, gen) : NULL;
            hw->gen[i] = gen;
        }
        if (!hw->writer[i])
            continue;
        const unsigned bit = 1u << i;
        const bool cleared = atomic_load_explicit(&hw->redescribe, memory_order_relaxed) & bit;
        if (cleared)
            atomic_fetch_and(&hw->redescribe, ~bit);
        const uint64_t track =
            tl_context_describe(&hw->tracks[i], cleared, gen, hw->writer[i], begin);
        fe_wait_slice(hw->writer[i], begin, end, track, api, ids, nids);
    }
    pthread_mutex_unlock(&hw->lock);
}
