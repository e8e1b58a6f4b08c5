/* SPDX-License-Identifier: MIT */
/* ProtoZero-style protobuf writer: a stream over scattered buffers plus
 * messages that live on the caller's stack.
 *
 * The stream owns one contiguous buffer at a time ({begin, write_ptr, end}).
 * Every write is an inline bounds check and a store; only when the current
 * buffer is full does the single out-of-line slow path ask the delegate for
 * the next one. Nothing on the write path allocates.
 *
 * A nested message reserves PB_SIZE_FIELD_BYTES for its length and writes it
 * when finalized. If the buffer holding that size field is handed off first
 * (for an SMB chunk: committed to the service), the stream tells the delegate
 * the field's address through annotate_patch(); the delegate answers where
 * the size must be written instead (a patch slot it will ship later), or the
 * same address if the old buffer stays writable (heap buffers). */
#ifndef PB_WRITER_H
#define PB_WRITER_H

#include <assert.h>
#include "protos/pb/pb_wire.h"

/* Smallest buffer a delegate may hand out: room for any tag plus a reserved
 * size field, so a nested header always fits in one buffer. */
#define PB_MIN_BUFFER_BYTES 16

typedef struct pb_stream pb_stream;
typedef struct pb_msg pb_msg;

typedef struct pb_span {
    uint8_t *begin;
    uint8_t *end;
} pb_span;

typedef struct pb_stream_delegate {
    /* Returns the next buffer once `stream` has filled its current one. The
     * used part of the old buffer is [stream->begin, stream->write_ptr).
     * Must return at least PB_MIN_BUFFER_BYTES; a delegate out of memory
     * hands out a scratch buffer and records the loss itself. */
    pb_span (*new_buffer)(void *ctx, pb_stream *stream);
    /* `size_field` lies in the buffer about to be handed off and belongs to
     * a message that is still open. Returns where to write the final size
     * instead (never NULL; PB_SIZE_FIELD_BYTES writable bytes). */
    uint8_t *(*annotate_patch)(void *ctx, uint8_t *size_field);
    void *ctx;
} pb_stream_delegate;

struct pb_stream {
    uint8_t *write_ptr;
    uint8_t *end;
    uint8_t *begin;
    const pb_stream_delegate *delegate;
    /* Deepest open message; its parent chain is every open message. */
    pb_msg *innermost;
    /* Bytes in buffers already handed off, for pb_stream_bytes_written(). */
    uint64_t written_previously;
};

struct pb_msg {
    pb_stream *stream;
    pb_msg *parent;
    /* Where the length goes when finalized; NULL for a root message, whose
     * framing (file record, SMB fragment header) is the caller's business. */
    uint8_t *size_field;
    /* Stream position (pb_stream_bytes_written()) where the payload starts.
     * The size is the distance to the position at finalization, so field
     * appenders keep no running count (a per-field read-modify-write that
     * chained every field of a message tree through memory). */
    uint64_t start;
    /* Payload size, nested children included: set by pb_msg_end(). While
     * the message is open, the payload so far is
     * pb_stream_bytes_written(stream) - start. */
    uint32_t size;
    bool finalized;
};

void pb_stream_init(pb_stream *s, const pb_stream_delegate *delegate);
/* Points the stream at `buf` without involving the delegate (e.g. the first
 * chunk a trace writer acquired). */
static inline void pb_stream_reset(pb_stream *s, pb_span buf)
{
    if (s->begin)
        s->written_previously += (uint64_t)(s->write_ptr - s->begin);
    /* Inline: out of line, GCC spilled the span argument to the stack and
     * reloaded it as one 16-byte vector, a store-forwarding stall on every
     * call (once per message in a flat-buffer loop). */
    s->write_ptr = buf.begin;
    s->end = buf.end;
    s->begin = buf.begin;
}

static inline uint64_t pb_stream_bytes_written(const pb_stream *s)
{
    return s->written_previously + (uint64_t)(s->write_ptr - s->begin);
}

