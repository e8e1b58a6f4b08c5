/* SPDX-License-Identifier: MIT */
/* test_snapshot_placement — layer/snapshot_placement.c: the clock model
 * (interpolation between readings, drift beyond them, noise gating), the
 * placement rules one by one, and a simulation of a collector writing
 * submissions while calibrations arrive, converted the way trace
 * processors convert (the newest snapshot read so far at or before the
 * timestamp, the first one before all): every submission keeps one
 * offset, consecutive submissions keep their order, and the conversion
 * error stays within the budget.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layer/snapshot_placement.h"

#define BUDGET 1000u

/* A reading of a device clock that is `offset` ns behind BOOTTIME at
 * device 0 and runs `drift` fast: host = (device + offset') / (1 + drift). */
static sp_point reading_at(uint64_t device, int64_t offset, double drift)
{
    const double host = (double)device / (1.0 + drift) + (double)offset;
    const uint64_t boot = (uint64_t)(host + 0.5);
    sp_point p = { device, boot, boot - 7000, boot - 5000 };
    return p;
}

static void model_interpolates_and_extrapolates(void **state)
{
    (void)state;
    sp_model m = { 0 };
    const double drift = 20e-6;
    for (uint64_t t = 1000000000; t <= 3000000000; t += 50000000) {
        sp_point r = reading_at(t, 1000000, drift);
        sp_model_update(&m, &r, 40);
    }
    /* Measured over a one-second baseline: 20 ppm within noise. */
    assert_true(m.drift > 19.8e-6 && m.drift < 20.2e-6);
    /* Between readings: on the line through them (rounding only). */
    for (uint64_t t = 2000000000 + 12345; t < 3000000000; t += 77777777) {
        sp_point want = reading_at(t, 1000000, drift), got = sp_extrapolate(&m, t);
        assert_true(llabs((long long)(got.boottime_ns - want.boottime_ns)) <= 2);
        assert_int_equal(got.boottime_ns - got.monotonic_ns, 7000);
    }
    /* Beyond the newest: with the drift (0.2 s out, < 10 ns off). */
    sp_point want = reading_at(3200000000u, 1000000, drift), got = sp_extrapolate(&m, 3200000000u);
    assert_true(llabs((long long)(got.boottime_ns - want.boottime_ns)) < 10);
    /* The device instant of a host time inverts it. */
    assert_true(llabs((long long)(sp_device_at(&m, want.boottime_ns) - 3200000000u)) < 10);
}

static void model_ignores_drift_within_noise(void **state)
{
    (void)state;
    sp_model m = { 0 };
    /* Two readings 50 ms apart, 1 ppm apart, each uncertain by 40 ns:
     * 50 ns of apparent drift could be noise. */
    sp_point a = reading_at(1000000000, 0, 0), b = reading_at(1050000000, 0, 0);
    b.boottime_ns -= 50;
    b.monotonic_ns -= 50;
    b.monotonic_raw_ns -= 50;
    sp_model_update(&m, &a, 40);
    sp_model_update(&m, &b, 40);
    assert_true(m.drift == 0.0);
}

static uint64_t rnd(uint64_t *s);

/* Readings reported as uncertain by 3 us that scatter by 100 ns: once a
 * few have come, the model's noise is what they scatter, not what they
 * report (an NVIDIA H200: maxDeviation ~2.8 us, spread ~0.2 us). */
static void model_noise_is_what_readings_scatter(void **state)
{
    (void)state;
    sp_model m = { 0 };
    uint64_t seed = 5;
    for (int i = 0; i < 40; i++) {
        const int64_t noise = (int64_t)(rnd(&seed) % 201) - 100;
        sp_point r = reading_at(1000000000 + (uint64_t)i * 50000000, 1000 + noise, 10e-6);
        sp_model_update(&m, &r, 3000);
        if (i < 2)
            assert_int_equal(sp_uncertainty(&m, r.device_ns), 3000);
    }
    assert_true(sp_uncertainty(&m, m.reading.device_ns) <= 250);
    assert_true(sp_uncertainty(&m, m.reading.device_ns) >= 20);
}

