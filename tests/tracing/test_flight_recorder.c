/* SPDX-License-Identifier: MIT */
/* The flight recorder (tracing/flight_recorder.c) and its triggers
 * (tracing/trigger.c), in process: which records a window holds (restart
 * points, sequences left out, earlier clock snapshots), the ring making
 * room, window file names, the trigger texts, a file trigger and a signal
 * trigger that keeps the program's handler. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_writer.h"
#include "tracing/flight_recorder.h"
#include "tracing/trigger.h"

/* ---- records ----------------------------------------------------------------------------- */

enum {
    REC_PLAIN,
    REC_RESTART,
    REC_SNAPSHOT
};

/* A framed Trace record: TracePacket { timestamp: tag, and a restart flag
 * or a clock snapshot }, so a test can tell records apart by `tag`. */
static size_t make_record(uint8_t *buf, size_t cap, uint64_t tag, int kind)
{
    pb_heap_buffer h;
    pb_msg trace, pkt, cs, clk;
    pb_heap_init(&h, 256);
    pb_msg_init_root(&trace, pb_heap_stream(&h));
    pb_msg_begin_nested(&trace, 1, &pkt);
    pb_msg_append_varint(&pkt, 8, tag);
    if (kind == REC_RESTART)
        pb_msg_append_varint(&pkt, 13, 1);
    if (kind == REC_SNAPSHOT) {
        pb_msg_begin_nested(&pkt, 6, &cs);
        pb_msg_begin_nested(&cs, 1, &clk);
        pb_msg_append_varint(&clk, 1, 6);
        pb_msg_append_varint(&clk, 2, tag);
        pb_msg_end(&clk);
        pb_msg_end(&cs);
    }
    pb_msg_end(&pkt);
    pb_msg_end(&trace);
    size_t len;
    uint8_t *d = pb_heap_dup(&h, &len);
    pb_heap_free(&h);
    assert_non_null(d);
    assert_true(len <= cap);
    memcpy(buf, d, len);
    free(d);
    return len;
}

static void add(flr_recorder *r, uint32_t seq, uint64_t tag, int kind, uint64_t at_ns)
{
    uint8_t buf[256];
    const size_t len = make_record(buf, sizeof buf, tag, kind);
    const struct svc_out_record rec = { len, seq };
    flr_append(r, buf, &rec, 1, at_ns);
}

/* What a window wrote: the tags of its records, in order, per sequence. */
typedef struct written {
    uint64_t tags[256];
    uint32_t seqs[256];
    size_t n;
} written;

static void collect(void *ctx, const uint8_t *data, const struct svc_out_record *records, size_t n)
{
    written *w = ctx;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        /* The record's packet: tag 0x0a, length, then the timestamp field. */
        const uint8_t *p = data + start + 1;
        while (*p & 0x80)
            p++;
        p++;
        assert_int_equal(p[0], 8 << 3);
        uint64_t v = 0;
        int shift = 0;
        for (p++;; p++, shift += 7) {
            v |= (uint64_t)(*p & 0x7f) << shift;
            if (!(*p & 0x80))
                break;
        }
        assert_true(w->n < 256);
        w->seqs[w->n] = records[i].sequence_id;
        w->tags[w->n++] = v;
        start = records[i].end;
    }
}

static written *window(flr_recorder *r, uint64_t from_ns)
{
    static written w;
    memset(&w, 0, sizeof w);
    svc_out out;
    svc_out_init_sink(&out, collect, &w);
    flr_write_window(r, &out, from_ns, 1);
    svc_out_close(&out);
    return &w;
}

static bool wrote(const written *w, uint64_t tag)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->tags[i] == tag)
            return true;
    return false;
}

/* ---- windows ----------------------------------------------------------------------------- */

static void test_kinds(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t len = make_record(buf, sizeof buf, 5, REC_RESTART);
    assert_int_equal(flr_record_kind(buf, len), FLR_KIND_RESTART);
    len = make_record(buf, sizeof buf, 5, REC_SNAPSHOT);
    assert_int_equal(flr_record_kind(buf, len), FLR_KIND_CLOCK_SNAPSHOT);
    len = make_record(buf, sizeof buf, 5, REC_PLAIN);
    assert_int_equal(flr_record_kind(buf, len), 0);
    /* Cut short: malformed, nothing. */
    len = make_record(buf, sizeof buf, 5, REC_RESTART);
    assert_int_equal(flr_record_kind(buf, len - 1), 0);
    assert_int_equal(flr_record_kind(buf, 0), 0);
}

/* Sequence 2 restarts at t=10 and t=30, sequence 3 only at t=50, sequence
 * 4 never, sequence 5 only before the window; the service's (1) never
 * goes in. */
