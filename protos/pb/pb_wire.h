/* SPDX-License-Identifier: MIT */
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

/* pb_strlen() scans with aligned SSE2 loads, which may read past the
 * terminator within the same 16-byte block. Sanitizers would (rightly, for
 * the C abstract machine) report that, so their builds use strlen(). GCC
 * says it builds for a sanitizer with __SANITIZE_*__; clang before 17 only
 * through __has_feature (scripts/run-fuzz builds with clang 14). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PB_WIRE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define PB_WIRE_SANITIZED 1
#endif
#endif
#if defined(__SSE2__) && !defined(PB_WIRE_SANITIZED)
#define PB_WIRE_SSE2_STRLEN 1
#include <emmintrin.h>
#else
#define PB_WIRE_SSE2_STRLEN 0
#endif

#if defined(__GNUC__)
#define PB_LIKELY(x)     __builtin_expect(!!(x), 1)
#define PB_UNLIKELY(x)   __builtin_expect(!!(x), 0)
#define PB_NOINLINE      __attribute__((noinline))
#define PB_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PB_LIKELY(x)   (x)
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
#define PB_MAX_TAG_BYTES    5
/* Tag (at most 5 bytes) followed by a varint: the most a scalar field takes. */
#define PB_MAX_SCALAR_FIELD_BYTES (PB_MAX_TAG_BYTES + PB_MAX_VARINT_BYTES)

/* Nested messages reserve their length as a 4-byte "redundant" varint (each
 * byte but the last carries the continuation bit even when the value is
 * small), so the size can be back-filled once known without moving data. */
#define PB_SIZE_FIELD_BYTES 4
#define PB_MAX_NESTED_SIZE  ((1u << (7 * PB_SIZE_FIELD_BYTES)) - 1)

static inline uint32_t pb_make_tag(uint32_t field_id, enum pb_wire_type wt)
{
    return (field_id << 3) | (uint32_t)wt;
}

/* Whether wide little-endian stores may stand in for byte-by-byte writes. */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PB_WIRE_FAST_LE 1
#else
#define PB_WIRE_FAST_LE 0
#endif

static inline size_t pb_varint_size(uint64_t v)
{
    /* One byte per started group of 7 significant bits: ceil(bits / 7),
     * computed as (bits * 9 + 64) / 64, which is exact for bits in 1..64
     * and needs neither a branch nor a division. */
    unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);
    return (size_t)((bits * 9u + 64u) >> 6);
}

