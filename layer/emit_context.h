/* SPDX-License-Identifier: MIT */
/* emit_context.h — packets that say whose the GPU work is (prefix emc_):
 * the GpuInfo list, the application's process and thread tracks, and the
 * vkQueueSubmit slice on the submitting thread's track.
 *
 * Pure encoding like emit.h: no Vulkan calls, no locks; the caller owns the
 * writer. What goes in each packet: docs/layer.md ("Trace contents").
 */
#ifndef GPUTRACE_LAYER_EMIT_CONTEXT_H
#define GPUTRACE_LAYER_EMIT_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layer/flows/flow_emit.h"
#include "tracing/trace_writer.h"

/* One GpuInfo.Gpu.extra_info entry. */
typedef struct emc_kv emc_kv;
struct emc_kv {
    const char *key;
    const char *value;
};

/* One GpuInfo.Gpu; NULL or empty strings are left out (a reader keeps what
 * another packet said about that GPU). */
typedef struct emc_gpu emc_gpu;
struct emc_gpu {
    const char *name;
    const char *vendor;
    const char *model;
    const char *pci_bdf;
    const uint8_t *uuid; /* 16 bytes, or NULL */
    const emc_kv *extra;
    uint32_t nextra;
};

/* GpuInfo listing `n` GPUs: entry i is gpu_id i. */
void emc_gpu_info(tw_writer *tw, uint64_t timestamp, const emc_gpu *gpus, uint32_t n);

/* TrackDescriptor of the process: `cmdline` holds `cmdline_len` bytes of
 * NUL-terminated arguments (as /proc/self/cmdline). `restart`: the packet
 * starts the sequence afresh (SEQ_INCREMENTAL_STATE_CLEARED), for a
 * sequence without interned data whose description begins here: a reader
 * of a flight recorder's window starts it there (tracing/flight_recorder.h). */
void emc_process_track(tw_writer *tw, uint64_t timestamp, uint64_t uuid, int32_t pid,
                       const char *name, const char *cmdline, size_t cmdline_len, bool restart);

/* ProcessTree with the process alone: where Perfetto v47 takes a process's
 * command line from (it reads no cmdline in a ProcessDescriptor). */
void emc_process_tree(tw_writer *tw, uint64_t timestamp, int32_t pid, int32_t ppid,
                      const char *cmdline, size_t cmdline_len);

/* TrackDescriptor of one of its threads, child of the process's track. */
void emc_thread_track(tw_writer *tw, uint64_t timestamp, uint64_t uuid, uint64_t process_uuid,
                      int32_t pid, int32_t tid, const char *name);

/* A "vkQueueSubmit" slice from `begin` to `end` (BOOTTIME) on the thread's
 * track, with the submission's number as argument: two TrackEvents; the
 * first names the stages it submitted (`flow`, may be NULL), see
 * flows/flow_emit.h. */
void emc_submit_slice(tw_writer *tw, uint64_t begin, uint64_t end, uint64_t track_uuid,
                      uint32_t submission_id, const fe_submitted *flow);

#endif
