/* SPDX-License-Identifier: MIT */
/* collector_sequence.h — the collector's trace sequence (prefix seq_): its
 * writer, the device clock's calibrations and snapshots, interned data and
 * the render stage events of completed submissions. Called on the
 * collector's thread only, which is the only writer of the device's
 * sequence (collector.h says why).
 */
#ifndef GPUTRACE_LAYER_COLLECTOR_SEQUENCE_H
#define GPUTRACE_LAYER_COLLECTOR_SEQUENCE_H

#include <stdint.h>

#include "layer/collector_types.h"
#include "layer/gpu_clock.h"

/* Follows the session: a writer for a new tracing period (the sequence
 * starts with clock snapshots), none outside one. */
void seq_update_writer(tl_collector *col);
/* Gives the writer back to the session now. */
void seq_release_writer(tl_collector *col);
/* The application waits for the collector from now on: the writer never
 * waits for the service. */
void seq_never_stall(tl_collector *col);

/* Reads calibrated timestamps and, when the reading is accepted, writes a
 * clock snapshot. */
void seq_calibrate(tl_collector *col);
/* A ClockSnapshot of the last accepted reading, if there is a writer. */
void seq_emit_snapshot(tl_collector *col);
/* Interned data for queue `q` (and everything, when the sequence needs it
 * again: loss, a session request, periodically). */
void seq_ensure_interned(tl_collector *col, const tl_queue *q);

/* A completed work submission: reads its results and writes its events;
 * `collected` is BOOTTIME when its completion was seen. */
void seq_process_work(tl_collector *col, tl_submission *sub, uint64_t collected);
/* A completed bracket calibration, read `after` its completion was seen. */
void seq_process_calibration(tl_collector *col, tl_submission *sub, const gc_host_time *after);

#endif
