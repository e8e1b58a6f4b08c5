/* SPDX-License-Identifier: MIT */
/* Helpers shared by the tracing tests: deterministic test packets, a
 * stand-in service loop over an arbiter and a central buffer, and a .pftrace
 * parser. */
#ifndef TT_UTIL_H
#define TT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/smb_arbiter.h"
#include "tracing/smb_service.h"
#include "protos/perfetto/trace.pbc.h"
#include "tracing/trace_buffer.h"
#include "protos/perfetto/trace_packet.pbc.h"
#include "tracing/trace_writer.h"

/* xorshift64*, deterministic per seed. */
uint64_t tt_rand(uint64_t *state);
uint64_t tt_hash3(uint64_t a, uint64_t b, uint64_t c);

/* Payload length of test packet (writer, counter) in a run with `seed`:
 * mostly small, some up to a chunk, a few up to `max`, some empty. */
size_t tt_payload_len(uint64_t seed, uint32_t writer, uint64_t counter, size_t max);
/* Deterministic printable bytes for that packet. */
void tt_payload_fill(uint32_t writer, uint64_t counter, uint8_t *out, size_t len);
bool tt_payload_check(uint32_t writer, uint64_t counter, const uint8_t *p, size_t len);

/* TracePacket{timestamp, for_testing{seq_value=writer, counter, str or
 * payload{nested{single_string}}}}: the nested form leaves two messages
 * open across chunk boundaries, which exercises patches. */
void tt_write_test_packet(tw_writer *tw, uint32_t writer, uint64_t counter, const uint8_t *str,
                          size_t len, bool nested);

typedef struct tt_event {
    uint32_t writer;
    uint64_t counter;
    pb_bytes str;
} tt_event;
/* Extracts a test event from a serialized TracePacket. */
bool tt_decode_test_event(const uint8_t *data, size_t size, tt_event *ev);

/* Stand-in service: take the queued commits, copy and patch. */
void tt_service_drain(smb_arbiter *arb, cb_buffer *cb, smb_commit_batch *batch);

/* Every packet readable from `cb`, each copied into one contiguous block. */
typedef struct tt_cbpkt {
    uint8_t *data;
    size_t size;
    uint32_t sequence_id;
    uint16_t writer_id;
    bool dropped;
} tt_cbpkt;
size_t tt_cb_read_all(cb_buffer *cb, bool final_read, tt_cbpkt **out);
void tt_cbpkts_free(tt_cbpkt *p, size_t n);

/* A parsed .pftrace. */
typedef struct tt_packet {
    const uint8_t *data;
    size_t size;
    perfetto_protos_TracePacket_view v;
} tt_packet;

typedef struct tt_trace {
    uint8_t *buf;
    size_t len;
    tt_packet *pkts;
    size_t n;
} tt_trace;

/* False when the file is unreadable or not a well-formed Trace. */
bool tt_load_trace(const char *path, tt_trace *t);
void tt_free_trace(tt_trace *t);
/* The last TraceStats in the trace and its first BufferStats. */
bool tt_trace_stats(const tt_trace *t, perfetto_protos_TraceStats_view *ts,
                    perfetto_protos_TraceStats_BufferStats_view *bs);

/* A temp file path under $TMPDIR; caller frees. */
char *tt_temp_path(const char *tag);

#endif /* TT_UTIL_H */
