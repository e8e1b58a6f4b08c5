/* SPDX-License-Identifier: MIT */
/* The end-to-end check against Perfetto's own service: when `traced` and
 * `perfetto` (or `tracebox`) are in $PERFETTO_BIN or on PATH (looked up in
 * that order; scripts/lib.sh sets PERFETTO_BIN), start a private traced on
 * temporary sockets, record a session that enables gputrace.stress, run
 * gputrace-stress against it, and check the trace as for gputrace-service:
 * every packet present, in order, intact.
 *
 * Without them the test reports SKIP (exit 77); it never passes silently.
 *
 * usage: test_ipc_traced GPUTRACE_STRESS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/ipc/ti_util.h"

#define SKIP 77

/* Full path of `name` on PATH, or NULL. */
static char *which(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    char *copy = strdup(path), *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        size_t len = strlen(dir) + strlen(name) + 2;
        char *full = malloc(len);
        if (!full)
            break;
        snprintf(full, len, "%s/%s", dir, name);
        if (access(full, X_OK) == 0) {
            free(copy);
            return full;
        }
        free(full);
    }
    free(copy);
    return NULL;
}

/* `name` in $PERFETTO_BIN first, then on PATH; NULL if in neither. */
static char *find_perfetto_tool(const char *name)
{
    const char *bin = getenv("PERFETTO_BIN");
    if (bin && *bin) {
        size_t len = strlen(bin) + strlen(name) + 2;
        char *full = malloc(len);
        if (full) {
            snprintf(full, len, "%s/%s", bin, name);
            if (access(full, X_OK) == 0)
                return full;
            free(full);
        }
    }
    return which(name);
}

static int fail(const char *msg)
{
    fprintf(stderr, "FAIL: %s\n", msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s GPUTRACE_STRESS\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char *traced = find_perfetto_tool("traced"), *perfetto = find_perfetto_tool("perfetto"),
         *tracebox = find_perfetto_tool("tracebox");
    const char *traced_argv[3] = { NULL }, *perfetto_argv[10] = { NULL };
    size_t np = 0;
    if (traced && perfetto) {
        traced_argv[0] = traced;
        perfetto_argv[np++] = perfetto;
    } else if (tracebox) {
        traced_argv[0] = tracebox;
        traced_argv[1] = "traced";
        perfetto_argv[np++] = tracebox;
        perfetto_argv[np++] = "perfetto";
    } else {
        printf("SKIP: neither traced+perfetto nor tracebox is in $PERFETTO_BIN or on PATH; the "
               "end-to-end tests ran against gputrace-service only\n");
        return SKIP;
    }

    char *dir = ti_temp_path("traced", "");
    if (mkdir(dir, 0700) != 0)
        return fail("mkdir");
    char prod[512], cons[512], cfg[512], out[512];
    snprintf(prod, sizeof prod, "PERFETTO_PRODUCER_SOCK_NAME=%s/producer.sock", dir);
    snprintf(cons, sizeof cons, "PERFETTO_CONSUMER_SOCK_NAME=%s/consumer.sock", dir);
    snprintf(cfg, sizeof cfg, "%s/config.txt", dir);
    snprintf(out, sizeof out, "%s/trace.pftrace", dir);
    FILE *f = fopen(cfg, "w");
    if (!f)
        return fail("config file");
    fprintf(f, "buffers { size_kb: 32768 fill_policy: DISCARD }\n"
               "data_sources { config { name: \"gputrace.stress\" } }\n"
               "duration_ms: 6000\n");
    fclose(f);
    char *env[] = { prod, cons, NULL };

    pid_t tp = ti_spawn((char *const *)traced_argv, env, NULL);
    if (tp < 0 || !ti_wait_socket(strchr(prod, '=') + 1, 5000))
        return fail("traced did not come up");
    perfetto_argv[np++] = "--txt";
    perfetto_argv[np++] = "-c";
    perfetto_argv[np++] = cfg;
    perfetto_argv[np++] = "-o";
    perfetto_argv[np++] = out;
    pid_t pp = ti_spawn((char *const *)perfetto_argv, env, NULL);
    if (pp < 0)
        return fail("perfetto did not start");

    const char *stress_argv[] = { argv[1],    "--writers", "2",          "--packets", "2000",
                                  "--policy", "stall",     "--stall-ms", "10000",     "--wait-ms",
                                  "10000",    "--quiet",   NULL };
    int fd;
    pid_t sp = ti_spawn((char *const *)stress_argv, env, &fd);
    char *so = ti_read_all(fd, 30000);
    int st;
    bool stress_ok = ti_wait(sp, 30000, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    bool perfetto_ok = ti_wait(pp, 30000, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    kill(tp, SIGTERM);
    ti_wait(tp, 5000, &st);
    if (!stress_ok) {
        fprintf(stderr, "%s", so);
        return fail("gputrace-stress against traced");
    }
    if (!perfetto_ok)
        return fail("perfetto did not write the trace");
    ti_report r;
    if (!ti_check_trace(out, 256, &r))
        return fail("the trace does not parse");
    int rc = 0;
    if (r.num_seqs != 2)
        rc = fail("expected two sequences");
    for (size_t i = 0; i < r.num_seqs; i++) {
        const ti_seq *s = &r.seqs[i];
        if (s->packets != 2000 || s->missing || s->out_of_order || s->bad_payload)
            rc = fail("a sequence is incomplete or damaged");
    }
    if (rc)
        ti_report_print(&r);
    ti_report_free(&r);
    free(so);
    if (rc == 0) {
        printf("traced: 2 sequences x 2000 packets, complete and in order\n");
        /* Only on success: after a failure the files stay, to look at. */
        unlink(out);
        unlink(cfg);
        unlink(strchr(prod, '=') + 1);
        unlink(strchr(cons, '=') + 1);
        rmdir(dir);
    }
    free(dir);
    free(traced);
    free(perfetto);
    free(tracebox);
    return rc;
}
