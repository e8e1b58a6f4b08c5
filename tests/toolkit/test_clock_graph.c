/* SPDX-License-Identifier: MIT */
/* Clock graph: the worked examples of Perfetto's clock-sync document
 * (docs/concepts/clock-sync.md) and the rules of trace_processor's
 * ClockTracker (v47) that tk_clock_graph reproduces. */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>

#include <cmocka.h>

#include "toolkit/tk_clock_graph.h"

#define BOOT TK_CLOCK_BOOTTIME
#define MONO TK_CLOCK_MONOTONIC
#define REAL TK_CLOCK_REALTIME

static tk_clock_graph *new_graph(void)
{
    tk_clock_graph *g = tk_clock_graph_new(NULL);
    assert_non_null(g);
    return g;
}

/* Adds a snapshot of two clocks from sequence `seq`. */
static tk_snapshot_status snap2(tk_clock_graph *g, uint32_t seq, uint32_t a, uint64_t ta,
                                uint32_t b, uint64_t tb)
{
    tk_snapshot_clock c[2] = { { a, ta, 0, false }, { b, tb, 0, false } };
    return tk_clock_graph_add_clock_snapshot(g, seq, 0, c, 2, NULL);
}

static int64_t to_trace(tk_clock_graph *g, int64_t clock, int64_t ts)
{
    int64_t out = -1;
    assert_true(tk_clock_graph_to_trace_time(g, clock, ts, &out));
    return out;
}

static uint64_t failures(const tk_clock_graph *g)
{
    return tk_clock_graph_counters_get(g)->clock_sync_failure;
}

/* "MONOTONIC 1000 1100 1200 1900 ... 2000 2100 / BOOTTIME 2000 2100 2200
 * 2900 ... 3500 3600": 1104 on MONOTONIC is 2104 on BOOTTIME. */
static void test_seed_1104(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    static const uint64_t mono[] = { 1000, 1100, 1200, 1900, 2000, 2100 };
    static const uint64_t boot[] = { 2000, 2100, 2200, 2900, 3500, 3600 };
    for (int i = 0; i < 6; i++)
        assert_int_equal(snap2(g, 1, MONO, mono[i], BOOT, boot[i]), TK_SNAPSHOT_OK);
    assert_int_equal(to_trace(g, MONO, 1104), 2104);
    /* The latest snapshot <= ts decides; no interpolation. */
    assert_int_equal(to_trace(g, MONO, 1950), 2950);
    assert_int_equal(to_trace(g, MONO, 2050), 3550);
    /* Before the first snapshot the first one is used. */
    assert_int_equal(to_trace(g, MONO, 900), 1900);
    assert_int_equal(to_trace(g, BOOT, 12345), 12345);
    assert_int_equal(failures(g), 0);
    tk_clock_graph_free(g);
}

/* "CUSTOM 1000 _ 3000 _ / MONOTONIC 1100 1200 3200 4000 / BOOTTIME _ 5200 _
 * 9000": 3503 on CUSTOM is 3703 on MONOTONIC, then 7703 on BOOTTIME. */
static void test_seed_3503_via_intermediate(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    const uint32_t custom = tk_clock_global_id_for_name("com.example.custom");
    assert_int_equal(snap2(g, 2, custom, 1000, MONO, 1100), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, MONO, 1200, BOOT, 5200), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 2, custom, 3000, MONO, 3200), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, MONO, 4000, BOOT, 9000), TK_SNAPSHOT_OK);
    int64_t mono = 0;
    assert_true(tk_clock_graph_convert(g, custom, 3503, MONO, &mono));
    assert_int_equal(mono, 3703);
    assert_int_equal(to_trace(g, custom, 3503), 7703);
    /* trace_processor converts every clock of a snapshot when it reads it:
     * the first snapshot comes before any path to BOOTTIME exists, so both
     * of its clocks count in clock_sync_failure. */
    assert_int_equal(failures(g), 2);
    tk_clock_graph_free(g);
}

