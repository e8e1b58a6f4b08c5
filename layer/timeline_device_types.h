/* SPDX-License-Identifier: MIT */
/* timeline_device_types.h — the timing feature's state per VkDevice, queue,
 * command pool and command buffer. Data only, with the trivial accessors
 * every part of the feature uses (allocation with the device's allocator).
 * timeline_device.c creates and destroys these objects.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_DEVICE_TYPES_H
#define GPUTRACE_LAYER_TIMELINE_DEVICE_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/alloc.h"
#include "layer/gpu_clock.h"
#include "layer/gpu_identity.h"
#include "layer/handle_table.h"
#include "layer/object_names.h"
#include "layer/objects.h"
#include "layer/session.h"
#include "layer/timeline_query_types.h"
#include "layer/timeline_recording_types.h"
#include "tracing/trace_writer.h"

typedef struct tl_submission tl_submission;
typedef struct fs_table fs_table;
typedef struct hwait_writers hwait_writers;
typedef struct mem_device mem_device;
typedef struct fr_device fr_device;

#define TL_MAX_QUEUES 64u
#define TL_POOL_KEEP  256u /* finished recordings / submissions kept for reuse */

typedef struct tl_pool tl_pool;

typedef struct tl_cb tl_cb;
struct tl_cb {
    VkCommandBuffer handle;
    tl_pool *pool;
    bool primary;
    tl_recording *rec;  /* current recording, or NULL */
    tl_cb *prev, *next; /* in the pool */
    /* Suspended or resumed rendering was recorded without a recording (not
    * tracing): a primary executing it cannot know where it is suspended.
    * Cleared by the next vkBeginCommandBuffer that starts a recording. */
    bool untracked_suspend;
};

struct tl_pool {
    VkCommandPool handle;
    uint32_t family;
    tl_cb *cbs;
};

/* Threads a queue's writer has described so far (a few threads submit to
 * one queue; more than TL_QUEUE_THREADS start the list afresh). */
#define TL_QUEUE_THREADS 8u
typedef struct tl_queue_tracks tl_queue_tracks;
struct tl_queue_tracks {
    tw_writer *writer; /* the writer they were described on */
    uint32_t gen;
    bool process;
    uint64_t process_at; /* BOOTTIME of the process description */
    uint32_t nthreads;
    int32_t tids[TL_QUEUE_THREADS];
};

typedef struct tl_queue tl_queue;
struct tl_queue {
    VkQueue handle;
    uint32_t family, index;
    uint32_t slot;       /* index in tl_device.queues: hw_queue_iid - TL_QUEUE_IID_BASE */
    uint32_t valid_bits; /* of its family */

    /* The vk_queue_submit writers, one per session slot (used under the
    * application's queue synchronisation; the lock is for a session
    * ending meanwhile, and for the collector handing over the chunk of a
    * queue gone quiet, tl_queue_flush_quiet); writer_gen: the slot's
    * generation of the last attempt. */
    pthread_mutex_t writer_lock;
    tw_writer *writer[TL_SESSION_SLOTS];
    uint32_t writer_gen[TL_SESSION_SLOTS];
    /* Process and thread tracks already described on each writer
     * (timeline_context.c), under writer_lock; `redescribe`: bit per slot
     * whose incremental state was cleared. */
    tl_queue_tracks tracks[TL_SESSION_SLOTS];
    atomic_uint redescribe;

    /* Between tl_queue_submit_pre and _post (queue externally synchronised). */
    tl_submission *pending;
    uint64_t pre_boottime_ns;
    /* pre_boottime_ns while a timed submission is on its way down and not
     * yet handed to the collector, else 0: read by the collector, which
     * must not put a clock snapshot where that work may run. */
    _Atomic uint64_t submitting_since;

    /* Layer-owned command buffers (simultaneous-use spans, bracket
    * calibration): pool used only under the queue's synchronisation,
    * free list also by the collector. */
    VkCommandPool own_pool;
    pthread_mutex_t own_lock;
    VkCommandBuffer *own_free;
    uint32_t own_nfree, own_cap, own_total;
};

typedef struct tl_collector tl_collector;

struct tl_device {
    gt_device *gt;
    tl_session_client client;
    /* Machine-wide GPU number (gpu_id.h) and what GpuInfo says about it. */
    uint32_t gpu_id;
    gi_identity identity;
    /* This VkDevice's number in the process (0 first): keeps the clocks
     * and queue tracks of two VkDevices on one GPU apart. */
    uint32_t ordinal;
    int pid;

