/* SPDX-License-Identifier: MIT */
/* Unit tests of the code protoc-gen-pbc generates (pbtest*.proto): exact
 * bytes from the generated writers, every value back through the generated
 * decoders, decoder leniency (both repeated encodings, wrong wire types,
 * unknown fields) and strictness (malformed input), enum names, keyword
 * escaping and proto3 defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "protos/pb/pb_heap.h"
#include "pbtest.pbc.h"
#include "pbtest3.pbc.h"
#include "tests/codegen/pbtest_fill.h"

/* Slice sizes that put buffer switches at many different offsets; 64 KiB
 * keeps every reference message in one slice (the fast paths only). */
static const size_t slice_sizes[] = { 16, 17, 19, 23, 31, 64, 1 << 16 };

static void assert_bytes(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
}

typedef uint8_t *(*writer_fn)(size_t slice, size_t *len);

/* The writer gives the same bytes whatever the slice size. */
static void check_slices(writer_fn write, const uint8_t *want, size_t want_len)
{
    for (size_t i = 0; i < sizeof slice_sizes / sizeof slice_sizes[0]; i++) {
        size_t len = 0;
        uint8_t *got = write(slice_sizes[i], &len);
        assert_non_null(got);
        assert_bytes(got, len, want, want_len);
        free(got);
    }
}

/* Writes with a fresh heap buffer: set up, run `body` on the root, end. */
#define WRITE_ROOT(Type, var, body, out, out_len)    \
    do {                                             \
        pb_heap_buffer h_;                           \
        pb_heap_init(&h_, 64);                       \
        Type var;                                    \
        Type##_init_root(&var, pb_heap_stream(&h_)); \
        body;                                        \
        Type##_end(&var);                            \
        (out) = pb_heap_dup(&h_, &(out_len));        \
        pb_heap_free(&h_);                           \
        assert_non_null(out);                        \
    } while (0)

#define Z6  0x00, 0x00, 0x00, 0x00, 0x00, 0x00
#define Z7  Z6, 0x00
#define FF4 0xff, 0xff, 0xff, 0xff
#define FF7 FF4, 0xff, 0xff, 0xff
#define FF8 FF4, FF4
#define FF9 FF8, 0xff
/* INT32_MIN as int32/enum: 0xffffffff80000000 as a 10-byte varint. */
#define I32_MIN_VARINT 0x80, 0x80, 0x80, 0x80, 0xf8, FF4, 0x01

/* ---- pbtest.Scalars ------------------------------------------------------ */

static const uint8_t scalars_bytes[] = {
    0x09, Z6,   0x04, 0xc0,       /* 1 f_double: fixed64 -2.5 (0xc004000000000000) */
    0x15, 0x00, 0x00, 0xc0, 0x3f, /* 2 f_float: fixed32 1.5f (0x3fc00000) */
    0x18, 0xfe, FF8,  0x01,       /* 3 f_int64: -2, 10-byte varint */
    0x20, FF9,  0x01,             /* 4 f_uint64: UINT64_MAX */
    0x28, FF9,  0x01,             /* 5 f_int32: -1, sign-extended to 64 bits */
    0x31, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* 6 f_fixed64: LE */
    0x3d, 0xef, 0xbe, 0xad, 0xde,                         /* 7 f_fixed32: 0xdeadbeef */
    0x40, 0x01,                                           /* 8 f_bool: true */
    0x4a, 0x02, 'h',  'i',                                /* 9 f_string: "hi" */
    0x62, 0x02, 0x00, 0xff,                               /* 12 f_bytes: {0x00, 0xff} */
    0x68, 0xac, 0x02,                                     /* 13 f_uint32: 300 */
    0x70, FF9,  0x01,             /* 14 f_enum: COLOR_NEGATIVE (-1), sign-extended */
    0x7d, 0xfe, 0xff, 0xff, 0xff, /* 15 f_sfixed32: -2 */
    0x81, 0x01, 0xfd, FF7,        /* 16 f_sfixed64: -3 (2-byte tag) */
    0x88, 0x01, FF4,  0x0f,       /* 17 f_sint32: INT32_MIN, zigzag 0xffffffff */
    0x90, 0x01, FF9,  0x01,       /* 18 f_sint64: INT64_MIN, zigzag UINT64_MAX */
};

