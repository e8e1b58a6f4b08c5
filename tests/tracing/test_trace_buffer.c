/* SPDX-License-Identifier: MIT */
/* Central buffer: ordering, gap rule, reassembly, patches, overwrite and
 * discard accounting, rewrites, and hostile chunks. Chunks are built by
 * hand here, byte by byte, as a producer would lay them out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protos/pb/pb_wire.h"
#include "tracing/trace_buffer.h"
#include "tests/tracing/tt_util.h"

#define PAYLOAD 512
#define FIRST   SMB_CHUNK_FIRST_PACKET_CONTINUES
#define LAST    SMB_CHUNK_LAST_PACKET_CONTINUES
#define PATCH   SMB_CHUNK_NEEDS_PATCHING

typedef struct chunk {
    uint8_t payload[PAYLOAD];
    size_t len;
    uint16_t nfrag;
} chunk;

/* A valid TracePacket: timestamp = id, then synchronization_marker bytes
 * (field 36) of `pad` bytes. */
static size_t make_packet(uint64_t id, size_t pad, uint8_t *out)
{
    uint8_t *p = out;
    p = pb_write_varint(pb_make_tag(8, PB_WIRE_VARINT), p);
    p = pb_write_varint(id, p);
    p = pb_write_varint(pb_make_tag(36, PB_WIRE_LEN), p);
    p = pb_write_varint(pad, p);
    for (size_t i = 0; i < pad; i++)
        *p++ = (uint8_t)(id + i);
    return (size_t)(p - out);
}

static void frag(chunk *c, const uint8_t *data, size_t n)
{
    assert_true(c->len + 4 + n <= PAYLOAD);
    pb_write_redundant_varint((uint32_t)n, c->payload + c->len);
    memcpy(c->payload + c->len + 4, data, n);
    c->len += 4 + n;
    c->nfrag++;
}

static void pkt(chunk *c, uint64_t id)
{
    uint8_t buf[64];
    frag(c, buf, make_packet(id, 3, buf));
}

static void put(cb_buffer *cb, uint16_t writer, uint32_t chunk_id, uint8_t flags, const chunk *c)
{
    cb_copy_chunk(cb, 1, writer, chunk_id, c->nfrag, flags, true, c->payload, PAYLOAD);
}

/* One chunk holding packets [first, first + n). */
static void put_simple(cb_buffer *cb, uint16_t writer, uint32_t chunk_id, uint64_t first, int n)
{
    chunk c = { 0 };
    for (int i = 0; i < n; i++)
        pkt(&c, first + (uint64_t)i);
    put(cb, writer, chunk_id, 0, &c);
}

static uint64_t id_of(const tt_cbpkt *p)
{
    perfetto_protos_TracePacket_view v;
    assert_true(perfetto_protos_TracePacket_decode(&v, p->data, p->size));
    return v.timestamp;
}

/* Reads everything and checks the ids (and which ones are flagged). */
static void expect(cb_buffer *cb, bool final_read, const uint64_t *ids, const bool *dropped,
                   size_t n)
{
    tt_cbpkt *got;
    size_t k = tt_cb_read_all(cb, final_read, &got);
    assert_int_equal(k, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(id_of(&got[i]), ids[i]);
        assert_int_equal(got[i].dropped, dropped ? dropped[i] : false);
    }
    tt_cbpkts_free(got, k);
}

static void test_in_order(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    put_simple(cb, 1, 0, 10, 2);
    put_simple(cb, 1, 1, 12, 2);
    put_simple(cb, 1, 2, 14, 1);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(id_of(&got[i]), 10 + i);
        assert_false(got[i].dropped);
        assert_int_equal(got[i].sequence_id, 2);
    }
    tt_cbpkts_free(got, n);
    /* Nothing twice. */
    expect(cb, false, NULL, NULL, 0);
    const cb_stats *st = cb_get_stats(cb);
    assert_int_equal(st->chunks_written, 3);
    assert_int_equal(st->chunks_read, 3);
    assert_int_equal(st->bytes_read, st->bytes_written);
    cb_writer_stats ws;
    assert_int_equal(cb_num_sequences(cb), 1);
    cb_get_writer_stats(cb, 0, &ws);
    assert_int_equal(ws.sequence_id, 2);
    assert_int_equal(ws.counts[1], 3); /* 12 or 24 payload bytes: the <= 32 bucket */
    cb_destroy(cb);
}

