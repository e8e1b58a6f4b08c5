/* SPDX-License-Identifier: MIT */
/* Zero-copy protobuf reader: iterates the fields of one message held in a
 * byte span. Length-delimited fields point into the input; nothing is
 * copied or allocated. Every read is bounds-checked against the span, and a
 * malformed input stops the iteration with an error code instead of reading
 * past the end. Nested messages are entered explicitly, with a depth limit,
 * so hostile inputs cannot recurse the caller to death. */
#ifndef PB_READER_H
#define PB_READER_H

#include "protos/pb/pb_wire.h"

/* Deep enough for every Perfetto message; shallow enough for any stack. */
#define PB_MAX_DEPTH 64

typedef enum pb_error {
    PB_OK = 0,
    PB_ERR_TRUNCATED,       /* a tag, varint, fixed value or payload runs past the end */
    PB_ERR_VARINT_TOO_LONG, /* more than 10 bytes, or bits beyond 64 */
    PB_ERR_BAD_WIRE_TYPE,   /* 3/4 (groups), 6, 7 */
    PB_ERR_BAD_FIELD_ID,    /* 0 or above PB_MAX_FIELD_ID */
    PB_ERR_TOO_DEEP,        /* nesting beyond PB_MAX_DEPTH */
    PB_ERR_WRONG_WIRE_TYPE, /* entering or decoding a field of another type */
} pb_error;

const char *pb_error_str(pb_error err);

typedef struct pb_reader {
    const uint8_t *p;
    const uint8_t *end;
    uint32_t depth;
    pb_error err;
} pb_reader;

typedef struct pb_field {
    uint32_t id;
    uint8_t wire_type;
    /* VARINT: the raw value; FIXED32/FIXED64: the value; LEN: the length. */
    uint64_t value;
    /* LEN only: the payload (points into the input). */
    const uint8_t *data;
} pb_field;

static inline void pb_reader_init(pb_reader *r, const void *data, size_t len)
{
    r->p = (const uint8_t *)data;
    r->end = len ? r->p + len : r->p; /* NULL + 0 is undefined in C */
    r->depth = 0;
    r->err = PB_OK;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PB_VARINT_WORDS 1
#else
#define PB_VARINT_WORDS 0
#endif

/* The byte-at-a-time decoder behind pb_read_varint: every varint the fast
 * paths do not take (over 8 bytes, near the end of the span, big-endian
 * hosts), and the one that tells truncation from overlong encoding. */
static inline bool pb__read_varint_bytes(const uint8_t **pp, const uint8_t *end, uint64_t *out,
                                         pb_error *err)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (PB_UNLIKELY(p >= end)) {
            *err = PB_ERR_TRUNCATED;
            return false;
        }
        uint8_t b = *p++;
        /* The 10th byte may only carry the single top bit. */
        if (PB_UNLIKELY(shift == 63 && b > 1)) {
            *err = PB_ERR_VARINT_TOO_LONG;
            return false;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            *pp = p;
            return true;
        }
    }
    *err = PB_ERR_VARINT_TOO_LONG;
    return false;
}

/* Decodes one varint from [*pp, end). Returns false on truncation or
 * overlong encoding, leaving *pp untouched.
 *
 * Varints of up to 8 bytes with 8 readable bytes behind them are decoded a
 * 64-bit word at a time: GPU packets are full of 6-10 byte varints
 * (timestamps, Vulkan handles), and the byte loop was a quarter of
 * gputrace-check's run time. Longer ones take the byte loop, which also
 * rejects what does not fit in 64 bits. */
static PB_ALWAYS_INLINE bool pb_read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out,
                                            pb_error *err)
{
    const uint8_t *p = *pp;
    if (PB_LIKELY(p < end && *p < 0x80)) {
        *out = *p;
        *pp = p + 1;
        return true;
    }
#if PB_VARINT_WORDS
    if (PB_LIKELY(end - p >= 8)) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t stop = ~w & 0x8080808080808080ull;
        if (PB_LIKELY(stop != 0)) {
            /* Bytes up to the first one without the continuation bit. */
            const unsigned len = ((unsigned)__builtin_ctzll(stop) >> 3) + 1;
            uint64_t x = len == 8 ? w : w & ((1ull << (len * 8)) - 1);
            x &= 0x7f7f7f7f7f7f7f7full;
            /* Squeeze the 7-bit groups together: pairs, quads, octets. */
            x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
            x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
            x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
            *out = x;
            *pp = p + len;
            return true;
        }
    }
#endif
    return pb__read_varint_bytes(pp, end, out, err);
}

/* Length of the well-formed varint at p (1..10), or 0 when it is malformed
 * or truncated: skips values nobody reads without assembling them. */
