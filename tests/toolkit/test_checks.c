/* SPDX-License-Identifier: MIT */
/* The check pipeline in-process: every crafted trace (trace_cases.c) must
 * give the outcome its name announces, whole or pushed in small chunks,
 * plus a closer look at the numbers of the reference GPU scenario. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_writer.h"
#include "toolkit/tk_checks.h"
#include "toolkit/tk_frames.h"
#include "tests/toolkit/trace_cases.h"

static tk_clock_name names[4];

/* The few gputrace-check options the cases use, applied to `o`. */
static void apply_args(const tk_case *c, tk_check_options *o)
{
    size_t n_names = 0;
    for (const char *const *a = c->args; a && a[0]; a += 2) {
        if (strcmp(a[0], "--frames") == 0) {
            o->frames = true;
            a--; /* a flag */
            continue;
        }
        if (!a[1])
            fail_msg("case %s: option %s without a value", c->name, a[0]);
        if (strcmp(a[0], "--max-frame-p99-ms") == 0) {
            o->max_frame_p99_ms = atof(a[1]);
        } else if (strcmp(a[0], "--max-gpu-frame-p99-ms") == 0) {
            o->max_gpu_frame_p99_ms = atof(a[1]);
        } else if (strcmp(a[0], "--max-stutters") == 0) {
            o->max_stutters = atoll(a[1]);
        } else if (strcmp(a[0], "--clock-name") == 0) {
            const char *eq = strchr(a[1], '=');
            names[n_names].has_id = eq != NULL;
            names[n_names].id = eq ? (uint32_t)strtoull(a[1], NULL, 0) : 0;
            names[n_names].name = eq ? eq + 1 : a[1];
            n_names++;
        } else if (strcmp(a[0], "--expect-gpu-events") == 0) {
            o->expect_gpu_events = atoll(a[1]);
        } else if (strcmp(a[0], "--max-submit-latency-ns") == 0) {
            o->max_submit_latency_ns = atoll(a[1]);
        } else {
            fail_msg("case %s: option %s not handled here", c->name, a[0]);
        }
    }
    o->names = names;
    o->n_names = n_names;
}

static bool has(const tk_result *r, const char *code)
{
    for (size_t i = 0; i < r->n_violations; i++)
        if (strcmp(tk_violation_name(r->violations[i].code), code) == 0)
            return true;
    return false;
}

static const tk_violation *find_violation(const tk_result *r, const char *code, size_t len)
{
    for (size_t i = 0; i < r->n_violations; i++) {
        const char *n = tk_violation_name(r->violations[i].code);
        if (strlen(n) == len && strncmp(n, code, len) == 0)
            return &r->violations[i];
    }
    return NULL;
}

static bool any_error(const tk_result *r)
{
    for (size_t i = 0; i < r->n_violations; i++)
        if (r->violations[i].severity == TK_SEV_ERROR)
            return true;
    return false;
}

static void dump(const tk_result *r)
{
    for (size_t i = 0; i < r->n_violations; i++)
        print_message("  %s %s: %s\n", tk_severity_name(r->violations[i].severity),
                      tk_violation_name(r->violations[i].code), r->violations[i].message);
}

