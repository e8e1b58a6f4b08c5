/* SPDX-License-Identifier: MIT */
/* Byte-exact encodings of the pb writer: every case writes a few fields into
 * a root message and compares the stream with bytes spelled out field by
 * field. Each case runs twice, into one big slice (fast paths only) and
 * into 16-byte slices (slow paths, nested headers pushed to new buffers),
 * and must give the same bytes both times. The wire primitives behind the
 * fast paths (padded varints, varint sizes, redundant varints, zigzag) are
 * checked against straightforward definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_reader.h"
#include "tests/pb/pb_test_util.h"
#include "protos/pb/pb_writer.h"

typedef struct encode_case {
    const char *name;
    void (*write)(pb_msg *root);
    const uint8_t *want;
    size_t want_len;
} encode_case;

#define BYTES(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })

/* ---- scalar varints ------------------------------------------------------- */

static void w_varint_0(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 0);
}
static void w_varint_1(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 1);
}
static void w_varint_127(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 127);
}
static void w_varint_128(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 128);
}
static void w_varint_300(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 300);
}
static void w_varint_2p32(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 1ull << 32);
}
static void w_varint_max(pb_msg *m)
{
    pb_msg_append_varint(m, 1, UINT64_MAX);
}
/* int32 fields sign-extend to 64 bits: a negative value always takes 10. */
static void w_int32_neg1(pb_msg *m)
{
    pb_msg_append_varint(m, 1, (uint64_t)(int64_t)(int32_t)-1);
}
static void w_int32_min(pb_msg *m)
{
    pb_msg_append_varint(m, 1, (uint64_t)(int64_t)INT32_MIN);
}
static void w_sint32(pb_msg *m)
{
    pb_msg_append_varint(m, 1, pb_zigzag_encode32(0));
    pb_msg_append_varint(m, 1, pb_zigzag_encode32(-1));
    pb_msg_append_varint(m, 1, pb_zigzag_encode32(1));
    pb_msg_append_varint(m, 1, pb_zigzag_encode32(-64));
    pb_msg_append_varint(m, 1, pb_zigzag_encode32(INT32_MIN));
}
static void w_sint64(pb_msg *m)
{
    pb_msg_append_varint(m, 2, pb_zigzag_encode64(INT64_MAX));
    pb_msg_append_varint(m, 2, pb_zigzag_encode64(INT64_MIN));
}
/* Values whose length is not known at compile time (through volatile), so
 * the padded encoder is exercised instead of constant folding. */
static volatile uint64_t opaque_vals[] = { 0,          1,          127,        128,
                                           300,        1ull << 32, UINT64_MAX, (1ull << 56) - 1,
                                           1ull << 56, 1ull << 63 };
static void w_varint_opaque(pb_msg *m)
{
    for (size_t i = 0; i < sizeof opaque_vals / sizeof opaque_vals[0]; i++)
        pb_msg_append_varint(m, 3, opaque_vals[i]);
}

/* ---- tags ------------------------------------------------------------------- */

static volatile uint32_t opaque_ids[] = { 15, 16, 2047, 2048, PB_MAX_FIELD_ID };
static void w_tags(pb_msg *m)
{
    for (size_t i = 0; i < sizeof opaque_ids / sizeof opaque_ids[0]; i++)
        pb_msg_append_varint(m, opaque_ids[i], 1);
}

/* ---- fixed width -------------------------------------------------------------- */

static void w_fixed32(pb_msg *m)
{
    pb_msg_append_fixed32(m, 2, 0x12345678u);
}
static void w_fixed64(pb_msg *m)
{
    pb_msg_append_fixed64(m, 3, 0x0102030405060708ull);
}
static void w_float(pb_msg *m)
{
    pb_msg_append_fixed32(m, 4, pb_float_bits(1.0f));
}
static void w_double(pb_msg *m)
{
    pb_msg_append_fixed64(m, 5, pb_double_bits(-2.5));
}
static void w_fixed_bigtag(pb_msg *m)
{
    pb_msg_append_fixed32(m, 16, 0xffffffffu);
    pb_msg_append_fixed64(m, PB_MAX_FIELD_ID, 0);
}

