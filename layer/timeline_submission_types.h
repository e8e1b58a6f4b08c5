/* SPDX-License-Identifier: MIT */
/* timeline_submission_types.h — one queue submission as the collector
 * sees it: the recordings it executed (by reference) and where their
 * results go. Data only; timeline_submission.c owns the lifetime,
 * timeline_submit.c builds them, collector.c reads them.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_SUBMISSION_TYPES_H
#define GPUTRACE_LAYER_TIMELINE_SUBMISSION_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/gpu_clock.h"
#include "layer/timeline_device_types.h"
#include "layer/timeline_query_types.h"
#include "layer/timeline_recording_types.h"

/* The results of one recording in one submission. */
struct tl_result {
    tl_recording *rec; /* reference */
    uint64_t *values;  /* 2 per slot: value, availability (in sub->values) */
    uint32_t values_offset;
    bool collected;
    bool ok;
    /* Every slot's value is in `values`, read by the collector's bulk read
    * (collector.c, read_in_bulk): collecting it needs no driver call. */
    bool bulk_read;
};

/* One submitted primary command buffer: results[first..first+count) are
 * its recording and, depth first, the secondaries it executes. */
typedef struct tl_entry tl_entry;
struct tl_entry {
    VkCommandBuffer cb;
    uint32_t first, count;
};

enum tl_submission_kind {
    TL_SUB_WORK,        /* the application's work, our fence after it */
    TL_SUB_CALIBRATION, /* bracket fallback: one timestamp */
};

struct tl_submission {
    tl_submission *next;
    enum tl_submission_kind kind;
    tl_queue *queue;
    uint32_t id; /* submission_id */
    VkFence fence;
    uint64_t queued_ns; /* MONOTONIC when handed to the collector */
    /* BOOTTIME just before the call down: its work cannot start earlier
     * (where snapshots may go, snapshot_placement.h). */
    uint64_t submitted_ns;

    tl_entry *entries;
    uint32_t nentries, entries_cap;
    tl_result *results;
    uint32_t nresults, results_cap;
    uint64_t *values; /* every result's, back to back */
    uint32_t nvalues, values_cap;

    /* Submission-level span around untimed (simultaneous-use) command
    * buffers: query 0 before, 1 after, written by own command buffers. */
    tl_qchunk *span_chunk;
    VkCommandBuffer span_cbs[2];
    VkCommandBuffer span_app_cb;

    /* Bracket calibration. */
    gc_host_time before;
    tl_qchunk *cal_chunk;
    VkCommandBuffer cal_cb;

    /* Re-submitted recordings whose queries could not be reset on the host
    * yet (tl_queries_reusable): an own command buffer submitted before
    * the batch resets them on the queue, after a barrier. */
    VkCommandBuffer reset_cb;
    tl_qchunk *reset_chunk;
    /* Carries only reset_cb for a batch that is otherwise untimed: no
    * events, only completion. */
    bool carrier;
    /* All its results were considered by a bulk read (collector.c). */
    bool bulk_listed;
};

/* Whether `rec`'s results are read from the mapped copy. */
static inline bool tl_reads_copy(tl_device *td, const tl_recording *rec)
{
    return rec->copied && !atomic_load_explicit(&td->copies_unseen, memory_order_relaxed);
}

#endif
