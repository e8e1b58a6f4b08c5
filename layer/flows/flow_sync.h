/* SPDX-License-Identifier: MIT */
/* flow_sync.h — which GPU work signals what, per device (prefix fs_): the
 * cause and effect the trace draws as flows (docs/layer.md, "Flows").
 *
 * Every timed vkQueueSubmit reserves the event ids (event_ids.h) of the
 * stages it will produce, one per submitted primary command buffer (its
 * "Command buffer" stage) and one for a "Submission" span, before the
 * collector writes them. With those ids the table below remembers, as
 * submissions are made:
 *   - per semaphore, the stage(s) whose completion signals it: a binary
 *     semaphore's last signal (consumed by the wait that follows), a
 *     timeline semaphore's recent signalled values;
 *   - per fence, the last stage of the submission that signals it;
 *   - per queue, the last stage submitted to it.
 * A submission's batch that waits on a semaphore gets the signalling
 * stages as GpuRenderStageEvent.event_wait_ids of its first stage; host
 * waits (host_waits.h) name the stages they waited for.
 *
 * A batch without command buffers passes its waits on: what it signals
 * stands for what it waited on and for the queue's earlier work. A timeline
 * wait whose value no known signal reaches yet (waits may be submitted
 * before their signal) is resolved when the collector writes the stage.
 * Signals by the host (vkSignalSemaphore) are remembered as signals of no
 * stage, so a wait they satisfy names none.
 *
 * Not followed: semaphores and fences signalled by vkAcquireNextImageKHR or
 * vkQueueBindSparse, external (imported) semaphores, so waits across
 * VkDevices; a wait on them names nothing (or, for a binary semaphore
 * reused after a present, the stage that signalled it last).
 *
 * Threads: any application thread, and the collector; one lock per device,
 * held for table work only (no Vulkan call, no packet).
 */
#ifndef GPUTRACE_LAYER_FLOWS_FLOW_SYNC_H
#define GPUTRACE_LAYER_FLOWS_FLOW_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/alloc.h"
#include "layer/timeline.h"

/* Stage ids one signal stands for (more only when a batch without command
 * buffers passes several on). */
#define FS_MAX_IDS    4u
#define FS_MAX_QUEUES 64u
/* Marks a wait carried by a submission's "Submission" span stage. */
#define FS_SPAN UINT32_MAX

typedef struct fs_ids fs_ids;
struct fs_ids {
    uint32_t n;
    uint64_t id[FS_MAX_IDS];
};

/* Adds `id` unless it is there or 0; a full set keeps its first ids. */
void fs_ids_add(fs_ids *set, uint64_t id);

/* A wait of one submission: `entry` (index of the submitted primary, or
 * FS_SPAN) carries stage `id`; id 0 with a semaphore: a timeline wait for
 * `value` not resolved yet. */
typedef struct fs_wait fs_wait;
struct fs_wait {
    uint32_t entry;
    uint64_t id;
    VkSemaphore semaphore;
    uint64_t value;
};

/* The flows of one submission (tl_submission.flow). Its arrays are kept
 * when the submission is reused. */
typedef struct fs_submission fs_submission;
struct fs_submission {
    /* Entry i's "Command buffer" stage gets first_id + i; 0: no ids. */
    uint64_t first_id;
    uint32_t nids;
    uint64_t span_id; /* the "Submission" span stage, 0: none */
    /* Entries after each batch so far (while it is built). */
    uint32_t *batch_end;
    uint32_t nbatches, batches_cap;
    fs_wait *waits;
    uint32_t nwaits, waits_cap;
};

/* A device's table. NULL when out of memory: no flows then. */
typedef struct fs_table fs_table;
fs_table *fs_create(const gt_allocator *alloc);
void fs_destroy(fs_table *t);

/* Object lifetimes (hooks, tracing or not: a semaphore's type is only told
 * at its creation). */
void fs_semaphore_created(fs_table *t, VkSemaphore semaphore, const VkSemaphoreCreateInfo *info);
void fs_semaphore_destroyed(fs_table *t, VkSemaphore semaphore);
void fs_fence_destroyed(fs_table *t, VkFence fence);
/* vkSignalSemaphore: the host set a timeline semaphore to `value`. */
void fs_semaphore_signaled(fs_table *t, VkSemaphore semaphore, uint64_t value);

/* Building a submission: clears it (keeping its arrays), then, while its
 * command buffers are added batch by batch, `fs_batch_end` after each
 * batch with the entries added so far. False when out of memory (the
 * submission then gets no flows). */
void fs_submission_reset(fs_submission *s);
bool fs_batch_end(const gt_allocator *alloc, fs_submission *s, uint32_t nentries);
void fs_submission_free(const gt_allocator *alloc, fs_submission *s);

/* The submission went down (VK_SUCCESS) on queue `queue_slot` with
 * `nentries` primaries and, if `span`, a "Submission" span stage: reserves
 * their ids, resolves each batch's waits into its first stage and records
 * what the batches and the fence signal. */
void fs_submitted(fs_table *t, const gt_allocator *alloc, fs_submission *s, uint32_t queue_slot,
                  const tl_submit *submit, uint32_t nentries, bool span);

/* The ids a stage of `entry` (or FS_SPAN) waited for, written into `out`
 * (at most `cap`): resolved waits, and timeline waits resolved now. */
uint32_t fs_entry_waits(fs_table *t, const fs_submission *s, uint32_t entry, uint64_t *out,
                        uint32_t cap);

/* Host waits: the stages a wait waited for, added to out[0..*n) without
 * repeats (at most `cap`). */
void fs_fence_ids(fs_table *t, VkFence fence, uint64_t *out, uint32_t *n, uint32_t cap);
void fs_value_ids(fs_table *t, VkSemaphore semaphore, uint64_t value, uint64_t *out, uint32_t *n,
                  uint32_t cap);
void fs_queue_ids(fs_table *t, uint32_t queue_slot, uint64_t *out, uint32_t *n, uint32_t cap);
/* Every queue's last stage (vkDeviceWaitIdle). */
void fs_device_ids(fs_table *t, uint64_t *out, uint32_t *n, uint32_t cap);

#endif