/* The buffers doc: with chunks 1, 2, 5, 6 only 1 and 2 come out until the
 * hole is filled. */
static void test_gap_rule(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    put_simple(cb, 1, 0, 0, 1);
    put_simple(cb, 1, 1, 1, 1);
    put_simple(cb, 1, 2, 2, 1);
    put_simple(cb, 1, 5, 5, 1);
    put_simple(cb, 1, 6, 6, 1);
    const uint64_t a[] = { 0, 1, 2 };
    expect(cb, false, a, NULL, 3);
    expect(cb, false, NULL, NULL, 0);
    put_simple(cb, 1, 4, 4, 1);
    put_simple(cb, 1, 3, 3, 1);
    const uint64_t b[] = { 3, 4, 5, 6 };
    expect(cb, false, b, NULL, 4);
    assert_int_equal(cb_get_stats(cb)->chunks_committed_out_of_order, 2);
    cb_destroy(cb);
}

static void test_gap_final_read(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    put_simple(cb, 1, 0, 0, 1);
    put_simple(cb, 1, 3, 3, 2);
    const uint64_t a[] = { 0 };
    expect(cb, false, a, NULL, 1);
    /* At the end the hole can no longer fill: go on, and say so. */
    const uint64_t b[] = { 3, 4 };
    const bool bd[] = { true, false };
    expect(cb, true, b, bd, 2);
    cb_destroy(cb);
}

static void test_first_packet_flag(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    put_simple(cb, 1, 0, 0, 2);  /* starts at chunk 0: nothing lost */
    put_simple(cb, 2, 7, 70, 2); /* starts at 7: 0..6 are gone */
    const uint64_t ids[] = { 0, 1, 70, 71 };
    const bool d[] = { false, false, true, false };
    expect(cb, false, ids, d, 4);
    cb_destroy(cb);
}

static void test_fragmented_packet(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    uint8_t big[1200];
    size_t n = make_packet(99, 1100, big);
    chunk c0 = { 0 }, c1 = { 0 }, c2 = { 0 };
    pkt(&c0, 1);
    frag(&c0, big, 400);
    frag(&c1, big + 400, 500);
    frag(&c2, big + 900, n - 900);
    pkt(&c2, 2);
    put(cb, 1, 0, LAST, &c0);
    put(cb, 1, 1, FIRST | LAST, &c1);
    const uint64_t a[] = { 1 };
    expect(cb, false, a, NULL, 1); /* the big one waits for its tail */
    assert_true(cb_get_stats(cb)->readaheads_failed > 0);
    put(cb, 1, 2, FIRST, &c2);
    tt_cbpkt *got;
    size_t k = tt_cb_read_all(cb, false, &got);
    assert_int_equal(k, 2);
    assert_int_equal(got[0].size, n);
    assert_memory_equal(got[0].data, big, n);
    assert_false(got[0].dropped);
    assert_int_equal(id_of(&got[1]), 2);
    tt_cbpkts_free(got, k);
    assert_int_equal(cb_get_stats(cb)->readaheads_succeeded, 1);
    cb_destroy(cb);
}