static void test_scalars_write(void **state)
{
    (void)state;
    check_slices(pbtest_write_scalars, scalars_bytes, sizeof scalars_bytes);
}

/* Runs of generated put functions: each slice size makes some runs fit and
 * others fall back to the setters; the bytes must not change. */
static void test_scalars_write_runs(void **state)
{
    (void)state;
    check_slices(pbtest_write_scalars_runs, scalars_bytes, sizeof scalars_bytes);
}

/* <msg>_put_<field>_cstr(): the same bytes as the length-taking put, for
 * every length up to PB_CSTR_RUN_MAX - 1; NULL from there on. */
static void check_cstr(const char *str)
{
    uint8_t got[PB_MAX_CSTR_FIELD_BYTES + 16], want[PB_MAX_BYTES_FIELD_BYTES(256)];
    const size_t len = strlen(str);
    uint8_t *end = pbtest_Scalars_put_f_string_cstr(got, str);
    if (len >= PB_CSTR_RUN_MAX) {
        assert_null(end);
        return;
    }
    assert_non_null(end);
    uint8_t *want_end = pbtest_Scalars_put_f_string(want, str, len);
    assert_bytes(got, (size_t)(end - got), want, (size_t)(want_end - want));
}

static void test_cstr_put(void **state)
{
    (void)state;
    char text[300];
    for (size_t len = 0; len < sizeof text; len++) {
        memset(text, 'a' + (int)(len % 26), len);
        text[len] = '\0';
        check_cstr(text);
    }
    /* Strings that end at the end of a page followed by an unreadable one:
     * the 16-byte blocks must not be loaded across the boundary. */
    const long page = sysconf(_SC_PAGESIZE);
    uint8_t *map =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
    for (size_t len = 0; len < 140; len++) {
        char *str = (char *)map + page - len - 1;
        memset(str, 'x', len);
        str[len] = '\0';
        check_cstr(str);
    }
    munmap(map, (size_t)page * 2);
}

static void test_scalars_decode(void **state)
{
    (void)state;
    /* Every field, through the shared checker. */
    assert_int_equal(pbtest_check_scalars(scalars_bytes, sizeof scalars_bytes), 0);
    /* And a few spelled out here. */
    pbtest_Scalars_view v;
    assert_true(pbtest_Scalars_decode(&v, scalars_bytes, sizeof scalars_bytes));
    assert_true(v.has_f_sint32);
    assert_int_equal(v.f_sint32, INT32_MIN);
    assert_true(v.f_uint64 == UINT64_MAX);
    assert_true(v.f_double == -2.5);
    assert_true(v.f_float == 1.5f);
    assert_int_equal(v.f_enum, pbtest_Color_COLOR_NEGATIVE);
    assert_int_equal(v.f_string.size, 2);
    assert_memory_equal(v.f_string.data, "hi", 2);
}

/* Zero values are written (presence is explicit) and read back as present. */
static void test_scalars_zero(void **state)
{
    (void)state;
    uint8_t *out;
    size_t len;
    WRITE_ROOT(
        pbtest_Scalars, m,
        {
            pbtest_Scalars_set_f_double(&m, 0.0);
            pbtest_Scalars_set_f_int32(&m, 0);
            pbtest_Scalars_set_f_bool(&m, false);
            pbtest_Scalars_set_f_string(&m, "");
            pbtest_Scalars_set_f_bytes(&m, "", 0);
        },
        out, len);
    static const uint8_t want[] = {
        0x09, Z7,   0x00, /* 1 f_double: 0.0 */
        0x28, 0x00,       /* 5 f_int32: 0 */
        0x40, 0x00,       /* 8 f_bool: false */
        0x4a, 0x00,       /* 9 f_string: "" */
        0x62, 0x00,       /* 12 f_bytes: empty */
    };
    assert_bytes(out, len, want, sizeof want);
    pbtest_Scalars_view v;
    assert_true(pbtest_Scalars_decode(&v, out, len));
    assert_true(v.has_f_double && v.has_f_int32 && v.has_f_bool && v.has_f_string && v.has_f_bytes);
    assert_true(v.f_double == 0.0 && v.f_int32 == 0 && !v.f_bool);
    assert_int_equal(v.f_string.size, 0);
    assert_false(v.has_f_int64 || v.has_f_sint64 || v.has_f_enum);
    free(out);
}

