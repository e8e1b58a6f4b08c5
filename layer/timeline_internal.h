/* timeline_internal.h — state shared by the timing code's files.
 *
 *   timeline.c          the timeline.h entry points (fast "not tracing" exit)
 *   timeline_device.c   per-device state: queues, command pools/buffers,
 *                       fences, lazy start, session client
 *   timeline_query.c    layer-owned timestamp query pools, handed out in
 *                       chunks; layer-owned command buffers per queue
 *   timeline_record.c   recordings: the regions of one command buffer
 *                       recording and their query slots
 *   timeline_submit.c   submissions: snapshots of recordings, our fence,
 *                       re-submission, the vk_queue_submit packet
 *   collector.c         the per-device thread reading results
 *   gpu_clock.c, emit.c clock domain/calibration and packet encoding
 *
 * Object lifetimes: a tl_cb lives from vkAllocateCommandBuffers to
 * vkFreeCommandBuffers (or its pool's destruction). Each vkBeginCommandBuffer
 * while tracing starts a tl_recording, reference counted: the command buffer
 * holds one reference while the recording is current, every submission
 * that executed it holds one until the collector is done, and a primary
 * recording holds one on each secondary it executes. Query chunks go back
 * to the device when the last reference goes.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_INTERNAL_H
#define GPUTRACE_LAYER_TIMELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "layer/gpu_clock.h"
#include "layer/handle_table.h"
#include "layer/objects.h"
#include "layer/session.h"
#include "layer/timeline.h"

typedef struct gc_host_time gc_host_time;
typedef struct gt_device gt_device;
typedef struct ht_table ht_table;
typedef struct tl_cmd tl_cmd;
typedef struct tl_device tl_device;
typedef struct tl_session_client tl_session_client;
typedef struct tl_submission tl_submission;
typedef struct tl_submit tl_submit;

#define TL_CHUNK_QUERIES   64u /* queries per chunk */
#define TL_CHUNKS_PER_POOL 16u /* chunks per VkQueryPool (1024 queries) */
#define TL_MAX_QUEUES      64u
#define TL_MAX_SLOTS       (1u << 16) /* per recording: 32768 regions */
#define TL_LABEL_DEPTH     64u
#define TL_NO_SLOT         UINT32_MAX
#define TL_POOL_KEEP       256u /* finished recordings / submissions kept for reuse */

/* hw_queue_iid = TL_QUEUE_IID_BASE + queue slot; stage_iid = enum tl_stage. */
#define TL_QUEUE_IID_BASE 64u

/* Render stages ("gpu_specifications" of the trace). */
enum tl_stage {
    TL_STAGE_EXECUTE = 0, /* internal marker: vkCmdExecuteCommands, not emitted */
    TL_STAGE_COMMAND_BUFFER,
    TL_STAGE_RENDER_PASS,
    TL_STAGE_RENDERING,
    TL_STAGE_DISPATCH,
    TL_STAGE_COPY,
    TL_STAGE_BLIT,
    TL_STAGE_RESOLVE,
    TL_STAGE_CLEAR,
    TL_STAGE_FILL,
    TL_STAGE_UPDATE,
    TL_STAGE_LABEL,
    TL_STAGE_SUBMISSION,
    TL_STAGE_COUNT,
};

/* ---- queries ------------------------------------------------------------- */

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

/* ---- recordings ----------------------------------------------------------- */

typedef struct tl_region tl_region;
struct tl_region {
    uint32_t begin, end;  /* slots; TL_NO_SLOT until written */
    uint8_t stage;        /* enum tl_stage */
    bool dropped;         /* could not be closed where it began */
    uint16_t views;       /* queries per timestamp (multiview) */
    uint32_t rp_instance; /* render pass instance it began in, 0 outside */
    uint32_t name;        /* offset + 1 into names, 0: none; EXECUTE: executed index */
    const char *api;      /* static string from the hook */
    uint64_t handle;      /* VkRenderPass */
    uint64_t target;      /* VkFramebuffer / first color VkImageView */
};

typedef struct tl_result tl_result;

typedef struct tl_recording tl_recording;
struct tl_recording {
    atomic_uint refs;
    tl_device *td;
    VkCommandBuffer cb;
    uint32_t family;
    bool primary;
    bool timing;           /* timestamps are written into this recording */
    bool simultaneous;     /* VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT */
    bool exhausted;        /* ran out of slots: later regions untimed */
    bool copied;           /* copies its results into the chunks' buffers at its end */
    bool multiview_stamps; /* a timestamp of it spans several views' queries */