/* A packet whose nested size field was in a chunk already committed. */
static void make_patched_chunks(cb_buffer *cb, uint8_t *full, size_t *full_len, uint32_t *patch_off)
{
    /* TracePacket{ timestamp 5, for_testing(900) { str(1) "xxxx...x" } } with
     * the for_testing size left as 4 zero bytes in chunk 0. */
    uint8_t *p = full;
    p = pb_write_varint(pb_make_tag(8, PB_WIRE_VARINT), p);
    p = pb_write_varint(5, p);
    p = pb_write_varint(pb_make_tag(900, PB_WIRE_LEN), p);
    uint8_t *size_field = p;
    p += 4;
    uint8_t *body = p;
    p = pb_write_varint(pb_make_tag(1, PB_WIRE_LEN), p);
    p = pb_write_varint(600, p);
    memset(p, 'x', 600);
    p += 600;
    pb_write_redundant_varint((uint32_t)(p - body), size_field);
    *full_len = (size_t)(p - full);

    chunk c0 = { 0 }, c1 = { 0 };
    frag(&c0, full, 300);
    *patch_off = 4 + (uint32_t)(size_field - full);
    memset(c0.payload + *patch_off, 0, 4); /* unknown when chunk 0 left */
    frag(&c1, full + 300, *full_len - 300);
    pkt(&c1, 6);
    put(cb, 1, 0, LAST | PATCH, &c0);
    put(cb, 1, 1, FIRST, &c1);
}

static void test_patches(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    uint8_t full[1024];
    size_t full_len;
    uint32_t off;
    make_patched_chunks(cb, full, &full_len, &off);
    expect(cb, false, NULL, NULL, 0); /* not read past the unpatched chunk */

    smb_patch bad = { .offset = PAYLOAD - 3, .data = { 1, 2, 3, 4 } };
    assert_false(cb_try_patch(cb, 1, 1, 0, &bad, 1, false));
    assert_false(cb_try_patch(cb, 1, 1, 77, &bad, 1, false));
    assert_int_equal(cb_get_stats(cb)->patches_failed, 2);

    smb_patch good = { .offset = off };
    memcpy(good.data, full + off - 4, 4);
    assert_true(cb_try_patch(cb, 1, 1, 0, &good, 1, false));
    tt_cbpkt *got;
    size_t k = tt_cb_read_all(cb, false, &got);
    assert_int_equal(k, 2);
    assert_int_equal(got[0].size, full_len);
    assert_memory_equal(got[0].data, full, full_len);
    assert_int_equal(id_of(&got[1]), 6);
    tt_cbpkts_free(got, k);
    assert_int_equal(cb_get_stats(cb)->patches_succeeded, 1);
    cb_destroy(cb);
}

static void test_patch_never_came(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    uint8_t full[1024];
    size_t full_len;
    uint32_t off;
    make_patched_chunks(cb, full, &full_len, &off);
    /* A patch with more to come keeps the chunk blocked. */
    smb_patch partial = { .offset = off, .data = { 0x80, 0x80, 0x80, 0 } };
    assert_true(cb_try_patch(cb, 1, 1, 0, &partial, 1, true));
    expect(cb, false, NULL, NULL, 0);
    /* Final read: the holey packet is dropped, the next one flagged. */
    const uint64_t ids[] = { 6 };
    const bool d[] = { true };
    expect(cb, true, ids, d, 1);
    assert_int_equal(cb_get_stats(cb)->patches_failed, 1);
    cb_destroy(cb);
}

static void test_ring_overwrite(void **state)
{
    (void)state;
    /* 4 KiB of 528-byte records: 7 fit. */
    cb_buffer *cb = cb_create(4096, CB_RING_BUFFER, 2);
    put_simple(cb, 1, 0, 0, 1);
    put_simple(cb, 1, 1, 1, 1);
    const uint64_t a[] = { 0, 1 };
    expect(cb, false, a, NULL, 2);
    for (uint32_t i = 2; i < 20; i++)
        put_simple(cb, 1, i, i, 1);
    const cb_stats *st = cb_get_stats(cb);
    /* 0 and 1 were read: overwriting them is no loss. */
    assert_int_equal(st->chunks_overwritten, 20 - 7 - 2);
    assert_true(st->write_wrap_count >= 2);
    assert_true(st->padding_bytes_written > 0);
    const uint64_t b[] = { 13, 14, 15, 16, 17, 18, 19 };
    const bool bd[] = { true, false, false, false, false, false, false };
    expect(cb, false, b, bd, 7);
    cb_destroy(cb);
}

