/* SPDX-License-Identifier: MIT */
/* timeline_context.h — whose the CPU-side work is: the process and thread
 * track descriptors on each queue's writers, and the vkQueueSubmit slice
 * on the submitting thread's track (docs/layer.md, "Process and thread
 * tracks").
 */
#ifndef GPUTRACE_LAYER_TIMELINE_CONTEXT_H
#define GPUTRACE_LAYER_TIMELINE_CONTEXT_H

#include <stdint.h>

#include "layer/timeline_device_types.h"

/* On the submitting thread, with q->writer_lock held and `w` the queue's
 * writer for session slot `slot` made in generation `gen`: describes the
 * process and this thread where `w` has not yet (since it began or its
 * incremental state was cleared), then writes the slice. */
void tl_context_submit(tl_queue *q, unsigned slot, uint32_t gen, tw_writer *w, uint64_t begin,
                       uint64_t end, uint32_t submission_id);

/* Session slot `slot` cleared its incremental state: every queue of the
 * device describes its tracks again on that slot's writer. */
void tl_context_clear(tl_device *td, unsigned slot);

#endif