    uint32_t nslots;
    tl_qchunk **chunks;
    uint32_t nchunks, chunks_cap;
    tl_region *regions;
    uint32_t nregions, regions_cap;
    char *names;
    uint32_t names_len, names_cap;
    tl_recording **executed;
    uint32_t nexecuted, executed_cap;

    /* Recording state (the command buffer's thread only). */
    uint32_t labels[TL_LABEL_DEPTH]; /* open label regions (TL_NO_SLOT: untimed) */
    uint32_t nlabels;
    uint32_t rp_region;   /* open render pass / rendering region, or TL_NO_SLOT */
    uint32_t rp_instance; /* current scope: instance (or multiview subpass), 0 outside */
    uint32_t rp_counter;
    bool in_render_pass;   /* classic render pass instance */
    bool subpass_inline;   /* ...current subpass records inline, view mask known */
    bool in_rendering;     /* dynamic rendering */
    bool rendering_inline; /* ...with commands recorded inline */
    uint16_t views;        /* queries per timestamp here (1 outside instances) */
    /* Classic render pass instance: view mask of each subpass (copied at the
    * begin), the current subpass; handles for the regions inside. */
    uint32_t *rp_masks;
    uint32_t rp_nmasks, rp_masks_cap;
    uint32_t subpass;
    uint64_t rp_handle, rp_target;
    uint32_t rendering_flags; /* VkRenderingFlags of the current dynamic instance */
    /* Suspended dynamic rendering (timeline_record.c): no timestamp may be
    * recorded while the recording may lie between a suspended instance and
    * its resumption; the command-buffer start waits for the first command
    * that proves it does not. */
    bool maybe_suspended;
    bool start_pending;    /* region 0's start not written yet */
    uint8_t starts;        /* enum tl_starts: the first action seen */
    uint32_t suspend_slot; /* written just before the last suspension */
    /* The last timestamp written and whether work may have been recorded
    * since: a boundary with no work in between reuses it. */
    uint32_t last_stamp;
    bool work_since_stamp;

    /* Submissions (any thread, under lock). */
    pthread_mutex_t lock;
    tl_result *pending; /* latest submission not yet read */
    bool used;          /* executed at least once */
    /* The first submission number given out after its last execution was
    * submitted: its queries may be reset on the host once a submission
    * numbered at least this is seen complete (tl_queries_reusable). */
    uint32_t reuse_after;

    tl_recording *next_free; /* in tl_device.free_recordings */
};

/* ---- devices, queues, command buffers ----------------------------------- */

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

typedef struct tl_queue tl_queue;
struct tl_queue {
    VkQueue handle;
    uint32_t family, index;
    uint32_t slot;       /* index in tl_device.queues: hw_queue_iid - TL_QUEUE_IID_BASE */
    uint32_t valid_bits; /* of its family */

    /* The vk_queue_submit writer (used under the application's queue
    * synchronisation; the lock is for the session ending meanwhile). */
    pthread_mutex_t writer_lock;
    tw_writer *writer;
    uint32_t writer_gen;

    /* Between tl_queue_submit_pre and _post (queue externally synchronised). */
    tl_submission *pending;
    uint64_t pre_boottime_ns;

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
    uint32_t gpu_id;
    int pid;