static void judge(const tk_case *c, const tk_result *r, const tk_check_options *o)
{
    const char *name = c->name;
    bool failed = tk_result_failed(r, o);
    bool ok;
    if (strncmp(name, "pass-", 5) == 0)
        ok = !r->input_error && !failed && r->n_violations == 0;
    else if (strncmp(name, "warn-", 5) == 0) {
        /* warn-CODE[-VARIANT] */
        const char *code = name + 5, *dash = strchr(code, '-');
        ok = !r->input_error && !failed &&
             find_violation(r, code, dash ? (size_t)(dash - code) : strlen(code));
    } else if (strncmp(name, "fail-", 5) == 0) {
        /* fail-CODE[-VARIANT]. Without a recorded loss the code keeps its
         * own severity. */
        const char *code = name + 5, *dash = strchr(code, '-');
        const tk_violation *v =
            find_violation(r, code, dash ? (size_t)(dash - code) : strlen(code));
        ok = !r->input_error && failed && v && v->severity == tk_violation_severity(v->code);
    } else if (strncmp(name, "loss-", 5) == 0) {
        /* loss-CODE[-VARIANT]: CODE is data_loss, nothing is an error, so
         * --allow-loss passes. */
        const char *code = name + 5, *dash = strchr(code, '-');
        size_t len = dash ? (size_t)(dash - code) : strlen(code);
        const tk_violation *v = find_violation(r, code, len);
        tk_check_options allow = *o;
        allow.allow_loss = true;
        ok = !r->input_error && failed && v && v->severity == TK_SEV_DATA_LOSS && !any_error(r) &&
             !tk_result_failed(r, &allow);
    } else
        ok = r->input_error && has(r, "input_error");
    if (!ok) {
        print_message("case %s: unexpected outcome (input_error=%d failed=%d)\n", name,
                      r->input_error, failed);
        dump(r);
        fail();
    }
}

static void test_all_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < tk_n_cases; i++) {
        const tk_case *c = &tk_cases[i];
        tk_case_out out = { 0 };
        c->make(&out);
        tk_check_options o;
        tk_check_options_default(&o);
        apply_args(c, &o);
        tk_result *r = tk_check_buffer(out.data, out.len, &o);
        assert_non_null(r);
        judge(c, r, &o);
        tk_result_free(r);
        free(out.data);
    }
}

/* Pushed through tk_reader_feed in 7-byte chunks: same result. Hostile
 * cases in their small variant (same outcome; the full size is
 * test_all_cases' and test_bounds' business). */
static void test_all_cases_chunked(void **state)
{
    (void)state;
    for (size_t i = 0; i < tk_n_cases; i++) {
        const tk_case *c = &tk_cases[i];
        tk_case_out out = { 0 };
        (c->make_seed ? c->make_seed : c->make)(&out);
        tk_check_options o;
        tk_check_options_default(&o);
        apply_args(c, &o);
        tk_checker *ck = tk_checker_new(&o);
        assert_non_null(ck);
        tk_reader rd;
        tk_reader_init(&rd, NULL);
        tk_read_status st = TK_READ_OK;
        for (size_t off = 0; off < out.len && st == TK_READ_OK; off += 7) {
            size_t k = out.len - off < 7 ? out.len - off : 7;
            st = tk_reader_feed(&rd, out.data + off, k, tk_checker_packet_cb, ck);
        }
        if (st == TK_READ_OK)
            st = tk_reader_finish(&rd);
        if (st != TK_READ_OK && st != TK_READ_ERR_ABORTED)
            tk_checker_input_error(ck, tk_reader_error(&rd));
        tk_reader_free(&rd);
        tk_result *r = tk_checker_finish(ck);
        judge(c, r, &o);

        tk_result *whole = tk_check_buffer(out.data, out.len, &o);
        assert_int_equal(r->packets, whole->packets);
        assert_int_equal(r->n_violations, whole->n_violations);
        assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure),
                         tk_stats_total(&whole->stats, TK_STAT_clock_sync_failure));
        tk_result_free(whole);
        tk_result_free(r);
        free(out.data);
    }
}

static const tk_case *find(const char *name)
{
    for (size_t i = 0; i < tk_n_cases; i++)
        if (strcmp(tk_cases[i].name, name) == 0)
            return &tk_cases[i];
    fail_msg("no case %s", name);
    return NULL;
}

static tk_result *run_case(const char *name)
{
    tk_case_out out = { 0 };
    find(name)->make(&out);
    tk_check_options o;
    tk_check_options_default(&o);
    o.keep_plot_points = true;
    tk_result *r = tk_check_buffer(out.data, out.len, &o);
    free(out.data);
    assert_non_null(r);
    return r;
}

