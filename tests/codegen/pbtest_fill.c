/* SPDX-License-Identifier: MIT */
/* Writes the pbtest reference messages with the generated writers and checks
 * serialized bytes with the generated decoders (see pbtest_fill.h). Fields
 * are written in field-number order, as libprotobuf serializes them, so the
 * cross-check can also compare bytes. */
#include "tests/codegen/pbtest_fill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_heap.h"
#include "pbtest.pbc.h"

const uint8_t pbt_f_bytes[PBT_F_BYTES_LEN] = { 0x00, 0xff };

const double pbt_r_double[2] = { 1.0, -0.5 };
const float pbt_r_float[2] = { 0.25f, -8.0f };
const int64_t pbt_r_int64[2] = { INT64_MIN, 1 };
const uint64_t pbt_r_uint64[2] = { 0, UINT64_MAX };
const int32_t pbt_r_int32[2] = { INT32_MIN, INT32_MAX };
const uint64_t pbt_r_fixed64[2] = { 1, UINT64_MAX };
const uint32_t pbt_r_fixed32[2] = { 0, UINT32_MAX };
const bool pbt_r_bool[2] = { true, false };
const char *const pbt_r_string[2] = { "", "two" };
const uint8_t pbt_r_bytes0[1] = { 0x80 };
const uint32_t pbt_r_uint32[2] = { UINT32_MAX, 127 };
const int32_t pbt_r_enum[2] = { pbtest_Color_COLOR_MIN, pbtest_Color_COLOR_MAX };
const int32_t pbt_r_sfixed32[2] = { INT32_MIN, -1 };
const int64_t pbt_r_sfixed64[2] = { INT64_MIN, INT64_MAX };
const int32_t pbt_r_sint32[2] = { -1, 1 };
const int64_t pbt_r_sint64[2] = { INT64_MAX, -2 };

const double pbt_p_double[2] = { 0.5, -2.0 };
const float pbt_p_float[2] = { 1.0f, 3.5f };
const int64_t pbt_p_int64[3] = { -1, 0, 1 };
const uint64_t pbt_p_uint64[2] = { 1, UINT64_C(1) << 63 };
const int32_t pbt_p_int32[3] = { 1, -1, 300 };
const uint64_t pbt_p_fixed64[2] = { 7, UINT64_MAX };
const uint32_t pbt_p_fixed32[2] = { 7, UINT32_C(0x80000000) };
const bool pbt_p_bool[3] = { true, false, true };
const uint32_t pbt_p_uint32[3] = { 0, 128, UINT32_MAX };
const int32_t pbt_p_enum[2] = { pbtest_Color_COLOR_GREEN, pbtest_Color_COLOR_NEGATIVE };
const int32_t pbt_p_sfixed32[2] = { -7, 7 };
const int64_t pbt_p_sfixed64[2] = { -7, 7 };
const int32_t pbt_p_sint32[3] = { -1, 0, INT32_MAX };
const int64_t pbt_p_sint64[2] = { INT64_MIN, 5 };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- writing ------------------------------------------------------------- */

static uint8_t *finish(pb_heap_buffer *h, size_t *len)
{
    uint8_t *out = h->out_of_memory ? NULL : pb_heap_dup(h, len);
    pb_heap_free(h);
    return out;
}