/* Writes exactly pb_varint_size(v) bytes at dst; returns the new end. */
static PB_ALWAYS_INLINE uint8_t *pb_write_varint(uint64_t v, uint8_t *dst)
{
    while (v >= 0x80) {
        *dst++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *dst++ = (uint8_t)v;
    return dst;
}

#if PB_WIRE_FAST_LE
/* Moves the 7-bit groups of the low 56 bits of v into the low 7 bits of
 * successive bytes (group i into byte i), in three halving steps: 28-bit
 * halves into 32-bit lanes, 14-bit quarters into 16-bit lanes, 7-bit groups
 * into bytes. Each step moves the upper part of every lane up by adding a
 * multiple of it (x + 3y == (x - y) | y << 2 when y is the upper part), which
 * needs one mask constant per step instead of two. */
static inline uint64_t pb__spread_7bit_groups(uint64_t v)
{
    uint64_t x = (v & 0x000000000fffffffull) + ((v & 0x00fffffff0000000ull) << 4);
    x += 3 * (x & 0x0fffc0000fffc000ull);
    x += x & 0x3f803f803f803f80ull;
    return x;
}
#endif

#if PB_WIRE_FAST_LE
/* Indexed by the position of the top set bit of v|1 (0..63): the varint's
 * length, and the continuation bits of its first eight bytes (0x80 on every
 * byte but the last one of the varint). Two loads replace the arithmetic. */
static const uint8_t pb__varint_len_by_msb[64] = {
    1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10,
};
/* Continuation bits of a varint of 1..8 bytes, and of the first 8 bytes of
 * a longer one. */
#define PB__CONT7(c) c, c, c, c, c, c, c
static const uint64_t pb__varint_cont_by_msb[64] = {
    PB__CONT7(0x0000000000000000ull), /* bits 1..7: 1 byte */
    PB__CONT7(0x0000000000000080ull), /* 2 bytes */
    PB__CONT7(0x0000000000008080ull),
    PB__CONT7(0x0000000000808080ull),
    PB__CONT7(0x0000000080808080ull),
    PB__CONT7(0x0000008080808080ull),
    PB__CONT7(0x0000808080808080ull),
    PB__CONT7(0x0080808080808080ull), /* 8 bytes */
    PB__CONT7(0x8080808080808080ull), /* 9 bytes */
    0x8080808080808080ull,            /* bit 64: 10 bytes */
};
#undef PB__CONT7
#endif

/* Same bytes as pb_write_varint() for v < 2^56 (tags, lengths), but writes
 * 8 bytes whatever the length: dst needs 8 writable bytes, those after the
 * varint get junk. The length comes from the bit count instead of a byte
 * loop, so the new end does not wait for the bytes to be produced, and one
 * wide store replaces the loop and its branches. */
static PB_ALWAYS_INLINE uint8_t *pb__write_varint56_padded(uint64_t v, uint8_t *dst)
{
#if PB_WIRE_FAST_LE
    if (__builtin_constant_p(v)) /* e.g. a tag: folds to immediate stores */
        return pb_write_varint(v, dst);
    if (v < 0x80) { /* small values are common: one byte, no arithmetic */
        *dst = (uint8_t)v;
        return dst + 1;
    }
    unsigned msb = 63u ^ (unsigned)__builtin_clzll(v | 1);
    uint64_t x = pb__spread_7bit_groups(v) | pb__varint_cont_by_msb[msb];
    memcpy(dst, &x, 8);
    return dst + pb__varint_len_by_msb[msb];
#else
    return pb_write_varint(v, dst);
#endif
}

/* Same bytes as pb_write_varint(), for any value, but may also scribble over
 * the bytes that follow the varint: dst needs PB_MAX_VARINT_BYTES writable
 * bytes. For the writer's fast paths, which have that slack anyway. */
static PB_ALWAYS_INLINE uint8_t *pb_write_varint_padded(uint64_t v, uint8_t *dst)
{
#if PB_WIRE_FAST_LE
    if (__builtin_constant_p(v))
        return pb_write_varint(v, dst);
    if (v < 0x80) {
        *dst = (uint8_t)v;
        return dst + 1;
    }
    unsigned msb = 63u ^ (unsigned)__builtin_clzll(v | 1);
    uint64_t x = pb__spread_7bit_groups(v) | pb__varint_cont_by_msb[msb];
    memcpy(dst, &x, 8);
    /* Bytes 8 and 9, right for 9- and 10-byte varints (bits 56..63 make the
     * ninth byte, whose bit 7 is then also the continuation bit of a tenth
     * byte of 1) and harmless padding for shorter ones. */
    dst[8] = (uint8_t)(v >> 56);
    dst[9] = 1;
    return dst + pb__varint_len_by_msb[msb];
#else
    return pb_write_varint(v, dst);
#endif
}

/* Writes `v` as exactly PB_SIZE_FIELD_BYTES bytes. `v` must fit in 28 bits. */
static inline void pb_write_redundant_varint(uint32_t v, uint8_t *dst)
{
#if PB_WIRE_FAST_LE
    uint32_t w = (v & 0x7fu) | ((v << 1) & 0x7f00u) | ((v << 2) & 0x7f0000u) |
                 ((v << 3) & 0x7f000000u) | 0x808080u;
    memcpy(dst, &w, 4);
#else
    dst[0] = (uint8_t)((v & 0x7f) | 0x80);
    dst[1] = (uint8_t)(((v >> 7) & 0x7f) | 0x80);
    dst[2] = (uint8_t)(((v >> 14) & 0x7f) | 0x80);
    dst[3] = (uint8_t)((v >> 21) & 0x7f);
#endif
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

/* What pb_put_bytes_field() may write for `len` bytes of data. */
#define PB_MAX_BYTES_FIELD_BYTES(len) (PB_MAX_SCALAR_FIELD_BYTES + (size_t)(len))

/* ---- whole fields at a raw position ----------------------------------------
 * For runs of fields written under one bounds check (pb_msg_reserve() in
 * pb_writer.h): each takes the position, writes the field and returns the new
 * end, so the position stays in a register across the run instead of going
 * back to the stream after every field. Each may scribble past the end it
 * returns, but never beyond PB_MAX_SCALAR_FIELD_BYTES from `p` (bytes fields:
 * that plus `len`), so a run needs the sum of those bounds. */

static PB_ALWAYS_INLINE uint8_t *pb_put_varint_field(uint8_t *p, uint32_t field_id, uint64_t v)
{
    return pb_write_varint_padded(
        v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_VARINT), p));
}

/* pb_put_varint_field() for values known to fit in 32 bits (uint32, sint32,
 * bool): at most 5 bytes, so one 8-byte store and no ninth/tenth byte. */
static PB_ALWAYS_INLINE uint8_t *pb_put_varint32_field(uint8_t *p, uint32_t field_id, uint32_t v)
{
    return pb__write_varint56_padded(
        v, pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_VARINT), p));
}

static PB_ALWAYS_INLINE uint8_t *pb_put_fixed32_field(uint8_t *p, uint32_t field_id, uint32_t v)
{
    return pb_write_fixed32(v,
                            pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_FIXED32), p));
}