/* ---- pbtest.Repeated (unpacked) ------------------------------------------ */

static const uint8_t repeated_bytes[] = {
    0x09, Z6,
    0xf0, 0x3f, /* 1 r_double: 1.0 */
    0x09, Z6,
    0xe0, 0xbf, /* 1 r_double: -0.5 */
    0x15, 0x00,
    0x00, 0x80,
    0x3e, /* 2 r_float: 0.25f */
    0x15, 0x00,
    0x00, 0x00,
    0xc1, /* 2 r_float: -8.0f */
    0x18, 0x80,
    0x80, 0x80,
    0x80, 0x80,
    0x80, 0x80,
    0x80, 0x80,
    0x01,       /* 3 r_int64: INT64_MIN */
    0x18, 0x01, /* 3 r_int64: 1 */
    0x20, 0x00, /* 4 r_uint64: 0 */
    0x20, FF9,
    0x01,                 /* 4 r_uint64: UINT64_MAX */
    0x28, I32_MIN_VARINT, /* 5 r_int32: INT32_MIN */
    0x28, FF4,
    0x07, /* 5 r_int32: INT32_MAX */
    0x31, 0x01,
    Z7,        /* 6 r_fixed64: 1 */
    0x31, FF8, /* 6 r_fixed64: UINT64_MAX */
    0x3d, 0x00,
    0x00, 0x00,
    0x00,       /* 7 r_fixed32: 0 */
    0x3d, FF4,  /* 7 r_fixed32: UINT32_MAX */
    0x40, 0x01, /* 8 r_bool: true */
    0x40, 0x00, /* 8 r_bool: false */
    0x4a, 0x00, /* 9 r_string: "" */
    0x4a, 0x03,
    't',  'w',
    'o', /* 9 r_string: "two" */
    0x62, 0x01,
    0x80,       /* 12 r_bytes: {0x80} */
    0x62, 0x00, /* 12 r_bytes: {} */
    0x68, FF4,
    0x0f,                 /* 13 r_uint32: UINT32_MAX */
    0x68, 0x7f,           /* 13 r_uint32: 127 */
    0x70, I32_MIN_VARINT, /* 14 r_enum: COLOR_MIN */
    0x70, FF4,
    0x07, /* 14 r_enum: COLOR_MAX */
    0x7d, 0x00,
    0x00, 0x00,
    0x80,      /* 15 r_sfixed32: INT32_MIN */
    0x7d, FF4, /* 15 r_sfixed32: -1 */
    0x81, 0x01,
    Z7,   0x80, /* 16 r_sfixed64: INT64_MIN */
    0x81, 0x01,
    FF7,  0x7f, /* 16 r_sfixed64: INT64_MAX */
    0x88, 0x01,
    0x01, /* 17 r_sint32: -1, zigzag 1 */
    0x88, 0x01,
    0x02, /* 17 r_sint32: 1, zigzag 2 */
    0x90, 0x01,
    0xfe, FF8,
    0x01, /* 18 r_sint64: INT64_MAX, zigzag UINT64_MAX - 1 */
    0x90, 0x01,
    0x03, /* 18 r_sint64: -2, zigzag 3 */
};

static void test_repeated_write(void **state)
{
    (void)state;
    check_slices(pbtest_write_repeated, repeated_bytes, sizeof repeated_bytes);
}

static void test_repeated_decode(void **state)
{
    (void)state;
    assert_int_equal(pbtest_check_repeated(repeated_bytes, sizeof repeated_bytes), 0);
    pbtest_Repeated_view v;
    assert_true(pbtest_Repeated_decode(&v, repeated_bytes, sizeof repeated_bytes));
    assert_int_equal(v.r_double_count, 2);
    assert_int_equal(v.r_string_count, 2);
    assert_int_equal(v.r_bytes_count, 2);
    assert_int_equal(v.r_sint64_count, 2);
}

/* ---- pbtest.Packed ------------------------------------------------------- */

