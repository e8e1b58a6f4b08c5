/* SPDX-License-Identifier: MIT */
/* collector_unwritten.c — see collector_unwritten.h. */
#include "layer/collector_unwritten.h"

#include <stdatomic.h>

#include "layer/gpu_clock.h"
#include "layer/timeline_submission.h"

/* Work may start this much before its submission seems to, on the model's
 * time line, beyond the calibration's own uncertainty. */
#define COL_HORIZON_MARGIN_NS 1000u

bool col_work_unwritten(tl_collector *col, const tl_submission *except)
{
    tl_device *td = col->td;
    const uint32_t n = atomic_load_explicit(&td->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&td->queues[i]->submitting_since, memory_order_seq_cst))
            return true;
    bool any = false;
    pthread_mutex_lock(&col->lock);
    for (const tl_submission *y = col->head; y && !any; y = y->next)
        any = y != except && y->kind == TL_SUB_WORK && y->submitted_ns;
    pthread_mutex_unlock(&col->lock);
    return any;
}

/* Submissions looked at before the bound is given as incomplete: the
 * list lock is the one submitting threads take. */
#define COL_HORIZON_LOOK 64u

uint64_t col_unwritten_since(tl_collector *col, const tl_submission *x, bool *complete)
{
    tl_device *td = col->td;
    uint64_t bound = gc_boottime_ns();
    const uint32_t n = atomic_load_explicit(&td->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t since =
            atomic_load_explicit(&td->queues[i]->submitting_since, memory_order_seq_cst);
        if ((!x || td->queues[i] != x->queue) && since && since < bound)
            bound = since;
    }
    bool behind_x = false;
    unsigned looked = 0;
    *complete = true;
    pthread_mutex_lock(&col->lock);
    for (const tl_submission *y = col->head; y; y = y->next) {
        if (y == x) {
            behind_x = true;
            continue;
        }
        if (!y->submitted_ns || (behind_x && y->queue == x->queue))
            continue;
        if (y->submitted_ns < bound)
            bound = y->submitted_ns;
        if (++looked >= COL_HORIZON_LOOK) {
            *complete = false;
            break;
        }
    }
    pthread_mutex_unlock(&col->lock);
    return bound;
}

uint64_t col_model_slack(const tl_collector *col)
{
    return col->clock.last.deviation_ns + col->clock.last.host_uncertainty_ns +
           COL_HORIZON_MARGIN_NS;
}

uint64_t col_unwritten_horizon(tl_collector *col, const tl_submission *x)
{
    bool complete;
    const uint64_t bound = col_unwritten_since(col, x, &complete);
    const sp_model *m = &col->clock_model;
    if (!complete || !m->valid)
        return 0;
    const uint64_t device = sp_device_at(m, bound);
    const uint64_t margin = col_model_slack(col);
    return device > margin ? device - margin : 0;
}
