/* SPDX-License-Identifier: MIT */
/* End-to-end IPC benchmark: gputrace-stress writing through its SMB and
 * the producer socket into gputrace-service, the trace read back and
 * checked.
 *
 *   BENCH ipc_packets_per_s_256 <v> packets/s
 *       256-byte TestEvent packets, 4 writers, stall policy; median of 3
 *       runs; fails unless every packet is in the trace (zero loss).
 *   BENCH ipc_loss_rate_slow_service <v> %
 *       4 writers at a steady 20000 packets/s each for one second, drop
 *       policy, against a service slowed down with --slow-ms 5 (it sleeps
 *       before each CommitData); fails unless the loss is accounted for
 *       exactly (packets found + dropped + aborted = written).
 *
 * usage: bench_ipc GPUTRACE_SERVICE GPUTRACE_STRESS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracing/ipc/ipc_conn.h"
#include "protos/perfetto/trace.pbc.h"
#include "protos/perfetto/trace_packet.pbc.h"
#include "tracing/util/util_time.h"

#define WRITERS "4"

extern char **environ;

static pid_t spawn(const char *const *argv, int *out_fd)
{
    int pfd[2];
    if (out_fd && pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (out_fd) {
            dup2(pfd[1], 1);
            close(pfd[0]);
            close(pfd[1]);
        }
        execve(argv[0], (char *const *)argv, environ);
        _exit(127);
    }
    if (out_fd) {
        close(pfd[1]);
        *out_fd = pfd[0];
    }
    return pid;
}

static bool wait_ok(pid_t pid)
{
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* TestEvent packets in a .pftrace. */
static long count_test_packets(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
    size_t len = fread(buf, 1, (size_t)(sz > 0 ? sz : 0), f);
    fclose(f);
    long n = 0;
    pb_reader r;
    pb_field fl;
    pb_reader_init(&r, buf, len);
    while (pb_reader_next(&r, &fl)) {
        perfetto_protos_TracePacket_view v;
        if (fl.id == perfetto_protos_Trace_FIELD_packet && fl.wire_type == PB_WIRE_LEN &&
            perfetto_protos_TracePacket_decode(&v, fl.data, (size_t)fl.value) && v.has_for_testing)
            n++;
    }
    free(buf);
    return r.err == PB_OK ? n : -1;
}

typedef struct run {
    unsigned long long written, dropped, aborted;
    double pps;
    long found;
} run;

static bool one_run(const char *service, const char *stress, const char *slow, const char *policy,
                    const char *packets, const char *rate, run *out)
{
    char sock[128], trace[128];
    snprintf(sock, sizeof sock, "/tmp/gt-bench-%d.sock", (int)getpid());
    snprintf(trace, sizeof trace, "/tmp/gt-bench-%d.pftrace", (int)getpid());
    const char *sargv[] = { service, "--socket", sock, "--output", trace, "--data-source",
                            "gputrace.stress", "--slow-ms", slow,
                            /* room for every packet: loss may only come from the SMB */
                            "--buffer-kb", "131072", NULL };
    pid_t sp = spawn(sargv, NULL);
    uint64_t until = util_now_ms() + 5000;
    int probe = -1;
    while (util_now_ms() < until && (probe = ipc_socket_connect(sock)) < 0)
        usleep(10000);
    if (probe < 0)
        return false;
    close(probe);
    const char *pargv[] = { stress,  "--socket",   sock,    "--writers", WRITERS, "--packets",
                            packets, "--size",     "256",   "--policy",  policy,  "--rate",
                            rate,    "--stall-ms", "10000", "--quiet",   NULL };
    int fd = -1;
    pid_t pp = spawn(pargv, &fd);
    if (pp < 0)
        return false;
    char line[512] = "";
    FILE *f = fdopen(fd, "r");
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    bool ok = wait_ok(pp) && got;
    kill(sp, SIGTERM);
    ok &= wait_ok(sp);
    const char *w = strstr(line, "written=");
    const char *r = strstr(line, "packets_per_s=");
    ok = ok && w && r &&
         sscanf(w, "written=%llu dropped=%llu aborted=%llu", &out->written, &out->dropped,
                &out->aborted) == 3 &&
         sscanf(r, "packets_per_s=%lf", &out->pps) == 1;
    out->found = count_test_packets(trace);
    unlink(trace);
    if (!ok)
        fprintf(stderr, "bench_ipc: run failed: %s\n", line);
    return ok && out->found >= 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GPUTRACE_SERVICE GPUTRACE_STRESS\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    double pps[3];
    for (int i = 0; i < 3; i++) {
        run r;
        if (!one_run(argv[1], argv[2], "0", "stall", "50000", "0", &r))
            return 1;
        if (r.found != (long)r.written || r.dropped || r.aborted) {
            fprintf(stderr, "bench_ipc: lost packets in the lossless run: %ld of %llu\n", r.found,
                    r.written);
            return 1;
        }
        pps[i] = r.pps;
    }
    qsort(pps, 3, sizeof *pps, cmp_double);
    printf("BENCH ipc_packets_per_s_256 %.0f packets/s\n", pps[1]);

    run r;
    /* A steady 4 x 20000 packets/s for one second. */
    if (!one_run(argv[1], argv[2], "5", "drop", "20000", "20000", &r))
        return 1;
    if ((unsigned long long)r.found + r.dropped + r.aborted != r.written) {
        fprintf(stderr,
                "bench_ipc: loss not accounted: found %ld dropped %llu aborted %llu of %llu\n",
                r.found, r.dropped, r.aborted, r.written);
        return 1;
    }
    printf("BENCH ipc_loss_rate_slow_service %.2f %%\n",
           100.0 * (double)(r.written - (unsigned long long)r.found) / (double)r.written);
    return 0;
}
