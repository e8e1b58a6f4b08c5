/* SPDX-License-Identifier: MIT */
/* A stream delegate that really hands buffers off, the way a trace writer
 * commits shared-memory chunks: each finished buffer is copied to an output
 * log and its memory poisoned (0xAA) and never written again; size fields of
 * messages still open in it are redirected by annotate_patch() to patch
 * slots in the delegate's own table, applied to the log by offset at the
 * end. This proves that
 *   - annotate_patch() is called for every open size field in a buffer
 *     before that buffer is handed off (no open message still points into
 *     it when new_buffer() runs, and nothing writes to it afterwards);
 *   - a patch slot's first byte stays 0 while its message is open and gets
 *     the continuation bit once it is finalized;
 *   - the log with patches applied is byte for byte the flat encoding. */
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

#define POISON 0xAA

typedef struct patch {
    size_t offset; /* of the size field in the output log */
    uint8_t slot[PB_SIZE_FIELD_BYTES];
} patch;

typedef struct old_buffer {
    uint8_t *p;
    size_t n;
} old_buffer;

typedef struct handoff {
    pb_stream_delegate d;
    pb_stream stream;
    pbt_rng rng;
    size_t min_size, max_size;
    uint8_t *cur;
    size_t cur_size;
    uint8_t *log;
    size_t log_len, log_cap;
    old_buffer *old;
    size_t n_old, cap_old;
    patch **patches; /* slots must not move: one allocation each */
    size_t n_patches, cap_patches;
    unsigned handoffs;
} handoff;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    p = realloc(p, c * elem);
    assert_non_null(p);
    *cap = c;
    return p;
}

static bool is_open_slot(const pb_stream *s, const uint8_t *slot)
{
    for (const pb_msg *m = s->innermost; m; m = m->parent)
        if (m->size_field == slot)
            return true;
    return false;
}

/* Every slot: first byte 0 while its message is open, 0x80 set once not. */
static void check_slots(const handoff *h)
{
    for (size_t i = 0; i < h->n_patches; i++) {
        const patch *p = h->patches[i];
        if (is_open_slot(&h->stream, p->slot))
            assert_int_equal(p->slot[0], 0);
        else
            assert_true(p->slot[0] & 0x80);
    }
}

static void hand_off_current(handoff *h, const uint8_t *write_ptr)
{
    if (!h->cur)
        return;
    assert_ptr_equal(h->stream.begin, h->cur);
    size_t used = (size_t)(write_ptr - h->cur);
    assert_true(used <= h->cur_size);
    h->log = grow(h->log, &h->log_cap, h->log_len + used, 1);
    memcpy(h->log + h->log_len, h->cur, used);
    h->log_len += used;
    memset(h->cur, POISON, h->cur_size);
    h->old = grow(h->old, &h->cap_old, h->n_old + 1, sizeof *h->old);
    h->old[h->n_old++] = (old_buffer){ h->cur, h->cur_size };
    h->cur = NULL;
    h->handoffs++;
}

static pb_span handoff_new_buffer(void *ctx, pb_stream *s)
{
    handoff *h = ctx;
    assert_ptr_equal(s, &h->stream);
    if (h->cur) {
        /* annotate_patch() has run for all of them: no open message still
         * has its size field in the buffer going away. */
        for (const pb_msg *m = s->innermost; m; m = m->parent)
            if (m->size_field)
                assert_false(m->size_field >= h->cur && m->size_field < h->cur + h->cur_size);
    }
    check_slots(h);
    hand_off_current(h, s->write_ptr);
    size_t n = (size_t)pbt_rng_range(&h->rng, h->min_size, h->max_size);
    h->cur = malloc(n); /* exact size: ASan catches any overrun */
    assert_non_null(h->cur);
    h->cur_size = n;
    return (pb_span){ h->cur, h->cur + n };
}

