/* SPDX-License-Identifier: MIT */
/* In-process backend end to end: writer threads -> SMB -> central buffer ->
 * .pftrace, then the file is parsed and checked.
 *
 * The property runs draw writer counts, packet sizes (empty to several
 * chunks), SMB geometry, buffer sizes, fill and writer policies from a seed,
 * and check for every writer that each packet is either in the file, intact
 * and in order, or lost; that previous_packet_dropped marks exactly the
 * packets that follow a loss; and that the loss counted in the file's
 * TraceStats is the loss that happened (exactly, when the central buffer
 * lost nothing; as a bound otherwise, since it counts chunks). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "protos/perfetto/builtin_clock.pbc.h"
#include "tracing/inproc_backend.h"
#include "tests/tracing/tt_util.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SCALE 4
#else
#define SCALE 1
#endif

#define MAX_WRITERS 6

typedef struct run {
    uint64_t seed;
    int writers;
    int packets;
    size_t max_len;
    inproc_backend_config cfg;
    tw_config wcfg;
    bool flush_midway;
    inproc_backend *be;
    tw_stats wstats[MAX_WRITERS];
} run;

typedef struct writer_arg {
    run *r;
    uint32_t index;
} writer_arg;

static void *writer_main(void *arg)
{
    writer_arg *wa = arg;
    run *r = wa->r;
    tw_writer *tw = inproc_backend_new_writer_with(r->be, &r->wcfg);
    assert_non_null(tw);
    uint8_t *buf = malloc(r->max_len + 1);
    for (int i = 0; i < r->packets; i++) {
        uint64_t c = (uint64_t)i;
        size_t len = tt_payload_len(r->seed, wa->index, c, r->max_len);
        tt_payload_fill(wa->index, c, buf, len);
        tt_write_test_packet(tw, wa->index, c, buf, len, tt_hash3(r->seed, wa->index, c) % 3 == 0);
        uint64_t h = tt_hash3(r->seed ^ 0x55, wa->index, c);
        if (h % 211 == 0)
            tw_flush(tw);
        if (h % 97 == 0)
            usleep(200); /* let the service thread get a word in */
    }
    tw_get_stats(tw, &r->wstats[wa->index]);
    tw_destroy(tw);
    free(buf);
    return NULL;
}

typedef struct seq_state {
    bool seen;
    uint32_t sequence_id;
    uint64_t received;
    uint64_t last;
} seq_state;

