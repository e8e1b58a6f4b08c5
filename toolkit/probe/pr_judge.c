/* SPDX-License-Identifier: MIT */
/* pr_judge.c — gputrace-probe's verdicts, made from measurements alone
 * (probe.h): no Vulkan here, so tests/probe can feed made-up runs of
 * several queues and families to what lavapipe, with one queue, cannot
 * exercise.
 *
 * Every bound is one a correct driver meets whatever the machine's load:
 * a timestamp lies inside the host bracket of its submission (before the
 * submit, after the fence) by construction, a calibration's error is at
 * most the maxDeviation it reports, and quantization costs a tick. Load
 * widens brackets, which can only hide a fault, never invent one.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/probe/probe.h"

/* ---- names, results ---------------------------------------------------------------- */

static const struct {
    const char *name;
    bool per_family;
} checks[PR_CHECK_COUNT] = {
    [PR_WRITTEN_VS_CALIBRATED] = { "written-vs-calibrated", true },
    [PR_PERIOD] = { "period", true },
    [PR_VALID_BITS] = { "valid-bits", true },
    [PR_ORDER] = { "order", true },
    [PR_CROSS_QUEUE_ORDER] = { "cross-queue-order", false },
    [PR_DEVIATION] = { "deviation", false },
    [PR_HOST_DOMAINS] = { "host-domains", false },
    [PR_QUERY_AVAILABILITY] = { "query-availability", true },
    [PR_QUERY_RESET] = { "query-reset", true },
    [PR_QUERY_WAIT] = { "query-wait", true },
    [PR_QUERY_NO_WAIT] = { "query-no-wait", true },
};

const char *pr_check_name(pr_check_id id)
{
    return id < PR_CHECK_COUNT ? checks[id].name : "?";
}

bool pr_check_per_family(pr_check_id id)
{
    return id < PR_CHECK_COUNT && checks[id].per_family;
}

const char *pr_verdict_name(pr_verdict v)
{
    switch (v) {
    case PR_PASS:
        return "pass";
    case PR_WARN:
        return "warn";
    case PR_FAIL:
        return "fail";
    case PR_NA:
        return "n/a";
    }
    return "?";
}

const char *pr_host_clock_name(pr_host_clock c)
{
    switch (c) {
    case PR_HOST_MONOTONIC:
        return "CLOCK_MONOTONIC";
    case PR_HOST_MONOTONIC_RAW:
        return "CLOCK_MONOTONIC_RAW";
    case PR_HOST_BOOTTIME:
        return "CLOCK_BOOTTIME";
    case PR_HOST_COUNT:
        break;
    }
    return "?";
}

void pr_options_default(pr_options *o)
{
    *o = (pr_options){
        .duration_s = 1.0,
        .slack_ns = 0,
        .max_period_ppm = 100,
        .max_backward_ns = 0,
        .deviation_slack_ns = 0,
        .host_slack_ns = 0,
        .max_wait_ms = 1000,
        .max_no_wait_ms = 100,
        .calibrations = 64,
        .burst = 8,
        .device = -1,
    };
}

void pr_result_init(pr_result *r, pr_check_id check, int family)
{
    memset(r, 0, sizeof *r);
    r->check = check;
    r->family = family;
    r->verdict = PR_NA;
    r->measured = NAN;
    r->bound = NAN;
    r->unit = "";
}

void pr_result_judge(pr_result *r, double measured, double bound, const char *unit)
{
    r->measured = measured;
    r->bound = bound;
    r->unit = unit;
    r->verdict = measured <= bound ? PR_PASS : PR_FAIL;
}

void pr_result_say(pr_result *r, const char *fmt, ...)
{
    size_t used = strlen(r->detail);
    if (used + 1 >= sizeof r->detail)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail + used, sizeof r->detail - used, fmt, ap);
    va_end(ap);
}

