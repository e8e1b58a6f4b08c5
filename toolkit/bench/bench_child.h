/* SPDX-License-Identifier: MIT */
/* What the gputrace-check benchmarks share: running a program quietly and
 * reading the CPU time it used (the machine is shared, so CPU time, not
 * wall time, is what they compare). */
#ifndef GPUTRACE_TOOLKIT_BENCH_BENCH_CHILD_H
#define GPUTRACE_TOOLKIT_BENCH_BENCH_CHILD_H

#include <sys/resource.h>

/* Runs argv (argv[0] a path) with stdout to /dev/null and waits for it;
 * fills *ru with its resource use. Returns its exit status, or -1 if it
 * could not run or did not exit. `prog` prefixes the error message. */
int bench_run_quiet(const char *prog, char *const argv[], struct rusage *ru);

/* User plus system CPU seconds in *ru. */
double bench_cpu_s(const struct rusage *ru);

#endif
