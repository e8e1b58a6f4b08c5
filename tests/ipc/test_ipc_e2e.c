/* SPDX-License-Identifier: MIT */
/* End to end through the producer socket and the SMB into gputrace-service:
 * connect, register, start, write, flush, stop; several producers at once;
 * the service absent, then present; the service restarted under a live
 * producer; a producer killed mid-packet; a deliberately slow service whose
 * loss must be counted exactly.
 *
 * usage: test_ipc_e2e GPUTRACE_SERVICE GPUTRACE_STRESS */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracing/ipc/ipc_conn.h"
#include "tracing/ipc/producer.h"
#include "tests/stress/stress_payload.h"
#include "protos/perfetto/test_event.pbc.h"
#include "tests/ipc/ti_util.h"
#include "tracing/util/util_time.h"

static const char *g_service;
static const char *g_stress;

/* Runs gputrace-stress against `sock` and parses its summary. */
static pid_t start_stress(const char *sock, const char *const *args, int *out_fd)
{
    const char *argv[32] = { g_stress, "--socket", sock, "--quiet" };
    size_t n = 4;
    for (size_t i = 0; args && args[i] && n < 30; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return ti_spawn((char *const *)argv, NULL, out_fd);
}

static void finish_stress(pid_t pid, int fd, ti_stress_summary *sum)
{
    char *out = ti_read_all(fd, 60000);
    close(fd);
    int st;
    assert_true(ti_wait(pid, 30000, &st));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "gputrace-stress status 0x%x, output: %s\n", st, out);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(ti_parse_stress(out, sum));
    free(out);
}

/* Every written packet is in the trace, in order, intact. */
static void expect_complete(const ti_report *r, size_t seqs, uint64_t per_seq)
{
    if (r->num_seqs != seqs)
        ti_report_print(r);
    assert_int_equal(r->num_seqs, seqs);
    for (size_t i = 0; i < r->num_seqs; i++) {
        const ti_seq *s = &r->seqs[i];
        if (s->packets != per_seq || s->missing || s->out_of_order || s->bad_payload)
            ti_report_print(r);
        assert_int_equal(s->packets, per_seq);
        assert_int_equal(s->first, 0);
        assert_int_equal(s->missing, 0);
        assert_false(s->out_of_order);
        assert_false(s->bad_payload);
        assert_int_equal(s->dropped_flags, 0);
    }
    assert_true(r->has_stats);
    assert_int_equal(r->buf.abi_violations, 0);
    assert_int_equal(r->buf.chunks_discarded, 0);
    assert_int_equal(r->stats.chunks_discarded, 0);
    assert_true(r->clock_snapshots >= 2);
}

static void run_simple(const char *const *stress_args, size_t writers, uint64_t packets,
                       uint32_t size)
{
    char *sock = ti_temp_path("e2e", ".sock");
    char *out = ti_temp_path("e2e", ".pftrace");
    pid_t svc = ti_start_service(g_service, sock, out, NULL);
    assert_true(svc > 0);
    int fd;
    pid_t p = start_stress(sock, stress_args, &fd);
    assert_true(p > 0);
    ti_stress_summary sum;
    finish_stress(p, fd, &sum);
    assert_true(ti_stop_service(svc));
    assert_int_equal(sum.written, writers * packets);
    assert_int_equal(sum.dropped + sum.aborted, 0);
    ti_report r;
    assert_true(ti_check_trace(out, size, &r));
    expect_complete(&r, writers, packets);
    assert_int_equal(r.stats.producers_seen, 1);
    assert_int_equal(r.stats.flushes_succeeded, 1);
    ti_report_free(&r);
    unlink(out);
    free(sock);
    free(out);
}

/* Producer-provided SMB (the default), stall policy: nothing may be lost. */
static void test_one_producer(void **state)
{
    (void)state;
    const char *args[] = { "--writers", "2",          "--packets", "3000", "--policy",
                           "stall",     "--stall-ms", "10000",     NULL };
    run_simple(args, 2, 3000, 256);
}

/* The service's SMB (sent with SetupTracing), big packets spanning chunks
 * (patches through CommitData). */
static void test_service_smb_big_packets(void **state)
{
    (void)state;
    const char *args[] = { "--writers",  "2",     "--packets",         "200",
                           "--size",     "20000", "--policy",          "stall",
                           "--stall-ms", "10000", "--no-producer-smb", NULL };
    run_simple(args, 2, 200, 20000);
}

