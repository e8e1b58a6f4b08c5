/* SPDX-License-Identifier: MIT */
/* test_gpu_clock — unit tests of layer/gpu_clock.c (tick conversion,
 * counter extension, drift-driven cadence, readings, clock ids) and
 * layer/handle_table.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layer/gpu_clock.h"
#include "layer/handle_table.h"

/* handle_table.c allocates through the layer's allocator helpers. */
void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope)
{
    (void)alloc, (void)scope;
    return calloc(1, size);
}

void gt_free(const gt_allocator *alloc, void *ptr)
{
    (void)alloc;
    free(ptr);
}

__extension__ typedef unsigned __int128 u128;

/* ---- domain ----------------------------------------------------------------- */

/* timestampPeriod values real drivers report (ns per tick). */
static const float periods[] = {
    1.0f,       /* lavapipe, most desktop GPUs */
    52.083332f, /* 19.2 MHz */
    83.333336f, /* 12 MHz */
    41.666668f, /* 24 MHz */
    10.0f,      /* 100 MHz */
    0.5f,       /* 2 GHz */
    38.461540f, /* 26 MHz */
};

static void period_is_exact(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof periods / sizeof periods[0]; i++) {
        gc_domain d;
        assert_true(gc_domain_init(&d, periods[i], 64));
        /* The float's exact value times 2^32 is an integer: no rounding. */
        long double want = (long double)periods[i] * 4294967296.0L;
        assert_true((long double)d.period_fp == want);
    }
}

static void bad_period(void **state)
{
    (void)state;
    gc_domain d;
    assert_false(gc_domain_init(&d, 0.0f, 64));
    assert_int_equal(d.period_fp, UINT64_C(1) << 32);
    assert_false(gc_domain_init(&d, -1.0f, 64));
    assert_false(gc_domain_init(&d, 1.0f, 0));
    assert_int_equal(d.valid_bits, 64);
}

/* Converting an absolute count is one linear function: the result for
 * t + k differs from t's by k's own conversion (within the 1 ns floor), at
 * any t, so nothing accumulates over hours. */
static void no_drift_over_hours(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof periods / sizeof periods[0]; i++) {
        gc_domain d;
        gc_domain_init(&d, periods[i], 64);
        /* 100 hours of ticks. */
        const uint64_t hours100 = (uint64_t)(100.0L * 3600e9L / (long double)periods[i]);
        for (uint64_t t = 0; t < hours100; t += hours100 / 97 + 12345) {
            uint64_t ns = gc_ticks_to_ns(&d, t);
            /* Against the exact product. */
            u128 exact = (u128)t * d.period_fp;
            assert_true(ns == (uint64_t)(exact >> 32));
            /* Against long double arithmetic of the float period: < 1 ns. */
            long double ref = (long double)t * (long double)periods[i];
            long double err = (long double)ns - ref;
            assert_true(err > -1.0L && err <= 0.0L);
            const uint64_t k = 1000003;
            int64_t step = (int64_t)(gc_ticks_to_ns(&d, t + k) - ns);
            int64_t want = (int64_t)gc_ticks_to_ns(&d, k);
            assert_true(step - want >= -1 && step - want <= 1);
        }
    }
}

static void saturates(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 83.333336f, 64);
    assert_int_equal(gc_ticks_to_ns(&d, UINT64_MAX), UINT64_MAX);
}

/* ---- extension ---------------------------------------------------------------- */

