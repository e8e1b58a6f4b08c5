/* SPDX-License-Identifier: MIT */
/* gputrace-service under sustained hostility, for a minute and more.
 *
 * Eight well-behaved producers (gputrace-stress processes, two writers
 * each, stall policy, every packet numbered and its payload a function of
 * writer, counter and position) trace for about 60 s. All along, hostile
 * peers come and go on the same socket:
 *   - garbage: random bytes instead of frames, some after a valid bind;
 *   - silent: a pool of connections that never speak (handshake timeout),
 *     and producers that initialize and then fall silent (idle timeout);
 *   - floods: now and then enough silent connections to fill the client
 *     table, while a short-lived good producer must still get in;
 *   - slow readers that send a burst and read the replies dribble by
 *     dribble, and non-readers that stop reading (send timeout);
 *   - SMB scribblers: they take an SMB (the service's, or one they offer),
 *     fill it with garbage and bogus chunk headers, commit chunks that are
 *     not complete, out of range or for buffers they may not write, patch
 *     chunks of writer ids that are not theirs (the good producers' ids
 *     among them), register writers that do not exist, and hang up in the
 *     middle of a frame;
 *   - producers killed in the middle of a packet.
 *
 * Pass: every good producer exits 0, every packet it wrote is in the trace
 * byte-exact and in order, or its loss is counted (its own dropped/aborted
 * counters and previous_packet_dropped on the packet after each gap); every
 * short-lived good producer got through a full table; hostile connections
 * were closed within their bounds; the service's resident memory stayed
 * under a bound computed from its limits, with and without the share of
 * the central buffer the trace data fills.
 *
 * Prints the figures (producers, packets, losses, RSS) at the end.
 *
 * usage: test_ipc_stress GPUTRACE_SERVICE GPUTRACE_STRESS [SECONDS] */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "tracing/ipc/ipc_conn.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tests/ipc/ti_util.h"
#include "tracing/util/util_time.h"

#define GOOD_PRODUCERS  8
#define GOOD_WRITERS    2
#define GOOD_RATE       100 /* packets per second per writer */
#define GOOD_SIZE       200
#define MAX_SHORT_LIVED 16

/* The service's limits in this test (smaller than the defaults, so every
 * bound is reached many times within the minute). */
#define MAX_PRODUCERS   40
#define HANDSHAKE_MS    2000
#define IDLE_MS         3000
#define SEND_TIMEOUT_MS 3000
#define MAX_SMB_KB      1024
#define BUFFER_KB       (128 * 1024)
/* How late a close may come after its bound: the service checks its
 * timeouts at least once a second, and this machine may be loaded. */
#define CLOSE_SLACK_MS 4000

static const char *g_service;
static const char *g_stress;
static const char *g_sock;
static uint64_t g_end_ms; /* when hostility stops */
static _Atomic int g_failures;

typedef struct hostile_stats {
    _Atomic uint64_t garbage, garbage_closed;
    _Atomic uint64_t silent, silent_closed, silent_late;
    _Atomic uint64_t idle_init, idle_closed, idle_late;
    _Atomic uint64_t slow_readers, slow_replies, slow_cut;
    _Atomic uint64_t non_readers, non_readers_closed, non_readers_late;
    _Atomic uint64_t scribblers, scribbler_commits, scribbler_refused;
    _Atomic uint64_t floods, flood_connections;
    _Atomic uint64_t killed_producers;
} hostile_stats;
static hostile_stats g_h;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_fetch_add(&g_failures, 1);
}

