/* SPDX-License-Identifier: MIT */
/* Human, JSON and JUnit renderings of gputrace-check results. */
#include "toolkit/tk_report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

bool tk_file_failed(const tk_file_result *f, const tk_check_options *o)
{
    return !f->result || f->result->input_error || tk_result_failed(f->result, o);
}

const char *tk_clock_display_name(int64_t id, char *buf, size_t len)
{
    const char *b = tk_clock_builtin_name(id);
    if (b)
        snprintf(buf, len, "%s", b);
    else if (tk_clock_is_converted_sequence(id))
        snprintf(buf, len, "%u@seq%u", (uint32_t)(id & 0xffffffff), (uint32_t)((uint64_t)id >> 32));
    else
        snprintf(buf, len, "%" PRId64, id);
    return buf;
}

void tk_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void json_double(FILE *out, double v)
{
    if (!isfinite(v))
        fputs("null", out);
    else
        fprintf(out, "%.6g", v);
}

static bool is_custom(const tk_clock_report *c)
{
    return c->info.scope != TK_SCOPE_BUILTIN;
}

static void totals(const tk_file_result *files, size_t n, uint64_t *bytes, uint64_t *packets,
                   uint64_t *sequences, uint64_t *gpu, uint64_t *vk)
{
    *bytes = *packets = *sequences = *gpu = *vk = 0;
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        if (!r)
            continue;
        *bytes += r->bytes;
        *packets += r->packets;
        *sequences += r->sequences;
        *gpu += r->gpu_render_stage_events;
        *vk += r->vulkan_api_events;
    }
}

/* ---- human ---------------------------------------------------------------------------- */

static const char *sev_label(tk_severity s)
{
    switch (s) {
    case TK_SEV_ERROR:
        return "ERROR";
    case TK_SEV_DATA_LOSS:
        return "DATA_LOSS";
    case TK_SEV_WARNING:
        return "warning";
    case TK_SEV_INFO:
        return "info";
    }
    return "?";
}

static void human_clock(FILE *out, const tk_clock_report *c, int64_t trace_clock)
{
    char name[64];
    if (c->info.scope == TK_SCOPE_SEQUENCE)
        snprintf(name, sizeof name, "clock %u (sequence %u)", c->info.raw_id, c->info.seq_id);
    else if (c->name)
        snprintf(name, sizeof name, "clock %u %s", c->info.raw_id, c->name);
    else
        snprintf(name, sizeof name, "clock %u (0x%08x)", c->info.raw_id, c->info.raw_id);
    fprintf(out, "    %s %s: %" PRIu64 " snapshot(s), %" PRIu64 " conversion(s)",
            tk_clock_scope_name(c->info.scope), name, c->info.snapshots, c->info.conversions);
    if (c->failed_conversions)
        fprintf(out, ", %" PRIu64 " unconvertible", c->failed_conversions);
    if (c->info.id == trace_clock)
        fputs(", trace clock", out);
    else if (!c->resolvable)
        fputs(", unresolvable", out);
    if (!c->info.monotonic)
        fputs(", non-monotonic", out);
    fputc('\n', out);
    if (c->info.id != trace_clock && c->info.intervals > 0)
        fprintf(out,
                "      drift %.3f ppm (worst interval %.3f ppm), residual up to %" PRId64
                " ns, snapshots up to %.3f s apart",
                c->info.drift_ppm, c->info.max_drift_ppm, c->info.max_residual_ns,
                (double)c->info.max_gap_ns / 1e9);
    if (c->info.id != trace_clock && c->info.intervals > 0) {
        if (c->error_known)
            fprintf(out, ", conversion error <= %" PRId64 " ns\n", c->max_error_ns);
        else
            fputc('\n', out);
    }
}

