/* SPDX-License-Identifier: MIT */
/* pr_report.c — gputrace-probe's reports (probe.h): the human one on
 * standard output, --json (schema gputrace-probe/1, docs/ci.md) and
 * --junit (one test case per check and queue family, device checks once
 * per device). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

#include "toolkit/probe/probe.h"

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

bool pr_report_add(pr_device_report *d, const pr_result *r)
{
    if (d->nresults == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 32;
        pr_result *p = realloc(d->results, cap * sizeof *p);
        if (!p)
            return false;
        d->results = p;
        d->cap = cap;
    }
    d->results[d->nresults++] = *r;
    return true;
}

void pr_driver_version_text(uint32_t vendor_id, uint32_t v, char *buf, size_t len)
{
    if (vendor_id == 0x10de) /* NVIDIA: 10.8.8.6 bits */
        snprintf(buf, len, "%u.%u.%u.%u", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff, v & 0x3f);
    else
        snprintf(buf, len, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                 VK_API_VERSION_PATCH(v));
}

static const struct {
    uint32_t bit;
    const char *name;
} queue_flags[] = {
    { VK_QUEUE_GRAPHICS_BIT, "graphics" },
    { VK_QUEUE_COMPUTE_BIT, "compute" },
    { VK_QUEUE_TRANSFER_BIT, "transfer" },
    { VK_QUEUE_SPARSE_BINDING_BIT, "sparse" },
    { VK_QUEUE_PROTECTED_BIT, "protected" },
    { 0x20, "video-decode" },
    { 0x40, "video-encode" },
    { 0x100, "optical-flow" },
};

/* ---- human ------------------------------------------------------------------------------ */

static void value_text(char *buf, size_t len, double v, const char *unit, bool bound)
{
    if (isnan(v)) {
        snprintf(buf, len, "-");
    } else if (strcmp(unit, "ppm") == 0) {
        snprintf(buf, len, bound ? "+-%.3g ppm" : "%+.3f ppm", v);
    } else if (strcmp(unit, "ms") == 0) {
        snprintf(buf, len, "%.3f ms", v);
    } else if (strcmp(unit, "ns") == 0) {
        const double a = fabs(v);
        if (a >= 1e9)
            snprintf(buf, len, "%.0f ns (%.6g s)", v, v / 1e9);
        else if (a >= 1e6)
            snprintf(buf, len, "%.0f ns (%.6g ms)", v, v / 1e6);
        else if (a >= 1e4)
            snprintf(buf, len, "%.0f ns (%.4g us)", v, v / 1e3);
        else
            snprintf(buf, len, "%.0f ns", v);
    } else {
        snprintf(buf, len, "%.0f %s", v, unit);
    }
}

void pr_report_device(FILE *out, const pr_device_report *d)
{
    char ver[48];
    pr_driver_version_text(d->vendor_id, d->driver_version, ver, sizeof ver);
    fprintf(out, "device %u: %s (%s, vendor 0x%04x, device 0x%04x, Vulkan %u.%u.%u)\n", d->index,
            d->name, d->type, d->vendor_id, d->device_id, VK_API_VERSION_MAJOR(d->api_version),
            VK_API_VERSION_MINOR(d->api_version), VK_API_VERSION_PATCH(d->api_version));
    fprintf(out, "  driver: %s, %s, version %s (0x%08x)\n", d->driver_name,
            d->driver_info[0] ? d->driver_info : "no driver info", ver, d->driver_version);
    fprintf(out, "  timestamps: period %.9g ns; calibration %s", d->period_ns,
            d->calibration ? d->calibration : "none");
    for (int h = 0; h < PR_HOST_COUNT; h++) {
        if (d->offered[h])
            fprintf(out, ", %s", pr_host_clock_name((pr_host_clock)h));
    }
    fprintf(out, "; host query reset %s; timeline semaphores %s\n", d->host_reset ? "yes" : "no",
            d->timeline ? "yes" : "no");
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        const pr_family_info *f = &d->families[i];
        fprintf(out, "  queue family %u: %u queue(s), %u used;", f->index, f->queues, f->used);
        for (size_t k = 0; k < sizeof queue_flags / sizeof queue_flags[0]; k++) {
            if (f->flags & queue_flags[k].bit)
                fprintf(out, " %s", queue_flags[k].name);
        }
        fprintf(out, "; %u valid timestamp bits\n", f->valid_bits);
    }
    fflush(out);
}

