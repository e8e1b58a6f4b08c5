/* SPDX-License-Identifier: MIT */
/* The flight recorder's window files (window_writer.h), and the property
 * they exist for: while a window file's writes are held up, as by a slow
 * or throttled disk, the in-process backend keeps draining shared memory,
 * so writers lose nothing.
 *
 * The hold is exact, not timed: write(2) is wrapped at link time
 * (-Wl,--wrap=write) and, while `hold` is set, every write from the thread
 * named "gputrace-window" waits for the test to let it go. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracing/inproc_backend.h"
#include "tracing/window_writer.h"
#include "tests/tracing/tt_util.h"

/* ---- holding the window thread's writes --------------------------------- */

static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static bool hold;
static unsigned held; /* writes that have waited */

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strcmp(name, "gputrace-window") == 0) {
        pthread_mutex_lock(&hold_mu);
        if (hold) {
            held++;
            pthread_cond_broadcast(&hold_cv);
            while (hold)
                pthread_cond_wait(&hold_cv, &hold_mu);
        }
        pthread_mutex_unlock(&hold_mu);
    }
    return __real_write(fd, buf, n);
}

static void set_hold(bool on)
{
    pthread_mutex_lock(&hold_mu);
    hold = on;
    held = 0;
    pthread_cond_broadcast(&hold_cv);
    pthread_mutex_unlock(&hold_mu);
}

/* The deadline only catches a hang. */
static bool await_held(unsigned seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    pthread_mutex_lock(&hold_mu);
    int rc = 0;
    while (!held && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&hold_cv, &hold_mu, &until);
    bool ok = held > 0;
    pthread_mutex_unlock(&hold_mu);
    return ok;
}

/* ---- the module alone --------------------------------------------------- */

typedef struct done_log {
    unsigned calls;
    ww_result last;
    char path[4096];
} done_log;

static void log_done(void *ctx, const ww_result *r)
{
    done_log *d = ctx;
    d->last = *r;
    snprintf(d->path, sizeof d->path, "%s", r->path);
    d->last.path = d->path;
    __atomic_store_n(&d->calls, d->calls + 1, __ATOMIC_RELEASE);
}

static bool await_calls(const done_log *d, unsigned calls, unsigned seconds)
{
    for (unsigned i = 0; i < seconds * 1000; i++) {
        if (__atomic_load_n(&d->calls, __ATOMIC_ACQUIRE) >= calls)
            return true;
        usleep(1000);
    }
    return false;
}

/* A framed Trace record (field 1, length-delimited) around payload
 * bytes; the window writer never looks inside. */
static size_t make_record(uint64_t c, uint8_t *out)
{
    const size_t len = tt_payload_len(7, 1, c, 3000);
    uint8_t *p = out;
    *p++ = 0x0a;
    for (size_t v = len;; v >>= 7) {
        *p++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f)
            break;
    }
    tt_payload_fill(1, c, p, len);
    return (size_t)(p - out) + len;
}

/* A window rendered through svc_out into memory reaches its file byte
 * for byte; one is written at a time. */
static void test_window_round_trip(void **state)
{
    (void)state;
    done_log d = { 0 };
    ww_writer *ww = ww_create(log_done, &d);
    assert_non_null(ww);
    assert_false(ww_busy(ww));

    ww_window *w = ww_window_new();
    assert_non_null(w);
    svc_out o;
    svc_out_init_sink(&o, ww_window_sink, w);
    /* More than one of svc_out's write-outs (1 MiB), so the sink is fed
     * in several calls. */
    enum {
        RECORDS = 4000
    };
    uint8_t *expected = malloc((size_t)RECORDS * 3010);
    assert_non_null(expected);
    size_t total = 0;
    for (uint64_t c = 0; c < RECORDS; c++) {
        const size_t len = make_record(c, expected + total);
        svc_out_raw_record(&o, expected + total, len, 2 + (uint32_t)(c % 3));
        total += len;
    }
    assert_true(total > (1u << 20));
    assert_true(svc_out_close(&o));
    assert_true(ww_window_complete(w));
    assert_int_equal(ww_window_records(w), RECORDS);

    char *path = tt_temp_path("window");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    int fd = dup(fileno(f));
    fclose(f);
    set_hold(true);
    assert_true(ww_submit(ww, w, fd, path, 3, RECORDS, 2));
    assert_true(await_held(20));
    assert_true(ww_busy(ww));
    /* Another while one is in hand: refused, and released. */
    ww_window *w2 = ww_window_new();
    assert_false(ww_submit(ww, w2, dup(STDERR_FILENO), path, 4, 0, 1));
    set_hold(false);
    assert_true(await_calls(&d, 1, 20));
    assert_int_equal(d.calls, 1);
    assert_true(d.last.ok);
    assert_int_equal(d.last.number, 3);
    assert_int_equal(d.last.packets, RECORDS);
    assert_int_equal(d.last.fired, 2);
    assert_string_equal(d.last.path, path);
    ww_destroy(ww);

    f = fopen(path, "r");
    assert_non_null(f);
    uint8_t *got = malloc(total + 1);
    assert_non_null(got);
    assert_int_equal(fread(got, 1, total + 1, f), total);
    fclose(f);
    assert_memory_equal(got, expected, total);
    free(got);
    free(expected);
    unlink(path);
    free(path);
}