static void extend_36_bits(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 1.0f, 36);
    const uint64_t wrap = UINT64_C(1) << 36;
    static const struct {
        uint64_t reference, raw, want;
    } cases[] = {
        { wrap - 10, 5, wrap + 5 },                   /* forward across the wrap */
        { wrap + 5, wrap - 10, wrap - 10 },           /* backward across it */
        { 3 * wrap + 100, 200, 3 * wrap + 200 },      /* same epoch */
        { 3 * wrap + 100, wrap - 50, 3 * wrap - 50 }, /* just before the epoch */
        { 5, wrap - 3, wrap - 3 },                    /* nothing to borrow at start */
        { 7 * wrap + 1, 7 * wrap + 1, 7 * wrap + 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(gc_extend(&d, cases[i].reference, cases[i].raw), cases[i].want);

    /* Half a wrap either side is the reach. */
    uint64_t ref = 10 * wrap;
    assert_int_equal(gc_extend(&d, ref, (ref + wrap / 2 - 1) & (wrap - 1)), ref + wrap / 2 - 1);
    assert_int_equal(gc_extend(&d, ref, (ref - wrap / 2) & (wrap - 1)), ref - wrap / 2);
}

static void extend_64_bits(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 1.0f, 64);
    assert_int_equal(gc_extend(&d, 12345, UINT64_MAX - 3), UINT64_MAX - 3);
}

/* ---- calibrated readings across a counter wrap ------------------------------ */

/* A fake vkGetCalibratedTimestamps: DEVICE is a 36-bit counter (masked),
 * MONOTONIC the unmasked value plus an offset. */
static uint64_t fake_ticks;

static VkResult VKAPI_PTR fake_calibrated(VkDevice device, uint32_t count,
                                          const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
                                          uint64_t *deviation)
{
    (void)device;
    for (uint32_t i = 0; i < count; i++)
        ts[i] = infos[i].timeDomain == VK_TIME_DOMAIN_DEVICE_EXT
                    ? fake_ticks & ((UINT64_C(1) << 36) - 1)
                    : fake_ticks + 1000000000;
    *deviation = 10;
    return VK_SUCCESS;
}

static void calibration_across_wrap(void **state)
{
    (void)state;
    const uint64_t wrap = UINT64_C(1) << 36, ms = 1000000;
    const VkQueueFamilyProperties families[3] = { { .timestampValidBits = 64 },
                                                  { .timestampValidBits = 0 },
                                                  { .timestampValidBits = 36 } };
    assert_int_equal(gc_device_valid_bits(families, 3), 36);
    assert_int_equal(gc_device_valid_bits(families, 2), 64);
    assert_int_equal(gc_device_valid_bits(NULL, 0), 64);

    gc_domain d;
    gc_domain_init(&d, 1.0f, gc_device_valid_bits(families, 3));
    gc_clock c;
    gc_clock_init(&c, &d, GC_SOURCE_CALIBRATED, false, 1000);
    gc_reading r;
    fake_ticks = 3 * wrap - 100 * ms; /* 100 ms before a wrap */
    assert_int_equal(gc_calibrate(&c, NULL, fake_calibrated, 2, &r), VK_SUCCESS);
    assert_true(gc_accept(&c, &r, 0));
    const uint64_t first = c.last.device_ticks;
    assert_int_equal(first, fake_ticks & (wrap - 1));
    /* Every reading after the wrap is accepted and keeps counting up. */
    for (int i = 1; i <= 6; i++) {
        fake_ticks += 50 * ms;
        assert_int_equal(gc_calibrate(&c, NULL, fake_calibrated, 2, &r), VK_SUCCESS);
        assert_true(gc_accept(&c, &r, 0));
        assert_int_equal(c.last.device_ticks, first + (uint64_t)i * 50 * ms);
    }
    assert_true(c.last.device_ticks > wrap);
    assert_int_equal(c.rejected, 0);
    /* A query value written after the wrap converts past the reference. */
    assert_int_equal(gc_convert(&c, (fake_ticks + 5) & (wrap - 1)), c.last.device_ticks + 5);
}

/* ---- cadence ------------------------------------------------------------------- */