static void test_discard(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(4096, CB_DISCARD, 2);
    for (uint32_t i = 0; i < 10; i++)
        put_simple(cb, 1, i, i, 1);
    assert_int_equal(cb_get_stats(cb)->chunks_discarded, 3);
    const uint64_t a[] = { 0, 1, 2, 3, 4, 5, 6 };
    expect(cb, false, a, NULL, 7);
    /* Once full, stays discarding (the tail of the trace is what goes). */
    put_simple(cb, 1, 10, 10, 1);
    assert_int_equal(cb_get_stats(cb)->chunks_discarded, 4);
    assert_int_equal(cb_get_stats(cb)->chunks_overwritten, 0);
    cb_destroy(cb);
}

static void test_rewrite_incomplete(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    chunk c = { 0 };
    for (int i = 0; i < 3; i++)
        pkt(&c, (uint64_t)i);
    /* Scraped while packet 2 was being written: only 0 and 1 count. */
    cb_copy_chunk(cb, 1, 1, 0, 3, 0, false, c.payload, PAYLOAD);
    const uint64_t a[] = { 0, 1 };
    expect(cb, false, a, NULL, 2);
    put_simple(cb, 1, 1, 10, 1); /* the next chunk waits behind chunk 0 */
    expect(cb, false, NULL, NULL, 0);
    pkt(&c, 3);
    cb_copy_chunk(cb, 1, 1, 0, 4, 0, true, c.payload, PAYLOAD);
    const uint64_t b[] = { 2, 3, 10 };
    expect(cb, false, b, NULL, 3);
    assert_int_equal(cb_get_stats(cb)->chunks_rewritten, 1);
    /* A shrinking rewrite is a violation and changes nothing. */
    cb_copy_chunk(cb, 1, 1, 0, 2, 0, true, c.payload, PAYLOAD);
    assert_int_equal(cb_get_stats(cb)->abi_violations, 1);
    cb_destroy(cb);
}

static void test_corrupt_chunks(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    /* Chunk 0: a good packet, then a fragment claiming 1000 bytes. */
    chunk c0 = { 0 };
    pkt(&c0, 0);
    pb_write_redundant_varint(1000, c0.payload + c0.len);
    c0.len += 4;
    c0.nfrag++;
    pkt(&c0, 1); /* unreachable after the bad header */
    put(cb, 1, 0, 0, &c0);
    /* Chunk 1: claims 9 fragments, holds 1. */
    chunk c1 = { 0 };
    pkt(&c1, 2);
    memset(c1.payload + c1.len, 0xFF, PAYLOAD - c1.len); /* no header ends */
    c1.nfrag = 9;
    put(cb, 1, 1, 0, &c1);
    /* Chunk 2: a packet with a forged trusted_uid, then a malformed one,
     * then a good one. */
    chunk c2 = { 0 };
    uint8_t buf[32];
    size_t n = make_packet(3, 1, buf);
    buf[n++] = (uint8_t)pb_make_tag(3, PB_WIRE_VARINT);
    buf[n++] = 0;
    frag(&c2, buf, n);
    const uint8_t junk[] = { 0x0A, 0x7F, 0x01 };
    frag(&c2, junk, sizeof junk);
    pkt(&c2, 4);
    put(cb, 1, 2, 0, &c2);
    /* Chunk 3: continues a packet but chunk 2 did not end with one. */
    chunk c3 = { 0 };
    pkt(&c3, 50);
    pkt(&c3, 5);
    put(cb, 1, 3, FIRST, &c3);
    /* Chunks 4, 5: a broken chain (5 does not say it continues). */
    chunk c4 = { 0 }, c5 = { 0 };
    uint8_t big[300];
    frag(&c4, big, make_packet(60, 200, big) / 2);
    pkt(&c5, 6);
    put(cb, 1, 4, LAST, &c4);
    put(cb, 1, 5, 0, &c5);
    /* Rejected outright: writer 0, oversized payload. */
    cb_copy_chunk(cb, 1, 0, 9, 1, 0, true, c5.payload, PAYLOAD);
    cb_copy_chunk(cb, 1, 1, 9, 1, 0, true, c5.payload, 70000);

    const uint64_t ids[] = { 0, 2, 4, 5, 6 };
    const bool d[] = { false, true, true, true, true };
    expect(cb, false, ids, d, 5);
    const cb_stats *st = cb_get_stats(cb);
    assert_int_equal(st->abi_violations, 2 + 1 + 2);
    assert_int_equal(st->invalid_packets, 2);
    cb_destroy(cb);
}

