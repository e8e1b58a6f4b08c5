/* SPDX-License-Identifier: MIT */
/* timeline_recording.h — the lifetime of recordings (prefix tl_): reference
 * counting, the device's pool of finished ones, and the copy of their
 * results into mapped memory recorded at their end.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_RECORDING_H
#define GPUTRACE_LAYER_TIMELINE_RECORDING_H

#include <vulkan/vulkan.h>

#include "layer/timeline_device_types.h"
#include "layer/timeline_recording_types.h"

/* Back to the state of a fresh recording; gives its query chunks and
 * executed secondaries back. */
void tl_recording_clear(tl_recording *rec);
/* A cleared recording from the device's pool, or newly allocated; one
 * reference, counted in td->live_recordings. NULL on OOM. */
tl_recording *tl_recording_new(tl_device *td);
void tl_recording_ref(tl_recording *rec);
void tl_recording_unref(tl_recording *rec);
/* Frees the pooled recordings (device destruction). */
void tl_recordings_finish(tl_device *td);

/* Records, at the end of a primary, the copy of every query it wrote into
 * the chunks' mapped buffers when that is how its results are read
 * (rec->copied says whether it did). */
void tl_recording_copy_results(tl_device *td, tl_recording *rec);

#endif
