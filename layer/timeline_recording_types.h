/* SPDX-License-Identifier: MIT */
/* timeline_recording_types.h — what one recording of a command buffer
 * holds: its regions, their query slots, and the state of the recording
 * (render pass instances, labels, suspended rendering). Data only;
 * timeline_recording.c owns the lifetime, timeline_record.c fills them.
 *
 * Object lifetimes: a tl_cb lives from vkAllocateCommandBuffers to
 * vkFreeCommandBuffers (or its pool's destruction). Each vkBeginCommandBuffer
 * while tracing starts a tl_recording, reference counted: the command buffer
 * holds one reference while the recording is current, every submission
 * that executed it holds one until the collector is done, and a primary
 * recording holds one on each secondary it executes. Query chunks go back
 * to the device when the last reference goes.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_RECORDING_TYPES_H
#define GPUTRACE_LAYER_TIMELINE_RECORDING_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/timeline_meta_types.h"
#include "layer/timeline_query_types.h"

typedef struct tl_device tl_device;

#define TL_MAX_SLOTS   (1u << 16) /* per recording: 32768 regions */
#define TL_LABEL_DEPTH 64u
#define TL_NO_SLOT     UINT32_MAX

/* How a recording began: its first hooked command that is an action or
 * synchronization command, or a resuming vkCmdBeginRendering. A primary
 * executing a secondary needs to know which (suspended rendering). */
enum tl_starts {
    TL_STARTS_NONE,
    TL_STARTS_ACTION,
    TL_STARTS_RESUME,
};

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
    tl_region_meta meta;  /* what it ran: its stage arguments */
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
    bool one_time;         /* VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT */
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
    /* A tl_full_barrier of ours is recorded: it orders every earlier
    * submission's writes, so the results copy needs no barrier of its own. */
    bool full_barrier;
    /* Stage arguments (timeline_meta.c): the attachments the regions
    * describe, what was recorded so far (executed secondaries included) and
    * at the current instance's begin, the bound pipelines. */
    tl_attachment *atts;
    uint32_t natts, atts_cap;
    uint32_t draws, dispatches;
    uint32_t inst_draws, inst_dispatches;
    uint64_t compute_pipeline, graphics_pipeline;
    uint64_t inst_pipeline;       /* graphics pipeline of the instance's first draw */
    uint64_t first_draw_pipeline; /* of the recording's first draw */

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

static inline const char *tl_region_name(const tl_recording *rec, const tl_region *r)
{
    return r->name ? rec->names + (r->name - 1) : NULL;
}

#endif
