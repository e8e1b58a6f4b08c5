/* SPDX-License-Identifier: MIT */
/* pr_query.c — gputrace-probe's query-semantics checks (pr_run.h):
 *
 *   query-availability  a query reads as available only once written: not
 *                       after a reset, not while its submission is held
 *                       back by a semaphore the host has not signalled, not
 *                       when the submission never wrote it; and always once
 *                       the submission's fence has signalled
 *   query-reset         a reset makes written queries unavailable again, and
 *                       a reset query is written afresh
 *   query-wait          a WAIT read returns once its query can be written
 *                       (within --max-wait-ms of the host's signal), not
 *                       before
 *   query-no-wait       a read without WAIT of a held-back query returns
 *                       (within --max-no-wait-ms); one that blocks until the
 *                       device is idle is a warning (lavapipe does)
 *
 * Reads that may block run on a watchdog thread: one that never returns
 * fails its check and wedges the device (the probe then asks it nothing
 * more) instead of hanging the probe (gapid #3661: WAIT reads that hang).
 * Held-back submissions wait on a timeline semaphore; without timeline
 * semaphores the held-back parts are not applicable.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "toolkit/probe/pr_run.h"

/* How long a WAIT read is given to return wrongly early, before the host
 * signals what its query waits for. */
#define PR_EARLY_MS 20

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the watchdog ---------------------------------------------------------------------- */

/* One vkGetQueryPoolResults on its own thread. Shared by the thread and
 * the caller; whichever lets go last frees it, so a read that never
 * returns leaks only this. */
typedef struct pr_watch pr_watch;
struct pr_watch {
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    VkDevice dev;
    VkQueryPool pool;
    uint32_t first, count;
    VkQueryResultFlags flags;
    VkResult result;
    uint64_t values[PR_SEMANTICS_QUERIES][2];
    uint64_t started, returned; /* CLOCK_MONOTONIC ns */
};

static void watch_release(pr_watch *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
    }
}

static void *watch_main(void *arg)
{
    pr_watch *w = arg;
    const size_t stride = w->flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT ? 16 : 8;
    VkResult r = vkGetQueryPoolResults(w->dev, w->pool, w->first, w->count, w->count * stride,
                                       w->values, stride, w->flags);
    const uint64_t now = monotonic_ns();
    pthread_mutex_lock(&w->lock);
    w->result = r;
    w->returned = now;
    w->done = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    watch_release(w);
    return NULL;
}

/* Starts the read; NULL if no thread could be started. */
static pr_watch *watch_start(pr_device *d, VkQueryPool pool, uint32_t first, uint32_t count,
                             VkQueryResultFlags flags)
{
    pr_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    atomic_init(&w->refs, 2);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    w->dev = d->dev;
    w->pool = pool;
    w->first = first;
    w->count = count;
    w->flags = flags;
    w->started = monotonic_ns();
    pthread_t th;
    if (pthread_create(&th, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
        return NULL;
    }
    pthread_detach(th);
    return w;
}

/* Whether the read has returned, waiting at most `ms` for it. */
static bool watch_wait(pr_watch *w, double ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    const uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)(ms * 1e6);
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&w->lock);
    while (!w->done && pthread_cond_timedwait(&w->cond, &w->lock, &until) == 0)
        ;
    const bool done = w->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

/* ---- the checks ------------------------------------------------------------------------- */

typedef struct semantics semantics;
struct semantics {
    pr_device *d;
    pr_family *f;
    const pr_options *o;
    uint32_t base;                    /* the first of the family's PR_SEMANTICS_QUERIES slots */
    unsigned early, missing, checked; /* availability */
    pr_result *avail, *reset, *wait, *no_wait;
};

static bool submit_stamps(semantics *s, uint32_t n, uint64_t wait_value)
{
    static const VkPipelineStageFlagBits stages[2] = { VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                                                       VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT };
    const uint32_t slots[2] = { s->base, s->base + 1 };
    VkResult r = pr_record_stamps(s->d, s->f->cb[0][0], s->f->queries, slots, stages, n);
    const pr_submit sub = { .wait = wait_value ? s->d->timeline_sem : VK_NULL_HANDLE,
                            .wait_value = wait_value,
                            .fence = true };
    if (r == VK_SUCCESS)
        r = pr_submit_cb(s->d, s->f->queues[0], s->f->cb[0][0], &sub);
    return r == VK_SUCCESS;
}

static VkResult signal_host(pr_device *d, uint64_t value)
{
    const VkSemaphoreSignalInfo info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
        .semaphore = d->timeline_sem,
        .value = value,
    };
    return d->signal_semaphore(d->dev, &info);
}

