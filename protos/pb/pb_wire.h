/* Protobuf wire-format primitives shared by the writer, the reader and the
 * generated code: tags, varints, zigzag, little-endian fixed-width values.
 * Encoders are pure: they take a destination and return the new end, so the
 * compiler can keep everything in registers on the hot path. */
#ifndef PB_WIRE_H
#define PB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define PB_LIKELY(x) __builtin_expect(!!(x), 1)
#define PB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PB_NOINLINE __attribute__((noinline))
#define PB_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PB_LIKELY(x) (x)
#define PB_UNLIKELY(x) (x)
#define PB_NOINLINE
#define PB_ALWAYS_INLINE inline
#endif

enum pb_wire_type {
    PB_WIRE_VARINT = 0,
    PB_WIRE_FIXED64 = 1,
    PB_WIRE_LEN = 2,
    PB_WIRE_GROUP_START = 3, /* obsolete groups: never written, rejected on read */
    PB_WIRE_GROUP_END = 4,
    PB_WIRE_FIXED32 = 5,
};

/* Protobuf reserves the top of the field-number space; anything larger than
 * this cannot appear in a valid tag. */
#define PB_MAX_FIELD_ID ((1u << 29) - 1)

#define PB_MAX_VARINT_BYTES 10
#define PB_MAX_TAG_BYTES 5
/* Tag (at most 5 bytes) followed by a varint: the most a scalar field takes. */
#define PB_MAX_SCALAR_FIELD_BYTES (PB_MAX_TAG_BYTES + PB_MAX_VARINT_BYTES)

/* Nested messages reserve their length as a 4-byte "redundant" varint (each
 * byte but the last carries the continuation bit even when the value is
 * small), so the size can be back-filled once known without moving data. */
#define PB_SIZE_FIELD_BYTES 4
#define PB_MAX_NESTED_SIZE ((1u << (7 * PB_SIZE_FIELD_BYTES)) - 1)

static inline uint32_t pb_make_tag(uint32_t field_id, enum pb_wire_type wt)
{
    return (field_id << 3) | (uint32_t)wt;
}

static inline size_t pb_varint_size(uint64_t v)
{
    /* One byte per started group of 7 significant bits. */
    if (v < 0x80)
        return 1;
    int bits = 64 - __builtin_clzll(v);
    return (size_t)((bits + 6) / 7);
}

static PB_ALWAYS_INLINE uint8_t *pb_write_varint(uint64_t v, uint8_t *dst)
{
    while (v >= 0x80) {
        *dst++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *dst++ = (uint8_t)v;
    return dst;
}

/* Writes `v` as exactly PB_SIZE_FIELD_BYTES bytes. `v` must fit in 28 bits. */
static inline void pb_write_redundant_varint(uint32_t v, uint8_t *dst)
{
    dst[0] = (uint8_t)((v & 0x7f) | 0x80);
    dst[1] = (uint8_t)(((v >> 7) & 0x7f) | 0x80);
    dst[2] = (uint8_t)(((v >> 14) & 0x7f) | 0x80);
    dst[3] = (uint8_t)((v >> 21) & 0x7f);
}

static inline uint64_t pb_zigzag_encode64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline uint32_t pb_zigzag_encode32(int32_t v)
{
    return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}

static inline int64_t pb_zigzag_decode64(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *pb_write_fixed32(uint32_t v, uint8_t *dst)
{
    /* Wire order is little-endian; on LE hosts this is one store. */
    dst[0] = (uint8_t)v;
    dst[1] = (uint8_t)(v >> 8);
    dst[2] = (uint8_t)(v >> 16);
    dst[3] = (uint8_t)(v >> 24);
    return dst + 4;
}

static inline uint8_t *pb_write_fixed64(uint64_t v, uint8_t *dst)
{
    pb_write_fixed32((uint32_t)v, dst);
    pb_write_fixed32((uint32_t)(v >> 32), dst + 4);
    return dst + 8;
}

static inline uint32_t pb_read_fixed32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t pb_read_fixed64(const uint8_t *p)
{
    return (uint64_t)pb_read_fixed32(p) | (uint64_t)pb_read_fixed32(p + 4) << 32;
}

static inline uint32_t pb_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline uint64_t pb_double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

#endif /* PB_WIRE_H */