static bool running(void)
{
    return util_now_ms() < g_end_ms;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* ---- hostile peers ------------------------------------------------------ */

/* Random bytes instead of frames (sometimes after a proper bind): the
 * service must close the connection. */
static void *garbage_main(void *arg)
{
    uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    while (running()) {
        ti_raw r;
        bool bind = rnd(&x) % 3 == 0;
        if (!ti_raw_connect(&r, g_sock, bind, 5000)) {
            ti_raw_close(&r);
            ti_sleep_ms(20);
            continue;
        }
        atomic_fetch_add(&g_h.garbage, 1);
        uint8_t junk[4096];
        size_t n = 1 + rnd(&x) % sizeof junk;
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)rnd(&x);
        /* A length the service accepts, so the garbage reaches the decoder
         * rather than the size check, half of the time. */
        if (n > 8 && rnd(&x) % 2) {
            uint32_t len = (uint32_t)(n - 4);
            memcpy(junk, &len, 4);
        }
        ipc_conn_send(&r.c, junk, n, -1);
        ti_raw_drain(&r, 2000);
        if (ti_raw_closed(&r, 3000))
            atomic_fetch_add(&g_h.garbage_closed, 1);
        /* Not closed: the bytes happened to be a valid frame, or a partial
         * one the service still waits for (then the handshake timeout
         * ends it). Either is fine. */
        ti_raw_close(&r);
        ti_sleep_ms(30);
    }
    return NULL;
}

typedef struct pooled {
    ti_raw r;
    bool open;
    bool established; /* initialized: an idle-timeout candidate */
    uint64_t since;   /* connect time, or when it last spoke */
} pooled;

/* Connections that never speak, and producers that initialize and then
 * say nothing: each must be closed by its bound, and is replaced at once. */
static void *silent_pool_main(void *arg)
{
    (void)arg;
    enum {
        POOL = 12
    };
    pooled pool[POOL];
    memset(pool, 0, sizeof pool);
    while (running()) {
        for (int i = 0; i < POOL && running(); i++) {
            pooled *p = &pool[i];
            if (!p->open) {
                p->established = i % 3 == 0;
                bool ok = ti_raw_connect(&p->r, g_sock, p->established, 5000) &&
                          (!p->established ||
                           ti_raw_initialize(&p->r, "idle-hostile", 0, 0, -1, NULL, 5000));
                if (!ok) {
                    ti_raw_close(&p->r);
                    continue;
                }
                p->open = true;
                p->since = util_now_ms();
                atomic_fetch_add(p->established ? &g_h.idle_init : &g_h.silent, 1);
                continue;
            }
            if (!ti_raw_hung_up(p->r.c.fd, 0))
                continue;
            uint64_t after = util_now_ms() - p->since;
            uint64_t bound = p->established ? IDLE_MS : HANDSHAKE_MS;
            /* Early is fine for a silent one (evicted by a newer
             * connection when the table is full); late is not. */
            if (after > bound + CLOSE_SLACK_MS) {
                fail("%s connection closed after %llu ms (bound %llu ms)",
                     p->established ? "idle" : "silent", (unsigned long long)after,
                     (unsigned long long)bound);
                atomic_fetch_add(p->established ? &g_h.idle_late : &g_h.silent_late, 1);
            }
            if (p->established && after + 200 < IDLE_MS) {
                fail("idle connection closed after %llu ms, before its bound",
                     (unsigned long long)after);
            }
            atomic_fetch_add(p->established ? &g_h.idle_closed : &g_h.silent_closed, 1);
            ti_raw_close(&p->r);
            p->open = false;
        }
        ti_sleep_ms(50);
    }
    for (int i = 0; i < POOL; i++) {
        pooled *p = &pool[i];
        if (p->open) {
            uint64_t after = util_now_ms() - p->since;
            uint64_t bound = p->established ? IDLE_MS : HANDSHAKE_MS;
            if (after > bound + CLOSE_SLACK_MS)
                fail("a hostile connection still open after %llu ms", (unsigned long long)after);
            ti_raw_close(&p->r);
        }
    }
    return NULL;
}

/* Bursts of requests; then either reading the replies a little at a time
 * (must keep the connection) or not at all (must lose it at the send
 * timeout). */