/* The one slow path: copies what fits, asks for new buffers, copies the rest. */
void pb_stream_write_slow(pb_stream *s, const uint8_t *data, size_t n);
/* Switches to a fresh buffer with at least `n` contiguous bytes (small n),
 * redirecting the size fields of open messages held in the old one. */
void pb_stream_extend(pb_stream *s, size_t n);

static PB_ALWAYS_INLINE void pb_stream_write(pb_stream *s, const void *data, size_t n)
{
    if (PB_LIKELY((size_t)(s->end - s->write_ptr) >= n)) {
        /* n == 0 may come with NULL pointers; memcpy must not see those. */
        if (n) {
            memcpy(s->write_ptr, data, n);
            s->write_ptr += n;
        }
        return;
    }
    pb_stream_write_slow(s, (const uint8_t *)data, n);
}

/* ---- messages ---------------------------------------------------------- */

/* Out-of-line halves of the inline functions below; not for direct use. */
void pb__msg_begin_nested_slow(pb_msg *parent, uint32_t field_id, pb_msg *child);
uint32_t pb__msg_end_slow(pb_msg *m);

/* Starts a top-level message at the stream's current position. */
static inline void pb_msg_init_root(pb_msg *m, pb_stream *s)
{
    m->stream = s;
    m->parent = NULL;
    m->size_field = NULL;
    m->start = pb_stream_bytes_written(s);
    m->size = 0;
    m->finalized = false;
    s->innermost = m;
}

/* Opens `child` as field `field_id` of `parent`. Any child of `parent` still
 * open is finalized first, as ProtoZero does. */
static PB_ALWAYS_INLINE void pb_msg_begin_nested(pb_msg *parent, uint32_t field_id, pb_msg *child)
{
    pb_stream *s = parent->stream;
    uint8_t *p = s->write_ptr;
    /* Fast path: `parent` is the innermost open message and the tag and
     * the size field fit contiguously (the size field must never straddle
     * two buffers: it is patched as one unit). The padded tag write needs
     * 8 bytes, which PB_MAX_TAG_BYTES + PB_SIZE_FIELD_BYTES covers. */
    if (PB_UNLIKELY(s->innermost != parent ||
                    s->end - p < PB_MAX_TAG_BYTES + PB_SIZE_FIELD_BYTES)) {
        pb__msg_begin_nested_slow(parent, field_id, child);
        return;
    }
    assert(!parent->finalized);
    uint8_t *sf = pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_LEN), p);
    /* Zero until finalized: a patch consumer can tell an unfinished size
     * (first byte 0) from a written one (first byte has 0x80 set). */
    memset(sf, 0, PB_SIZE_FIELD_BYTES);
    child->parent = parent;
    child->size_field = sf;
    child->start = s->written_previously + (uint64_t)(sf + PB_SIZE_FIELD_BYTES - s->begin);
    child->size = 0;
    child->finalized = false;
    s->write_ptr = sf + PB_SIZE_FIELD_BYTES;
    s->innermost = child;
    /* Stored last: GCC otherwise merges it with `parent` into one vector
     * store, which the child's first field then loads half of. */
    child->stream = s;
}

/* Finalizes `m` (and any open descendants): back-fills its size. Returns
 * the payload size. Idempotent. */
static PB_ALWAYS_INLINE uint32_t pb_msg_end(pb_msg *m)
{
    if (m->finalized)
        return m->size;
    pb_stream *s = m->stream;
    uint64_t size = pb_stream_bytes_written(s) - m->start;
    if (PB_UNLIKELY(s->innermost != m || size > PB_MAX_NESTED_SIZE))
        return pb__msg_end_slow(m); /* open descendants, or oversized */
    if (m->size_field)
        pb_write_redundant_varint((uint32_t)size, m->size_field);
    m->size = (uint32_t)size;
    m->finalized = true;
    s->innermost = m->parent;
    return (uint32_t)size;
}