/* Counts what a read of the four slots says: `written` of them were
 * written by a completed submission (the first ones), the rest were not. */
static void judge_read(semantics *s, const uint64_t (*v)[2], uint32_t written, bool completed)
{
    for (uint32_t i = 0; i < PR_SEMANTICS_QUERIES; i++) {
        s->checked++;
        if (i < written && completed)
            s->missing += !v[i][1];
        else
            s->early += v[i][1] != 0;
    }
}

/* A held-back submission read without WAIT: query-no-wait, and the
 * availability of queries that cannot have been written yet. Leaves the
 * submission released and completed. */
static void held_back_read(semantics *s)
{
    pr_device *d = s->d;
    const uint64_t gate = ++d->timeline_value;
    if (!submit_stamps(s, 2, gate)) {
        pr_result_na(s->no_wait, "the held-back submission failed");
        return;
    }
    pr_watch *w = watch_start(d, s->f->queries, s->base, PR_SEMANTICS_QUERIES,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (!w) {
        signal_host(d, gate);
        pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS);
        pr_result_na(s->no_wait, "no thread for the watchdog");
        return;
    }
    bool released = false;
    if (watch_wait(w, s->o->max_no_wait_ms)) {
        judge_read(s, (const uint64_t(*)[2])w->values, 2, false);
        pr_result_judge(s->no_wait, (double)(w->returned - w->started) / 1e6, s->o->max_no_wait_ms,
                        "ms");
        pr_result_say(s->no_wait, "a read without WAIT of a submission held back by a "
                                  "semaphore returned at once");
    } else {
        const uint64_t t = monotonic_ns();
        signal_host(d, gate);
        released = true;
        if (watch_wait(w, s->o->max_wait_ms)) {
            pr_result_judge(s->no_wait, (double)(w->returned - w->started) / 1e6,
                            s->o->max_no_wait_ms, "ms");
            s->no_wait->verdict = PR_WARN;
            pr_result_say(s->no_wait,
                          "a read without WAIT blocked until the held-back submission could "
                          "run: it returned %.3f ms after the host signalled (a thread that must "
                          "not block, like a tracing layer's, stalls on such a driver)",
                          (double)(w->returned - t) / 1e6);
        } else {
            pr_result_judge(s->no_wait, (double)(monotonic_ns() - w->started) / 1e6,
                            s->o->max_no_wait_ms, "ms");
            pr_result_say(s->no_wait, "a read without WAIT never returned, even after the "
                                      "host signalled");
            pr_wedge(d, "vkGetQueryPoolResults without WAIT did not return");
        }
    }
    watch_release(w);
    if (d->wedged)
        return;
    if (!released)
        signal_host(d, gate);
    if (pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS) != VK_SUCCESS)
        return;
    uint64_t v[PR_SEMANTICS_QUERIES][2];
    pr_read(d, s->f->queries, s->base, PR_SEMANTICS_QUERIES, v);
    judge_read(s, (const uint64_t(*)[2])v, 2, true);
}

/* Reset then read, before anything is submitted; then a plain
 * submission when no semaphore can hold one back. */
static void availability(semantics *s)
{
    pr_device *d = s->d;
    uint64_t v[PR_SEMANTICS_QUERIES][2];
    if (pr_reset_queries(d, s->f, s->f->queries, s->base, PR_SEMANTICS_QUERIES) != VK_SUCCESS)
        return pr_result_na(s->avail, "the queries could not be reset");
    pr_read(d, s->f->queries, s->base, PR_SEMANTICS_QUERIES, v);
    judge_read(s, (const uint64_t(*)[2])v, 0, false);
    if (d->timeline) {
        held_back_read(s);
    } else {
        pr_result_na(s->no_wait, "no timeline semaphores to hold a submission back with");
        if (submit_stamps(s, 2, 0) && pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS) == VK_SUCCESS) {
            pr_read(d, s->f->queries, s->base, PR_SEMANTICS_QUERIES, v);
            judge_read(s, (const uint64_t(*)[2])v, 2, true);
        }
    }
    if (d->wedged && !s->checked)
        return;
    pr_result_judge(s->avail, s->early + s->missing, 0, "queries");
    pr_result_say(s->avail,
                  "%u reads of a query: %u available before the query could be written, %u "
                  "unavailable after its submission's fence",
                  s->checked, s->early, s->missing);
    if (!d->timeline)
        pr_result_say(s->avail, " (no held-back submission: no timeline semaphores)");
}