static PB_ALWAYS_INLINE size_t pb_varint_len(const uint8_t *p, const uint8_t *end)
{
#if PB_VARINT_WORDS
    if (PB_LIKELY(end - p >= 8)) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t stop = ~w & 0x8080808080808080ull;
        if (PB_LIKELY(stop != 0))
            return ((unsigned)__builtin_ctzll(stop) >> 3) + 1;
    }
#endif
    uint64_t v;
    pb_error e = PB_OK;
    const uint8_t *q = p;
    if (!pb__read_varint_bytes(&q, end, &v, &e))
        return 0;
    return (size_t)(q - p);
}

/* A field tag: one byte for ids up to 15, two up to 2047 (nearly every tag
 * of a Perfetto trace), else a general varint. */
static PB_ALWAYS_INLINE bool pb__read_tag(const uint8_t **pp, const uint8_t *end, uint64_t *tag,
                                          pb_error *err)
{
    const uint8_t *p = *pp;
    if (PB_LIKELY(*p < 0x80)) {
        *tag = *p;
        *pp = p + 1;
        return true;
    }
    if (PB_LIKELY(end - p >= 2 && p[1] < 0x80)) {
        *tag = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        *pp = p + 2;
        return true;
    }
    return pb_read_varint(pp, end, tag, err);
}

/* Advances to the next field. Returns false at the end of the span or on
 * error; tell them apart with r->err (PB_OK at a clean end). After an error
 * the reader stays stopped. */
static PB_ALWAYS_INLINE bool pb_reader_next(pb_reader *r, pb_field *f)
{
    if (PB_UNLIKELY(r->p >= r->end || r->err != PB_OK))
        return false;
    const uint8_t *p = r->p;
    uint64_t tag;
    if (PB_UNLIKELY(!pb__read_tag(&p, r->end, &tag, &r->err)))
        return false;
    uint64_t id = tag >> 3;
    if (PB_UNLIKELY(id == 0 || id > PB_MAX_FIELD_ID)) {
        r->err = PB_ERR_BAD_FIELD_ID;
        return false;
    }
    f->id = (uint32_t)id;
    f->wire_type = (uint8_t)(tag & 7);
    switch (f->wire_type) {
    case PB_WIRE_VARINT:
        if (PB_UNLIKELY(!pb_read_varint(&p, r->end, &f->value, &r->err)))
            return false;
        f->data = NULL;
        break;
    case PB_WIRE_LEN: {
        uint64_t len;
        if (PB_UNLIKELY(!pb_read_varint(&p, r->end, &len, &r->err)))
            return false;
        if (PB_UNLIKELY(len > (uint64_t)(r->end - p))) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->value = len;
        f->data = p;
        p += len;
        break;
    }
    case PB_WIRE_FIXED32:
        if (PB_UNLIKELY(r->end - p < 4)) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->value = pb_read_fixed32(p);
        f->data = NULL;
        p += 4;
        break;
    case PB_WIRE_FIXED64:
        if (PB_UNLIKELY(r->end - p < 8)) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->value = pb_read_fixed64(p);
        f->data = NULL;
        p += 8;
        break;
    default:
        r->err = PB_ERR_BAD_WIRE_TYPE;
        return false;
    }
    r->p = p;
    return true;
}

/* Two-step iteration for messages where most values are not needed:
 * pb_reader_tag() reads the next tag, then exactly one of pb_reader_varint()
 * (VARINT fields only) or pb_reader_skip() consumes the value. Errors and
 * the end of the span are reported as by pb_reader_next. */
static PB_ALWAYS_INLINE bool pb_reader_tag(pb_reader *r, uint32_t *id, uint8_t *wire_type)
{
    if (PB_UNLIKELY(r->p >= r->end || r->err != PB_OK))
        return false;
    uint64_t tag;
    if (PB_UNLIKELY(!pb__read_tag(&r->p, r->end, &tag, &r->err)))
        return false;
    const uint64_t fid = tag >> 3;
    if (PB_UNLIKELY(fid == 0 || fid > PB_MAX_FIELD_ID)) {
        r->err = PB_ERR_BAD_FIELD_ID;
        return false;
    }
    *id = (uint32_t)fid;
    *wire_type = (uint8_t)(tag & 7);
    return true;
}

static PB_ALWAYS_INLINE bool pb_reader_varint(pb_reader *r, uint64_t *v)
{
    return pb_read_varint(&r->p, r->end, v, &r->err);
}

