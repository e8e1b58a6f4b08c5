/* SPDX-License-Identifier: MIT */
/* timeline_lookup.h — finding the timing feature's state for a command
 * buffer or queue on the hot path, and the device's fences (prefix tl_).
 */
#ifndef GPUTRACE_LAYER_TIMELINE_LOOKUP_H
#define GPUTRACE_LAYER_TIMELINE_LOOKUP_H

#include <vulkan/vulkan.h>

#include "layer/timeline_device_types.h"

/* The state of a command buffer / queue of this device, or NULL. */
tl_cb *tl_cb_find(tl_device *td, VkCommandBuffer cb);
tl_queue *tl_queue_find(tl_device *td, VkQueue queue);
/* Some command buffer went away (its handle may be reused): forgets every
 * thread's cached tl_cb_find answer. */
void tl_cb_cache_invalidate(void);

/* Unsignalled fences of the layer's own; putting one back never fails. */
VkFence tl_fence_get(tl_device *td);
void tl_fence_put(tl_device *td, VkFence fence); /* signaled or not: reset here */

/* Gives the queue's vk_queue_submit writers back to the session: all of
 * them, or those of the sessions that stopped (their slot's generation
 * changed). */
void tl_queue_release_writer(tl_queue *q);
void tl_queue_release_stale_writers(tl_queue *q);
/* The collector's look at the queue's vk_queue_submit writers: each one
 * silent for `quiet_ns` hands its chunk to the service
 * (tw_flush_when_quiet), so a queue the application stopped using does not
 * keep its last slices back until it is used again. Never waits for an
 * application thread: a queue whose writers are in use is not quiet. */
void tl_queue_flush_quiet(tl_queue *q, uint64_t now_ns, uint64_t quiet_ns);

#endif
