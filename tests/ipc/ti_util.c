/* SPDX-License-Identifier: MIT */
/* Helpers for the IPC tests. */
#include "tests/ipc/ti_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protos/perfetto/data_source_descriptor.pbc.h"
#include "tracing/ipc/ipc_conn.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tests/stress/stress_payload.h"
#include "tracing/util/util_time.h"

extern char **environ;

void ti_sleep_ms(uint32_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

pid_t ti_spawn(char *const argv[], char *const extra_env[], int *out_fd)
{
    return ti_spawn_logged(argv, extra_env, out_fd, NULL);
}

pid_t ti_spawn_logged(char *const argv[], char *const extra_env[], int *out_fd,
                      const char *err_path)
{
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env])
        n_env++;
    while (extra_env && extra_env[n_extra])
        n_extra++;
    char **env = calloc(n_env + n_extra + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n_extra; i++)
        env[k++] = extra_env[i];
    for (size_t i = 0; i < n_env; i++)
        env[k++] = environ[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    int pfd[2] = { -1, -1 };
    if (out_fd) {
        if (pipe2(pfd, O_CLOEXEC) != 0) {
            free(env);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    }
    if (err_path)
        posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (out_fd) {
        close(pfd[1]);
        *out_fd = rc == 0 ? pfd[0] : -1;
        if (rc != 0)
            close(pfd[0]);
    }
    if (rc != 0) {
        fprintf(stderr, "spawn %s: %s\n", argv[0], strerror(rc));
        return -1;
    }
    return pid;
}

bool ti_wait(pid_t pid, uint32_t timeout_ms, int *status)
{
    uint64_t until = util_now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
        if (util_now_ms() >= until) {
            fprintf(stderr, "pid %d did not exit within %u ms: killing it\n", (int)pid, timeout_ms);
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return false;
        }
        ti_sleep_ms(10);
    }
}

char *ti_read_all(int fd, uint32_t timeout_ms)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    uint64_t until = util_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = util_now_ms();
        if (now >= until)
            break;
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (poll(&pf, 1, (int)(until - now)) <= 0)
            break;
        if (len + 1024 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

bool ti_wait_socket(const char *path, uint32_t timeout_ms)
{
    uint64_t until = util_now_ms() + timeout_ms;
    while (util_now_ms() < until) {
        int fd = ipc_socket_connect(path);
        if (fd >= 0) {
            close(fd);
            return true;
        }
        ti_sleep_ms(10);
    }
    return false;
}

char *ti_temp_path(const char *tag, const char *ext)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    static unsigned counter;
    char *p = malloc(256);
    snprintf(p, 256, "%s/gt-%s-%d-%u%s", dir, tag, (int)getpid(), counter++, ext);
    return p;
}

/* Services started and not yet stopped. */
static pid_t g_services[64];
static size_t g_num_services;

static void forget_service(pid_t pid)
{
    for (size_t i = 0; i < g_num_services; i++)
        if (g_services[i] == pid)
            g_services[i] = g_services[--g_num_services];
}

void ti_kill_services(void)
{
    while (g_num_services) {
        pid_t pid = g_services[--g_num_services];
        int st;
        fprintf(stderr, "killing gputrace-service %d left behind by a failed test\n", (int)pid);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
}

int ti_kill_services_teardown(void **state)
{
    (void)state;
    ti_kill_services();
    return 0;
}

pid_t ti_start_service(const char *service_bin, const char *sock, const char *out,
                       const char *const *extra)
{
    return ti_start_service_logged(service_bin, sock, out, extra, NULL, NULL);
}

pid_t ti_start_service_logged(const char *service_bin, const char *sock, const char *out,
                              const char *const *extra, const char *log_path,
                              char *const extra_env[])
{
    const char *argv[32] = { service_bin,     "--socket",       sock, "--output", out,
                             "--data-source", "gputrace.stress" };
    size_t n = 7;
    for (size_t i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = ti_spawn_logged((char *const *)argv, extra_env, NULL, log_path);
    if (pid < 0)
        return -1;
    if (!ti_wait_socket(sock, 5000)) {
        int st;
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    if (g_num_services < sizeof g_services / sizeof *g_services)
        g_services[g_num_services++] = pid;
    return pid;
}

bool ti_stop_service(pid_t pid)
{
    forget_service(pid);
    int st;
    kill(pid, SIGTERM);
    if (!ti_wait(pid, 20000, &st))
        return false;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "gputrace-service exited with status 0x%x\n", st);
        return false;
    }
    return true;
}

bool ti_parse_service_log(const char *log_path, ti_service_conns *c)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(log_path, "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "gputrace-service: connections: ");
        unsigned long long a, r, e, h, i, t;
        if (p && sscanf(p,
                        "gputrace-service: connections: %llu accepted, %llu refused, %llu "
                        "evicted in handshake, %llu handshake timeouts, %llu idle timeouts, "
                        "%llu send timeouts",
                        &a, &r, &e, &h, &i, &t) == 6) {
            *c = (ti_service_conns){ a, r, e, h, i, t };
            found = true;
        }
    }
    fclose(f);
    return found;
}

