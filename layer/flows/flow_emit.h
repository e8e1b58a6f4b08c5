/* SPDX-License-Identifier: MIT */
/* flow_emit.h — the packets of flows (prefix fe_): the GpuCorrelation a
 * CPU-side TrackEvent carries, the host-wait slice, and the descriptor of
 * the extension that declares GpuCorrelation.
 *
 * Pure encoding like emit.h: no Vulkan calls, no locks; the caller owns the
 * writer. Ids are written unpacked, one varint field each: trace
 * processors (v58) make no flow from a packed list.
 */
#ifndef GPUTRACE_LAYER_FLOWS_FLOW_EMIT_H
#define GPUTRACE_LAYER_FLOWS_FLOW_EMIT_H

#include <stdint.h>

#include "protos/perfetto/track_event.pbc.h"
#include "tracing/trace_writer.h"

/* The stages one vkQueueSubmit submitted: `count` consecutive ids from
 * `first`, and `span` (0: none). */
typedef struct fe_submitted fe_submitted;
struct fe_submitted {
    uint64_t first;
    uint32_t count;
    uint64_t span;
};

/* TrackEvent.gpu_correlation (extension field 3000) on the TrackEvent
 * being written: the stages it submitted and those it waited for (either
 * may be NULL / 0). Nothing when both are empty. */
void fe_correlation(perfetto_protos_TrackEvent *ev, const fe_submitted *submitted,
                    const uint64_t *waited, uint32_t nwaited);

/* TracePacket.extension_descriptor holding the descriptor of
 * gpu_track_event.proto (generated at build time from protos/): Perfetto
 * v47 counts field 3000 as an unknown extension (an error stat) unless the
 * trace declares it. Written where a sequence that uses the field begins,
 * and again with its incremental state. */
void fe_extension_descriptor(tw_writer *tw);

/* A host wait as a slice from `begin` to `end` (BOOTTIME) on a thread's
 * track, named after the call, its end carrying the stages it waited for
 * (on the end, so the stages are known to the reader by then: a reader
 * keeps only the last of several not yet matched waits on one stage). */
void fe_wait_slice(tw_writer *tw, uint64_t begin, uint64_t end, uint64_t track_uuid,
                   const char *name, const uint64_t *waited, uint32_t nwaited);

#endif