static void test_window_starts(void **state)
{
    (void)state;
    flr_recorder *r = flr_create(1 << 20);
    assert_non_null(r);
    const uint64_t ms = 1000000;
    add(r, 1, 1, REC_SNAPSHOT, 1 * ms);
    add(r, 2, 100, REC_SNAPSHOT, 5 * ms);
    add(r, 2, 101, REC_RESTART, 10 * ms);
    add(r, 2, 102, REC_PLAIN, 20 * ms);
    add(r, 5, 500, REC_RESTART, 21 * ms);
    add(r, 5, 501, REC_PLAIN, 22 * ms);
    add(r, 2, 103, REC_SNAPSHOT, 25 * ms);
    add(r, 2, 104, REC_RESTART, 30 * ms);
    add(r, 3, 300, REC_PLAIN, 35 * ms);
    add(r, 2, 105, REC_PLAIN, 45 * ms);
    add(r, 3, 301, REC_RESTART, 50 * ms);
    add(r, 4, 400, REC_PLAIN, 39 * ms);
    add(r, 4, 401, REC_PLAIN, 41 * ms);
    add(r, 3, 302, REC_PLAIN, 60 * ms);

    written *w = window(r, 40 * ms);
    /* 2: from its restart at 30, with the earlier distinct snapshots (100
     * and 103, not the restart at 10). */
    assert_true(wrote(w, 104) && wrote(w, 105) && wrote(w, 100) && wrote(w, 103));
    assert_false(wrote(w, 101) || wrote(w, 102));
    /* 3: no restart before 40: from its first one after. */
    assert_true(wrote(w, 301) && wrote(w, 302));
    assert_false(wrote(w, 300));
    /* 4: never restarts: from the window's start. */
    assert_true(wrote(w, 401));
    assert_false(wrote(w, 400));
    /* 5: nothing in the window; 1: the service's. */
    assert_false(wrote(w, 500) || wrote(w, 501) || wrote(w, 1));
    assert_int_equal(w->n, 7);
    /* In the order they arrived. */
    for (size_t i = 1; i < w->n; i++)
        if (w->seqs[i] == w->seqs[i - 1])
            assert_true(w->tags[i] > w->tags[i - 1]);

    /* Everything from the start: each sequence from its first restart. */
    w = window(r, 0);
    assert_true(wrote(w, 101) && wrote(w, 500) && wrote(w, 301) && wrote(w, 400));
    assert_true(wrote(w, 100)); /* its snapshot before the restart */
    assert_false(wrote(w, 300));
    flr_destroy(r);
}

/* A re-emitted reading (the same bytes) is kept once; at most
 * FLR_KEEP_SNAPSHOTS of them, the newest. */
static void test_window_snapshots(void **state)
{
    (void)state;
    flr_recorder *r = flr_create(1 << 20);
    for (uint64_t i = 0; i < 10; i++) {
        add(r, 2, 10 + i, REC_SNAPSHOT, i);
        add(r, 2, 10 + i, REC_SNAPSHOT, i); /* the same packet again */
    }
    add(r, 2, 50, REC_RESTART, 100);
    add(r, 2, 51, REC_PLAIN, 200);
    written *w = window(r, 150);
    assert_int_equal(w->n, FLR_KEEP_SNAPSHOTS + 2);
    for (uint64_t i = 0; i < FLR_KEEP_SNAPSHOTS; i++)
        assert_true(wrote(w, 19 - i));
    assert_false(wrote(w, 10 + 9 - FLR_KEEP_SNAPSHOTS));
    flr_destroy(r);
}

/* The ring keeps the newest records whatever their sizes, and wraps. */
static void test_ring(void **state)
{
    (void)state;
    flr_recorder *r = flr_create(64 * 1024);
    const uint64_t n = 20000;
    for (uint64_t i = 1; i <= n; i++)
        add(r, 2, i, i % 100 == 0 ? REC_RESTART : REC_PLAIN, i);
    flr_stats st;
    flr_get_stats(r, &st);
    assert_true(st.evicted > 0);
    assert_int_equal(st.records + st.evicted, n);
    assert_true(st.bytes <= 64 * 1024);
    assert_int_equal(st.oldest_ns, n - st.records + 1);
    /* The window from a restart point on holds everything after it. */
    written *w = window(r, n - 150);
    assert_int_equal(w->tags[0], 19800);
    assert_int_equal(w->tags[w->n - 1], n);
    assert_int_equal(w->n, n - 19800 + 1);
    /* A record larger than the ring is never kept. */
    uint8_t *big = calloc(1, 70 * 1024);
    const struct svc_out_record rec = { 70 * 1024, 2 };
    flr_append(r, big, &rec, 1, n + 1);
    free(big);
    flr_get_stats(r, &st);
    assert_int_equal(st.too_large, 1);
    flr_destroy(r);
}

static void test_window_paths(void **state)
{
    (void)state;
    char out[64];
    assert_true(flr_window_path("/t/snap-%n.pftrace", 3, out, sizeof out));
    assert_string_equal(out, "/t/snap-3.pftrace");
    assert_true(flr_window_path("/t/trace.pftrace", 12, out, sizeof out));
    assert_string_equal(out, "/t/trace-12.pftrace");
    assert_true(flr_window_path("/t.d/trace", 1, out, sizeof out));
    assert_string_equal(out, "/t.d/trace-1");
    assert_true(flr_window_path("%e-%p-%%n.pftrace", 2, out, sizeof out));
    assert_string_equal(out, "%e-%p-%%n-2.pftrace");
    assert_true(flr_window_path("a%nb%n", 7, out, sizeof out));
    assert_string_equal(out, "a7b7");
    assert_false(flr_window_path("0123456789", 123456, out, 12));
}