uint64_t ti_rss_kb(pid_t pid, bool peak)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    const char *key = peak ? "VmHWM:" : "VmRSS:";
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            sscanf(line + strlen(key), "%llu", &kb);
    fclose(f);
    return kb;
}

/* ---- the raw client ----------------------------------------------------- */

bool ti_raw_connect(ti_raw *r, const char *sock, bool bind, uint32_t timeout_ms)
{
    memset(r, 0, sizeof *r);
    ipc_frame_builder_init(&r->fb);
    int fd = ipc_socket_connect(sock);
    if (fd < 0 || !ipc_conn_init(&r->c, fd)) {
        r->c.fd = -1;
        return false;
    }
    if (!bind)
        return true;
    perfetto_protos_IPCFrame *f = ipc_frame_begin(&r->fb, ++r->next_id);
    perfetto_protos_IPCFrame_BindService bs;
    perfetto_protos_IPCFrame_begin_msg_bind_service(f, &bs);
    perfetto_protos_IPCFrame_BindService_set_service_name(&bs, "ProducerPort");
    perfetto_protos_IPCFrame_BindService_end(&bs);
    if (!ipc_conn_send_frame(&r->c, &r->fb, -1))
        return false;
    ipc_frame fr;
    uint8_t *copy = NULL;
    bool ok = ti_raw_wait_frame(r, &fr, &copy, timeout_ms) &&
              fr.kind == IPC_MSG_BIND_SERVICE_REPLY &&
              ipc_parse_bind_reply(fr.body.data, fr.body.size, &r->methods);
    free(copy);
    return ok;
}

void ti_raw_close(ti_raw *r)
{
    ipc_conn_close(&r->c);
    ipc_frame_builder_free(&r->fb);
}

pb_msg *ti_raw_invoke(ti_raw *r, const char *method, bool drop_reply, ipc_invoke *inv)
{
    uint32_t id = ipc_method_id(&r->methods, method);
    if (!id)
        return NULL;
    ipc_frame_begin_invoke(&r->fb, ++r->next_id, r->methods.service_id, id, drop_reply, inv);
    return &inv->args;
}

bool ti_raw_send(ti_raw *r, ipc_invoke *inv, int fd)
{
    ipc_frame_end_invoke(inv);
    return ipc_conn_send_frame(&r->c, &r->fb, fd);
}

bool ti_raw_send_syncs(ti_raw *r, int n)
{
    uint8_t *all = NULL;
    size_t len = 0, cap = 0;
    for (int i = 0; i < n; i++) {
        ipc_invoke inv;
        if (!ti_raw_invoke(r, "Sync", false, &inv)) {
            free(all);
            return false;
        }
        ipc_frame_end_invoke(&inv);
        size_t k = ipc_frame_size(&r->fb);
        if (len + k > cap) {
            cap = (len + k) * 2;
            uint8_t *p = realloc(all, cap);
            if (!p) {
                free(all);
                return false;
            }
            all = p;
        }
        ipc_frame_copy(&r->fb, all + len);
        len += k;
    }
    bool ok = len == 0 || ipc_conn_send(&r->c, all, len, -1);
    free(all);
    return ok;
}

bool ti_raw_drain(ti_raw *r, uint32_t timeout_ms)
{
    uint64_t until = ipc_deadline_ms(util_now_ms(), timeout_ms);
    while (ipc_conn_wants_write(&r->c)) {
        uint64_t now = util_now_ms();
        if (now >= until || r->c.broken)
            return false;
        struct pollfd pf = { .fd = r->c.fd, .events = POLLOUT };
        poll(&pf, 1, ipc_ms_left(until, now, 100));
        if (!ipc_conn_flush(&r->c))
            return false;
    }
    return true;
}