static void interval_from_drift(void **state)
{
    (void)state;
    const uint64_t ms = 1000000;
    /* No drift: double up to the maximum. */
    assert_int_equal(gc_next_interval(0.0, 1000, 50 * ms), 100 * ms);
    assert_int_equal(gc_next_interval(0.0, 1000, 8000 * ms), GC_INTERVAL_MAX_NS);
    /* 1 ppm with a 1 us budget: 1 s, reached by doubling. */
    assert_int_equal(gc_next_interval(1e-6, 1000, 800 * ms), 1000 * ms);
    assert_int_equal(gc_next_interval(-1e-6, 1000, 200 * ms), 400 * ms);
    /* 50 ppm wants 20 ms: the floor. */
    assert_int_equal(gc_next_interval(50e-6, 1000, 10000 * ms), GC_INTERVAL_MIN_NS);
    /* A looser budget. */
    assert_int_equal(gc_next_interval(50e-6, 100000, 10000 * ms), 2000 * ms);
}

static gc_reading reading(uint64_t boot, uint64_t dev, uint64_t deviation)
{
    gc_reading r = {
        .device_ticks = dev,
        .device_ns = dev,
        .monotonic_ns = boot - 1000,
        .boottime_ns = boot,
        .monotonic_raw_ns = boot - 2000,
        .deviation_ns = deviation,
    };
    return r;
}

static void accept_measures_drift(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 1.0f, 64);
    gc_clock c;
    gc_clock_init(&c, &d, GC_SOURCE_CALIBRATED, false, 1000);
    const uint64_t s = 1000000000, t0 = 100 * s;
    assert_true(gc_accept(
        &c,
        &(gc_reading){
            .device_ns = 5, .boottime_ns = t0, .monotonic_ns = t0, .monotonic_raw_ns = t0 },
        0));
    assert_int_equal(c.interval_ns, GC_INTERVAL_FIRST_NS);
    /* Device 20 ppm fast over 1 s: wants 50 ms. */
    gc_reading r = reading(t0 + s, 5 + s + 20000, 1);
    assert_true(gc_accept(&c, &r, 0));
    assert_true(c.drift > 19.9e-6 && c.drift < 20.1e-6);
    /* budget / (drift - what the deviations could fake), no longer than
     * what the worst drift they allow keeps within the budget: 50 ms,
     * give or take what a ns of deviation moves it. */
    assert_true(c.interval_ns > GC_INTERVAL_MIN_NS - GC_INTERVAL_MIN_NS / 1000 &&
                c.interval_ns < GC_INTERVAL_MIN_NS + 10000);
    /* Going backwards is refused. */
    gc_reading back = reading(t0 + 2 * s, 4, 1);
    assert_false(gc_accept(&c, &back, 0));
    assert_int_equal(c.rejected, 1);
}

/* A driver that reports microseconds of maxDeviation (an NVIDIA H200:
 * ~2.8 us) for readings much closer than that: two readings 10 ms apart
 * prove nothing about 13 ppm of drift, but half a second's do; the
 * cadence must leave its first short interval once they do (it stayed at
 * 10 ms on the H200 before). */
static void accept_measures_drift_over_long_baselines(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 1.0f, 64);
    gc_clock c;
    gc_clock_init(&c, &d, GC_SOURCE_CALIBRATED, false, 1000);
    const uint64_t ms = 1000000;
    uint64_t boot = 1000 * ms;
    const uint64_t dev0 = 5 * ms;
    for (int i = 0; i < 200 && boot < 4000 * ms; i++) {
        const uint64_t t = boot - 1000 * ms;
        gc_reading r = reading(boot, dev0 + t - t * 13 / 1000000, 2800);
        assert_true(gc_accept(&c, &r, 0));
        boot += c.interval_ns;
    }
    /* budget / (13 ppm + what 2 x 2.8 us over >= 0.5 s could fake) */
    assert_true(c.interval_ns >= 40 * ms && c.interval_ns <= 80 * ms);
    assert_true(c.drift < -12e-6 && c.drift > -14e-6);
}

/* The cadence never outlasts a quarter of the counter's wrap: 32 valid
 * bits at 1 ns wrap in 4.3 s (what one H200 queue family reports). */
