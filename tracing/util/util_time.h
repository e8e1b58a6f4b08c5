/* SPDX-License-Identifier: MIT */
/* Small time helpers shared by the write path, the layer, the toolkit and
 * the tests. Everything here reads CLOCK_MONOTONIC (unless the name says
 * otherwise), the clock our condition variables are created with, so a
 * deadline from here can go straight to pthread_cond_timedwait. Only
 * clock_gettime and nanosleep underneath: every function is
 * async-signal-safe. */
#ifndef UTIL_TIME_H
#define UTIL_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in nanoseconds, milliseconds or (for reports)
 * seconds. */
uint64_t util_now_ns(void);
uint64_t util_now_ms(void);
double util_now_s(void);

/* Another clock (CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME...)
 * now, in nanoseconds; 0 if the clock cannot be read. */
uint64_t util_clock_ns(clockid_t clock);

/* CPU time consumed by the calling thread, in nanoseconds: what a
 * benchmark measures when time slices lost to other processes must not
 * count. */
uint64_t util_thread_cpu_ns(void);

/* `t` moved `ms` milliseconds later, nanoseconds kept below one second. */
struct timespec util_timespec_add_ms(struct timespec t, uint32_t ms);

/* Whether `a` is strictly earlier than `b`. */
bool util_timespec_before(const struct timespec *a, const struct timespec *b);

/* The CLOCK_MONOTONIC instant `ms` from now, for pthread_cond_timedwait
 * on a condition variable using that clock. */
struct timespec util_deadline_after_ms(uint32_t ms);

/* Milliseconds from `now` until `deadline`, rounded up (so a caller
 * polling with it never wakes before the deadline); 0 once it passed,
 * UINT32_MAX when further away than that. */
uint32_t util_remaining_ms_at(const struct timespec *deadline, const struct timespec *now);

/* The same from the current CLOCK_MONOTONIC time. */
uint32_t util_remaining_ms(const struct timespec *deadline);

/* Sleeps `ms` milliseconds, resuming after signal interruptions. */
void util_sleep_ms(uint32_t ms);

#endif