/* ---- length-delimited ------------------------------------------------------------ */

static void w_string(pb_msg *m)
{
    pb_msg_append_string(m, 6, "hi");
}
static void w_empty_string(pb_msg *m)
{
    pb_msg_append_string(m, 7, "");
}
static void w_bytes(pb_msg *m)
{
    pb_msg_append_bytes(m, 8, (const uint8_t[]){ 0x00, 0xff }, 2);
}
static void w_empty_bytes(pb_msg *m)
{
    pb_msg_append_bytes(m, 8, NULL, 0);
}
static void w_raw(pb_msg *m)
{
    pb_msg_append_raw(m, (const uint8_t[]){ 0x08, 0x96, 0x01 }, 3);
}

/* ---- packed ---------------------------------------------------------------------- */

static void w_packed_u64(pb_msg *m)
{
    pb_msg_append_packed_varint_u64(m, 4, (const uint64_t[]){ 1, 300, UINT64_MAX }, 3);
}
static void w_packed_u32(pb_msg *m)
{
    pb_msg_append_packed_varint_u32(m, 4, (const uint32_t[]){ 0, 128, UINT32_MAX }, 3);
}
static void w_packed_i64(pb_msg *m)
{
    pb_msg_append_packed_varint_i64(m, 4, (const int64_t[]){ -1, 5 }, 2);
}
static void w_packed_i32(pb_msg *m)
{
    pb_msg_append_packed_varint_i32(m, 4, (const int32_t[]){ -1, 1 }, 2);
}
static void w_packed_s64(pb_msg *m)
{
    pb_msg_append_packed_sint64(m, 4, (const int64_t[]){ -1, 1, INT64_MIN }, 3);
}
static void w_packed_s32(pb_msg *m)
{
    pb_msg_append_packed_sint32(m, 4, (const int32_t[]){ -1, -64, 63, INT32_MIN }, 4);
}
static void w_packed_f32(pb_msg *m)
{
    pb_msg_append_packed_fixed32(m, 4, (const uint32_t[]){ 1, 0xdeadbeefu }, 2);
}
static void w_packed_f64(pb_msg *m)
{
    pb_msg_append_packed_fixed64(m, 4, (const uint64_t[]){ 0x1122334455667788ull }, 1);
}
static void w_packed_empty(pb_msg *m)
{
    pb_msg_append_packed_varint_u64(m, 4, NULL, 0);
    pb_msg_append_packed_fixed32(m, 5, NULL, 0);
}

/* ---- nested ---------------------------------------------------------------------- */

static void w_nested_5(pb_msg *m)
{
    pb_msg c;
    pb_msg_begin_nested(m, 1, &c);
    pb_msg_append_string(&c, 2, "abc");
    assert_int_equal(pb_msg_end(&c), 5);
}
static void w_nested_3deep(pb_msg *m)
{
    pb_msg a, b, c;
    pb_msg_begin_nested(m, 1, &a);
    pb_msg_begin_nested(&a, 2, &b);
    pb_msg_begin_nested(&b, 3, &c);
    pb_msg_append_varint(&c, 4, 1);
    assert_int_equal(pb_msg_end(&c), 2);
    assert_int_equal(pb_msg_end(&b), 7);
    assert_int_equal(pb_msg_end(&a), 12);
}
static void w_nested_empty(pb_msg *m)
{
    pb_msg c;
    pb_msg_begin_nested(m, 3, &c);
    assert_int_equal(pb_msg_end(&c), 0);
}
static void w_nested_bigtag(pb_msg *m)
{
    pb_msg c;
    pb_msg_begin_nested(m, PB_MAX_FIELD_ID, &c);
    pb_msg_append_varint(&c, 1, 1);
    pb_msg_end(&c);
}
/* Auto-finalization: `a` is still open when its sibling `b` begins, and `b`
 * (with an open child `bc`) when the root ends. */
