/* SPDX-License-Identifier: MIT */
/* The end-to-end check against Perfetto's own service, for one Perfetto
 * version: with `traced` and `perfetto` (or `tracebox`) in that version's
 * folder ($PERFETTO_BIN for v47, $PERFETTO_V58_BIN for v58, as
 * tests/perfetto/tp_lib.sh names them; scripts/lib.sh sets both), start a
 * private traced on temporary sockets, record a session that enables
 * gputrace.stress, run gputrace-stress against it with the stall policy,
 * and check the trace as for gputrace-service: every packet present, in
 * order, intact (the loss accounting holds: nothing lost, nothing counted
 * twice).
 *
 * Without them the test reports SKIP (exit 77); it never passes silently.
 * A folder whose `perfetto --version` is another version fails.
 *
 * usage: test_ipc_traced GPUTRACE_STRESS 47|58 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/ipc/ti_util.h"

#define SKIP 77

/* `name` in `dir`, or NULL. */
static char *tool_in(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *full = malloc(len);
    if (!full)
        return NULL;
    snprintf(full, len, "%s/%s", dir, name);
    if (access(full, X_OK) == 0)
        return full;
    free(full);
    return NULL;
}

/* Whether the consumer `perfetto_argv` (perfetto, or tracebox perfetto)
 * says "Perfetto v<version>." to --version; its first line in `line`. */
static bool says_version(const char *const *perfetto_argv, size_t np, const char *version,
                         char *line, size_t cap)
{
    const char *args[4] = { perfetto_argv[0], perfetto_argv[1], NULL, NULL };
    args[np] = "--version";
    int fd;
    pid_t pid = ti_spawn((char *const *)args, NULL, &fd);
    char *out = pid > 0 ? ti_read_all(fd, 10000) : NULL;
    int st;
    if (pid > 0)
        ti_wait(pid, 10000, &st);
    snprintf(line, cap, "%s", out ? out : "");
    line[strcspn(line, "\n")] = 0;
    free(out);
    char want[32];
    snprintf(want, sizeof want, "Perfetto v%s.", version);
    return strncmp(line, want, strlen(want)) == 0;
}

static int fail(const char *msg)
{
    fprintf(stderr, "FAIL: %s\n", msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "47") != 0 && strcmp(argv[2], "58") != 0)) {
        fprintf(stderr, "usage: %s GPUTRACE_STRESS 47|58\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *version = argv[2];
    const char *var = strcmp(version, "47") == 0 ? "PERFETTO_BIN" : "PERFETTO_V58_BIN";
    const char *bin = getenv(var);
    if (!bin || !*bin) {
        printf("SKIP: %s is not set (a folder with Perfetto v%s's traced and perfetto, or "
               "tracebox; scripts/lib.sh sets it from ../shared/perfetto)\n",
               var, version);
        return SKIP;
    }
    char *traced = tool_in(bin, "traced"), *perfetto = tool_in(bin, "perfetto"),
         *tracebox = tool_in(bin, "tracebox");
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
        printf("SKIP: %s=%s holds neither traced+perfetto nor tracebox\n", var, bin);
        return SKIP;
    }
    char line[256];
    if (!says_version(perfetto_argv, np, version, line, sizeof line)) {
        fprintf(stderr, "FAIL: %s=%s: perfetto --version says '%s', not Perfetto v%s\n", var, bin,
                line, version);
        return 1;
    }
    printf("%s\n", line);

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
        printf("traced v%s: 2 sequences x 2000 packets, complete and in order, stall policy\n",
               version);
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
