/* SPDX-License-Identifier: MIT */
/* Central buffer, reading out: each sequence's chunks walked in chunk ID
 * order, fragments joined into packets (reading ahead across chunks for
 * packets that continue), forged or malformed packets rejected, and every
 * gap reported on the packet after it. */
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "protos/perfetto/trace_packet.pbc.h"
#include "tracing/trace_buffer_internal.h"
#include "tracing/util/util_mem.h"

/* ---- reading ------------------------------------------------------------ */

typedef enum {
    FRAG_OK,
    FRAG_EMPTY,
    FRAG_BAD
} frag_result;

static void chunk_fully_read(cb_buffer *cb, cb_seq *s, const cb_meta *m)
{
    cb->stats.chunks_read++;
    cb->stats.bytes_read += cb_align16((size_t)m->payload_size + REC_HDR);
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

/* Called for every packet: the common case stays a compare. */
static inline bool reserve_slices(cb_buffer *cb, size_t n)
{
    return n <= cb->cap_slices ||
           util_grow_array((void **)&cb->slices, &cb->cap_slices, n, sizeof *cb->slices);
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
    return cb->final_read || (s->has_lost && !cb_id_before(s->lost_upto, id));
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
    cb_meta *head = cb_seq_at(s, s->hint);
    uint32_t expect = head->chunk_id + 1;
    uint32_t last = s->hint + 1;
    const uint8_t *d;
    size_t n;
    for (;; last++, expect++) {
        cb_meta *c = last < s->len ? cb_seq_at(s, last) : NULL;
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
        frag_result fr = next_fragment(cb, s, cb_seq_at(s, i), &d, &n);
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
        cb_meta *m = cb_seq_at(s, s->hint);
        if (s->positioned && cb_id_before(m->chunk_id, s->next_id)) {
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
    cb_seq_release_read(cb);
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