/* Runs `r` and checks the file. Returns total packets lost. */
static uint64_t run_and_check(run *r)
{
    char *path = tt_temp_path("inproc");
    r->cfg.output_path = path;
    r->be = inproc_backend_create(&r->cfg);
    assert_non_null(r->be);
    pthread_t th[MAX_WRITERS];
    writer_arg wa[MAX_WRITERS];
    for (int w = 0; w < r->writers; w++) {
        wa[w] = (writer_arg){ r, (uint32_t)w };
        pthread_create(&th[w], NULL, writer_main, &wa[w]);
    }
    if (r->flush_midway) {
        usleep(2000);
        assert_true(inproc_backend_flush(r->be, 10000));
    }
    for (int w = 0; w < r->writers; w++)
        pthread_join(th[w], NULL);
    assert_true(inproc_backend_destroy(r->be));

    tt_trace t;
    assert_true(tt_load_trace(path, &t));
    perfetto_protos_TraceStats_view ts;
    perfetto_protos_TraceStats_BufferStats_view bs;
    assert_true(tt_trace_stats(&t, &ts, &bs));

    /* Service sequence: uuid first, then a clock snapshot of 4 clocks. */
    assert_true(t.n >= 3);
    assert_true(t.pkts[0].v.has_trace_uuid);
    assert_int_equal(t.pkts[0].v.trusted_packet_sequence_id, GT_SERVICE_SEQUENCE_ID);
    assert_true(t.pkts[1].v.has_clock_snapshot);
    assert_true(t.pkts[t.n - 1].v.has_trace_stats);
    assert_true(t.pkts[t.n - 2].v.has_clock_snapshot);

    seq_state seqs[MAX_WRITERS] = { 0 };
    for (size_t i = 0; i < t.n; i++) {
        const tt_packet *p = &t.pkts[i];
        assert_true(p->v.has_trusted_packet_sequence_id);
        assert_true(p->v.has_trusted_uid);
        if (p->v.trusted_packet_sequence_id == GT_SERVICE_SEQUENCE_ID) {
            assert_false(p->v.has_for_testing);
            assert_false(p->v.has_previous_packet_dropped);
            continue;
        }
        assert_int_equal(p->v.trusted_pid, getpid());
        tt_event ev;
        assert_true(tt_decode_test_event(p->data, p->size, &ev));
        assert_true(ev.writer < (uint32_t)r->writers);
        seq_state *s = &seqs[ev.writer];
        bool gap;
        if (!s->seen) {
            s->seen = true;
            s->sequence_id = p->v.trusted_packet_sequence_id;
            gap = ev.counter != 0;
        } else {
            assert_int_equal(s->sequence_id, p->v.trusted_packet_sequence_id);
            assert_true(ev.counter > s->last); /* in order, never twice */
            gap = ev.counter != s->last + 1;
        }
        /* Marked exactly when something was lost right before. */
        bool flagged = p->v.has_previous_packet_dropped && p->v.previous_packet_dropped;
        if (gap != flagged)
            fail_msg("seed %llu writer %u counter %llu: gap %d flagged %d",
                     (unsigned long long)r->seed, ev.writer, (unsigned long long)ev.counter, gap,
                     flagged);
        /* Intact. */
        assert_int_equal(ev.str.size, tt_payload_len(r->seed, ev.writer, ev.counter, r->max_len));
        assert_true(tt_payload_check(ev.writer, ev.counter, ev.str.data, ev.str.size));
        s->last = ev.counter;
        s->received++;
    }
    for (int a = 0; a < r->writers; a++)
        for (int b = a + 1; b < r->writers; b++)
            if (seqs[a].seen && seqs[b].seen)
                assert_true(seqs[a].sequence_id != seqs[b].sequence_id);

    uint64_t lost = 0, writer_side = 0;
    for (int w = 0; w < r->writers; w++) {
        lost += (uint64_t)r->packets - seqs[w].received;
        writer_side += r->wstats[w].packets_dropped + r->wstats[w].packets_aborted;
        assert_int_equal(r->wstats[w].packets_begun, (uint64_t)r->packets);
    }
    uint64_t buffer_loss = bs.chunks_overwritten + bs.chunks_discarded + bs.abi_violations +
                           bs.patches_failed + ts.invalid_packets;
    if (getenv("TT_VERBOSE") || bs.abi_violations)
        fprintf(stderr,
                "run seed=%llu writers=%d packets=%d max=%zu page=%zu smb=%zu layout=%d buf=%zu "
                "fill=%d wp=%u policy=%d: lost=%llu twpl=%llu ow=%llu disc=%llu abi=%llu "
                "rewr=%llu written=%llu\n",
                (unsigned long long)r->seed, r->writers, r->packets, r->max_len,
                r->cfg.smb_page_size, r->cfg.smb_size, r->cfg.page_layout, r->cfg.buffer_size,
                r->cfg.fill_policy, r->cfg.write_period_ms, r->wcfg.policy,
                (unsigned long long)lost, (unsigned long long)bs.trace_writer_packet_loss,
                (unsigned long long)bs.chunks_overwritten, (unsigned long long)bs.chunks_discarded,
                (unsigned long long)bs.abi_violations, (unsigned long long)bs.chunks_rewritten,
                (unsigned long long)bs.chunks_written);
    assert_int_equal(bs.abi_violations, 0);
    /* Patches fail only for chunks the buffer no longer (or never) had. */
    if (bs.chunks_overwritten + bs.chunks_discarded == 0)
        assert_int_equal(bs.patches_failed, 0);
    assert_int_equal(ts.invalid_packets, 0);
    if (buffer_loss == 0) {
        /* Nothing lost in the buffer: all loss is the writers', and the
         * file counts it packet for packet. */
        if (lost != bs.trace_writer_packet_loss || lost != writer_side)
            fail_msg("seed %llu: lost %llu, trace_writer_packet_loss %llu, writers %llu",
                     (unsigned long long)r->seed, (unsigned long long)lost,
                     (unsigned long long)bs.trace_writer_packet_loss,
                     (unsigned long long)writer_side);
    } else {
        assert_true(bs.trace_writer_packet_loss <= writer_side);
        assert_true(writer_side <= lost);
    }
    if (lost > writer_side)
        assert_true(bs.chunks_overwritten + bs.chunks_discarded > 0);
    if (r->wcfg.policy == SMB_POLICY_STALL)
        assert_int_equal(writer_side, 0);
    assert_true(ts.writer_stats_count >= 1);
    assert_int_equal(ts.final_flush_outcome,
                     perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_SUCCEEDED);

    tt_free_trace(&t);
    unlink(path);
    free(path);
    return lost;
}

