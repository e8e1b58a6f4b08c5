/* SPDX-License-Identifier: MIT */
/* pr_run.c — gputrace-probe's measurements (probe.h): the timed run of a
 * queue family, semaphore-ordered pairs of stamps on one queue and across
 * queues, and calibrations repeated back to back. The verdicts are
 * pr_judge.c's.
 *
 * A family's run is four bursts of stamped submissions: one at the start,
 * then one after each idle gap of 10 %, 30 % and 60 % of --duration. The
 * gaps give a GPU time to change power state (Raven's GFXOFF skewed its
 * counters), and the first and last bursts, --duration apart, measure the
 * counter's rate. Every submission waits for its fence before the next,
 * so submission order is time order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "toolkit/probe/pr_device.h"
#include "toolkit/probe/pr_run.h"

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static bool vk_failed(VkResult r, const char *what, char *err, size_t len)
{
    if (r == VK_SUCCESS)
        return false;
    snprintf(err, len, "%s: %s (%d)", what, pr_result_name(r), (int)r);
    return true;
}

/* One stamped submission on queue `q` of `f`, between two calibrations. */
static bool stamp_once(pr_device *d, pr_family *f, uint32_t q, pr_sample *s, char *err, size_t len)
{
    const uint32_t slots[2] = { 2 * q, 2 * q + 1 };
    static const VkPipelineStageFlagBits stages[2] = { VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                                                       VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT };
    VkResult r = pr_reset_queries(d, f, f->queries, slots[0], 2);
    if (vk_failed(r, "query reset", err, len))
        return false;
    r = pr_record_stamps(d, f->cb[q][0], f->queries, slots, stages, 2);
    if (vk_failed(r, "recording", err, len))
        return false;
    pr_calibrate(d, &s->pre);
    s->before = monotonic_ns();
    const pr_submit plain = { .fence = true };
    r = pr_submit_cb(d, f->queues[q], f->cb[q][0], &plain);
    if (r == VK_SUCCESS)
        r = pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS);
    s->after = monotonic_ns();
    pr_calibrate(d, &s->post);
    if (vk_failed(r, "stamped submission", err, len))
        return false;
    uint64_t v[2][2];
    r = pr_read(d, f->queries, slots[0], 2, v);
    if (r != VK_SUCCESS && r != VK_NOT_READY)
        return !vk_failed(r, "vkGetQueryPoolResults", err, len);
    s->top = v[0][0];
    s->bottom = v[1][0];
    s->available = v[0][1] && v[1][1];
    return true;
}

/* `first` on (fa, qa) signals the binary semaphore, `second` on (fb, qb)
 * waits for it; both stamps at the bottom of the pipe, read afterwards. */
static bool ordered_pair(pr_device *d, pr_family *fa, uint32_t qa, pr_family *fb, uint32_t qb,
                         VkQueryPool pool, uint32_t slot, pr_pair *p, char *err, size_t len)
{
    static const VkPipelineStageFlagBits bottom = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    const uint32_t first = slot, second = slot + 1;
    VkResult r = pr_reset_queries(d, fa, pool, slot, 2);
    if (r == VK_SUCCESS)
        r = pr_record_stamps(d, fa->cb[qa][0], pool, &first, &bottom, 1);
    if (r == VK_SUCCESS)
        r = pr_record_stamps(d, fb->cb[qb][1], pool, &second, &bottom, 1);
    const pr_submit signal = { .signal = d->binary };
    const pr_submit wait = { .wait = d->binary, .fence = true };
    if (r == VK_SUCCESS)
        r = pr_submit_cb(d, fa->queues[qa], fa->cb[qa][0], &signal);
    if (r == VK_SUCCESS)
        r = pr_submit_cb(d, fb->queues[qb], fb->cb[qb][1], &wait);
    if (r == VK_SUCCESS)
        r = pr_wait_fence(d, PR_SUBMIT_TIMEOUT_MS);
    uint64_t v[2][2];
    if (r == VK_SUCCESS)
        r = pr_read(d, pool, slot, 2, v);
    if (vk_failed(r, "semaphore-ordered pair", err, len))
        return false;
    if (!v[0][1] || !v[1][1]) {
        snprintf(err, len, "a semaphore-ordered pair's stamps were unavailable after its fence");
        return false;
    }
    const uint32_t ba = fa->props.timestampValidBits, bb = fb->props.timestampValidBits;
    *p = (pr_pair){ .family_a = fa->index,
                    .queue_a = qa,
                    .family_b = fb->index,
                    .queue_b = qb,
                    .bits = ba < bb ? ba : bb,
                    .first = v[0][0],
                    .second = v[1][0] };
    return true;
}

