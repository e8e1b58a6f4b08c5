/* SPDX-License-Identifier: MIT */
/* timeline_context.c — see timeline_context.h.
 *
 * Track descriptors are global to a trace, but a reader that lost the
 * start of a sequence (ring buffer wrapped) has lost them too: so each
 * queue writer repeats them where its sequence begins, after a clear of
 * its incremental state, and once a second of its own (a service's ring
 * buffer wraps whether or not it asks for clears: Perfetto's own config
 * does not by default); a thread is described on the first writer it
 * submits through after that. Its name is asked of the kernel (a prctl)
 * once per thread per writer and second, not per submission.
 */
#include "layer/timeline_context.h"

#include <string.h>

#include "layer/emit_context.h"
#include "layer/process_info.h"

/* How long a writer's description lasts before it starts its sequence
 * afresh and describes everything again: what a wrapped ring buffer may
 * lose of the slices' tracks (and v47 of the flows' extension). */
#define TL_CONTEXT_REPEAT_NS (1000ull * 1000 * 1000)

static void describe(tl_queue_tracks *t, tw_writer *w, uint64_t ts, int32_t tid)
{
    const pi_process *p = pi_process_get();
    if (!t->process) {
        t->process_at = ts;
        emc_process_track(w, ts, p->uuid, p->pid, p->name, p->cmdline, p->cmdline_len, true);
        /* After the restart point (a flight recorder's window starts
         * there): this sequence's slices may carry GpuCorrelation, which
         * Perfetto v47 knows only from this. */
        fe_extension_descriptor(w);
        if (p->cmdline_len)
            emc_process_tree(w, ts, p->pid, p->ppid, p->cmdline, p->cmdline_len);
        t->process = true;
    }
    for (uint32_t i = 0; i < t->nthreads; i++) {
        if (t->tids[i] == tid)
            return;
    }
    if (t->nthreads == TL_QUEUE_THREADS)
        t->nthreads = 0; /* repeating a descriptor is harmless */
    t->tids[t->nthreads++] = tid;
    char name[32];
    pi_current_thread_name(name, sizeof name);
    emc_thread_track(w, ts, pi_thread_uuid(tid), p->uuid, p->pid, tid, name);
}

uint64_t tl_context_describe(tl_queue_tracks *t, bool cleared, uint32_t gen, tw_writer *w,
                             uint64_t ts)
{
    const bool stale =
        t->process && ts > t->process_at && ts - t->process_at >= TL_CONTEXT_REPEAT_NS;
    if (cleared || stale || t->writer != w || t->gen != gen) {
        memset(t, 0, sizeof *t);
        t->writer = w;
        t->gen = gen;
    }
    const int32_t tid = pi_thread_id();
    describe(t, w, ts, tid);
    return pi_thread_uuid(tid);
}

void tl_context_submit(tl_queue *q, unsigned slot, uint32_t gen, tw_writer *w, uint64_t begin,
                       uint64_t end, uint32_t submission_id, const fe_submitted *flow)
{
    const unsigned bit = 1u << slot;
    const bool cleared = atomic_load_explicit(&q->redescribe, memory_order_relaxed) & bit;
    if (cleared)
        atomic_fetch_and(&q->redescribe, ~bit);
    const uint64_t track = tl_context_describe(&q->tracks[slot], cleared, gen, w, begin);
    emc_submit_slice(w, begin, end, track, submission_id, flow);
}

void tl_context_clear(tl_device *td, unsigned slot)
{
    uint32_t n = atomic_load_explicit(&td->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        atomic_fetch_or(&td->queues[i]->redescribe, 1u << slot);
}