static void fill_scalars(pbtest_Scalars *m)
{
    pbtest_Scalars_set_f_double(m, PBT_F_DOUBLE);
    pbtest_Scalars_set_f_float(m, PBT_F_FLOAT);
    pbtest_Scalars_set_f_int64(m, PBT_F_INT64);
    pbtest_Scalars_set_f_uint64(m, PBT_F_UINT64);
    pbtest_Scalars_set_f_int32(m, PBT_F_INT32);
    pbtest_Scalars_set_f_fixed64(m, PBT_F_FIXED64);
    pbtest_Scalars_set_f_fixed32(m, PBT_F_FIXED32);
    pbtest_Scalars_set_f_bool(m, PBT_F_BOOL);
    pbtest_Scalars_set_f_string(m, PBT_F_STRING);
    pbtest_Scalars_set_f_bytes(m, pbt_f_bytes, sizeof pbt_f_bytes);
    pbtest_Scalars_set_f_uint32(m, PBT_F_UINT32);
    pbtest_Scalars_set_f_enum(m, pbtest_Color_COLOR_NEGATIVE);
    pbtest_Scalars_set_f_sfixed32(m, PBT_F_SFIXED32);
    pbtest_Scalars_set_f_sfixed64(m, PBT_F_SFIXED64);
    pbtest_Scalars_set_f_sint32(m, PBT_F_SINT32);
    pbtest_Scalars_set_f_sint64(m, PBT_F_SINT64);
}

uint8_t *pbtest_write_scalars(size_t slice, size_t *len)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pbtest_Scalars m;
    pbtest_Scalars_init_root(&m, pb_heap_stream(&h));
    fill_scalars(&m);
    pbtest_Scalars_end(&m);
    return finish(&h, len);
}

/* A run of fields through the generated reserve/put/commit, or through the
 * per-field setters when the buffer lacks `bound` bytes. */
#define RUN(m, bound, puts, setters)                   \
    do {                                               \
        uint8_t *p = pbtest_Scalars_reserve(m, bound); \
        if (p) {                                       \
            puts;                                      \
            pbtest_Scalars_commit(m, p);               \
        } else {                                       \
            setters;                                   \
        }                                              \
    } while (0)
#define S PB_MAX_SCALAR_FIELD_BYTES

/* GCC with -fsanitize reports a bogus overflow in pb_msg_append_varint()'s
 * slow path once the constants below are propagated into it (it sees the
 * 15-byte scratch array as empty); the plain builds do not. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

/* The same bytes as pbtest_write_scalars(), in runs of one to three fields
 * so that with small slices some runs fit and others meet the end. */
uint8_t *pbtest_write_scalars_runs(size_t slice, size_t *len)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pbtest_Scalars v, *m = &v;
    pbtest_Scalars_init_root(m, pb_heap_stream(&h));
    RUN(m, 2 * S,
        (p = pbtest_Scalars_put_f_double(p, PBT_F_DOUBLE),
         p = pbtest_Scalars_put_f_float(p, PBT_F_FLOAT)),
        (pbtest_Scalars_set_f_double(m, PBT_F_DOUBLE), pbtest_Scalars_set_f_float(m, PBT_F_FLOAT)));
    RUN(m, S, p = pbtest_Scalars_put_f_int64(p, PBT_F_INT64),
        pbtest_Scalars_set_f_int64(m, PBT_F_INT64));
    RUN(m, 3 * S,
        (p = pbtest_Scalars_put_f_uint64(p, PBT_F_UINT64),
         p = pbtest_Scalars_put_f_int32(p, PBT_F_INT32),
         p = pbtest_Scalars_put_f_fixed64(p, PBT_F_FIXED64)),
        (pbtest_Scalars_set_f_uint64(m, PBT_F_UINT64), pbtest_Scalars_set_f_int32(m, PBT_F_INT32),
         pbtest_Scalars_set_f_fixed64(m, PBT_F_FIXED64)));
    RUN(m, 2 * S,
        (p = pbtest_Scalars_put_f_fixed32(p, PBT_F_FIXED32),
         p = pbtest_Scalars_put_f_bool(p, PBT_F_BOOL)),
        (pbtest_Scalars_set_f_fixed32(m, PBT_F_FIXED32), pbtest_Scalars_set_f_bool(m, PBT_F_BOOL)));
    size_t slen = pb_strlen(PBT_F_STRING);
    RUN(m, PB_MAX_BYTES_FIELD_BYTES(slen) + PB_MAX_BYTES_FIELD_BYTES(sizeof pbt_f_bytes),
        (p = pbtest_Scalars_put_f_string(p, PBT_F_STRING, slen),
         p = pbtest_Scalars_put_f_bytes(p, pbt_f_bytes, sizeof pbt_f_bytes)),
        (pbtest_Scalars_set_f_string(m, PBT_F_STRING),
         pbtest_Scalars_set_f_bytes(m, pbt_f_bytes, sizeof pbt_f_bytes)));
    RUN(m, 3 * S,
        (p = pbtest_Scalars_put_f_uint32(p, PBT_F_UINT32),
         p = pbtest_Scalars_put_f_enum(p, pbtest_Color_COLOR_NEGATIVE),
         p = pbtest_Scalars_put_f_sfixed32(p, PBT_F_SFIXED32)),
        (pbtest_Scalars_set_f_uint32(m, PBT_F_UINT32),
         pbtest_Scalars_set_f_enum(m, pbtest_Color_COLOR_NEGATIVE),
         pbtest_Scalars_set_f_sfixed32(m, PBT_F_SFIXED32)));
    RUN(m, 3 * S,
        (p = pbtest_Scalars_put_f_sfixed64(p, PBT_F_SFIXED64),
         p = pbtest_Scalars_put_f_sint32(p, PBT_F_SINT32),
         p = pbtest_Scalars_put_f_sint64(p, PBT_F_SINT64)),
        (pbtest_Scalars_set_f_sfixed64(m, PBT_F_SFIXED64),
         pbtest_Scalars_set_f_sint32(m, PBT_F_SINT32),
         pbtest_Scalars_set_f_sint64(m, PBT_F_SINT64)));
    pbtest_Scalars_end(m);
    return finish(&h, len);
}
#undef S
#undef RUN