static pb_msg auto_a, auto_b, auto_bc;
static void w_auto_finalize(pb_msg *m)
{
    pb_msg_begin_nested(m, 1, &auto_a);
    pb_msg_append_varint(&auto_a, 1, 1);
    pb_msg_begin_nested(m, 2, &auto_b);
    assert_true(auto_a.finalized);
    assert_int_equal(auto_a.size, 2);
    pb_msg_append_varint(&auto_b, 1, 2);
    pb_msg_begin_nested(&auto_b, 3, &auto_bc);
    pb_msg_append_varint(&auto_bc, 1, 3);
    /* The harness ends the root next. */
}
/* A grandchild left open is finalized together with its parent when an
 * uncle begins. */
static void w_auto_finalize_deep(pb_msg *m)
{
    pb_msg a, aa, b;
    pb_msg_begin_nested(m, 1, &a);
    pb_msg_begin_nested(&a, 2, &aa);
    pb_msg_append_varint(&aa, 1, 7);
    pb_msg_begin_nested(m, 3, &b);
    assert_true(aa.finalized && a.finalized);
    assert_int_equal(aa.size, 2);
    assert_int_equal(a.size, 7);
    pb_msg_end(&b);
}
/* Ending a parent ends the open children first. */
static void w_end_parent_first(pb_msg *m)
{
    pb_msg a, aa;
    pb_msg_begin_nested(m, 1, &a);
    pb_msg_begin_nested(&a, 2, &aa);
    pb_msg_append_varint(&aa, 1, 7);
    assert_int_equal(pb_msg_end(&a), 7);
    assert_true(aa.finalized);
    pb_msg_append_varint(m, 4, 1);
}