    VkPhysicalDeviceProperties props;
    uint8_t uuid[VK_UUID_SIZE];
    uint32_t nfamilies;
    VkQueueFamilyProperties *families;
    bool host_reset;
    bool readback_copy; /* results copied to mapped memory (timeline_record.c) */
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
    /* VkRenderPass -> subpass view masks (timeline_record.c). */
    pthread_mutex_t rp_lock;
    ht_table render_passes;
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

/* Logs `fmt` as an error once per device and bit. */
void tl_warn_once(tl_device *td, uint32_t bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline tl_device *tl_device_of(const gt_device *dev)
{
    return (tl_device *)dev->timeline;
}

static inline const VkAllocationCallbacks *tl_vk_alloc(const tl_device *td)
{
    return td->gt->alloc.set ? &td->gt->alloc.callbacks : NULL;
}

static inline void *tl_alloc(const tl_device *td, size_t size)
{
    return gt_zalloc(&td->gt->alloc, size, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
}

static inline void tl_free(const tl_device *td, void *p)
{
    gt_free(&td->gt->alloc, p);
}

/* Grows an array of `elem` bytes to hold at least `need`; false on OOM. */
bool tl_grow(const tl_device *td, void **array, uint32_t *cap, uint32_t need, size_t elem);

/* timeline_device.c */
VkResult tl_device_create(gt_device *dev);
void tl_device_destroy(gt_device *dev);
/* Starts the collector on first use while tracing; false if it cannot. */
bool tl_device_ensure_started(tl_device *td);
tl_queue *tl_queue_find(tl_device *td, VkQueue queue);
tl_cb *tl_cb_find(tl_device *td, VkCommandBuffer cb);
VkFence tl_fence_get(tl_device *td);
void tl_fence_put(tl_device *td, VkFence fence); /* signaled or not: reset here */
void tl_queue_release_writer(tl_queue *q);

/* timeline_query.c */
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

/* timeline_record.c */
/* Render passes' subpass view masks, kept from vkCreateRenderPass* to
 * vkDestroyRenderPass whether tracing or not (under rp_lock). */
void tl_render_passes_init(tl_device *td);
void tl_render_passes_finish(tl_device *td);
void tl_render_pass_add(tl_device *td, VkRenderPass rp, const VkRenderPassCreateInfo *info,
                        const VkRenderPassCreateInfo2 *info2);
void tl_render_pass_remove(tl_device *td, VkRenderPass rp);
void tl_record_begin(tl_device *td, tl_cb *tcb, const VkCommandBufferBeginInfo *info);
void tl_record_end(tl_device *td, tl_cb *tcb);
void tl_record_cmd_pre(tl_device *td, tl_cb *tcb, const tl_cmd *cmd);
void tl_record_cmd_post(tl_device *td, tl_cb *tcb, const tl_cmd *cmd);
void tl_recording_ref(tl_recording *rec);
void tl_recording_unref(tl_recording *rec);
/* The command buffer is reset, re-begun or freed. */
void tl_cb_drop_recording(tl_cb *tcb);
static inline const char *tl_region_name(const tl_recording *rec, const tl_region *r)
{
    return r->name ? rec->names + (r->name - 1) : NULL;
}

/* ---- submissions --------------------------------------------------------- */

/* The results of one recording in one submission. */
struct tl_result {
    tl_recording *rec; /* reference */
    uint64_t *values;  /* 2 per slot: value, availability (in sub->values) */
    uint32_t values_offset;
    bool collected;
    bool ok;
};

/* One submitted primary command buffer: results[first..first+count) are
 * its recording and, depth first, the secondaries it executes. */
typedef struct tl_entry tl_entry;
struct tl_entry {
    VkCommandBuffer cb;
    uint32_t first, count;
};

enum tl_submission_kind {
    TL_SUB_WORK,        /* the application's work, our fence after it */
    TL_SUB_CALIBRATION, /* bracket fallback: one timestamp */
};

struct tl_submission {
    tl_submission *next;
    enum tl_submission_kind kind;
    tl_queue *queue;
    uint32_t id; /* submission_id */
    VkFence fence;
    uint64_t queued_ns; /* MONOTONIC when handed to the collector */

    tl_entry *entries;
    uint32_t nentries, entries_cap;
    tl_result *results;
    uint32_t nresults, results_cap;
    uint64_t *values; /* every result's, back to back */
    uint32_t nvalues, values_cap;

    /* Submission-level span around untimed (simultaneous-use) command
    * buffers: query 0 before, 1 after, written by own command buffers. */
    tl_qchunk *span_chunk;
    VkCommandBuffer span_cbs[2];
    VkCommandBuffer span_app_cb;

    /* Bracket calibration. */
    gc_host_time before;
    tl_qchunk *cal_chunk;
    VkCommandBuffer cal_cb;

    /* Re-submitted recordings whose queries could not be reset on the host
    * yet (tl_queries_reusable): an own command buffer submitted before
    * the batch resets them on the queue, after a barrier. */
    VkCommandBuffer reset_cb;
    tl_qchunk *reset_chunk;
    /* Carries only reset_cb for a batch that is otherwise untimed: no
    * events, only completion. */
    bool carrier;
};

/* Whether `rec`'s results are read from the mapped copy. */
static inline bool tl_reads_copy(tl_device *td, const tl_recording *rec)
{
    return rec->copied && !atomic_load_explicit(&td->copies_unseen, memory_order_relaxed);
}

/* A cleared submission (from the device's pool when there is one). */
tl_submission *tl_submission_new(tl_device *td);
void tl_submission_free(tl_device *td, tl_submission *sub);
void tl_pools_finish(tl_device *td);
/* Reads a result's queries now (the work is known to be complete); called
 * with rec->lock held. */
void tl_result_read(tl_device *td, tl_result *res);
uint32_t tl_next_submission_id(void);
/* The number the next tl_next_submission_id() call will return at the
 * earliest. */
uint32_t tl_peek_submission_id(void);

/* timeline_submit.c */
void tl_submit_pre(tl_device *td, VkQueue queue, const tl_submit *submit);
void tl_submit_post(tl_device *td, VkQueue queue, const tl_submit *submit, VkResult result);

#endif