static void test_drop_marker(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    chunk c0 = { 0 }, c1 = { 0 };
    pkt(&c0, 0);
    uint8_t big[300];
    frag(&c0, big, make_packet(1, 200, big) / 2);
    /* The writer found no next chunk: it stamps the fragment. */
    pb_write_redundant_varint(SMB_PACKET_SIZE_DROP_PACKET, c0.payload + 12);
    pkt(&c1, 2);
    put(cb, 1, 0, 0, &c0);
    put(cb, 1, 1, 0, &c1);
    const uint64_t ids[] = { 0, 2 };
    const bool d[] = { false, true };
    expect(cb, false, ids, d, 2);
    assert_int_equal(cb_get_stats(cb)->trace_writer_packet_loss, 1);
    assert_int_equal(cb_get_stats(cb)->abi_violations, 0);
    cb_destroy(cb);
}

static void test_chunk_id_wraparound(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    uint8_t big[400];
    size_t n = make_packet(100, 300, big);
    chunk a = { 0 }, b = { 0 };
    pkt(&a, 1);
    frag(&a, big, 150);
    frag(&b, big + 150, n - 150);
    pkt(&b, 2);
    put_simple(cb, 1, 0xFFFFFFFEu, 0, 1);
    put(cb, 1, 0xFFFFFFFFu, LAST, &a);
    put(cb, 1, 0, FIRST, &b);
    put_simple(cb, 1, 1, 3, 1);
    const uint64_t ids[] = { 0, 1, 100, 2, 3 };
    const bool d[] = { true, false, false, false, false };
    expect(cb, false, ids, d, 5);
    cb_destroy(cb);
}

static void test_sequences_independent(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 5);
    put_simple(cb, 2, 0, 20, 1);
    put_simple(cb, 1, 0, 10, 1);
    put_simple(cb, 2, 2, 22, 1); /* seq 2 has a hole at 1 */
    put_simple(cb, 1, 1, 11, 1);
    tt_cbpkt *got;
    size_t k = tt_cb_read_all(cb, false, &got);
    assert_int_equal(k, 3);
    uint32_t seq1 = 0, seq2 = 0;
    for (size_t i = 0; i < k; i++) {
        if (got[i].writer_id == 1)
            seq1 = got[i].sequence_id;
        else
            seq2 = got[i].sequence_id;
    }
    assert_int_equal(seq2, 5); /* first seen, first numbered */
    assert_int_equal(seq1, 6);
    tt_cbpkts_free(got, k);
    cb_destroy(cb);
}

/* ---- closed producers ----------------------------------------------------
 *
 * Two buffers fed the same chunks; only `a` is told when a producer is
 * gone. Every read must hand out the same packets from both, and the
 * BufferStats must stay equal: closing changes what the buffer remembers,
 * never what it reads out or counts. */
typedef struct twin {
    cb_buffer *a, *b;
} twin;

