/* SPDX-License-Identifier: MIT */
/* Trace writer: one packet sequence, used by one thread at a time. Packets
 * are encoded straight into SMB chunks; a packet larger than what is left
 * in a chunk continues in the next one (continuation flags in the chunk
 * headers), and the size fields of messages left open in a chunk that was
 * already handed to the service travel as patches.
 *
 *     perfetto_protos_TracePacket pkt;
 *     tw_begin_packet(tw, &pkt);
 *     perfetto_protos_TracePacket_set_timestamp(&pkt, ts);
 *     ...nested messages on the caller's stack...
 *     tw_end_packet(tw);
 *
 * When the SMB is full the writer never blocks in SMB_POLICY_DROP mode: the
 * packet goes to a private scratch chunk, is counted as lost, and the first
 * packet that makes it again carries previous_packet_dropped.
 *
 * SMB_POLICY_STALL waits at most stall_timeout_ms for a free chunk, and
 * once per loss episode: a writer that waited in vain drops, without
 * waiting, until it gets a chunk again. So a service that never frees
 * shared memory costs a stalling writer one bounded wait, not one per
 * chunk. tw_cap_stall() lowers the bound for writers whose thread must not
 * wait (the Vulkan layer's application threads: to zero). */
#ifndef TRACE_WRITER_H
#define TRACE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "tracing/smb_arbiter.h"
#include "protos/perfetto/trace_packet.pbc.h"

typedef struct tw_writer tw_writer;

typedef struct tw_config {
    smb_exhausted_policy policy;
    /* SMB_POLICY_STALL: how long to wait for a free chunk before dropping
     * (0: never wait, as SMB_POLICY_DROP). */
    uint32_t stall_timeout_ms;
    uint16_t target_buffer;
} tw_config;

/* Takes a fresh writer ID from the arbiter. NULL when none is left or on
 * OOM. `cfg` may be NULL (drop policy, buffer 0). */
tw_writer *tw_create(smb_arbiter *arb, const tw_config *cfg);
/* Ends an open packet, flushes, gives the writer ID back. */
void tw_destroy(tw_writer *tw);

/* Caps how long this writer may ever wait for a free chunk, whatever
 * policy it was created with (a service chooses that, see producer.h):
 * with 0 it never waits (SMB_POLICY_DROP). Only lowers the bound. By the
 * writer's thread, between packets. */
void tw_cap_stall(tw_writer *tw, uint32_t max_ms);

/* Starts a packet; `pkt` must stay valid until tw_end_packet(). */
void tw_begin_packet(tw_writer *tw, perfetto_protos_TracePacket *pkt);
void tw_end_packet(tw_writer *tw);

/* Hands the current chunk and all written patches to the service now,
 * without waiting for the chunk to fill. Not inside a packet. */
void tw_flush(tw_writer *tw);
/* tw_flush() once no packet has begun for `quiet_ns` (of the caller's
 * clock `now_ns`), and then not again until packets follow. The service can
 * read a chunk's last packet only once the chunk is handed over (a scrape
 * must assume it is still being written), so a sequence that fell silent
 * after a burst would show its last packet only at the end, seconds behind
 * everything else in the file. Call it now and then from the writer's
 * thread, not inside a packet. */
void tw_flush_when_quiet(tw_writer *tw, uint64_t now_ns, uint64_t quiet_ns);

uint16_t tw_writer_id(const tw_writer *tw);
uint32_t tw_writer_gen(const tw_writer *tw);

typedef struct tw_stats {
    uint64_t packets_begun;
    /* Written into the scratch chunk: never reached the SMB. */
    uint64_t packets_dropped;
    /* Started in a chunk, then cut off when no next chunk could be had;
     * the service sees and counts these itself. */
    uint64_t packets_aborted;
    uint64_t chunks_used;
    uint64_t patches_recorded;
} tw_stats;
void tw_get_stats(const tw_writer *tw, tw_stats *out);

#endif /* TRACE_WRITER_H */
