/* SPDX-License-Identifier: MIT */
/* timeline_util.h — small services every part of the timing feature uses
 * (prefix tl_): growing arrays with the device's allocator, logging an
 * error once per device, and the process-wide submission numbers.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_UTIL_H
#define GPUTRACE_LAYER_TIMELINE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layer/timeline_device_types.h"

/* Logs `fmt` as an error once per device and bit (TL_WARN_*). */
void tl_warn_once(tl_device *td, uint32_t bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Grows an array of `elem` bytes to hold at least `need`; false on OOM. */
bool tl_grow(const tl_device *td, void **array, uint32_t *cap, uint32_t need, size_t elem);

/* The first structure of `type` in a pNext chain, or NULL. */
const void *tl_find_in_chain(const void *next, VkStructureType type);

/* The next submission_id (never 0). */
uint32_t tl_next_submission_id(void);
/* The number the next tl_next_submission_id() call will return at the
 * earliest. */
uint32_t tl_peek_submission_id(void);

#endif