static twin twin_create(size_t size)
{
    twin t = { cb_create(size, CB_RING_BUFFER, 2), cb_create(size, CB_RING_BUFFER, 2) };
    assert_non_null(t.a);
    assert_non_null(t.b);
    return t;
}

static void twin_put(twin *t, uint32_t producer, uint16_t writer, uint32_t chunk_id, uint8_t flags,
                     bool complete, const chunk *c)
{
    cb_copy_chunk(t->a, producer, writer, chunk_id, c->nfrag, flags, complete, c->payload, PAYLOAD);
    cb_copy_chunk(t->b, producer, writer, chunk_id, c->nfrag, flags, complete, c->payload, PAYLOAD);
}

static void twin_put_simple(twin *t, uint32_t producer, uint16_t writer, uint32_t chunk_id,
                            uint64_t first)
{
    chunk c = { 0 };
    pkt(&c, first);
    pkt(&c, first + 1);
    twin_put(t, producer, writer, chunk_id, 0, true, &c);
}

/* Reads both; returns how many packets each handed out (the same ones). */
static size_t twin_read(twin *t, bool final_read)
{
    tt_cbpkt *ga, *gb;
    size_t na = tt_cb_read_all(t->a, final_read, &ga);
    size_t nb = tt_cb_read_all(t->b, final_read, &gb);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(ga[i].size, gb[i].size);
        assert_memory_equal(ga[i].data, gb[i].data, ga[i].size);
        assert_int_equal(ga[i].sequence_id, gb[i].sequence_id);
        assert_int_equal(ga[i].writer_id, gb[i].writer_id);
        assert_int_equal(ga[i].dropped, gb[i].dropped);
    }
    tt_cbpkts_free(ga, na);
    tt_cbpkts_free(gb, nb);
    return na;
}

static void expect_same_buffer_stats(const twin *t)
{
    assert_memory_equal(cb_get_stats(t->a), cb_get_stats(t->b), sizeof(cb_stats));
}

static void expect_same_writer_stats(const twin *t)
{
    assert_int_equal(cb_num_sequences(t->a), cb_num_sequences(t->b));
    for (size_t i = 0; i < cb_num_sequences(t->a); i++) {
        cb_writer_stats wa, wb;
        cb_get_writer_stats(t->a, i, &wa);
        cb_get_writer_stats(t->b, i, &wb);
        assert_memory_equal(&wa, &wb, sizeof wa);
    }
}

static void twin_destroy(twin *t)
{
    cb_destroy(t->a);
    cb_destroy(t->b);
}

/* A producer that disconnects normally, its last chunk scraped while being
 * written: its data is still read out (streaming reads before, the final
 * read after), its unread chunks still count as overwritten when the ring
 * wraps over them, and TraceStats (buffer and writer figures) are those of
 * a buffer never told. Its sequences go only once nothing of them is
 * unread, and keep their WriterStats. */
