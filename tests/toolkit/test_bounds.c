/* SPDX-License-Identifier: MIT */
/* Resource bounds on hostile input (docs/toolkit.md, "Resource bounds"):
 * the work of the checker's tables is counted and must grow with the input,
 * not with its square; compressed packets (deflate or zstd) may not expand
 * beyond their limits. Work is asserted by operation counts, never by wall time. */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "toolkit/tk_checks.h"
#include "toolkit/tk_map.h"
#include "tests/toolkit/trace_cases.h"

static const tk_case *find_case(const char *name)
{
    for (size_t i = 0; i < tk_n_cases; i++)
        if (strcmp(tk_cases[i].name, name) == 0)
            return &tk_cases[i];
    fail_msg("no case %s", name);
    return NULL;
}

static tk_result *check_case(const char *name, const tk_check_options *o, size_t *len)
{
    tk_case_out out = { 0 };
    find_case(name)->make(&out);
    tk_result *r = tk_check_buffer(out.data, out.len, o);
    assert_non_null(r);
    if (len)
        *len = out.len;
    free(out.data);
    return r;
}

static const tk_violation *violation(const tk_result *r, tk_violation_code code)
{
    for (size_t i = 0; i < r->n_violations; i++)
        if (r->violations[i].code == code)
            return &r->violations[i];
    return NULL;
}

/* Keys chosen so that an unkeyed hash puts them all in one bucket: with the
 * per-process seed, inserting and looking them up stays a few probes each.
 * Without it this is about n^2/2 = 1.25e9 probes. */
static void test_map_colliding_keys(void **state)
{
    (void)state;
    const uint32_t n = 50000;
    for (uint32_t k = 1; k <= n; k++)
        assert_int_equal(tk_hash_u64(tk_case_colliding_key(k)) & 0xfffff, 0);
    tk_map m;
    tk_map_init(&m);
    for (uint32_t k = 1; k <= n; k++) {
        bool inserted;
        assert_non_null(tk_map_insert(&m, tk_case_colliding_key(k), k, &inserted));
        assert_true(inserted);
    }
    for (uint32_t k = 1; k <= n; k++) {
        const uint64_t *v = tk_map_find(&m, tk_case_colliding_key(k));
        assert_non_null(v);
        assert_int_equal(*v, k);
        assert_null(tk_map_find(&m, tk_case_colliding_key(n + k)));
    }
    /* 3n operations plus the rehashing of growth; a load under 1/2 gives
     * a handful of probes each. */
    print_message("tk_map: %" PRIu64 " probes for %u inserts and %u lookups\n", m.probes, n, 2 * n);
    assert_true(m.probes < 16ull * 3 * n);
    tk_map_free(&m);
}

/* 800000 BufferStats in 1.6 MB: one index lookup per value stored or
 * dropped (there were 4096 per value once the buffer count passed the cap),
 * and the cap on distinct buffers reported. */
static void test_stats_index_linear(void **state)
{
    (void)state;
    tk_check_options o;
    tk_check_options_default(&o);
    tk_result *r = check_case("warn-state_limit_reached-buffers", &o, NULL);
    const uint64_t buffers = 800000, per_buffer = 19;
    assert_int_equal(r->stats.n_slots[TK_STAT_traced_buf_bytes_written], TK_STAT_MAX_INDICES);
    assert_int_equal(r->stats.dropped_indices, per_buffer * (buffers - TK_STAT_MAX_INDICES));
    print_message("tk_stats: %" PRIu64 " probes for %" PRIu64 " values\n", r->stats.probes,
                  buffers * per_buffer);
    assert_true(r->stats.probes <= 2 * buffers * per_buffer);
    const tk_violation *v = violation(r, TK_V_state_limit_reached);
    assert_non_null(v);
    assert_non_null(strstr(v->message, "4096"));
    tk_result_free(r);

    /* The same for cpus of FtraceStats. */
    r = check_case("warn-state_limit_reached-cpus", &o, NULL);
    assert_int_equal(r->stats.n_slots[TK_STAT_ftrace_cpu_entries_end], TK_STAT_MAX_INDICES);
    assert_true(r->stats.probes <= 2 * 300000ull * 14); /* 14 lookups per cpu */
    assert_non_null(violation(r, TK_V_state_limit_reached));
    tk_result_free(r);
}