static PB_ALWAYS_INLINE uint8_t *pb_put_fixed64_field(uint8_t *p, uint32_t field_id, uint64_t v)
{
    return pb_write_fixed64(v,
                            pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_FIXED64), p));
}

/* strlen() for the short strings of trace fields, without a library call:
 * a call and a second pass for the copy cost more than encoding all the
 * integers of a typical event. An aligned 16-byte load never crosses a
 * page boundary, so reading the rest of the block holding the terminator
 * cannot fault. */
static PB_ALWAYS_INLINE size_t pb_strlen(const char *str)
{
#if PB_WIRE_SSE2_STRLEN
    uintptr_t block = (uintptr_t)str & ~(uintptr_t)15;
    const __m128i zero = _mm_setzero_si128();
    unsigned nul =
        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128((const __m128i *)block), zero));
    nul >>= (unsigned)((uintptr_t)str & 15); /* bytes before str don't count */
    while (!nul) {
        block += 16;
        nul = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_load_si128((const __m128i *)block), zero));
        if (nul)
            return (size_t)(block - (uintptr_t)str) + (size_t)__builtin_ctz(nul);
    }
    return (size_t)__builtin_ctz(nul);
#else
    return strlen(str);
#endif
}

/* memcpy() without a call for the common 16..32-byte strings: two
 * overlapping 16-byte moves cover any length in that range, and no byte
 * outside [dst, dst + n) is read or written. */
static PB_ALWAYS_INLINE void pb__copy_short(uint8_t *dst, const void *src, size_t n)
{
    const uint8_t *s = (const uint8_t *)src;
#if defined(__GNUC__) && !defined(__clang__)
/* GCC may see a short constant source (e.g. a 3-byte literal) here through
 * inlining and warn about the 16-byte branch, which n rules out. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
    if (n >= 16 && n <= 32) {
        uint8_t a[16], b[16];
        memcpy(a, s, 16);
        memcpy(b, s + n - 16, 16);
        memcpy(dst, a, 16);
        memcpy(dst + n - 16, b, 16);
    } else if (n) { /* an empty field may come with src == NULL */
        memcpy(dst, s, n);
    }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

static PB_ALWAYS_INLINE uint8_t *pb_put_bytes_field(uint8_t *p, uint32_t field_id, const void *data,
                                                    size_t len)
{
    p = pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_LEN), p);
    if (PB_LIKELY(len < 0x80))
        *p++ = (uint8_t)len; /* short strings: skip the varint encoder */
    else
        p = pb__write_varint56_padded(len, p);
    pb__copy_short(p, data, len);
    return p + len;
}

/* Strings pb_put_cstr_field() writes in one pass: shorter than this. */
#define PB_CSTR_RUN_MAX 128u
/* What pb_put_cstr_field() may write (its copy moves 16-byte blocks). */
#define PB_MAX_CSTR_FIELD_BYTES (PB_MAX_SCALAR_FIELD_BYTES + PB_CSTR_RUN_MAX + 16u)

/* A string field whose length is found while it is copied: a one-byte
 * length slot, then 16-byte blocks loaded, stored and scanned for the
 * terminator together, so no separate strlen() pass comes first and the
 * run's bound is a constant (PB_MAX_CSTR_FIELD_BYTES). NULL when the
 * string has PB_CSTR_RUN_MAX bytes or more: the caller then writes the run
 * another way (nothing is committed yet). An unaligned load never crosses
 * into the next page (that block goes through the plain path), so reading
 * past the terminator cannot fault; sanitizer builds take the plain path. */
static PB_ALWAYS_INLINE uint8_t *pb_put_cstr_field(uint8_t *p, uint32_t field_id, const char *str)
{
    p = pb__write_varint56_padded(pb_make_tag(field_id, PB_WIRE_LEN), p);
    uint8_t *data = p + 1;
#if PB_WIRE_SSE2_STRLEN
    const __m128i zero = _mm_setzero_si128();
    for (size_t off = 0; off < PB_CSTR_RUN_MAX; off += 16) {
        if (PB_UNLIKELY(((uintptr_t)(str + off) & 4095u) > 4096u - 16u))
            break;
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(str + off));
        _mm_storeu_si128((__m128i *)(void *)(data + off), v);
        const unsigned nul = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero));
        if (nul) {
            const size_t len = off + (size_t)__builtin_ctz(nul);
            if (PB_UNLIKELY(len >= PB_CSTR_RUN_MAX))
                return NULL;
            *p = (uint8_t)len;
            return data + len;
        }
    }
#endif
    size_t len = 0;
    while (len < PB_CSTR_RUN_MAX && str[len])
        len++;
    if (len >= PB_CSTR_RUN_MAX)
        return NULL;
    *p = (uint8_t)len;
    memcpy(data, str, len);
    return data + len;
}

#endif /* PB_WIRE_H */