static void test_close_keeps_stats(void **state)
{
    (void)state;
    twin t = twin_create(16 * 1024); /* 30 chunk records */
    /* Producer 1: writer 1 with a packet across chunks 1-2, writer 2. */
    uint8_t big[1200];
    size_t n = make_packet(99, 700, big);
    chunk c1 = { 0 }, c2 = { 0 };
    pkt(&c1, 1);
    frag(&c1, big, 400);
    frag(&c2, big + 400, n - 400);
    twin_put_simple(&t, 1, 1, 0, 10);
    twin_put(&t, 1, 1, 1, LAST, true, &c1);
    twin_put(&t, 1, 1, 2, FIRST, true, &c2);
    twin_put_simple(&t, 1, 2, 0, 20);
    twin_put_simple(&t, 2, 1, 0, 30);
    assert_int_equal(twin_read(&t, false), 8);
    /* More from producer 1, then it goes: chunk 3 of writer 1 scraped
     * (incomplete), chunk 1 of writer 2 committed but not read yet. */
    chunk c3 = { 0 };
    pkt(&c3, 40);
    pkt(&c3, 41);
    pkt(&c3, 42);
    twin_put(&t, 1, 1, 3, 0, false, &c3);
    twin_put_simple(&t, 1, 2, 1, 50);
    cb_close_producer(t.a, 1);
    cb_seq_stats ss;
    cb_get_seq_stats(t.a, &ss);
    assert_int_equal(ss.closed, 2); /* both hold something unread */
    assert_int_equal(ss.released, 0);
    /* Producer 2 wraps the ring over everything of producer 1. */
    for (uint32_t i = 1; i <= 40; i++) {
        twin_put_simple(&t, 2, 1, i, 100 + 2 * i);
        if (i == 10)
            twin_read(&t, false);
    }
    twin_read(&t, false);
    twin_read(&t, true);
    cb_get_seq_stats(t.a, &ss);
    assert_int_equal(ss.closed, 0);
    assert_int_equal(ss.released, 2);
    assert_int_equal(ss.retired, 2);
    assert_int_equal(ss.live, 1);
    assert_true(cb_get_stats(t.a)->chunks_overwritten > 0); /* the unread ones */
    expect_same_buffer_stats(&t);
    expect_same_writer_stats(&t);
    twin_destroy(&t);
}

/* The gputrace-service pattern: producers close long before the one final
 * read. Nothing is released early; the final read and TraceStats are those
 * of a buffer never told. */
static void test_close_then_final_read(void **state)
{
    (void)state;
    twin t = twin_create(1 << 16);
    for (uint32_t p = 1; p <= 3; p++) {
        for (uint16_t w = 1; w <= 3; w++)
            for (uint32_t c = 0; c < 3; c++)
                twin_put_simple(&t, p, w, c, 1000 * p + 100 * w + 2 * c);
        cb_close_producer(t.a, p);
    }
    cb_seq_stats ss;
    cb_get_seq_stats(t.a, &ss);
    assert_int_equal(ss.closed, 9);
    assert_int_equal(ss.released, 0);
    assert_int_equal(twin_read(&t, true), 3 * 3 * 3 * 2);
    expect_same_buffer_stats(&t);
    expect_same_writer_stats(&t);
    /* A later read pass lets them go; their WriterStats stay. */
    twin_read(&t, false);
    cb_get_seq_stats(t.a, &ss);
    assert_int_equal(ss.live, 0);
    assert_int_equal(ss.retired, 9);
    expect_same_writer_stats(&t);
    /* A chunk for a closed producer is refused and counted. */
    put_simple(t.a, 1, 9, 0, 1);
    cb_get_seq_stats(t.a, &ss);
    assert_int_equal(ss.retired, 9);
    twin_destroy(&t);
}

/* A hostile producer opens every writer ID with a valid chunk, disconnects,
 * and does it again: the buffer's sequence state stays bounded by what the
 * ring holds, instead of growing by 1023 sequences a connection (as it
 * does in the buffer never told). Nothing read or counted changes. */