/* ---- the property, through the backend ---------------------------------- */

enum {
    SMB_SIZE = 64 << 10,
    BATCH_BYTES = SMB_SIZE / 4,
    BATCHES = 16,
    PAYLOAD = 200
};

static uint64_t write_batch(inproc_backend *be, tw_writer *tw, uint64_t first, size_t bytes)
{
    static uint8_t payload[PAYLOAD];
    uint64_t c = first;
    for (size_t done = 0; done < bytes; done += PAYLOAD + 16, c++) {
        tt_payload_fill(0, c, payload, PAYLOAD);
        tt_write_test_packet(tw, 0, c, payload, PAYLOAD, false);
    }
    tw_flush(tw);
    assert_true(inproc_backend_flush(be, 20000));
    return c;
}

static bool await_windows(inproc_backend *be, unsigned n, unsigned seconds)
{
    for (unsigned i = 0; i < seconds * 1000; i++) {
        if (inproc_backend_windows_written(be) >= n)
            return true;
        usleep(1000);
    }
    return false;
}

/* Counters of writer 0's test packets in `path`: each exactly once, in
 * order, 0..n-1. */
static void check_window(const char *path, uint64_t n)
{
    tt_trace t;
    assert_true(tt_load_trace(path, &t));
    uint64_t next = 0;
    for (size_t i = 0; i < t.n; i++) {
        tt_event ev;
        if (!tt_decode_test_event(t.pkts[i].data, t.pkts[i].size, &ev))
            continue;
        assert_int_equal(ev.writer, 0);
        assert_int_equal(ev.counter, next);
        assert_true(tt_payload_check(0, ev.counter, ev.str.data, ev.str.size));
        assert_false(t.pkts[i].v.has_previous_packet_dropped &&
                     t.pkts[i].v.previous_packet_dropped);
        next++;
    }
    assert_int_equal(next, n);
    tt_free_trace(&t);
}

static void test_held_window_loses_nothing(void **state)
{
    (void)state;
    char *base = tt_temp_path("flr");
    char pattern[4200], first[4200], second[4200];
    snprintf(pattern, sizeof pattern, "%s-%%n.pftrace", base);
    snprintf(first, sizeof first, "%s-1.pftrace", base);
    snprintf(second, sizeof second, "%s-2.pftrace", base);
    trg_spec spec;
    const char *why = NULL;
    assert_true(trg_parse("signal:USR1", &spec, &why));

    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = pattern;
    cfg.trigger = &spec;
    cfg.window_ms = 600000; /* everything this test writes */
    cfg.smb_size = SMB_SIZE;
    cfg.buffer_size = 1 << 20;
    cfg.record_bytes = 16 << 20;
    cfg.writer_policy = SMB_POLICY_DROP;
    inproc_backend *be = inproc_backend_create(&cfg);
    assert_non_null(be);
    tw_writer *tw = inproc_backend_new_writer(be);
    assert_non_null(tw);

    uint64_t c = write_batch(be, tw, 0, BATCH_BYTES);
    const uint64_t before_trigger = c;
    set_hold(true);
    raise(SIGUSR1);
    assert_true(await_held(20));
    /* The window file waits for the disk; four SMBs' worth of packets
     * still get through, each batch a quarter of it, drained (the flush)
     * before the next. */
    for (int b = 0; b < BATCHES; b++)
        c = write_batch(be, tw, c, BATCH_BYTES);
    assert_int_equal(inproc_backend_windows_written(be), 0);
    set_hold(false);
    assert_true(await_windows(be, 1, 20));
    raise(SIGUSR1);
    assert_true(await_windows(be, 2, 20));

    tw_stats ws;
    tw_get_stats(tw, &ws);
    assert_int_equal(ws.packets_dropped, 0);
    assert_int_equal(ws.packets_aborted, 0);
    assert_int_equal(smb_arbiter_packets_lost(inproc_backend_arbiter(be)), 0);
    tw_destroy(tw);
    assert_true(inproc_backend_destroy(be));

    check_window(first, before_trigger);
    check_window(second, c);
    unlink(first);
    unlink(second);
    free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_round_trip),
        cmocka_unit_test(test_held_window_loses_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
