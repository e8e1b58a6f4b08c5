/* SPDX-License-Identifier: MIT */
/* The .pftrace output file (service_output.h, inproc_backend.h): path
 * escapes; what the opener refuses (FIFO, links, directories, devices) and
 * that it never blocks; a path another process is writing (the per-pid
 * fallback); failed writes (/dev/full, RLIMIT_FSIZE with SIGXFSZ at its
 * default) leaving a file that parses to the end and counts its loss; and
 * finishing a trace from a signal handler, interim and last. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracing/inproc_backend.h"
#include "tracing/service_output.h"
#include "protos/perfetto/trace_stats.pbc.h"
#include "tests/tracing/tt_util.h"

/* A fresh directory for one test; removed (with what the test left in it)
 * by remove_dir(). */
static char *make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char *d = malloc(4096);
    snprintf(d, 4096, "%s/gputrace-outfile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(d));
    return d;
}

static void remove_dir(char *d)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

static char *join(const char *dir, const char *name)
{
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

static void test_expand_path(void **state)
{
    (void)state;
    char out[512];
    unsigned unknown = 99;
    time_t t0 = time(NULL);
    assert_true(svc_out_expand_path("a-%p-%%-%t-%q-%", out, sizeof out, &unknown));
    time_t t1 = time(NULL);
    long pid;
    long long t;
    char rest[64];
    assert_int_equal(sscanf(out, "a-%ld-%%-%lld-%63s", &pid, &t, rest), 3);
    assert_int_equal(pid, (long)getpid());
    assert_true(t >= (long long)t0 && t <= (long long)t1);
    assert_string_equal(rest, "%q-%"); /* unknown and trailing: as written */
    assert_int_equal(unknown, 1);

    char host[256];
    assert_int_equal(gethostname(host, sizeof host), 0);
    assert_true(svc_out_expand_path("%h/%e.x", out, sizeof out, &unknown));
    char expect[600];
    snprintf(expect, sizeof expect, "%s/%s.x", host, program_invocation_short_name);
    assert_string_equal(out, expect);
    assert_int_equal(unknown, 0);

    /* Does not fit: an error, never a cut-off name. */
    errno = 0;
    assert_false(svc_out_expand_path("trace-%p.pftrace", out, 10, NULL));
    assert_int_equal(errno, ENAMETOOLONG);
    assert_true(svc_out_expand_path("abc", out, 4, NULL));
    assert_false(svc_out_expand_path("abcd", out, 4, NULL));
}

static void expect_refused(const char *path, const char *why)
{
    svc_out_file f;
    svc_out_create_file(path, &f);
    assert_int_equal(f.fd, -1);
    assert_non_null(f.refused);
    if (!strstr(f.refused, why))
        fail_msg("%s: refused as '%s', expected '%s'", path, f.refused, why);
    assert_false(f.fell_back);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "opening the trace file blocked\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void test_refuses_what_is_not_a_file(void **state)
{
    (void)state;
    char *dir = make_dir();
    /* Opening a FIFO nobody reads blocks forever: the alarm fails the test
     * instead of hanging it. */
    signal(SIGALRM, on_alarm);
    alarm(20);
    char *fifo = join(dir, "fifo.pftrace");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_refused(fifo, "FIFO");

    char *target = join(dir, "target");
    FILE *fp = fopen(target, "w");
    fputs("precious", fp);
    fclose(fp);
    char *link = join(dir, "link.pftrace");
    assert_int_equal(symlink(target, link), 0);
    expect_refused(link, "symbolic link");
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, 8);

    char *nowhere = join(dir, "nowhere");
    char *dangling = join(dir, "dangling.pftrace");
    assert_int_equal(symlink(nowhere, dangling), 0);
    expect_refused(dangling, "symbolic link");
    assert_int_equal(lstat(nowhere, &st), -1);

    char *sub = join(dir, "dir.pftrace");
    assert_int_equal(mkdir(sub, 0700), 0);
    expect_refused(sub, "directory");
    expect_refused("/dev/null", "device");

    /* The in-process backend says so, and fails. */
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = fifo;
    assert_null(inproc_backend_create(&cfg));
    alarm(0);
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));

    free(fifo);
    free(target);
    free(link);
    free(nowhere);
    free(dangling);
    free(sub);
    remove_dir(dir);
}

