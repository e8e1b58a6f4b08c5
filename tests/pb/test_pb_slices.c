/* SPDX-License-Identifier: MIT */
/* The writer's output must not depend on how the stream is cut into
 * buffers: the same message written into one huge slice (fast paths only)
 * and into slices of every size from PB_MIN_BUFFER_BYTES up must be the
 * same bytes. Nested-message headers (tag + 4-byte size field, which may
 * not straddle buffers) are then placed on every offset relative to the
 * buffer boundaries. */
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

/* Bigger than any tree the tests generate. */
#define FLAT_SLICE (1u << 20)

static void hexdiff(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
    size_t i = 0;
    while (i < got_len && i < want_len && got[i] == want[i])
        i++;
    print_message("lengths %zu vs %zu, first difference at byte %zu\n", got_len, want_len, i);
}

/* Writes `m` into a fresh heap buffer of `slice`-byte slices; returns the
 * bytes (malloc'd) and the number of slices used. */
static bool use_runs; /* write with pbt_write_runs() */

static uint8_t *write_tree(const pbt_msg *m, size_t slice, size_t *len, size_t *slices,
                           pbt_arena *a)
{
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pb_msg *pool = pbt_alloc(a, (pbt_count_nested(m) + 1) * sizeof *pool);
    unsigned bad = use_runs ? pbt_write_runs(pb_heap_stream(&h), m, pool)
                            : pbt_write(pb_heap_stream(&h), m, pool);
    assert_int_equal(bad, 0);
    uint8_t *out = pb_heap_dup(&h, len);
    assert_non_null(out);
    assert_int_equal(pb_stream_bytes_written(pb_heap_stream(&h)), *len);
    if (slices)
        *slices = pb_heap_slices_used(&h);
    pb_heap_free(&h);
    return out;
}

static void test_flat_vs_tiny_slices(void **state)
{
    use_runs = state && *state;
    pbt_rng r;
    pbt_rng_seed(&r, 0x51ce5);
    const pbt_gen_opts opts = { .max_depth = 6,
                                .max_fields = 7,
                                .max_total = 80,
                                .max_bytes_len = 300,
                                .max_packed = 40,
                                .nested_pct = 25 };
    for (int t = 0; t < 60; t++) {
        pbt_arena a = { 0 };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        size_t flat_len, slices;
        uint8_t *flat = write_tree(m, FLAT_SLICE, &flat_len, &slices, &a);
        /* One slice: the slow path never switched buffers. */
        assert_int_equal(slices, flat_len ? 1 : 0);
        /* The flat bytes are the reference encoding... */
        uint8_t *ref = pbt_alloc(&a, pbt_ref_size(m) + 1);
        size_t ref_len = pbt_ref_encode(m, ref);
        assert_int_equal(flat_len, ref_len);
        assert_memory_equal(flat, ref, ref_len);
        /* ...and every slicing gives them again. */
        for (size_t s = PB_MIN_BUFFER_BYTES; s <= 64; s++) {
            size_t len, used;
            uint8_t *got = write_tree(m, s, &len, &used, &a);
            if (len != flat_len || memcmp(got, flat, len) != 0) {
                hexdiff(got, len, flat, flat_len);
                fail_msg("tree %d, slice %zu: output differs from the flat one", t, s);
            }
            if (flat_len > s)
                assert_true(used > 1);
            free(got);
        }
        char why[256];
        if (!pbt_check(flat, flat_len, m, why, sizeof why))
            fail_msg("tree %d: %s", t, why);
        free(flat);
        pbt_arena_free(&a);
    }
    use_runs = false;
}

/* The same with runs of fields under one bounds check (pb_msg_reserve()):
 * in the flat slice every run takes the fast path; in tiny slices runs
 * meet the buffer end at every offset and fall back field by field. Both
 * must give the reference bytes. */
static void test_flat_vs_tiny_slices_runs(void **state)
{
    static int on = 1;
    (void)state;
    void *st = &on;
    test_flat_vs_tiny_slices(&st);
}

/* A warmed-up heap buffer reuses its slices after pb_heap_reset(). */
static void test_heap_reuse(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 77);
    const pbt_gen_opts opts = {
        .max_depth = 4, .max_fields = 6, .max_total = 40, .max_bytes_len = 100, .max_packed = 10
    };
    pb_heap_buffer h;
    pb_heap_init(&h, 24);
    for (int t = 0; t < 200; t++) {
        pbt_arena a = { 0 };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        pb_heap_reset(&h);
        pb_msg *pool = pbt_alloc(&a, (pbt_count_nested(m) + 1) * sizeof *pool);
        assert_int_equal(pbt_write(pb_heap_stream(&h), m, pool), 0);
        size_t len;
        uint8_t *got = pb_heap_dup(&h, &len);
        uint8_t *ref = pbt_alloc(&a, pbt_ref_size(m) + 1);
        size_t ref_len = pbt_ref_encode(m, ref);
        assert_int_equal(len, ref_len);
        assert_int_equal(pb_heap_size(&h), ref_len);
        assert_memory_equal(got, ref, ref_len);
        free(got);
        pbt_arena_free(&a);
    }
    pb_heap_free(&h);
}

