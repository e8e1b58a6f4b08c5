/* SPDX-License-Identifier: MIT */
/* reuse_check.h — VK_LAYER_GPUTRACE_clockfault's check of when the layer
 * above resets timestamp queries it wrote (GPUTRACE_FAULT_CHECK_QUERY_REUSE=1).
 *
 * The rule checked is the one the timing layer keeps for lavapipe
 * (docs/layer.md, "Query reuse on lavapipe"): a query that a submission
 * wrote may be reset again only once a later submission that wrote
 * timestamps is known complete; a reset recorded in a command buffer counts
 * as known safe when that command buffer wrote a timestamp and then
 * recorded a pipeline barrier before it. Host resets are checked when they
 * are called, recorded ones when their command buffer is submitted.
 * Completion is what this layer can see below the timing layer: a fence of
 * its own submitted behind every batch, the batch's last copied
 * availability word in mapped memory (the timing layer zeroes it before
 * each submission), or the batch's own fence found signalled by anyone
 * above (vkWaitForFences, vkGetFenceStatus through this layer). The last
 * matters: the application's wait can return, and the timing layer act on
 * it (read a re-submitted recording early, zero its copy, count the work
 * complete), before this layer's fence behind the batch has signalled.
 *
 * Second rule, for lavapipe's scenes: a timestamp that is not top-of-pipe
 * (lavapipe ends its current scene for it) directly follows a pipeline
 * barrier in its command buffer (among the commands seen here); counted as
 * "unwaited".
 *
 * All functions are thread-safe; `s` may be NULL (check off). */
#ifndef GPUTRACE_REUSE_CHECK_H
#define GPUTRACE_REUSE_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

typedef struct rc_state rc_state;

/* NULL unless GPUTRACE_FAULT_CHECK_QUERY_REUSE is set (or on failure). */
rc_state *rc_create(VkDevice device, PFN_vkGetDeviceProcAddr gdpa);
/* Prints the summary line on stderr:
 *   clockfault: query reuse: checked=N unsafe=M stamps=S unwaited=U [first: ...] */
void rc_destroy(rc_state *s);

void rc_pool_created(rc_state *s, VkQueryPool pool, uint32_t count);
void rc_pool_destroyed(rc_state *s, VkQueryPool pool);

/* Recording (begin or reset forgets what the command buffer held). */
void rc_cb_begin(rc_state *s, VkCommandBuffer cb);
void rc_timestamp(rc_state *s, VkCommandBuffer cb, VkQueryPool pool, uint32_t query,
                  bool top_of_pipe);
void rc_cmd_reset(rc_state *s, VkCommandBuffer cb, VkQueryPool pool, uint32_t first,
                  uint32_t count);
void rc_barrier(rc_state *s, VkCommandBuffer cb);
/* `avail`: host address of the availability word of the last query the
 * copy writes, NULL when not in mapped memory. */
void rc_copy(rc_state *s, VkCommandBuffer cb, const uint64_t *avail);
void rc_execute(rc_state *s, VkCommandBuffer cb, uint32_t count,
                const VkCommandBuffer *secondaries);

/* After a successful vkQueueSubmit*: the command buffers of all its
 * batches, in order, and the submission's fence (may be VK_NULL_HANDLE).
 * Submits the check's own fence on `queue`. */
void rc_submitted(rc_state *s, VkQueue queue, uint32_t count, const VkCommandBuffer *cbs,
                  VkFence fence);
/* After vkWaitForFences or vkGetFenceStatus found all of `fences`
 * signalled: the newest submission with each is complete. */
void rc_fences_signalled(rc_state *s, uint32_t count, const VkFence *fences);
/* Before vkResetQueryPool reaches the driver. */
void rc_host_reset(rc_state *s, VkQueryPool pool, uint32_t first, uint32_t count);

#endif