/* REALTIME jumps back an hour (daylight saving): BOOTTIME -> REALTIME still
 * converts; REALTIME -> BOOTTIME no longer does. */
static void test_seed_realtime_daylight_saving(void **state)
{
    (void)state;
    const int64_t s = 1000000000;
    tk_clock_graph *g = new_graph();
    assert_int_equal(snap2(g, 1, BOOT, 1000 * s, REAL, 10000 * s), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, BOOT, 1100 * s, REAL, 10100 * s), TK_SNAPSHOT_OK);
    int64_t out;
    assert_true(tk_clock_graph_convert(g, REAL, 10050 * s, BOOT, &out));
    assert_int_equal(out, 1050 * s);
    /* 3 AM becomes 2 AM again. */
    assert_int_equal(snap2(g, 1, BOOT, 1200 * s, REAL, 6600 * s), TK_SNAPSHOT_OK);
    assert_true(tk_clock_graph_convert(g, BOOT, 1150 * s, REAL, &out));
    assert_int_equal(out, 10150 * s);
    assert_true(tk_clock_graph_convert(g, BOOT, 1250 * s, REAL, &out));
    assert_int_equal(out, 6650 * s);
    uint64_t before = failures(g);
    assert_false(tk_clock_graph_to_trace_time(g, REAL, 6650 * s, &out));
    assert_int_equal(failures(g), before + 1);
    assert_false(tk_clock_graph_resolvable(g, REAL));
    tk_clock_info info;
    for (size_t i = 0; i < tk_clock_graph_clock_count(g); i++) {
        tk_clock_graph_clock_info(g, i, &info);
        if (info.id == REAL)
            assert_false(info.monotonic);
        if (info.id == BOOT)
            assert_true(info.monotonic);
    }
    tk_clock_graph_free(g);
}

static void test_invalid_snapshots(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    const tk_clock_graph_counters *c = tk_clock_graph_counters_get(g);
    const char *why = NULL;
    /* The same clock twice. */
    tk_snapshot_clock dup[3] = { { 200, 1, 0, false },
                                 { BOOT, 2, 0, false },
                                 { 200, 3, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, dup, 3, &why), TK_SNAPSHOT_INVALID);
    assert_non_null(why);
    assert_int_equal(c->invalid_clock_snapshots, 1);
    /* A global clock cannot be incremental; a sequence one can. */
    tk_snapshot_clock inc[2] = { { 300, 1, 0, true }, { BOOT, 2, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, inc, 2, NULL), TK_SNAPSHOT_INVALID);
    tk_snapshot_clock seq_inc[2] = { { 70, 1, 0, true }, { BOOT, 3, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, seq_inc, 2, NULL), TK_SNAPSHOT_OK);
    /* A unit change. */
    tk_snapshot_clock u1[2] = { { 400, 10, 1000, false }, { BOOT, 10, 0, false } };
    tk_snapshot_clock u2[2] = { { 400, 20, 10, false }, { BOOT, 20, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, u1, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, u2, 2, NULL), TK_SNAPSHOT_INVALID);
    /* The trace clock going backwards. */
    assert_int_equal(snap2(g, 1, BOOT, 5000, MONO, 100), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, BOOT, 4000, MONO, 200), TK_SNAPSHOT_INVALID);
    assert_int_equal(c->invalid_clock_snapshots, 4);
    /* A sequence-scoped clock without a sequence stops the import. */
    tk_snapshot_clock sc[2] = { { 64, 1, 0, false }, { BOOT, 2, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 0, 0, sc, 2, NULL), TK_SNAPSHOT_FATAL);
    tk_clock_graph_free(g);
}