/* Written queries reset, read, written again. */
static void reset_and_reuse(semantics *s)
{
    pr_device *d = s->d;
    uint64_t v[PR_SEMANTICS_QUERIES][2];
    pr_read(d, s->f->queries, s->base, 2, v);
    if (!v[0][1])
        return pr_result_na(s->reset, "no written query to reset");
    const uint64_t old = v[1][0];
    if (pr_reset_queries(d, s->f, s->f->queries, s->base, 2) != VK_SUCCESS)
        return pr_result_na(s->reset, "the queries could not be reset");
    pr_read(d, s->f->queries, s->base, 2, v);
    unsigned stale = (v[0][1] != 0) + (v[1][1] != 0);
    unsigned unwritten = 0;
    if (submit_stamps(s, 2, 0) && pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS) == VK_SUCCESS) {
        pr_read(d, s->f->queries, s->base, 2, v);
        const uint32_t bits = s->f->props.timestampValidBits;
        unwritten = !v[0][1] + !v[1][1] + (v[1][1] && pr_counter_step(old, v[1][0], bits) < 0);
    }
    pr_result_judge(s->reset, stale + unwritten, 0, "queries");
    pr_result_say(s->reset,
                  "2 written queries reset (%s): %u still available after the reset; written "
                  "again: %u not available or older than before",
                  d->host_reset ? "vkResetQueryPool" : "vkCmdResetQueryPool", stale, unwritten);
}

/* A WAIT read of a held-back query: not before the host signals, soon
 * after. Without timeline semaphores, a WAIT read right after a plain
 * submission. */
static void wait_read(semantics *s)
{
    pr_device *d = s->d;
    const double bound = s->o->max_wait_ms;
    if (pr_reset_queries(d, s->f, s->f->queries, s->base, 1) != VK_SUCCESS)
        return pr_result_na(s->wait, "the query could not be reset");
    const uint64_t gate = d->timeline ? ++d->timeline_value : 0;
    if (!submit_stamps(s, 1, gate))
        return pr_result_na(s->wait, "the submission failed");
    pr_watch *w = watch_start(d, s->f->queries, s->base, 1,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (!w) {
        if (gate)
            signal_host(d, gate);
        pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS);
        return pr_result_na(s->wait, "no thread for the watchdog");
    }
    bool early = false;
    uint64_t from = w->started;
    if (gate) {
        early = watch_wait(w, PR_EARLY_MS);
        from = monotonic_ns();
        signal_host(d, gate);
    }
    if (early) {
        pr_result_judge(s->wait, -(double)(from - w->returned) / 1e6, bound, "ms");
        s->wait->verdict = PR_FAIL;
        pr_result_say(s->wait,
                      "a WAIT read returned %.3f ms before the host released the "
                      "submission that writes its query",
                      (double)(from - w->returned) / 1e6);
    } else if (watch_wait(w, bound)) {
        pr_result_judge(s->wait, (double)(w->returned - from) / 1e6, bound, "ms");
        pr_result_say(s->wait, "a WAIT read returned %s (%s)",
                      gate ? "after the host released its held-back submission"
                           : "after its submission",
                      pr_result_name(w->result));
    } else {
        pr_result_judge(s->wait, (double)(monotonic_ns() - from) / 1e6, bound, "ms");
        pr_result_say(s->wait, "a WAIT read did not return");
        pr_wedge(d, "vkGetQueryPoolResults with WAIT did not return");
    }
    watch_release(w);
    if (!d->wedged)
        pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS);
}

void pr_query_family(pr_device *d, pr_family *f, const pr_options *o, pr_result out[4])
{
    const int fam = (int)f->index;
    pr_result_init(&out[0], PR_QUERY_AVAILABILITY, fam);
    pr_result_init(&out[1], PR_QUERY_RESET, fam);
    pr_result_init(&out[2], PR_QUERY_WAIT, fam);
    pr_result_init(&out[3], PR_QUERY_NO_WAIT, fam);
    if (!f->nqueues) {
        for (int i = 0; i < 4; i++)
            pr_result_na(&out[i], "the family writes no timestamps (timestampValidBits 0)");
        return;
    }
    semantics s = { .d = d,
                    .f = f,
                    .o = o,
                    .base = 4 * f->nqueues,
                    .avail = &out[0],
                    .reset = &out[1],
                    .wait = &out[2],
                    .no_wait = &out[3] };
    availability(&s);
    if (!d->wedged)
        reset_and_reuse(&s);
    if (!d->wedged)
        wait_read(&s);
    for (int i = 0; i < 4; i++) {
        if (d->wedged && out[i].verdict == PR_NA && !out[i].detail[0])
            pr_result_na(&out[i], "not run: %s", d->wedged_why);
    }
}