static void interval_within_a_quarter_wrap(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 1.0f, 32);
    gc_clock c;
    gc_clock_init(&c, &d, GC_SOURCE_CALIBRATED, false, 1000);
    assert_int_equal(c.interval_max_ns, (UINT64_C(1) << 30));
    const uint64_t ms = 1000000;
    uint64_t boot = 1000 * ms;
    for (int i = 0; i < 20; i++) {
        gc_reading r = reading(boot, (boot - 990 * ms) & 0xffffffffu, 1);
        r.device_ticks = r.device_ns;
        gc_reading e = r;
        e.device_ticks =
            c.have_last ? gc_extend(&d, c.last.device_ticks, r.device_ticks) : r.device_ticks;
        e.device_ns = gc_ticks_to_ns(&d, e.device_ticks);
        assert_true(gc_accept(&c, &e, 0));
        assert_true(c.interval_ns <= c.interval_max_ns);
        boot += c.interval_ns;
    }
    assert_int_equal(c.rejected, 0); /* every extension across the wraps was right */
    gc_domain_init(&d, 1.0f, 64);
    gc_clock_init(&c, &d, GC_SOURCE_CALIBRATED, false, 1000);
    assert_int_equal(c.interval_max_ns, GC_INTERVAL_MAX_NS);
}

static void accept_ignores_noise(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 1.0f, 64);
    gc_clock c;
    gc_clock_init(&c, &d, GC_SOURCE_CALIBRATED, false, 1000);
    const uint64_t ms = 1000000;
    uint64_t boot = 1000 * ms, dev = 7 * ms;
    gc_reading r = reading(boot, dev, 30);
    assert_true(gc_accept(&c, &r, 0));
    /* Readings that differ only within their deviation: interval doubles
     * (from the short first one to the shortest regular one at once). */
    uint64_t prev = c.interval_ns;
    assert_int_equal(prev, GC_INTERVAL_FIRST_NS);
    for (int i = 0; i < 10; i++) {
        boot += prev;
        dev += prev + (i % 2 ? 25 : -25);
        r = reading(boot, dev, 30);
        assert_true(gc_accept(&c, &r, 0));
        uint64_t want = 2 * prev < GC_INTERVAL_MAX_NS ? 2 * prev : GC_INTERVAL_MAX_NS;
        want = want > GC_INTERVAL_MIN_NS ? want : GC_INTERVAL_MIN_NS;
        assert_true(c.interval_ns == want);
        prev = c.interval_ns;
    }
    assert_int_equal(c.interval_ns, GC_INTERVAL_MAX_NS);
}

static void bracket_midpoint(void **state)
{
    (void)state;
    gc_domain d;
    gc_domain_init(&d, 2.0f, 64);
    gc_clock c;
    gc_clock_init(&c, &d, GC_SOURCE_BRACKET, false, 1000);
    const gc_host_time before = { 1000, 5000, 900, 10 };
    const gc_host_time after = { 3001, 7001, 2901, 12 };
    gc_reading r;
    gc_bracket(&c, 777, &before, &after, &r);
    assert_int_equal(r.device_ns, 1554);
    assert_int_equal(r.monotonic_ns, 2000);
    assert_int_equal(r.boottime_ns, 6000);
    assert_int_equal(r.monotonic_raw_ns, 1900);
    assert_int_equal(r.deviation_ns, 1001);
    assert_int_equal(r.host_uncertainty_ns, 12);
    /* A wide first bracket is refused but kept; the narrowest kept one is
    * taken when no better one can come. */
    gc_host_time late = after;
    late.monotonic_ns += 10 * GC_BRACKET_MAX_DEVIATION_NS;
    gc_bracket(&c, 777, &before, &late, &r);
    assert_false(gc_accept(&c, &r, 0));
    gc_host_time later = late;
    later.monotonic_ns += GC_BRACKET_MAX_DEVIATION_NS;
    gc_reading wider;
    gc_bracket(&c, 777, &before, &later, &wider);
    assert_false(gc_accept(&c, &wider, 0));
    assert_true(gc_accept_best(&c, 0));
    assert_int_equal(c.last.deviation_ns, r.deviation_ns);
    assert_false(gc_accept_best(&c, 0));
    /* ... and after enough refusals a wide one is taken anyway. */
    gc_clock c2;
    gc_clock_init(&c2, &d, GC_SOURCE_BRACKET, false, 1000);
    for (int i = 0; i + 1 < GC_BRACKET_FIRST_TRIES; i++)
        assert_false(gc_accept(&c2, &r, 0));
    assert_true(gc_accept(&c2, &r, 0));
    /* Once there is a reference, wide brackets are refused. */
    gc_host_time b2 = { before.monotonic_ns + 100000000, before.boottime_ns + 100000000,
                        before.monotonic_raw_ns + 100000000, 10 };
    gc_host_time a2 = b2;
    a2.monotonic_ns += 4 * GC_BRACKET_MAX_DEVIATION_NS;
    gc_bracket(&c, 50000777, &b2, &a2, &r);
    assert_false(gc_accept(&c, &r, 0));
}