static const uint8_t packed_bytes[] = {
    0x0a, 0x10, Z6, 0xe0, 0x3f, Z7, 0xc0, /* 1 p_double: [0.5, -2.0] */
    0x12, 0x08, 0x00, 0x00, 0x80, 0x3f,   /* 2 p_float: 1.0f, */
    0x00, 0x00, 0x60, 0x40,               /*            3.5f */
    0x1a, 0x0c, FF9, 0x01, 0x00, 0x01,    /* 3 p_int64: [-1, 0, 1] */
    0x22, 0x0b, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
    /* 4 p_uint64: [1, 1 << 63] */
    0x2a, 0x0d, 0x01, FF9, 0x01, 0xac, 0x02, /* 5 p_int32: [1, -1 (10 bytes), 300] */
    0x32, 0x10, 0x07, Z7, FF8,               /* 6 p_fixed64: [7, UINT64_MAX] */
    0x3a, 0x08, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* 7 p_fixed32: [7, 1 << 31] */
    0x42, 0x03, 0x01, 0x00, 0x01,                               /* 8 p_bool: [true, false, true] */
    0x6a, 0x08, 0x00, 0x80, 0x01, FF4, 0x0f, /* 13 p_uint32: [0, 128, UINT32_MAX] */
    0x72, 0x0b, 0x02, FF9, 0x01,             /* 14 p_enum: [COLOR_GREEN, COLOR_NEGATIVE] */
    0x7a, 0x08, 0xf9, 0xff, 0xff, 0xff, 0x07, 0x00, 0x00, 0x00, /* 15 p_sfixed32: [-7, 7] */
    0x82, 0x01, 0x10, 0xf9, FF7, 0x07, Z7,                      /* 16 p_sfixed64: [-7, 7] */
    0x8a, 0x01, 0x07, 0x01, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f, /* 17 p_sint32: [-1, 0, MAX] */
    0x92, 0x01, 0x0b, FF9, 0x01, 0x0a,                          /* 18 p_sint64: [INT64_MIN, 5] */
};

static void test_packed_write(void **state)
{
    (void)state;
    check_slices(pbtest_write_packed, packed_bytes, sizeof packed_bytes);
}

static void test_packed_decode(void **state)
{
    (void)state;
    assert_int_equal(pbtest_check_packed(packed_bytes, sizeof packed_bytes), 0);
    pbtest_Packed_view v;
    assert_true(pbtest_Packed_decode(&v, packed_bytes, sizeof packed_bytes));
    /* Counts are elements, not occurrences of the field. */
    assert_int_equal(v.p_int32_count, 3);
    assert_int_equal(v.p_uint64_count, 2);
    assert_int_equal(v.p_double_count, 2);
    assert_int_equal(v.p_fixed32_count, 2);
    assert_int_equal(v.p_bool_count, 3);
}

/* An empty array writes nothing, as libprotobuf does for an empty packed field. */
static void test_packed_empty(void **state)
{
    (void)state;
    uint8_t *out;
    size_t len;
    WRITE_ROOT(
        pbtest_Packed, m,
        {
            pbtest_Packed_set_p_int32(&m, NULL, 0);
            pbtest_Packed_set_p_double(&m, NULL, 0);
            pbtest_Packed_set_p_bool(&m, NULL, 0);
        },
        out, len);
    assert_int_equal(len, 0);
    free(out);
}

/* ---- decoder leniency and strictness ------------------------------------- */