static const tk_clock_report *clock_by_raw(const tk_result *r, uint32_t raw)
{
    for (size_t i = 0; i < r->n_clocks; i++)
        if (r->clocks[i].info.raw_id == raw)
            return &r->clocks[i];
    return NULL;
}

static void test_gpu_scenario_numbers(void **state)
{
    (void)state;
    const char *cases[] = { "pass-gpu", "pass-compressed" };
    for (int k = 0; k < 2; k++) {
        tk_result *r = run_case(cases[k]);
        assert_int_equal(r->gpu_render_stage_events, 60);
        assert_int_equal(r->vk_queue_submits, 60);
        assert_int_equal(r->sequences, 3);
        assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure), 0);
        /* The first packet of each producer sequence carries
         * previous_packet_dropped, as traced writes it: not a loss. */
        assert_int_equal(tk_stats_total(&r->stats, TK_STAT_previous_packet_dropped), 2);
        assert_int_equal(tk_stats_total(&r->stats, TK_STAT_sequence_packet_loss), 0);
        assert_int_equal(tk_stats_total(&r->stats, TK_STAT_traced_buf_sequence_packet_loss), 0);
        const tk_clock_report *gpu =
            clock_by_raw(r, tk_clock_global_id_for_name("com.gputrace.test.gpu"));
        assert_non_null(gpu);
        assert_int_equal(gpu->info.scope, TK_SCOPE_GLOBAL);
        assert_int_equal(gpu->info.snapshots, 20);
        assert_int_equal(gpu->info.conversions, 60);
        assert_true(gpu->resolvable);
        assert_true(fabs(gpu->info.drift_ppm + 20) < 0.01);
        /* 20 ppm over at most 75.1 ms after a snapshot: about 1.5 us. */
        assert_true(gpu->error_known);
        assert_true(gpu->max_error_ns > 1400 && gpu->max_error_ns < 1600);
        assert_int_equal(gpu->n_points, 20);
        if (k == 1)
            assert_int_equal(tk_stats_total(&r->stats, TK_STAT_compressed_packets), 2);
        tk_result_free(r);
    }
}

static void test_sequence_clock_numbers(void **state)
{
    (void)state;
    tk_result *r = run_case("pass-sequence-clock");
    const tk_clock_report *us = NULL, *inc = NULL;
    for (size_t i = 0; i < r->n_clocks; i++) {
        if (r->clocks[i].info.scope != TK_SCOPE_SEQUENCE)
            continue;
        if (r->clocks[i].info.raw_id == 64)
            us = &r->clocks[i];
        if (r->clocks[i].info.raw_id == 65)
            inc = &r->clocks[i];
    }
    assert_non_null(us);
    assert_non_null(inc);
    assert_int_equal(us->info.seq_id, 5);
    assert_int_equal(us->info.unit_multiplier_ns, 1000);
    assert_true(inc->info.incremental);
    assert_int_equal(us->info.conversions, 5);
    assert_int_equal(inc->info.conversions, 10);
    assert_true(fabs(us->info.drift_ppm) < 0.001);
    tk_result_free(r);
}

static void test_loss_numbers(void **state)
{
    (void)state;
    tk_result *r = run_case("fail-sequence_packet_loss");
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_sequence_packet_loss), 1);
    /* Per buffer through writer_stats, like trace_processor. */
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_traced_buf_sequence_packet_loss), 1);
    tk_result_free(r);

    r = run_case("fail-incremental_state_lost");
    assert_true(tk_stats_total(&r->stats, TK_STAT_incremental_state_skipped_after_loss) > 0);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_tokenizer_skipped_packets),
                     tk_stats_total(&r->stats, TK_STAT_incremental_state_skipped_after_loss));
    tk_result_free(r);

    r = run_case("fail-ftrace_overrun");
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_ftrace_cpu_overrun_delta), 42);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_ftrace_cpu_entries_delta), 200);
    tk_result_free(r);
}