/* ---- triggers ---------------------------------------------------------------------------- */

static void test_trigger_texts(void **state)
{
    (void)state;
    trg_spec s;
    const char *why;
    assert_true(trg_parse("signal:USR1", &s, &why));
    assert_int_equal(s.kind, TRG_SIGNAL);
    assert_int_equal(s.signo, SIGUSR1);
    assert_true(trg_parse("signal:SIGUSR2", &s, &why));
    assert_int_equal(s.signo, SIGUSR2);
    assert_true(trg_parse("signal:RTMIN+3", &s, &why));
    assert_int_equal(s.signo, SIGRTMIN + 3);
    assert_true(trg_parse("file:/tmp/x", &s, &why));
    assert_int_equal(s.kind, TRG_FILE);
    assert_string_equal(s.path, "/tmp/x");
    const char *bad[] = {
        "",      "signal:", "signal:INT", "signal:KILL", "signal:RTMIN+999", "signal:RTMIN+",
        "file:", "USR1",    "files:/x"
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        if (trg_parse(bad[i], &s, &why))
            fail_msg("\"%s\" accepted", bad[i]);
        assert_non_null(why);
    }
}

static void test_file_trigger(void **state)
{
    (void)state;
    char path[] = "/tmp/gputrace-trg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    trg_spec s;
    const char *why;
    char text[64];
    snprintf(text, sizeof text, "file:%s", path);
    assert_true(trg_parse(text, &s, &why));
    trg_trigger *t = trg_start(&s, NULL, &why);
    assert_non_null(t);
    assert_int_equal(trg_poll(t), 0);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(trg_poll(t), 1); /* it appeared */
    assert_int_equal(trg_poll(t), 0);
    /* touch's second step, its time set a moment after the creation: the
     * same trigger */
    struct timespec times[2] = { { 0, UTIME_OMIT }, st.st_mtim };
    times[1].tv_nsec += times[1].tv_nsec < 999000000 ? 1000000 : -1000000;
    assert_int_equal(futimens(fd, times), 0);
    close(fd);
    assert_int_equal(trg_poll(t), 0);
    /* touch again, later: a new modification time */
    times[1] = (struct timespec){ 12345, 0 };
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(trg_poll(t), 1);
    assert_int_equal(trg_poll(t), 0);
    times[1].tv_nsec = 50000000; /* 50 ms on: still the same */
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(trg_poll(t), 0);
    times[1].tv_nsec = 150000000; /* 150 ms on from the last firing */
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(trg_poll(t), 1);
    unlink(path);
    assert_int_equal(trg_poll(t), 0); /* gone is not a trigger */
    trg_stop(t, NULL);
}

static volatile sig_atomic_t app_calls;
static void app_handler(int signo)
{
    (void)signo;
    app_calls++;
}

/* The program's own handler runs as well; the default action (which would
 * end the process) does not; once stopped, the program's handler is back. */
static void test_signal_trigger(void **state)
{
    (void)state;
    trg_spec s;
    const char *why;
    assert_true(trg_parse("signal:USR2", &s, &why));
    /* Default action: caught, nothing else happens. */
    trg_trigger *t = trg_start(&s, NULL, &why);
    assert_non_null(t);
    raise(SIGUSR2);
    raise(SIGUSR2);
    assert_int_equal(trg_poll(t), 2);
    assert_int_equal(trg_poll(t), 0);
    /* One signal trigger at a time. */
    assert_null(trg_start(&s, NULL, &why));
    bool replaced = true;
    trg_stop(t, &replaced);
    assert_false(replaced);

    /* The program's handler. */
    struct sigaction sa = { .sa_handler = app_handler };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    t = trg_start(&s, NULL, &why);
    assert_non_null(t);
    raise(SIGUSR2);
    assert_int_equal(trg_poll(t), 1);
    assert_int_equal(app_calls, 1);
    trg_stop(t, &replaced);
    assert_false(replaced);
    struct sigaction now;
    sigaction(SIGUSR2, NULL, &now);
    assert_true(now.sa_handler == app_handler);
    raise(SIGUSR2);
    assert_int_equal(app_calls, 2);

    /* A handler installed after ours replaces it: ours is not put back. */
    t = trg_start(&s, NULL, &why);
    assert_non_null(t);
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR2);
    assert_int_equal(trg_poll(t), 0);
    assert_int_equal(app_calls, 3);
    trg_stop(t, &replaced);
    assert_true(replaced);
    sigaction(SIGUSR2, NULL, &now);
    assert_true(now.sa_handler == app_handler);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_window_starts),
        cmocka_unit_test(test_window_snapshots),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_window_paths),
        cmocka_unit_test(test_trigger_texts),
        cmocka_unit_test(test_file_trigger),
        cmocka_unit_test(test_signal_trigger),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