static const encode_case cases[] = {
    { "varint 0", w_varint_0, BYTES(0x08 /* field 1, VARINT */, 0x00) },
    { "varint 1", w_varint_1, BYTES(0x08, 0x01) },
    { "varint 127", w_varint_127, BYTES(0x08, 0x7f) },
    { "varint 128", w_varint_128, BYTES(0x08, 0x80, 0x01) },
    { "varint 300", w_varint_300, BYTES(0x08, 0xac, 0x02) },
    { "varint 2^32", w_varint_2p32, BYTES(0x08, 0x80, 0x80, 0x80, 0x80, 0x10) },
    { "varint UINT64_MAX", w_varint_max,
      BYTES(0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) },
    { "int32 -1", w_int32_neg1,
      BYTES(0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) },
    { "int32 INT32_MIN", w_int32_min,
      BYTES(0x08, 0x80, 0x80, 0x80, 0x80, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01) },
    { "sint32 zigzag", w_sint32,
      BYTES(0x08, 0x00, /* 0 -> 0 */
            0x08, 0x01, /* -1 -> 1 */
            0x08, 0x02, /* 1 -> 2 */
            0x08, 0x7f, /* -64 -> 127 */
            0x08, 0xff, 0xff, 0xff, 0xff, 0x0f) /* INT32_MIN -> 0xffffffff */ },
    { "sint64 zigzag", w_sint64,
      BYTES(0x10, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* MAX -> 2^64-2 */
            0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) /* MIN -> 2^64-1 */ },
    { "varint runtime lengths", w_varint_opaque,
      BYTES(0x18, 0x00,                                                       /* 0 */
            0x18, 0x01,                                                       /* 1 */
            0x18, 0x7f,                                                       /* 127 */
            0x18, 0x80, 0x01,                                                 /* 128 */
            0x18, 0xac, 0x02,                                                 /* 300 */
            0x18, 0x80, 0x80, 0x80, 0x80, 0x10,                               /* 2^32 */
            0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* 2^64-1 */
            0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,             /* 2^56-1 */
            0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,       /* 2^56 */
            0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01) /* 2^63 */ },
    { "tags 1..5 bytes", w_tags,
      BYTES(0x78, 0x01,             /* field 15: (15 << 3) | 0 = 0x78 */
            0x80, 0x01, 0x01,       /* field 16: 0x80 = 128 */
            0xf8, 0x7f, 0x01,       /* field 2047: 16376 */
            0x80, 0x80, 0x01, 0x01, /* field 2048: 16384 */
            0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01) /* field 2^29-1: 0xfffffff8 */ },
    { "fixed32", w_fixed32, BYTES(0x15 /* field 2, I32 */, 0x78, 0x56, 0x34, 0x12) },
    { "fixed64", w_fixed64,
      BYTES(0x19 /* field 3, I64 */, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01) },
    { "float 1.0", w_float, BYTES(0x25 /* field 4, I32 */, 0x00, 0x00, 0x80, 0x3f) },
    { "double -2.5", w_double,
      BYTES(0x29 /* field 5, I64 */, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0) },
    { "fixed, long tags", w_fixed_bigtag,
      BYTES(0x85, 0x01, 0xff, 0xff, 0xff, 0xff, /* field 16, I32 */
            0xf9, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0) /* field max, I64 */ },
    { "string", w_string, BYTES(0x32 /* field 6, LEN */, 0x02 /* length */, 'h', 'i') },
    { "empty string", w_empty_string, BYTES(0x3a /* field 7, LEN */, 0x00) },
    { "bytes", w_bytes, BYTES(0x42 /* field 8, LEN */, 0x02, 0x00, 0xff) },
    { "empty bytes", w_empty_bytes, BYTES(0x42, 0x00) },
    { "raw", w_raw, BYTES(0x08, 0x96, 0x01) },
    { "packed uint64", w_packed_u64,
      BYTES(0x22 /* field 4, LEN */, 0x0d /* 13 payload bytes */, 0x01, 0xac, 0x02, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) },
    { "packed uint32", w_packed_u32,
      BYTES(0x22, 0x08, 0x00, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f) },
    { "packed int64", w_packed_i64,
      BYTES(0x22, 0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x05) },
    { "packed int32 (sign-extended)", w_packed_i32,
      BYTES(0x22, 0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01) },
    { "packed sint64", w_packed_s64,
      BYTES(0x22, 0x0c, 0x01, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) },
    { "packed sint32", w_packed_s32,
      BYTES(0x22, 0x08, 0x01 /* -1 */, 0x7f /* -64 */, 0x7e /* 63 */, 0xff, 0xff, 0xff, 0xff,
            0x0f /* INT32_MIN */) },
    { "packed fixed32", w_packed_f32,
      BYTES(0x22, 0x08, 0x01, 0x00, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde) },
    { "packed fixed64", w_packed_f64,
      BYTES(0x22, 0x08, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11) },
    { "packed empty", w_packed_empty, BYTES(0x22, 0x00, 0x2a, 0x00) },
    { "nested, size 5", w_nested_5,
      BYTES(0x0a /* field 1, LEN */, 0x85, 0x80, 0x80, 0x00 /* 5, redundant varint */, 0x12, 0x03,
            'a', 'b', 'c' /* field 2 = "abc" */) },
    { "nested 3 deep", w_nested_3deep,
      BYTES(0x0a, 0x8c, 0x80, 0x80, 0x00, /* field 1, 12 bytes */
            0x12, 0x87, 0x80, 0x80, 0x00, /*   field 2, 7 bytes */
            0x1a, 0x82, 0x80, 0x80, 0x00, /*     field 3, 2 bytes */
            0x20, 0x01) /*       field 4 = 1 */ },
    { "nested empty", w_nested_empty, BYTES(0x1a, 0x80, 0x80, 0x80, 0x00) },
    { "nested, long tag", w_nested_bigtag,
      BYTES(0xfa, 0xff, 0xff, 0xff, 0x0f, 0x82, 0x80, 0x80, 0x00, 0x08, 0x01) },
    { "auto-finalize on sibling and root end", w_auto_finalize,
      BYTES(0x0a, 0x82, 0x80, 0x80, 0x00, 0x08, 0x01, /* a: field 1 = 1 */
            0x12, 0x89, 0x80, 0x80, 0x00, 0x08, 0x02, /* b (9 bytes): field 1 = 2 */
            0x1a, 0x82, 0x80, 0x80, 0x00, 0x08, 0x03) /*   bc: field 1 = 3 */ },
    { "auto-finalize grandchild", w_auto_finalize_deep,
      BYTES(0x0a, 0x87, 0x80, 0x80, 0x00,             /* a, 7 bytes */
            0x12, 0x82, 0x80, 0x80, 0x00, 0x08, 0x07, /*   aa: field 1 = 7 */
            0x1a, 0x80, 0x80, 0x80, 0x00) /* b, empty */ },
    { "end parent with open child", w_end_parent_first,
      BYTES(0x0a, 0x87, 0x80, 0x80, 0x00, 0x12, 0x82, 0x80, 0x80, 0x00, 0x08, 0x07, 0x20, 0x01) },
};