/* A state with one published point (at `published_at`) and a model of one
 * newer reading 100 ms later whose offset moved by `step`. Windows just
 * after that reading see the step whole. */
static void setup_published(sp_state *st, sp_model *m, uint64_t published_at, int64_t step)
{
    sp_init(st, BUDGET);
    memset(m, 0, sizeof *m);
    sp_point first = reading_at(published_at, 1000000, 0);
    sp_model_update(m, &first, 1);
    sp_point out;
    assert_int_equal(sp_at_reading(st, m, 0, false, &out), SP_AT_READING);
    sp_published(st, m, SP_AT_READING, &out);
    sp_point next = reading_at(published_at + 100000000, 1000000 + step, 0);
    sp_model_update(m, &next, 1);
    sp_reading_accepted(st);
}

static void first_snapshot_at_its_reading(void **state)
{
    (void)state;
    sp_state st;
    sp_init(&st, BUDGET);
    sp_model m = { 0 };
    sp_point out;
    assert_int_equal(sp_at_reading(&st, &m, 0, false, &out), SP_KEEP); /* no reading yet */
    sp_point r = reading_at(5000, 10, 0);
    sp_model_update(&m, &r, 1);
    sp_window w = { .written_end = 9000, .next_start = 9500, .next_end = 9900, .horizon = 0 };
    /* Whatever the window: the first snapshot converts everything. */
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_AT_READING);
    assert_memory_equal(&out, &r, sizeof r);
}

static void idle_reading_published_where_it_was_taken(void **state)
{
    (void)state;
    sp_state st;
    sp_model m;
    setup_published(&st, &m, 1000000000, -5);
    sp_point out;
    /* Work written after the reading's instant: not there. */
    assert_int_equal(sp_at_reading(&st, &m, 1100000001, false, &out), SP_KEEP);
    /* Work ended right before it, less than the step before: not there. */
    assert_int_equal(sp_at_reading(&st, &m, 1099999998, false, &out), SP_KEEP);
    assert_int_equal(sp_at_reading(&st, &m, 1099999000, false, &out), SP_AT_READING);
    assert_int_equal(out.device_ns, 1100000000);
    sp_published(&st, &m, SP_AT_READING, &out);
    assert_int_equal(st.max_step_ns, 5);
    assert_false(st.reading_unpublished);
    assert_int_equal(sp_at_reading(&st, &m, 0, false, &out), SP_KEEP); /* nothing new */
}

static void gap_takes_the_snapshot(void **state)
{
    (void)state;
    sp_state st;
    sp_model m;
    setup_published(&st, &m, 1000000000, -30);
    sp_point out;
    sp_window w = { .written_end = 1100100000,
                    .next_start = 1100110000,
                    .next_end = 1100200000,
                    .horizon = UINT64_MAX };
    assert_true(sp_wants(&st, &m, w.next_start, w.next_end));
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_IN_GAP);
    /* As late as safe: the next submission's start. */
    assert_int_equal(out.device_ns, w.next_start);
    assert_true(llabs((long long)(sp_offset(&out) - sp_offset(&st.published) + 30)) <= 1);
    /* The other queue's work may begin earlier: the snapshot goes before it. */
    w.horizon = 1100105000;
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_IN_GAP);
    assert_int_equal(out.device_ns, 1100105000);
    /* ... but not before work already written. */
    w.horizon = 1100099000;
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_KEEP);
}

static void gap_narrower_than_the_step_is_skipped(void **state)
{
    (void)state;
    sp_state st;
    sp_model m;
    setup_published(&st, &m, 1000000000, -30);
    sp_point out;
    sp_window w = { .written_end = 1100100000,
                    .next_start = 1100100020, /* 20 ns gap, offset moves 30 ns back */
                    .next_end = 1100200000,
                    .horizon = UINT64_MAX };
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_KEEP);
    /* A step forward needs no room: the later work moves away. */
    setup_published(&st, &m, 1000000000, +30);
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_IN_GAP);
    /* Back to back (no gap at all): kept, the error is small. */
    w.next_start = w.written_end;
    setup_published(&st, &m, 1000000000, -30);
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_KEEP);
}

