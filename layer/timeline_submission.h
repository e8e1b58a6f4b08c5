/* SPDX-License-Identifier: MIT */
/* timeline_submission.h — the lifetime of submissions and reading their
 * results (prefix tl_), for the submitting thread and the collector.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_SUBMISSION_H
#define GPUTRACE_LAYER_TIMELINE_SUBMISSION_H

#include "layer/timeline_device_types.h"
#include "layer/timeline_submission_types.h"

/* A cleared submission (from the device's pool when there is one). */
tl_submission *tl_submission_new(tl_device *td);
/* Drops its references and gives back what it holds (fence, own command
 * buffers, query chunks); pooled for reuse. */
void tl_submission_free(tl_device *td, tl_submission *sub);
/* Frees the pooled submissions (device destruction). */
void tl_submissions_finish(tl_device *td);
/* Reads a result's queries now (the work is known to be complete); called
 * with rec->lock held. From the mapped copy if it is there, else (a copy
 * that does not show up) from the driver. */
void tl_result_read(tl_device *td, tl_result *res);
/* Whether the last copied value of `rec` is in our mapping: both words
 * non-zero (a driver may write either first). The copy waits for every
 * query it copies, so this is all of them. */
bool tl_copy_landed(tl_device *td, const tl_recording *rec);

#endif