static void test_several_producers(void **state)
{
    (void)state;
    char *sock = ti_temp_path("multi", ".sock");
    char *out = ti_temp_path("multi", ".pftrace");
    pid_t svc = ti_start_service(g_service, sock, out, NULL);
    assert_true(svc > 0);
    const char *args[] = { "--writers", "2",          "--packets", "2000", "--policy",
                           "stall",     "--stall-ms", "10000",     NULL };
    pid_t pids[3];
    int fds[3];
    for (int i = 0; i < 3; i++) {
        pids[i] = start_stress(sock, args, &fds[i]);
        assert_true(pids[i] > 0);
    }
    for (int i = 0; i < 3; i++) {
        ti_stress_summary sum;
        finish_stress(pids[i], fds[i], &sum);
        assert_int_equal(sum.written, 4000);
    }
    assert_true(ti_stop_service(svc));
    ti_report r;
    assert_true(ti_check_trace(out, 256, &r));
    expect_complete(&r, 6, 2000);
    /* Three processes, three trusted pids. */
    int32_t pid_seen[6];
    size_t distinct = 0;
    for (size_t i = 0; i < r.num_seqs; i++) {
        bool dup = false;
        for (size_t k = 0; k < distinct; k++)
            dup |= pid_seen[k] == r.seqs[i].pid;
        if (!dup)
            pid_seen[distinct++] = r.seqs[i].pid;
    }
    assert_int_equal(distinct, 3);
    assert_int_equal(r.stats.producers_seen, 3);
    ti_report_free(&r);
    unlink(out);
    free(sock);
    free(out);
}

/* No service yet: the producer keeps retrying; tracing starts when the
 * service appears. */
static void test_service_appears_later(void **state)
{
    (void)state;
    char *sock = ti_temp_path("late", ".sock");
    char *out = ti_temp_path("late", ".pftrace");
    const char *args[] = { "--writers",  "1",     "--packets", "1000",  "--policy", "stall",
                           "--stall-ms", "10000", "--wait-ms", "15000", NULL };
    int fd;
    pid_t p = start_stress(sock, args, &fd);
    assert_true(p > 0);
    ti_sleep_ms(700);
    pid_t svc = ti_start_service(g_service, sock, out, NULL);
    assert_true(svc > 0);
    ti_stress_summary sum;
    finish_stress(p, fd, &sum);
    assert_true(ti_stop_service(svc));
    ti_report r;
    assert_true(ti_check_trace(out, 256, &r));
    expect_complete(&r, 1, 1000);
    ti_report_free(&r);
    unlink(out);
    free(sock);
    free(out);
}

/* ---- a producer in this process, across a service restart --------------- */

typedef struct live {
    pthread_mutex_t mu;
    uint64_t instance;
    int starts, stops;
    bool bad_config;
} live;

/* Runs on the producer thread: no cmocka asserts here. */
static void live_start(void *user, uint64_t id, const ipc_producer_ds_config *cfg)
{
    live *l = user;
    pthread_mutex_lock(&l->mu);
    l->bad_config |= strcmp(cfg->name, "gputrace.stress") != 0 || cfg->target_buffer != 1;
    l->instance = id;
    l->starts++;
    pthread_mutex_unlock(&l->mu);
}

static void live_stop(void *user, uint64_t id)
{
    (void)id;
    live *l = user;
    pthread_mutex_lock(&l->mu);
    l->stops++;
    pthread_mutex_unlock(&l->mu);
}

static bool wait_starts(live *l, int n, uint32_t ms)
{
    uint64_t until = util_now_ms() + ms;
    for (;;) {
        pthread_mutex_lock(&l->mu);
        bool ok = l->starts >= n;
        pthread_mutex_unlock(&l->mu);
        if (ok)
            return true;
        if (util_now_ms() >= until)
            return false;
        ti_sleep_ms(10);
    }
}