static void large_error_forces_a_snapshot(void **state)
{
    (void)state;
    sp_state st;
    sp_model m;
    setup_published(&st, &m, 1000000000, -(int64_t)BUDGET); /* the offset moved a whole budget */
    sp_point out;
    sp_window w = { .written_end = 1100100000,
                    .next_start = 1100099000, /* overlaps work written: no gap */
                    .next_end = 1100200000,
                    .horizon = UINT64_MAX };
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_FORCED);
    assert_int_equal(out.device_ns, w.next_start);
    /* Not inside other unwritten work either. */
    w.horizon = w.next_start - 500;
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_FORCED);
    assert_int_equal(out.device_ns, w.horizon);
    w.horizon = UINT64_MAX;
    sp_published(&st, &m, SP_FORCED, &out);
    assert_int_equal(st.count[SP_FORCED], 1);
    assert_true(st.max_forced_step_ns >= BUDGET - 2);
    /* A small error is not worth breaking the order for. */
    setup_published(&st, &m, 1000000000, -(int64_t)BUDGET / 4);
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_KEEP);
}

static void snapshots_never_go_back(void **state)
{
    (void)state;
    sp_state st;
    sp_model m;
    setup_published(&st, &m, 1000000000, -5);
    sp_point out;
    /* A submission older than the published snapshot: nothing before it. */
    sp_window w = {
        .written_end = 0, .next_start = 999000000, .next_end = 999500000, .horizon = UINT64_MAX
    };
    assert_int_equal(sp_before_submission(&st, &m, &w, &out), SP_KEEP);
}

/* ---- simulation ---------------------------------------------------------------- */

typedef struct sim_event {
    uint64_t start, end; /* device ns */
    int sub;
    size_t snapshots_read; /* snapshots before it in the file */
    bool after_forced;     /* its submission came right after a forced one */
} sim_event;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Converts the way trace processors do: among the snapshots read so far,
 * the newest at or before `ts`, else the first. */
static int64_t convert(const sp_point *snaps, size_t nread, uint64_t ts, size_t *used)
{
    size_t best = 0;
    for (size_t i = 0; i < nread; i++)
        if (snaps[i].device_ns <= ts)
            best = i;
    *used = best;
    return (int64_t)ts + sp_offset(&snaps[best]);
}

/* Every snapshot is the clocks at one instant, on the true clock's line
 * within the readings' noise (20 ns) and the model's rounding: an offset
 * moved off it to suit one submission reads as drift to anyone measuring
 * it between snapshots. Returns the largest distance. */
static uint64_t assert_on_the_line(const sp_point *snaps, size_t n, int64_t offset, double drift)
{
    uint64_t worst = 0;
    for (size_t k = 0; k < n; k++) {
        const sp_point truth = reading_at(snaps[k].device_ns, offset, drift);
        const uint64_t off = (uint64_t)llabs(
            (long long)((int64_t)snaps[k].boottime_ns - (int64_t)truth.boottime_ns));
        worst = off > worst ? off : worst;
    }
    assert_true(worst <= 60);
    return worst;
}

