/* SPDX-License-Identifier: MIT */
/* Central trace buffer: a byte ring of chunk records plus, per sequence, a
 * deque of chunk metadata sorted by chunk ID (which is what the reader
 * walks). See trace_buffer.h for the ordering and loss rules.
 *
 * (long: the write path's hot loop — chunk intake, patching and read-out —
 * stays in one file. Split into intake, read-out and sequence files with
 * identical function bodies, bench_smb lost 20 % at 4 KiB packets and 8 %
 * at 256 B (medians of 6 interleaved runs, docs/BENCHMARKS.md); the cause
 * is code placement and inlining across the split, which nothing in the
 * source controls. Sections below keep the three concerns apart.)
 *
 * Ring layout: records of [16-byte header][chunk payload], each a multiple
 * of 16 bytes, back to back. A zero header marks the never-written tail. The
 * write cursor overwrites the oldest records; a padding record fills the end
 * when the next chunk does not fit before it. */
#include "tracing/trace_buffer.h"

#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "protos/perfetto/trace_packet.pbc.h"

#define REC_HDR           16u
#define MIN_BUFFER        4096u
#define MAX_CHUNK_PAYLOAD (SMB_MAX_PAGE_SIZE - SMB_PAGE_HEADER_SIZE - SMB_CHUNK_HEADER_SIZE)