/* Repeated scalars are read in both encodings, whatever the declaration. */
static void test_decode_both_encodings(void **state)
{
    (void)state;
    static const uint8_t packed_as_unpacked[] = {
        0x28, 0x01,                   /* 5 p_int32: 1, unpacked */
        0x2a, 0x03, 0x02, 0x03, 0x04, /* 5 p_int32: [2, 3, 4], packed */
        0x28, 0x05,                   /* 5 p_int32: 5, unpacked again */
        0x3d, 0x01, 0x00, 0x00, 0x00, /* 7 p_fixed32: 1, unpacked */
        0x31, Z7,   0x00,             /* 6 p_fixed64: 0, unpacked */
        0x15, 0x00, 0x00, 0x80, 0x3f, /* 2 p_float: 1.0f, unpacked */
    };
    pbtest_Packed_view p;
    assert_true(pbtest_Packed_decode(&p, packed_as_unpacked, sizeof packed_as_unpacked));
    assert_int_equal(p.p_int32_count, 5);
    assert_int_equal(p.p_fixed32_count, 1);
    assert_int_equal(p.p_fixed64_count, 1);
    assert_int_equal(p.p_float_count, 1);

    static const uint8_t unpacked_as_packed[] = {
        0x0a, 0x10, Z7,   0x00, Z7,   0x00, /* 1 r_double: [0.0, 0.0], packed */
        0x42, 0x02, 0x01, 0x00,             /* 8 r_bool: [true, false], packed */
        0x8a, 0x01, 0x02, 0x7f, 0x01,       /* 17 r_sint32: [-64, -1], packed */
        0x3a, 0x04, 0x01, 0x00, 0x00, 0x00, /* 7 r_fixed32: [1], packed */
        0x3d, 0x02, 0x00, 0x00, 0x00,       /* 7 r_fixed32: 2, unpacked */
    };
    pbtest_Repeated_view r;
    assert_true(pbtest_Repeated_decode(&r, unpacked_as_packed, sizeof unpacked_as_packed));
    assert_int_equal(r.r_double_count, 2);
    assert_int_equal(r.r_bool_count, 2);
    assert_int_equal(r.r_sint32_count, 2);
    assert_int_equal(r.r_fixed32_count, 2);
    assert_int_equal(r.r_int32_count, 0);
}

/* Packed payloads with a partial last element count whole elements only. */
static void test_decode_partial_packed(void **state)
{
    (void)state;
    static const uint8_t in[] = {
        0x2a, 0x03, 0x01, 0x02, 0x80,             /* 5 p_int32: [1, 2] + a varint cut short */
        0x3a, 0x05, 0x01, 0x00, 0x00, 0x00, 0x09, /* 7 p_fixed32: [1] + 1 stray byte */
        0x32, 0x07, Z7,                           /* 6 p_fixed64: 7 bytes, no whole element */
    };
    pbtest_Packed_view v;
    assert_true(pbtest_Packed_decode(&v, in, sizeof in));
    assert_int_equal(v.p_int32_count, 2);
    assert_int_equal(v.p_fixed32_count, 1);
    assert_int_equal(v.p_fixed64_count, 0);
}

/* Wrong wire types and unknown fields are skipped; the last value wins. */
static void test_decode_skips(void **state)
{
    (void)state;
    static const uint8_t in[] = {
        0x2d, 0x01, 0x00, 0x00, 0x00,       /* 5 f_int32 as fixed32: skipped */
        0x48, 0x05,                         /* 9 f_string as varint: skipped */
        0x08, 0x01,                         /* 1 f_double as varint: skipped */
        0x62, 0x01, 0xaa,                   /* 12 f_bytes: {0xaa} */
        0xb8, 0x06, 0x07,                   /* 103: unknown varint */
        0xc2, 0x3e, 0x02, 0x01, 0x02,       /* 1000: unknown bytes */
        0x11, Z7,   0x00,                   /* 2 f_float as fixed64: skipped */
        0x45, 0x01, 0x00, 0x00, 0x00,       /* 8 f_bool as fixed32: skipped */
        0x40, 0x02,                         /* 8 f_bool: 2 reads as true */
        0x68, 0x01,                         /* 13 f_uint32: 1 */
        0x68, 0x02,                         /* 13 f_uint32: 2 (last wins) */
        0x62, 0x00,                         /* 12 f_bytes: {} (last wins) */
        0x28, 0x80, 0x80, 0x80, 0x80, 0x10, /* 5 f_int32: 2^32 truncates to 0 */
    };
    pbtest_Scalars_view v;
    memset(&v, 0xa5, sizeof v); /* the decoder zeroes the view */
    assert_true(pbtest_Scalars_decode(&v, in, sizeof in));
    assert_false(v.has_f_double);
    assert_false(v.has_f_float);
    assert_false(v.has_f_string);
    assert_true(v.has_f_bool && v.f_bool);
    assert_true(v.has_f_uint32);
    assert_int_equal(v.f_uint32, 2);
    assert_true(v.has_f_bytes);
    assert_int_equal(v.f_bytes.size, 0);
    assert_true(v.has_f_int32);
    assert_int_equal(v.f_int32, 0);
    assert_false(v.has_f_int64 || v.has_f_sfixed32 || v.has_f_sint64);

    /* Singular sub-messages and keyword fields skip mismatches too. */
    static const uint8_t outer_in[] = {
        0x10, 0x05,                   /* 2 middle as varint: skipped */
        0x40, 0x07,                   /* 8 default: 7 */
        0x4d, 0x00, 0x00, 0x00, 0x00, /* 9 register as fixed32: skipped */
        0x52, 0x02, 0x01, 0x02,       /* 10 case: [1, 2], packed */
        0x50, 0x03,                   /* 10 case: 3 */
        0x1a, 0x00,                   /* 3 middles: one empty message */
        0x18, 0x00,                   /* 3 middles as varint: not counted */
    };
    pbtest_Outer_view o;
    assert_true(pbtest_Outer_decode(&o, outer_in, sizeof outer_in));
    assert_false(o.has_middle);
    assert_true(o.has_default_);
    assert_int_equal(o.default_, 7);
    assert_false(o.has_register_);
    assert_int_equal(o.case__count, 3);
    assert_int_equal(o.middles_count, 1);
}