static void run_simulation(double drift, uint64_t seed, unsigned max_gap_ns)
{
    enum {
        SUBS = 3000,
        PER_SUB = 4
    };
    sim_event *ev = calloc(SUBS * PER_SUB, sizeof *ev);
    sp_point *snaps = calloc(4 * SUBS, sizeof *snaps);
    assert_non_null(ev);
    assert_non_null(snaps);
    size_t nsnaps = 0, nev = 0;
    sp_state st;
    sp_init(&st, BUDGET);
    sp_model m = { 0 };
    const int64_t offset = 5000000;
    const uint64_t first_reading = 1000000000;
    uint64_t next_reading = first_reading, t = first_reading;
    sp_point r = reading_at(next_reading, offset, drift);
    sp_model_update(&m, &r, 40);
    sp_point out;
    assert_int_equal(sp_at_reading(&st, &m, 0, false, &out), SP_AT_READING);
    sp_published(&st, &m, SP_AT_READING, &out);
    snaps[nsnaps++] = out;
    uint64_t written_end = 0;
    for (int k = 0; k < SUBS; k++) {
        /* A submission: 0..max_gap after the last, 0.1-5 ms long, with a
         * child spanning most of it and two back to back inside. */
        const uint64_t start = t + (max_gap_ns ? rnd(&seed) % max_gap_ns : 0);
        const uint64_t len = 100000 + rnd(&seed) % 4900000;
        const uint64_t end = start + len;
        t = end;
        /* Calibrations done meanwhile (noisy by up to +-20 ns), seen by
         * the collector once this submission completed. */
        while (next_reading + (next_reading == first_reading ? 10000000 : 50000000) <= end) {
            next_reading += next_reading == first_reading ? 10000000 : 50000000;
            const int64_t noise = (int64_t)(rnd(&seed) % 41) - 20;
            sp_point rd = reading_at(next_reading, offset + noise, drift);
            sp_model_update(&m, &rd, 40);
            sp_reading_accepted(&st);
        }
        sp_window w = { written_end, start, end, UINT64_MAX };
        enum sp_where where = sp_before_submission(&st, &m, &w, &out);
        if (where != SP_KEEP) {
            sp_published(&st, &m, where, &out);
            snaps[nsnaps++] = out;
        }
        const bool forced = where == SP_FORCED;
        const uint64_t q = len / 4;
        const uint64_t spans[PER_SUB][2] = { { start, end },
                                             { start + 1, end - 1 },
                                             { start + q, start + 2 * q },
                                             { start + 2 * q, end - 1 } };
        for (int i = 0; i < PER_SUB; i++)
            ev[nev++] = (sim_event){ spans[i][0], spans[i][1], k, nsnaps, forced };
        written_end = end;
    }
    /* Check what a trace processor would draw. */
    int64_t prev_end_conv = INT64_MIN;
    uint64_t prev_end = 0, max_error = 0;
    for (size_t i = 0; i < nev; i += PER_SUB) {
        size_t used0 = 0, used;
        int64_t conv[PER_SUB][2];
        for (int j = 0; j < PER_SUB; j++) {
            conv[j][0] = convert(snaps, ev[i + j].snapshots_read, ev[i + j].start, &used);
            if (j == 0)
                used0 = used;
            /* One snapshot for the whole submission. */
            assert_int_equal(used, used0);
            conv[j][1] = conv[j][0] + (int64_t)(ev[i + j].end - ev[i + j].start);
            /* The conversion error against the true clock. */
            const sp_point truth = reading_at(ev[i + j].start, offset, drift);
            const uint64_t err =
                (uint64_t)llabs((long long)(conv[j][0] - (int64_t)truth.boottime_ns));
            max_error = err > max_error ? err : max_error;
        }
        /* Nesting inside, order between consecutive submissions. */
        assert_true(conv[1][0] > conv[0][0] && conv[1][1] < conv[0][1]);
        assert_true(conv[2][1] <= conv[3][0]);
        /* Only a forced snapshot may move a submission against the one
         * before it (by its step, less than the budget). */
        if (prev_end && ev[i].start >= prev_end) {
            if (ev[i].after_forced)
                assert_true(conv[0][0] + (int64_t)BUDGET >= prev_end_conv);
            else
                assert_true(conv[0][0] >= prev_end_conv);
        }
        prev_end = ev[i].end;
        prev_end_conv = conv[0][1];
    }
    print_message("drift %.0f ppm, gaps up to %u ns: %zu snapshots (%" PRIu64 " in gaps, %" PRIu64
                  " forced), max error %" PRIu64 " ns, max step %" PRIu64 " ns\n",
                  drift * 1e6, max_gap_ns, nsnaps, st.count[SP_IN_GAP], st.count[SP_FORCED],
                  max_error, st.max_step_ns);
    assert_true(max_error <= BUDGET);
    assert_on_the_line(snaps, nsnaps, offset, drift);
    if (drift == 0.0)
        assert_int_equal(nsnaps, 1); /* calibrations within noise confirm it */
    else
        assert_true(st.count[SP_IN_GAP] > 0 || st.count[SP_FORCED] > 0);
    if (max_gap_ns >= 1000)
        assert_int_equal(st.count[SP_FORCED], 0);
    free(ev);
    free(snaps);
}