static void hexdump(const char *label, const uint8_t *p, size_t n)
{
    print_message("%s (%zu bytes):", label, n);
    for (size_t i = 0; i < n; i++)
        print_message("%s%02x", i % 16 ? " " : "\n  ", p[i]);
    print_message("\n");
}

static void run_case(const encode_case *c, size_t slice)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pb_msg root;
    pb_msg_init_root(&root, pb_heap_stream(&h));
    c->write(&root);
    uint32_t size = pb_msg_end(&root);
    size_t n;
    uint8_t *got = pb_heap_dup(&h, &n);
    assert_non_null(got);
    if (n != c->want_len || memcmp(got, c->want, n) != 0) {
        print_message("case '%s', slice %zu:\n", c->name, slice);
        hexdump("got", got, n);
        hexdump("want", c->want, c->want_len);
        fail_msg("encoding of '%s' differs", c->name);
    }
    assert_int_equal(size, n);
    assert_int_equal(pb_stream_bytes_written(pb_heap_stream(&h)), n);
    assert_null(pb_heap_stream(&h)->innermost);
    /* And the reader accepts it. */
    uint8_t *exact = pbt_exact_copy(got, n);
    assert_int_equal(pb_validate(exact, n), PB_OK);
    if (slice >= 4096)
        assert_int_equal(pb_heap_slices_used(&h), 1);
    free(exact);
    free(got);
    pb_heap_free(&h);
}

static void test_encodings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i], 4096);
        run_case(&cases[i], PB_MIN_BUFFER_BYTES);
        run_case(&cases[i], PB_MIN_BUFFER_BYTES + 3);
    }
}

/* Sizes of 128 and more: two-byte length prefixes for bytes, and nested
 * sizes whose redundant varint has several significant groups. */
