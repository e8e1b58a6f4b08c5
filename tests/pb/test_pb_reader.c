/* SPDX-License-Identifier: MIT */
/* The reader on malformed and boundary inputs. Every input sits in a heap
 * block of exactly its size, so under ASan (as in CI) any read past the end
 * fails the test. Each malformed case must stop with the expected pb_error
 * after the expected number of good fields, leave the reader at the start of
 * the bad field, and stay stopped. */
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

typedef struct reader_case {
    const char *name;
    const uint8_t *in;
    size_t len;
    pb_error err;    /* how the iteration ends */
    unsigned fields; /* good fields read before that */
    size_t stop_at;  /* reader position when it stops */
} reader_case;

#define IN(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })
#define FF9     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff

static const reader_case cases[] = {
    { "empty input", (const uint8_t[]){ 0 }, 0, PB_OK, 0, 0 },
    { "varint 0", IN(0x08, 0x00), PB_OK, 1, 2 },
    { "varint max (10 bytes)", IN(0x08, FF9, 0x01), PB_OK, 1, 11 },
    { "overlong zero (10 bytes)",
      IN(0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), PB_OK, 1, 11 },
    { "max field id", IN(0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00), PB_OK, 1, 6 },
    { "empty LEN at end", IN(0x12, 0x00), PB_OK, 1, 2 },
    /* truncation */
    { "tag: continuation at end", IN(0x80), PB_ERR_TRUNCATED, 0, 0 },
    { "tag: two bytes, unterminated", IN(0x08, 0x01, 0x88, 0x80), PB_ERR_TRUNCATED, 1, 2 },
    { "varint: missing", IN(0x08), PB_ERR_TRUNCATED, 0, 0 },
    { "varint: unterminated", IN(0x08, 0x80), PB_ERR_TRUNCATED, 0, 0 },
    { "varint: 9 of 10 bytes", IN(0x08, FF9), PB_ERR_TRUNCATED, 0, 0 },
    { "len: missing", IN(0x12), PB_ERR_TRUNCATED, 0, 0 },
    { "len: unterminated", IN(0x12, 0x80), PB_ERR_TRUNCATED, 0, 0 },
    { "len: past the end", IN(0x12, 0x05, 'a', 'b'), PB_ERR_TRUNCATED, 0, 0 },
    { "len: one past the end", IN(0x08, 0x01, 0x12, 0x03, 'a', 'b'), PB_ERR_TRUNCATED, 1, 2 },
    { "len: 2^32-1", IN(0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00), PB_ERR_TRUNCATED, 0, 0 },
    { "len: 2^64-1 (no pointer wrap)", IN(0x12, FF9, 0x01, 0x00), PB_ERR_TRUNCATED, 0, 0 },
    { "fixed32: no bytes", IN(0x15), PB_ERR_TRUNCATED, 0, 0 },
    { "fixed32: 3 bytes", IN(0x15, 1, 2, 3), PB_ERR_TRUNCATED, 0, 0 },
    { "fixed64: 7 bytes", IN(0x19, 1, 2, 3, 4, 5, 6, 7), PB_ERR_TRUNCATED, 0, 0 },
    { "fixed64: after a good one", IN(0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x19, 1), PB_ERR_TRUNCATED, 1,
      9 },
    /* varint length */
    { "varint: 11 bytes", IN(0x08, FF9, 0xff, 0x01), PB_ERR_VARINT_TOO_LONG, 0, 0 },
    { "varint: 10th byte 2", IN(0x08, FF9, 0x02), PB_ERR_VARINT_TOO_LONG, 0, 0 },
    { "varint: 10th byte 0x80", IN(0x08, FF9, 0x80, 0x00), PB_ERR_VARINT_TOO_LONG, 0, 0 },
    { "varint: 10th byte 0x7f", IN(0x08, FF9, 0x7f), PB_ERR_VARINT_TOO_LONG, 0, 0 },
    { "tag: 11 bytes", IN(0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00),
      PB_ERR_VARINT_TOO_LONG, 0, 0 },
    { "len: 11 bytes", IN(0x12, FF9, 0xff, 0x00), PB_ERR_VARINT_TOO_LONG, 0, 0 },
    /* field numbers */
    { "field id 0, VARINT", IN(0x00, 0x00), PB_ERR_BAD_FIELD_ID, 0, 0 },
    { "field id 0, LEN", IN(0x02, 0x00), PB_ERR_BAD_FIELD_ID, 0, 0 },
    { "field id 2^29", IN(0x80, 0x80, 0x80, 0x80, 0x10, 0x00), PB_ERR_BAD_FIELD_ID, 0, 0 },
    { "field id 2^33-1", IN(0xf8, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00), PB_ERR_BAD_FIELD_ID, 0, 0 },
    { "field id from a 10-byte tag", IN(FF9, 0x01, 0x00), PB_ERR_BAD_FIELD_ID, 0, 0 },
    { "field id 0 after good field", IN(0x08, 0x01, 0x00), PB_ERR_BAD_FIELD_ID, 1, 2 },
    /* wire types */
    { "wire type 3 (group start)", IN(0x0b), PB_ERR_BAD_WIRE_TYPE, 0, 0 },
    { "wire type 4 (group end)", IN(0x0c), PB_ERR_BAD_WIRE_TYPE, 0, 0 },
    { "wire type 6", IN(0x0e, 0x00), PB_ERR_BAD_WIRE_TYPE, 0, 0 },
    { "wire type 7", IN(0x0f, 0x00), PB_ERR_BAD_WIRE_TYPE, 0, 0 },
    { "wire type 7 after a LEN", IN(0x12, 0x01, 0x00, 0x0f), PB_ERR_BAD_WIRE_TYPE, 1, 3 },
};