static PB_ALWAYS_INLINE bool pb_reader_skip(pb_reader *r, uint8_t wire_type)
{
    size_t n;
    uint64_t len;
    switch (wire_type) {
    case PB_WIRE_VARINT:
        n = pb_varint_len(r->p, r->end);
        if (PB_UNLIKELY(!n)) {
            uint64_t v;
            const uint8_t *p = r->p;
            (void)pb__read_varint_bytes(&p, r->end, &v, &r->err);
            return false;
        }
        r->p += n;
        return true;
    case PB_WIRE_LEN:
        if (PB_UNLIKELY(!pb_read_varint(&r->p, r->end, &len, &r->err)))
            return false;
        if (PB_UNLIKELY(len > (uint64_t)(r->end - r->p))) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        r->p += len;
        return true;
    case PB_WIRE_FIXED64:
        n = 8;
        break;
    case PB_WIRE_FIXED32:
        n = 4;
        break;
    default:
        r->err = PB_ERR_BAD_WIRE_TYPE;
        return false;
    }
    if (PB_UNLIKELY((size_t)(r->end - r->p) < n)) {
        r->err = PB_ERR_TRUNCATED;
        return false;
    }
    r->p += n;
    return true;
}

/* Opens the length-delimited field `f` (read from `parent`) as a nested
 * message. Fails (and sets parent->err) on a non-LEN field or past the
 * depth limit; the parent then stops too, since the input is bad. */
static inline bool pb_reader_enter(pb_reader *parent, const pb_field *f, pb_reader *child)
{
    if (PB_UNLIKELY(f->wire_type != PB_WIRE_LEN)) {
        parent->err = PB_ERR_WRONG_WIRE_TYPE;
        return false;
    }
    if (PB_UNLIKELY(parent->depth + 1 > PB_MAX_DEPTH)) {
        parent->err = PB_ERR_TOO_DEEP;
        return false;
    }
    child->p = f->data;
    child->end = f->data + f->value;
    child->depth = parent->depth + 1;
    child->err = PB_OK;
    return true;
}

/* Scalar views of a field. Callers check the wire type through the
 * generated accessors; these only reinterpret the bits. */
static inline int32_t pb_field_int32(const pb_field *f)
{
    return (int32_t)(uint32_t)f->value;
}
static inline int64_t pb_field_int64(const pb_field *f)
{
    return (int64_t)f->value;
}
static inline uint32_t pb_field_uint32(const pb_field *f)
{
    return (uint32_t)f->value;
}
static inline uint64_t pb_field_uint64(const pb_field *f)
{
    return f->value;
}
static inline bool pb_field_bool(const pb_field *f)
{
    return f->value != 0;
}
static inline int32_t pb_field_sint32(const pb_field *f)
{
    return (int32_t)pb_zigzag_decode64((uint32_t)f->value);
}
static inline int64_t pb_field_sint64(const pb_field *f)
{
    return pb_zigzag_decode64(f->value);
}
static inline float pb_field_float(const pb_field *f)
{
    uint32_t u = (uint32_t)f->value;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline double pb_field_double(const pb_field *f)
{
    double x;
    memcpy(&x, &f->value, sizeof x);
    return x;
}

/* A byte span of a LEN field, for strings (not NUL-terminated) and bytes. */
typedef struct pb_bytes {
    const uint8_t *data;
    size_t size;
} pb_bytes;

static inline pb_bytes pb_field_bytes(const pb_field *f)
{
    pb_bytes b = { f->data, f->wire_type == PB_WIRE_LEN ? (size_t)f->value : 0 };
    return b;
}

/* ---- packed repeated fields --------------------------------------------- */

typedef struct pb_packed_iter {
    const uint8_t *p;
    const uint8_t *end;
    pb_error err;
} pb_packed_iter;

static inline void pb_packed_init(pb_packed_iter *it, const pb_field *f)
{
    it->p = f->data;
    it->end = f->data ? f->data + f->value : NULL;
    it->err = f->wire_type == PB_WIRE_LEN ? PB_OK : PB_ERR_WRONG_WIRE_TYPE;
}

static inline bool pb_packed_next_varint(pb_packed_iter *it, uint64_t *out)
{
    if (it->err != PB_OK || it->p >= it->end)
        return false;
    return pb_read_varint(&it->p, it->end, out, &it->err);
}

static inline bool pb_packed_next_fixed32(pb_packed_iter *it, uint32_t *out)
{
    if (it->err != PB_OK || it->p >= it->end)
        return false;
    if (it->end - it->p < 4) {
        it->err = PB_ERR_TRUNCATED;
        return false;
    }
    *out = pb_read_fixed32(it->p);
    it->p += 4;
    return true;
}

static inline bool pb_packed_next_fixed64(pb_packed_iter *it, uint64_t *out)
{
    if (it->err != PB_OK || it->p >= it->end)
        return false;
    if (it->end - it->p < 8) {
        it->err = PB_ERR_TRUNCATED;
        return false;
    }
    *out = pb_read_fixed64(it->p);
    it->p += 8;
    return true;
}

/* Checks that [data, data+len) is a well-formed sequence of fields (one
 * level; nested payloads are not interpreted). Returns the first error. */
pb_error pb_validate(const void *data, size_t len);

#endif /* PB_READER_H */
