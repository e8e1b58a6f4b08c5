/* SPDX-License-Identifier: MIT */
/* Central trace buffer (service side): the ring that completed SMB chunks
 * are copied into, and from which whole packets are read back in per-writer
 * order.
 *
 * Chunk contents are untrusted (they come from a producer's shared memory):
 * sizes, IDs, flags and fragment headers are all checked, and a bad chunk is
 * counted in abi_violations and skipped, never followed out of bounds.
 *
 * Ordering rules (per sequence = producer id + writer id):
 *  - packets come out in chunk-ID order (IDs wrap at 2^32);
 *  - a packet comes out only once all of its fragments are present and
 *    patched;
 *  - a hole in the chunk IDs stops the sequence until it is filled, unless
 *    the missing chunk is known lost (overwritten, discarded, rejected) or
 *    this is the final read (then reading goes on and the next packet is
 *    marked previous_packet_dropped);
 *  - a packet is marked previous_packet_dropped exactly when packets of its
 *    sequence were lost right before it. The first packet of a sequence is
 *    marked only when the oldest chunk seen is not chunk 0 (something came
 *    before it) or starts with a continuation.
 *
 * Memory: a sequence's state lives until its producer is closed
 * (cb_close_producer: nothing more can arrive) and nothing of it is left to
 * read; then it goes, and only its WriterStats stay (a few hundred bytes,
 * at most CB_MAX_RETIRED_SEQUENCES of them) if any of it was read. So what
 * gone producers cost is bounded by what of theirs is still in the ring.
 *
 * Not thread-safe: one owner (the service thread) calls everything. */
#ifndef TRACE_BUFFER_H
#define TRACE_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/smb_abi.h"

typedef enum cb_fill_policy {
    CB_RING_BUFFER = 0, /* overwrite the oldest chunks */
    CB_DISCARD = 1,     /* once full, drop every new chunk */
} cb_fill_policy;

/* TraceStats.BufferStats, same names as the proto fields. */
typedef struct cb_stats {
    uint64_t buffer_size;
    uint64_t bytes_written;
    uint64_t bytes_overwritten;
    uint64_t bytes_read;
    uint64_t padding_bytes_written;
    uint64_t padding_bytes_cleared;
    uint64_t chunks_written;
    uint64_t chunks_rewritten;
    uint64_t chunks_overwritten;
    uint64_t chunks_discarded;
    uint64_t chunks_read;
    uint64_t chunks_committed_out_of_order;
    uint64_t write_wrap_count;
    uint64_t patches_succeeded;
    uint64_t patches_failed;
    uint64_t readaheads_succeeded;
    uint64_t readaheads_failed;
    uint64_t abi_violations;
    uint64_t trace_writer_packet_loss;
    /* TraceStats.invalid_packets: well-framed packets that failed to parse
     * or carried fields only the service may set. */
    uint64_t invalid_packets;
} cb_stats;

/* Upper bounds of the chunk payload histogram of TraceStats.WriterStats
 * (Perfetto's buckets); a final bucket takes everything larger. */
#define CB_HIST_BUCKETS 11
extern const int64_t cb_hist_thresholds[CB_HIST_BUCKETS];

typedef struct cb_writer_stats {
    uint32_t sequence_id;
    uint32_t producer_id;
    uint16_t writer_id;
    uint64_t counts[CB_HIST_BUCKETS];
    int64_t sums[CB_HIST_BUCKETS];
} cb_writer_stats;

typedef struct cb_slice {
    const uint8_t *data;
    size_t size;
} cb_slice;

/* One packet read back. Slices point into the buffer and stay valid until
 * the next write to it. */
typedef struct cb_packet {
    const cb_slice *slices;
    size_t num_slices;
    size_t size; /* sum of the slices */
    uint32_t producer_id;
    uint16_t writer_id;
    uint32_t sequence_id;
    bool previous_packet_dropped;
} cb_packet;

typedef struct cb_buffer cb_buffer;

/* size is rounded down to 16 bytes; at least 4 KiB. first_sequence_id is
 * given to the first sequence seen, then counted up. NULL on OOM. */
cb_buffer *cb_create(size_t size, cb_fill_policy policy, uint32_t first_sequence_id);
void cb_destroy(cb_buffer *cb);

/* Copies a chunk's payload (the bytes after its 8-byte header) in. The
 * header fields are passed separately, already read (once) from the SMB.
 * An incomplete chunk (scraped while still being written) counts only its
 * first num_fragments - 1 fragments; committing it again later with more
 * fragments rewrites it in place. */
void cb_copy_chunk(cb_buffer *cb, uint32_t producer_id, uint16_t writer_id, uint32_t chunk_id,
                   uint16_t num_fragments, uint8_t flags, bool complete, const uint8_t *payload,
                   size_t size);

/* Applies 4-byte patches to a chunk still in the buffer. Clears its
 * needs-patching flag unless more patches are pending. False (and
 * patches_failed) when the chunk is gone or an offset is out of range. */
bool cb_try_patch(cb_buffer *cb, uint32_t producer_id, uint16_t writer_id, uint32_t chunk_id,
                  const smb_patch *patches, size_t n, bool more_patches_pending);

/* Reading: cb_begin_read(), then cb_read_next() until false. No writes in
 * between. `final_read` (end of tracing) stops waiting for missing or
 * unpatched chunks: what cannot be completed is dropped and marked. */
void cb_begin_read(cb_buffer *cb, bool final_read);
bool cb_read_next(cb_buffer *cb, cb_packet *out);

const cb_stats *cb_get_stats(const cb_buffer *cb);
/* For losses that never reach the buffer (writer-side drops). */
void cb_add_trace_writer_packet_loss(cb_buffer *cb, uint64_t n);
/* For commits that could not even be copied (chunk in the wrong state). */
void cb_add_abi_violations(cb_buffer *cb, uint64_t n);

/* Sequences with WriterStats (live or retired), and the i-th of them. */
size_t cb_num_sequences(const cb_buffer *cb);
void cb_get_writer_stats(const cb_buffer *cb, size_t i, cb_writer_stats *out);

/* Nothing more will arrive for `producer_id` (it disconnected, and what it
 * left in its shared memory was copied in). Each of its sequences gives up
 * its reassembly state once it holds nothing unread: at once, or when the
 * reader (from the next cb_begin_read) or the ring's overwrites are done
 * with it. What is in the ring is still read out and counted as before:
 * BufferStats do not change. A sequence any of whose packets or chunks was
 * read keeps its WriterStats (retired). The caller sends nothing more for
 * the producer; a chunk that comes all the same is dropped as an ABI
 * violation while its sequence is still known, else starts a new one. */
void cb_close_producer(cb_buffer *cb, uint32_t producer_id);

/* Retired sequences kept for their WriterStats, at most; beyond, the
 * WriterStats of released sequences are dropped (counted). */
#define CB_MAX_RETIRED_SEQUENCES 4096u

/* What the sequences cost, for the owner's limits and tests. */
typedef struct cb_seq_stats {
    size_t live;                   /* with reassembly state */
    size_t retired;                /* WriterStats only */
    size_t closed;                 /* live, of a closed producer (something unread) */
    uint64_t released;             /* closed sequences whose state went */
    uint64_t writer_stats_dropped; /* released beyond CB_MAX_RETIRED_SEQUENCES */
    size_t bytes;                  /* heap held by sequence state and their index */
} cb_seq_stats;
void cb_get_seq_stats(const cb_buffer *cb, cb_seq_stats *out);

#endif /* TRACE_BUFFER_H */