static void *slow_reader_main(void *arg)
{
    (void)arg;
    for (unsigned round = 0; running(); round++) {
        ti_raw r;
        if (!ti_raw_connect(&r, g_sock, true, 5000) ||
            !ti_raw_initialize(&r, "slow-hostile", 0, 0, -1, NULL, 5000)) {
            ti_raw_close(&r);
            ti_sleep_ms(100);
            continue;
        }
        bool reads = round % 3 != 2;
        enum {
            N = 20000
        };
        uint64_t t0 = util_now_ms();
        ti_raw_send_syncs(&r, N);
        ti_raw_drain(&r, 10000);
        if (reads) {
            atomic_fetch_add(&g_h.slow_readers, 1);
            uint64_t bytes = 0;
            bool cut = false;
            /* ~100 KB/s for a few seconds: about the send timeout. */
            for (int k = 0; k < 200 && !cut; k++) {
                uint8_t buf[2048];
                ssize_t n = recv(r.c.fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                    cut = true;
                else if (n > 0)
                    bytes += (uint64_t)n;
                ti_sleep_ms(20);
            }
            atomic_fetch_add(&g_h.slow_replies, bytes);
            if (cut) {
                atomic_fetch_add(&g_h.slow_cut, 1);
                fail("a slow reader was disconnected after %llu bytes, %llu ms",
                     (unsigned long long)bytes, (unsigned long long)(util_now_ms() - t0));
            }
        } else {
            atomic_fetch_add(&g_h.non_readers, 1);
            if (ti_raw_hung_up(r.c.fd, SEND_TIMEOUT_MS + CLOSE_SLACK_MS + 2000)) {
                atomic_fetch_add(&g_h.non_readers_closed, 1);
            } else {
                atomic_fetch_add(&g_h.non_readers_late, 1);
                fail("a producer that stopped reading was not dropped within %u ms",
                     SEND_TIMEOUT_MS + CLOSE_SLACK_MS + 2000);
            }
        }
        ti_raw_close(&r);
        ti_sleep_ms(100);
    }
    return NULL;
}

/* One CommitData full of lies: chunks across (and beyond) the SMB, for the
 * buffer and for one that does not exist; patches for chunks of other
 * writers (1 and 2 are what the good producers use), oversized patches,
 * too many patches. */
static bool commit_lies(ti_raw *r, uint32_t pages, uint64_t *x)
{
    ipc_invoke inv;
    perfetto_protos_CommitDataRequest *cd =
        (perfetto_protos_CommitDataRequest *)ti_raw_invoke(r, "CommitData", true, &inv);
    if (!cd)
        return false;
    for (uint32_t page = 0; page < pages + 2; page++) {
        for (uint32_t chunk = rnd(x) % 3; chunk < 16; chunk += 3) {
            perfetto_protos_CommitDataRequest_ChunksToMove m;
            perfetto_protos_CommitDataRequest_begin_chunks_to_move(cd, &m);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_page(
                &m, page == pages + 1 ? (uint32_t)rnd(x) : page);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_chunk(&m, chunk);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_target_buffer(
                &m, rnd(x) % 8 == 0 ? 7 : 1);
            perfetto_protos_CommitDataRequest_ChunksToMove_end(&m);
        }
    }
    static const uint32_t writers[] = { 1, 2, 3, 0, 1023, 1024, 65535 };
    for (size_t w = 0; w < sizeof writers / sizeof *writers; w++) {
        perfetto_protos_CommitDataRequest_ChunkToPatch cp;
        perfetto_protos_CommitDataRequest_begin_chunks_to_patch(cd, &cp);
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_target_buffer(&cp, rnd(x) % 4 ? 1 : 9);
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, writers[w]);
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_chunk_id(&cp, (uint32_t)(rnd(x) % 64));
        uint32_t n = w == 4 ? 1100 : 1 + (uint32_t)(rnd(x) % 4);
        for (uint32_t k = 0; k < n; k++) {
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch pp;
            perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &pp);
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_offset(
                &pp, (uint32_t)(rnd(x) % 5000));
            uint8_t data[6] = { 0x81, 0x80, 0x80, 0x00, 0x12, 0x34 };
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&pp, data, k % 5 ? 4 : 6);
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&pp);
        }
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_has_more_patches(&cp, rnd(x) % 2);
        perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
    }
    if (rnd(x) % 2)
        perfetto_protos_CommitDataRequest_set_flush_request_id(cd, rnd(x));
    return ti_raw_send(r, &inv, -1);
}