static void test_property_runs(void **state)
{
    (void)state;
    static const size_t page_sizes[] = { 4096, 8192, 16384 };
    static const size_t max_lens[] = { 64, 600, 5000, 20000 };
    static const size_t buffers[] = { 16 << 10, 64 << 10, 512 << 10, 8 << 20 };
    static const uint32_t write_periods[] = { 0, 10, 200 };
    int runs = 16, lossy = 0, lossless = 0;
    for (int i = 0; i < runs; i++) {
        uint64_t rs = 0x1234567ull + (uint64_t)i * 7919u;
        run r = { .seed = rs };
        inproc_backend_config_default(&r.cfg);
        r.writers = 1 + (int)(tt_rand(&rs) % 4);
        r.packets = (200 + (int)(tt_rand(&rs) % 1200)) / SCALE;
        r.max_len = max_lens[tt_rand(&rs) % 4];
        r.cfg.smb_page_size = page_sizes[tt_rand(&rs) % 3];
        r.cfg.smb_size = r.cfg.smb_page_size * (2 + tt_rand(&rs) % 15);
        r.cfg.page_layout = (smb_page_layout)(SMB_PAGE_DIV1 + tt_rand(&rs) % 5);
        r.cfg.buffer_size = buffers[tt_rand(&rs) % 4];
        r.cfg.fill_policy = tt_rand(&rs) % 2 ? CB_DISCARD : CB_RING_BUFFER;
        r.cfg.write_period_ms = write_periods[tt_rand(&rs) % 3];
        r.cfg.drain_period_ms = 1 + (uint32_t)(tt_rand(&rs) % 10);
        r.wcfg.policy = tt_rand(&rs) % 3 == 0 ? SMB_POLICY_STALL : SMB_POLICY_DROP;
        r.wcfg.stall_timeout_ms = 20000;
        r.flush_midway = tt_rand(&rs) % 2;
        uint64_t lost = run_and_check(&r);
        if (lost)
            lossy++;
        else
            lossless++;
    }
    /* The mix must exercise both outcomes to mean anything. */
    assert_true(lossy > 0);
    assert_true(lossless > 0);
}

/* Ample buffers: nothing lost, so no loss stat and no loss flag anywhere
 * (what trace_processor needs to report zero data_loss). */
static void test_lossless_file_is_clean(void **state)
{
    (void)state;
    run r = { .seed = 99, .writers = 3, .packets = 1500 / SCALE, .max_len = 3000 };
    inproc_backend_config_default(&r.cfg);
    r.cfg.smb_size = 4 << 20;
    r.cfg.buffer_size = 64 << 20;
    r.wcfg.policy = SMB_POLICY_STALL;
    r.wcfg.stall_timeout_ms = 20000;
    assert_int_equal(run_and_check(&r), 0);
}

