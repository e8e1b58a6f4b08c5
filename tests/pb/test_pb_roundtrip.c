/* SPDX-License-Identifier: MIT */
/* Round-trip property test: random message trees (field numbers up to
 * 2^29-1, every wire type and writer call, packed arrays of every element
 * type, strings and bytes up to 4 KiB, nesting up to 8 levels, children
 * left open for auto-finalization) are written by the writer and read back
 * recursively by the reader; every field must match the generator's record.
 * The bytes must also equal an independent reference encoder's. Fixed
 * seeds; most cases use large slices, some the smallest ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protos/pb/pb_heap.h"
#include "tests/pb/pb_test_util.h"

typedef struct coverage {
    unsigned kinds[PBT_KIND_COUNT];
    unsigned packed[PBT_PACKED_KIND_COUNT];
    unsigned max_depth;
    unsigned tag_bytes[6];
    unsigned left_open;
    size_t longest;
} coverage;

static void survey(coverage *c, const pbt_msg *m, unsigned depth)
{
    if (depth > c->max_depth)
        c->max_depth = depth;
    for (size_t i = 0; i < m->n; i++) {
        const pbt_field *f = &m->fields[i];
        c->kinds[f->kind]++;
        c->tag_bytes[pb_varint_size((uint64_t)f->id << 3)]++;
        if (f->kind == PBT_PACKED)
            c->packed[f->packed_kind]++;
        if ((f->kind == PBT_BYTES || f->kind == PBT_STRING) && f->len > c->longest)
            c->longest = f->len;
        if (f->kind == PBT_NESTED) {
            c->left_open += f->leave_open;
            survey(c, f->child, depth + 1);
        }
    }
}

static void roundtrip(const pbt_msg *m, size_t slice, pbt_arena *a, int t)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pb_msg *pool = pbt_alloc(a, (pbt_count_nested(m) + 1) * sizeof *pool);
    if (pbt_write(pb_heap_stream(&h), m, pool) != 0)
        fail_msg("case %d (slice %zu): sizes reported by the writer are wrong", t, slice);
    size_t len = pb_heap_size(&h);
    uint8_t *got = malloc(len ? len : 1); /* exact size for ASan */
    assert_non_null(got);
    pb_heap_copy(&h, got);
    pb_heap_free(&h);

    char why[256];
    if (!pbt_check(got, len, m, why, sizeof why))
        fail_msg("case %d (slice %zu): %s", t, slice, why);

    size_t ref_len = pbt_ref_size(m);
    uint8_t *ref = pbt_alloc(a, ref_len + 1);
    pbt_ref_encode(m, ref);
    assert_int_equal(len, ref_len);
    if (memcmp(got, ref, len) != 0)
        fail_msg("case %d (slice %zu): bytes differ from the reference encoder", t, slice);
    assert_int_equal(pb_validate(got, len), PB_OK);
    free(got);
}

static void test_random_roundtrip(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 20240601);
    const pbt_gen_opts opts = { .max_depth = 8,
                                .max_fields = 8,
                                .max_total = 150,
                                .max_bytes_len = 4096,
                                .max_packed = 60,
                                .nested_pct = 20 };
    coverage cov = { 0 };
    for (int t = 0; t < 2500; t++) {
        pbt_arena a = { 0 };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        survey(&cov, m, 0);
        roundtrip(m, 1u << 16, &a, t);
        pbt_arena_free(&a);
    }
    /* The generator did produce what the property claims to cover. */
    for (int k = 0; k < PBT_KIND_COUNT; k++)
        assert_true(cov.kinds[k] > 100);
    for (int k = 0; k < PBT_PACKED_KIND_COUNT; k++)
        assert_true(cov.packed[k] > 20);
    for (int b = 1; b <= 5; b++)
        assert_true(cov.tag_bytes[b] > 50);
    assert_int_equal(cov.max_depth, 8);
    assert_true(cov.left_open > 100);
    assert_true(cov.longest > 2048);
}

static void test_random_roundtrip_tiny_slices(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 99);
    const pbt_gen_opts opts = {
        .max_depth = 8, .max_fields = 6, .max_total = 100, .max_bytes_len = 1000, .max_packed = 40
    };
    static const size_t slices[] = { PB_MIN_BUFFER_BYTES, 17, 24, 31 };
    for (int t = 0; t < 200; t++) {
        pbt_arena a = { 0 };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        roundtrip(m, slices[t % 4], &a, t);
        pbt_arena_free(&a);
    }
}

/* An empty root and a root of only empty things. */
static void test_degenerate(void **state)
{
    (void)state;
    pbt_arena a = { 0 };
    pbt_msg empty = { NULL, 0 };
    roundtrip(&empty, 64, &a, -1);
    pbt_msg inner = { NULL, 0 };
    pbt_field f[3] = {
        { .id = 1, .kind = PBT_NESTED, .child = &inner, .leave_open = true },
        { .id = 2, .kind = PBT_NESTED, .child = &inner },
        { .id = 3, .kind = PBT_BYTES, .data = (const uint8_t *)"", .len = 0 },
    };
    pbt_msg m = { f, 3 };
    roundtrip(&m, PB_MIN_BUFFER_BYTES, &a, -2);
    pbt_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_roundtrip),
        cmocka_unit_test(test_random_roundtrip_tiny_slices),
        cmocka_unit_test(test_degenerate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