static void test_closed_producers_bounded(void **state)
{
    (void)state;
    const size_t ring = 1 << 16;
    const size_t records = ring / (PAYLOAD + 16); /* chunk records the ring holds */
    twin t = twin_create(ring);
    const uint32_t rounds = 40;
    size_t most_live = 0, most_bytes = 0;
    for (uint32_t r = 1; r <= rounds; r++) {
        for (uint16_t w = 1; w <= SMB_MAX_WRITER_ID; w++)
            twin_put_simple(&t, r, w, 0, 2 * w);
        cb_close_producer(t.a, r);
        cb_seq_stats ss;
        cb_get_seq_stats(t.a, &ss);
        if (ss.live > most_live)
            most_live = ss.live;
        if (ss.bytes > most_bytes)
            most_bytes = ss.bytes;
        assert_true(ss.live <= records + 1);
        assert_int_equal(ss.closed, ss.live); /* what is left is unread */
        assert_int_equal(ss.retired, 0);      /* nothing was read */
    }
    cb_seq_stats ss;
    cb_get_seq_stats(t.a, &ss);
    assert_int_equal(ss.released + ss.live, (uint64_t)rounds * SMB_MAX_WRITER_ID);
    /* The buffer never told keeps every one. */
    assert_int_equal(cb_num_sequences(t.b), (size_t)rounds * SMB_MAX_WRITER_ID);
    cb_seq_stats sb;
    cb_get_seq_stats(t.b, &sb);
    print_message("live sequences at most %zu (%zu bytes), never told: %zu (%zu bytes)\n",
                  most_live, most_bytes, sb.live, sb.bytes);
    /* One connection's 1023 sequences at most, and far less than one
     * connection costs the buffer never told. */
    assert_true(most_bytes < sb.bytes / rounds);
    /* Same packets out, same counts (everything unread was overwritten). */
    twin_read(&t, true);
    expect_same_buffer_stats(&t);
    assert_int_equal(cb_get_stats(t.a)->chunks_overwritten,
                     (uint64_t)rounds * SMB_MAX_WRITER_ID - records);
    twin_destroy(&t);
}

/* Producers whose packets were read keep their WriterStats after they go,
 * up to CB_MAX_RETIRED_SEQUENCES; beyond, the WriterStats are dropped and
 * counted, so even this state is bounded. */
static void test_retired_writer_stats_capped(void **state)
{
    (void)state;
    cb_buffer *cb = cb_create(4u << 20, CB_RING_BUFFER, 2);
    const uint32_t rounds = 5;
    for (uint32_t r = 1; r <= rounds; r++) {
        for (uint16_t w = 1; w <= SMB_MAX_WRITER_ID; w++) {
            chunk c = { 0 };
            pkt(&c, w);
            cb_copy_chunk(cb, r, w, 0, c.nfrag, 0, true, c.payload, PAYLOAD);
        }
        tt_cbpkt *got;
        size_t k = tt_cb_read_all(cb, false, &got);
        assert_int_equal(k, SMB_MAX_WRITER_ID);
        tt_cbpkts_free(got, k);
        cb_close_producer(cb, r);
    }
    cb_begin_read(cb, false); /* lets the last producer's sequences go */
    cb_seq_stats ss;
    cb_get_seq_stats(cb, &ss);
    assert_int_equal(ss.live, 0);
    assert_int_equal(ss.retired, CB_MAX_RETIRED_SEQUENCES);
    assert_int_equal(ss.writer_stats_dropped,
                     (uint64_t)rounds * SMB_MAX_WRITER_ID - CB_MAX_RETIRED_SEQUENCES);
    assert_int_equal(cb_num_sequences(cb), CB_MAX_RETIRED_SEQUENCES);
    cb_writer_stats ws;
    cb_get_writer_stats(cb, 0, &ws);
    assert_int_equal(ws.counts[1], 1); /* each read one small chunk */
    cb_destroy(cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_gap_rule),
        cmocka_unit_test(test_gap_final_read),
        cmocka_unit_test(test_first_packet_flag),
        cmocka_unit_test(test_fragmented_packet),
        cmocka_unit_test(test_patches),
        cmocka_unit_test(test_patch_never_came),
        cmocka_unit_test(test_ring_overwrite),
        cmocka_unit_test(test_discard),
        cmocka_unit_test(test_rewrite_incomplete),
        cmocka_unit_test(test_corrupt_chunks),
        cmocka_unit_test(test_drop_marker),
        cmocka_unit_test(test_chunk_id_wraparound),
        cmocka_unit_test(test_sequences_independent),
        cmocka_unit_test(test_close_keeps_stats),
        cmocka_unit_test(test_close_then_final_read),
        cmocka_unit_test(test_closed_producers_bounded),
        cmocka_unit_test(test_retired_writer_stats_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