uint8_t *pbtest_write_repeated(size_t slice, size_t *len)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pbtest_Repeated m;
    pbtest_Repeated_init_root(&m, pb_heap_stream(&h));
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_double(&m, pbt_r_double[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_float(&m, pbt_r_float[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_int64(&m, pbt_r_int64[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_uint64(&m, pbt_r_uint64[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_int32(&m, pbt_r_int32[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_fixed64(&m, pbt_r_fixed64[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_fixed32(&m, pbt_r_fixed32[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_bool(&m, pbt_r_bool[i]);
    pbtest_Repeated_add_r_string(&m, pbt_r_string[0]);
    pbtest_Repeated_add_r_string_len(&m, pbt_r_string[1], strlen(pbt_r_string[1]));
    pbtest_Repeated_add_r_bytes(&m, pbt_r_bytes0, sizeof pbt_r_bytes0);
    pbtest_Repeated_add_r_bytes(&m, "", 0);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_uint32(&m, pbt_r_uint32[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_enum(&m, (pbtest_Color)pbt_r_enum[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_sfixed32(&m, pbt_r_sfixed32[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_sfixed64(&m, pbt_r_sfixed64[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_sint32(&m, pbt_r_sint32[i]);
    for (size_t i = 0; i < 2; i++)
        pbtest_Repeated_add_r_sint64(&m, pbt_r_sint64[i]);
    pbtest_Repeated_end(&m);
    return finish(&h, len);
}

uint8_t *pbtest_write_packed(size_t slice, size_t *len)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pbtest_Packed m;
    pbtest_Packed_init_root(&m, pb_heap_stream(&h));
    pbtest_Packed_set_p_double(&m, pbt_p_double, COUNT(pbt_p_double));
    pbtest_Packed_set_p_float(&m, pbt_p_float, COUNT(pbt_p_float));
    pbtest_Packed_set_p_int64(&m, pbt_p_int64, COUNT(pbt_p_int64));
    pbtest_Packed_set_p_uint64(&m, pbt_p_uint64, COUNT(pbt_p_uint64));
    pbtest_Packed_set_p_int32(&m, pbt_p_int32, COUNT(pbt_p_int32));
    pbtest_Packed_set_p_fixed64(&m, pbt_p_fixed64, COUNT(pbt_p_fixed64));
    pbtest_Packed_set_p_fixed32(&m, pbt_p_fixed32, COUNT(pbt_p_fixed32));
    pbtest_Packed_set_p_bool(&m, pbt_p_bool, COUNT(pbt_p_bool));
    pbtest_Packed_set_p_uint32(&m, pbt_p_uint32, COUNT(pbt_p_uint32));
    pbtest_Packed_set_p_enum(&m, pbt_p_enum, COUNT(pbt_p_enum));
    pbtest_Packed_set_p_sfixed32(&m, pbt_p_sfixed32, COUNT(pbt_p_sfixed32));
    pbtest_Packed_set_p_sfixed64(&m, pbt_p_sfixed64, COUNT(pbt_p_sfixed64));
    pbtest_Packed_set_p_sint32(&m, pbt_p_sint32, COUNT(pbt_p_sint32));
    pbtest_Packed_set_p_sint64(&m, pbt_p_sint64, COUNT(pbt_p_sint64));
    pbtest_Packed_end(&m);
    return finish(&h, len);
}

uint8_t *pbtest_write_outer(size_t slice, size_t *len)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pbtest_Outer o;
    pbtest_Outer_init_root(&o, pb_heap_stream(&h));
    pbtest_Outer_set_mode(&o, pbtest_Outer_Mode_MODE_AUTO);

    pbtest_Outer_Middle mid;
    pbtest_Outer_Middle_Leaf leaf;
    pbtest_Outer_begin_middle(&o, &mid);
    pbtest_Outer_Middle_set_id(&mid, 7);
    pbtest_Outer_Middle_begin_leaf(&mid, &leaf);
    pbtest_Outer_Middle_Leaf_set_depth(&leaf, 3);
    pbtest_Outer_Middle_Leaf_set_tag(&leaf, "leaf");
    pbtest_Outer_Middle_Leaf_end(&leaf);
    pbtest_Outer_Middle_begin_leaves(&mid, &leaf);
    pbtest_Outer_Middle_Leaf_set_depth(&leaf, 4);
    pbtest_Outer_Middle_Leaf_end(&leaf);
    pbtest_Outer_Middle_begin_leaves(&mid, &leaf);
    pbtest_Outer_Middle_Leaf_set_tag_len(&leaf, "bx", 1);
    pbtest_Outer_Middle_Leaf_end(&leaf);
    pbtest_Outer_Middle_end(&mid);

    pbtest_Outer_begin_middles(&o, &mid);
    pbtest_Outer_Middle_set_id(&mid, 1);
    pbtest_Outer_Middle_end(&mid);
    pbtest_Outer_begin_middles(&o, &mid);
    pbtest_Outer_Middle_set_id(&mid, 2);
    pbtest_Outer_Middle_begin_leaf(&mid, &leaf);
    pbtest_Outer_Middle_Leaf_set_depth(&leaf, 9);
    /* No explicit ends: beginning the next child of `o` closes both, as
     * ProtoZero does. */

    pbtest_dep_DepPoint pt;
    pbtest_Outer_begin_point(&o, &pt);
    pbtest_dep_DepPoint_set_x(&pt, -5);
    pbtest_dep_DepPoint_set_y(&pt, 6);
    pbtest_dep_DepPoint_set_label(&pt, "p");
    pbtest_dep_DepPoint_end(&pt);
    pbtest_Outer_begin_points(&o, &pt);
    pbtest_dep_DepPoint_set_x(&pt, 1);
    pbtest_dep_DepPoint_end(&pt);
    pbtest_Outer_begin_points(&o, &pt);
    pbtest_dep_DepPoint_set_y(&pt, -1);
    pbtest_dep_DepPoint_end(&pt);

    pbtest_Outer_set_dep_color(&o, pbtest_dep_DepColor_DEP_NEGATIVE);

    pbtest_Scalars sc;
    pbtest_Outer_begin_scalars(&o, &sc);
    fill_scalars(&sc);
    pbtest_Scalars_end(&sc);

    pbtest_Outer_set_default_(&o, 42);
    pbtest_Outer_set_register_(&o, "rax");
    for (uint32_t i = 1; i <= 3; i++)
        pbtest_Outer_add_case_(&o, i);
    pbtest_Outer_set_true_(&o, true);
    pbtest_Outer_set_choice_number(&o, -9);

    pbtest_Outer_CountsEntry ce;
    pbtest_Outer_begin_counts(&o, &ce);
    pbtest_Outer_CountsEntry_set_key(&ce, "k");
    pbtest_Outer_CountsEntry_set_value(&ce, 5);
    pbtest_Outer_CountsEntry_end(&ce);

    pbtest_Outer_set_wide_tag(&o, PBT_WIDE_TAG);
    pbtest_Outer_set_max_field(&o, PBT_MAX_FIELD);
    pbtest_Outer_end(&o);
    return finish(&h, len);
}

/* ---- checking ------------------------------------------------------------ */

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#define FAIL(what)                                                \
    do {                                                          \
        fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, what); \
        failures++;                                               \
    } while (0)

static bool bytes_eq(pb_bytes b, const void *data, size_t len)
{
    return b.size == len && (len == 0 || memcmp(b.data, data, len) == 0);
}

static bool str_eq(pb_bytes b, const char *s)
{
    return bytes_eq(b, s, strlen(s));
}

enum elem {
    EL_VARINT,
    EL_FIXED32,
    EL_FIXED64
};

/* Every element of repeated scalar field `id`, packed or not, as raw bits. */
static size_t collect(const void *data, size_t len, uint32_t id, enum elem kind, uint64_t *out,
                      size_t max)
{
    static const uint8_t wire[] = { PB_WIRE_VARINT, PB_WIRE_FIXED32, PB_WIRE_FIXED64 };
    pb_reader r;
    pb_field f;
    size_t n = 0;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
        if (f.id != id)
            continue;
        if (f.wire_type == wire[kind]) {
            if (n < max)
                out[n] = f.value;
            n++;
        } else if (f.wire_type == PB_WIRE_LEN) {
            pb_packed_iter it;
            pb_packed_init(&it, &f);
            for (;;) {
                uint64_t v = 0;
                uint32_t v32 = 0;
                bool ok = kind == EL_VARINT    ? pb_packed_next_varint(&it, &v)
                          : kind == EL_FIXED64 ? pb_packed_next_fixed64(&it, &v)
                                               : pb_packed_next_fixed32(&it, &v32);
                if (!ok)
                    break;
                if (n < max)
                    out[n] = kind == EL_FIXED32 ? v32 : v;
                n++;
            }
        }
    }
    return n;
}

/* Payloads of every occurrence of length-delimited field `id`. */
static size_t collect_len(const void *data, size_t len, uint32_t id, pb_bytes *out, size_t max)
{
    pb_reader r;
    pb_field f;
    size_t n = 0;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
        if (f.id == id && f.wire_type == PB_WIRE_LEN) {
            if (n < max)
                out[n] = pb_field_bytes(&f);
            n++;
        }
    }
    return n;
}

static double as_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static float as_float(uint64_t u)
{
    uint32_t u32 = (uint32_t)u;
    float x;
    memcpy(&x, &u32, sizeof x);
    return x;
}

#define AS_I64(u)    ((int64_t)(u))
#define AS_U64(u)    ((uint64_t)(u))
#define AS_I32(u)    ((int32_t)(uint32_t)(u))
#define AS_U32(u)    ((uint32_t)(u))
#define AS_BOOL(u)   ((u) != 0)
#define AS_SINT32(u) ((int32_t)pb_zigzag_decode64((uint32_t)(u)))
#define AS_SINT64(u) pb_zigzag_decode64(u)
#define AS_DOUBLE(u) as_double(u)
#define AS_FLOAT(u)  as_float(u)

/* Elements of `field` read back (any encoding) must equal `expected`, and the
 * view's count must agree. */
#define CHECK_ELEMS(data, len, field, kind, conv, count, expected) \
    do {                                                           \
        uint64_t got_[8];                                          \
        size_t n_ = collect(data, len, field, kind, got_, 8);      \
        CHECK(n_ == COUNT(expected));                              \
        CHECK((count) == COUNT(expected));                         \
        for (size_t i_ = 0; i_ < n_ && i_ < COUNT(expected); i_++) \
            CHECK(conv(got_[i_]) == (expected)[i_]);               \
    } while (0)

static int check_scalars_view(const pbtest_Scalars_view *v)
{
    int failures = 0;
    CHECK(v->has_f_double && v->f_double == PBT_F_DOUBLE);
    CHECK(v->has_f_float && v->f_float == PBT_F_FLOAT);
    CHECK(v->has_f_int64 && v->f_int64 == PBT_F_INT64);
    CHECK(v->has_f_uint64 && v->f_uint64 == PBT_F_UINT64);
    CHECK(v->has_f_int32 && v->f_int32 == PBT_F_INT32);
    CHECK(v->has_f_fixed64 && v->f_fixed64 == PBT_F_FIXED64);
    CHECK(v->has_f_fixed32 && v->f_fixed32 == PBT_F_FIXED32);
    CHECK(v->has_f_bool && v->f_bool == PBT_F_BOOL);
    CHECK(v->has_f_string && str_eq(v->f_string, PBT_F_STRING));
    CHECK(v->has_f_bytes && bytes_eq(v->f_bytes, pbt_f_bytes, sizeof pbt_f_bytes));
    CHECK(v->has_f_uint32 && v->f_uint32 == PBT_F_UINT32);
    CHECK(v->has_f_enum && v->f_enum == PBT_F_ENUM);
    CHECK(v->has_f_sfixed32 && v->f_sfixed32 == PBT_F_SFIXED32);
    CHECK(v->has_f_sfixed64 && v->f_sfixed64 == PBT_F_SFIXED64);
    CHECK(v->has_f_sint32 && v->f_sint32 == PBT_F_SINT32);
    CHECK(v->has_f_sint64 && v->f_sint64 == PBT_F_SINT64);
    return failures;
}

int pbtest_check_scalars(const void *data, size_t len)
{
    int failures = 0;
    pbtest_Scalars_view v;
    CHECK(pbtest_Scalars_decode(&v, data, len));
    return failures + check_scalars_view(&v);
}

int pbtest_check_repeated(const void *data, size_t len)
{
    int failures = 0;
    pbtest_Repeated_view v;
    CHECK(pbtest_Repeated_decode(&v, data, len));
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_double, EL_FIXED64, AS_DOUBLE, v.r_double_count,
                pbt_r_double);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_float, EL_FIXED32, AS_FLOAT, v.r_float_count,
                pbt_r_float);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_int64, EL_VARINT, AS_I64, v.r_int64_count,
                pbt_r_int64);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_uint64, EL_VARINT, AS_U64, v.r_uint64_count,
                pbt_r_uint64);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_int32, EL_VARINT, AS_I32, v.r_int32_count,
                pbt_r_int32);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_fixed64, EL_FIXED64, AS_U64, v.r_fixed64_count,
                pbt_r_fixed64);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_fixed32, EL_FIXED32, AS_U32, v.r_fixed32_count,
                pbt_r_fixed32);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_bool, EL_VARINT, AS_BOOL, v.r_bool_count,
                pbt_r_bool);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_uint32, EL_VARINT, AS_U32, v.r_uint32_count,
                pbt_r_uint32);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_enum, EL_VARINT, AS_I32, v.r_enum_count,
                pbt_r_enum);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_sfixed32, EL_FIXED32, AS_I32, v.r_sfixed32_count,
                pbt_r_sfixed32);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_sfixed64, EL_FIXED64, AS_I64, v.r_sfixed64_count,
                pbt_r_sfixed64);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_sint32, EL_VARINT, AS_SINT32, v.r_sint32_count,
                pbt_r_sint32);
    CHECK_ELEMS(data, len, pbtest_Repeated_FIELD_r_sint64, EL_VARINT, AS_SINT64, v.r_sint64_count,
                pbt_r_sint64);

    pb_bytes b[4];
    CHECK(collect_len(data, len, pbtest_Repeated_FIELD_r_string, b, 4) == 2);
    CHECK(v.r_string_count == 2);
    CHECK(str_eq(b[0], pbt_r_string[0]) && str_eq(b[1], pbt_r_string[1]));
    CHECK(collect_len(data, len, pbtest_Repeated_FIELD_r_bytes, b, 4) == 2);
    CHECK(v.r_bytes_count == 2);
    CHECK(bytes_eq(b[0], pbt_r_bytes0, sizeof pbt_r_bytes0) && b[1].size == 0);
    return failures;
}

int pbtest_check_packed(const void *data, size_t len)
{
    int failures = 0;
    pbtest_Packed_view v;
    CHECK(pbtest_Packed_decode(&v, data, len));
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_double, EL_FIXED64, AS_DOUBLE, v.p_double_count,
                pbt_p_double);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_float, EL_FIXED32, AS_FLOAT, v.p_float_count,
                pbt_p_float);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_int64, EL_VARINT, AS_I64, v.p_int64_count,
                pbt_p_int64);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_uint64, EL_VARINT, AS_U64, v.p_uint64_count,
                pbt_p_uint64);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_int32, EL_VARINT, AS_I32, v.p_int32_count,
                pbt_p_int32);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_fixed64, EL_FIXED64, AS_U64, v.p_fixed64_count,
                pbt_p_fixed64);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_fixed32, EL_FIXED32, AS_U32, v.p_fixed32_count,
                pbt_p_fixed32);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_bool, EL_VARINT, AS_BOOL, v.p_bool_count,
                pbt_p_bool);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_uint32, EL_VARINT, AS_U32, v.p_uint32_count,
                pbt_p_uint32);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_enum, EL_VARINT, AS_I32, v.p_enum_count,
                pbt_p_enum);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_sfixed32, EL_FIXED32, AS_I32, v.p_sfixed32_count,
                pbt_p_sfixed32);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_sfixed64, EL_FIXED64, AS_I64, v.p_sfixed64_count,
                pbt_p_sfixed64);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_sint32, EL_VARINT, AS_SINT32, v.p_sint32_count,
                pbt_p_sint32);
    CHECK_ELEMS(data, len, pbtest_Packed_FIELD_p_sint64, EL_VARINT, AS_SINT64, v.p_sint64_count,
                pbt_p_sint64);
    return failures;
}