/* ---- nested headers at every offset ------------------------------------------ */

/* root { F(id) { 1: 150, 2 { 3: <payload> } }, 4: 1 } written after `prefix`
 * raw stream bytes (framing is the caller's business, so any count works);
 * returns the remaining room in the current buffer just before F begins. */
typedef struct header_case {
    uint32_t id;
    size_t payload;
} header_case;

static uint8_t payload_bytes[64];

static size_t write_header_case(pb_stream *s, size_t prefix, const header_case *hc)
{
    static const uint8_t junk[256] = { 0 };
    pb_stream_write(s, junk, prefix);
    pb_msg root, f, g;
    pb_msg_init_root(&root, s);
    size_t room = (size_t)(s->end - s->write_ptr);
    pb_msg_begin_nested(&root, hc->id, &f);
    pb_msg_append_varint(&f, 1, 150);
    pb_msg_begin_nested(&f, 2, &g);
    pb_msg_append_bytes(&g, 3, payload_bytes, hc->payload);
    pb_msg_end(&g);
    pb_msg_end(&f);
    pb_msg_append_varint(&root, 4, 1);
    pb_msg_end(&root);
    return room;
}

static void header_model(const header_case *hc, pbt_msg *root, pbt_field *rf, pbt_msg *fm,
                         pbt_field *ff, pbt_msg *gm, pbt_field *gf)
{
    gf[0] = (pbt_field){ .id = 3, .kind = PBT_BYTES, .data = payload_bytes, .len = hc->payload };
    *gm = (pbt_msg){ gf, 1 };
    ff[0] = (pbt_field){ .id = 1, .kind = PBT_VARINT, .value = 150 };
    ff[1] = (pbt_field){ .id = 2, .kind = PBT_NESTED, .child = gm };
    *fm = (pbt_msg){ ff, 2 };
    rf[0] = (pbt_field){ .id = hc->id, .kind = PBT_NESTED, .child = fm };
    rf[1] = (pbt_field){ .id = 4, .kind = PBT_VARINT, .value = 1 };
    *root = (pbt_msg){ rf, 2 };
}

static void test_nested_header_every_offset(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof payload_bytes; i++)
        payload_bytes[i] = (uint8_t)(0x41 + i);
    static const header_case hcs[] = {
        { 1, 0 },               /* 1-byte tag, empty grandchild payload */
        { 1, 20 },              /* payload longer than a small slice */
        { 300, 5 },             /* 2-byte tag */
        { PB_MAX_FIELD_ID, 9 }, /* 5-byte tag: header is exactly 9 bytes */
    };
    for (size_t c = 0; c < sizeof hcs / sizeof hcs[0]; c++) {
        const header_case *hc = &hcs[c];
        pbt_msg root, fm, gm;
        pbt_field rf[2], ff[2], gf[1];
        header_model(hc, &root, rf, &fm, ff, &gm, gf);
        for (size_t s = 16; s <= 48; s++) {
            bool room_seen[49] = { false };
            for (size_t k = 0; k <= 2 * s; k++) {
                pb_heap_buffer flat, tiny;
                pb_heap_init(&flat, 4096);
                pb_heap_init(&tiny, s);
                write_header_case(pb_heap_stream(&flat), k, hc);
                size_t room = write_header_case(pb_heap_stream(&tiny), k, hc);
                assert_true(room <= s);
                room_seen[room] = true;
                size_t flat_len, tiny_len;
                uint8_t *want = pb_heap_dup(&flat, &flat_len);
                uint8_t *got = pb_heap_dup(&tiny, &tiny_len);
                if (tiny_len != flat_len || memcmp(got, want, flat_len) != 0) {
                    hexdiff(got, tiny_len, want, flat_len);
                    fail_msg("id %u, slice %zu, prefix %zu: output differs", hc->id, s, k);
                }
                /* Decodes (from the end of the prefix) to the model. */
                uint8_t *exact = pbt_exact_copy(got + k, tiny_len - k);
                char why[256];
                if (!pbt_check(exact, tiny_len - k, &root, why, sizeof why))
                    fail_msg("id %u, slice %zu, prefix %zu: %s", hc->id, s, k, why);
                free(exact);
                free(want);
                free(got);
                pb_heap_free(&flat);
                pb_heap_free(&tiny);
            }
            /* The header met the buffer end at every distance, including
             * too close to fit (it then moved to the next buffer) and none
             * at all (a full buffer). */
            for (size_t room = 0; room < s; room++)
                if (!room_seen[room])
                    fail_msg("slice %zu: never began a nested message %zu bytes before the end", s,
                             room);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat_vs_tiny_slices),
        cmocka_unit_test(test_flat_vs_tiny_slices_runs),
        cmocka_unit_test(test_heap_reuse),
        cmocka_unit_test(test_nested_header_every_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