static void write_n(ipc_producer *p, uint64_t instance, uint64_t n)
{
    tw_writer *tw = ipc_producer_new_writer(p, instance);
    assert_non_null(tw);
    uint8_t payload[256];
    for (uint64_t i = 0; i < n; i++) {
        perfetto_protos_TracePacket pkt;
        perfetto_protos_TestEvent ev;
        stress_payload_fill(0, i, payload, sizeof payload);
        tw_begin_packet(tw, &pkt);
        perfetto_protos_TracePacket_begin_for_testing(&pkt, &ev);
        perfetto_protos_TestEvent_set_seq_value(&ev, 0);
        perfetto_protos_TestEvent_set_counter(&ev, i);
        perfetto_protos_TestEvent_set_str_len(&ev, payload, sizeof payload);
        perfetto_protos_TestEvent_end(&ev);
        tw_end_packet(tw);
    }
    ipc_producer_release_writer(p, tw);
    assert_true(ipc_producer_sync(p, 5000));
}

static void test_reconnect_after_restart(void **state)
{
    (void)state;
    char *sock = ti_temp_path("restart", ".sock");
    char *out1 = ti_temp_path("restart1", ".pftrace");
    char *out2 = ti_temp_path("restart2", ".pftrace");
    live l = { .mu = PTHREAD_MUTEX_INITIALIZER };
    ipc_producer_data_source ds = {
        .name = "gputrace.stress",
        .user = &l,
        .policy = SMB_POLICY_STALL,
        .on_start = live_start,
        .on_stop = live_stop,
    };
    ipc_producer_config pc = {
        .socket_path = sock,
        .data_sources = &ds,
        .num_data_sources = 1,
        .reconnect_min_ms = 50,
        .reconnect_max_ms = 200,
        .stall_timeout_ms = 10000, /* lossless even on a loaded machine */
    };
    ipc_producer *p = ipc_producer_create(&pc);
    assert_non_null(p);
    const _Atomic uint32_t *en = ipc_producer_enabled_flag(p, 0);
    assert_false(ipc_producer_enabled(en)); /* no service: tracing off */

    pid_t svc = ti_start_service(g_service, sock, out1, NULL);
    assert_true(svc > 0);
    assert_true(wait_starts(&l, 1, 5000));
    assert_true(ipc_producer_enabled(en));
    write_n(p, l.instance, 500);
    assert_true(ti_stop_service(svc));

    /* The service is gone: the instance was stopped, the flag is off. */
    uint64_t until = util_now_ms() + 3000;
    while (ipc_producer_enabled(en) && util_now_ms() < until)
        ti_sleep_ms(10);
    assert_false(ipc_producer_enabled(en));
    assert_null(ipc_producer_new_writer(p, l.instance));

    svc = ti_start_service(g_service, sock, out2, NULL);
    assert_true(svc > 0);
    assert_true(wait_starts(&l, 2, 5000));
    write_n(p, l.instance, 700);
    assert_true(ti_stop_service(svc));
    ipc_producer_stats st;
    ipc_producer_get_stats(p, &st);
    ipc_producer_destroy(p);
    assert_true(st.connections >= 2);
    assert_true(st.disconnects >= 1);
    assert_int_equal(l.stops, 2);
    assert_false(l.bad_config);

    ti_report r;
    assert_true(ti_check_trace(out1, 256, &r));
    expect_complete(&r, 1, 500);
    ti_report_free(&r);
    assert_true(ti_check_trace(out2, 256, &r));
    expect_complete(&r, 1, 700);
    ti_report_free(&r);
    unlink(out1);
    unlink(out2);
    free(sock);
    free(out1);
    free(out2);
}

/* SIGKILL with half a packet in the SMB: the service keeps going, the
 * finished packets before it are all there, the torn one is not. */
