/* SPDX-License-Identifier: MIT */
/* Benchmark of gputrace-check: generates a ~1 GiB trace and a 4x smaller
 * one in $TMPDIR (default /tmp), runs gputrace-check on each as a child
 * process, and prints its throughput and peak RSS (getrusage of the child)
 * as BENCH lines. The files are deleted afterwards.
 *
 * usage: tk_bench GENERATOR GPUTRACE_CHECK [SIZE_MIB]   (default 1024) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "toolkit/bench/bench_child.h"
#include "tracing/util/util_time.h"

static int bench(const char *gen, const char *check, unsigned mib, const char *suffix)
{
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/gputrace-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "tk_bench: %s: %s\n", path, strerror(errno));
        return 1;
    }
    close(fd);
    char size[32];
    snprintf(size, sizeof size, "%u", mib);
    char *gargv[] = { (char *)gen, path, size, NULL };
    struct rusage ru;
    int rc = bench_run_quiet("tk_bench", gargv, &ru);
    struct stat st;
    if (rc != 0 || stat(path, &st) != 0) {
        fprintf(stderr, "tk_bench: generating %s failed\n", path);
        unlink(path);
        return 1;
    }
    /* Warm the page cache the way a second run would see it. */
    char *cargv[] = { (char *)check, "--no-progress", path, NULL };
    (void)bench_run_quiet("tk_bench", cargv, &ru);
    double t0 = util_now_s();
    memset(&ru, 0, sizeof ru);
    rc = bench_run_quiet("tk_bench", cargv, &ru);
    double secs = util_now_s() - t0;
    unlink(path);
    if (rc != 0) {
        fprintf(stderr, "tk_bench: gputrace-check exited with %d on the generated trace\n", rc);
        return 1;
    }
    double mb = (double)st.st_size / 1e6;
    printf("BENCH check_mb_per_s%s %.0f MB/s\n", suffix, mb / secs);
    printf("BENCH check_peak_rss_mb%s %.1f MB\n", suffix, (double)ru.ru_maxrss / 1024.0);
    fprintf(stderr, "tk_bench: %.0f MB in %.2f s (user %.2f s, sys %.2f s)\n", mb, secs,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: tk_bench GENERATOR GPUTRACE_CHECK [SIZE_MIB]\n");
        return 2;
    }
    unsigned mib = argc == 4 ? (unsigned)strtoul(argv[3], NULL, 10) : 1024;
    if (mib < 4)
        mib = 4;
    int rc = bench(argv[1], argv[2], mib, "");
    rc |= bench(argv[1], argv[2], mib / 4, "_small");
    return rc;
}
