/* SPDX-License-Identifier: MIT */
/* event_ids.h — GpuRenderStageEvent.event_id values that name one stage in
 * a whole trace (prefix eid_).
 *
 * Trace processors (Perfetto v58) join flows by event id alone, across
 * every GPU, queue and process of the trace: submit -> stage
 * (GpuCorrelation.render_stage_submission_event_ids), stage -> stage
 * (GpuRenderStageEvent.event_wait_ids) and stage -> host wait
 * (GpuCorrelation.render_stage_wait_event_ids). So an id must not repeat
 * in the process (one counter for every device) nor between processes
 * (the pid in the high bits):
 *
 *     id = pid << 40 | n,   n = 1, 2, ... counted per process
 *
 * (bit 63 stays clear: readers store ids as signed 64-bit values). 2^40
 * stages per process before the counter would reach the pid's bits.
 *
 * Ids are taken from any thread: the submitting thread reserves those of
 * the stages a vkQueueSubmit TrackEvent names before the collector has
 * seen them, the collector takes the others as it writes.
 */
#ifndef GPUTRACE_LAYER_FLOWS_EVENT_IDS_H
#define GPUTRACE_LAYER_FLOWS_EVENT_IDS_H

#include <stdint.h>

#define EID_COUNTER_BITS 40u

/* The first of `n` consecutive unused ids. Lock-free. */
uint64_t eid_take(uint32_t n);

/* The process id an id was made in (for tests and logs). */
static inline uint32_t eid_pid(uint64_t id)
{
    return (uint32_t)(id >> EID_COUNTER_BITS);
}

#endif
