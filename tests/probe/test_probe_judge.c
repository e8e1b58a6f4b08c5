/* SPDX-License-Identifier: MIT */
/* gputrace-probe's verdicts (toolkit/probe/pr_judge.c) on made-up
 * measurements: what lavapipe, with one queue family of one queue, a
 * 64-bit nanosecond counter and honest calibrations, cannot show — several
 * queues and families, narrow counters that wrap, counters of another
 * rate, a reset, dishonest deviations — each against a correct device.
 *
 * The made-up device: host time H (ns); its counter reads
 * (H * rate / period + offset) mod 2^bits; each submission's stamps are
 * written 10 and 20 us into a 30 us bracket, between calibrations 1 us
 * before and after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "toolkit/probe/probe.h"

typedef struct fake fake;
struct fake {
    double period; /* reported timestampPeriod */
    double rate;   /* true ticks per reported tick: 1 for a correct device */
    uint32_t bits;
    double offset_ticks; /* of the query counter */
    double calib_offset; /* ticks the calibrated DEVICE domain is off from the queries */
    uint64_t reset_at;   /* host ns at which the counter restarts at 0 (0: never) */
};

static const fake correct = { .period = 1, .rate = 1, .bits = 64, .offset_ticks = 5e6 };

static uint64_t counter(const fake *f, double host, double extra)
{
    double ticks = host * f->rate / f->period + f->offset_ticks + extra;
    if (f->reset_at && host >= (double)f->reset_at) /* back to 0 */
        ticks = (host - (double)f->reset_at) * f->rate / f->period + extra;
    uint64_t v = (uint64_t)llround(ticks);
    return f->bits >= 64 ? v : v & ((1ull << f->bits) - 1);
}

static pr_calibration calibrate(const fake *f, double host)
{
    pr_calibration c = { .ok = true, .max_deviation = 1 };
    c.device = counter(f, host, f->calib_offset);
    c.offered[PR_HOST_MONOTONIC] = true;
    c.host[PR_HOST_MONOTONIC] = (uint64_t)host;
    c.before[PR_HOST_MONOTONIC] = (uint64_t)host - 100;
    c.after[PR_HOST_MONOTONIC] = (uint64_t)host + 100;
    return c;
}

static pr_device_facts facts_of(const fake *f, uint32_t queues)
{
    pr_device_facts d = {
        .period_ns = f->period, .calibrated = true, .queues = queues, .device_bits = f->bits
    };
    d.offered[PR_HOST_MONOTONIC] = true;
    return d;
}

/* A run like pr_run_family's: 4 bursts of 8 submissions, the bursts
 * `gap` ns apart, on `queues` queues in turn; a semaphore pair per queue. */
static pr_family_run make_run(const fake *f, uint32_t queues, double gap)
{
    pr_family_run run = { .family = 0, .valid_bits = f->bits, .queues = queues, .bursts = 4 };
    run.samples = calloc(32, sizeof *run.samples);
    run.pairs = calloc(queues, sizeof *run.pairs);
    assert_non_null(run.samples);
    assert_non_null(run.pairs);
    double h = 1e9;
    for (uint32_t b = 0; b < 4; b++, h += gap) {
        for (uint32_t i = 0; i < 8; i++, h += 50e3) {
            pr_sample *s = &run.samples[run.n_samples++];
            s->queue = i % queues;
            s->burst = b;
            s->pre = calibrate(f, h - 1e3);
            s->before = (uint64_t)h;
            s->top = counter(f, h + 10e3, 0);
            s->bottom = counter(f, h + 20e3, 0);
            s->after = (uint64_t)(h + 30e3);
            s->post = calibrate(f, h + 31e3);
            s->available = true;
        }
    }
    for (uint32_t q = 0; q < queues; q++, h += 50e3)
        run.pairs[run.n_pairs++] = (pr_pair){ .queue_a = q,
                                              .queue_b = q,
                                              .bits = f->bits,
                                              .first = counter(f, h, 0),
                                              .second = counter(f, h + 5e3, 0) };
    return run;
}

static void free_run(pr_family_run *run)
{
    free(run->samples);
    free(run->pairs);
}

static pr_options options(void)
{
    pr_options o;
    pr_options_default(&o);
    return o;
}

/* ---- counters ---------------------------------------------------------------------- */

static void test_counter_step(void **state)
{
    (void)state;
    assert_int_equal(pr_counter_step(100, 150, 64), 50);
    assert_int_equal(pr_counter_step(150, 100, 64), -50);
    /* A 36-bit counter wrapping forward is a small step... */
    const uint64_t top = (1ull << 36) - 10;
    assert_int_equal(pr_counter_step(top, 5, 36), 15);
    /* ...a jump back is negative, however the values look. */
    assert_int_equal(pr_counter_step(5, top, 36), -15);
    assert_int_equal(pr_counter_step(1000, 10, 36), -990);
    /* Bits above the counter's width do not count. */
    assert_int_equal(pr_counter_step(1ull << 40, (1ull << 40) + 7, 36), 7);
}