void tk_report_human(FILE *out, const tk_file_result *files, size_t n, const tk_check_options *o,
                     bool verbose)
{
    size_t fails = 0;
    size_t counts[4] = { 0 };
    for (size_t i = 0; i < n; i++) {
        const tk_file_result *f = &files[i];
        const tk_result *r = f->result;
        if (!r) {
            fprintf(out, "%s: cannot be read: %s\n", f->path, f->open_error ? f->open_error : "?");
            fails++;
            continue;
        }
        char tc[32];
        fprintf(out,
                "%s: %" PRIu64 " bytes, %" PRIu64 " packets, %" PRIu64 " sequences, %" PRIu64
                " GPU render stages, %" PRIu64 " Vulkan API events; trace clock %s",
                f->path, r->bytes, r->packets, r->sequences, r->gpu_render_stage_events,
                r->vulkan_api_events, tk_clock_display_name(r->trace_clock, tc, sizeof tc));
        if (r->has_time_range)
            fprintf(out, ", %.3f s", ((double)r->last_ts - (double)r->first_ts) / 1e9);
        fputc('\n', out);

        size_t builtin = 0, custom = 0;
        for (size_t k = 0; k < r->n_clocks; k++) {
            if (is_custom(&r->clocks[k]))
                custom++;
            else
                builtin++;
        }
        fprintf(out, "  clocks: %zu builtin, %zu custom; %" PRId64 " ClockSnapshot packets\n",
                builtin, custom, tk_stats_total(&r->stats, TK_STAT_clock_snapshot_packets));
        for (size_t k = 0; k < r->n_clocks; k++)
            if (verbose || is_custom(&r->clocks[k]))
                human_clock(out, &r->clocks[k], r->trace_clock);

        /* Loss-related and error stats that are not zero (v58's names of
         * what v47's already show, with --verbose only). */
        bool first = true;
        for (int s = 0; s < TK_STAT_COUNT; s++) {
            const tk_stat_desc *d = tk_stat_describe((tk_stat_id)s);
            int64_t v = tk_stats_total(&r->stats, (tk_stat_id)s);
            if (!v || (!verbose && d->source == TK_SRC_TP58) ||
                (!verbose && d->severity == TK_STAT_INFO &&
                 s != TK_STAT_traced_buf_chunks_overwritten &&
                 s != TK_STAT_traced_buf_bytes_overwritten &&
                 s != TK_STAT_traced_buf_chunks_discarded && s != TK_STAT_traced_chunks_discarded &&
                 s != TK_STAT_previous_packet_dropped))
                continue;
            fprintf(out, "%s%s=%" PRId64, first ? "  stats: " : " ", d->name, v);
            first = false;
        }
        if (!first)
            fputc('\n', out);
        for (size_t k = 0; k < r->n_violations; k++) {
            const tk_violation *v = &r->violations[k];
            counts[v->severity]++;
            fprintf(out, "  %s %s: %s\n", sev_label(v->severity), tk_violation_name(v->code),
                    v->message);
        }
        bool failed = tk_file_failed(f, o);
        fails += failed;
        if (verbose && f->seconds > 0)
            fprintf(out, "  checked in %.3f s (%.0f MB/s)\n", f->seconds,
                    (double)r->bytes / 1e6 / f->seconds);
        fprintf(out, "  %s\n", failed ? "FAIL" : "pass");
    }
    fprintf(out,
            "verdict: %s (%zu file(s), %zu failed; %zu error(s), %zu data loss, %zu "
            "warning(s))\n",
            fails ? "FAIL" : "pass", n, fails, counts[TK_SEV_ERROR], counts[TK_SEV_DATA_LOSS],
            counts[TK_SEV_WARNING]);
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static void json_clock(FILE *out, const tk_clock_report *c, const char *path, int64_t trace_clock)
{
    const bool has_drift = c->info.intervals > 0 && c->info.id != trace_clock;
    fputs("    {\"file\": ", out);
    tk_json_string(out, path);
    fprintf(out, ", \"id\": %u, \"scope\": \"%s\", \"sequence\": ", c->info.raw_id,
            tk_clock_scope_name(c->info.scope));
    if (c->info.scope == TK_SCOPE_SEQUENCE)
        fprintf(out, "%u", c->info.seq_id);
    else
        fputs("null", out);
    fputs(", \"name\": ", out);
    if (c->name)
        tk_json_string(out, c->name);
    else
        fputs("null", out);
    fprintf(out, ", \"trace_clock\": %s", c->info.id == trace_clock ? "true" : "false");
    fprintf(out, ", \"snapshots\": %" PRIu64 ", \"monotonic\": %s, \"resolvable\": %s",
            c->info.snapshots, c->info.monotonic ? "true" : "false",
            c->resolvable ? "true" : "false");
    fprintf(out, ", \"unit_multiplier_ns\": %" PRId64 ", \"incremental\": %s",
            c->info.unit_multiplier_ns, c->info.incremental ? "true" : "false");
    fprintf(out,
            ", \"conversions\": %" PRIu64 ", \"conversions_before_first_snapshot\": %" PRIu64
            ", \"failed_conversions\": %" PRIu64,
            c->info.conversions, c->info.conversions_before_first, c->failed_conversions);
    fputs(", \"multiple_sequences\": ", out);
    fputs(c->info.multi_sequence ? "true" : "false", out);
    fputs(", \"drift_ppm\": ", out);
    if (has_drift)
        json_double(out, c->info.drift_ppm);
    else
        fputs("null", out);
    fputs(", \"max_drift_ppm\": ", out);
    if (has_drift)
        json_double(out, c->info.max_drift_ppm);
    else
        fputs("null", out);
    if (has_drift)
        fprintf(out, ", \"max_residual_ns\": %" PRId64 ", \"max_snapshot_gap_ns\": %" PRId64,
                c->info.max_residual_ns, c->info.max_gap_ns);
    else
        fputs(", \"max_residual_ns\": null, \"max_snapshot_gap_ns\": null", out);
    if (c->error_known && c->info.id != trace_clock)
        fprintf(out, ", \"max_error_ns\": %" PRId64 "}", c->max_error_ns);
    else
        fputs(", \"max_error_ns\": null}", out);
}

void tk_report_json(FILE *out, const tk_file_result *files, size_t n, const tk_check_options *o)
{
    uint64_t bytes, packets, sequences, gpu, vk;
    totals(files, n, &bytes, &packets, &sequences, &gpu, &vk);
    bool failed = false;
    for (size_t i = 0; i < n; i++)
        failed |= tk_file_failed(&files[i], o);

    fprintf(out, "{\n  \"schema\": \"gputrace-check/1\",\n  \"verdict\": \"%s\",\n",
            failed ? "fail" : "pass");
    fputs("  \"files\": [", out);
    for (size_t i = 0; i < n; i++) {
        const tk_file_result *f = &files[i];
        const tk_result *r = f->result;
        fputs(i ? ",\n    {\"path\": " : "\n    {\"path\": ", out);
        tk_json_string(out, f->path);
        char tc[32];
        fprintf(out,
                ", \"verdict\": \"%s\", \"readable\": %s, \"bytes\": %" PRIu64
                ", \"packets\": %" PRIu64 ", \"trace_clock\": ",
                tk_file_failed(f, o) ? "fail" : "pass", r && !r->input_error ? "true" : "false",
                r ? r->bytes : 0, r ? r->packets : 0);
        if (r)
            tk_json_string(out, tk_clock_display_name(r->trace_clock, tc, sizeof tc));
        else
            fputs("null", out);
        if (r && r->has_time_range)
            fprintf(out, ", \"first_ts\": %" PRId64 ", \"last_ts\": %" PRId64 "}", r->first_ts,
                    r->last_ts);
        else
            fputs(", \"first_ts\": null, \"last_ts\": null}", out);
    }
    fputs(n ? "\n  ],\n" : "],\n", out);
    fprintf(out,
            "  \"bytes\": %" PRIu64 ",\n  \"packets\": %" PRIu64 ",\n  \"sequences\": %" PRIu64
            ",\n  \"gpu_render_stage_events\": %" PRIu64 ",\n  \"vulkan_api_events\": %" PRIu64
            ",\n",
            bytes, packets, sequences, gpu, vk);

    fputs("  \"clocks\": [", out);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        if (!r)
            continue;
        for (size_t k = 0; k < r->n_clocks; k++) {
            fputs(first ? "\n" : ",\n", out);
            first = false;
            json_clock(out, &r->clocks[k], files[i].path, r->trace_clock);
        }
    }
    fputs(first ? "],\n" : "\n  ],\n", out);

    /* Every stat, always (stable keys), summed over files and indices. */
    tk_stats sum;
    tk_stats_init(&sum);
    for (size_t i = 0; i < n; i++)
        if (files[i].result)
            tk_stats_merge(&sum, &files[i].result->stats);
    fputs("  \"stats\": {", out);
    for (int s = 0; s < TK_STAT_COUNT; s++)
        fprintf(out, "%s\n    \"%s\": %" PRId64, s ? "," : "",
                tk_stat_describe((tk_stat_id)s)->name, tk_stats_total(&sum, (tk_stat_id)s));
    fputs("\n  },\n", out);
    tk_stats_free(&sum);

    fputs("  \"violations\": [", out);
    first = true;
    for (size_t i = 0; i < n; i++) {
        const tk_file_result *f = &files[i];
        if (!f->result) {
            fputs(first ? "\n" : ",\n", out);
            first = false;
            fputs("    {\"code\": \"input_error\", \"severity\": \"error\", \"message\": ", out);
            tk_json_string(out, f->open_error ? f->open_error : "cannot be read");
            fputs(", \"file\": ", out);
            tk_json_string(out, f->path);
            fputc('}', out);
            continue;
        }
        for (size_t k = 0; k < f->result->n_violations; k++) {
            const tk_violation *v = &f->result->violations[k];
            fputs(first ? "\n" : ",\n", out);
            first = false;
            fprintf(out, "    {\"code\": \"%s\", \"severity\": \"%s\", \"message\": ",
                    tk_violation_name(v->code), tk_severity_name(v->severity));
            tk_json_string(out, v->message);
            fputs(", \"file\": ", out);
            tk_json_string(out, f->path);
            fputc('}', out);
        }
    }
    fputs(first ? "]\n}\n" : "\n  ]\n}\n", out);
}