static void test_busy_path_falls_back(void **state)
{
    (void)state;
    char *dir = make_dir();
    char *path = join(dir, "t.pftrace");
    mode_t old_mask = umask(027);
    svc_out_file a, b, c;
    svc_out_create_file(path, &a);
    assert_true(a.fd >= 0);
    assert_false(a.fell_back);
    assert_string_equal(a.path, path);
    assert_int_equal(write(a.fd, "first", 5), 5);

    /* Held (being written): the per-pid name beside it. */
    svc_out_create_file(path, &b);
    assert_true(b.fd >= 0);
    assert_true(b.fell_back);
    char expect[4200];
    snprintf(expect, sizeof expect, "%s/t.%ld.pftrace", dir, (long)getpid());
    assert_string_equal(b.path, expect);
    struct stat st;
    assert_int_equal(fstat(a.fd, &st), 0);
    assert_int_equal(st.st_size, 5); /* untouched */

    /* Both held: nothing left to write. */
    svc_out_create_file(path, &c);
    assert_int_equal(c.fd, -1);
    assert_int_equal(errno, EBUSY);

    /* Another process sees the same. */
    pid_t child = fork();
    if (child == 0) {
        svc_out_file d;
        svc_out_create_file(path, &d);
        char mine[4200];
        snprintf(mine, sizeof mine, "%s/t.%ld.pftrace", dir, (long)getpid());
        _exit(d.fd >= 0 && d.fell_back && strcmp(d.path, mine) == 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* Finished (closed): replaced, as any tool would. */
    close(a.fd);
    close(b.fd);
    svc_out_create_file(path, &c);
    assert_true(c.fd >= 0);
    assert_false(c.fell_back);
    assert_int_equal(fstat(c.fd, &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_int_equal(st.st_mode & 0777, 0640); /* 0644 minus the umask */
    close(c.fd);
    umask(old_mask);

    /* Names without an extension, and dot files. */
    char *plain = join(dir, "plain");
    svc_out_create_file(plain, &a);
    svc_out_create_file(plain, &b);
    snprintf(expect, sizeof expect, "%s/plain.%ld", dir, (long)getpid());
    assert_string_equal(b.path, expect);
    close(a.fd);
    close(b.fd);
    char *hidden = join(dir, ".hidden");
    svc_out_create_file(hidden, &a);
    svc_out_create_file(hidden, &b);
    snprintf(expect, sizeof expect, "%s/.hidden.%ld", dir, (long)getpid());
    assert_string_equal(b.path, expect);
    close(a.fd);
    close(b.fd);
    free(plain);
    free(hidden);
    free(path);
    remove_dir(dir);
}

static void test_dev_full_counts_the_loss(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        skip();
    svc_out o;
    svc_out_init(&o, fd);
    svc_out_trace_uuid(&o);
    svc_out_clock_snapshot(&o);
    size_t len = o.len;
    assert_false(svc_out_flush(&o));
    assert_int_equal(o.write_failures, 1);
    assert_int_equal(o.last_error, ENOSPC);
    assert_int_equal(o.bytes_dropped, len);
    assert_int_equal(o.packets_dropped, 2);
    assert_int_equal(o.len, 0);
    /* The next packet of the service sequence says so. */
    svc_out_clock_snapshot(&o);
    perfetto_protos_TracePacket_view v;
    /* Skip the Trace.packet frame: tag, then the length varint. */
    const uint8_t *p = o.buf + 1;
    while (*p & 0x80)
        p++;
    p++;
    assert_true(perfetto_protos_TracePacket_decode(&v, p, o.len - (size_t)(p - o.buf)));
    assert_true(v.has_previous_packet_dropped && v.previous_packet_dropped);
    assert_false(svc_out_close(&o));
}

/* ---- RLIMIT_FSIZE, in a child process ------------------------------------- */

#define FSIZE_LIMIT   (96 * 1024)
#define FSIZE_WRITERS 3
#define FSIZE_PACKETS 3000

static char reports[8192];

static void collect_report(void *ctx, inproc_backend_report_level level, const char *msg)
{
    (void)ctx;
    size_t n = strlen(reports);
    snprintf(reports + n, sizeof reports - n, "%s: %s\n",
             level == INPROC_BACKEND_REPORT_WARN ? "warn" : "info", msg);
}

/* Writes far more than the limit, SIGXFSZ at its default action: the
 * process must live (the I/O thread blocks it, its writes get EFBIG).
 * `lift`: half way, the limit is lifted, so writes work again and the
 * packets after the gap must say so. */
static int fsize_child(const char *path, int report_fd, bool lift)
{
    signal(SIGXFSZ, SIG_DFL);
    struct rlimit rl = { FSIZE_LIMIT, RLIM_INFINITY };
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 2;
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = path;
    cfg.report = collect_report;
    cfg.write_period_ms = 5; /* many write-outs, so some fit */
    inproc_backend *be = inproc_backend_create(&cfg);
    if (!be)
        return 3;
    tw_writer *tw[FSIZE_WRITERS];
    for (int w = 0; w < FSIZE_WRITERS; w++)
        tw[w] = inproc_backend_new_writer(be);
    uint8_t buf[64];
    for (int i = 0; i < FSIZE_PACKETS; i++) {
        if (lift && i == FSIZE_PACKETS / 2) {
            for (int w = 0; w < FSIZE_WRITERS; w++)
                tw_flush(tw[w]);
            if (!inproc_backend_flush(be, 10000))
                return 5;
            rl.rlim_cur = RLIM_INFINITY;
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                return 6;
        }
        for (uint32_t w = 0; w < FSIZE_WRITERS; w++) {
            tt_payload_fill(w, (uint64_t)i, buf, sizeof buf);
            tt_write_test_packet(tw[w], w, (uint64_t)i, buf, sizeof buf, false);
        }
        if (i % 100 == 0)
            usleep(2000);
    }
    for (int w = 0; w < FSIZE_WRITERS; w++)
        tw_destroy(tw[w]);
    bool ok = inproc_backend_destroy(be);
    ssize_t n = write(report_fd, reports, strlen(reports));
    (void)n;
    return ok ? 4 : 0; /* it cannot all have fitted */
}

static void rlimit_fsize(bool lift)
{
    char *dir = make_dir();
    char *path = join(dir, "limited.pftrace");
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t child = fork();
    if (child == 0) {
        close(pipefd[0]);
        _exit(fsize_child(path, pipefd[1], lift));
    }
    close(pipefd[1]);
    char rep[8192] = { 0 };
    size_t got = 0;
    ssize_t n;
    while ((n = read(pipefd[0], rep + got, sizeof rep - 1 - got)) > 0)
        got += (size_t)n;
    close(pipefd[0]);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    if (!WIFEXITED(status))
        fail_msg("the child died of signal %d", WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_non_null(strstr(rep, "File too large"));
    if (lift)
        assert_non_null(strstr(rep, "works again"));
    else
        assert_non_null(strstr(rep, "cut off to make room for its TraceStats"));

    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    if (!lift)
        assert_true(st.st_size <= FSIZE_LIMIT);
    tt_trace t;
    assert_true(tt_load_trace(path, &t)); /* whole records only */
    perfetto_protos_TraceStats_view ts;
    perfetto_protos_TraceStats_BufferStats_view bs;
    assert_true(tt_trace_stats(&t, &ts, &bs));
    assert_true(ts.has_flushes_failed && ts.flushes_failed > 0);

    /* Per writer: in order; a packet after missing ones says so. */
    uint64_t next[FSIZE_WRITERS] = { 0 };
    size_t events = 0, marked = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (!t.pkts[i].v.has_for_testing)
            continue;
        tt_event ev;
        assert_true(tt_decode_test_event(t.pkts[i].data, t.pkts[i].size, &ev));
        assert_true(ev.writer < FSIZE_WRITERS);
        assert_true(ev.counter >= next[ev.writer]);
        bool dropped =
            t.pkts[i].v.has_previous_packet_dropped && t.pkts[i].v.previous_packet_dropped;
        if (ev.counter > next[ev.writer] && !dropped)
            fail_msg("writer %u: packet %llu follows %llu unmarked", ev.writer,
                     (unsigned long long)ev.counter, (unsigned long long)next[ev.writer]);
        marked += dropped;
        next[ev.writer] = ev.counter + 1;
        events++;
    }
    print_message("limit %d%s: %zu of %d packets in %lld bytes, %zu after a gap, "
                  "%llu failed write-outs\n",
                  FSIZE_LIMIT, lift ? " lifted half way" : "", events,
                  FSIZE_WRITERS * FSIZE_PACKETS, (long long)st.st_size, marked,
                  (unsigned long long)ts.flushes_failed);
    assert_true(events > 0);
    assert_true(events < FSIZE_WRITERS * FSIZE_PACKETS);
    if (lift) {
        /* Every writer lost packets before the lift and wrote after it. */
        assert_int_equal(marked, FSIZE_WRITERS);
        for (int w = 0; w < FSIZE_WRITERS; w++)
            assert_int_equal(next[w], FSIZE_PACKETS);
    }
    tt_free_trace(&t);
    free(path);
    remove_dir(dir);
}

static void test_rlimit_fsize_counts_the_loss(void **state)
{
    (void)state;
    rlimit_fsize(false);
}

static void test_rlimit_fsize_lifted_marks_the_gaps(void **state)
{
    (void)state;
    rlimit_fsize(true);
}

/* ---- finishing from a signal handler ------------------------------------ */

static inproc_backend *signal_backend;
static bool signal_last;
static volatile sig_atomic_t signal_result;

static void on_usr1(int sig)
{
    (void)sig;
    signal_result = inproc_backend_finish_from_signal(signal_backend, signal_last, 10000) ? 1 : 2;
}

static size_t count_events(const tt_trace *t, size_t *stats, size_t *last_stats_index)
{
    size_t events = 0;
    *stats = 0;
    for (size_t i = 0; i < t->n; i++) {
        events += t->pkts[i].v.has_for_testing;
        if (t->pkts[i].v.has_trace_stats) {
            (*stats)++;
            *last_stats_index = i;
        }
    }
    return events;
}

static void write_packets(tw_writer *tw, uint64_t from, uint64_t to)
{
    uint8_t buf[32];
    for (uint64_t i = from; i < to; i++) {
        tt_payload_fill(0, i, buf, sizeof buf);
        tt_write_test_packet(tw, 0, i, buf, sizeof buf, false);
    }
}

static void finish_from_signal(bool last)
{
    char *path = tt_temp_path("sigfinish");
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = path;
    cfg.write_period_ms = 0; /* nothing reaches the file unless asked */
    signal_backend = inproc_backend_create(&cfg);
    assert_non_null(signal_backend);
    tw_writer *tw = inproc_backend_new_writer(signal_backend);
    write_packets(tw, 0, 100);
    tw_flush(tw);

    signal_last = last;
    signal_result = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1); /* the handler runs on this thread, before raise returns */
    signal(SIGUSR1, SIG_DFL);
    assert_int_equal(signal_result, 1);

    tt_trace t;
    size_t stats, stats_at = 0;
    assert_true(tt_load_trace(path, &t));
    assert_int_equal(count_events(&t, &stats, &stats_at), 100);
    assert_int_equal(stats, 1);
    assert_int_equal(stats_at, t.n - 1);
    perfetto_protos_TraceStats_view ts;
    perfetto_protos_TraceStats_BufferStats_view bs;
    assert_true(tt_trace_stats(&t, &ts, &bs));
    if (last) {
        assert_true(ts.has_final_flush_outcome);
        assert_int_equal(ts.final_flush_outcome,
                         perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_FAILED);
    } else {
        assert_false(ts.has_final_flush_outcome); /* interim */
    }
    tt_free_trace(&t);

    write_packets(tw, 100, 150);
    tw_destroy(tw);
    /* Sealed: nothing more is written, a flush says so at once. */
    assert_true(inproc_backend_flush(signal_backend, 10000) == !last);
    assert_true(inproc_backend_destroy(signal_backend));
    assert_true(tt_load_trace(path, &t));
    size_t events = count_events(&t, &stats, &stats_at);
    assert_int_equal(stats_at, t.n - 1);
    assert_true(tt_trace_stats(&t, &ts, &bs));
    if (last) {
        assert_int_equal(events, 100);
        assert_int_equal(stats, 1);
    } else {
        assert_int_equal(events, 150);
        assert_int_equal(stats, 2);
        assert_int_equal(ts.final_flush_outcome,
                         perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_SUCCEEDED);
    }
    tt_free_trace(&t);
    unlink(path);
    free(path);
}

static void test_finish_from_signal_interim(void **state)
{
    (void)state;
    finish_from_signal(false);
}

static void test_finish_from_signal_last(void **state)
{
    (void)state;
    finish_from_signal(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_path),
        cmocka_unit_test(test_refuses_what_is_not_a_file),
        cmocka_unit_test(test_busy_path_falls_back),
        cmocka_unit_test(test_dev_full_counts_the_loss),
        cmocka_unit_test(test_rlimit_fsize_counts_the_loss),
        cmocka_unit_test(test_rlimit_fsize_lifted_marks_the_gaps),
        cmocka_unit_test(test_finish_from_signal_interim),
        cmocka_unit_test(test_finish_from_signal_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