/* ---- written vs calibrated ----------------------------------------------------------- */

static void test_written_correct(void **state)
{
    (void)state;
    pr_family_run run = make_run(&correct, 1, 100e6);
    pr_device_facts d = facts_of(&correct, 1);
    pr_options o = options();
    pr_result r;
    pr_judge_written_vs_calibrated(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    /* The nearest stamp is 10 us inside its bracket, and the allowance
     * (maxDeviation, 2 ticks, 100 ppm of 11 us) widens it: 10004 ns. */
    assert_true(r.measured < -10000 && r.measured > -10010);
    free_run(&run);
}

static void test_written_calibration_offset(void **state)
{
    (void)state;
    fake f = correct;
    f.calib_offset = 11.85e9; /* AMD GFX11.5: another counter */
    pr_family_run run = make_run(&f, 1, 100e6);
    pr_device_facts d = facts_of(&f, 1);
    pr_options o = options();
    pr_result r;
    pr_judge_written_vs_calibrated(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    /* Off by the offset, less the stamp's distance from its bracket's edge
     * (10 us) and the period's allowance over the distance the calibration
     * claims (100 ppm of 11.85 s). */
    const double expect = 11.85e9 - 10e3 - 11.85e9 * 100e-6;
    assert_true(fabs(r.measured - expect) < 10);
    free_run(&run);
}

static void test_written_wrapping_counter(void **state)
{
    (void)state;
    fake f = { .period = 52.083, .rate = 1, .bits = 36 };
    /* The counter wraps between the first and second bursts. */
    f.offset_ticks = (double)(1ull << 36) - (1e9 + 2e6) / 52.083;
    pr_family_run run = make_run(&f, 2, 100e6);
    pr_device_facts d = facts_of(&f, 2);
    pr_options o = options();
    pr_result r;
    pr_judge_written_vs_calibrated(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    pr_judge_valid_bits(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    assert_non_null(strstr(r.detail, "1 wrap(s)"));
    pr_judge_order(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    pr_judge_period(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    assert_true(fabs(r.measured) < 1);
    free_run(&run);
}

static void test_written_no_calibration(void **state)
{
    (void)state;
    pr_family_run run = make_run(&correct, 1, 100e6);
    pr_device_facts d = facts_of(&correct, 1);
    d.calibrated = false;
    pr_options o = options();
    pr_result r;
    pr_judge_written_vs_calibrated(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_NA);
    /* The period is still measured, from the written stamps alone. */
    pr_judge_period(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    free_run(&run);
}

/* ---- period --------------------------------------------------------------------------- */

static void test_period_misreported(void **state)
{
    (void)state;
    fake f = correct;
    f.rate = 1.001; /* ticks 1000 ppm faster than timestampPeriod says */
    pr_family_run run = make_run(&f, 1, 330e6);
    pr_device_facts d = facts_of(&f, 1);
    pr_options o = options();
    pr_result r;
    pr_judge_period(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(fabs(r.measured - (1 / 1.001 - 1) * 1e6) < 0.5);
    /* Within the bound: 50 ppm passes the default 100. */
    f.rate = 1.00005;
    free_run(&run);
    run = make_run(&f, 1, 330e6);
    pr_judge_period(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    free_run(&run);
}

/* ---- valid bits, order ------------------------------------------------------------------ */

static void test_valid_bits_exceeded(void **state)
{
    (void)state;
    fake f = correct;
    f.offset_ticks = (double)(1ull << 41);
    pr_family_run run = make_run(&f, 1, 100e6);
    run.valid_bits = 40; /* reported, while values use 42 bits */
    pr_device_facts d = facts_of(&f, 1);
    pr_options o = options();
    pr_result r;
    pr_judge_valid_bits(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(r.measured == 42 && r.bound == 40);
    free_run(&run);
}

static void test_reset_is_no_wrap(void **state)
{
    (void)state;
    /* A 36-bit counter high in its range restarting at 0 looks like a
     * forward wrap of almost its whole range: inconsistent with host time. */
    fake f = { .period = 1, .rate = 1, .bits = 36, .offset_ticks = 0.9 * (double)(1ull << 36) };
    f.reset_at = (uint64_t)(1e9 + 150e6);
    pr_family_run run = make_run(&f, 1, 100e6);
    pr_device_facts d = facts_of(&f, 1);
    pr_options o = options();
    pr_result r;
    pr_judge_valid_bits(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_string_equal(r.unit, "ns");
    free_run(&run);
    /* A 64-bit counter restarting steps back: the order check's. */
    f = correct;
    f.offset_ticks = 1e12;
    f.reset_at = (uint64_t)(1e9 + 150e6);
    run = make_run(&f, 1, 100e6);
    pr_judge_order(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(r.measured > 1e12);
    free_run(&run);
}

static void test_order_pair_backwards(void **state)
{
    (void)state;
    pr_family_run run = make_run(&correct, 2, 100e6);
    pr_device_facts d = facts_of(&correct, 2);
    pr_options o = options();
    pr_result r;
    pr_judge_order(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    run.pairs[1].second = run.pairs[1].first - 300;
    pr_judge_order(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(r.measured == 300);
    o.max_backward_ns = 300;
    pr_judge_order(&run, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    free_run(&run);
}

/* ---- across queues and families ---------------------------------------------------------- */

static void test_cross_queue(void **state)
{
    (void)state;
    pr_options o = options();
    pr_result r;
    /* Family 0 (64 bits) and family 1 (36 bits) read one counter. */
    const uint64_t t = 0x123456789abcull;
    pr_pair pairs[4] = {
        { 0, 0, 1, 0, 36, t, (t + 900) & ((1ull << 36) - 1) },
        { 1, 0, 0, 0, 36, (t + 2000) & ((1ull << 36) - 1), t + 2500 },
        { 0, 0, 0, 1, 64, t + 3000, t + 3100 },
        { 0, 1, 0, 0, 64, t + 4000, t + 4200 },
    };
    pr_device_facts d = facts_of(&correct, 3);
    pr_judge_cross_queue(pairs, 4, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    /* Family 1 ahead by 5 us: a stamp after its wait lands before the
     * signalling one on family 0. */
    pairs[1].first = (t + 2000 + 5000) & ((1ull << 36) - 1);
    pr_judge_cross_queue(pairs, 4, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(r.measured == 4500);
    assert_non_null(strstr(r.detail, "family 0 queue 0"));
    /* One queue, or no calibration: nothing to compare. */
    d.queues = 1;
    pr_judge_cross_queue(pairs, 4, &d, &o, &r);
    assert_int_equal(r.verdict, PR_NA);
    d = facts_of(&correct, 3);
    d.calibrated = false;
    pr_judge_cross_queue(pairs, 4, &d, &o, &r);
    assert_int_equal(r.verdict, PR_NA);
}

/* ---- calibrations ---------------------------------------------------------------------------- */

static void calibrations(pr_calibration *c, size_t n, double noise, uint64_t reported, double ppm)
{
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const double h = 2e9 + (double)i * 300;
        c[i] = calibrate(&correct, h);
        c[i].device = (uint64_t)llround(h * (1 + ppm * 1e-6) + (double)(x % 1000) / 1000 * noise);
        c[i].max_deviation = reported;
    }
}

static void test_deviation(void **state)
{
    (void)state;
    pr_calibration c[64];
    pr_device_facts d = facts_of(&correct, 1);
    pr_options o = options();
    pr_result r;
    /* Honest: noise within the reported deviation, drift removed. */
    calibrations(c, 64, 2000, 1000, 40);
    pr_judge_deviation(c, 64, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    /* Understated: 20 us of noise reported as 1 ns. */
    calibrations(c, 64, 20000, 1, 0);
    pr_judge_deviation(c, 64, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(r.measured > 15000 && r.measured <= 20000);
    assert_true(r.bound == 4);
    d.calibrated = false;
    pr_judge_deviation(c, 64, &d, &o, &r);
    assert_int_equal(r.verdict, PR_NA);
}

static void test_host_domains(void **state)
{
    (void)state;
    pr_calibration c[8];
    calibrations(c, 8, 0, 1, 0);
    pr_device_facts d = facts_of(&correct, 1);
    pr_options o = options();
    pr_result r;
    for (int i = 0; i < 8; i++) {
        c[i].offered[PR_HOST_MONOTONIC_RAW] = true;
        c[i].before[PR_HOST_MONOTONIC_RAW] = 500;
        c[i].host[PR_HOST_MONOTONIC_RAW] = 550;
        c[i].after[PR_HOST_MONOTONIC_RAW] = 600;
    }
    pr_judge_host_domains(c, 8, &d, &o, &r);
    assert_int_equal(r.verdict, PR_PASS);
    assert_true(r.measured == -50);
    /* A driver answering BOOTTIME for MONOTONIC_RAW after a suspend. */
    c[3].host[PR_HOST_MONOTONIC_RAW] += 1000000000;
    pr_judge_host_domains(c, 8, &d, &o, &r);
    assert_int_equal(r.verdict, PR_FAIL);
    assert_true(r.measured == 1000000000 - 50);
    assert_non_null(strstr(r.detail, "CLOCK_MONOTONIC_RAW"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_step),
        cmocka_unit_test(test_written_correct),
        cmocka_unit_test(test_written_calibration_offset),
        cmocka_unit_test(test_written_wrapping_counter),
        cmocka_unit_test(test_written_no_calibration),
        cmocka_unit_test(test_period_misreported),
        cmocka_unit_test(test_valid_bits_exceeded),
        cmocka_unit_test(test_reset_is_no_wrap),
        cmocka_unit_test(test_order_pair_backwards),
        cmocka_unit_test(test_cross_queue),
        cmocka_unit_test(test_deviation),
        cmocka_unit_test(test_host_domains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