static void simulation_lavapipe_like(void **state)
{
    (void)state;
    /* No drift, gaps of up to 20 us, readings +-20 ns apart: nothing
     * worth a second snapshot. */
    run_simulation(0.0, 1, 20000);
}

static void simulation_drifting(void **state)
{
    (void)state;
    run_simulation(20e-6, 2, 20000);
    run_simulation(-50e-6, 3, 2000);
}

static void simulation_back_to_back(void **state)
{
    (void)state;
    /* Gaps of 0-2 ns: a step back never fits; past half the budget the
     * snapshot is forced (order may move by its step, never nesting) and
     * the error stays bounded. */
    run_simulation(2e-6, 4, 3);
}

/* Two queues whose work overlaps (compute beside graphics): submissions
 * are written in the order they complete; the horizon is the earliest
 * submission time of the other queue's unwritten work. Every submission
 * keeps one snapshot, each queue keeps its order (but after a forced
 * snapshot), and the error stays within the budget. */
static void simulation_two_queues(void **state)
{
    (void)state;
    enum {
        PER_QUEUE = 1500
    };
    typedef struct sub {
        uint64_t submitted, start, end;
        int queue;
        size_t snapshots_read;
        bool after_forced;
    } sub;
    sub *subs = calloc(2 * PER_QUEUE, sizeof *subs);
    sp_point *snaps = calloc(4 * PER_QUEUE, sizeof *snaps);
    assert_non_null(subs);
    assert_non_null(snaps);
    uint64_t seed = 9;
    for (int q = 0; q < 2; q++) {
        uint64_t t = 1000000000 + (uint64_t)q * 777777;
        for (int k = 0; k < PER_QUEUE; k++) {
            sub *x = &subs[q * PER_QUEUE + k];
            x->queue = q;
            x->start = t + rnd(&seed) % 30000;
            x->end = x->start + 200000 + rnd(&seed) % (q ? 900000 : 3000000);
            x->submitted = x->start - rnd(&seed) % 500000;
            t = x->end;
        }
    }
    /* Written in completion order. */
    int *order = calloc(2 * PER_QUEUE, sizeof *order);
    assert_non_null(order);
    for (int i = 0; i < 2 * PER_QUEUE; i++)
        order[i] = i;
    for (int i = 1; i < 2 * PER_QUEUE; i++) /* insertion sort by end */
        for (int j = i; j > 0 && subs[order[j]].end < subs[order[j - 1]].end; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    const double drift = 30e-6;
    const int64_t offset = -123456;
    sp_state st;
    sp_init(&st, BUDGET);
    sp_model m = { 0 };
    uint64_t next_reading = 1000000000;
    sp_point r = reading_at(next_reading, offset, drift), out;
    sp_model_update(&m, &r, 40);
    assert_int_equal(sp_at_reading(&st, &m, 0, false, &out), SP_AT_READING);
    sp_published(&st, &m, SP_AT_READING, &out);
    size_t nsnaps = 0;
    snaps[nsnaps++] = out;
    uint64_t written_end = 0;
    bool *written = calloc(2 * PER_QUEUE, sizeof *written);
    assert_non_null(written);
    bool forced_since[2] = { false, false };
    for (int i = 0; i < 2 * PER_QUEUE; i++) {
        sub *x = &subs[order[i]];
        while (next_reading + (next_reading == 1000000000 ? 10000000 : 50000000) <= x->end) {
            next_reading += next_reading == 1000000000 ? 10000000 : 50000000;
            const int64_t noise = (int64_t)(rnd(&seed) % 41) - 20;
            sp_point rd = reading_at(next_reading, offset + noise, drift);
            sp_model_update(&m, &rd, 40);
            sp_reading_accepted(&st);
        }
        /* Unwritten work of the other queue (any), and of this queue
         * before x (none: completion order keeps a queue's order). */
        uint64_t horizon = UINT64_MAX;
        for (int j = 0; j < 2 * PER_QUEUE; j++)
            if (!written[j] && &subs[j] != x && subs[j].queue != x->queue &&
                subs[j].submitted < horizon && subs[j].submitted <= x->end)
                horizon = subs[j].submitted;
        sp_window w = { written_end, x->start, x->end, horizon };
        enum sp_where where = sp_before_submission(&st, &m, &w, &out);
        if (where != SP_KEEP) {
            sp_published(&st, &m, where, &out);
            snaps[nsnaps++] = out;
        }
        /* A forced snapshot may move the next submission of every queue
         * against that queue's previous one. */
        if (where == SP_FORCED)
            forced_since[0] = forced_since[1] = true;
        x->after_forced = forced_since[x->queue];
        forced_since[x->queue] = false;
        x->snapshots_read = nsnaps;
        written[order[i]] = true;
        written_end = x->end > written_end ? x->end : written_end;
    }
    uint64_t max_error = 0;
    for (int q = 0; q < 2; q++) {
        int64_t prev_end = INT64_MIN;
        for (int k = 0; k < PER_QUEUE; k++) {
            const sub *x = &subs[q * PER_QUEUE + k];
            size_t a, b;
            const int64_t s0 = convert(snaps, x->snapshots_read, x->start, &a);
            const int64_t mid =
                convert(snaps, x->snapshots_read, x->start + (x->end - x->start) / 2, &b);
            (void)mid;
            assert_int_equal(a, b); /* the submission is whole */
            const int64_t e0 = s0 + (int64_t)(x->end - x->start);
            if (x->after_forced)
                assert_true(s0 + (int64_t)BUDGET >= prev_end);
            else
                assert_true(s0 >= prev_end);
            prev_end = e0;
            const sp_point truth = reading_at(x->start, offset, drift);
            const uint64_t err = (uint64_t)llabs((long long)(s0 - (int64_t)truth.boottime_ns));
            max_error = err > max_error ? err : max_error;
        }
    }
    print_message("two queues, drift 30 ppm: %zu snapshots (%" PRIu64 " in gaps, %" PRIu64
                  " forced), max error %" PRIu64 " ns\n",
                  nsnaps, st.count[SP_IN_GAP], st.count[SP_FORCED], max_error);
    assert_true(max_error <= BUDGET);
    assert_on_the_line(snaps, nsnaps, offset, drift);
    free(written);
    free(order);
    free(subs);
    free(snaps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_interpolates_and_extrapolates),
        cmocka_unit_test(model_ignores_drift_within_noise),
        cmocka_unit_test(model_noise_is_what_readings_scatter),
        cmocka_unit_test(first_snapshot_at_its_reading),
        cmocka_unit_test(idle_reading_published_where_it_was_taken),
        cmocka_unit_test(gap_takes_the_snapshot),
        cmocka_unit_test(gap_narrower_than_the_step_is_skipped),
        cmocka_unit_test(large_error_forces_a_snapshot),
        cmocka_unit_test(snapshots_never_go_back),
        cmocka_unit_test(simulation_lavapipe_like),
        cmocka_unit_test(simulation_drifting),
        cmocka_unit_test(simulation_back_to_back),
        cmocka_unit_test(simulation_two_queues),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