/* The frames case's statistics, which trace_cases.c derives by hand. */
static void test_frames_numbers(void **state)
{
    (void)state;
    const tk_case *c = find("pass-frames");
    tk_case_out out = { 0 };
    c->make(&out);
    tk_check_options o;
    tk_check_options_default(&o);
    apply_args(c, &o);
    o.keep_plot_points = true;
    tk_result *r = tk_check_buffer(out.data, out.len, &o);
    assert_non_null(r);
    assert_true(r->frames_checked);
    assert_int_equal(r->frames.tracks[0].n_points, 100);
    assert_int_equal(r->frames.n_tracks, 1);
    const tk_frames_track *t = &r->frames.tracks[0];
    assert_string_equal(t->name, "Frames");
    assert_int_equal(t->pid, 4242);
    assert_int_equal(t->frames, 100);
    assert_int_equal(t->first_frame, 1);
    assert_int_equal(t->last_frame, 100);
    assert_int_equal(t->interval.count, 99);
    assert_true(t->interval.exact);
    assert_true(fabs(t->interval.mean_ms - 5220.0 / 99) < 1e-9);
    assert_true(fabs(t->interval.p50_ms - 50) < 1e-9);
    assert_true(fabs(t->interval.p90_ms - 93) < 1e-9);
    assert_true(fabs(t->interval.p99_ms - 150) < 1e-9);
    assert_true(fabs(t->interval.max_ms - 150) < 1e-9);
    assert_int_equal(t->gpu_time.count, 100);
    assert_true(fabs(t->gpu_time.p50_ms - 4) < 1e-9);
    assert_true(fabs(t->gpu_time.p90_ms - 4) < 1e-9);
    assert_true(fabs(t->gpu_time.p99_ms - 8) < 1e-9);
    assert_true(fabs(t->gpu_time.mean_ms - 4.4) < 1e-9);
    assert_int_equal(t->stutters, 3);
    assert_true(fabs(t->stutter_threshold_ms - 100) < 1e-9);
    assert_int_equal(t->longest_slow_run, 3);
    assert_int_equal(t->unmatched, 0);
    tk_result_free(r);

    /* A budget of 60 ms: the run from frame 60 (150, 150, 150) goes on
     * through 62..99 ms frames over 60: frames 60..100 minus those at or
     * below 60 (none after frame 62 is below 62), i.e. 41 frames. */
    tk_check_options_default(&o);
    o.frames = true;
    o.frame_budget_ms = 60;
    r = tk_check_buffer(out.data, out.len, &o);
    assert_non_null(r);
    assert_int_equal(r->frames.tracks[0].longest_slow_run, 41);
    assert_int_equal(r->frames.tracks[0].stutters, 3);
    tk_result_free(r);
    free(out.data);
}

/* A frame's BEGIN / END as the layer writes them, for tk_frames directly. */
static size_t encode_event(uint8_t *buf, size_t cap, int type, uint64_t frame, uint64_t gpu_ns)
{
    pb_heap_buffer h;
    pb_msg m, a;
    pb_heap_init(&h, 256);
    pb_msg_init_root(&m, pb_heap_stream(&h));
    pb_msg_append_varint(&m, 9, (uint64_t)type);
    pb_msg_append_varint(&m, 11, 78);
    if (type == 1) {
        pb_msg_begin_nested(&m, 4, &a);
        pb_msg_append_string(&a, 10, "frame_number");
        pb_msg_append_varint(&a, 3, frame);
        pb_msg_end(&a);
        pb_msg_begin_nested(&m, 4, &a);
        pb_msg_append_string(&a, 10, "gpu_time_ns");
        pb_msg_append_varint(&a, 3, gpu_ns);
        pb_msg_end(&a);
    }
    pb_msg_end(&m);
    size_t len;
    uint8_t *d = pb_heap_dup(&h, &len);
    pb_heap_free(&h);
    assert_non_null(d);
    assert_true(len <= cap);
    memcpy(buf, d, len);
    free(d);
    return len;
}

/* Past TK_FRAMES_EXACT frames: the memory stays what it was, percentiles
 * come within 1 %, and stutters are judged against the first frames'
 * median. 100000 frames alternate 10 and 12 ms, every 1000th takes 50 ms. */
