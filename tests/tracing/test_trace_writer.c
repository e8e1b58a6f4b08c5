/* SPDX-License-Identifier: MIT */
/* Trace writer + arbiter, with a stand-in service (tt_service_drain) moving
 * chunks into a central buffer: byte-exact chunks, fragmentation, patches,
 * packet limits, drop and stall policies (one wait per loss episode; a
 * writer capped to never wait), writer IDs. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/tracing/tt_util.h"
#include "tracing/util/util_time.h"

static smb_arbiter *make_arb(size_t smb, size_t page, smb_page_layout layout)
{
    smb_arbiter_config c = { .smb_size = smb, .page_size = page, .layout = layout };
    smb_arbiter *a = smb_arbiter_create(&c);
    assert_non_null(a);
    return a;
}

static void test_byte_exact_chunk(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(8192, 4096, SMB_PAGE_DIV1);
    tw_writer *tw = tw_create(arb, NULL);
    assert_int_equal(tw_writer_id(tw), 1);
    perfetto_protos_TracePacket pkt;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, 42);
    tw_end_packet(tw);
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, 300);
    tw_end_packet(tw);
    tw_flush(tw);

    const uint8_t *page = smb_arbiter_abi(arb)->start;
    const uint8_t want[] = {
        0x03, 0x00, 0x00, 0x10,                   /* page: Div1 (1 << 28), chunk 0 COMPLETE */
        0x00, 0x00, 0x00, 0x00,                   /* reserved */
        0x00, 0x00, 0x00, 0x00,                   /* chunk_id 0 */
        0x01, 0x00,                               /* writer_id 1 */
        0x02, 0x00,                               /* 2 packets, no flags */
        0x82, 0x80, 0x80, 0x00, 0x40, 0x2A,       /* [2] timestamp 42 */
        0x83, 0x80, 0x80, 0x00, 0x40, 0xAC, 0x02, /* [3] timestamp 300 */
    };
    assert_memory_equal(page, want, sizeof want);

    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    tt_service_drain(arb, cb, &b);
    /* The service freed it: page back to unpartitioned, header cleared. */
    const uint8_t zero[16] = { 0 };
    assert_memory_equal(page, zero, 16);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 2);
    assert_int_equal(got[0].size, 2);
    assert_memory_equal(got[0].data, "\x40\x2A", 2);
    assert_false(got[0].dropped);
    tt_cbpkts_free(got, n);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

/* tw_flush_when_quiet hands a partly filled chunk over only after the
 * quiet time with no new packet, once, and again after new packets. */
static void test_flush_when_quiet(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(8192, 4096, SMB_PAGE_DIV1);
    cb_buffer *cb = cb_create(1 << 16, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    tw_writer *tw = tw_create(arb, NULL);
    perfetto_protos_TracePacket pkt;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, 1);
    tw_end_packet(tw);
    const uint64_t ms = 1000000;
    tw_flush_when_quiet(tw, 1000 * ms, 500 * ms); /* sees the packet: quiet from now */
    tw_flush_when_quiet(tw, 1499 * ms, 500 * ms); /* not yet */
    tt_service_drain(arb, cb, &b);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 0); /* still in the writer's chunk */
    tt_cbpkts_free(got, n);
    tw_flush_when_quiet(tw, 1500 * ms, 500 * ms); /* quiet long enough */
    tt_service_drain(arb, cb, &b);
    n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 1);
    tt_cbpkts_free(got, n);
    tw_stats st;
    tw_get_stats(tw, &st);
    const uint64_t chunks = st.chunks_used;
    tw_flush_when_quiet(tw, 9000 * ms, 500 * ms); /* nothing new: no empty chunk */
    tw_get_stats(tw, &st);
    assert_int_equal(st.chunks_used, chunks);
    /* New packets start the quiet time again. */
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, 2);
    tw_end_packet(tw);
    tw_flush_when_quiet(tw, 9100 * ms, 500 * ms);
    tw_flush_when_quiet(tw, 9500 * ms, 500 * ms);
    tt_service_drain(arb, cb, &b);
    n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 0);
    tt_cbpkts_free(got, n);
    tw_flush_when_quiet(tw, 9600 * ms, 500 * ms);
    tt_service_drain(arb, cb, &b);
    n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 1);
    tt_cbpkts_free(got, n);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

