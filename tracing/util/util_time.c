/* SPDX-License-Identifier: MIT */
#include "tracing/util/util_time.h"

#include <errno.h>

#define NS_PER_S  1000000000L
#define NS_PER_MS 1000000L

static struct timespec monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts;
}

uint64_t util_now_ns(void)
{
    struct timespec ts = monotonic_now();
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t util_clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t util_now_ms(void)
{
    struct timespec ts = monotonic_now();
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

double util_now_s(void)
{
    struct timespec ts = monotonic_now();
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t util_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec util_timespec_add_ms(struct timespec t, uint32_t ms)
{
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * NS_PER_MS;
    if (t.tv_nsec >= NS_PER_S) {
        t.tv_sec++;
        t.tv_nsec -= NS_PER_S;
    }
    return t;
}

bool util_timespec_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

struct timespec util_deadline_after_ms(uint32_t ms)
{
    return util_timespec_add_ms(monotonic_now(), ms);
}

uint32_t util_remaining_ms_at(const struct timespec *deadline, const struct timespec *now)
{
    if (!util_timespec_before(now, deadline))
        return 0;
    /* Positive by the test above; seconds and nanoseconds may differ in
     * sign, the sum may not. */
    int64_t ns = ((int64_t)deadline->tv_sec - (int64_t)now->tv_sec) * NS_PER_S +
                 ((int64_t)deadline->tv_nsec - (int64_t)now->tv_nsec);
    uint64_t ms = ((uint64_t)ns + NS_PER_MS - 1) / NS_PER_MS;
    return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

uint32_t util_remaining_ms(const struct timespec *deadline)
{
    struct timespec now = monotonic_now();
    return util_remaining_ms_at(deadline, &now);
}

void util_sleep_ms(uint32_t ms)
{
    struct timespec left = { (time_t)(ms / 1000), (long)(ms % 1000) * NS_PER_MS };
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}
