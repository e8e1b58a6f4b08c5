/* SPDX-License-Identifier: MIT */
/* Central buffer, chunk intake: chunks copied from an SMB into the ring
 * (overwriting the oldest records, or refusing in DISCARD mode), the same
 * chunk again after a scrape, and patches to chunks already copied. */
#include <string.h>

#include "tracing/trace_buffer_internal.h"

#define MAX_CHUNK_PAYLOAD (SMB_MAX_PAGE_SIZE - SMB_PAGE_HEADER_SIZE - SMB_CHUNK_HEADER_SIZE)

/* ---- writing ------------------------------------------------------------ */

static void add_padding(cb_buffer *cb, size_t size)
{
    cb_record r = { .size = (uint32_t)size, .is_padding = 1 };
    cb_write_rec(cb, cb->wptr, &r);
    cb->stats.padding_bytes_written += size;
}

/* Would clearing [wptr, wptr + bytes) destroy data nobody has read? A chunk
 * still being written counts as unread: the rest of it would be lost. */
static bool range_has_unread(const cb_buffer *cb, size_t bytes)
{
    size_t off = cb->wptr, end = cb->wptr + bytes;
    while (off < end) {
        cb_record r = cb_read_rec(cb, off);
        if (r.size == 0)
            return false;
        if (!r.is_padding) {
            cb_seq *s = cb_seq_find(cb, r.producer_id, r.writer_id, NULL);
            int64_t i = s ? cb_seq_find_chunk_front(s, r.chunk_id) : -1;
            if (i >= 0) {
                const cb_meta *m = cb_seq_at(s, (uint32_t)i);
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
        cb_record r = cb_read_rec(cb, off);
        if (r.size == 0)
            return 0; /* never-written tail: nothing beyond either */
        if (r.is_padding) {
            cb->stats.padding_bytes_cleared += r.size;
        } else {
            cb_seq *s = cb_seq_find(cb, r.producer_id, r.writer_id, NULL);
            int64_t i = s ? cb_seq_find_chunk_front(s, r.chunk_id) : -1;
            if (i >= 0) {
                cb_meta *m = cb_seq_at(s, (uint32_t)i);
                if (m->num_fragments_read < m->num_fragments || !m->complete) {
                    cb->stats.chunks_overwritten++;
                    cb->stats.bytes_overwritten += r.size;
                    cb_seq_note_lost(s, m->chunk_id);
                    if (m->num_fragments_read > 0) {
                        /* Half-read chunk: the reader must not come back to
                         * a later copy of it and hand out packets twice. */
                        s->positioned = true;
                        s->next_id = m->chunk_id + 1;
                        s->loss_pending = true;
                    }
                }
                cb_seq_remove(s, (uint32_t)i);
                cb_seq_try_release(cb, s); /* a closed one may be done now */
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
        cb_seq_note_lost(s, chunk_id);
}

static void rewrite_chunk(cb_buffer *cb, cb_seq *s, uint32_t idx, uint16_t num_fragments,
                          uint8_t flags, bool complete, const uint8_t *payload, size_t size)
{
    cb_meta *m = cb_seq_at(s, idx);
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
        const cb_meta *n = cb_seq_at(s, idx + 1);
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
    size_t record_size = cb_align16(size + REC_HDR);
    if (size > MAX_CHUNK_PAYLOAD || record_size > cb->size || writer_id == 0 ||
        writer_id > SMB_MAX_WRITER_ID || (size && !payload)) {
        cb->stats.abi_violations++;
        cb_seq *s = writer_id ? cb_seq_find(cb, producer_id, writer_id, NULL) : NULL;
        if (s)
            cb_seq_note_lost(s, chunk_id);
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

    cb_seq *s = cb_seq_get(cb, producer_id, writer_id);
    if (!s) {
        discard_write(cb, NULL, chunk_id);
        return;
    }
    if (s->closed) {
        /* Its producer said it was gone: whoever sends this is confused. */
        cb->stats.abi_violations++;
        return;
    }
    int64_t existing = cb_seq_find_chunk(s, chunk_id);
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
    if (!cb_seq_insert(s, &m)) {
        discard_write(cb, s, chunk_id);
        return;
    }
    cb_record r = {
        .size = (uint32_t)record_size,
        .producer_id = producer_id,
        .chunk_id = chunk_id,
        .writer_id = writer_id,
    };
    cb_write_rec(cb, cb->wptr, &r);
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
    if (!s->any_written || !cb_id_before(chunk_id, s->last_chunk_id_written)) {
        s->last_chunk_id_written = chunk_id;
        s->any_written = true;
    } else {
        cb->stats.chunks_committed_out_of_order++;
    }
}

bool cb_try_patch(cb_buffer *cb, uint32_t producer_id, uint16_t writer_id, uint32_t chunk_id,
                  const smb_patch *patches, size_t n, bool more_patches_pending)
{
    cb_seq *s = cb_seq_find(cb, producer_id, writer_id, NULL);
    int64_t idx = s ? cb_seq_find_chunk(s, chunk_id) : -1;
    if (idx < 0) {
        cb->stats.patches_failed++;
        return false;
    }
    cb_meta *m = cb_seq_at(s, (uint32_t)idx);
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
