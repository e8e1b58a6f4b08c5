/* SPDX-License-Identifier: MIT */
/* timeline_query.h — the layer's own timestamp queries (chunks of pools,
 * held until their reuse is safe) and its own command buffers per queue
 * (prefix tl_). See timeline_query.c.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_QUERY_H
#define GPUTRACE_LAYER_TIMELINE_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/timeline_device_types.h"
#include "layer/timeline_query_types.h"

void tl_queries_init(tl_queries *q);
void tl_queries_finish(tl_device *td);
tl_qchunk *tl_query_take(tl_device *td);
/* Gives a chunk back. `written`: a submission may have written its
 * queries since they were last reset; such a chunk is held until that is
 * known to be over (see tl_queries), the others are free at once. */
void tl_query_give(tl_device *td, tl_qchunk *chunk, bool written);
void tl_query_reset_host(tl_device *td, const tl_qchunk *chunk);
/* The collector saw submission `id` complete, and it wrote timestamps:
 * everything submitted before it is over, down to the driver's last
 * reference to its work. Resets and frees the held chunks this allows. */
void tl_queries_seen_complete(tl_device *td, uint32_t id);
/* Whether queries last written by submissions numbered below
 * `reuse_after` may be reset now. */
bool tl_queries_reusable(tl_device *td, uint32_t reuse_after);
/* Around host access to a chunk's mapped results: what the device wrote
 * becomes visible to the host, and what the host wrote to the device. The
 * memory may be coherent, but a layer below (a capture layer shadowing
 * mapped memory) relies on these calls like any application's. */
void tl_results_invalidate(tl_device *td, const tl_qchunk *chunk);
void tl_results_flush(tl_device *td, const tl_qchunk *chunk);
/* A layer-owned command buffer on `q` writing one bottom-of-pipe timestamp
 * into the first query of `chunk` (reset first when the device has no host
 * query reset). VK_NULL_HANDLE on failure. */
VkCommandBuffer tl_own_timestamp_cb(tl_device *td, tl_queue *q, const tl_qchunk *chunk,
                                    uint32_t query);
void tl_own_cb_put(tl_device *td, tl_queue *q, VkCommandBuffer cb);
/* A pipeline barrier for everything before everything after (outside
 * render pass instances). On lavapipe it waits, on the queue's thread, for
 * the rasterizer's newest scene, so the rasterizer has left the fences of
 * every scene before it: recorded before vkCmdResetQueryPool of queries
 * that earlier work wrote, and before every bottom-of-pipe timestamp
 * (stamp() in timeline_record.c says why). */
void tl_full_barrier(tl_device *td, VkCommandBuffer cb);
/* A layer-owned command buffer on `q`, begun, with a timestamp into the
 * first query of a fresh chunk (*stamp_chunk, given back written when the
 * submission is done) and tl_full_barrier recorded: the caller records
 * the resets, ends and submits it before the batch that needs them.
 * VK_NULL_HANDLE on failure. */
VkCommandBuffer tl_own_reset_begin(tl_device *td, tl_queue *q, tl_qchunk **stamp_chunk);
void tl_own_finish(tl_device *td, tl_queue *q);

#endif