bool ti_raw_wait_frame(ti_raw *r, ipc_frame *fr, uint8_t **copy, uint32_t timeout_ms)
{
    uint64_t until = ipc_deadline_ms(util_now_ms(), timeout_ms);
    *copy = NULL;
    for (;;) {
        pb_bytes p;
        if (ipc_conn_next_frame(&r->c, &p)) {
            *copy = malloc(p.size ? p.size : 1);
            memcpy(*copy, p.data, p.size);
            return ipc_frame_decode(*copy, p.size, fr);
        }
        uint64_t now = util_now_ms();
        if (now >= until || r->c.broken)
            return false;
        struct pollfd pf = { .fd = r->c.fd,
                             .events =
                                 (short)(POLLIN | (ipc_conn_wants_write(&r->c) ? POLLOUT : 0)) };
        poll(&pf, 1, ipc_ms_left(until, now, 100));
        if (pf.revents & POLLOUT)
            ipc_conn_flush(&r->c);
        if (ipc_conn_read(&r->c) < 0)
            return false;
    }
}

bool ti_raw_closed(ti_raw *r, uint32_t timeout_ms)
{
    uint64_t until = ipc_deadline_ms(util_now_ms(), timeout_ms);
    while (util_now_ms() < until) {
        struct pollfd pf = { .fd = r->c.fd, .events = POLLIN };
        poll(&pf, 1, 50);
        if (ipc_conn_read(&r->c) < 0)
            return true;
        pb_bytes p;
        while (ipc_conn_next_frame(&r->c, &p)) {
        }
        int fd = ipc_conn_take_fd(&r->c);
        if (fd >= 0)
            close(fd);
    }
    return false;
}