void pr_report_result(FILE *out, const pr_result *r)
{
    char measured[64], bound[64], where[32] = "";
    value_text(measured, sizeof measured, r->measured, r->unit, false);
    value_text(bound, sizeof bound, r->bound, r->unit, true);
    if (r->family >= 0)
        snprintf(where, sizeof where, " family %d", r->family);
    static const char *tag[] = {
        [PR_PASS] = "PASS", [PR_WARN] = "WARN", [PR_FAIL] = "FAIL", [PR_NA] = "N/A "
    };
    if (r->verdict == PR_NA)
        fprintf(out, "  %s %s%s\n", tag[r->verdict], pr_check_name(r->check), where);
    else
        fprintf(out, "  %s %s%s: measured %s, bound %s\n", tag[r->verdict], pr_check_name(r->check),
                where, measured, bound);
    if (r->detail[0])
        fprintf(out, "       %s\n", r->detail);
    fflush(out);
}

void pr_report_totals(const pr_device_report *d, size_t n, pr_totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        t->errors += d[i].error[0] != '\0';
        for (size_t k = 0; k < d[i].nresults; k++) {
            switch (d[i].results[k].verdict) {
            case PR_PASS:
                t->pass++;
                break;
            case PR_WARN:
                t->warn++;
                break;
            case PR_FAIL:
                t->fail++;
                break;
            case PR_NA:
                t->na++;
                break;
            }
        }
    }
}

/* ---- JSON ---------------------------------------------------------------------------------- */

/* A JSON string (our own escaping: the toolkit's lives with the trace
 * checker, which the probe does not link). */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void json_device(FILE *f, const pr_device_report *d)
{
    char ver[48];
    pr_driver_version_text(d->vendor_id, d->driver_version, ver, sizeof ver);
    fprintf(f, "    {\n      \"index\": %u,\n      \"name\": ", d->index);
    json_string(f, d->name);
    fprintf(f, ",\n      \"type\": \"%s\",\n      \"vendor_id\": %u,\n      \"device_id\": %u,\n",
            d->type, d->vendor_id, d->device_id);
    fprintf(f, "      \"api_version\": \"%u.%u.%u\",\n      \"driver\": {\"name\": ",
            VK_API_VERSION_MAJOR(d->api_version), VK_API_VERSION_MINOR(d->api_version),
            VK_API_VERSION_PATCH(d->api_version));
    json_string(f, d->driver_name);
    fputs(", \"info\": ", f);
    json_string(f, d->driver_info);
    fprintf(f, ", \"version\": \"%s\", \"version_raw\": %u},\n", ver, d->driver_version);
    fputs("      \"timestamp_period_ns\": ", f);
    json_number(f, d->period_ns);
    fputs(",\n      \"calibration\": {\"extension\": ", f);
    if (d->calibration)
        json_string(f, d->calibration);
    else
        fputs("null", f);
    fputs(", \"host_domains\": [", f);
    for (int h = 0, n = 0; h < PR_HOST_COUNT; h++) {
        if (d->offered[h])
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", pr_host_clock_name((pr_host_clock)h));
    }
    fprintf(f, "]},\n      \"host_query_reset\": %s,\n      \"timeline_semaphores\": %s,\n",
            d->host_reset ? "true" : "false", d->timeline ? "true" : "false");
    fputs("      \"queue_families\": [", f);
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        const pr_family_info *q = &d->families[i];
        fprintf(f, "%s\n        {\"index\": %u, \"queues\": %u, \"used\": %u, \"flags\": [",
                i ? "," : "", q->index, q->queues, q->used);
        for (size_t k = 0, n = 0; k < sizeof queue_flags / sizeof queue_flags[0]; k++) {
            if (q->flags & queue_flags[k].bit)
                fprintf(f, "%s\"%s\"", n++ ? ", " : "", queue_flags[k].name);
        }
        fprintf(f, "], \"timestamp_valid_bits\": %u}", q->valid_bits);
    }
    fputs("\n      ],\n      \"error\": ", f);
    if (d->error[0])
        json_string(f, d->error);
    else
        fputs("null", f);
    fprintf(f, ",\n      \"seconds\": %.3f,\n      \"checks\": [", d->seconds);
    for (size_t i = 0; i < d->nresults; i++) {
        const pr_result *r = &d->results[i];
        fprintf(f, "%s\n        {\"check\": \"%s\", \"family\": ", i ? "," : "",
                pr_check_name(r->check));
        if (r->family >= 0)
            fprintf(f, "%d", r->family);
        else
            fputs("null", f);
        fprintf(f, ", \"verdict\": \"%s\", \"measured\": ", pr_verdict_name(r->verdict));
        json_number(f, r->measured);
        fputs(", \"bound\": ", f);
        json_number(f, r->bound);
        fputs(", \"unit\": ", f);
        json_string(f, r->unit);
        fputs(", \"detail\": ", f);
        json_string(f, r->detail);
        fputc('}', f);
    }
    fputs("\n      ]\n    }", f);
}