/* Takes an SMB and scribbles on it while committing lies, for a second or
 * two per connection. */
static void *scribbler_main(void *arg)
{
    uint64_t x = (uintptr_t)arg * 1234567 + 99;
    while (running()) {
        ti_raw r;
        bool offer = rnd(&x) % 2;
        /* An offer above the service's cap is refused (it sends its own). */
        size_t size = (size_t)(offer && rnd(&x) % 4 == 0 ? 4096 : 64) * 1024;
        int memfd = offer ? ti_memfd(size, true) : -1;
        bool adopted = false;
        int smb = -1;
        bool ok = ti_raw_connect(&r, g_sock, true, 5000) &&
                  ti_raw_initialize(&r, "scribbler", (uint32_t)size, 4096, memfd, &adopted, 5000) &&
                  ti_raw_register(&r, "gputrace.stress", &smb, 5000);
        if (!ok) {
            if (memfd >= 0)
                close(memfd);
            ti_raw_close(&r);
            ti_sleep_ms(100);
            continue;
        }
        atomic_fetch_add(&g_h.scribblers, 1);
        if (offer && !adopted)
            atomic_fetch_add(&g_h.scribbler_refused, 1);
        int fd = adopted ? memfd : smb;
        struct stat st;
        uint8_t *mem = MAP_FAILED;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0)
            mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (mem != MAP_FAILED) {
            size = (size_t)st.st_size;
            int rounds = 5 + (int)(rnd(&x) % 10);
            for (int k = 0; k < rounds && running(); k++) {
                ti_scribble(mem, size, &x);
                /* At most 16 pages a round: garbage that passes for
                 * complete chunks lands in the central buffer, and the
                 * good producers' data must keep fitting there. */
                uint32_t pages = (uint32_t)(size / 4096);
                if (!commit_lies(&r, pages < 16 ? pages : 16, &x))
                    break;
                atomic_fetch_add(&g_h.scribbler_commits, 1);
                /* Registrations for writers that do not exist. */
                ipc_invoke inv;
                perfetto_protos_RegisterTraceWriterRequest *rt =
                    (perfetto_protos_RegisterTraceWriterRequest *)ti_raw_invoke(
                        &r, "RegisterTraceWriter", true, &inv);
                if (rt) {
                    perfetto_protos_RegisterTraceWriterRequest_set_trace_writer_id(
                        rt, (uint32_t)rnd(&x));
                    perfetto_protos_RegisterTraceWriterRequest_set_target_buffer(
                        rt, (uint32_t)(rnd(&x) % 3));
                    ti_raw_send(&r, &inv, -1);
                }
                /* Read what the service says, so this one is not also a
                 * non-reader. */
                ti_raw_closed(&r, 150);
            }
            munmap(mem, size);
        }
        if (rnd(&x) % 2) {
            static const uint8_t half[] = { 0x40, 0, 0, 0, 0x10 };
            ipc_conn_send(&r.c, half, sizeof half, -1);
        }
        if (memfd >= 0)
            close(memfd);
        if (smb >= 0)
            close(smb);
        ti_raw_close(&r);
        ti_sleep_ms(50);
    }
    return NULL;
}

/* ---- well-behaved producers --------------------------------------------- */

typedef struct good {
    pid_t pid;
    int out_fd;
    char *out;
    ti_stress_summary sum;
    bool ok;
} good;