static uint8_t *handoff_annotate_patch(void *ctx, uint8_t *size_field)
{
    handoff *h = ctx;
    /* The whole field lies in the current buffer and is still unwritten. */
    assert_non_null(h->cur);
    assert_true(size_field >= h->cur && size_field + PB_SIZE_FIELD_BYTES <= h->cur + h->cur_size);
    static const uint8_t zero[PB_SIZE_FIELD_BYTES] = { 0 };
    assert_memory_equal(size_field, zero, PB_SIZE_FIELD_BYTES);
    patch *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->offset = h->log_len + (size_t)(size_field - h->cur);
    memcpy(p->slot, size_field, PB_SIZE_FIELD_BYTES);
    h->patches = grow(h->patches, &h->cap_patches, h->n_patches + 1, sizeof *h->patches);
    h->patches[h->n_patches++] = p;
    return p->slot;
}

static void handoff_init(handoff *h, uint64_t seed, size_t min_size, size_t max_size)
{
    memset(h, 0, sizeof *h);
    h->d.new_buffer = handoff_new_buffer;
    h->d.annotate_patch = handoff_annotate_patch;
    h->d.ctx = h;
    pbt_rng_seed(&h->rng, seed);
    h->min_size = min_size;
    h->max_size = max_size;
    pb_stream_init(&h->stream, &h->d);
}

/* Hands off the last buffer and applies the patches; returns the log. */
static const uint8_t *handoff_finish(handoff *h, size_t *len)
{
    assert_null(h->stream.innermost);
    check_slots(h);
    hand_off_current(h, h->stream.write_ptr);
    assert_int_equal(h->log_len, pb_stream_bytes_written(&h->stream));
    for (size_t i = 0; i < h->n_patches; i++) {
        patch *p = h->patches[i];
        assert_true(p->slot[0] & 0x80);
        /* The log got the field before it was known: still zero there. */
        for (size_t b = 0; b < PB_SIZE_FIELD_BYTES; b++)
            assert_int_equal(h->log[p->offset + b], 0);
        memcpy(h->log + p->offset, p->slot, PB_SIZE_FIELD_BYTES);
    }
    /* Nothing wrote to a buffer after it was handed off. */
    for (size_t i = 0; i < h->n_old; i++)
        for (size_t b = 0; b < h->old[i].n; b++)
            if (h->old[i].p[b] != POISON)
                fail_msg("handed-off buffer %zu written at byte %zu", i, b);
    *len = h->log_len;
    return h->log;
}

static void handoff_free(handoff *h)
{
    for (size_t i = 0; i < h->n_old; i++)
        free(h->old[i].p);
    for (size_t i = 0; i < h->n_patches; i++)
        free(h->patches[i]);
    free(h->cur);
    free(h->old);
    free(h->patches);
    free(h->log);
}

static void test_random_trees(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 0xbadc0de);
    const pbt_gen_opts opts = { .max_depth = 8,
                                .max_fields = 6,
                                .max_total = 120,
                                .max_bytes_len = 400,
                                .max_packed = 30,
                                .nested_pct = 35 };
    size_t total_patches = 0;
    for (int t = 0; t < 300; t++) {
        pbt_arena a = { 0 };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        size_t ref_len = pbt_ref_size(m);
        uint8_t *ref = pbt_alloc(&a, ref_len + 1);
        pbt_ref_encode(m, ref);
        /* Buffer sizes: the minimum, or random up to a few headers. */
        handoff h;
        size_t lo = PB_MIN_BUFFER_BYTES, hi = t % 3 == 0 ? lo : 64;
        handoff_init(&h, (uint64_t)t, lo, hi);
        pb_msg *pool = pbt_alloc(&a, (pbt_count_nested(m) + 1) * sizeof *pool);
        /* Every other tree with runs of fields (pb_msg_reserve()), whose
         * nested headers are opened inside the run. */
        unsigned bad = t % 2 ? pbt_write_runs(&h.stream, m, pool) : pbt_write(&h.stream, m, pool);
        assert_int_equal(bad, 0);
        size_t len;
        const uint8_t *got = handoff_finish(&h, &len);
        assert_int_equal(len, ref_len);
        if (len && memcmp(got, ref, len) != 0)
            fail_msg("tree %d: patched output differs from the reference", t);
        char why[256];
        if (!pbt_check(got, len, m, why, sizeof why))
            fail_msg("tree %d: %s", t, why);
        total_patches += h.n_patches;
        handoff_free(&h);
        pbt_arena_free(&a);
    }
    /* The trees were big enough for patching to happen a lot. */
    assert_true(total_patches > 1000);
}