    VkPhysicalDeviceProperties props;
    uint8_t uuid[VK_UUID_SIZE];
    uint32_t nfamilies;
    VkQueueFamilyProperties *families;
    bool host_reset;
    bool readback_copy; /* results copied to mapped memory (timeline_record.c) */
    /* Except one-time-submit command buffers, read by the collector in bulk
    * (tl_recording_copy_results, collector.c read_in_bulk). */
    bool one_time_in_bulk;
    /* The driver is lavapipe (llvmpipe): barriers before bottom-of-pipe
    * timestamps, top-of-pipe ones inside instances, re-submitted queries
    * reset on the queue while their reuse is not proven (stamp() in
    * timeline_record.c, tl_queries). */
    bool llvmpipe;
    /* Copied results never became visible in our mapping although the
    * driver had them (a layer below shadows mapped memory): every result
    * is read with vkGetQueryPoolResults from then on (collector.c). */
    atomic_bool copies_unseen;
    PFN_vkResetQueryPool reset_query_pool;

    char clock_name[128];
    uint32_t clock_id;
    enum gc_source clock_source;
    bool clock_has_raw;

    /* Command pools and buffers, started flag. */
    pthread_mutex_t lock;
    ht_table cbs;   /* VkCommandBuffer -> tl_cb */
    ht_table pools; /* VkCommandPool -> tl_pool */
    /* VkRenderPass -> subpass view masks and attachments, VkImageView ->
    * format (timeline_render_pass.c), both under rp_lock. */
    pthread_mutex_t rp_lock;
    ht_table render_passes;
    ht_table image_views;
    atomic_bool started;
    bool start_failed;

    /* Queues: appended under lock, read without (count published last). */
    tl_queue *queues[TL_MAX_QUEUES];
    atomic_uint nqueues;

    tl_queries queries;

    pthread_mutex_t fence_lock;
    VkFence *free_fences;
    uint32_t nfree_fences, fences_cap;
    uint32_t nfences;

    /* Finished recordings and submissions kept with their arrays, so the
    * steady state allocates nothing (TL_POOL_KEEP of each at most). */
    pthread_mutex_t pool_lock;
    tl_recording *free_recordings;
    tl_submission *free_submissions;
    uint32_t nfree_recordings, nfree_submissions;

    tl_collector *collector;
    /* Frames (layer/frames/fr_frames.h); NULL when out of memory at device
     * creation: no frames then, and no GPUTRACE_FRAMES window. */
    fr_device *frames;
    /* The application's names for its objects (object_names.h); NULL when
    * out of memory at device creation: nothing is named then. */
    tl_object_names *names;
    /* Flows (flows/flow_sync.h): what signals what; host waits' writers
     * (flows/host_waits.h); memory (memory/mem_device.h). NULL when out
     * of memory at device creation: no flows, waits or memory events. */
    fs_table *flows;
    hwait_writers *waits;
    mem_device *memory;
    /* Recordings alive; while non-zero the hooks work even when not tracing,
    * so query state stays valid for re-submissions. */
    atomic_uint live_recordings;
    /* Bracket calibration: 1 = wanted by the collector, 2 = in flight. */
    atomic_uint bracket_state;

    atomic_uint_fast32_t warned; /* log-once bits, TL_WARN_* */
};

enum {
    TL_WARN_NO_SLOTS = 1u << 0,
    TL_WARN_SUBMIT = 1u << 1,
    TL_WARN_FENCE = 1u << 2,
    TL_WARN_QUEUES = 1u << 3,
    TL_WARN_OOM = 1u << 4,
    TL_WARN_RESULTS = 1u << 5,
    TL_WARN_OWN_CB = 1u << 6,
    TL_WARN_BACKLOG = 1u << 7,
};

static inline tl_device *tl_device_of(const gt_device *dev)
{
    return (tl_device *)dev->timeline;
}

static inline const VkAllocationCallbacks *tl_vk_alloc(const tl_device *td)
{
    return gt_allocator_callbacks(&td->gt->alloc);
}

static inline void *tl_alloc(const tl_device *td, size_t size)
{
    return gt_zalloc(&td->gt->alloc, size, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
}

static inline void tl_free(const tl_device *td, void *p)
{
    gt_free(&td->gt->alloc, p);
}

#endif