static pid_t spawn_stress(const char *const *args, int *out_fd)
{
    const char *argv[32] = { g_stress, "--socket", g_sock, "--quiet" };
    size_t n = 4;
    for (size_t i = 0; args[i] && n < 30; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return ti_spawn((char *const *)argv, NULL, out_fd);
}

static void finish_good(good *g, uint32_t timeout_ms)
{
    g->out = ti_read_all(g->out_fd, timeout_ms);
    close(g->out_fd);
    int st;
    bool exited = ti_wait(g->pid, 30000, &st);
    g->ok = exited && WIFEXITED(st) && WEXITSTATUS(st) == 0 && ti_parse_stress(g->out, &g->sum);
    if (!g->ok)
        fail("good producer %d: status 0x%x, output: %s", (int)g->pid, st, g->out);
}

/* A producer that dies with half a packet in its SMB. */
static void kill_mid_packet(void)
{
    const char *args[] = { "--writers", "1",         "--packets", "100000", "--kill-after",
                           "300",       "--wait-ms", "5000",      NULL };
    pid_t p = spawn_stress(args, NULL);
    if (p < 0)
        return;
    int st;
    ti_wait(p, 20000, &st);
    atomic_fetch_add(&g_h.killed_producers, 1);
}

/* Fills the client table with silent connections and starts a producer
 * that must get in all the same. */
static void flood_then_good(good *g)
{
    enum {
        FLOOD = MAX_PRODUCERS
    };
    ti_raw *r = calloc(FLOOD, sizeof *r);
    size_t n = 0;
    for (; n < FLOOD; n++)
        if (!ti_raw_connect(&r[n], g_sock, false, 1000)) {
            ti_raw_close(&r[n]);
            break;
        }
    atomic_fetch_add(&g_h.floods, 1);
    atomic_fetch_add(&g_h.flood_connections, n);
    const char *args[] = { "--writers", "1",        "--packets", "500",        "--size",
                           "200",       "--policy", "stall",     "--stall-ms", "10000",
                           "--wait-ms", "10000",    NULL };
    g->pid = spawn_stress(args, &g->out_fd);
    if (g->pid > 0)
        finish_good(g, 30000);
    for (size_t i = 0; i < n; i++)
        ti_raw_close(&r[i]);
    free(r);
}

/* ---- checks ------------------------------------------------------------- */

/* Everything good producer `pid` wrote is in the trace, byte-exact and in
 * order, or its loss is counted. Returns the packets found. */
static uint64_t check_good(const ti_report *r, const good *g, uint64_t *lost)
{
    uint64_t packets = 0, missing = 0, seqs = 0;
    for (size_t i = 0; i < r->num_seqs; i++) {
        const ti_seq *q = &r->seqs[i];
        if (q->pid != g->pid)
            continue;
        seqs++;
        packets += q->packets;
        missing += q->missing;
        if (q->bad_payload)
            fail("producer %d writer %u: a payload is not byte-exact", (int)g->pid, q->writer);
        if (q->out_of_order)
            fail("producer %d writer %u: packets out of order", (int)g->pid, q->writer);
        if (q->gaps != q->flagged_gaps)
            fail("producer %d writer %u: %llu gaps, only %llu flagged previous_packet_dropped",
                 (int)g->pid, q->writer, (unsigned long long)q->gaps,
                 (unsigned long long)q->flagged_gaps);
    }
    uint64_t counted = g->sum.dropped + g->sum.aborted;
    if (packets + missing != g->sum.written && packets + counted != g->sum.written)
        fail("producer %d: wrote %llu, trace has %llu, %llu missing, %llu counted lost",
             (int)g->pid, (unsigned long long)g->sum.written, (unsigned long long)packets,
             (unsigned long long)missing, (unsigned long long)counted);
    if (missing != counted)
        fail("producer %d: %llu packets missing but %llu counted as lost", (int)g->pid,
             (unsigned long long)missing, (unsigned long long)counted);
    if (!seqs)
        fail("producer %d: nothing in the trace", (int)g->pid);
    *lost = missing;
    return packets;
}

/* ---- main --------------------------------------------------------------- */

typedef struct rss_sampler {
    pid_t pid;
    _Atomic bool stop;
    uint64_t max_kb, first_half_max_kb, samples;
    uint64_t start_ms, half_ms;
} rss_sampler;

static void *rss_main(void *arg)
{
    rss_sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        uint64_t kb = ti_rss_kb(s->pid, false);
        if (kb > s->max_kb)
            s->max_kb = kb;
        if (util_now_ms() < s->half_ms && kb > s->first_half_max_kb)
            s->first_half_max_kb = kb;
        s->samples++;
        ti_sleep_ms(250);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s GPUTRACE_SERVICE GPUTRACE_STRESS [SECONDS]\n", argv[0]);
        return 2;
    }
    g_service = argv[1];
    g_stress = argv[2];
    uint32_t seconds = argc == 4 ? (uint32_t)atoi(argv[3]) : 62;
    if (seconds < 5)
        seconds = 5;
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IONBF, 0);
    atexit(ti_kill_services);

    char *sock = ti_temp_path("stress", ".sock");
    char *out = ti_temp_path("stress", ".pftrace");
    char *log = ti_temp_path("stress", ".log");
    g_sock = sock;
    char maxp[16], buf_kb[16], hs[16], idle[16], send_to[16], smb[16];
    snprintf(maxp, sizeof maxp, "%d", MAX_PRODUCERS);
    snprintf(buf_kb, sizeof buf_kb, "%d", BUFFER_KB);
    snprintf(hs, sizeof hs, "%d", HANDSHAKE_MS);
    snprintf(idle, sizeof idle, "%d", IDLE_MS);
    snprintf(send_to, sizeof send_to, "%d", SEND_TIMEOUT_MS);
    snprintf(smb, sizeof smb, "%d", MAX_SMB_KB);
    const char *extra[] = { "--max-producers",
                            maxp,
                            "--max-per-uid",
                            maxp,
                            "--buffer-kb",
                            buf_kb,
                            "--handshake-timeout-ms",
                            hs,
                            "--idle-timeout-ms",
                            idle,
                            "--send-timeout-ms",
                            send_to,
                            "--max-smb-kb",
                            smb,
                            NULL };
    /* meson test sets MALLOC_PERTURB_, which makes glibc write every byte
     * malloc hands out: the whole central buffer would be resident from
     * the start, hiding what the service really uses. */
    char *const svc_env[] = { "MALLOC_PERTURB_=0", NULL };
    pid_t svc = ti_start_service_logged(g_service, sock, out, extra, log, svc_env);
    if (svc <= 0) {
        fprintf(stderr, "cannot start %s\n", g_service);
        return 1;
    }
    uint64_t t0 = util_now_ms();
    g_end_ms = t0 + (uint64_t)seconds * 1000;
    rss_sampler rs = { .pid = svc, .start_ms = t0, .half_ms = t0 + (uint64_t)seconds * 500 };
    pthread_t rss_th;
    pthread_create(&rss_th, NULL, rss_main, &rs);

    /* Hostility first: the good producers connect into it. */
    pthread_t th[8];
    size_t nth = 0;
    pthread_create(&th[nth++], NULL, garbage_main, (void *)1);
    pthread_create(&th[nth++], NULL, garbage_main, (void *)2);
    pthread_create(&th[nth++], NULL, silent_pool_main, NULL);
    pthread_create(&th[nth++], NULL, slow_reader_main, (void *)1);
    pthread_create(&th[nth++], NULL, scribbler_main, (void *)1);
    pthread_create(&th[nth++], NULL, scribbler_main, (void *)2);
    ti_sleep_ms(500);

    good goods[GOOD_PRODUCERS + MAX_SHORT_LIVED];
    memset(goods, 0, sizeof goods);
    char packets[32];
    /* Written until about a second before hostility ends. */
    uint64_t good_ms = (uint64_t)seconds * 1000 - 1500;
    snprintf(packets, sizeof packets, "%llu", (unsigned long long)(good_ms * GOOD_RATE / 1000));
    char rate[16], size[16], writers[16];
    snprintf(rate, sizeof rate, "%d", GOOD_RATE);
    snprintf(size, sizeof size, "%d", GOOD_SIZE);
    snprintf(writers, sizeof writers, "%d", GOOD_WRITERS);
    const char *good_args[] = { "--writers",  writers,  "--packets", packets,    "--rate",
                                rate,         "--size", size,        "--policy", "stall",
                                "--stall-ms", "10000",  "--wait-ms", "10000",    NULL };
    for (int i = 0; i < GOOD_PRODUCERS; i++) {
        goods[i].pid = spawn_stress(good_args, &goods[i].out_fd);
        if (goods[i].pid <= 0)
            fail("cannot start good producer %d", i);
    }

    /* Meanwhile: table floods with a producer that must get through, and
     * producers dying mid-packet. */
    size_t short_lived = 0;
    uint64_t next_flood = util_now_ms() + 5000, next_kill = util_now_ms() + 3000;
    while (ipc_deadline_ms(util_now_ms(), 6000) < g_end_ms) {
        uint64_t now = util_now_ms();
        if (now >= next_flood && short_lived < MAX_SHORT_LIVED) {
            flood_then_good(&goods[GOOD_PRODUCERS + short_lived++]);
            next_flood = util_now_ms() + 8000;
        } else if (now >= next_kill) {
            kill_mid_packet();
            next_kill = util_now_ms() + 7000;
        } else {
            ti_sleep_ms(100);
        }
    }
    for (int i = 0; i < GOOD_PRODUCERS; i++)
        if (goods[i].pid > 0)
            finish_good(&goods[i], (uint32_t)(g_end_ms - util_now_ms()) + 60000);
    for (size_t i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    uint64_t hostile_ms = util_now_ms() - t0;
    atomic_store(&rs.stop, true);
    pthread_join(rss_th, NULL);
    uint64_t hwm_kb = ti_rss_kb(svc, true);
    if (!ti_stop_service(svc))
        fail("gputrace-service did not exit cleanly");

    ti_service_conns conns = { 0 };
    if (!ti_parse_service_log(log, &conns))
        fail("no connection summary in the service's log");
    ti_report r;
    if (!ti_check_trace(out, 0, &r)) {
        fail("the trace does not parse");
        memset(&r, 0, sizeof r);
    }
    uint64_t total_written = 0, total_found = 0, total_lost = 0;
    size_t good_count = GOOD_PRODUCERS + short_lived;
    for (size_t i = 0; i < good_count; i++) {
        if (!goods[i].ok)
            continue;
        uint64_t lost;
        total_found += check_good(&r, &goods[i], &lost);
        total_written += goods[i].sum.written;
        total_lost += lost;
    }
    if (r.has_stats && r.buf.chunks_overwritten)
        fprintf(stderr, "note: %llu chunks overwritten in the central buffer\n",
                (unsigned long long)r.buf.chunks_overwritten);

    /* Resident memory: the central buffer (filled lazily), plus per client
     * at most its receive buffer, its send queue and its SMB, plus the
     * program itself; AddressSanitizer adds its shadow and quarantine. */
    uint64_t bound_kb = BUFFER_KB + MAX_PRODUCERS * (128 + 1024 + MAX_SMB_KB) + 32 * 1024;
#if defined(__SANITIZE_ADDRESS__)
    bound_kb = bound_kb * 2 + 256 * 1024;
#endif
    if (rs.max_kb > bound_kb || hwm_kb > bound_kb)
        fail("service RSS %llu KiB (peak %llu KiB) over the bound %llu KiB",
             (unsigned long long)rs.max_kb, (unsigned long long)hwm_kb,
             (unsigned long long)bound_kb);
    /* The same without the buffer's share: what the trace holds is what
     * the central buffer filled (it never wrapped here), so the rest is
     * bounded by the per-client limits alone. */
    struct stat tst;
    uint64_t trace_kb = stat(out, &tst) == 0 ? (uint64_t)tst.st_size / 1024 : 0;
    uint64_t beyond_kb = hwm_kb > trace_kb ? hwm_kb - trace_kb : 0;
    if (beyond_kb > bound_kb - BUFFER_KB)
        fail("service RSS beyond its trace data %llu KiB, over %llu KiB",
             (unsigned long long)beyond_kb, (unsigned long long)(bound_kb - BUFFER_KB));

    printf("stress: %llu s of hostility; %zu good producers (%d long-lived x %d writers at "
           "%d packets/s, %zu through full-table floods)\n",
           (unsigned long long)(hostile_ms / 1000), good_count, GOOD_PRODUCERS, GOOD_WRITERS,
           GOOD_RATE, short_lived);
    printf("stress: good packets written %llu, found byte-exact %llu, lost %llu (all counted)\n",
           (unsigned long long)total_written, (unsigned long long)total_found,
           (unsigned long long)total_lost);
    printf("stress: hostile: %llu garbage (%llu closed), %llu silent (%llu closed, %llu late), "
           "%llu idle (%llu closed, %llu late), %llu slow readers (%llu KB read, %llu cut), "
           "%llu non-readers (%llu dropped, %llu late), %llu scribblers (%llu lying commits, "
           "%llu SMB offers refused), %llu floods (%llu connections), %llu killed mid-packet\n",
           (unsigned long long)g_h.garbage, (unsigned long long)g_h.garbage_closed,
           (unsigned long long)g_h.silent, (unsigned long long)g_h.silent_closed,
           (unsigned long long)g_h.silent_late, (unsigned long long)g_h.idle_init,
           (unsigned long long)g_h.idle_closed, (unsigned long long)g_h.idle_late,
           (unsigned long long)g_h.slow_readers, (unsigned long long)(g_h.slow_replies / 1000),
           (unsigned long long)g_h.slow_cut, (unsigned long long)g_h.non_readers,
           (unsigned long long)g_h.non_readers_closed, (unsigned long long)g_h.non_readers_late,
           (unsigned long long)g_h.scribblers, (unsigned long long)g_h.scribbler_commits,
           (unsigned long long)g_h.scribbler_refused, (unsigned long long)g_h.floods,
           (unsigned long long)g_h.flood_connections, (unsigned long long)g_h.killed_producers);
    printf("stress: service: %llu connections accepted, %llu refused, %llu evicted in handshake, "
           "%llu handshake timeouts, %llu idle timeouts, %llu send timeouts\n",
           (unsigned long long)conns.accepted, (unsigned long long)conns.refused,
           (unsigned long long)conns.evicted, (unsigned long long)conns.handshake_timeouts,
           (unsigned long long)conns.idle_timeouts, (unsigned long long)conns.send_timeouts);
    if (r.has_stats)
        printf("stress: TraceStats: producers_seen %llu, chunks_written %llu, chunks_discarded "
               "%llu (+%llu in buffer), abi_violations %llu, patches_discarded %llu, "
               "chunks_overwritten %llu\n",
               (unsigned long long)r.stats.producers_seen, (unsigned long long)r.buf.chunks_written,
               (unsigned long long)r.stats.chunks_discarded,
               (unsigned long long)r.buf.chunks_discarded, (unsigned long long)r.buf.abi_violations,
               (unsigned long long)r.stats.patches_discarded,
               (unsigned long long)r.buf.chunks_overwritten);
    printf("stress: service RSS max %llu KiB (first half %llu KiB), peak %llu KiB, bound %llu "
           "KiB; trace %llu KiB, peak beyond it %llu KiB; %llu samples\n",
           (unsigned long long)rs.max_kb, (unsigned long long)rs.first_half_max_kb,
           (unsigned long long)hwm_kb, (unsigned long long)bound_kb, (unsigned long long)trace_kb,
           (unsigned long long)beyond_kb, (unsigned long long)rs.samples);

    /* The hostility must really have happened, and been handled. */
    if (hostile_ms < (uint64_t)seconds * 1000)
        fail("hostility lasted %llu ms only", (unsigned long long)hostile_ms);
    if (!g_h.garbage_closed || !g_h.silent_closed || !g_h.idle_closed || !g_h.slow_readers ||
        !g_h.non_readers_closed || !g_h.scribbler_commits || !g_h.floods)
        fail("some kind of hostile peer never got its turn");
    if (!conns.handshake_timeouts || !conns.idle_timeouts || !conns.send_timeouts || !conns.evicted)
        fail("some bound of the service was never reached");
    if (total_written == 0 || total_found == 0)
        fail("the good producers wrote nothing");

    for (size_t i = 0; i < good_count; i++)
        free(goods[i].out);
    ti_report_free(&r);
    if (!atomic_load(&g_failures)) {
        unlink(out);
        unlink(log);
    } else {
        fprintf(stderr, "kept %s and %s\n", out, log);
    }
    free(sock);
    free(out);
    free(log);
    int failures = atomic_load(&g_failures);
    printf("stress: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