/* A tiny SMB, writers that never wait, a central buffer that holds it all:
 * packets are lost only in shared memory, and the file counts exactly them. */
static void test_smb_loss_counted_exactly(void **state)
{
    (void)state;
    int lossy = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        run r = { .seed = seed, .writers = 4, .packets = 800 / SCALE, .max_len = 5000 };
        inproc_backend_config_default(&r.cfg);
        r.cfg.smb_size = 2 * 4096;
        r.cfg.page_layout = seed % 2 ? SMB_PAGE_DIV1 : SMB_PAGE_DIV4;
        r.cfg.buffer_size = 64 << 20;
        r.cfg.write_period_ms = 0;
        r.cfg.drain_period_ms = 5;
        r.wcfg.policy = SMB_POLICY_DROP;
        lossy += run_and_check(&r) > 0;
    }
    assert_true(lossy > 0);
}

/* A writer that goes quiet without flushing: an on-demand flush still gets
 * its finished packets into the file (scraped from the chunk it holds). */
static void test_flush_scrapes_open_chunks(void **state)
{
    (void)state;
    char *path = tt_temp_path("flush");
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = path;
    cfg.write_period_ms = 0;
    inproc_backend *be = inproc_backend_create(&cfg);
    assert_non_null(be);
    tw_writer *tw = inproc_backend_new_writer(be);
    uint8_t buf[16];
    for (uint64_t i = 0; i < 5; i++) {
        tt_payload_fill(0, i, buf, sizeof buf);
        tt_write_test_packet(tw, 0, i, buf, sizeof buf, false);
    }
    assert_true(inproc_backend_flush(be, 10000));
    tt_trace t;
    assert_true(tt_load_trace(path, &t));
    size_t events = 0;
    for (size_t i = 0; i < t.n; i++)
        events += t.pkts[i].v.has_for_testing;
    /* Packets 0..3 are finished; 4 may still grow, so it waits. */
    assert_int_equal(events, 4);
    tt_free_trace(&t);

    tt_payload_fill(0, 5, buf, sizeof buf);
    tt_write_test_packet(tw, 0, 5, buf, sizeof buf, false);
    tw_destroy(tw);
    assert_true(inproc_backend_destroy(be));
    assert_true(tt_load_trace(path, &t));
    events = 0;
    uint64_t expect = 0;
    for (size_t i = 0; i < t.n; i++) {
        tt_event ev;
        if (!t.pkts[i].v.has_for_testing)
            continue;
        assert_true(tt_decode_test_event(t.pkts[i].data, t.pkts[i].size, &ev));
        assert_int_equal(ev.counter, expect++);
        assert_false(t.pkts[i].v.has_previous_packet_dropped);
        events++;
    }
    assert_int_equal(events, 6);
    perfetto_protos_TraceStats_view ts;
    perfetto_protos_TraceStats_BufferStats_view bs;
    assert_true(tt_trace_stats(&t, &ts, &bs));
    assert_true(bs.chunks_rewritten >= 1);
    /* The snapshots hold the four builtin clocks, BOOTTIME first. */
    perfetto_protos_ClockSnapshot_view cs;
    assert_true(perfetto_protos_ClockSnapshot_decode(&cs, t.pkts[1].v.clock_snapshot.data,
                                                     t.pkts[1].v.clock_snapshot.size));
    assert_int_equal(cs.clocks_count, 4);
    tt_free_trace(&t);
    unlink(path);
    free(path);
}

static void test_bad_output_path(void **state)
{
    (void)state;
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = "/nonexistent-dir/x.pftrace";
    assert_null(inproc_backend_create(&cfg));
    cfg.output_path = NULL;
    assert_null(inproc_backend_create(&cfg));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_output_path),
        cmocka_unit_test(test_flush_scrapes_open_chunks),
        cmocka_unit_test(test_lossless_file_is_clean),
        cmocka_unit_test(test_smb_loss_counted_exactly),
        cmocka_unit_test(test_property_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