static void test_decode_malformed(void **state)
{
    (void)state;
    static const uint8_t truncated_varint[] = { 0x28, 0x80 };
    static const uint8_t truncated_tag[] = { 0x80 };
    static const uint8_t truncated_len[] = { 0x4a, 0x05, 'a' };
    static const uint8_t truncated_fixed[] = { 0x09, 0x00, 0x00 };
    static const uint8_t group[] = { 0x0b, 0x0c };
    static const uint8_t field_zero[] = { 0x00, 0x01 };
    static const uint8_t overlong[] = { 0x28, FF9, 0x7f };
    static const uint8_t after_good[] = { 0x28, 0x01, 0x68 };
    const struct {
        const uint8_t *data;
        size_t len;
    } cases[] = {
        { truncated_varint, sizeof truncated_varint },
        { truncated_tag, sizeof truncated_tag },
        { truncated_len, sizeof truncated_len },
        { truncated_fixed, sizeof truncated_fixed },
        { group, sizeof group },
        { field_zero, sizeof field_zero },
        { overlong, sizeof overlong },
        { after_good, sizeof after_good },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pbtest_Scalars_view v;
        pbtest_Outer_view o;
        pbtest_Empty_view e;
        assert_false(pbtest_Scalars_decode(&v, cases[i].data, cases[i].len));
        assert_false(pbtest_Outer_decode(&o, cases[i].data, cases[i].len));
        assert_false(pbtest_Empty_decode(&e, cases[i].data, cases[i].len));
    }
    /* Empty input is a valid empty message. */
    pbtest_Scalars_view v;
    assert_true(pbtest_Scalars_decode(&v, NULL, 0));
    assert_false(v.has_f_int32);
}

/* ---- pbtest.Outer: nesting, imports, keywords, oneof, map, big tags ------ */

