/* SPDX-License-Identifier: MIT */
/* collector.h — one thread per device that turns completed submissions
 * into trace packets, off the application's threads.
 *
 * Submissions arrive with a fence of the layer's own (signalled after the
 * application's work on that queue). The collector waits for those fences,
 * reads the query results (no WAIT bit: the fence already guarantees
 * completion), converts ticks with the device clock and emits the render
 * stage events. It also owns the device clock: it calibrates at the cadence
 * gpu_clock.h computes, and it is the only writer of the device's sequence
 * (clock snapshots, interned data, render stage events), so every snapshot
 * of the device's global clock id comes from one sequence, in order.
 */
#ifndef GPUTRACE_LAYER_COLLECTOR_H
#define GPUTRACE_LAYER_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tl_device tl_device;
typedef struct tl_submission tl_submission;
typedef struct tl_collector tl_collector;

/* Starts the thread (the first calibration happens on it). NULL on error. */
tl_collector *col_create(tl_device *td);

/* Stops the thread and frees the collector, after completing what was
 * submitted (bounded wait). Exiting: waits for the thread only briefly and
 * leaves it be if it does not stop. */
void col_destroy(tl_collector *col, bool exiting);

/* Hands a submission over (its fence was submitted). False if the
 * collector no longer runs; the caller keeps the submission then. */
bool col_push(tl_collector *col, tl_submission *sub);

/* Releases the device's trace writers of the sessions that stopped (the
 * slots whose generation changed; all of them when the whole session ends)
 * before returning. Exiting (process exit): first collects what has completed, with
 * a short bound on waiting for the rest, then stops the thread. */
void col_release_writer(tl_collector *col, bool exiting);

/* Whether the collector has as many work submissions waiting as it may
 * (GPUTRACE_MAX_PENDING_SUBMISSIONS): the next ones are not timed. */
bool col_backlog_full(tl_collector *col);

/* A submission with `regions` regions was passed through untimed for a
 * full backlog: counted, logged, and reported in the trace (the next
 * packet of the device's sequence is marked previous_packet_dropped). */
void col_count_dropped(tl_collector *col, uint32_t regions);

/* The session in `slot` asked for interned data again. */
void col_clear_incremental_state(tl_collector *col, unsigned slot);

/* Work may have completed (queue/device idle): look now. */
void col_nudge(tl_collector *col);

#endif