static void test_sequence_scoped_and_units(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    /* Clock 64 of sequence 1 counts microseconds, 64 of sequence 2 ns. */
    tk_snapshot_clock a[2] = { { 64, 5, 1000, false }, { BOOT, 10000, 0, false } };
    tk_snapshot_clock b[2] = { { 64, 5, 0, false }, { BOOT, 20000, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, a, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 2, 0, b, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(to_trace(g, tk_clock_sequence_to_global(1, 64), 6), 11000);
    assert_int_equal(to_trace(g, tk_clock_sequence_to_global(2, 64), 6), 20001);
    int64_t out;
    assert_false(tk_clock_graph_to_trace_time(g, tk_clock_sequence_to_global(3, 64), 6, &out));
    assert_true(tk_clock_is_converted_sequence(tk_clock_sequence_to_global(1, 64)));
    assert_false(tk_clock_is_converted_sequence(0x80000001));
    tk_clock_graph_free(g);
}

/* Incremental clocks add each delta to the last absolute value; like
 * trace_processor, a cache entry that does not cover the new value has
 * already applied the delta once when the slow path applies it again. */
static void test_incremental_and_cache_quirk(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    const int64_t c = tk_clock_sequence_to_global(7, 65);
    tk_snapshot_clock s1[2] = { { 65, 100, 0, true }, { BOOT, 1000, 0, false } };
    tk_snapshot_clock s2[2] = { { 65, 200, 0, true }, { BOOT, 2000, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 7, 0, s1, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 7, 0, s2, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(to_trace(g, c, 10), 2010); /* 200 + 10 */
    assert_int_equal(to_trace(g, c, 5), 2015);  /* cached: 215 */
    /* 215 - 50 = 165 misses the cached range [200, max); the slow path
     * applies -50 again: 115 -> first snapshot -> 1015. */
    assert_int_equal(to_trace(g, c, -50), 1015);
    tk_clock_graph_free(g);
}

static void test_primary_trace_clock(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    tk_snapshot_clock c[2] = { { BOOT, 5000, 0, false }, { MONO, 1000, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, MONO, c, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(tk_clock_graph_trace_clock(g), MONO);
    assert_int_equal(to_trace(g, BOOT, 5100), 1100);
    /* Too late to change once something was converted. */
    tk_snapshot_clock d[2] = { { BOOT, 6000, 0, false }, { MONO, 2000, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, BOOT, d, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(tk_clock_graph_trace_clock(g), MONO);
    assert_int_equal(tk_clock_graph_counters_get(g)->trace_clock_change_ignored, 1);
    tk_clock_graph_free(g);
}

/* At most four hops, like trace_processor's ClockPath::kMaxLen. */
static void test_path_length_limit(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    /* BOOT - 1001 - 1002 - 1003 - 1004 - 1005, all in step but BOOT. */
    assert_int_equal(snap2(g, 1, BOOT, 100, 1001, 200), TK_SNAPSHOT_OK);
    for (uint32_t k = 1001; k < 1005; k++)
        assert_int_equal(snap2(g, 1, k, 200, k + 1, 200), TK_SNAPSHOT_OK);
    assert_int_equal(to_trace(g, 1004, 300), 200); /* 4 hops */
    int64_t out;
    assert_false(tk_clock_graph_to_trace_time(g, 1005, 300, &out)); /* 5 hops */
    tk_clock_graph_free(g);
}

/* Between equally short paths the one through the lower clock id wins
 * (edges are explored in (target id, snapshot hash) order). */
static void test_shortest_path_tie_break(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    assert_int_equal(snap2(g, 1, 500, 0, 150, 1000), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, 500, 0, 140, 2000), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, 150, 1000, BOOT, 10000), TK_SNAPSHOT_OK);
    assert_int_equal(snap2(g, 1, 140, 2000, BOOT, 20000), TK_SNAPSHOT_OK);
    assert_int_equal(to_trace(g, 500, 5), 20005); /* via 140 */
    tk_clock_graph_free(g);
}

static void test_global_id_for_name(void **state)
{
    (void)state;
    /* FNV-1a 32-bit test vectors: "a" = 0xe40c292c, "foobar" = 0xbf9cf968. */
    assert_int_equal(tk_clock_global_id_for_name("a"), 0xe40c292cu);
    assert_int_equal(tk_clock_global_id_for_name("foobar"), 0xbf9cf968u);
    /* The top bit is always set: the id is always >= 128. */
    assert_int_equal(tk_clock_global_id_for_name("") & 0x80000000u, 0x80000000u);
}

static void test_cache_miss_accounting(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(snap2(g, 1, MONO, 1000 + 100 * i, BOOT, 2000 + 100 * i), TK_SNAPSHOT_OK);
    uint64_t miss0 = tk_clock_graph_counters_get(g)->clock_sync_cache_miss;
    assert_int_equal(to_trace(g, MONO, 1150), 2150); /* slow path, cached [1100, 1200) */
    assert_int_equal(to_trace(g, MONO, 1160), 2160); /* hit */
    assert_int_equal(to_trace(g, MONO, 1199), 2199); /* hit */
    assert_int_equal(tk_clock_graph_counters_get(g)->clock_sync_cache_miss, miss0 + 1);
    tk_clock_graph_free(g);
}

/* Drift between snapshots and the error bound of converted timestamps. */
static void test_drift_and_error_bound(void **state)
{
    (void)state;
    const int64_t s = 1000000000;
    tk_clock_graph *g = new_graph();
    const uint32_t gpu = tk_clock_global_id_for_name("com.example.gpu");
    /* The GPU clock runs 50 ppm fast; snapshots every second. */
    for (int64_t i = 0; i < 5; i++) {
        int64_t boot = 100 * s + i * s;
        int64_t tick = 7 * s + i * (s + 50000);
        assert_int_equal(snap2(g, 2, gpu, (uint64_t)tick, BOOT, (uint64_t)boot), TK_SNAPSHOT_OK);
    }
    /* Half a second after the third snapshot. */
    (void)to_trace(g, gpu, 7 * s + 2 * (s + 50000) + s / 2);
    size_t idx = 0;
    tk_clock_info info;
    for (size_t i = 0; i < tk_clock_graph_clock_count(g); i++) {
        tk_clock_graph_clock_info(g, i, &info);
        if (info.id == gpu)
            idx = i;
    }
    tk_clock_graph_clock_info(g, idx, &info);
    assert_int_equal(info.scope, TK_SCOPE_GLOBAL);
    assert_int_equal(info.snapshots, 5);
    assert_int_equal(info.intervals, 4);
    assert_true(fabs(info.max_drift_ppm + 49.9975) < 0.01);
    assert_int_equal(info.max_residual_ns, -50000);
    assert_int_equal(info.max_gap_ns, s);
    assert_int_equal(info.conversions, 1);
    int64_t err;
    assert_true(tk_clock_graph_max_error(g, idx, 0, &err));
    assert_true(err >= 24990 && err <= 25010);
    assert_true(tk_clock_graph_max_error(g, idx, 1000, &err));
    assert_true(err >= 25990 && err <= 26010);
    assert_int_equal(tk_clock_graph_observation_count(g, idx), 5);
    tk_clock_graph_free(g);
}

static void test_limits(void **state)
{
    (void)state;
    tk_clock_limits lim;
    tk_clock_limits_default(&lim);
    lim.max_clocks_per_snapshot = 4;
    lim.max_history_bytes = 512;
    tk_clock_graph *g = tk_clock_graph_new(&lim);
    tk_snapshot_clock many[5];
    for (uint32_t i = 0; i < 5; i++)
        many[i] = (tk_snapshot_clock){ 200 + i, i, 0, false };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, many, 5, NULL), TK_SNAPSHOT_LIMIT);
    /* History beyond the budget keeps the first and the latest readings. */
    for (uint64_t i = 0; i < 100; i++)
        assert_int_equal(snap2(g, 1, MONO, 1000 + 10 * i, BOOT, 5000 + 10 * i), TK_SNAPSHOT_OK);
    assert_true(tk_clock_graph_counters_get(g)->history_evictions > 0);
    assert_int_equal(to_trace(g, MONO, 1000 + 10 * 99 + 3), 5000 + 10 * 99 + 3);
    assert_int_equal(to_trace(g, MONO, 500), 4500);
    tk_clock_graph_free(g);
}

/* ---- hostile input: paths and arithmetic -------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* The incremental path index against a full search, over random snapshot
 * sequences: clocks joining, parallel shapes, clocks going backwards (which
 * drop their edges), a primary trace clock chosen first. Every clock's path
 * must equal the one the search finds, at every step. */
static void test_path_index_matches_search(void **state)
{
    (void)state;
    for (int round = 0; round < 60; round++) {
        tk_clock_graph *g = new_graph();
        uint32_t ids[24];
        uint64_t now[24];
        const uint32_t n_ids = 8 + rnd(16);
        for (uint32_t i = 0; i < n_ids; i++) {
            ids[i] = i == 0 ? BOOT : i == 1 ? MONO : i == 2 ? REAL : 0x80000100u + rnd(40);
            now[i] = 1000000 + rnd(1000);
        }
        if (round % 5 == 0) {
            tk_snapshot_clock none[1];
            tk_clock_graph_add_clock_snapshot(g, 1, MONO, none, 0, NULL);
        }
        for (int step = 0; step < 120; step++) {
            tk_snapshot_clock c[6];
            const uint32_t k = 2 + rnd(4);
            uint32_t picked[6];
            uint32_t n = 0;
            while (n < k) {
                uint32_t j = rnd(n_ids), dup = 0;
                for (uint32_t q = 0; q < n; q++)
                    dup |= ids[picked[q]] == ids[j];
                if (dup)
                    continue;
                picked[n] = j;
                now[j] += 1 + rnd(100000);
                uint64_t ts = now[j];
                /* Now and then a custom clock jumps back. */
                if (j > 2 && rnd(40) == 0)
                    ts -= 500000;
                c[n] = (tk_snapshot_clock){ ids[j], ts, 0, false };
                n++;
            }
            tk_clock_graph_add_clock_snapshot(g, 1 + rnd(3), 0, c, n, NULL);
            assert_int_equal(tk_clock_graph_verify_paths(g), 0);
            int64_t out;
            (void)tk_clock_graph_to_trace_time(g, ids[rnd(n_ids)], (int64_t)now[0], &out);
        }
        tk_clock_graph_free(g);
    }
}

/* A dense component with no path to the trace clock (16 snapshots of 64
 * clocks, 64512 edges) and a four-hop chain: 200000 conversions cost a
 * few index steps each. A search per conversion took thousands. */
static void test_path_work_bounded(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    const uint32_t dense0 = 0x80001000u, chain0 = 0x80002000u;
    const int64_t s = 1000000000;
    assert_int_equal(snap2(g, 1, BOOT, 1000 * (uint64_t)s, chain0 + 1, 100 * (uint64_t)s),
                     TK_SNAPSHOT_OK);
    for (uint32_t k = 1; k < 4; k++)
        assert_int_equal(
            snap2(g, 1, chain0 + k, 100 * (uint64_t)s + k, chain0 + k + 1, 200 * (uint64_t)s),
            TK_SNAPSHOT_OK);
    for (uint32_t k = 0; k < 16; k++) {
        tk_snapshot_clock c[64];
        for (uint32_t j = 0; j < 64; j++)
            c[j] = (tk_snapshot_clock){ dense0 + k * 32 + j, 5 * (uint64_t)s + j, 0, false };
        assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, c, 64, NULL), TK_SNAPSHOT_OK);
    }
    int64_t out;
    assert_false(tk_clock_graph_to_trace_time(g, dense0, 1, &out));
    const uint64_t steps0 = tk_clock_graph_counters_get(g)->path_steps;
    const uint64_t fail0 = failures(g);
    for (uint32_t i = 0; i < 100000; i++) {
        assert_false(tk_clock_graph_to_trace_time(g, dense0 + (i * 7) % 544, 5 * s, &out));
        /* Each hop back along the chain subtracts 100 s and adds k ns
         * (k = 3, 2, 1), the last adds 900 s: 800 s + 6 ns. */
        assert_int_equal(to_trace(g, chain0 + 4, 200 * s + i), 800 * s + 6 + i);
    }
    const uint64_t steps = tk_clock_graph_counters_get(g)->path_steps - steps0;
    print_message("path index: %" PRIu64 " steps for 200000 conversions\n", steps);
    assert_true(steps <= 5 * 200000);
    assert_int_equal(failures(g) - fail0, 100000);
    assert_int_equal(tk_clock_graph_verify_paths(g), 0);
    tk_clock_graph_free(g);
}

/* Arithmetic past 64 bits keeps trace_processor's wrapped result and is
 * counted: an incremental clock whose deltas add up beyond INT64_MAX, a
 * reading scaled by its unit beyond it, a reading of 2^63 or more. */
static void test_timestamp_overflow_counted(void **state)
{
    (void)state;
    tk_clock_graph *g = new_graph();
    tk_snapshot_clock c[2] = { { 64, 1000, 0, true }, { BOOT, 5000, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 1, 0, c, 2, NULL), TK_SNAPSHOT_OK);
    const int64_t clock = tk_clock_sequence_to_global(1, 64);
    const int64_t quarter = INT64_C(1) << 62;
    assert_int_equal(to_trace(g, clock, quarter), quarter + 5000);
    assert_int_equal(tk_clock_graph_counters_get(g)->timestamp_overflows, 0);
    assert_int_equal(to_trace(g, clock, quarter), INT64_MIN + 5000);
    assert_int_equal(tk_clock_graph_counters_get(g)->timestamp_overflows, 1);
    assert_int_equal(to_trace(g, clock, quarter), INT64_MIN + quarter + 5000);
    assert_int_equal(tk_clock_graph_counters_get(g)->timestamp_overflows, 1);

    tk_snapshot_clock u[2] = { { 0x80000200u, (uint64_t)1 << 60, 1000, false },
                               { BOOT, 6000, 0, false } };
    assert_int_equal(tk_clock_graph_add_clock_snapshot(g, 2, 0, u, 2, NULL), TK_SNAPSHOT_OK);
    assert_int_equal(tk_clock_graph_counters_get(g)->timestamp_overflows, 2);
    tk_snapshot_clock b[2] = { { 0x80000300u, 1, 0, false },
                               { BOOT, (uint64_t)1 << 63, 0, false } };
    tk_clock_graph_add_clock_snapshot(g, 2, 0, b, 2, NULL);
    assert_true(tk_clock_graph_counters_get(g)->timestamp_overflows >= 3);
    tk_clock_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_1104),
        cmocka_unit_test(test_seed_3503_via_intermediate),
        cmocka_unit_test(test_seed_realtime_daylight_saving),
        cmocka_unit_test(test_invalid_snapshots),
        cmocka_unit_test(test_sequence_scoped_and_units),
        cmocka_unit_test(test_incremental_and_cache_quirk),
        cmocka_unit_test(test_primary_trace_clock),
        cmocka_unit_test(test_path_length_limit),
        cmocka_unit_test(test_shortest_path_tie_break),
        cmocka_unit_test(test_global_id_for_name),
        cmocka_unit_test(test_cache_miss_accounting),
        cmocka_unit_test(test_drift_and_error_bound),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_path_index_matches_search),
        cmocka_unit_test(test_path_work_bounded),
        cmocka_unit_test(test_timestamp_overflow_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