/* ---- JUnit --------------------------------------------------------------------------------- */

static void xml_text(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fputc(' ', out);
            else
                fputc(*p, out);
        }
    }
}

static bool severity_fails(tk_severity s, const tk_check_options *o)
{
    return s == TK_SEV_ERROR || (s == TK_SEV_DATA_LOSS && !o->allow_loss) ||
           (s == TK_SEV_WARNING && o->fatal_warnings);
}

void tk_report_junit_counts(const tk_file_result *files, size_t n, const tk_check_options *o,
                            size_t *tests_out, size_t *failures_out)
{
    /* One test case per file and violation code: a stable list of checks. */
    size_t tests = n * TK_V_COUNT, failures = 0;
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        if (!r) {
            failures++;
            continue;
        }
        for (int code = 0; code < TK_V_COUNT; code++) {
            bool fail = false;
            for (size_t k = 0; k < r->n_violations; k++)
                if (r->violations[k].code == (tk_violation_code)code &&
                    severity_fails(r->violations[k].severity, o))
                    fail = true;
            failures += fail;
        }
    }
    *tests_out = tests;
    *failures_out = failures;
}

void tk_report_junit_suites(FILE *out, const tk_file_result *files, size_t n,
                            const tk_check_options *o)
{
    for (size_t i = 0; i < n; i++) {
        const tk_file_result *f = &files[i];
        fputs("  <testsuite name=\"", out);
        xml_text(out, f->path);
        fprintf(out, "\" tests=\"%d\" time=\"%.3f\">\n", TK_V_COUNT, f->seconds);
        for (int code = 0; code < TK_V_COUNT; code++) {
            fputs("    <testcase classname=\"gputrace-check.", out);
            xml_text(out, f->path);
            fprintf(out, "\" name=\"%s\">", tk_violation_name((tk_violation_code)code));
            if (!f->result) {
                if (code == TK_V_input_error) {
                    fputs("<failure message=\"", out);
                    xml_text(out, f->open_error ? f->open_error : "cannot be read");
                    fputs("\"/>", out);
                }
                fputs("</testcase>\n", out);
                continue;
            }
            for (size_t k = 0; k < f->result->n_violations; k++) {
                const tk_violation *v = &f->result->violations[k];
                if (v->code != (tk_violation_code)code)
                    continue;
                if (severity_fails(v->severity, o)) {
                    fprintf(out, "<failure type=\"%s\" message=\"", tk_severity_name(v->severity));
                    xml_text(out, v->message);
                    fputs("\"/>", out);
                } else {
                    fputs("<system-out>", out);
                    xml_text(out, tk_severity_name(v->severity));
                    fputs(": ", out);
                    xml_text(out, v->message);
                    fputs("</system-out>", out);
                }
            }
            fputs("</testcase>\n", out);
        }
        fputs("  </testsuite>\n", out);
    }
}

bool tk_report_junit(const char *path, const tk_file_result *files, size_t n,
                     const tk_check_options *o)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return false;
    size_t tests, failures;
    tk_report_junit_counts(files, n, o, &tests, &failures);
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"gputrace-check\" tests=\"%zu\" failures=\"%zu\">\n",
            tests, failures);
    tk_report_junit_suites(out, files, n, o);
    fputs("</testsuites>\n", out);
    int err = ferror(out);
    if (fclose(out) != 0 || err) {
        if (!errno)
            errno = EIO;
        return false;
    }
    return true;
}