/* ---- clock ids ------------------------------------------------------------------- */

static void fnv1a(void **state)
{
    (void)state;
    /* Published FNV-1a 32-bit test vectors. */
    assert_int_equal(gc_fnv1a32(""), 0x811c9dc5u);
    assert_int_equal(gc_fnv1a32("a"), 0xe40c292cu);
    assert_int_equal(gc_fnv1a32("foobar"), 0xbf9cf968u);
    uint32_t id = gc_global_clock_id("gputrace/vk/00/pid1/dev0");
    assert_true(id >= 0x80000000u);
    assert_int_equal(id, gc_fnv1a32("gputrace/vk/00/pid1/dev0") | 0x80000000u);
}

/* ---- handle table ------------------------------------------------------------------ */

static void handle_table(void **state)
{
    (void)state;
    ht_table t;
    ht_init(&t, NULL);
    assert_null(ht_get(&t, 42));
    const uint64_t n = 20000;
    for (uint64_t i = 1; i <= n; i++)
        assert_true(ht_put(&t, i * 0x1000, (void *)(uintptr_t)i));
    assert_int_equal(t.count, n);
    /* Remove every third, in a scattered order. */
    for (uint64_t i = 1; i <= n; i++) {
        uint64_t k = (i * 7919) % n + 1;
        if (k % 3 == 0)
            assert_ptr_equal(ht_remove(&t, k * 0x1000), (void *)(uintptr_t)k);
    }
    for (uint64_t i = 1; i <= n; i++) {
        void *v = ht_get(&t, i * 0x1000);
        if (i % 3 == 0)
            assert_null(v);
        else
            assert_ptr_equal(v, (void *)(uintptr_t)i);
    }
    assert_true(ht_put(&t, 3 * 0x1000, (void *)1));
    assert_true(ht_put(&t, 3 * 0x1000, (void *)2)); /* replace */
    assert_ptr_equal(ht_get(&t, 3 * 0x1000), (void *)2);
    assert_null(ht_remove(&t, 999));
    ht_finish(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(period_is_exact),
        cmocka_unit_test(bad_period),
        cmocka_unit_test(no_drift_over_hours),
        cmocka_unit_test(saturates),
        cmocka_unit_test(extend_36_bits),
        cmocka_unit_test(extend_64_bits),
        cmocka_unit_test(calibration_across_wrap),
        cmocka_unit_test(interval_from_drift),
        cmocka_unit_test(accept_measures_drift),
        cmocka_unit_test(accept_ignores_noise),
        cmocka_unit_test(accept_measures_drift_over_long_baselines),
        cmocka_unit_test(interval_within_a_quarter_wrap),
        cmocka_unit_test(bracket_midpoint),
        cmocka_unit_test(fnv1a),
        cmocka_unit_test(handle_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