/* One message spanning many buffers: its slot stays at 0 throughout. */
static void test_slot_zero_until_finalized(void **state)
{
    (void)state;
    handoff h;
    handoff_init(&h, 1, PB_MIN_BUFFER_BYTES, PB_MIN_BUFFER_BYTES);
    pb_msg root, a, b;
    pb_msg_init_root(&root, &h.stream);
    pb_msg_begin_nested(&root, 1, &a);
    pb_msg_begin_nested(&a, 2, &b);
    assert_int_equal(h.n_patches, 0);
    for (int i = 0; i < 40; i++) {
        pb_msg_append_varint(&b, 1, UINT64_MAX);
        if (h.n_patches) {
            /* Both open sizes were redirected the first time the buffer
             * holding them went away. */
            assert_int_equal(h.n_patches, 2);
            assert_ptr_not_equal(a.size_field, b.size_field);
            assert_true(a.size_field == h.patches[0]->slot || a.size_field == h.patches[1]->slot);
            assert_true(b.size_field == h.patches[0]->slot || b.size_field == h.patches[1]->slot);
            assert_int_equal(a.size_field[0], 0);
            assert_int_equal(b.size_field[0], 0);
        }
    }
    assert_int_equal(h.n_patches, 2);
    assert_true(h.handoffs > 20);
    assert_int_equal(pb_msg_end(&b), 40 * 11);
    assert_true(b.size_field[0] & 0x80);
    assert_int_equal(a.size_field[0], 0); /* a is still open */
    pb_msg_append_varint(&a, 3, 1);
    assert_int_equal(pb_msg_end(&a), 5 + 440 + 2);
    assert_true(a.size_field[0] & 0x80);
    pb_msg_end(&root);
    size_t len;
    const uint8_t *got = handoff_finish(&h, &len);
    assert_int_equal(len, 5 + 5 + 440 + 2);
    /* field 1 { field 2 { 40 x (field 1: UINT64_MAX) }, field 3: 1 } */
    static const uint8_t head[] = { 0x0a, 0xbf, 0x83, 0x80, 0x00,   /* 447 */
                                    0x12, 0xb8, 0x83, 0x80, 0x00 }; /* 440 */
    assert_memory_equal(got, head, sizeof head);
    assert_memory_equal(got + len - 2, ((const uint8_t[]){ 0x18, 0x01 }), 2);
    handoff_free(&h);
}

/* A message finalized while its header's buffer is still current is
 * patched in place: no slot is requested. */
static void test_no_patch_when_in_place(void **state)
{
    (void)state;
    handoff h;
    handoff_init(&h, 2, 64, 64);
    pb_msg root, a;
    pb_msg_init_root(&root, &h.stream);
    pb_msg_append_varint(&root, 1, 1);
    pb_msg_begin_nested(&root, 2, &a);
    pb_msg_append_varint(&a, 1, 5);
    pb_msg_end(&a);
    pb_msg_end(&root);
    assert_int_equal(h.n_patches, 0);
    size_t len;
    const uint8_t *got = handoff_finish(&h, &len);
    static const uint8_t want[] = { 0x08, 0x01, 0x12, 0x82, 0x80, 0x80, 0x00, 0x08, 0x05 };
    assert_int_equal(len, sizeof want);
    assert_memory_equal(got, want, sizeof want);
    handoff_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_trees),
        cmocka_unit_test(test_slot_zero_until_finalized),
        cmocka_unit_test(test_no_patch_when_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