const int64_t cb_hist_thresholds[CB_HIST_BUCKETS] = {
    8, 32, 128, 512, 1024, 2048, 4096, 8192, 12288, 16384, INT64_MAX,
};

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
static inline bool id_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static inline size_t align16(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

static inline cb_record read_rec(const cb_buffer *cb, size_t off)
{
    cb_record r;
    memcpy(&r, cb->data + off, sizeof r);
    return r;
}

static inline void write_rec(cb_buffer *cb, size_t off, const cb_record *r)
{
    memcpy(cb->data + off, r, sizeof *r);
}

/* ---- sequences ---------------------------------------------------------- */

static inline cb_meta *seq_at(const cb_seq *s, uint32_t i)
{
    return &s->metas[(s->head + i) & (s->cap - 1)];
}

static int key_cmp(uint32_t p1, uint16_t w1, uint32_t p2, uint16_t w2)
{
    if (p1 != p2)
        return p1 < p2 ? -1 : 1;
    return w1 < w2 ? -1 : (w1 > w2);
}

static cb_seq *find_seq(const cb_buffer *cb, uint32_t p, uint16_t w, size_t *pos)
{
    size_t lo = 0, hi = cb->nseqs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(cb->seqs[mid]->producer_id, cb->seqs[mid]->writer_id, p, w);
        if (c == 0) {
            if (pos)
                *pos = mid;
            return cb->seqs[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pos)
        *pos = lo;
    return NULL;
}

/* Index of `s` in cb->seqs. */
static size_t seq_index(const cb_buffer *cb, const cb_seq *s)
{
    size_t lo = 0, hi = cb->nseqs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(cb->seqs[mid]->producer_id, cb->seqs[mid]->writer_id, s->producer_id,
                    s->writer_id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static cb_seq *get_seq(cb_buffer *cb, uint32_t p, uint16_t w)
{
    size_t pos;
    cb_seq *s = find_seq(cb, p, w, &pos);
    if (s)
        return s;
    if (cb->nseqs == cb->cap_seqs) {
        size_t ncap = cb->cap_seqs ? cb->cap_seqs * 2 : 16;
        cb_seq **n = realloc(cb->seqs, ncap * sizeof *n);
        if (!n)
            return NULL;
        cb->seqs = n;
        cb->cap_seqs = ncap;
    }
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->producer_id = p;
    s->writer_id = w;
    s->sequence_id = cb->next_sequence_id++;
    memmove(&cb->seqs[pos + 1], &cb->seqs[pos], (cb->nseqs - pos) * sizeof *cb->seqs);
    cb->seqs[pos] = s;
    cb->nseqs++;
    /* Keep an in-progress read pass pointing at the same sequence. */
    if (pos < cb->rd_seq)
        cb->rd_seq++;
    return s;
}

static bool seq_grow(cb_seq *s)
{
    /* Small first: a hostile producer may open a sequence per writer ID
     * with one chunk each. */
    uint32_t ncap = s->cap ? s->cap * 2 : 4;
    cb_meta *n = malloc((size_t)ncap * sizeof *n);
    if (!n)
        return false;
    for (uint32_t i = 0; i < s->len; i++)
        n[i] = *seq_at(s, i);
    free(s->metas);
    s->metas = n;
    s->cap = ncap;
    s->head = 0;
    return true;
}

static bool seq_insert(cb_seq *s, const cb_meta *m)
{
    if (s->len == s->cap && !seq_grow(s))
        return false;
    /* Almost always appended at the back; out-of-order commits shift. */
    uint32_t pos = s->len;
    while (pos > 0 && id_before(m->chunk_id, seq_at(s, pos - 1)->chunk_id))
        pos--;
    for (uint32_t i = s->len; i > pos; i--)
        *seq_at(s, i) = *seq_at(s, i - 1);
    *seq_at(s, pos) = *m;
    s->len++;
    if (pos < s->hint)
        s->hint = pos;
    return true;
}

static void seq_remove(cb_seq *s, uint32_t idx)
{
    if (idx == 0) {
        s->head = (s->head + 1) & (s->cap - 1);
    } else {
        for (uint32_t i = idx; i + 1 < s->len; i++)
            *seq_at(s, i) = *seq_at(s, i + 1);
    }
    s->len--;
    if (idx < s->hint)
        s->hint--;
}

/* Index of chunk `id`, searching from the newest end (patches and rewrites
 * target recent chunks). */
static int64_t seq_find(const cb_seq *s, uint32_t id)
{
    for (uint32_t i = s->len; i > 0; i--) {
        if (seq_at(s, i - 1)->chunk_id == id)
            return (int64_t)(i - 1);
    }
    return -1;
}

/* Same, from the oldest end (overwrites remove the oldest chunks). */
static int64_t seq_find_front(const cb_seq *s, uint32_t id)
{
    for (uint32_t i = 0; i < s->len; i++) {
        if (seq_at(s, i)->chunk_id == id)
            return (int64_t)i;
    }
    return -1;
}

static void note_lost(cb_seq *s, uint32_t id)
{
    if (!s->has_lost || id_before(s->lost_upto, id))
        s->lost_upto = id;
    s->has_lost = true;
}

/* ---- releasing closed sequences ------------------------------------------ */

/* A chunk the reader has not finished: overwriting it would count as loss,
 * so its sequence must stay to tell. */
static bool seq_has_unread(const cb_seq *s)
{
    for (uint32_t i = 0; i < s->len; i++) {
        const cb_meta *m = seq_at(s, i);
        if (m->num_fragments_read < m->num_fragments || !m->complete)
            return true;
    }
    return false;
}

static bool seq_has_stats(const cb_seq *s)
{
    if (s->emitted)
        return true;
    for (int b = 0; b < CB_HIST_BUCKETS; b++)
        if (s->hist_count[b])
            return true;
    return false;
}

/* A closed sequence with nothing left to read gives up its reassembly
 * state; its chunk records still in the ring were all read, so losing them
 * to an overwrite counts nothing, with or without it. It stays, retired,
 * only for its WriterStats. Never during a read pass. */
static void try_release(cb_buffer *cb, cb_seq *s)
{
    if (!s->closed || s->retired || seq_has_unread(s))
        return;
    cb->num_closed--;
    cb->seqs_released++;
    free(s->metas);
    s->metas = NULL;
    s->cap = s->len = s->head = s->hint = 0;
    if (seq_has_stats(s)) {
        if (cb->num_retired < CB_MAX_RETIRED_SEQUENCES) {
            s->retired = true;
            cb->num_retired++;
            return;
        }
        cb->writer_stats_dropped++;
    }
    size_t pos = seq_index(cb, s);
    memmove(&cb->seqs[pos], &cb->seqs[pos + 1], (cb->nseqs - pos - 1) * sizeof *cb->seqs);
    cb->nseqs--;
    if (pos < cb->rd_seq)
        cb->rd_seq--;
    free(s);
}

/* Closed sequences the reader has finished since. */
static void release_read_sequences(cb_buffer *cb)
{
    for (size_t i = cb->nseqs; cb->num_closed && i > 0; i--) {
        cb_seq *s = cb->seqs[i - 1];
        if (s->closed && !s->retired)
            try_release(cb, s);
    }
}

void cb_close_producer(cb_buffer *cb, uint32_t producer_id)
{
    size_t pos;
    if (!find_seq(cb, producer_id, 0, &pos) && pos == cb->nseqs)
        return;
    /* Its sequences are contiguous from pos (writer IDs sort after 0);
     * walked backwards, a release only moves entries already visited. */
    size_t end = pos;
    while (end < cb->nseqs && cb->seqs[end]->producer_id == producer_id)
        end++;
    for (size_t i = end; i > pos; i--) {
        cb_seq *s = cb->seqs[i - 1];
        if (s->closed)
            continue;
        s->closed = true;
        cb->num_closed++;
        try_release(cb, s);
    }
}

/* ---- lifecycle ---------------------------------------------------------- */

cb_buffer *cb_create(size_t size, cb_fill_policy policy, uint32_t first_sequence_id)
{
    size &= ~(size_t)15u;
    if (size < MIN_BUFFER || size > UINT32_MAX)
        return NULL;
    cb_buffer *cb = calloc(1, sizeof *cb);
    if (!cb)
        return NULL;
    /* calloc: large sizes come straight from mmap, zero pages on demand. */
    cb->data = calloc(1, size);
    if (!cb->data) {
        free(cb);
        return NULL;
    }
    cb->size = size;
    cb->policy = policy;
    cb->stats.buffer_size = size;
    cb->next_sequence_id = first_sequence_id;
    return cb;
}

void cb_get_seq_stats(const cb_buffer *cb, cb_seq_stats *out)
{
    memset(out, 0, sizeof *out);
    out->retired = cb->num_retired;
    out->live = cb->nseqs - cb->num_retired;
    out->closed = cb->num_closed;
    out->released = cb->seqs_released;
    out->writer_stats_dropped = cb->writer_stats_dropped;
    out->bytes = cb->cap_seqs * sizeof *cb->seqs;
    for (size_t i = 0; i < cb->nseqs; i++)
        out->bytes += sizeof(cb_seq) + (size_t)cb->seqs[i]->cap * sizeof(cb_meta);
}

void cb_destroy(cb_buffer *cb)
{
    if (!cb)
        return;
    for (size_t i = 0; i < cb->nseqs; i++) {
        free(cb->seqs[i]->metas);
        free(cb->seqs[i]);
    }
    free(cb->seqs);
    free(cb->slices);
    free(cb->scratch);
    free(cb->data);
    free(cb);
}

const cb_stats *cb_get_stats(const cb_buffer *cb)
{
    return &cb->stats;
}

void cb_add_trace_writer_packet_loss(cb_buffer *cb, uint64_t n)
{
    cb->stats.trace_writer_packet_loss += n;
}

void cb_add_abi_violations(cb_buffer *cb, uint64_t n)
{
    cb->stats.abi_violations += n;
}

size_t cb_num_sequences(const cb_buffer *cb)
{
    return cb->nseqs;
}

void cb_get_writer_stats(const cb_buffer *cb, size_t i, cb_writer_stats *out)
{
    memset(out, 0, sizeof *out);
    if (i >= cb->nseqs)
        return;
    const cb_seq *s = cb->seqs[i];
    out->sequence_id = s->sequence_id;
    out->producer_id = s->producer_id;
    out->writer_id = s->writer_id;
    memcpy(out->counts, s->hist_count, sizeof out->counts);
    memcpy(out->sums, s->hist_sum, sizeof out->sums);
}

/* ---- writing ------------------------------------------------------------ */

static void add_padding(cb_buffer *cb, size_t size)
{
    cb_record r = { .size = (uint32_t)size, .is_padding = 1 };
    write_rec(cb, cb->wptr, &r);
    cb->stats.padding_bytes_written += size;
}

/* Would clearing [wptr, wptr + bytes) destroy data nobody has read? A chunk
 * still being written counts as unread: the rest of it would be lost. */
static bool range_has_unread(const cb_buffer *cb, size_t bytes)
{
    size_t off = cb->wptr, end = cb->wptr + bytes;
    while (off < end) {
        cb_record r = read_rec(cb, off);
        if (r.size == 0)
            return false;
        if (!r.is_padding) {
            cb_seq *s = find_seq(cb, r.producer_id, r.writer_id, NULL);
            int64_t i = s ? seq_find_front(s, r.chunk_id) : -1;
            if (i >= 0) {
                const cb_meta *m = seq_at(s, (uint32_t)i);
                if (m->num_fragments_read < m->num_fragments || !m->complete)
                    return true;
            }
        }
        off += r.size;
    }
    return false;
}

/* Deletes every record overlapping [wptr, wptr + bytes). Returns how far
 * the last deleted record reaches past that range (to be padded), or -1 if
 * that would lose unread data in DISCARD mode. */
static long delete_next_chunks_for(cb_buffer *cb, size_t bytes)
{
    if (cb->policy == CB_DISCARD && range_has_unread(cb, bytes))
        return -1;
    size_t off = cb->wptr, end = cb->wptr + bytes;
    while (off < end) {
        cb_record r = read_rec(cb, off);
        if (r.size == 0)
            return 0; /* never-written tail: nothing beyond either */
        if (r.is_padding) {
            cb->stats.padding_bytes_cleared += r.size;
        } else {
            cb_seq *s = find_seq(cb, r.producer_id, r.writer_id, NULL);
            int64_t i = s ? seq_find_front(s, r.chunk_id) : -1;
            if (i >= 0) {
                cb_meta *m = seq_at(s, (uint32_t)i);
                if (m->num_fragments_read < m->num_fragments || !m->complete) {
                    cb->stats.chunks_overwritten++;
                    cb->stats.bytes_overwritten += r.size;
                    note_lost(s, m->chunk_id);
                    if (m->num_fragments_read > 0) {
                        /* Half-read chunk: the reader must not come back to
                         * a later copy of it and hand out packets twice. */
                        s->positioned = true;
                        s->next_id = m->chunk_id + 1;
                        s->loss_pending = true;
                    }
                }
                seq_remove(s, (uint32_t)i);
                try_release(cb, s); /* a closed one may be done now */
            }
        }
        off += r.size;
    }
    return (long)(off - end);
}

static void discard_write(cb_buffer *cb, cb_seq *s, uint32_t chunk_id)
{
    cb->discard_writes = true;
    cb->stats.chunks_discarded++;
    if (s)
        note_lost(s, chunk_id);
}

static void rewrite_chunk(cb_buffer *cb, cb_seq *s, uint32_t idx, uint16_t num_fragments,
                          uint8_t flags, bool complete, const uint8_t *payload, size_t size)
{
    cb_meta *m = seq_at(s, idx);
    /* Same chunk again (scraped, then committed): the layout is fixed per
     * page, fragments only grow and flags are only added. Anything else is
     * a confused or hostile producer. */
    if (m->payload_size != size || num_fragments < m->num_fragments ||
        (m->flags & flags) != m->flags || m->num_fragments_read > num_fragments ||
        (m->complete && !complete)) {
        cb->stats.abi_violations++;
        return;
    }
    if (m->num_fragments == num_fragments && m->complete == complete && m->flags == flags)
        return;
    /* Once the reader is inside the next chunk this one is history. */
    if (idx + 1 < s->len) {
        const cb_meta *n = seq_at(s, idx + 1);
        if (n->chunk_id == m->chunk_id + 1 && n->num_fragments_read > 0) {
            cb->stats.abi_violations++;
            return;
        }
    }
    memcpy(cb->data + m->record_off + REC_HDR, payload, size);
    m->num_fragments = num_fragments;
    m->flags = flags;
    m->complete = complete;
    cb->stats.chunks_rewritten++;
}

void cb_copy_chunk(cb_buffer *cb, uint32_t producer_id, uint16_t writer_id, uint32_t chunk_id,
                   uint16_t num_fragments, uint8_t flags, bool complete, const uint8_t *payload,
                   size_t size)
{
    size_t record_size = align16(size + REC_HDR);
    if (size > MAX_CHUNK_PAYLOAD || record_size > cb->size || writer_id == 0 ||
        writer_id > SMB_MAX_WRITER_ID || (size && !payload)) {
        cb->stats.abi_violations++;
        cb_seq *s = writer_id ? find_seq(cb, producer_id, writer_id, NULL) : NULL;
        if (s)
            note_lost(s, chunk_id);
        return;
    }
    flags &= SMB_CHUNK_FLAGS_MASK;
    if (num_fragments > SMB_MAX_PACKETS_PER_CHUNK)
        num_fragments = SMB_MAX_PACKETS_PER_CHUNK;
    if (!complete && num_fragments > 0) {
        /* The last fragment of a chunk still being written may be half
         * done: leave it (and the flags that describe it) for later. */
        num_fragments--;
        flags &= (uint8_t) ~(SMB_CHUNK_LAST_PACKET_CONTINUES | SMB_CHUNK_NEEDS_PATCHING);
    }

    cb_seq *s = get_seq(cb, producer_id, writer_id);
    if (!s) {
        discard_write(cb, NULL, chunk_id);
        return;
    }
    if (s->closed) {
        /* Its producer said it was gone: whoever sends this is confused. */
        cb->stats.abi_violations++;
        return;
    }
    int64_t existing = seq_find(s, chunk_id);
    if (existing >= 0) {
        rewrite_chunk(cb, s, (uint32_t)existing, num_fragments, flags, complete, payload, size);
        return;
    }
    if (cb->discard_writes) {
        discard_write(cb, s, chunk_id);
        return;
    }

    size_t to_end = cb->size - cb->wptr;
    if (record_size > to_end) {
        if (delete_next_chunks_for(cb, to_end) < 0) {
            discard_write(cb, s, chunk_id);
            return;
        }
        add_padding(cb, to_end);
        cb->wptr = 0;
        cb->stats.write_wrap_count++;
    }
    long padding = delete_next_chunks_for(cb, record_size);
    if (padding < 0) {
        discard_write(cb, s, chunk_id);
        return;
    }

    cb_meta m = {
        .chunk_id = chunk_id,
        .record_off = (uint32_t)cb->wptr,
        .payload_size = (uint16_t)size,
        .num_fragments = num_fragments,
        .flags = flags,
        .complete = complete,
    };
    if (!seq_insert(s, &m)) {
        discard_write(cb, s, chunk_id);
        return;
    }
    cb_record r = {
        .size = (uint32_t)record_size,
        .producer_id = producer_id,
        .chunk_id = chunk_id,
        .writer_id = writer_id,
    };
    write_rec(cb, cb->wptr, &r);
    if (size)
        memcpy(cb->data + cb->wptr + REC_HDR, payload, size);
    cb->stats.chunks_written++;
    cb->stats.bytes_written += record_size;
    cb->wptr += record_size;
    if (cb->wptr >= cb->size) {
        cb->wptr = 0;
        cb->stats.write_wrap_count++;
    }
    if (padding > 0)
        add_padding(cb, (size_t)padding);

    /* Newest ID seen, wrap-aware; anything older arrived out of order. */
    if (!s->any_written || !id_before(chunk_id, s->last_chunk_id_written)) {
        s->last_chunk_id_written = chunk_id;
        s->any_written = true;
    } else {
        cb->stats.chunks_committed_out_of_order++;
    }
}

bool cb_try_patch(cb_buffer *cb, uint32_t producer_id, uint16_t writer_id, uint32_t chunk_id,
                  const smb_patch *patches, size_t n, bool more_patches_pending)
{
    cb_seq *s = find_seq(cb, producer_id, writer_id, NULL);
    int64_t idx = s ? seq_find(s, chunk_id) : -1;
    if (idx < 0) {
        cb->stats.patches_failed++;
        return false;
    }
    cb_meta *m = seq_at(s, (uint32_t)idx);
    for (size_t i = 0; i < n; i++) {
        if (m->payload_size < SMB_PACKET_HEADER_SIZE ||
            patches[i].offset > (uint32_t)m->payload_size - SMB_PACKET_HEADER_SIZE) {
            cb->stats.patches_failed++;
            return false;
        }
    }
    uint8_t *payload = cb->data + m->record_off + REC_HDR;
    for (size_t i = 0; i < n; i++)
        memcpy(payload + patches[i].offset, patches[i].data, SMB_PACKET_HEADER_SIZE);
    cb->stats.patches_succeeded += n;
    if (!more_patches_pending)
        m->flags &= (uint8_t)~SMB_CHUNK_NEEDS_PATCHING;
    return true;
}

/* ---- reading ------------------------------------------------------------ */

typedef enum {
    FRAG_OK,
    FRAG_EMPTY,
    FRAG_BAD
} frag_result;

static void chunk_fully_read(cb_buffer *cb, cb_seq *s, const cb_meta *m)
{
    cb->stats.chunks_read++;
    cb->stats.bytes_read += align16((size_t)m->payload_size + REC_HDR);
    int64_t used = m->cur_fragment_offset;
    int b = 0;
    while (used > cb_hist_thresholds[b])
        b++;
    s->hist_count[b]++;
    s->hist_sum[b] += used;
}

/* Consumes the next fragment of `m`. A malformed one (or the writer's
 * drop-packet marker) ends the chunk: nothing after it can be located. */
static frag_result next_fragment(cb_buffer *cb, cb_seq *s, cb_meta *m, const uint8_t **data,
                                 size_t *size)
{
    const uint8_t *payload = cb->data + m->record_off + REC_HDR;
    const uint8_t *end = payload + m->payload_size;
    const uint8_t *p = payload + m->cur_fragment_offset;
    uint32_t fsize = 0;
    size_t hl = p < end ? smb_read_fragment_header(p, end, &fsize) : 0;
    if (!hl || fsize > (size_t)(end - p) - hl) {
        if (hl && fsize == SMB_PACKET_SIZE_DROP_PACKET)
            cb->stats.trace_writer_packet_loss++; /* writer gave up on it */
        else
            cb->stats.abi_violations++;
        m->num_fragments_read = m->num_fragments;
        if (m->complete)
            chunk_fully_read(cb, s, m);
        return FRAG_BAD;
    }
    *data = p + hl;
    *size = fsize;
    m->cur_fragment_offset = (uint16_t)(p + hl + fsize - payload);
    m->num_fragments_read++;
    if (m->num_fragments_read == m->num_fragments && m->complete)
        chunk_fully_read(cb, s, m);
    return fsize ? FRAG_OK : FRAG_EMPTY;
}

/* Service-only TracePacket fields: a producer must not forge them. */
static bool packet_is_valid(const uint8_t *data, size_t size)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, size);
    while (pb_reader_next(&r, &f)) {
        if (f.id == perfetto_protos_TracePacket_FIELD_trusted_uid ||
            f.id == perfetto_protos_TracePacket_FIELD_trusted_packet_sequence_id ||
            f.id == perfetto_protos_TracePacket_FIELD_trusted_pid)
            return false;
    }
    return r.err == PB_OK;
}

static bool reserve_slices(cb_buffer *cb, size_t n)
{
    if (n <= cb->cap_slices)
        return true;
    size_t ncap = cb->cap_slices ? cb->cap_slices : 8;
    while (ncap < n)
        ncap *= 2;
    cb_slice *s = realloc(cb->slices, ncap * sizeof *s);
    if (!s)
        return false;
    cb->slices = s;
    cb->cap_slices = ncap;
    return true;
}

/* Validates and hands out the packet in cb->slices[0..n). False when it
 * was rejected (counted, and the loss marked on the sequence). */
static bool emit(cb_buffer *cb, cb_seq *s, cb_packet *out, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += cb->slices[i].size;
    if (total == 0)
        return false; /* empty packets carry nothing; not a loss */
    bool valid;
    if (n == 1) {
        valid = packet_is_valid(cb->slices[0].data, total);
    } else {
        if (total > cb->cap_scratch) {
            uint8_t *p = realloc(cb->scratch, total);
            if (!p) {
                s->loss_pending = true;
                return false;
            }
            cb->scratch = p;
            cb->cap_scratch = total;
        }
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(cb->scratch + off, cb->slices[i].data, cb->slices[i].size);
            off += cb->slices[i].size;
        }
        valid = packet_is_valid(cb->scratch, total);
    }
    if (!valid) {
        cb->stats.invalid_packets++;
        s->loss_pending = true;
        return false;
    }
    out->slices = cb->slices;
    out->num_slices = n;
    out->size = total;
    out->producer_id = s->producer_id;
    out->writer_id = s->writer_id;
    out->sequence_id = s->sequence_id;
    out->previous_packet_dropped = s->loss_pending;
    s->loss_pending = false;
    s->emitted = true;
    return true;
}

/* Is the chunk expected at `id` gone for good? */
static bool known_lost(const cb_buffer *cb, const cb_seq *s, uint32_t id)
{
    return cb->final_read || (s->has_lost && !id_before(s->lost_upto, id));
}

typedef enum {
    RA_OK,
    RA_WAIT,
    RA_DROPPED
} ra_result;

/* The cursor chunk ends with a fragment that continues in the next chunks:
 * gathers the whole packet if every piece is there. */
static ra_result read_ahead(cb_buffer *cb, cb_seq *s, cb_packet *out)
{
    cb_meta *head = seq_at(s, s->hint);
    uint32_t expect = head->chunk_id + 1;
    uint32_t last = s->hint + 1;
    const uint8_t *d;
    size_t n;
    for (;; last++, expect++) {
        cb_meta *c = last < s->len ? seq_at(s, last) : NULL;
        if (!c || c->chunk_id != expect) {
            if (!known_lost(cb, s, expect)) {
                cb->stats.readaheads_failed++;
                return RA_WAIT;
            }
            goto give_up;
        }
        if (c->num_fragments == 0) {
            if (!c->complete && !cb->final_read) {
                cb->stats.readaheads_failed++;
                return RA_WAIT;
            }
            if (c->complete)
                cb->stats.abi_violations++;
            goto give_up;
        }
        if (!(c->flags & SMB_CHUNK_FIRST_PACKET_CONTINUES) || c->num_fragments_read > 0) {
            cb->stats.abi_violations++; /* the chain does not hold together */
            goto give_up;
        }
        if (c->num_fragments == 1 && (c->flags & SMB_CHUNK_NEEDS_PATCHING)) {
            if (!cb->final_read) {
                cb->stats.readaheads_failed++;
                return RA_WAIT;
            }
            cb->stats.patches_failed++;
            goto give_up;
        }
        if (c->num_fragments == 1 && (c->flags & SMB_CHUNK_LAST_PACKET_CONTINUES))
            continue; /* a middle piece of a packet larger than a chunk */
        break;
    }

    size_t nslices = 0;
    bool corrupt = !reserve_slices(cb, last - s->hint + 1);
    for (uint32_t i = s->hint; i <= last; i++) {
        frag_result fr = next_fragment(cb, s, seq_at(s, i), &d, &n);
        if (fr == FRAG_BAD)
            corrupt = true;
        else if (fr == FRAG_OK && !corrupt)
            cb->slices[nslices++] = (cb_slice){ d, n };
    }
    if (corrupt) {
        s->loss_pending = true;
        return RA_DROPPED;
    }
    cb->stats.readaheads_succeeded++;
    return emit(cb, s, out, nslices) ? RA_OK : RA_DROPPED;

give_up:
    /* Drop the head; its continuations are skipped as orphans later. */
    next_fragment(cb, s, head, &d, &n);
    s->loss_pending = true;
    return RA_DROPPED;
}

static bool read_from_seq(cb_buffer *cb, cb_seq *s, cb_packet *out)
{
    const uint8_t *d;
    size_t n;
    for (;;) {
        if (s->hint >= s->len)
            return false;
        cb_meta *m = seq_at(s, s->hint);
        if (s->positioned && id_before(m->chunk_id, s->next_id)) {
            /* Behind the cursor: consumed, or arrived too late to go out
             * in order (counted as out of order when it was written). */
            m->num_fragments_read = m->num_fragments;
            s->hint++;
            continue;
        }
        if (!s->positioned) {
            /* Writers number chunks from 0: a first chunk with another ID
             * means earlier ones existed and are gone. */
            s->positioned = true;
            s->next_id = m->chunk_id;
            if (m->chunk_id != 0)
                s->loss_pending = true;
        } else if (m->chunk_id != s->next_id) {
            if (!known_lost(cb, s, s->next_id))
                return false; /* a hole that may still fill: wait */
            s->loss_pending = true;
            s->next_id = m->chunk_id;
        }

        if (m->num_fragments_read >= m->num_fragments) {
            if (!m->complete)
                return false; /* more fragments may come */
            s->next_id = m->chunk_id + 1;
            s->hint++;
            continue;
        }
        bool is_last = m->num_fragments_read == m->num_fragments - 1;
        if (m->num_fragments_read == 0 && (m->flags & SMB_CHUNK_FIRST_PACKET_CONTINUES)) {
            /* Tail of a packet whose head is gone. */
            next_fragment(cb, s, m, &d, &n);
            s->loss_pending = true;
            continue;
        }
        if (is_last && (m->flags & SMB_CHUNK_NEEDS_PATCHING)) {
            if (!cb->final_read)
                return false; /* holes not patched yet */
            cb->stats.patches_failed++;
            next_fragment(cb, s, m, &d, &n);
            s->loss_pending = true;
            continue;
        }
        if (is_last && (m->flags & SMB_CHUNK_LAST_PACKET_CONTINUES)) {
            ra_result r = read_ahead(cb, s, out);
            if (r == RA_OK)
                return true;
            if (r == RA_WAIT)
                return false;
            continue;
        }
        frag_result fr = next_fragment(cb, s, m, &d, &n);
        if (fr == FRAG_EMPTY)
            continue;
        if (fr == FRAG_BAD) {
            s->loss_pending = true;
            continue;
        }
        if (!reserve_slices(cb, 1)) {
            s->loss_pending = true;
            continue;
        }
        cb->slices[0] = (cb_slice){ d, n };
        if (emit(cb, s, out, 1))
            return true;
    }
}

void cb_begin_read(cb_buffer *cb, bool final_read)
{
    cb->rd_seq = 0;
    release_read_sequences(cb);
    cb->final_read = final_read;
}

bool cb_read_next(cb_buffer *cb, cb_packet *out)
{
    while (cb->rd_seq < cb->nseqs) {
        if (read_from_seq(cb, cb->seqs[cb->rd_seq], out))
            return true;
        cb->rd_seq++;
    }
    return false;
}