static void test_outer_write(void **state)
{
    (void)state;
    uint8_t *out;
    size_t len;
    WRITE_ROOT(
        pbtest_Outer, o,
        {
            pbtest_Outer_set_mode(&o, pbtest_Outer_Mode_MODE_ON);
            pbtest_Outer_Middle mid;
            pbtest_Outer_begin_middle(&o, &mid);
            pbtest_Outer_Middle_set_id(&mid, 7);
            pbtest_Outer_Middle_Leaf leaf;
            pbtest_Outer_Middle_begin_leaf(&mid, &leaf);
            pbtest_Outer_Middle_Leaf_set_depth(&leaf, 3);
            pbtest_Outer_Middle_Leaf_set_tag(&leaf, "x");
            assert_int_equal(pbtest_Outer_Middle_Leaf_end(&leaf), 5);
            assert_int_equal(pbtest_Outer_Middle_end(&mid), 12);
            pbtest_Outer_set_default_(&o, -2);
            pbtest_Outer_set_register__len(&o, "eaxebx", 3);
            pbtest_Outer_add_case_(&o, 7);
            pbtest_Outer_add_case_(&o, 8);
            pbtest_Outer_set_wide_tag(&o, 1);
            pbtest_Outer_set_max_field(&o, 300);
        },
        out, len);
    static const uint8_t want[] = {
        0x08, 0x01,                   /* 1 mode: MODE_ON */
        0x12,                         /* 2 middle: LEN */
        0x8c, 0x80, 0x80, 0x00,       /*   size 12, as a 4-byte redundant varint (patched) */
        0x08, 0x07,                   /*   1 id: 7 */
        0x12,                         /*   2 leaf: LEN */
        0x85, 0x80, 0x80, 0x00,       /*     size 5 */
        0x08, 0x03,                   /*     1 depth: 3 */
        0x12, 0x01, 'x',              /*     2 tag: "x" */
        0x40, 0xfe, FF8,  0x01,       /* 8 default: -2, sign-extended to 10 bytes */
        0x4a, 0x03, 'e',  'a',  'x',  /* 9 register: "eax" */
        0x50, 0x07,                   /* 10 case: 7 */
        0x50, 0x08,                   /* 10 case: 8 */
        0x85, 0x80, 0x80, 0x08,       /* 2097152 wide_tag: fixed32, 4-byte tag */
        0x01, 0x00, 0x00, 0x00,       /*   1 */
        0xf8, 0xff, 0xff, 0xff, 0x0f, /* 536870911 max_field: varint, 5-byte tag */
        0xac, 0x02,                   /*   300 */
    };
    assert_bytes(out, len, want, sizeof want);

    pbtest_Outer_view v;
    assert_true(pbtest_Outer_decode(&v, out, len));
    assert_true(v.has_mode && v.mode == pbtest_Outer_Mode_MODE_ON);
    assert_true(v.has_middle);
    assert_int_equal(v.middle.size, 12);
    pbtest_Outer_Middle_view mv;
    assert_true(pbtest_Outer_Middle_decode(&mv, v.middle.data, v.middle.size));
    assert_true(mv.has_id && mv.id == 7 && mv.has_leaf && mv.leaves_count == 0);
    pbtest_Outer_Middle_Leaf_view lv;
    assert_true(pbtest_Outer_Middle_Leaf_decode(&lv, mv.leaf.data, mv.leaf.size));
    assert_true(lv.has_depth && lv.depth == 3 && lv.has_tag);
    assert_memory_equal(lv.tag.data, "x", 1);
    assert_true(v.has_default_ && v.default_ == -2);
    assert_true(v.has_register_ && v.register_.size == 3);
    assert_int_equal(v.case__count, 2);
    assert_true(v.has_wide_tag && v.wide_tag == 1);
    assert_true(v.has_max_field && v.max_field == 300);
    assert_false(v.has_true_ || v.has_point || v.has_scalars || v.has_choice_text);
    free(out);
}

static void test_outer_roundtrip(void **state)
{
    (void)state;
    size_t ref_len = 0;
    uint8_t *ref = pbtest_write_outer(1 << 16, &ref_len);
    assert_non_null(ref);
    assert_int_equal(pbtest_check_outer(ref, ref_len), 0);
    check_slices(pbtest_write_outer, ref, ref_len);
    free(ref);
}

/* ---- enums, constants, empty messages, proto3 ---------------------------- */

static void test_enum_names(void **state)
{
    (void)state;
    assert_string_equal(pbtest_Color_name(pbtest_Color_COLOR_UNSPECIFIED), "COLOR_UNSPECIFIED");
    /* Aliases share a value: the first declared name answers. */
    assert_int_equal(pbtest_Color_COLOR_CRIMSON, pbtest_Color_COLOR_RED);
    assert_string_equal(pbtest_Color_name(1), "COLOR_RED");
    assert_string_equal(pbtest_Color_name(-1), "COLOR_NEGATIVE");
    assert_string_equal(pbtest_Color_name(INT32_MAX), "COLOR_MAX");
    assert_string_equal(pbtest_Color_name(INT32_MIN), "COLOR_MIN");
    assert_null(pbtest_Color_name(3));
    assert_int_equal(pbtest_Color_COLOR_MIN, INT32_MIN);
    assert_string_equal(pbtest_Outer_Mode_name(5), "MODE_AUTO");
    assert_null(pbtest_Outer_Mode_name(2));
    assert_string_equal(pbtest_dep_DepColor_name(-3), "DEP_NEGATIVE");
    assert_int_equal(pbtest_dep_DepColor_DEP_NEGATIVE, -3);
}

