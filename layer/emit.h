/* SPDX-License-Identifier: MIT */
/* emit.h — the layer's packets, encoded into a trace writer.
 *
 * Pure encoding: no Vulkan calls, no locks; the caller owns the writer (the
 * device's collector thread, or a queue's submitting thread). What goes in
 * each packet, and why, is described in docs/layer.md ("Trace contents").
 */
#ifndef GPUTRACE_LAYER_EMIT_H
#define GPUTRACE_LAYER_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "tracing/trace_writer.h"

/* ClockSnapshot on the device's sequence: the device clock (global id)
 * with BOOTTIME, MONOTONIC and MONOTONIC_RAW at the same instant. */
void em_clock_snapshot(tw_writer *tw, uint32_t clock_id, uint64_t device_ns, uint64_t boottime_ns,
                       uint64_t monotonic_ns, uint64_t monotonic_raw_ns);

typedef struct em_queue_spec em_queue_spec;
struct em_queue_spec {
    uint64_t iid;
    const char *name;
    const char *description;
};

/* InternedData: with `cleared`, the packet starts the sequence's incremental
 * state afresh (SEQ_INCREMENTAL_STATE_CLEARED) and carries the graphics
 * context and every render stage as well as the queues given. */
void em_interned(tw_writer *tw, bool cleared, uint64_t context_iid, int32_t pid,
                 const em_queue_spec *queues, uint32_t nqueues);
/* The same, also marked previous_packet_dropped: events of the sequence
 * were lost before it (the layer dropped them, see docs/layer.md). */
void em_interned_after_loss(tw_writer *tw, bool cleared, uint64_t context_iid, int32_t pid,
                            const em_queue_spec *queues, uint32_t nqueues);

/* Stage names / descriptions for stage_iid (enum tl_stage). */
const char *em_stage_name(uint32_t stage);

/* One extra_data entry of a render stage: both trace processors show these
 * as the slice's arguments. */
typedef struct em_arg em_arg;
struct em_arg {
    const char *name;
    const char *value;
};

typedef struct em_stage_event em_stage_event;
struct em_stage_event {
    uint64_t timestamp; /* device ns */
    uint32_t clock_id;
    uint64_t event_id;
    uint64_t duration;
    uint64_t hw_queue_iid;
    uint64_t stage_iid;
    uint64_t context_iid;
    int32_t gpu_id;
    uint32_t submission_id;
    uint64_t command_buffer;
    uint64_t render_pass;           /* 0: none */
    uint64_t render_target;         /* 0: none */
    const char *name;               /* label text, or NULL */
    const char *api;                /* entry point, or NULL */
    uint64_t collected_boottime_ns; /* 0: none */
    const em_arg *args;             /* extra arguments, or NULL */
    uint32_t nargs;
};
void em_render_stage(tw_writer *tw, const em_stage_event *e);

/* VulkanApiEvent.vk_queue_submit at BOOTTIME `timestamp`, listing the
 * command buffers of `count` batches: exactly one of submits / submits2 is
 * set (vkQueueSubmit or vkQueueSubmit2). */
void em_queue_submit(tw_writer *tw, uint64_t timestamp, uint64_t duration_ns, int32_t pid,
                     int32_t tid, uint64_t queue, uint32_t count, const VkSubmitInfo *submits,
                     const VkSubmitInfo2 *submits2, uint32_t submission_id);

/* InternedData adding one render stage named after a debug label's text
 * (docs/layer.md, "Names"): trace_processor names a slice after its
 * stage. */
void em_label_spec(tw_writer *tw, uint64_t iid, const char *label);

/* VulkanApiEvent.vk_debug_utils_object_name at BOOTTIME `timestamp`: the
 * application named (object_type, object) of `device`. */
void em_object_name(tw_writer *tw, uint64_t timestamp, int32_t pid, uint64_t device,
                    int32_t object_type, uint64_t object, const char *name);

#endif