static void check_events(const tt_cbpkt *got, size_t n, uint64_t seed, size_t max, bool nested_ok)
{
    for (size_t i = 0; i < n; i++) {
        tt_event ev;
        assert_true(tt_decode_test_event(got[i].data, got[i].size, &ev));
        assert_int_equal(ev.counter, i);
        assert_int_equal(ev.str.size, tt_payload_len(seed, ev.writer, ev.counter, max));
        assert_true(tt_payload_check(ev.writer, ev.counter, ev.str.data, ev.str.size));
        assert_false(got[i].dropped);
    }
    (void)nested_ok;
}

/* Packets of up to several chunks, half of them with nested messages open
 * across chunk boundaries: every size must arrive, by patch if need be. */
static void test_fragmentation_and_patches(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(64 * 1024, 4096, SMB_PAGE_DIV4);
    cb_buffer *cb = cb_create(1 << 20, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    tw_writer *tw = tw_create(arb, NULL);
    const uint64_t seed = 7;
    const size_t max = 5000;
    uint8_t *buf = malloc(max);
    for (uint64_t i = 0; i < 400; i++) {
        size_t len = tt_payload_len(seed, 3, i, max);
        tt_payload_fill(3, i, buf, len);
        tt_write_test_packet(tw, 3, i, buf, len, i % 2 == 0);
        tt_service_drain(arb, cb, &b);
    }
    tw_flush(tw);
    tt_service_drain(arb, cb, &b);
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_true(ts.patches_recorded > 0);
    assert_int_equal(ts.packets_dropped + ts.packets_aborted, 0);

    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 400);
    check_events(got, n, seed, max, true);
    tt_cbpkts_free(got, n);
    const cb_stats *st = cb_get_stats(cb);
    assert_true(st->patches_succeeded >= ts.patches_recorded);
    assert_int_equal(st->patches_failed, 0);
    assert_true(st->readaheads_succeeded > 0);
    assert_int_equal(st->abi_violations, 0);
    free(buf);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

/* Chunk IDs count up per writer and a spanning packet flags both ends. */
static void test_chunk_headers_of_spanning_packet(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(16 * 4096, 4096, SMB_PAGE_DIV4);
    tw_writer *tw = tw_create(arb, NULL);
    uint8_t buf[2500];
    tt_payload_fill(1, 0, buf, sizeof buf);
    tt_write_test_packet(tw, 1, 0, buf, sizeof buf, true);
    tw_flush(tw);
    const smb_abi *abi = smb_arbiter_abi(arb);
    uint32_t bitmap = smb_page_bitmap(abi, 0);
    assert_int_equal(smb_num_chunks_of(bitmap), 4);
    uint8_t want_flags[3] = { SMB_CHUNK_LAST_PACKET_CONTINUES | SMB_CHUNK_NEEDS_PATCHING,
                              SMB_CHUNK_FIRST_PACKET_CONTINUES | SMB_CHUNK_LAST_PACKET_CONTINUES,
                              SMB_CHUNK_FIRST_PACKET_CONTINUES };
    for (uint32_t i = 0; i < 3; i++) {
        smb_chunk c;
        assert_int_equal(smb_chunk_state_of(bitmap, i), SMB_CHUNK_COMPLETE);
        assert_true(smb_chunk_at(abi, 0, bitmap, i, &c));
        uint16_t p = smb_chunk_load_packets(&c);
        assert_int_equal(atomic_load(&smb_chunk_hdr(&c)->chunk_id), i);
        assert_int_equal(smb_packets_count(p), 1);
        assert_int_equal(smb_packets_flags(p), want_flags[i]);
    }
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

static void test_packet_count_limit(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(4 * 65536, 65536, SMB_PAGE_DIV1);
    cb_buffer *cb = cb_create(1 << 22, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    tw_writer *tw = tw_create(arb, NULL);
    for (uint64_t i = 0; i < 2500; i++) {
        perfetto_protos_TracePacket pkt;
        tw_begin_packet(tw, &pkt);
        perfetto_protos_TracePacket_set_timestamp(&pkt, i + 1);
        tw_end_packet(tw);
    }
    tw_flush(tw);
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_int_equal(ts.chunks_used, 3); /* 1023 + 1023 + 454 */
    tt_service_drain(arb, cb, &b);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, false, &got);
    assert_int_equal(n, 2500);
    tt_cbpkts_free(got, n);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

/* SMB full, nobody draining: packets are dropped or cut, counted, and the
 * first packet that makes it afterwards says so. */
static void test_drop_policy(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(2 * 4096, 4096, SMB_PAGE_DIV1);
    cb_buffer *cb = cb_create(1 << 20, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    tw_writer *tw = tw_create(arb, NULL);
    uint8_t buf[1500];
    const uint64_t total = 60;
    for (uint64_t i = 0; i < total; i++) {
        size_t len = 500 + (i * 37) % 1000;
        tt_payload_fill(0, i, buf, len);
        tt_write_test_packet(tw, 0, i, buf, len, i % 2 == 1);
    }
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_true(ts.packets_dropped > 0);
    assert_int_equal(smb_arbiter_packets_lost(arb), ts.packets_dropped);
    /* Room again: the next packet goes through and is marked. */
    tt_service_drain(arb, cb, &b);
    tt_payload_fill(0, total, buf, 10);
    tt_write_test_packet(tw, 0, total, buf, 10, false);
    tw_flush(tw);
    tt_service_drain(arb, cb, &b);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, true, &got);
    tw_get_stats(tw, &ts);
    assert_int_equal(n, total + 1 - ts.packets_dropped - ts.packets_aborted);
    /* Service-side count: the aborted ones it saw the drop marker of. */
    assert_int_equal(cb_get_stats(cb)->trace_writer_packet_loss, ts.packets_aborted);
    uint64_t prev = 0;
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        tt_event ev;
        perfetto_protos_TracePacket_view v;
        assert_true(tt_decode_test_event(got[i].data, got[i].size, &ev));
        assert_true(perfetto_protos_TracePacket_decode(&v, got[i].data, got[i].size));
        bool gap = first ? ev.counter != 0 : ev.counter != prev + 1;
        bool flagged = got[i].dropped || v.previous_packet_dropped;
        assert_int_equal(gap, flagged);
        assert_true(tt_payload_check(0, ev.counter, ev.str.data, ev.str.size));
        prev = ev.counter;
        first = false;
    }
    assert_int_equal(prev, total);
    tt_cbpkts_free(got, n);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

static void test_stall_times_out(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(4096, 4096, SMB_PAGE_DIV1);
    tw_config cfg = { .policy = SMB_POLICY_STALL, .stall_timeout_ms = 60 };
    tw_writer *tw = tw_create(arb, &cfg);
    uint8_t buf[3000];
    tt_payload_fill(0, 0, buf, sizeof buf);
    tt_write_test_packet(tw, 0, 0, buf, 3000, false); /* fits the only chunk */
    double t0 = util_now_s();
    tt_write_test_packet(tw, 0, 1, buf, 3000, false); /* needs a second one */
    double dt = util_now_s() - t0;
    assert_true(dt >= 0.05);
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_int_equal(ts.packets_aborted, 1);
    smb_arbiter_stats as;
    smb_arbiter_get_stats(arb, &as);
    assert_int_equal(as.acquire_failures, 1);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

/* The arbiter asks for an urgent drain once per round of waiting for a
 * free chunk (and on flushes): a writer that never waits never asks. */
static _Atomic unsigned g_urgent_notifies;

static void count_urgent(void *ctx, bool urgent)
{
    (void)ctx;
    if (urgent)
        atomic_fetch_add(&g_urgent_notifies, 1);
}

/* Whatever policy a service chose, a writer capped to 0 (the layer's
 * writers on application threads) never waits on a full SMB: it drops,
 * counts, and flags the first packet after the gap. */
static void test_capped_writer_never_waits(void **state)
{
    (void)state;
    smb_arbiter_config c = {
        .smb_size = 2 * 4096, .page_size = 4096, .layout = SMB_PAGE_DIV1, .notify = count_urgent
    };
    smb_arbiter *arb = smb_arbiter_create(&c);
    assert_non_null(arb);
    cb_buffer *cb = cb_create(1 << 20, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    /* A service that asked for a long stall. */
    tw_config cfg = { .policy = SMB_POLICY_STALL, .stall_timeout_ms = 10000 };
    tw_writer *tw = tw_create(arb, &cfg);
    tw_cap_stall(tw, 0);
    atomic_store(&g_urgent_notifies, 0);
    uint8_t buf[1500];
    const uint64_t total = 60;
    double t0 = util_now_s();
    for (uint64_t i = 0; i < total; i++) {
        size_t len = 500 + (i * 37) % 1000;
        tt_payload_fill(0, i, buf, len);
        tt_write_test_packet(tw, 0, i, buf, len, i % 2 == 1);
        /* The producer bumps the free epoch on every drain period, freed
         * or not: each bump makes a dropping writer try again. */
        smb_arbiter_chunks_freed(arb);
    }
    /* One wait would be 10 s; this bound only catches a wait. */
    assert_true(util_now_s() - t0 < 5.0);
    assert_int_equal(atomic_load(&g_urgent_notifies), 0);
    smb_arbiter_stats as;
    smb_arbiter_get_stats(arb, &as);
    assert_int_equal(as.stalls, 0);
    assert_int_equal(as.stall_timeouts, 0);
    assert_true(as.acquire_failures > 0);
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_true(ts.packets_dropped > 0);
    assert_int_equal(smb_arbiter_packets_lost(arb), ts.packets_dropped);

    /* The service frees the chunks: the next packet makes it, flagged. */
    tt_service_drain(arb, cb, &b);
    tt_payload_fill(0, total, buf, 10);
    tt_write_test_packet(tw, 0, total, buf, 10, false);
    tw_flush(tw);
    tt_service_drain(arb, cb, &b);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, true, &got);
    tw_get_stats(tw, &ts);
    assert_int_equal(n, total + 1 - ts.packets_dropped - ts.packets_aborted);
    tt_event ev;
    perfetto_protos_TracePacket_view v;
    assert_true(n > 0);
    assert_true(tt_decode_test_event(got[n - 1].data, got[n - 1].size, &ev));
    assert_true(perfetto_protos_TracePacket_decode(&v, got[n - 1].data, got[n - 1].size));
    assert_int_equal(ev.counter, total);
    assert_true(v.previous_packet_dropped || got[n - 1].dropped);
    tt_cbpkts_free(got, n);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

/* The stall policy waits once per loss episode: a service that never frees
 * anything costs one timeout, not one per retry, even though the free
 * epoch keeps moving; a chunk had again starts a new episode. */
static void test_stall_once_per_loss_episode(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(4096, 4096, SMB_PAGE_DIV1); /* one chunk */
    cb_buffer *cb = cb_create(1 << 20, CB_RING_BUFFER, 2);
    smb_commit_batch b = { 0 };
    tw_config cfg = { .policy = SMB_POLICY_STALL, .stall_timeout_ms = 20 };
    tw_writer *tw = tw_create(arb, &cfg);
    uint8_t buf[3900];
    uint64_t counter = 0;
    tt_payload_fill(0, counter, buf, 3900);
    tt_write_test_packet(tw, 0, counter++, buf, 3900, false); /* nearly fills it */
    /* Spills over: waits 20 ms in vain, the packet is cut off. */
    tt_payload_fill(0, counter, buf, 300);
    tt_write_test_packet(tw, 0, counter++, buf, 300, false);
    const unsigned retries = 20;
    for (unsigned i = 0; i < retries; i++) {
        smb_arbiter_chunks_freed(arb); /* epoch moves, nothing is free */
        tt_payload_fill(0, counter, buf, 100);
        tt_write_test_packet(tw, 0, counter++, buf, 100, false);
    }
    smb_arbiter_stats as;
    smb_arbiter_get_stats(arb, &as);
    assert_int_equal(as.stall_timeouts, 1);
    assert_true(as.acquire_failures >= 1 + retries);
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_int_equal(ts.packets_aborted, 1);
    assert_int_equal(ts.packets_dropped, retries);

    /* Freed: the next packet lands, flagged, and a new episode may wait
     * again. */
    tt_service_drain(arb, cb, &b);
    const uint64_t landed = counter;
    tt_payload_fill(0, counter, buf, 10);
    tt_write_test_packet(tw, 0, counter++, buf, 10, false);
    tt_payload_fill(0, counter, buf, 3900);
    tt_write_test_packet(tw, 0, counter++, buf, 3900, false);
    tt_payload_fill(0, counter, buf, 300);
    tt_write_test_packet(tw, 0, counter++, buf, 300, false);
    smb_arbiter_get_stats(arb, &as);
    assert_int_equal(as.stall_timeouts, 2);

    tw_flush(tw);
    tt_service_drain(arb, cb, &b);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(cb, true, &got);
    assert_int_equal(n, 3); /* the first packet, `landed` and the one after it */
    tt_event ev;
    perfetto_protos_TracePacket_view v;
    assert_true(tt_decode_test_event(got[1].data, got[1].size, &ev));
    assert_true(perfetto_protos_TracePacket_decode(&v, got[1].data, got[1].size));
    assert_int_equal(ev.counter, landed);
    assert_true(v.previous_packet_dropped || got[1].dropped);
    tt_cbpkts_free(got, n);
    smb_commit_batch_free(&b);
    cb_destroy(cb);
    tw_destroy(tw);
    smb_arbiter_destroy(arb);
}

typedef struct drainer {
    smb_arbiter *arb;
    cb_buffer *cb;
    _Atomic bool stop;
} drainer;

static void *drain_main(void *arg)
{
    drainer *d = arg;
    smb_commit_batch b = { 0 };
    while (!atomic_load(&d->stop)) {
        tt_service_drain(d->arb, d->cb, &b);
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, NULL);
    }
    tt_service_drain(d->arb, d->cb, &b);
    smb_commit_batch_free(&b);
    return NULL;
}

/* A tiny SMB and a slow service: stalling loses nothing. */
static void test_stall_policy_loses_nothing(void **state)
{
    (void)state;
    drainer d = { .arb = make_arb(2 * 4096, 4096, SMB_PAGE_DIV2),
                  .cb = cb_create(1 << 22, CB_RING_BUFFER, 2) };
    pthread_t th;
    pthread_create(&th, NULL, drain_main, &d);
    tw_config cfg = { .policy = SMB_POLICY_STALL, .stall_timeout_ms = 10000 };
    tw_writer *tw = tw_create(d.arb, &cfg);
    const uint64_t seed = 11;
    uint8_t *buf = malloc(20000);
    for (uint64_t i = 0; i < 500; i++) {
        size_t len = tt_payload_len(seed, 0, i, 20000);
        tt_payload_fill(0, i, buf, len);
        tt_write_test_packet(tw, 0, i, buf, len, i % 3 == 0);
    }
    tw_flush(tw);
    atomic_store(&d.stop, true);
    pthread_join(th, NULL);
    tw_stats ts;
    tw_get_stats(tw, &ts);
    assert_int_equal(ts.packets_dropped + ts.packets_aborted, 0);
    tt_cbpkt *got;
    size_t n = tt_cb_read_all(d.cb, false, &got);
    assert_int_equal(n, 500);
    check_events(got, n, seed, 20000, true);
    tt_cbpkts_free(got, n);
    free(buf);
    tw_destroy(tw);
    cb_destroy(d.cb);
    smb_arbiter_destroy(d.arb);
}

static void test_writer_ids(void **state)
{
    (void)state;
    smb_arbiter *arb = make_arb(4096, 4096, SMB_PAGE_DIV1);
    tw_writer **w = calloc(SMB_MAX_WRITER_ID + 1, sizeof *w);
    for (unsigned i = 0; i < SMB_MAX_WRITER_ID; i++) {
        w[i] = tw_create(arb, NULL);
        assert_non_null(w[i]);
        assert_int_equal(tw_writer_id(w[i]), i + 1);
    }
    assert_null(tw_create(arb, NULL));
    uint32_t old_gen = tw_writer_gen(w[4]);
    tw_destroy(w[4]);
    w[4] = tw_create(arb, NULL);
    assert_non_null(w[4]);
    assert_int_equal(tw_writer_id(w[4]), 5);
    assert_true(tw_writer_gen(w[4]) != old_gen);
    for (unsigned i = 0; i < SMB_MAX_WRITER_ID; i++)
        tw_destroy(w[i]);
    free(w);
    smb_arbiter_destroy(arb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_exact_chunk),
        cmocka_unit_test(test_flush_when_quiet),
        cmocka_unit_test(test_fragmentation_and_patches),
        cmocka_unit_test(test_chunk_headers_of_spanning_packet),
        cmocka_unit_test(test_packet_count_limit),
        cmocka_unit_test(test_drop_policy),
        cmocka_unit_test(test_stall_times_out),
        cmocka_unit_test(test_stall_policy_loses_nothing),
        cmocka_unit_test(test_capped_writer_never_waits),
        cmocka_unit_test(test_stall_once_per_loss_episode),
        cmocka_unit_test(test_writer_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
