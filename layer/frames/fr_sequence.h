/* SPDX-License-Identifier: MIT */
/* fr_sequence.h — the collector writing frames (prefix fr_seq_): the ready
 * frames of its device (fr_frames.h) go on each running session's
 * sequence of the device, each stream's tracks described first on a
 * sequence (again after its incremental state started afresh), with the
 * process's track before them so the tracks have their parent in any
 * session. Collector thread only.
 */
#ifndef GPUTRACE_LAYER_FRAMES_FR_SEQUENCE_H
#define GPUTRACE_LAYER_FRAMES_FR_SEQUENCE_H

#include <stdbool.h>

#include "layer/collector_types.h"

/* Writes the frames that are ready; `all`: every frame that ended (the
 * collector is about to stop). */
void fr_seq_write(tl_collector *col, bool all);

/* At the collector's end: a warning when frames were given up unwritten
 * (fr_frames_lost), which the trace marks as lost as they happen. */
void fr_seq_report_loss(tl_collector *col);

#endif
