/* SPDX-License-Identifier: MIT */
/* pr_run.h — gputrace-probe's measurements (pr_run.c) and the query
 * semantics (pr_query.c), both on an opened device (pr_device.h). */
#ifndef GPUTRACE_PROBE_RUN_H
#define GPUTRACE_PROBE_RUN_H

#include <stddef.h>

#include "toolkit/probe/pr_device.h"
#include "toolkit/probe/probe.h"

/* How long one submission may take before the device counts as hung. */
#define PR_SUBMIT_TIMEOUT_MS 10000.0

/* The timed run of family `f` (bursts between idle gaps, then a
 * semaphore-ordered pair on each queue); run->error says what cut it
 * short. Free with pr_run_free. */
void pr_run_family(pr_device *d, pr_family *f, const pr_options *o, pr_family_run *run);
void pr_run_free(pr_family_run *run);

/* Semaphore-ordered pairs across the device's queues (queue 0 of every
 * family against every other, then each family's other queues against
 * its queue 0), at most `cap`; returns how many were measured, `err` set
 * when one failed. */
size_t pr_run_cross(pr_device *d, pr_pair *out, size_t cap, char *err, size_t len);

/* `n` calibrations back to back. */
size_t pr_run_calibrations(pr_device *d, pr_calibration *out, size_t n);

/* The query-semantics checks of family `f` into out[0..3]: availability,
 * reset, WAIT read, read without WAIT. May wedge the device (a read that
 * never returns). */
void pr_query_family(pr_device *d, pr_family *f, const pr_options *o, pr_result out[4]);

#endif /* GPUTRACE_PROBE_RUN_H */