static void test_field_constants(void **state)
{
    (void)state;
    assert_int_equal(pbtest_Scalars_FIELD_f_sint64, 18);
    assert_int_equal(pbtest_Outer_FIELD_default_, 8);
    assert_int_equal(pbtest_Outer_FIELD_register_, 9);
    assert_int_equal(pbtest_Outer_FIELD_case_, 10);
    assert_int_equal(pbtest_Outer_FIELD_true_, 11);
    assert_int_equal(pbtest_Outer_FIELD_wide_tag, 2097152);
    assert_int_equal(pbtest_Outer_FIELD_max_field, 536870911);
    assert_int_equal(pbtest_Outer_Middle_Leaf_FIELD_tag, 2);
    assert_int_equal(pbtest_dep_DepPoint_FIELD_label, 3);
}

static void test_empty_message(void **state)
{
    (void)state;
    uint8_t *out;
    size_t len;
    WRITE_ROOT(pbtest_Empty, m, {}, out, len);
    assert_int_equal(len, 0);
    free(out);
    static const uint8_t unknown[] = { 0x08, 0x01, 0x12, 0x00 };
    pbtest_Empty_view v;
    assert_true(pbtest_Empty_decode(&v, unknown, sizeof unknown));
}

static void test_proto3(void **state)
{
    (void)state;
    uint8_t *out;
    size_t len;
    static const int32_t vals[] = { 1, 2 };
    WRITE_ROOT(
        pbtest3_P3, m,
        {
            pbtest3_P3_set_packed_by_default(&m, vals, 2);
            pbtest3_P3_add_unpacked(&m, 3);
            pbtest3_P3_set_explicit_presence(&m, 0);
            pbtest3_P3_set_implicit(&m, "");
            pbtest3_P3_add_names(&m, "n");
        },
        out, len);
    static const uint8_t want[] = {
        0x0a, 0x02, 0x01, 0x02, /* 1 packed_by_default: [1, 2], packed by proto3 default */
        0x10, 0x03,             /* 2 unpacked: 3 ([packed = false]) */
        0x18, 0x00,             /* 3 explicit_presence: 0 (proto3 optional) */
        0x22, 0x00,             /* 4 implicit: "" */
        0x2a, 0x01, 'n',        /* 5 names: "n" */
    };
    assert_bytes(out, len, want, sizeof want);
    pbtest3_P3_view v;
    assert_true(pbtest3_P3_decode(&v, out, len));
    assert_int_equal(v.packed_by_default_count, 2);
    assert_int_equal(v.unpacked_count, 1);
    assert_true(v.has_explicit_presence && v.explicit_presence == 0);
    assert_true(v.has_implicit && v.implicit.size == 0);
    assert_int_equal(v.names_count, 1);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars_write),
        cmocka_unit_test(test_scalars_write_runs),
        cmocka_unit_test(test_cstr_put),
        cmocka_unit_test(test_scalars_decode),
        cmocka_unit_test(test_scalars_zero),
        cmocka_unit_test(test_repeated_write),
        cmocka_unit_test(test_repeated_decode),
        cmocka_unit_test(test_packed_write),
        cmocka_unit_test(test_packed_decode),
        cmocka_unit_test(test_packed_empty),
        cmocka_unit_test(test_decode_both_encodings),
        cmocka_unit_test(test_decode_partial_packed),
        cmocka_unit_test(test_decode_skips),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_outer_write),
        cmocka_unit_test(test_outer_roundtrip),
        cmocka_unit_test(test_enum_names),
        cmocka_unit_test(test_field_constants),
        cmocka_unit_test(test_empty_message),
        cmocka_unit_test(test_proto3),
    };
    return cmocka_run_group_tests_name("codegen", tests, NULL, NULL);
}