bool ti_raw_hung_up(int fd, uint32_t timeout_ms)
{
    struct pollfd pf = { .fd = fd, .events = POLLRDHUP };
    int rc;
    do {
        rc = poll(&pf, 1, (int)timeout_ms);
    } while (rc < 0 && errno == EINTR);
    return rc > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Waits for the reply to request `rid`, skipping commands in between. */
static bool wait_reply(ti_raw *r, uint64_t rid,
                       perfetto_protos_IPCFrame_InvokeMethodReply_view *rep, uint8_t **copy,
                       uint32_t timeout_ms)
{
    uint64_t until = ipc_deadline_ms(util_now_ms(), timeout_ms);
    for (;;) {
        ipc_frame fr;
        uint64_t now = util_now_ms();
        if (now >= until || !ti_raw_wait_frame(r, &fr, copy, ipc_ms_left(until, now, INT32_MAX)))
            return false;
        if (fr.request_id == rid && fr.kind == IPC_MSG_INVOKE_METHOD_REPLY)
            return perfetto_protos_IPCFrame_InvokeMethodReply_decode(rep, fr.body.data,
                                                                     fr.body.size);
        free(*copy);
        *copy = NULL;
    }
}

bool ti_raw_initialize(ti_raw *r, const char *name, uint32_t shm_size, uint32_t page_size,
                       int smb_fd, bool *adopted, uint32_t timeout_ms)
{
    ipc_invoke inv;
    perfetto_protos_InitializeConnectionRequest *ic =
        (perfetto_protos_InitializeConnectionRequest *)ti_raw_invoke(r, "InitializeConnection",
                                                                     false, &inv);
    if (!ic)
        return false;
    perfetto_protos_InitializeConnectionRequest_set_shared_memory_page_size_hint_bytes(ic,
                                                                                       page_size);
    perfetto_protos_InitializeConnectionRequest_set_shared_memory_size_hint_bytes(ic, shm_size);
    perfetto_protos_InitializeConnectionRequest_set_producer_name(ic, name);
    if (smb_fd >= 0)
        perfetto_protos_InitializeConnectionRequest_set_producer_provided_shmem(ic, true);
    uint64_t rid = r->next_id;
    if (!ti_raw_send(r, &inv, smb_fd))
        return false;
    perfetto_protos_IPCFrame_InvokeMethodReply_view rep;
    uint8_t *copy = NULL;
    bool ok = wait_reply(r, rid, &rep, &copy, timeout_ms) && rep.success;
    perfetto_protos_InitializeConnectionResponse_view icr;
    ok = ok && perfetto_protos_InitializeConnectionResponse_decode(&icr, rep.reply_proto.data,
                                                                   rep.reply_proto.size);
    if (ok && adopted)
        *adopted = icr.using_shmem_provided_by_producer;
    free(copy);
    return ok;
}

bool ti_raw_register(ti_raw *r, const char *name, int *smb_fd, uint32_t timeout_ms)
{
    ipc_invoke inv;
    *smb_fd = -1;
    if (!ti_raw_invoke(r, "GetAsyncCommand", false, &inv) || !ti_raw_send(r, &inv, -1))
        return false;
    uint64_t stream = r->next_id;
    perfetto_protos_RegisterDataSourceRequest *rd =
        (perfetto_protos_RegisterDataSourceRequest *)ti_raw_invoke(r, "RegisterDataSource", true,
                                                                   &inv);
    if (!rd)
        return false;
    perfetto_protos_DataSourceDescriptor d;
    perfetto_protos_RegisterDataSourceRequest_begin_data_source_descriptor(rd, &d);
    perfetto_protos_DataSourceDescriptor_set_name(&d, name);
    perfetto_protos_DataSourceDescriptor_end(&d);
    if (!ti_raw_send(r, &inv, -1))
        return false;
    uint64_t until = ipc_deadline_ms(util_now_ms(), timeout_ms);
    for (;;) {
        ipc_frame fr;
        uint8_t *copy = NULL;
        uint64_t now = util_now_ms();
        if (now >= until || !ti_raw_wait_frame(r, &fr, &copy, ipc_ms_left(until, now, INT32_MAX))) {
            free(copy);
            return false;
        }
        perfetto_protos_IPCFrame_InvokeMethodReply_view rep;
        perfetto_protos_GetAsyncCommandResponse_view cmd;
        bool setup =
            fr.request_id == stream && fr.kind == IPC_MSG_INVOKE_METHOD_REPLY &&
            perfetto_protos_IPCFrame_InvokeMethodReply_decode(&rep, fr.body.data, fr.body.size) &&
            perfetto_protos_GetAsyncCommandResponse_decode(&cmd, rep.reply_proto.data,
                                                           rep.reply_proto.size) &&
            cmd.has_setup_tracing;
        free(copy);
        if (setup) {
            *smb_fd = ipc_conn_take_fd(&r->c);
            return true;
        }
    }
}

int ti_memfd(size_t size, bool seal)
{
    int fd = memfd_create("ti-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return -1;
    }
    if (seal)
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    return fd;
}

void ti_scribble(uint8_t *mem, size_t size, uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i + 8 <= size; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x;
        /* Page headers: mostly "chunks complete" with random layouts. */
        if (i % 4096 == 0)
            v = (v & 0x70000000u) | 0x0FFFFFFFu;
        __atomic_store_n((uint64_t *)(mem + i), v, __ATOMIC_RELAXED);
    }
    *state = x;
}

bool ti_parse_stress(const char *out, ti_stress_summary *s)
{
    memset(s, 0, sizeof *s);
    const char *line = strstr(out, "gputrace-stress: mode=");
    if (!line)
        return false;
    unsigned long long w, d, a;
    char deliv[8] = "";
    const char *pw = strstr(line, "written=");
    const char *pp = strstr(line, "packets_per_s=");
    const char *pd = strstr(line, "delivered=");
    if (!pw || !pp || !pd ||
        sscanf(pw, "written=%llu dropped=%llu aborted=%llu", &w, &d, &a) != 3 ||
        sscanf(pp, "packets_per_s=%lf", &s->packets_per_s) != 1 ||
        sscanf(pd, "delivered=%7s", deliv) != 1)
        return false;
    s->written = w;
    s->dropped = d;
    s->aborted = a;
    s->delivered = strcmp(deliv, "yes") == 0;
    return true;
}

static ti_seq *get_seq(ti_report *r, uint32_t id)
{
    for (size_t i = 0; i < r->num_seqs; i++)
        if (r->seqs[i].sequence_id == id)
            return &r->seqs[i];
    r->seqs = realloc(r->seqs, (r->num_seqs + 1) * sizeof *r->seqs);
    ti_seq *s = &r->seqs[r->num_seqs++];
    memset(s, 0, sizeof *s);
    s->sequence_id = id;
    return s;
}