void pr_run_family(pr_device *d, pr_family *f, const pr_options *o, pr_family_run *run)
{
    memset(run, 0, sizeof *run);
    run->family = f->index;
    run->valid_bits = f->props.timestampValidBits;
    run->queues = f->nqueues;
    if (!f->nqueues)
        return;
    static const double gaps[] = { 0, 0.1, 0.3, 0.6 };
    const uint32_t nbursts = sizeof gaps / sizeof gaps[0];
    run->samples = calloc((size_t)nbursts * o->burst, sizeof *run->samples);
    run->pairs = calloc(f->nqueues, sizeof *run->pairs);
    if (!run->samples || !run->pairs) {
        snprintf(run->error, sizeof run->error, "out of memory");
        return;
    }
    for (uint32_t b = 0; b < nbursts; b++) {
        if (gaps[b] > 0)
            sleep_s(gaps[b] * o->duration_s);
        for (uint32_t i = 0; i < o->burst; i++) {
            pr_sample *s = &run->samples[run->n_samples];
            s->queue = i % f->nqueues;
            s->burst = b;
            s->gap_s = i == 0 ? gaps[b] * o->duration_s : 0;
            if (!stamp_once(d, f, s->queue, s, run->error, sizeof run->error))
                return;
            run->n_samples++;
        }
        run->bursts = b + 1;
    }
    for (uint32_t q = 0; q < f->nqueues; q++) {
        if (!ordered_pair(d, f, q, f, q, f->queries, 2 * f->nqueues + 2 * q,
                          &run->pairs[run->n_pairs], run->error, sizeof run->error))
            return;
        run->n_pairs++;
    }
}

void pr_run_free(pr_family_run *run)
{
    free(run->samples);
    free(run->pairs);
    run->samples = NULL;
    run->pairs = NULL;
}

size_t pr_run_cross(pr_device *d, pr_pair *out, size_t cap, char *err, size_t len)
{
    if (!d->cross)
        return 0;
    /* Queue 0 of every family against queue 0 of every other first, then
     * the other queues of each family against its queue 0. */
    struct {
        pr_family *f;
        uint32_t q;
    } a[2 * PR_CROSS_PAIRS], b[2 * PR_CROSS_PAIRS];
    size_t n = 0;
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        for (uint32_t j = 0; j < d->nfamilies && n < cap; j++) {
            if (i != j && d->families[i].nqueues && d->families[j].nqueues) {
                a[n].f = &d->families[i], a[n].q = 0;
                b[n].f = &d->families[j], b[n++].q = 0;
            }
        }
    }
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        for (uint32_t q = 1; q < d->families[i].nqueues && n + 2 <= cap; q++) {
            a[n].f = b[n].f = &d->families[i], a[n].q = 0, b[n++].q = q;
            a[n].f = b[n].f = &d->families[i], a[n].q = q, b[n++].q = 0;
        }
    }
    size_t done = 0;
    for (size_t i = 0; i < n && i < cap && !d->wedged; i++) {
        if (!ordered_pair(d, a[i].f, a[i].q, b[i].f, b[i].q, d->cross, 2 * (uint32_t)i, &out[done],
                          err, len))
            break;
        done++;
    }
    return done;
}

size_t pr_run_calibrations(pr_device *d, pr_calibration *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pr_calibrate(d, &out[i]);
    return n;
}