static void test_frames_beyond_exact(void **state)
{
    (void)state;
    tk_frames *f = tk_frames_new(-1, false);
    assert_non_null(f);
    static const uint8_t desc[] = { 0x08, 78, 0x12, 6, 'F', 'r', 'a', 'm', 'e', 's' };
    tk_frames_descriptor(f, desc, sizeof desc);
    int64_t at = 1000000000;
    uint8_t buf[128];
    const uint64_t n = 100000;
    for (uint64_t k = 1; k <= n; k++) {
        const int64_t dur = k % 1000 == 0 ? 50000000 : k % 2 ? 10000000 : 12000000;
        size_t len = encode_event(buf, sizeof buf, 1, k, 3000000);
        tk_frames_event(f, buf, len, at);
        len = encode_event(buf, sizeof buf, 2, 0, 0);
        tk_frames_event(f, buf, len, at + dur);
        at += dur;
    }
    tk_frames_report rep;
    tk_frames_finish(f, &rep);
    assert_int_equal(rep.n_tracks, 1);
    const tk_frames_track *t = &rep.tracks[0];
    assert_int_equal(t->frames, n);
    assert_int_equal(t->interval.count, n - 1);
    assert_false(t->interval.exact);
    /* Exact: p50 12 (half and one are 12 ms), p90 12, p99 12, max 50. */
    assert_true(fabs(t->interval.p50_ms - 12) / 12 < 0.01);
    assert_true(fabs(t->interval.p99_ms - 12) / 12 < 0.01);
    assert_true(fabs(t->interval.max_ms - 50) < 1e-9);
    /* The first 65536 intervals (frames 2..65537) are 32768 of 10 ms and
     * the rest 12 or 50: their median is 10 ms, the threshold 20 ms; the
     * 50 ms frames are 1000, 2000, ..., 100000 (frame 1 has no interval). */
    assert_true(fabs(t->stutter_threshold_ms - 20) < 1e-9);
    assert_int_equal(t->stutters, 100);
    assert_int_equal(t->longest_slow_run, 1);
    tk_frames_report_free(&rep);
    tk_frames_free(f);
}

/* fail-clock_drift_exceeded drifts 1000 ppm between snapshots 100 ms
 * apart: each interval's offset changes by 100 us, 49 950 ns more than
 * the 500 ppm limit allows. Readings each off by up to D ns (the clock's
 * deviation) explain up to 2 D of that: the limit is broken for
 * D < 24 975 ns, not beyond (bracket readings on a loaded machine are
 * hundreds of us wide). */
static void test_drift_against_deviation(void **state)
{
    (void)state;
    tk_case_out out = { 0 };
    find("fail-clock_drift_exceeded")->make(&out);
    const uint32_t gpu = tk_clock_global_id_for_name("com.gputrace.test.gpu");
    const struct {
        int64_t deviation_ns;
        bool exceeded;
    } rows[] = {
        { 0, true }, { 24000, true }, { 24900, true }, { 25000, false }, { 400000, false }
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        tk_check_options o;
        tk_check_options_default(&o);
        const tk_clock_deviation dev = { gpu, rows[k].deviation_ns };
        o.deviations = &dev;
        o.n_deviations = rows[k].deviation_ns ? 1 : 0;
        tk_result *r = tk_check_buffer(out.data, out.len, &o);
        assert_non_null(r);
        const tk_clock_report *c = clock_by_raw(r, gpu);
        assert_non_null(c);
        assert_true(c->info.max_drift_excess_ns >= 49900 && c->info.max_drift_excess_ns <= 50000);
        if (has(r, "clock_drift_exceeded") != rows[k].exceeded)
            fail_msg("deviation %lld ns: clock_drift_exceeded %s", (long long)rows[k].deviation_ns,
                     rows[k].exceeded ? "missing" : "reported");
        tk_result_free(r);
    }
    free(out.data);
}

