/* SPDX-License-Identifier: MIT */
/* collector_unwritten.h — the device's work not yet written as events, and
 * since when it can have run (prefix col_), on the collector's thread.
 *
 * Two things must stay ahead of that work in time: a clock snapshot, which
 * must not fall inside a stage that is still to be written
 * (snapshot_placement.h), and an object name written again (collector
 * sequence's emit_names), which a reader that lost the first copy applies
 * only to the events after it. Each looks here: at what is on its way down
 * a queue (submitting_since), what waits in the collector's list, and what
 * may be submitted from now on.
 */
#ifndef GPUTRACE_LAYER_COLLECTOR_UNWRITTEN_H
#define GPUTRACE_LAYER_COLLECTOR_UNWRITTEN_H

#include <stdbool.h>
#include <stdint.h>

#include "layer/collector_types.h"

/* Whether work of this device is on its way to the GPU or waiting to be
 * written (other than `except`, and calibrations, which write no events). */
bool col_work_unwritten(tl_collector *col, const tl_submission *except);

/* The earliest BOOTTIME at which work not yet written, other than `x`,
 * was submitted: what is on its way down on another queue than x's, what
 * waits in the list (behind `x` on its own queue only if on another queue:
 * a queue starts its submissions in order), and what is submitted from now
 * on (now). `x` may be NULL: all of it. *complete is false when it stopped
 * after a bounded number of submissions (the list lock is the submitting
 * threads'); the bound is then of those, which are the oldest (the list is
 * in the order of submission, give or take threads that submitted at the
 * same moment). */
uint64_t col_unwritten_since(tl_collector *col, const tl_submission *x, bool *complete);

/* What the clock model may be off by, and a margin: how much earlier than
 * a host time the device's work may seem to start. */
uint64_t col_model_slack(const tl_collector *col);

/* The earliest device time at which work not yet written, other than `x`,
 * may run (col_unwritten_since through the model, less col_model_slack).
 * 0 when it cannot be told (the model not valid yet, or the look was not
 * complete). */
uint64_t col_unwritten_horizon(tl_collector *col, const tl_submission *x);

#endif