void pr_result_na(pr_result *r, const char *fmt, ...)
{
    r->verdict = PR_NA;
    r->detail[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
}

/* ---- counters ------------------------------------------------------------------------- */

int64_t pr_counter_step(uint64_t from, uint64_t to, uint32_t bits)
{
    if (bits == 0 || bits >= 64)
        return (int64_t)(to - from);
    const uint64_t range = 1ull << bits;
    uint64_t d = (to - from) & (range - 1);
    return d >= range / 2 ? (int64_t)d - (int64_t)range : (int64_t)d;
}

static uint32_t bit_length(uint64_t v)
{
    uint32_t n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

/* ---- written vs calibrated ------------------------------------------------------------- */

/* How far `stamp`, mapped to CLOCK_MONOTONIC through `cal`, lies outside
 * [lo, hi] widened by what a correct driver may be off: the calibration's
 * maxDeviation, a tick of quantization on each side, the period's allowed
 * error over the distance to the calibration, and the slack. Negative:
 * inside, by that much. */
static double outside(const pr_calibration *cal, uint64_t stamp, uint64_t lo, uint64_t hi,
                      uint32_t bits, const pr_device_facts *d, const pr_options *o)
{
    const double dist = (double)pr_counter_step(cal->device, stamp, bits) * d->period_ns;
    const double mapped = (double)cal->host[PR_HOST_MONOTONIC] + dist;
    const double widen = (double)cal->max_deviation + 2 * d->period_ns + o->slack_ns +
                         fabs(dist) * o->max_period_ppm * 1e-6;
    return fmax((double)lo - widen - mapped, mapped - ((double)hi + widen));
}

void pr_judge_written_vs_calibrated(const pr_family_run *run, const pr_device_facts *d,
                                    const pr_options *o, pr_result *r)
{
    pr_result_init(r, PR_WRITTEN_VS_CALIBRATED, (int)run->family);
    if (!run->valid_bits)
        return pr_result_na(r, "the family writes no timestamps (timestampValidBits 0)");
    if (!d->calibrated || !d->offered[PR_HOST_MONOTONIC])
        return pr_result_na(r, "no calibrated timestamps against CLOCK_MONOTONIC "
                               "(VK_KHR/EXT_calibrated_timestamps)");
    double worst = -INFINITY, narrow = INFINITY, wide = 0;
    size_t mapped = 0, after_gap = 0, worst_sample = 0;
    for (size_t i = 0; i < run->n_samples; i++) {
        const pr_sample *s = &run->samples[i];
        if (!s->available)
            continue;
        narrow = fmin(narrow, (double)(s->after - s->before));
        wide = fmax(wide, (double)(s->after - s->before));
        const pr_calibration *cals[2] = { &s->pre, &s->post };
        for (int c = 0; c < 2; c++) {
            if (!cals[c]->ok || !cals[c]->offered[PR_HOST_MONOTONIC])
                continue;
            const uint64_t stamps[2] = { s->top, s->bottom };
            for (int k = 0; k < 2; k++) {
                double x = outside(cals[c], stamps[k], s->before, s->after, run->valid_bits, d, o);
                mapped++;
                after_gap += s->burst > 0;
                if (x > worst) {
                    worst = x;
                    worst_sample = i;
                }
            }
        }
    }
    if (!mapped)
        return pr_result_na(r, "no stamp could be mapped: %s",
                            run->error[0] ? run->error : "no calibration succeeded");
    pr_result_judge(r, worst, 0, "ns");
    pr_result_say(r,
                  "%zu mappings of %zu stamped submissions through the calibrations before and "
                  "after each, %zu after idle gaps; brackets %.1f-%.1f us; the farthest %s the "
                  "bracket (+ maxDeviation, 2 ticks, %.0f ns slack) by %.0f ns, submission %zu",
                  mapped, run->n_samples, after_gap, narrow / 1e3, wide / 1e3,
                  worst > 0 ? "outside" : "inside", o->slack_ns, fabs(worst), worst_sample);
}

/* ---- period ------------------------------------------------------------------------------- */

/* Of the samples on queue 0 of burst `burst`, the one with the narrowest
 * bracket; NULL if none. */
static const pr_sample *narrowest(const pr_family_run *run, uint32_t burst)
{
    const pr_sample *best = NULL;
    for (size_t i = 0; i < run->n_samples; i++) {
        const pr_sample *s = &run->samples[i];
        if (s->queue != 0 || s->burst != burst || !s->available)
            continue;
        if (!best || s->after - s->before < best->after - best->before)
            best = s;
    }
    return best;
}

/* The written stamps' rate against the host: ppm and its uncertainty;
 * false when there is nothing to measure over. */
static bool written_rate(const pr_family_run *run, const pr_device_facts *d, double *ppm,
                         double *unc, double *span_s, int64_t *ticks)
{
    if (run->bursts < 2)
        return false;
    const pr_sample *a = narrowest(run, 0), *b = narrowest(run, run->bursts - 1);
    if (!a || !b)
        return false;
    *ticks = pr_counter_step(a->bottom, b->bottom, run->valid_bits);
    const double lo = (double)b->before - (double)a->after;
    const double hi = (double)b->after - (double)a->before;
    const double mid = (lo + hi) / 2;
    *span_s = mid / 1e9;
    if (*ticks <= 0) {
        *ppm = -1e6;
        *unc = 0;
        return true;
    }
    const double dev = (double)*ticks * d->period_ns;
    *ppm = (mid / dev - 1) * 1e6;
    *unc = ((hi - lo) / 2 + 2 * d->period_ns) / mid * 1e6;
    return true;
}

/* The calibrated DEVICE domain's rate against CLOCK_MONOTONIC from the
 * run's first to its last calibration. */
static bool calibrated_rate(const pr_family_run *run, const pr_device_facts *d, double *ppm,
                            double *unc, int64_t *ticks)
{
    const pr_calibration *first = NULL, *last = NULL;
    for (size_t i = 0; i < run->n_samples; i++) {
        const pr_calibration *c[2] = { &run->samples[i].pre, &run->samples[i].post };
        for (int k = 0; k < 2; k++) {
            if (!c[k]->ok || !c[k]->offered[PR_HOST_MONOTONIC])
                continue;
            if (!first)
                first = c[k];
            last = c[k];
        }
    }
    if (!first || first == last)
        return false;
    *ticks = pr_counter_step(first->device, last->device, run->valid_bits);
    const double host = (double)(last->host[PR_HOST_MONOTONIC] - first->host[PR_HOST_MONOTONIC]);
    if (*ticks <= 0 || host <= 0) {
        *ppm = -1e6;
        *unc = 0;
        return true;
    }
    *ppm = (host / ((double)*ticks * d->period_ns) - 1) * 1e6;
    *unc = ((double)(first->max_deviation + last->max_deviation) + 2 * d->period_ns) / host * 1e6;
    return true;
}

void pr_judge_period(const pr_family_run *run, const pr_device_facts *d, const pr_options *o,
                     pr_result *r)
{
    pr_result_init(r, PR_PERIOD, (int)run->family);
    if (!run->valid_bits)
        return pr_result_na(r, "the family writes no timestamps (timestampValidBits 0)");
    double wppm = 0, wunc = 0, span = 0, cppm = 0, cunc = 0;
    int64_t wticks = 0, cticks = 0;
    const bool w = written_rate(run, d, &wppm, &wunc, &span, &wticks);
    const bool c = d->calibrated && calibrated_rate(run, d, &cppm, &cunc, &cticks);
    if (!w && !c)
        return pr_result_na(r, "too few stamped submissions to measure over: %s",
                            run->error[0] ? run->error : "no burst after an idle gap");
    /* A deviation counts only where even its uncertainty cannot explain it. */
    const bool wfail = w && fabs(wppm) - wunc > o->max_period_ppm;
    const bool cfail = c && fabs(cppm) - cunc > o->max_period_ppm;
    r->unit = "ppm";
    r->bound = o->max_period_ppm;
    r->measured = c ? cppm : wppm;
    r->verdict = wfail || cfail ? PR_FAIL : PR_PASS;
    pr_result_say(r, "measured period / timestampPeriod (%.6g ns) - 1", d->period_ns);
    if (c) {
        if (cticks <= 0)
            pr_result_say(r, "; calibrated DEVICE domain went backwards by %lld ticks",
                          (long long)-cticks);
        else
            pr_result_say(r, "; calibrated: %lld ticks, %+.3f +- %.3f ppm", (long long)cticks, cppm,
                          cunc);
    }
    if (w) {
        if (wticks <= 0)
            pr_result_say(r, "; written stamps went backwards by %lld ticks over %.2f s",
                          (long long)-wticks, span);
        else
            pr_result_say(r, "; written stamps: %lld ticks over %.3f s, %+.1f +- %.1f ppm",
                          (long long)wticks, span, wppm, wunc);
    }
}

/* ---- valid bits ---------------------------------------------------------------------------- */

/* One value of the family's counter in time order, with the host bracket
 * it was read in. */
typedef struct stream_value {
    uint64_t raw;
    double lo, hi;
} stream_value;

/* The family's counter values (calibrations and stamps) in the order they
 * were read; returns how many (at most `cap`). */
static size_t counter_stream(const pr_family_run *run, stream_value *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < run->n_samples && n + 4 <= cap; i++) {
        const pr_sample *s = &run->samples[i];
        const pr_calibration *cal[2] = { &s->pre, &s->post };
        if (cal[0]->ok && cal[0]->offered[PR_HOST_MONOTONIC])
            out[n++] = (stream_value){
                cal[0]->device,
                (double)cal[0]->before[PR_HOST_MONOTONIC] - (double)cal[0]->max_deviation,
                (double)cal[0]->after[PR_HOST_MONOTONIC] + (double)cal[0]->max_deviation
            };
        if (s->available) {
            out[n++] = (stream_value){ s->top, (double)s->before, (double)s->after };
            out[n++] = (stream_value){ s->bottom, (double)s->before, (double)s->after };
        }
        if (cal[1]->ok && cal[1]->offered[PR_HOST_MONOTONIC])
            out[n++] = (stream_value){
                cal[1]->device,
                (double)cal[1]->before[PR_HOST_MONOTONIC] - (double)cal[1]->max_deviation,
                (double)cal[1]->after[PR_HOST_MONOTONIC] + (double)cal[1]->max_deviation
            };
    }
    return n;
}

void pr_judge_valid_bits(const pr_family_run *run, const pr_device_facts *d, const pr_options *o,
                         pr_result *r)
{
    pr_result_init(r, PR_VALID_BITS, (int)run->family);
    const uint32_t bits = run->valid_bits;
    if (!bits)
        return pr_result_na(r, "the family writes no timestamps (timestampValidBits 0)");
    const size_t cap = run->n_samples * 4 + 1;
    stream_value *v = calloc(cap, sizeof *v);
    if (!v)
        return pr_result_na(r, "out of memory");
    const size_t n = counter_stream(run, v, cap);
    const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t top = 0;
    size_t wraps = 0;
    double worst = -INFINITY; /* a wrap's distance from what host time allows */
    for (size_t i = 0; i < n; i++) {
        top = v[i].raw > top ? v[i].raw : top;
        if (i == 0)
            continue;
        const int64_t step = pr_counter_step(v[i - 1].raw, v[i].raw, bits);
        if (step <= 0 || v[i].raw >= v[i - 1].raw)
            continue;
        /* Wrapped: the extended distance must match the time between. */
        wraps++;
        const double ns = (double)step * d->period_ns;
        const double allow = 2 * d->period_ns + ns * o->max_period_ppm * 1e-6 + o->slack_ns;
        const double host_hi = v[i].hi - v[i - 1].lo, host_lo = v[i].lo - v[i - 1].hi;
        worst = fmax(worst, fmax(ns - host_hi, host_lo - ns) - allow);
    }
    free(v);
    if (!n)
        return pr_result_na(r, "no counter value was read: %s", run->error);
    const double wrap_s = ldexp(d->period_ns, (int)bits) / 1e9;
    if (top > mask) {
        pr_result_judge(r, bit_length(top), bits, "bits");
        pr_result_say(r, "a value of %u bits (0x%llx) from a counter of %u valid bits",
                      bit_length(top), (unsigned long long)top, bits);
    } else if (wraps && worst > 0) {
        pr_result_judge(r, worst, 0, "ns");
        pr_result_say(r,
                      "%zu wrap(s); the counter extended across them is off the host time "
                      "between its readings by %.0f ns beyond the allowance (a reset, not a wrap?)",
                      wraps, worst);
    } else {
        pr_result_judge(r, bit_length(top), bits, "bits");
        pr_result_say(r, "%zu values, the largest 0x%llx", n, (unsigned long long)top);
        if (wraps)
            pr_result_say(r, "; %zu wrap(s), the extended counter within %.0f ns of host time",
                          wraps, -worst);
        else
            pr_result_say(r, "; no wrap during the run (one every %.3g s)", wrap_s);
    }
}

/* ---- order ------------------------------------------------------------------------------- */

#define PR_MAX_QUEUES 64

void pr_judge_order(const pr_family_run *run, const pr_device_facts *d, const pr_options *o,
                    pr_result *r)
{
    pr_result_init(r, PR_ORDER, (int)run->family);
    const uint32_t bits = run->valid_bits;
    if (!bits)
        return pr_result_na(r, "the family writes no timestamps (timestampValidBits 0)");
    uint64_t last[PR_MAX_QUEUES];
    bool have[PR_MAX_QUEUES] = { false };
    double back = 0; /* the largest step backwards, ns */
    size_t stamps = 0, where = 0;
    for (size_t i = 0; i < run->n_samples; i++) {
        const pr_sample *s = &run->samples[i];
        if (!s->available || s->queue >= PR_MAX_QUEUES)
            continue;
        stamps += 2;
        int64_t in = pr_counter_step(s->top, s->bottom, bits);
        int64_t across = have[s->queue] ? pr_counter_step(last[s->queue], s->top, bits) : 0;
        double b = -(double)(in < across ? in : across) * d->period_ns;
        if (b > back) {
            back = b;
            where = i;
        }
        last[s->queue] = s->bottom;
        have[s->queue] = true;
    }
    double pair_back = 0;
    for (size_t i = 0; i < run->n_pairs; i++) {
        const pr_pair *p = &run->pairs[i];
        pair_back =
            fmax(pair_back, -(double)pr_counter_step(p->first, p->second, p->bits) * d->period_ns);
    }
    if (!stamps && !run->n_pairs)
        return pr_result_na(r, "no stamp was written: %s", run->error);
    pr_result_judge(r, fmax(back, pair_back), o->max_backward_ns, "ns");
    pr_result_say(r,
                  "%zu stamps in submission order on %u queue(s) and %zu semaphore-ordered "
                  "pair(s) of submissions",
                  stamps, run->queues, run->n_pairs);
    if (back > 0)
        pr_result_say(r, "; back by %.0f ns at submission %zu", back, where);
    if (pair_back > 0)
        pr_result_say(r, "; a stamp after a semaphore wait %.0f ns before the signalling one",
                      pair_back);
    if (back <= 0 && pair_back <= 0)
        pr_result_say(r, "; none went backwards");
}

void pr_judge_cross_queue(const pr_pair *pairs, size_t n, const pr_device_facts *d,
                          const pr_options *o, pr_result *r)
{
    pr_result_init(r, PR_CROSS_QUEUE_ORDER, -1);
    if (d->queues < 2)
        return pr_result_na(r, "the device has %u queue writing timestamps", d->queues);
    if (!d->calibrated)
        return pr_result_na(r, "without calibrated timestamps queues' stamps need not share a "
                               "clock (only VK_KHR/EXT_calibrated_timestamps ties them to one "
                               "DEVICE domain)");
    double back = 0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        const pr_pair *p = &pairs[i];
        double b = -(double)pr_counter_step(p->first, p->second, p->bits) * d->period_ns;
        if (b > back) {
            back = b;
            worst = i;
        }
    }
    if (!n)
        return pr_result_na(r, "no pair of queues could be measured");
    pr_result_judge(r, back, o->max_backward_ns, "ns");
    pr_result_say(r, "%zu semaphore-ordered pairs across %u queues", n, d->queues);
    if (back > 0)
        pr_result_say(r,
                      "; a stamp on family %u queue %u after the wait is %.0f ns before the "
                      "one on family %u queue %u that signalled",
                      pairs[worst].family_b, pairs[worst].queue_b, back, pairs[worst].family_a,
                      pairs[worst].queue_a);
    else
        pr_result_say(r, "; every stamp after a wait was at or after the signalling one");
}