static void test_malformed_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const reader_case *c = &cases[i];
        uint8_t *in = pbt_exact_copy(c->in, c->len);
        pb_reader r;
        pb_reader_init(&r, in, c->len);
        pb_field f = { 0 };
        unsigned n = 0;
        while (pb_reader_next(&r, &f))
            n++;
        if (r.err != c->err || n != c->fields || (size_t)(r.p - in) != c->stop_at)
            fail_msg("'%s': %s after %u fields at %td; want %s after %u at %zu", c->name,
                     pb_error_str(r.err), n, r.p - in, pb_error_str(c->err), c->fields, c->stop_at);
        /* Stays stopped, same error. */
        assert_false(pb_reader_next(&r, &f));
        assert_int_equal(r.err, c->err);
        assert_int_equal(pb_validate(in, c->len), c->err);
        free(in);
    }
}

/* Values decoded from the well-formed boundary cases. */
static void test_boundary_values(void **state)
{
    (void)state;
    uint8_t *in = pbt_exact_copy(
        (const uint8_t[]){ 0x08, FF9, 0x01, 0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x12, 0x00 },
        11 + 6 + 2);
    pb_reader r;
    pb_reader_init(&r, in, 19);
    pb_field f = { 0 };
    assert_true(pb_reader_next(&r, &f));
    assert_int_equal(f.id, 1);
    assert_int_equal(f.wire_type, PB_WIRE_VARINT);
    assert_true(f.value == UINT64_MAX);
    assert_true(pb_reader_next(&r, &f));
    assert_int_equal(f.id, PB_MAX_FIELD_ID);
    assert_true(pb_reader_next(&r, &f));
    assert_int_equal(f.id, 2);
    assert_int_equal(f.wire_type, PB_WIRE_LEN);
    assert_int_equal(f.value, 0);
    assert_ptr_equal(f.data, in + 19);
    assert_false(pb_reader_next(&r, &f));
    assert_int_equal(r.err, PB_OK);
    free(in);
}

/* Every prefix of a valid message reads as the fields that fit, then
 * either a clean end or PB_ERR_TRUNCATED: never another error, never a read
 * past the prefix. */
static void test_every_prefix(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 5);
    const pbt_gen_opts opts = {
        .max_depth = 3, .max_fields = 8, .max_total = 30, .max_bytes_len = 40, .max_packed = 8
    };
    for (int t = 0; t < 40; t++) {
        pbt_arena a = { 0 };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        size_t len = pbt_ref_size(m);
        uint8_t *full = pbt_alloc(&a, len + 1);
        pbt_ref_encode(m, full);
        for (size_t n = 0; n <= len; n++) {
            uint8_t *in = pbt_exact_copy(full, n);
            pb_error e = pb_validate(in, n);
            if (n == len)
                assert_int_equal(e, PB_OK);
            else
                assert_true(e == PB_OK || e == PB_ERR_TRUNCATED);
            free(in);
        }
        pbt_arena_free(&a);
    }
}

/* ---- nesting ---------------------------------------------------------------------- */

