/* SPDX-License-Identifier: MIT */
/* Central trace buffer: a byte ring of chunk records plus, per sequence, a
 * deque of chunk metadata sorted by chunk ID (which is what the reader
 * walks). See trace_buffer.h for the ordering and loss rules, and
 * trace_buffer_internal.h for the ring layout and the files. This one has
 * the sequences, their release, and the buffer's lifecycle and stats. */
#include "tracing/trace_buffer.h"

#include <stdlib.h>
#include <string.h>

#include "tracing/trace_buffer_internal.h"
#include "tracing/util/util_mem.h"

#define MIN_BUFFER 4096u

const int64_t cb_hist_thresholds[CB_HIST_BUCKETS] = {
    8, 32, 128, 512, 1024, 2048, 4096, 8192, 12288, 16384, INT64_MAX,
};

/* ---- sequences ---------------------------------------------------------- */

static int key_cmp(uint32_t p1, uint16_t w1, uint32_t p2, uint16_t w2)
{
    if (p1 != p2)
        return p1 < p2 ? -1 : 1;
    return w1 < w2 ? -1 : (w1 > w2);
}

cb_seq *cb_seq_find(const cb_buffer *cb, uint32_t p, uint16_t w, size_t *pos)
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

cb_seq *cb_seq_get(cb_buffer *cb, uint32_t p, uint16_t w)
{
    size_t pos;
    cb_seq *s = cb_seq_find(cb, p, w, &pos);
    if (s)
        return s;
    if (!util_grow_array((void **)&cb->seqs, &cb->cap_seqs, cb->nseqs + 1, sizeof *cb->seqs))
        return NULL;
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
        n[i] = *cb_seq_at(s, i);
    free(s->metas);
    s->metas = n;
    s->cap = ncap;
    s->head = 0;
    return true;
}

bool cb_seq_insert(cb_seq *s, const cb_meta *m)
{
    if (s->len == s->cap && !seq_grow(s))
        return false;
    /* Almost always appended at the back; out-of-order commits shift. */
    uint32_t pos = s->len;
    while (pos > 0 && cb_id_before(m->chunk_id, cb_seq_at(s, pos - 1)->chunk_id))
        pos--;
    for (uint32_t i = s->len; i > pos; i--)
        *cb_seq_at(s, i) = *cb_seq_at(s, i - 1);
    *cb_seq_at(s, pos) = *m;
    s->len++;
    if (pos < s->hint)
        s->hint = pos;
    return true;
}

void cb_seq_remove(cb_seq *s, uint32_t idx)
{
    if (idx == 0) {
        s->head = (s->head + 1) & (s->cap - 1);
    } else {
        for (uint32_t i = idx; i + 1 < s->len; i++)
            *cb_seq_at(s, i) = *cb_seq_at(s, i + 1);
    }
    s->len--;
    if (idx < s->hint)
        s->hint--;
}

/* ---- releasing closed sequences ------------------------------------------ */

/* A chunk the reader has not finished: overwriting it would count as loss,
 * so its sequence must stay to tell. */
static bool seq_has_unread(const cb_seq *s)
{
    for (uint32_t i = 0; i < s->len; i++) {
        const cb_meta *m = cb_seq_at(s, i);
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
void cb_seq_try_release(cb_buffer *cb, cb_seq *s)
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
void cb_seq_release_read(cb_buffer *cb)
{
    for (size_t i = cb->nseqs; cb->num_closed && i > 0; i--) {
        cb_seq *s = cb->seqs[i - 1];
        if (s->closed && !s->retired)
            cb_seq_try_release(cb, s);
    }
}

void cb_close_producer(cb_buffer *cb, uint32_t producer_id)
{
    size_t pos;
    if (!cb_seq_find(cb, producer_id, 0, &pos) && pos == cb->nseqs)
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
        cb_seq_try_release(cb, s);
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