/* ---- calibration ----------------------------------------------------------------------------- */

void pr_judge_deviation(const pr_calibration *c, size_t n, const pr_device_facts *d,
                        const pr_options *o, pr_result *r)
{
    pr_result_init(r, PR_DEVIATION, -1);
    if (!d->calibrated)
        return pr_result_na(r, "no calibrated timestamps (VK_KHR/EXT_calibrated_timestamps)");
    /* The DEVICE reading minus the host one, against host time: a line
     * (the clocks' rate difference) plus each reading's error, which an
     * honest maxDeviation bounds. */
    const pr_calibration *first = NULL;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, maxdev = 0, mindev = INFINITY;
    size_t k = 0;
    double *x = calloc(n ? n : 1, sizeof *x), *y = calloc(n ? n : 1, sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return pr_result_na(r, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (!c[i].ok || !c[i].offered[PR_HOST_MONOTONIC])
            continue;
        if (!first)
            first = &c[i];
        x[k] = (double)(c[i].host[PR_HOST_MONOTONIC] - first->host[PR_HOST_MONOTONIC]);
        y[k] = (double)pr_counter_step(first->device, c[i].device, d->device_bits) * d->period_ns -
               x[k];
        sx += x[k], sy += y[k], sxx += x[k] * x[k], sxy += x[k] * y[k];
        maxdev = fmax(maxdev, (double)c[i].max_deviation);
        mindev = fmin(mindev, (double)c[i].max_deviation);
        k++;
    }
    if (k < 3) {
        free(x);
        free(y);
        return pr_result_na(r, "%zu of %zu calibrations succeeded", k, n);
    }
    const double den = (double)k * sxx - sx * sx;
    const double slope = den > 0 ? ((double)k * sxy - sx * sy) / den : 0;
    const double icpt = (sy - slope * sx) / (double)k;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < k; i++) {
        const double res = y[i] - (icpt + slope * x[i]);
        lo = fmin(lo, res);
        hi = fmax(hi, res);
    }
    const double span_us = x[k - 1] / 1e3;
    free(x);
    free(y);
    pr_result_judge(r, hi - lo, 2 * maxdev + 2 * d->period_ns + o->deviation_slack_ns, "ns");
    pr_result_say(r,
                  "%zu calibrations back to back over %.0f us: the DEVICE-minus-host offsets "
                  "spread %.0f ns about their trend (%+.1f ppm); reported maxDeviation "
                  "%.0f-%.0f ns allows 2 x %.0f + 2 ticks + %.0f ns slack",
                  k, span_us, hi - lo, slope * 1e6, mindev, maxdev, maxdev, o->deviation_slack_ns);
}