/* `levels` nested messages, field 1 each, innermost holding field 2 = 7. */
static uint8_t *deep_message(unsigned levels, size_t *len)
{
    pb_heap_buffer h;
    pb_heap_init(&h, 4096);
    pb_msg *msgs = calloc(levels + 1, sizeof *msgs);
    assert_non_null(msgs);
    pb_msg_init_root(&msgs[0], pb_heap_stream(&h));
    for (unsigned i = 1; i <= levels; i++)
        pb_msg_begin_nested(&msgs[i - 1], 1, &msgs[i]);
    pb_msg_append_varint(&msgs[levels], 2, 7);
    pb_msg_end(&msgs[0]);
    size_t n;
    uint8_t *tmp = pb_heap_dup(&h, &n);
    uint8_t *out = pbt_exact_copy(tmp, n);
    free(tmp);
    free(msgs);
    pb_heap_free(&h);
    *len = n;
    return out;
}

static void test_depth_limit(void **state)
{
    (void)state;
    size_t len;
    uint8_t *in = deep_message(PB_MAX_DEPTH + 6, &len);
    pb_reader *rs = calloc(PB_MAX_DEPTH + 8, sizeof *rs);
    assert_non_null(rs);
    pb_reader_init(&rs[0], in, len);
    pb_field f = { 0 };
    unsigned d = 0;
    for (;;) {
        assert_true(pb_reader_next(&rs[d], &f));
        assert_int_equal(f.id, 1);
        if (!pb_reader_enter(&rs[d], &f, &rs[d + 1]))
            break;
        d++;
        assert_int_equal(rs[d].depth, d);
    }
    /* Readers up to depth PB_MAX_DEPTH exist; going deeper fails and stops
     * the parent with PB_ERR_TOO_DEEP. */
    assert_int_equal(d, PB_MAX_DEPTH);
    assert_int_equal(rs[d].err, PB_ERR_TOO_DEEP);
    assert_false(pb_reader_next(&rs[d], &f));
    free(rs);
    free(in);

    /* Exactly PB_MAX_DEPTH levels are fine all the way down. */
    in = deep_message(PB_MAX_DEPTH, &len);
    pb_reader cur, child = { 0 };
    pb_reader_init(&cur, in, len);
    for (unsigned i = 0; i < PB_MAX_DEPTH; i++) {
        assert_true(pb_reader_next(&cur, &f));
        assert_true(pb_reader_enter(&cur, &f, &child));
        cur = child;
    }
    assert_true(pb_reader_next(&cur, &f));
    assert_int_equal(f.id, 2);
    assert_int_equal(f.value, 7);
    assert_false(pb_reader_next(&cur, &f));
    assert_int_equal(cur.err, PB_OK);
    free(in);
}

static void test_enter_wrong_type(void **state)
{
    (void)state;
    uint8_t *in = pbt_exact_copy((const uint8_t[]){ 0x08, 0x01, 0x12, 0x00 }, 4);
    pb_reader r, child = { 0 };
    pb_reader_init(&r, in, 4);
    pb_field f = { 0 };
    assert_true(pb_reader_next(&r, &f));
    assert_false(pb_reader_enter(&r, &f, &child));
    assert_int_equal(r.err, PB_ERR_WRONG_WIRE_TYPE);
    assert_false(pb_reader_next(&r, &f)); /* the parent stopped too */
    free(in);
}

/* A LEN field whose payload is itself malformed: the parent is fine, the
 * child reader reports the error. */
static void test_bad_child(void **state)
{
    (void)state;
    uint8_t *in = pbt_exact_copy((const uint8_t[]){ 0x0a, 0x02, 0x08, 0x80, 0x10, 0x01 }, 6);
    pb_reader r, child = { 0 };
    pb_reader_init(&r, in, 6);
    pb_field f = { 0 };
    assert_true(pb_reader_next(&r, &f));
    assert_true(pb_reader_enter(&r, &f, &child));
    assert_false(pb_reader_next(&child, &f));
    assert_int_equal(child.err, PB_ERR_TRUNCATED); /* bounded by the child's span */
    assert_true(pb_reader_next(&r, &f));
    assert_int_equal(f.id, 2);
    assert_false(pb_reader_next(&r, &f));
    assert_int_equal(r.err, PB_OK);
    free(in);
}

/* ---- packed iterators --------------------------------------------------------------- */

typedef enum {
    VARINT,
    FIXED32,
    FIXED64
} packed_type;

typedef struct packed_case {
    const char *name;
    packed_type type;
    const uint8_t *payload;
    size_t len;
    unsigned elems; /* read before the iteration ends */
    pb_error err;
} packed_case;