static void test_long_fields(void **state)
{
    (void)state;
    static uint8_t payload[300];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    static const size_t slices[] = { 16, 23, 4096 };
    for (size_t si = 0; si < sizeof slices / sizeof slices[0]; si++) {
        size_t slice = slices[si];
        pb_heap_buffer h;
        pb_heap_init(&h, slice);
        pb_msg root, c;
        pb_msg_init_root(&root, pb_heap_stream(&h));
        pb_msg_append_bytes(&root, 9, payload, 200);
        pb_msg_begin_nested(&root, 1, &c);
        pb_msg_append_bytes(&c, 1, payload, 294); /* 0x0a 0xa6 0x02 + 294 = 297 */
        pb_msg_append_fixed32(&c, 2, 0);          /* + 5 = 302 */
        assert_int_equal(pb_msg_end(&c), 302);
        pb_msg_end(&root);
        size_t n;
        uint8_t *got = pb_heap_dup(&h, &n);
        assert_int_equal(n, 3 + 200 + 5 + 302);
        /* field 9, LEN; 200 = 0xc8 0x01 */
        assert_memory_equal(got, ((const uint8_t[]){ 0x4a, 0xc8, 0x01 }), 3);
        assert_memory_equal(got + 3, payload, 200);
        /* field 1, LEN; 302 = 0x2e | 2 << 7 -> 0xae 0x82 0x80 0x00 */
        assert_memory_equal(got + 203, ((const uint8_t[]){ 0x0a, 0xae, 0x82, 0x80, 0x00 }), 5);
        assert_memory_equal(got + 208, ((const uint8_t[]){ 0x0a, 0xa6, 0x02 }), 3);
        assert_memory_equal(got + 211, payload, 294);
        assert_memory_equal(got + 505, ((const uint8_t[]){ 0x15, 0, 0, 0, 0 }), 5);
        free(got);
        pb_heap_free(&h);
    }
}

/* After the root's end, children left open by the auto-finalize case were
 * finalized with the right sizes. */
static void test_auto_finalize_state(void **state)
{
    (void)state;
    pb_heap_buffer h;
    pb_heap_init(&h, 64);
    pb_msg root;
    pb_msg_init_root(&root, pb_heap_stream(&h));
    w_auto_finalize(&root);
    assert_false(auto_b.finalized);
    assert_false(auto_bc.finalized);
    assert_ptr_equal(pb_heap_stream(&h)->innermost, &auto_bc);
    assert_int_equal(pb_msg_end(&root), 21);
    assert_true(auto_b.finalized && auto_bc.finalized);
    assert_int_equal(auto_b.size, 9);
    assert_int_equal(auto_bc.size, 2);
    assert_int_equal(pb_msg_end(&root), 21); /* idempotent */
    pb_heap_free(&h);
}

/* ---- wire primitives ------------------------------------------------------------ */

static size_t naive_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void test_varint_primitives(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 42);
    for (int i = 0; i < 200000; i++) {
        uint64_t v;
        if (i < 64) /* every power of two... */
            v = 1ull << i;
        else if (i < 128) /* ...and its predecessor */
            v = (1ull << (i - 64)) - 1;
        else if (i == 128)
            v = UINT64_MAX;
        else
            v = pbt_rng_bits(&r);
        size_t want = naive_varint_size(v);
        assert_int_equal(pb_varint_size(v), want);
        uint8_t ref[PB_MAX_VARINT_BYTES];
        assert_int_equal(pbt_ref_varint(v, ref), want);

        /* Exact writer: exactly `want` bytes, nothing after. */
        uint8_t exact[PB_MAX_VARINT_BYTES + 4];
        memset(exact, 0xcc, sizeof exact);
        assert_ptr_equal(pb_write_varint(v, exact), exact + want);
        assert_memory_equal(exact, ref, want);
        for (size_t k = want; k < sizeof exact; k++)
            assert_int_equal(exact[k], 0xcc);

        /* Padded writer: same bytes, and never past PB_MAX_VARINT_BYTES. */
        uint8_t padded[PB_MAX_VARINT_BYTES + 4];
        memset(padded, 0xcc, sizeof padded);
        volatile uint64_t opaque = v; /* defeat constant folding */
        assert_ptr_equal(pb_write_varint_padded(opaque, padded), padded + want);
        assert_memory_equal(padded, ref, want);
        for (size_t k = PB_MAX_VARINT_BYTES; k < sizeof padded; k++)
            assert_int_equal(padded[k], 0xcc);

        /* The tag/length variant (values below 2^56): same bytes, and
         * never more than 8 written. */
        if (v < (1ull << 56)) {
            uint8_t p8[12];
            memset(p8, 0xcc, sizeof p8);
            assert_ptr_equal(pb__write_varint56_padded(opaque, p8), p8 + want);
            assert_memory_equal(p8, ref, want);
            for (size_t k = 8; k < sizeof p8; k++)
                assert_int_equal(p8[k], 0xcc);
        }

        /* Reader takes it back. */
        const uint8_t *p = padded;
        uint64_t back = 0;
        pb_error err = PB_OK;
        assert_true(pb_read_varint(&p, padded + want, &back, &err));
        assert_int_equal(back, v);
        assert_ptr_equal(p, padded + want);
    }
}

