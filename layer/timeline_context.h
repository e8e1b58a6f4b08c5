/* SPDX-License-Identifier: MIT */
/* timeline_context.h — whose the CPU-side work is: the process and thread
 * track descriptors on each queue's writers (and on the host-wait writers,
 * flows/host_waits.h), and the vkQueueSubmit slice on the submitting
 * thread's track (docs/layer.md, "Process and thread tracks").
 */
#ifndef GPUTRACE_LAYER_TIMELINE_CONTEXT_H
#define GPUTRACE_LAYER_TIMELINE_CONTEXT_H

#include <stdint.h>

#include "layer/flows/flow_emit.h"
#include "layer/timeline_device_types.h"

/* On the submitting thread, with q->writer_lock held and `w` the queue's
 * writer for session slot `slot` made in generation `gen`: describes the
 * process and this thread where `w` has not yet (since it began or its
 * incremental state was cleared), then writes the slice, naming the
 * stages it submitted (`flow`, may be NULL). */
void tl_context_submit(tl_queue *q, unsigned slot, uint32_t gen, tw_writer *w, uint64_t begin,
                       uint64_t end, uint32_t submission_id, const fe_submitted *flow);

/* The description itself, for any writer of CPU-side slices: `t` is what
 * `w` (made in generation `gen`) has described so far, `cleared` says its
 * incremental state was cleared since. Describes the process (with the
 * descriptor of the flows' TrackEvent extension) and the calling thread
 * where missing, and everything again, starting the sequence afresh, once
 * `ts` is a second past the last time; returns the thread's track uuid. */
uint64_t tl_context_describe(tl_queue_tracks *t, bool cleared, uint32_t gen, tw_writer *w,
                             uint64_t ts);

/* Session slot `slot` cleared its incremental state: every queue of the
 * device describes its tracks again on that slot's writer. */
void tl_context_clear(tl_device *td, unsigned slot);

#endif