static const packed_case packed_cases[] = {
    { "varint: empty", VARINT, (const uint8_t[]){ 0 }, 0, 0, PB_OK },
    { "varint: three", VARINT, IN(0x01, 0xac, 0x02, 0x7f), 3, PB_OK },
    { "varint: last unterminated", VARINT, IN(0x01, 0x80), 1, PB_ERR_TRUNCATED },
    { "varint: 11 bytes", VARINT, IN(0x05, FF9, 0xff, 0x01), 1, PB_ERR_VARINT_TOO_LONG },
    { "varint: max", VARINT, IN(FF9, 0x01), 1, PB_OK },
    { "fixed32: two", FIXED32, IN(1, 0, 0, 0, 2, 0, 0, 0), 2, PB_OK },
    { "fixed32: 6 bytes", FIXED32, IN(1, 0, 0, 0, 2, 0), 1, PB_ERR_TRUNCATED },
    { "fixed32: 3 bytes", FIXED32, IN(1, 0, 0), 0, PB_ERR_TRUNCATED },
    { "fixed64: one", FIXED64, IN(1, 2, 3, 4, 5, 6, 7, 8), 1, PB_OK },
    { "fixed64: 12 bytes", FIXED64, IN(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), 1,
      PB_ERR_TRUNCATED },
    { "fixed64: 7 bytes", FIXED64, IN(1, 2, 3, 4, 5, 6, 7), 0, PB_ERR_TRUNCATED },
};

static void test_packed_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof packed_cases / sizeof packed_cases[0]; i++) {
        const packed_case *c = &packed_cases[i];
        /* field 1, LEN, 1-byte length, payload: ends exactly at the end of
         * the allocation. */
        size_t n = 2 + c->len;
        uint8_t *in = malloc(n);
        assert_non_null(in);
        in[0] = 0x0a;
        in[1] = (uint8_t)c->len;
        memcpy(in + 2, c->payload, c->len);
        pb_reader r;
        pb_reader_init(&r, in, n);
        pb_field f = { 0 };
        assert_true(pb_reader_next(&r, &f));
        pb_packed_iter it;
        pb_packed_init(&it, &f);
        unsigned got = 0;
        for (;;) {
            bool ok;
            if (c->type == VARINT) {
                uint64_t v;
                ok = pb_packed_next_varint(&it, &v);
            } else if (c->type == FIXED32) {
                uint32_t v;
                ok = pb_packed_next_fixed32(&it, &v);
                if (ok)
                    assert_int_equal(v, pb_read_fixed32(c->payload + 4 * got));
            } else {
                uint64_t v;
                ok = pb_packed_next_fixed64(&it, &v);
                if (ok)
                    assert_true(v == pb_read_fixed64(c->payload + 8 * got));
            }
            if (!ok)
                break;
            got++;
        }
        if (got != c->elems || it.err != c->err)
            fail_msg("'%s': %u elements, %s; want %u, %s", c->name, got, pb_error_str(it.err),
                     c->elems, pb_error_str(c->err));
        free(in);
    }
}

static void test_packed_wrong_type(void **state)
{
    (void)state;
    pb_field f = { .id = 1, .wire_type = PB_WIRE_VARINT, .value = 5, .data = NULL };
    pb_packed_iter it;
    pb_packed_init(&it, &f);
    uint64_t v;
    uint32_t v32;
    assert_false(pb_packed_next_varint(&it, &v));
    assert_false(pb_packed_next_fixed32(&it, &v32));
    assert_false(pb_packed_next_fixed64(&it, &v));
    assert_int_equal(it.err, PB_ERR_WRONG_WIRE_TYPE);
}

static void test_error_strings(void **state)
{
    (void)state;
    const char *seen[PB_ERR_WRONG_WIRE_TYPE + 1];
    for (int e = PB_OK; e <= PB_ERR_WRONG_WIRE_TYPE; e++) {
        seen[e] = pb_error_str((pb_error)e);
        assert_non_null(seen[e]);
        for (int k = 0; k < e; k++)
            assert_string_not_equal(seen[k], seen[e]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_table),  cmocka_unit_test(test_boundary_values),
        cmocka_unit_test(test_every_prefix),     cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_enter_wrong_type), cmocka_unit_test(test_bad_child),
        cmocka_unit_test(test_packed_table),     cmocka_unit_test(test_packed_wrong_type),
        cmocka_unit_test(test_error_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