static void test_producer_killed_mid_packet(void **state)
{
    (void)state;
    char *sock = ti_temp_path("kill", ".sock");
    char *out = ti_temp_path("kill", ".pftrace");
    pid_t svc = ti_start_service(g_service, sock, out, NULL);
    assert_true(svc > 0);
    const char *args[] = { "--writers", "1",     "--packets",    "100000",
                           "--size",    "3000",  "--kill-after", "300",
                           "--policy",  "stall", "--stall-ms",   "10000",
                           NULL };
    int fd;
    pid_t p = start_stress(sock, args, &fd);
    assert_true(p > 0);
    int st;
    assert_true(ti_wait(p, 30000, &st));
    close(fd);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* A well-behaved producer after the crash still gets traced. */
    const char *args2[] = { "--writers", "1",          "--packets", "500", "--policy",
                            "stall",     "--stall-ms", "10000",     NULL };
    pid_t p2 = start_stress(sock, args2, &fd);
    ti_stress_summary sum;
    finish_stress(p2, fd, &sum);
    assert_true(ti_stop_service(svc));

    ti_report r;
    assert_true(ti_check_trace(out, 0, &r));
    assert_int_equal(r.num_seqs, 2);
    bool saw_killed = false;
    for (size_t i = 0; i < r.num_seqs; i++) {
        const ti_seq *s = &r.seqs[i];
        assert_false(s->out_of_order);
        assert_false(s->bad_payload);
        if (s->packets == 500 && s->last == 499 && s->missing == 0)
            continue; /* the second producer */
        /* The killed one: a gap-free prefix that ends before the torn
         * packet (counter 300). Its last complete chunks may still have
         * been scraped, so anything up to 299 is fine. */
        saw_killed = true;
        assert_int_equal(s->first, 0);
        assert_int_equal(s->missing, 0);
        assert_true(s->last < 300);
        assert_true(s->packets > 0);
    }
    assert_true(saw_killed);
    assert_int_equal(r.buf.abi_violations, 0);
    ti_report_free(&r);
    unlink(out);
    free(sock);
    free(out);
}

/* A service slowed down on purpose and a small SMB: the producer drops
 * packets. Every lost packet must be accounted for: the trace shows each
 * gap with previous_packet_dropped, and the count of missing packets
 * equals what the writers report as dropped or aborted. */
static void test_slow_service_loss_counted(void **state)
{
    (void)state;
    char *sock = ti_temp_path("slow", ".sock");
    char *out = ti_temp_path("slow", ".pftrace");
    const char *svc_args[] = { "--slow-ms", "20", "--fill-policy", "discard", NULL };
    pid_t svc = ti_start_service(g_service, sock, out, svc_args);
    assert_true(svc > 0);
    const char *args[] = { "--writers", "2",     "--packets", "4000", "--smb-kb", "16",
                           "--rate",    "20000", "--policy",  "drop", NULL };
    int fd;
    pid_t p = start_stress(sock, args, &fd);
    ti_stress_summary sum;
    finish_stress(p, fd, &sum);
    assert_true(ti_stop_service(svc));
    ti_report r;
    assert_true(ti_check_trace(out, 256, &r));
    uint64_t found = 0, missing = 0;
    assert_int_equal(r.num_seqs, 2);
    for (size_t i = 0; i < r.num_seqs; i++) {
        const ti_seq *s = &r.seqs[i];
        assert_false(s->out_of_order);
        assert_false(s->bad_payload);
        /* Every hole is announced on the packet after it. */
        if (s->gaps != s->flagged_gaps)
            ti_report_print(&r);
        assert_int_equal(s->gaps, s->flagged_gaps);
        found += s->packets;
        missing += s->missing + (4000 - 1 - s->last); /* tail loss is unflagged */
    }
    if (found + sum.dropped + sum.aborted != sum.written || missing != sum.dropped + sum.aborted) {
        ti_report_print(&r);
        fprintf(stderr, "written %llu found %llu dropped %llu aborted %llu\n",
                (unsigned long long)sum.written, (unsigned long long)found,
                (unsigned long long)sum.dropped, (unsigned long long)sum.aborted);
    }
    assert_true(sum.dropped + sum.aborted > 0); /* the test did provoke loss */
    assert_int_equal(found + sum.dropped + sum.aborted, sum.written);
    assert_int_equal(missing, sum.dropped + sum.aborted);
    /* Aborted packets were seen by the service and counted there too. */
    assert_int_equal(r.buf.trace_writer_packet_loss, sum.aborted);
    assert_int_equal(r.buf.abi_violations, 0);
    ti_report_free(&r);
    unlink(out);
    free(sock);
    free(out);
}

#define T(test) TI_TEST(test)

int main(int argc, char **argv)
{
    if (!ti_main_init(argc, argv, &g_service, &g_stress))
        return 2;
    const struct CMUnitTest tests[] = {
        T(test_one_producer),
        T(test_service_smb_big_packets),
        T(test_several_producers),
        T(test_service_appears_later),
        T(test_reconnect_after_restart),
        T(test_producer_killed_mid_packet),
        T(test_slow_service_loss_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
