/* Field iterator for the checker's two hottest messages (TracePacket's top
 * level and GpuRenderStageEvent). Same contract and the same errors as
 * pb_reader_next (field id 0 or beyond 2^29-1, group/reserved wire types,
 * varints over 10 bytes or 64 bits, lengths past the end), but varints are
 * decoded a 64-bit word at a time: GPU packets are full of 6-10 byte
 * varints (timestamps, Vulkan handles) and the byte loop was a quarter of
 * the run time. Everything else uses pb_reader and the generated views. */
#ifndef TK_FASTPB_H
#define TK_FASTPB_H

#include "protos/pb/pb_reader.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TK_FASTPB_WORDS 1
#else
#define TK_FASTPB_WORDS 0
#endif

static PB_ALWAYS_INLINE const uint8_t *tk_varint(const uint8_t *p, const uint8_t *end,
                                                 uint64_t *out, pb_error *err)
{
#if TK_FASTPB_WORDS
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
            return p + len;
        }
    }
#endif
    if (!pb_read_varint(&p, end, out, err))
        return NULL;
    return p;
}

typedef struct tk_fr {
    const uint8_t *p;
    const uint8_t *end;
    pb_error err;
} tk_fr;

static inline void tk_fr_init(tk_fr *r, const void *data, size_t len)
{
    r->p = (const uint8_t *)data;
    r->end = r->p + len;
    r->err = PB_OK;
}

/* Like pb_reader_next; fills the same pb_field. */
static PB_ALWAYS_INLINE bool tk_fr_next(tk_fr *r, pb_field *f)
{
    if (PB_UNLIKELY(r->p >= r->end))
        return false;
    const uint8_t *p = r->p;
    uint64_t tag;
    if (PB_LIKELY(*p < 0x80)) {
        tag = *p++;
    } else if (PB_LIKELY(r->end - p >= 2 && p[1] < 0x80)) {
        tag = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        p += 2;
    } else {
        p = tk_varint(p, r->end, &tag, &r->err);
        if (PB_UNLIKELY(!p))
            return false;
    }
    const uint64_t id = tag >> 3;
    if (PB_UNLIKELY(id == 0 || id > PB_MAX_FIELD_ID)) {
        r->err = PB_ERR_BAD_FIELD_ID;
        return false;
    }
    f->id = (uint32_t)id;
    f->wire_type = (uint8_t)(tag & 7);
    switch (f->wire_type) {
    case PB_WIRE_VARINT:
        if (PB_LIKELY(p < r->end && *p < 0x80)) {
            f->value = *p++;
        } else {
            p = tk_varint(p, r->end, &f->value, &r->err);
            if (PB_UNLIKELY(!p))
                return false;
        }
        f->data = NULL;
        break;
    case PB_WIRE_LEN: {
        uint64_t len;
        if (PB_LIKELY(p < r->end && *p < 0x80)) {
            len = *p++;
        } else {
            p = tk_varint(p, r->end, &len, &r->err);
            if (PB_UNLIKELY(!p))
                return false;
        }
        if (PB_UNLIKELY(len > (uint64_t)(r->end - p))) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->value = len;
        f->data = p;
        p += len;
        break;
    }
    case PB_WIRE_FIXED64:
        if (PB_UNLIKELY(r->end - p < 8)) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->value = pb_read_fixed64(p);
        f->data = NULL;
        p += 8;
        break;
    case PB_WIRE_FIXED32:
        if (PB_UNLIKELY(r->end - p < 4)) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->value = pb_read_fixed32(p);
        f->data = NULL;
        p += 4;
        break;
    default:
        r->err = PB_ERR_BAD_WIRE_TYPE;
        return false;
    }
    r->p = p;
    return true;
}

/* Length of the varint at p (1..10), or 0 when malformed/truncated. Used to
 * skip values nobody reads without assembling them. */
static PB_ALWAYS_INLINE size_t tk_varint_len(const uint8_t *p, const uint8_t *end)
{
#if TK_FASTPB_WORDS
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
    if (!pb_read_varint(&q, end, &v, &e))
        return 0;
    return (size_t)(q - p);
}

/* Two-step iteration for messages where most varints are not needed:
 * tk_fr_tag() reads the next tag, then exactly one of tk_fr_value() (fills
 * `f` like tk_fr_next) or tk_fr_skip() consumes the field. */
static PB_ALWAYS_INLINE bool tk_fr_tag(tk_fr *r, uint32_t *id, uint8_t *wire_type)
{
    if (PB_UNLIKELY(r->p >= r->end))
        return false;
    uint64_t tag;
    if (PB_LIKELY(*r->p < 0x80)) {
        tag = *r->p++;
    } else if (PB_LIKELY(r->end - r->p >= 2 && r->p[1] < 0x80)) {
        tag = (uint64_t)(r->p[0] & 0x7f) | (uint64_t)r->p[1] << 7;
        r->p += 2;
    } else {
        const uint8_t *p = tk_varint(r->p, r->end, &tag, &r->err);
        if (PB_UNLIKELY(!p))
            return false;
        r->p = p;
    }
    const uint64_t fid = tag >> 3;
    if (PB_UNLIKELY(fid == 0 || fid > PB_MAX_FIELD_ID)) {
        r->err = PB_ERR_BAD_FIELD_ID;
        return false;
    }
    *id = (uint32_t)fid;
    *wire_type = (uint8_t)(tag & 7);
    return true;
}

static PB_ALWAYS_INLINE bool tk_fr_skip(tk_fr *r, uint8_t wire_type)
{
    size_t n;
    uint64_t len;
    switch (wire_type) {
    case PB_WIRE_VARINT:
        n = tk_varint_len(r->p, r->end);
        if (PB_UNLIKELY(!n)) {
            uint64_t v;
            const uint8_t *p = r->p;
            (void)pb_read_varint(&p, r->end, &v, &r->err);
            return false;
        }
        r->p += n;
        return true;
    case PB_WIRE_LEN: {
        const uint8_t *p = tk_varint(r->p, r->end, &len, &r->err);
        if (PB_UNLIKELY(!p))
            return false;
        if (PB_UNLIKELY(len > (uint64_t)(r->end - p))) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        r->p = p + len;
        return true;
    }
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

/* Reads a varint value (the field's wire type must be VARINT). */
static PB_ALWAYS_INLINE bool tk_fr_varint(tk_fr *r, uint64_t *v)
{
    if (PB_LIKELY(r->p < r->end && *r->p < 0x80)) {
        *v = *r->p++;
        return true;
    }
    const uint8_t *p = tk_varint(r->p, r->end, v, &r->err);
    if (PB_UNLIKELY(!p))
        return false;
    r->p = p;
    return true;
}

#endif /* TK_FASTPB_H */