bool pr_report_json(const char *path, const pr_device_report *d, size_t n, const pr_options *o,
                    int status)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    pr_totals t;
    pr_report_totals(d, n, &t);
    fprintf(f,
            "{\n  \"schema\": \"gputrace-probe/1\",\n  \"version\": \"%s\",\n"
            "  \"verdict\": \"%s\",\n  \"exit_status\": %d,\n",
            GPUTRACE_VERSION,
            status == 0   ? "pass"
            : status == 1 ? "fail"
                          : "error",
            status);
    fprintf(f,
            "  \"bounds\": {\"duration_s\": %.17g, \"calibrated_slack_ns\": %.17g, "
            "\"max_period_ppm\": %.17g, \"max_backward_ns\": %.17g, \"deviation_slack_ns\": "
            "%.17g, \"host_slack_ns\": %.17g, \"max_wait_ms\": %.17g, \"max_no_wait_ms\": "
            "%.17g, \"calibrations\": %u},\n",
            o->duration_s, o->slack_ns, o->max_period_ppm, o->max_backward_ns,
            o->deviation_slack_ns, o->host_slack_ns, o->max_wait_ms, o->max_no_wait_ms,
            o->calibrations);
    fprintf(f,
            "  \"totals\": {\"pass\": %zu, \"warn\": %zu, \"fail\": %zu, \"not_applicable\": %zu, "
            "\"devices_not_probed\": %zu},\n  \"devices\": [\n",
            t.pass, t.warn, t.fail, t.na, t.errors);
    for (size_t i = 0; i < n; i++) {
        json_device(f, &d[i]);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    bool ok = !ferror(f);
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    errno = e;
    return ok;
}

/* ---- JUnit ---------------------------------------------------------------------------------- */

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
                fputc(*s, f);
        }
    }
}

static void junit_case(FILE *f, const pr_device_report *d, const pr_result *r)
{
    char measured[64], bound[64], line[768];
    value_text(measured, sizeof measured, r->measured, r->unit, false);
    value_text(bound, sizeof bound, r->bound, r->unit, true);
    snprintf(line, sizeof line, "%s: measured %s, bound %s: %s", pr_verdict_name(r->verdict),
             measured, bound, r->detail);
    fprintf(f, "    <testcase classname=\"" PR_PROG ".device%u\" name=\"%s", d->index,
            pr_check_name(r->check));
    if (r->family >= 0)
        fprintf(f, " family %d", r->family);
    fputs("\">", f);
    if (r->verdict == PR_FAIL) {
        fputs("<failure type=\"fail\" message=\"", f);
        xml_text(f, line);
        fputs("\"/>", f);
    } else if (r->verdict == PR_NA) {
        fputs("<skipped message=\"", f);
        xml_text(f, r->detail);
        fputs("\"/>", f);
    } else {
        fputs("<system-out>", f);
        xml_text(f, line);
        fputs("</system-out>", f);
    }
    fputs("</testcase>\n", f);
}

bool pr_report_junit(const char *path, const pr_device_report *d, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    pr_totals t;
    pr_report_totals(d, n, &t);
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" PR_PROG
            "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
            t.pass + t.warn + t.fail + t.na + t.errors, t.fail, t.errors, t.na);
    for (size_t i = 0; i < n; i++) {
        pr_totals one;
        pr_report_totals(&d[i], 1, &one);
        fprintf(f, "  <testsuite name=\"device %u: ", d[i].index);
        xml_text(f, d[i].name);
        fprintf(f,
                "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" "
                "time=\"%.3f\">\n",
                one.pass + one.warn + one.fail + one.na + one.errors, one.fail, one.errors, one.na,
                d[i].seconds);
        if (d[i].error[0]) {
            fprintf(f,
                    "    <testcase classname=\"" PR_PROG ".device%u\" name=\"device\">"
                    "<error message=\"",
                    d[i].index);
            xml_text(f, d[i].error);
            fputs("\"/></testcase>\n", f);
        }
        for (size_t k = 0; k < d[i].nresults; k++)
            junit_case(f, &d[i], &d[i].results[k]);
        fputs("  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    bool ok = !ferror(f);
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    errno = e;
    return ok;
}