/* v58's names beside v47's (docs/toolkit.md, "Perfetto v47 and v58"):
 * the values trace_processor v58.2 gives for these traces (checked
 * against it by toolkit-trace-processor-diff-v58). */
static void test_v58_stats(void **state)
{
    (void)state;
    /* Packets on clocks that are in no snapshot: v47 counts them as they
     * come, v58 at the end of the file, by reason, as dropped packets. */
    tk_result *r = run_case("fail-clock_sync_failure");
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure), 2);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure_unknown_source_clock), 2);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure_no_path), 0);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure_undeferrable_packet_loss),
                     2);
    tk_result_free(r);
    /* v47 counts a snapshot reading it cannot convert; v58 converts none. */
    const char *snapshot_only[] = { "fail-clock_non_monotonic", "fail-clock_unresolvable" };
    for (int k = 0; k < 2; k++) {
        r = run_case(snapshot_only[k]);
        assert_int_equal(tk_stats_total(&r->stats, TK_STAT_clock_sync_failure), 1);
        assert_int_equal(
            tk_stats_total(&r->stats, TK_STAT_clock_sync_failure_unknown_source_clock) +
                tk_stats_total(&r->stats, TK_STAT_clock_sync_failure_no_path) +
                tk_stats_total(&r->stats, TK_STAT_clock_sync_failure_undeferrable_packet_loss),
            0);
        tk_result_free(r);
    }
    /* A sequence that never cleared its state: every packet that needed
     * it skipped, one such sequence in its buffer. */
    r = run_case("fail-incremental_state_missing");
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_tokenizer_skipped_packets), 60);
    assert_int_equal(
        tk_stats_total(&r->stats, TK_STAT_packet_skipped_seq_needs_incremental_state_invalid), 60);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_traced_buf_incremental_sequences_dropped),
                     1);
    tk_result_free(r);
    /* A loss and no clear after it: skipped, but not every packet. */
    r = run_case("fail-incremental_state_lost");
    assert_int_equal(
        tk_stats_total(&r->stats, TK_STAT_packet_skipped_seq_needs_incremental_state_invalid), 7);
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_traced_buf_incremental_sequences_dropped),
                     0);
    tk_result_free(r);
    /* Trace times that wrap negative: v58's sorter drops them. */
    r = run_case("fail-timestamp_overflow");
    assert_int_equal(tk_stats_total(&r->stats, TK_STAT_trace_sorter_negative_timestamp_dropped), 3);
    tk_result_free(r);
    r = run_case("pass-gpu");
    for (int s = 0; s < TK_STAT_COUNT; s++)
        if (tk_stat_describe((tk_stat_id)s)->source == TK_SRC_TP58)
            assert_int_equal(tk_stats_total(&r->stats, (tk_stat_id)s), 0);
    tk_result_free(r);
}

/* Every violation code has a crafted trace that must produce it. */
static void test_every_code_has_a_case(void **state)
{
    (void)state;
    for (int code = 0; code < TK_V_COUNT; code++) {
        const char *name = tk_violation_name((tk_violation_code)code);
        bool found = code == TK_V_input_error; /* the error-* cases */
        for (size_t i = 0; i < tk_n_cases && !found; i++) {
            const char *cn = tk_cases[i].name;
            found = (strncmp(cn, "fail-", 5) == 0 || strncmp(cn, "warn-", 5) == 0) &&
                    strcmp(cn + 5, name) == 0;
        }
        if (!found)
            fail_msg("no crafted trace for violation %s", name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_a_case),
        cmocka_unit_test(test_all_cases),
        cmocka_unit_test(test_all_cases_chunked),
        cmocka_unit_test(test_gpu_scenario_numbers),
        cmocka_unit_test(test_sequence_clock_numbers),
        cmocka_unit_test(test_loss_numbers),
        cmocka_unit_test(test_v58_stats),
        cmocka_unit_test(test_frames_numbers),
        cmocka_unit_test(test_frames_beyond_exact),
        cmocka_unit_test(test_drift_against_deviation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