/* About 1 MB of compressed_packets that would inflate to 1 GiB of empty
 * packets: stopped once it passes 100 times its size, as an input error. */
static void test_inflate_bomb_bounded(void **state)
{
    (void)state;
    tk_check_options o;
    tk_check_options_default(&o);
    size_t len;
    tk_result *r = check_case("error-inflate-bomb", &o, &len);
    assert_true(r->input_error);
    const tk_violation *v = violation(r, TK_V_input_error);
    assert_non_null(v);
    assert_non_null(strstr(v->message, "--max-inflate-ratio"));
    const int64_t inflated = tk_stats_total(&r->stats, TK_STAT_compressed_bytes_inflated);
    print_message("bomb: %zu bytes, %" PRId64 " inflated before the limit\n", len, inflated);
    assert_true(inflated > 0 && (uint64_t)inflated <= 100ull * len + 1);
    tk_result_free(r);

    /* The absolute limit, on a harmless compressed trace. */
    o.inflate_limits.max_bytes = 1000;
    r = check_case("pass-compressed", &o, NULL);
    assert_true(r->input_error);
    v = violation(r, TK_V_input_error);
    assert_non_null(v);
    assert_non_null(strstr(v->message, "--max-inflated-bytes"));
    assert_true(tk_stats_total(&r->stats, TK_STAT_compressed_bytes_inflated) <= 1001);
    tk_result_free(r);

    /* Limits off: the harmless trace passes. */
    o.inflate_limits.max_bytes = 0;
    o.inflate_limits.max_ratio = 0;
    r = check_case("pass-compressed", &o, NULL);
    assert_false(r->input_error);
    tk_result_free(r);
}

/* About 25 kB of zstd_compressed_packets that would expand to 256 MiB of
 * empty packets: stopped at the same bounds as deflate, as an input error
 * (here the 16 MiB always allowed, as 100 times the input is less). */
static void test_zstd_bomb_bounded(void **state)
{
    (void)state;
    tk_check_options o;
    tk_check_options_default(&o);
    size_t len;
    tk_result *r = check_case("error-zstd-bomb", &o, &len);
    assert_true(r->input_error);
    const tk_violation *v = violation(r, TK_V_input_error);
    assert_non_null(v);
    assert_non_null(strstr(v->message, "zstd_compressed_packets"));
    assert_non_null(strstr(v->message, "--max-inflate-ratio"));
    const int64_t inflated = tk_stats_total(&r->stats, TK_STAT_compressed_bytes_inflated);
    print_message("zstd bomb: %zu bytes (ratio %.0f), %" PRId64 " expanded before the limit\n", len,
                  256.0 * 1048576 / (double)len, inflated);
    uint64_t allowed = 100ull * len;
    if (allowed < TK_INFLATE_DEFAULT_RATIO_FLOOR)
        allowed = TK_INFLATE_DEFAULT_RATIO_FLOOR;
    assert_true(inflated > 0 && (uint64_t)inflated <= allowed + 1);
    tk_result_free(r);

    /* The absolute limit, on a harmless zstd trace. */
    o.inflate_limits.max_bytes = 1000;
    r = check_case("pass-zstd", &o, NULL);
    assert_true(r->input_error);
    v = violation(r, TK_V_input_error);
    assert_non_null(v);
    assert_non_null(strstr(v->message, "--max-inflated-bytes"));
    assert_true(tk_stats_total(&r->stats, TK_STAT_compressed_bytes_inflated) <= 1001);
    tk_result_free(r);

    /* Limits off: the harmless trace passes, every packet read. */
    o.inflate_limits.max_bytes = 0;
    o.inflate_limits.max_ratio = 0;
    r = check_case("pass-zstd", &o, NULL);
    assert_false(r->input_error);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_zstd_compressed_packets), 2);
    tk_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_colliding_keys),
        cmocka_unit_test(test_stats_index_linear),
        cmocka_unit_test(test_inflate_bomb_bounded),
        cmocka_unit_test(test_zstd_bomb_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