void pr_judge_host_domains(const pr_calibration *c, size_t n, const pr_device_facts *d,
                           const pr_options *o, pr_result *r)
{
    pr_result_init(r, PR_HOST_DOMAINS, -1);
    if (!d->calibrated)
        return pr_result_na(r, "no calibrated timestamps (VK_KHR/EXT_calibrated_timestamps)");
    double worst[PR_HOST_COUNT];
    size_t seen[PR_HOST_COUNT] = { 0 };
    for (int h = 0; h < PR_HOST_COUNT; h++)
        worst[h] = -INFINITY;
    const pr_calibration *first = NULL, *last = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].ok)
            continue;
        first = first ? first : &c[i];
        last = &c[i];
        for (int h = 0; h < PR_HOST_COUNT; h++) {
            if (!c[i].offered[h])
                continue;
            const double v = (double)c[i].host[h];
            worst[h] = fmax(worst[h], fmax((double)c[i].before[h] - v, v - (double)c[i].after[h]));
            seen[h]++;
        }
    }
    double all = -INFINITY;
    size_t domains = 0;
    for (int h = 0; h < PR_HOST_COUNT; h++) {
        if (!seen[h])
            continue;
        all = fmax(all, worst[h]);
        pr_result_say(r, "%s%s: %zu readings, the farthest %s the host's own bracket by %.0f ns",
                      domains++ ? "; " : "", pr_host_clock_name((pr_host_clock)h), seen[h],
                      worst[h] > 0 ? "outside" : "inside", fabs(worst[h]));
    }
    if (!domains)
        return pr_result_na(r, "the driver offers no host time domain");
    pr_result_judge(r, all, o->host_slack_ns, "ns");
    if (first && last != first) {
        /* The host's own clocks, for the record: BOOTTIME - MONOTONIC moves
         * only across a suspend. */
        const double b0 =
            (double)first->before[PR_HOST_BOOTTIME] - (double)first->before[PR_HOST_MONOTONIC];
        const double b1 =
            (double)last->before[PR_HOST_BOOTTIME] - (double)last->before[PR_HOST_MONOTONIC];
        pr_result_say(r, "; host CLOCK_BOOTTIME - CLOCK_MONOTONIC moved %.0f ns", b1 - b0);
    }
}
