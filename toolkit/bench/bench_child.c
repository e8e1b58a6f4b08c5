/* SPDX-License-Identifier: MIT */
/* Child processes for the gputrace-check benchmarks (bench_child.h). */
#include "toolkit/bench/bench_child.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int bench_run_quiet(const char *prog, char *const argv[], struct rusage *ru)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        FILE *null = freopen("/dev/null", "w", stdout);
        (void)null;
        execv(argv[0], argv);
        fprintf(stderr, "%s: exec %s: %s\n", prog, argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (wait4(pid, &status, 0, ru) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double bench_cpu_s(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
           (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
}
