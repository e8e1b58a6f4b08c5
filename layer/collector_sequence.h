/* SPDX-License-Identifier: MIT */
/* collector_sequence.h — the collector's trace sequence (prefix seq_): its
 * writer, the device clock's calibrations and snapshots, interned data and
 * the render stage events of completed submissions. Called on the
 * collector's thread only, which is the only writer of the device's
 * sequences (collector.h says why): one per running session (session.h),
 * each getting every clock snapshot and the render stages its session
 * asked for.
 */
#ifndef GPUTRACE_LAYER_COLLECTOR_SEQUENCE_H
#define GPUTRACE_LAYER_COLLECTOR_SEQUENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "layer/collector_types.h"
#include "layer/gpu_clock.h"

/* Follows the sessions: a sequence (writer) for each running session slot
 * that has none (it starts with clock snapshots), none for a slot whose
 * period ended. */
void seq_update_writer(tl_collector *col);
/* Gives every writer back to the session now. */
void seq_release_writer(tl_collector *col);
/* Gives back the writers of the sessions that stopped. */
void seq_release_stale(tl_collector *col);
/* Hands over the chunk of each sequence, queue, memory or host waits, that wrote
 * nothing for SEQ_QUIET_FLUSH_NS (tw_flush_when_quiet): its last packets
 * reach the file with their neighbours in time, not at the end. Called at
 * least once per second (the collector's idle wait) and between the
 * submissions of a backlog. */
void seq_flush_quiet(tl_collector *col);
/* Whether any session has a sequence here. */
bool seq_any_writer(const tl_collector *col);
/* MONOTONIC of the first snapshot of the newest sequence (0: none). */
uint64_t seq_newest_start(const tl_collector *col);
/* The application waits for the collector from now on: the writer never
 * waits for the service. */
void seq_never_stall(tl_collector *col);

/* Reads calibrated timestamps and takes an accepted reading (below). */
void seq_calibrate(tl_collector *col);
/* col->clock.last was just accepted: it updates the clock model and is
 * written as a ClockSnapshot at once where no work can straddle it (the
 * device is idle), else before the next submission that leaves a gap
 * (snapshot_placement.h). */
void seq_reading_accepted(tl_collector *col);
/* Interned data for queue `q` (and everything, when the sequence needs it
 * again: loss, a session request, periodically). */
void seq_ensure_interned(tl_collector *col, const tl_queue *q);

/* A completed work submission: reads its results and writes its events;
 * `collected` is BOOTTIME when its completion was seen. */
void seq_process_work(tl_collector *col, tl_submission *sub, uint64_t collected);
/* A completed bracket calibration, read `after` its completion was seen. */
void seq_process_calibration(tl_collector *col, tl_submission *sub, const gc_host_time *after);

/* Frees what the sequences allocated for themselves (the collector's
 * thread has ended). */
void seq_finish(tl_collector *col);

#endif