static inline void pb__msg_check_writable(const pb_msg *m)
{
    /* Writing to a message while one of its children is open would
     * interleave bytes; the generated API never does it. (A finalized
     * message is never the innermost one, so this also catches writes after
     * pb_msg_end().) */
    assert(m->stream->innermost == m);
    (void)m;
}

static PB_ALWAYS_INLINE void pb_msg_append_raw(pb_msg *m, const void *data, size_t n)
{
    pb__msg_check_writable(m);
    pb_stream_write(m->stream, data, n);
}

/* ---- runs of fields under one bounds check -------------------------------
 * pb_msg_reserve() returns the write position when the current buffer has
 * `max_bytes` free, else NULL (the caller then takes the per-field appenders
 * above, which switch buffers as needed). The caller writes with the
 * pb_put_*_field() encoders of pb_wire.h, keeping the position in a
 * register, and hands the final position to pb_msg_commit(). Nothing else
 * may touch the stream in between. `max_bytes` is the sum of the encoders'
 * bounds (PB_MAX_SCALAR_FIELD_BYTES per field, plus the length of bytes
 * fields, plus PB_NESTED_HEADER_BYTES per pb_msg_put_nested_begin()). */
static PB_ALWAYS_INLINE uint8_t *pb_msg_reserve(pb_msg *m, size_t max_bytes)
{
    pb__msg_check_writable(m);
    pb_stream *s = m->stream;
    uint8_t *p = s->write_ptr;
    return PB_LIKELY((size_t)(s->end - p) >= max_bytes) ? p : NULL;
}

static PB_ALWAYS_INLINE void pb_msg_commit(pb_msg *m, uint8_t *end)
{
    assert(end >= m->stream->write_ptr && end <= m->stream->end);
    m->stream->write_ptr = end;
}

/* What pb_msg_put_nested_begin() may write: the tag and the size field. */
#define PB_NESTED_HEADER_BYTES (PB_MAX_TAG_BYTES + PB_SIZE_FIELD_BYTES)

/* pb_msg_begin_nested() inside a run: writes the header at `p` (reserved by
 * the run, so the size field lies in one buffer) and opens `child`; the run
 * goes on with the child's fields from the returned position. Its bytes
 * reach the stream with the run's pb_msg_commit() (on any of the messages:
 * they share the stream). `parent` must be the innermost open message. */
static PB_ALWAYS_INLINE uint8_t *pb_msg_put_nested_begin(pb_msg *parent, uint8_t *p,
                                                         uint32_t field_id, pb_msg *child)
{
    pb_stream *s = parent->stream;
    assert(s->innermost == parent && !parent->finalized);
    uint8_t *sf = pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_LEN), p);
    memset(sf, 0, PB_SIZE_FIELD_BYTES); /* unfinished, as in pb_msg_begin_nested() */
    child->parent = parent;
    child->size_field = sf;
    child->start = s->written_previously + (uint64_t)(sf + PB_SIZE_FIELD_BYTES - s->begin);
    child->size = 0;
    child->finalized = false;
    s->innermost = child;
    child->stream = s;
    return sf + PB_SIZE_FIELD_BYTES;
}

/* The scalar appenders below share one shape: when the buffer has room for
 * the largest encoding of the field (PB_MAX_SCALAR_FIELD_BYTES, which also
 * covers the junk the padded varint writers may leave after a tag (up to 8
 * bytes from its start) and a value (up to 10)), the field is encoded in
 * place; otherwise it is encoded into a local array and handed to the slow
 * path. */

/* A tag and a varint. */
static PB_ALWAYS_INLINE void pb_msg_append_varint(pb_msg *m, uint32_t field_id, uint64_t v)
{
    pb__msg_check_writable(m);
    pb_stream *s = m->stream;
    uint8_t *p = s->write_ptr;
    if (PB_LIKELY(s->end - p >= PB_MAX_SCALAR_FIELD_BYTES)) {
        uint8_t *e = pb_write_varint_padded(
            v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_VARINT), p));
        s->write_ptr = e;
        return;
    }
    uint8_t tmp[PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e = pb_write_varint_padded(
        v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_VARINT), tmp));
    pb_stream_write_slow(s, tmp, (size_t)(e - tmp));
}

