/* SPDX-License-Identifier: MIT */
/* timeline_query_types.h — the timing feature's timestamp queries: pools
 * handed out in chunks (timeline_query.c manages them). Data only.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_QUERY_TYPES_H
#define GPUTRACE_LAYER_TIMELINE_QUERY_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#define TL_CHUNK_QUERIES   64u /* queries per chunk */
#define TL_CHUNKS_PER_POOL 16u /* chunks per VkQueryPool (1024 queries) */

typedef struct tl_qchunk tl_qchunk;
struct tl_qchunk {
    VkQueryPool pool;
    uint32_t first;
    /* Where command buffers copy this chunk's results (value, availability
    * pairs), mapped; NULL: read with vkGetQueryPoolResults instead. */
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize offset;
    uint64_t *results;
    /* Given back after the device wrote it: reused (reset) only once a
    * submission numbered at least this has been seen complete. */
    uint32_t reuse_after;
    tl_qchunk *next_free; /* free list, or the held list */
};

typedef struct tl_qblock tl_qblock;
struct tl_qblock {
    tl_qblock *next;
    VkQueryPool pool;
    VkBuffer buffer;
    VkDeviceMemory memory;
    tl_qchunk chunks[TL_CHUNKS_PER_POOL];
};

/* Chunks come back when nothing refers to their recording any more, and
 * are reset (destroying the driver's query objects) before the next use.
 * That reset waits until the device has been seen completing timestamps
 * written after the chunk's last use: on lavapipe the query object holds
 * a reference to the rasterizer fence of the timestamp's scene, and the
 * rasterizer's last thread can still be inside that fence's signal call
 * (it has counted itself done but not yet unlocked the fence) when the
 * results are already visible; dropping the last reference then frees a
 * fence still in use, which corrupts the heap or loses a wakeup so the
 * queue never finishes (docs/layer.md, "Query reuse on lavapipe"). A later
 * scene seen complete proves every rasterizer thread has left the
 * earlier signal calls: they run scenes strictly in order. */
typedef struct tl_queries tl_queries;
struct tl_queries {
    pthread_mutex_t lock;
    tl_qchunk *free;
    tl_qchunk *held, *held_tail; /* FIFO by reuse_after */
    uint32_t nheld;
    tl_qblock *blocks;
    uint32_t npools;
    /* The newest submission seen complete that wrote timestamps (see
    * tl_queries_seen_complete), valid once have_seen is set. */
    atomic_uint seen_complete;
    atomic_bool have_seen;
};

#endif
