/* SPDX-License-Identifier: MIT */
/* collector_copies.h — whether timestamps copied into mapped memory show up
 * there (prefix col_), on the collector's thread.
 *
 * Results normally come back through a copy at the end of each command
 * buffer (timeline_recording.c). A layer below us that shadows mapped
 * memory (gfxreconstruct's page guard refreshes its host copies of device
 * writes only at its own sync points) keeps them from ever showing; a
 * copy can also merely run late (lavapipe's queue thread preempted between
 * the timestamps and the copy). Only the first is a reason to read with
 * vkGetQueryPoolResults instead, and the two are told apart by what ran,
 * never by how long the copy took.
 */
#ifndef GPUTRACE_LAYER_COLLECTOR_COPIES_H
#define GPUTRACE_LAYER_COLLECTOR_COPIES_H

#include <stdbool.h>

#include "layer/collector_types.h"

/* `sub` is pending and the copy of `res` (one of its results) is not in
 * our mapping. Once the submission is known complete by other means (the
 * device idle at vkDestroyDevice, or a later submission on its queue whose
 * command-buffer timestamp is written: that waits for everything
 * submitted before it, the copy and its barrier to the host included), a
 * copy still missing means the mapping is not what the GPU wrote: the
 * device reads with vkGetQueryPoolResults from then on (warned once) and
 * true is returned, `sub` being complete. At most one look per
 * COL_COPY_PROBE_NS per collector, the first after `sub` waited that long:
 * on lavapipe each driver query is a device-idle wait. Called without
 * `res`'s recording lock. */
bool col_copy_unseen(tl_collector *col, const tl_submission *sub, tl_result *res);

#endif