static PB_ALWAYS_INLINE void pb_msg_append_fixed32(pb_msg *m, uint32_t field_id, uint32_t v)
{
    pb__msg_check_writable(m);
    pb_stream *s = m->stream;
    uint8_t *p = s->write_ptr;
    if (PB_LIKELY(s->end - p >= PB_MAX_SCALAR_FIELD_BYTES)) {
        uint8_t *e = pb_write_fixed32(
            v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_FIXED32), p));
        s->write_ptr = e;
        return;
    }
    uint8_t tmp[PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e =
        pb_write_fixed32(v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_FIXED32), tmp));
    pb_stream_write_slow(s, tmp, (size_t)(e - tmp));
}

static PB_ALWAYS_INLINE void pb_msg_append_fixed64(pb_msg *m, uint32_t field_id, uint64_t v)
{
    pb__msg_check_writable(m);
    pb_stream *s = m->stream;
    uint8_t *p = s->write_ptr;
    if (PB_LIKELY(s->end - p >= PB_MAX_SCALAR_FIELD_BYTES)) {
        uint8_t *e = pb_write_fixed64(
            v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_FIXED64), p));
        s->write_ptr = e;
        return;
    }
    uint8_t tmp[PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e =
        pb_write_fixed64(v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_FIXED64), tmp));
    pb_stream_write_slow(s, tmp, (size_t)(e - tmp));
}

/* Length-delimited field (bytes, string, or a pre-serialized message). */
static PB_ALWAYS_INLINE void pb_msg_append_bytes(pb_msg *m, uint32_t field_id, const void *data,
                                                 size_t len)
{
    pb__msg_check_writable(m);
    pb_stream *s = m->stream;
    uint8_t *p = s->write_ptr;
    size_t avail = (size_t)(s->end - p);
    if (PB_LIKELY(avail >= PB_MAX_SCALAR_FIELD_BYTES && avail - PB_MAX_SCALAR_FIELD_BYTES >= len)) {
        uint8_t *e = pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_LEN), p);
        if (PB_LIKELY(len < 0x80))
            *e++ = (uint8_t)len; /* short strings: skip the varint encoder */
        else
            e = pb__write_varint56_padded(len, e);
        if (len) /* an empty field may come with data == NULL */
            memcpy(e, data, len);
        e += len;
        s->write_ptr = e;
        return;
    }
    uint8_t hdr[PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e = pb__write_varint56_padded(
        len, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_LEN), hdr));
    pb_stream_write_slow(s, hdr, (size_t)(e - hdr));
    pb_stream_write_slow(s, (const uint8_t *)data, len);
}

static inline void pb_msg_append_string(pb_msg *m, uint32_t field_id, const char *str)
{
    pb_msg_append_bytes(m, field_id, str, pb_strlen(str));
}

/* Packed repeated fields from an array; the payload size is computed first so
 * the length prefix is minimal (these are not back-patched). */
void pb_msg_append_packed_varint_u64(pb_msg *m, uint32_t field_id, const uint64_t *v, size_t n);
void pb_msg_append_packed_varint_u32(pb_msg *m, uint32_t field_id, const uint32_t *v, size_t n);
void pb_msg_append_packed_varint_i64(pb_msg *m, uint32_t field_id, const int64_t *v, size_t n);
void pb_msg_append_packed_varint_i32(pb_msg *m, uint32_t field_id, const int32_t *v, size_t n);
void pb_msg_append_packed_sint64(pb_msg *m, uint32_t field_id, const int64_t *v, size_t n);
void pb_msg_append_packed_sint32(pb_msg *m, uint32_t field_id, const int32_t *v, size_t n);
void pb_msg_append_packed_fixed32(pb_msg *m, uint32_t field_id, const uint32_t *v, size_t n);
void pb_msg_append_packed_fixed64(pb_msg *m, uint32_t field_id, const uint64_t *v, size_t n);

#endif /* PB_WRITER_H */
