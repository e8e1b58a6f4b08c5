/* SPDX-License-Identifier: MIT */
/* The central buffer's insides, shared by its three files (not for users
 * of trace_buffer.h):
 *
 *   trace_buffer.c        sequences (per producer and writer: a deque of
 *                         chunk metadata sorted by chunk ID), their release
 *                         once closed and read, lifecycle and statistics
 *   trace_buffer_write.c  chunk intake: copying chunks into the ring,
 *                         overwriting or discarding old ones, patches
 *   trace_buffer_read.c   reading out: fragments reassembled into packets
 *                         in chunk ID order, loss marked
 *
 * Ring layout: records of [16-byte header][chunk payload], each a multiple
 * of 16 bytes, back to back. A zero header marks the never-written tail. The
 * write cursor overwrites the oldest records; a padding record fills the end
 * when the next chunk does not fit before it. */
#ifndef TRACE_BUFFER_INTERNAL_H
#define TRACE_BUFFER_INTERNAL_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tracing/trace_buffer.h"

#define REC_HDR 16u

typedef struct cb_record {
    uint32_t size; /* whole record; 0 = never written */
    uint32_t producer_id;
    uint32_t chunk_id;
    uint16_t writer_id;
    uint8_t is_padding;
    uint8_t reserved;
} cb_record;
static_assert(sizeof(cb_record) == REC_HDR, "record header is 16 bytes");

typedef struct cb_meta {
    uint32_t chunk_id;
    uint32_t record_off;
    uint16_t payload_size;
    uint16_t num_fragments;
    uint16_t num_fragments_read;
    uint16_t cur_fragment_offset;
    uint8_t flags;
    bool complete;
} cb_meta;

typedef struct cb_seq {
    uint32_t producer_id;
    uint16_t writer_id;
    uint32_t sequence_id;
    /* Deque (power-of-two ring) sorted by chunk ID, oldest first. */
    cb_meta *metas;
    uint32_t cap, head, len;
    /* Leading metas already consumed: where the reader resumes. */
    uint32_t hint;
    uint32_t last_chunk_id_written;
    bool any_written;
    /* Read cursor: the chunk ID expected next, once positioned. */
    bool positioned;
    uint32_t next_id;
    /* Newest chunk ID known lost (overwritten unread, discarded, rejected). */
    bool has_lost;
    uint32_t lost_upto;
    /* Packets were lost since the last packet handed out. */
    bool loss_pending;
    /* Its producer is closed: nothing more arrives. */
    bool closed;
    /* Closed and done: no reassembly state, kept only for WriterStats. */
    bool retired;
    /* A packet of it was handed out (WriterStats matter even if no chunk
     * was read whole). */
    bool emitted;
    uint64_t hist_count[CB_HIST_BUCKETS];
    int64_t hist_sum[CB_HIST_BUCKETS];
} cb_seq;

struct cb_buffer {
    uint8_t *data;
    size_t size;
    size_t wptr;
    cb_fill_policy policy;
    bool discard_writes;
    cb_stats stats;
    cb_seq **seqs; /* sorted by (producer_id, writer_id) */
    size_t nseqs, cap_seqs;
    size_t num_closed; /* closed, not retired yet */
    size_t num_retired;
    uint64_t seqs_released, writer_stats_dropped;
    uint32_t next_sequence_id;
    bool final_read;
    size_t rd_seq;
    cb_slice *slices;
    size_t cap_slices;
    uint8_t *scratch;
    size_t cap_scratch;
};

/* Chunk IDs wrap; within the few thousand chunks a buffer holds, "a before
 * b" is a signed distance. */
static inline bool cb_id_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static inline size_t cb_align16(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

static inline cb_record cb_read_rec(const cb_buffer *cb, size_t off)
{
    cb_record r;
    memcpy(&r, cb->data + off, sizeof r);
    return r;
}

static inline void cb_write_rec(cb_buffer *cb, size_t off, const cb_record *r)
{
    memcpy(cb->data + off, r, sizeof *r);
}

static inline cb_meta *cb_seq_at(const cb_seq *s, uint32_t i)
{
    return &s->metas[(s->head + i) & (s->cap - 1)];
}

/* Index of chunk `id`, searching from the newest end (patches and rewrites
 * target recent chunks). */
static inline int64_t cb_seq_find_chunk(const cb_seq *s, uint32_t id)
{
    for (uint32_t i = s->len; i > 0; i--) {
        if (cb_seq_at(s, i - 1)->chunk_id == id)
            return (int64_t)(i - 1);
    }
    return -1;
}

/* Same, from the oldest end (overwrites remove the oldest chunks). */
static inline int64_t cb_seq_find_chunk_front(const cb_seq *s, uint32_t id)
{
    for (uint32_t i = 0; i < s->len; i++) {
        if (cb_seq_at(s, i)->chunk_id == id)
            return (int64_t)i;
    }
    return -1;
}

static inline void cb_seq_note_lost(cb_seq *s, uint32_t id)
{
    if (!s->has_lost || cb_id_before(s->lost_upto, id))
        s->lost_upto = id;
    s->has_lost = true;
}

/* ---- trace_buffer.c: sequences ------------------------------------------ */

/* The sequence of (p, w), or NULL; *pos (if given) is its index, or where
 * it would be inserted. */
cb_seq *cb_seq_find(const cb_buffer *cb, uint32_t p, uint16_t w, size_t *pos);
/* The sequence of (p, w), created if new; NULL when out of memory. */
cb_seq *cb_seq_get(cb_buffer *cb, uint32_t p, uint16_t w);
/* Adds chunk metadata in chunk ID order; false when out of memory. */
bool cb_seq_insert(cb_seq *s, const cb_meta *m);
void cb_seq_remove(cb_seq *s, uint32_t idx);
/* Frees what a closed sequence with nothing left to read holds. Never
 * during a read pass. */
void cb_seq_try_release(cb_buffer *cb, cb_seq *s);
/* The same for every closed sequence the reader has finished since. */
void cb_seq_release_read(cb_buffer *cb);

#endif