bool ti_check_trace(const char *path, uint32_t size, ti_report *r)
{
    memset(r, 0, sizeof *r);
    tt_trace t;
    if (!tt_load_trace(path, &t)) {
        tt_free_trace(&t);
        return false;
    }
    r->parsed = true;
    for (size_t i = 0; i < t.n; i++) {
        const tt_packet *p = &t.pkts[i];
        if (p->v.has_clock_snapshot)
            r->clock_snapshots++;
        if (!p->v.has_for_testing)
            continue;
        tt_event ev;
        ti_seq *s = get_seq(r, p->v.trusted_packet_sequence_id);
        if (!tt_decode_test_event(p->data, p->size, &ev)) {
            s->bad_payload = true;
            continue;
        }
        if ((size && ev.str.size != size) ||
            !stress_payload_check(ev.writer, ev.counter, ev.str.data, ev.str.size))
            s->bad_payload = true;
        bool flagged = p->v.previous_packet_dropped;
        s->dropped_flags += flagged;
        if (s->packets == 0) {
            s->writer = ev.writer;
            s->pid = p->v.trusted_pid;
            s->first = ev.counter;
            if (ev.counter > 0) {
                s->missing += ev.counter;
                s->gaps++;
                s->flagged_gaps += flagged;
            }
        } else if (ev.counter <= s->last || ev.writer != s->writer) {
            s->out_of_order = true;
        } else if (ev.counter != s->last + 1) {
            s->missing += ev.counter - s->last - 1;
            s->gaps++;
            s->flagged_gaps += flagged;
        }
        s->last = ev.counter;
        s->packets++;
        r->total_packets++;
    }
    r->has_stats = tt_trace_stats(&t, &r->stats, &r->buf);
    tt_free_trace(&t);
    return true;
}

void ti_report_free(ti_report *r)
{
    free(r->seqs);
    memset(r, 0, sizeof *r);
}

void ti_report_print(const ti_report *r)
{
    fprintf(stderr, "trace: %llu test packets in %zu sequences, %llu clock snapshots%s\n",
            (unsigned long long)r->total_packets, r->num_seqs,
            (unsigned long long)r->clock_snapshots, r->has_stats ? ", TraceStats" : "");
    for (size_t i = 0; i < r->num_seqs; i++) {
        const ti_seq *s = &r->seqs[i];
        fprintf(stderr,
                "  seq %u writer %u pid %d: %llu packets, counters %llu..%llu, missing %llu in "
                "%llu gaps (%llu flagged), %llu dropped flags%s%s\n",
                s->sequence_id, s->writer, s->pid, (unsigned long long)s->packets,
                (unsigned long long)s->first, (unsigned long long)s->last,
                (unsigned long long)s->missing, (unsigned long long)s->gaps,
                (unsigned long long)s->flagged_gaps, (unsigned long long)s->dropped_flags,
                s->out_of_order ? " OUT OF ORDER" : "", s->bad_payload ? " BAD PAYLOAD" : "");
    }
    if (r->has_stats)
        fprintf(
            stderr,
            "  stats: chunks_written %llu discarded %llu overwritten %llu abi_violations %llu "
            "trace_writer_packet_loss %llu patches_failed %llu; producers_seen %llu "
            "chunks_discarded %llu patches_discarded %llu flushes %llu/%llu\n",
            (unsigned long long)r->buf.chunks_written, (unsigned long long)r->buf.chunks_discarded,
            (unsigned long long)r->buf.chunks_overwritten,
            (unsigned long long)r->buf.abi_violations,
            (unsigned long long)r->buf.trace_writer_packet_loss,
            (unsigned long long)r->buf.patches_failed, (unsigned long long)r->stats.producers_seen,
            (unsigned long long)r->stats.chunks_discarded,
            (unsigned long long)r->stats.patches_discarded,
            (unsigned long long)r->stats.flushes_succeeded,
            (unsigned long long)r->stats.flushes_requested);
}

bool ti_main_init(int argc, char **argv, const char **service, const char **stress)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GPUTRACE_SERVICE GPUTRACE_STRESS\n", argv[0]);
        return false;
    }
    *service = argv[1];
    *stress = argv[2];
    signal(SIGPIPE, SIG_IGN);
    atexit(ti_kill_services);
    setvbuf(stdout, NULL, _IONBF, 0);
    return true;
}
