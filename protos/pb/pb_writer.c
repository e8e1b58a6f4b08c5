/* SPDX-License-Identifier: MIT */
/* Out-of-line parts of the writer: buffer switching (the only slow path),
 * nested-message bookkeeping and packed fields. */
#include "protos/pb/pb_writer.h"

void pb_stream_init(pb_stream *s, const pb_stream_delegate *delegate)
{
    s->write_ptr = s->end = s->begin = NULL;
    s->delegate = delegate;
    s->innermost = NULL;
    s->written_previously = 0;
}

/* Hands off the current buffer. Open messages whose size field sits in it
 * can no longer write there once it is gone, so the delegate decides where
 * their sizes go. */
static void switch_buffer(pb_stream *s)
{
    const pb_stream_delegate *d = s->delegate;
    for (pb_msg *m = s->innermost; m; m = m->parent) {
        if (m->size_field && m->size_field >= s->begin && m->size_field < s->end)
            m->size_field = d->annotate_patch(d->ctx, m->size_field);
    }
    pb_span next = d->new_buffer(d->ctx, s);
    pb_stream_reset(s, next);
}

void pb_stream_extend(pb_stream *s, size_t n)
{
    /* A buffer smaller than what is needed contiguously is left empty: the
     * byte stream is the concatenation of used prefixes, so that is harmless. */
    do {
        switch_buffer(s);
    } while ((size_t)(s->end - s->write_ptr) < n);
}

void pb_stream_write_slow(pb_stream *s, const uint8_t *data, size_t n)
{
    while (n) {
        size_t avail = (size_t)(s->end - s->write_ptr);
        if (avail == 0) {
            switch_buffer(s);
            continue;
        }
        size_t chunk = n < avail ? n : avail;
        memcpy(s->write_ptr, data, chunk);
        s->write_ptr += chunk;
        data += chunk;
        n -= chunk;
    }
}

void pb__msg_begin_nested_slow(pb_msg *parent, uint32_t field_id, pb_msg *child)
{
    pb_stream *s = parent->stream;
    while (s->innermost && s->innermost != parent)
        pb_msg_end(s->innermost);
    assert(s->innermost == parent && !parent->finalized);

    /* Tag and size field must be contiguous so the size field never
     * straddles two buffers (it is patched as one unit). */
    size_t need = PB_MAX_TAG_BYTES + PB_SIZE_FIELD_BYTES;
    if ((size_t)(s->end - s->write_ptr) < need)
        pb_stream_extend(s, need);
    /* Now the inline fast path applies. */
    pb_msg_begin_nested(parent, field_id, child);
}

uint32_t pb__msg_end_slow(pb_msg *m)
{
    if (m->finalized)
        return m->size;
    pb_stream *s = m->stream;
    while (s->innermost && s->innermost != m)
        pb_msg_end(s->innermost);
    uint64_t size = pb_stream_bytes_written(s) - m->start;
    if (m->size_field) {
        /* > 256 MiB cannot be expressed in the reserved bytes; clamp so the
         * output stays parseable up to here rather than wrapping. */
        uint32_t sz = size <= PB_MAX_NESTED_SIZE ? (uint32_t)size : PB_MAX_NESTED_SIZE;
        pb_write_redundant_varint(sz, m->size_field);
    }
    m->size = size <= UINT32_MAX ? (uint32_t)size : UINT32_MAX;
    m->finalized = true;
    s->innermost = m->parent;
    return m->size;
}

/* ---- packed repeated ---------------------------------------------------- */

static void append_packed_header(pb_msg *m, uint32_t field_id, size_t payload)
{
    uint8_t hdr[PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e = pb_write_varint(payload, pb_write_varint(pb_make_tag(field_id, PB_WIRE_LEN), hdr));
    pb_msg_append_raw(m, hdr, (size_t)(e - hdr));
}

#define PB_DEFINE_PACKED_VARINT(name, type, to_u64)                  \
    void name(pb_msg *m, uint32_t field_id, const type *v, size_t n) \
    {                                                                \
        size_t payload = 0;                                          \
        for (size_t i = 0; i < n; i++)                               \
            payload += pb_varint_size(to_u64(v[i]));                 \
        append_packed_header(m, field_id, payload);                  \
        for (size_t i = 0; i < n; i++) {                             \
            uint8_t tmp[PB_MAX_VARINT_BYTES];                        \
            uint8_t *e = pb_write_varint(to_u64(v[i]), tmp);         \
            pb_msg_append_raw(m, tmp, (size_t)(e - tmp));            \
        }                                                            \
    }

#define PB_AS_U64(x) ((uint64_t)(x))
/* int32 is sign-extended to 64 bits on the wire, so negatives take 10 bytes. */
#define PB_I32_AS_U64(x)    ((uint64_t)(int64_t)(x))
#define PB_SINT64_AS_U64(x) pb_zigzag_encode64(x)
#define PB_SINT32_AS_U64(x) ((uint64_t)pb_zigzag_encode32(x))

PB_DEFINE_PACKED_VARINT(pb_msg_append_packed_varint_u64, uint64_t, PB_AS_U64)
PB_DEFINE_PACKED_VARINT(pb_msg_append_packed_varint_u32, uint32_t, PB_AS_U64)
PB_DEFINE_PACKED_VARINT(pb_msg_append_packed_varint_i64, int64_t, PB_AS_U64)
PB_DEFINE_PACKED_VARINT(pb_msg_append_packed_varint_i32, int32_t, PB_I32_AS_U64)
PB_DEFINE_PACKED_VARINT(pb_msg_append_packed_sint64, int64_t, PB_SINT64_AS_U64)
PB_DEFINE_PACKED_VARINT(pb_msg_append_packed_sint32, int32_t, PB_SINT32_AS_U64)

void pb_msg_append_packed_fixed32(pb_msg *m, uint32_t field_id, const uint32_t *v, size_t n)
{
    append_packed_header(m, field_id, n * 4);
    for (size_t i = 0; i < n; i++) {
        uint8_t tmp[4];
        pb_write_fixed32(v[i], tmp);
        pb_msg_append_raw(m, tmp, 4);
    }
}

void pb_msg_append_packed_fixed64(pb_msg *m, uint32_t field_id, const uint64_t *v, size_t n)
{
    append_packed_header(m, field_id, n * 8);
    for (size_t i = 0; i < n; i++) {
        uint8_t tmp[8];
        pb_write_fixed64(v[i], tmp);
        pb_msg_append_raw(m, tmp, 8);
    }
}