static int check_leaf(pb_bytes b, bool has_depth, int32_t depth, const char *tag)
{
    int failures = 0;
    pbtest_Outer_Middle_Leaf_view v;
    CHECK(pbtest_Outer_Middle_Leaf_decode(&v, b.data, b.size));
    CHECK(v.has_depth == has_depth && (!has_depth || v.depth == depth));
    CHECK(v.has_tag == (tag != NULL) && (!tag || str_eq(v.tag, tag)));
    return failures;
}

static int check_point(pb_bytes b, const int32_t *x, const int32_t *y, const char *label)
{
    int failures = 0;
    pbtest_dep_DepPoint_view v;
    CHECK(pbtest_dep_DepPoint_decode(&v, b.data, b.size));
    CHECK(v.has_x == (x != NULL) && (!x || v.x == *x));
    CHECK(v.has_y == (y != NULL) && (!y || v.y == *y));
    CHECK(v.has_label == (label != NULL) && (!label || str_eq(v.label, label)));
    return failures;
}

int pbtest_check_outer(const void *data, size_t len)
{
    int failures = 0;
    pbtest_Outer_view v;
    CHECK(pbtest_Outer_decode(&v, data, len));
    CHECK(v.has_mode && v.mode == pbtest_Outer_Mode_MODE_AUTO);

    /* middle, three levels deep */
    CHECK(v.has_middle);
    pbtest_Outer_Middle_view mid;
    CHECK(pbtest_Outer_Middle_decode(&mid, v.middle.data, v.middle.size));
    CHECK(mid.has_id && mid.id == 7);
    CHECK(mid.has_leaf);
    failures += check_leaf(mid.leaf, true, 3, "leaf");
    CHECK(mid.leaves_count == 2);
    pb_bytes b[4];
    if (collect_len(v.middle.data, v.middle.size, pbtest_Outer_Middle_FIELD_leaves, b, 4) == 2) {
        failures += check_leaf(b[0], true, 4, NULL);
        failures += check_leaf(b[1], false, 0, "b");
    } else {
        FAIL("expected two leaves");
    }

    /* middles */
    CHECK(v.middles_count == 2);
    if (collect_len(data, len, pbtest_Outer_FIELD_middles, b, 4) == 2) {
        CHECK(pbtest_Outer_Middle_decode(&mid, b[0].data, b[0].size));
        CHECK(mid.has_id && mid.id == 1 && !mid.has_leaf && mid.leaves_count == 0);
        CHECK(pbtest_Outer_Middle_decode(&mid, b[1].data, b[1].size));
        CHECK(mid.has_id && mid.id == 2 && mid.has_leaf && mid.leaves_count == 0);
        failures += check_leaf(mid.leaf, true, 9, NULL);
    } else {
        FAIL("expected two middles");
    }

    /* imported message type */
    const int32_t m5 = -5, p6 = 6, p1 = 1, m1 = -1;
    CHECK(v.has_point);
    failures += check_point(v.point, &m5, &p6, "p");
    CHECK(v.points_count == 2);
    if (collect_len(data, len, pbtest_Outer_FIELD_points, b, 4) == 2) {
        failures += check_point(b[0], &p1, NULL, NULL);
        failures += check_point(b[1], NULL, &m1, NULL);
    } else {
        FAIL("expected two points");
    }
    CHECK(v.has_dep_color && v.dep_color == pbtest_dep_DepColor_DEP_NEGATIVE);

    CHECK(v.has_scalars);
    pbtest_Scalars_view sc;
    CHECK(pbtest_Scalars_decode(&sc, v.scalars.data, v.scalars.size));
    failures += check_scalars_view(&sc);

    /* keyword-named fields */
    CHECK(v.has_default_ && v.default_ == 42);
    CHECK(v.has_register_ && str_eq(v.register_, "rax"));
    static const uint32_t cases[3] = { 1, 2, 3 };
    CHECK_ELEMS(data, len, pbtest_Outer_FIELD_case_, EL_VARINT, AS_U32, v.case__count, cases);
    CHECK(v.has_true_ && v.true_);

    /* oneof: only the member that was set */
    CHECK(!v.has_choice_text);
    CHECK(v.has_choice_number && v.choice_number == -9);

    /* map<string, int32> */
    CHECK(v.counts_count == 1);
    if (collect_len(data, len, pbtest_Outer_FIELD_counts, b, 4) == 1) {
        pbtest_Outer_CountsEntry_view e;
        CHECK(pbtest_Outer_CountsEntry_decode(&e, b[0].data, b[0].size));
        CHECK(e.has_key && str_eq(e.key, "k"));
        CHECK(e.has_value && e.value == 5);
    } else {
        FAIL("expected one map entry");
    }

    CHECK(v.has_wide_tag && v.wide_tag == PBT_WIDE_TAG);
    CHECK(v.has_max_field && v.max_field == PBT_MAX_FIELD);
    return failures;
}