static void test_redundant_varint(void **state)
{
    (void)state;
    static const uint32_t vals[] = {
        0, 1, 5, 127, 128, 300, 16383, 16384, 2097151, 2097152, PB_MAX_NESTED_SIZE
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint32_t v = vals[i];
        uint8_t b[PB_SIZE_FIELD_BYTES + 1] = { 0, 0, 0, 0, 0xcc };
        pb_write_redundant_varint(v, b);
        assert_int_equal(b[0], 0x80 | (v & 0x7f));
        assert_int_equal(b[1], 0x80 | ((v >> 7) & 0x7f));
        assert_int_equal(b[2], 0x80 | ((v >> 14) & 0x7f));
        assert_int_equal(b[3], (v >> 21) & 0x7f);
        assert_int_equal(b[4], 0xcc);
        const uint8_t *p = b;
        uint64_t back;
        pb_error err = PB_OK;
        assert_true(pb_read_varint(&p, b + 4, &back, &err));
        assert_int_equal(back, v);
        assert_ptr_equal(p, b + 4);
    }
}

static void test_zigzag(void **state)
{
    (void)state;
    static const struct {
        int64_t v;
        uint64_t z;
    } t64[] = { { 0, 0 },
                { -1, 1 },
                { 1, 2 },
                { -2, 3 },
                { INT64_MAX, UINT64_MAX - 1 },
                { INT64_MIN, UINT64_MAX } };
    for (size_t i = 0; i < sizeof t64 / sizeof t64[0]; i++) {
        assert_int_equal(pb_zigzag_encode64(t64[i].v), t64[i].z);
        assert_true(pb_zigzag_decode64(t64[i].z) == t64[i].v);
    }
    static const struct {
        int32_t v;
        uint32_t z;
    } t32[] = { { 0, 0 },
                { -1, 1 },
                { 1, 2 },
                { -64, 127 },
                { 63, 126 },
                { INT32_MAX, 0xfffffffeu },
                { INT32_MIN, 0xffffffffu } };
    for (size_t i = 0; i < sizeof t32 / sizeof t32[0]; i++) {
        assert_int_equal(pb_zigzag_encode32(t32[i].v), t32[i].z);
        pb_field f = { .id = 1, .wire_type = PB_WIRE_VARINT, .value = t32[i].z };
        assert_int_equal(pb_field_sint32(&f), t32[i].v);
    }
}

/* Field accessors interpret the raw value the way the schema types mean. */
static void test_field_views(void **state)
{
    (void)state;
    pb_field f = { .id = 1, .wire_type = PB_WIRE_VARINT, .value = (uint64_t)(int64_t)-5 };
    assert_int_equal(pb_field_int32(&f), -5);
    assert_true(pb_field_int64(&f) == -5);
    assert_true(pb_field_bool(&f));
    f.value = pb_double_bits(-2.5);
    assert_true(pb_field_double(&f) == -2.5);
    f.value = pb_float_bits(1.5f);
    assert_true(pb_field_float(&f) == 1.5f);
    f.value = 0;
    assert_false(pb_field_bool(&f));
    pb_bytes b = pb_field_bytes(&f); /* not LEN: empty view */
    assert_int_equal(b.size, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encodings),           cmocka_unit_test(test_long_fields),
        cmocka_unit_test(test_auto_finalize_state), cmocka_unit_test(test_varint_primitives),
        cmocka_unit_test(test_redundant_varint),    cmocka_unit_test(test_zigzag),
        cmocka_unit_test(test_field_views),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
