/* Helpers for the IPC tests. */
#include "ti_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc_conn.h"
#include "stress_payload.h"

extern char **environ;

void ti_sleep_ms(uint32_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

pid_t ti_spawn(char *const argv[], char *const extra_env[], int *out_fd)
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
    int pfd[2] = {-1, -1};
    if (out_fd) {
        if (pipe2(pfd, O_CLOEXEC) != 0) {
            free(env);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    }
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
    uint64_t until = ipc_now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
        if (ipc_now_ms() >= until) {
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
    uint64_t until = ipc_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = ipc_now_ms();
        if (now >= until)
            break;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
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
    uint64_t until = ipc_now_ms() + timeout_ms;
    while (ipc_now_ms() < until) {
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

pid_t ti_start_service(const char *service_bin, const char *sock, const char *out,
                       const char *const *extra)
{
    const char *argv[32] = {service_bin, "--socket", sock, "--output", out, "--data-source",
                            "gputrace.stress"};
    size_t n = 7;
    for (size_t i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = ti_spawn((char *const *)argv, NULL, NULL);
    if (pid < 0)
        return -1;
    if (!ti_wait_socket(sock, 5000)) {
        int st;
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    return pid;
}

bool ti_stop_service(pid_t pid)
{
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
    if (!pw || !pp || !pd || sscanf(pw, "written=%llu dropped=%llu aborted=%llu", &w, &d, &a) != 3 ||
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
        fprintf(stderr,
                "  stats: chunks_written %llu discarded %llu overwritten %llu abi_violations %llu "
                "trace_writer_packet_loss %llu patches_failed %llu; producers_seen %llu "
                "chunks_discarded %llu patches_discarded %llu flushes %llu/%llu\n",
                (unsigned long long)r->buf.chunks_written,
                (unsigned long long)r->buf.chunks_discarded,
                (unsigned long long)r->buf.chunks_overwritten,
                (unsigned long long)r->buf.abi_violations,
                (unsigned long long)r->buf.trace_writer_packet_loss,
                (unsigned long long)r->buf.patches_failed,
                (unsigned long long)r->stats.producers_seen,
                (unsigned long long)r->stats.chunks_discarded,
                (unsigned long long)r->stats.patches_discarded,
                (unsigned long long)r->stats.flushes_succeeded,
                (unsigned long long)r->stats.flushes_requested);
}
