/* SPDX-License-Identifier: MIT */
/* gputrace-probe — is what a Vulkan driver reports about GPU time true?
 * Checks every queue family of every device: GPU-written timestamps
 * against calibrated ones and host time, the tick period, the counter's
 * valid bits and wraps, ordering on and across queues, the honesty of
 * maxDeviation, the host time domains, and query semantics (docs/ci.md,
 * "gputrace-probe"). Prints every measured value with its bound and a
 * verdict; exits 0 pass, 1 a check failed, 2 usage error or no Vulkan.
 * The parts live in probe/ (probe.h). The probe never needs the layer. */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "toolkit/probe/pr_device.h"
#include "toolkit/probe/pr_run.h"
#include "toolkit/probe/probe.h"
#include "toolkit/tool_common.h"

static pr_options opt;
static gchar *opt_json, *opt_junit;
static gboolean opt_version;

static const GOptionEntry entries[] = {
    { "duration", 0, 0, G_OPTION_ARG_DOUBLE, &opt.duration_s,
      "Timed run of each queue family, idle gaps and period span (default 1)", "SECONDS" },
    { "calibrated-slack-ns", 0, 0, G_OPTION_ARG_DOUBLE, &opt.slack_ns,
      "written-vs-calibrated: allowed beyond bracket + maxDeviation + 2 ticks (default 0)", "NS" },
    { "max-period-ppm", 0, 0, G_OPTION_ARG_DOUBLE, &opt.max_period_ppm,
      "period: largest |measured / timestampPeriod - 1| (default 100)", "PPM" },
    { "max-backward-ns", 0, 0, G_OPTION_ARG_DOUBLE, &opt.max_backward_ns,
      "order, cross-queue-order: largest step back (default 0)", "NS" },
    { "deviation-slack-ns", 0, 0, G_OPTION_ARG_DOUBLE, &opt.deviation_slack_ns,
      "deviation: allowed beyond 2 x maxDeviation + 2 ticks (default 0)", "NS" },
    { "host-slack-ns", 0, 0, G_OPTION_ARG_DOUBLE, &opt.host_slack_ns,
      "host-domains: allowed outside the host's own bracket (default 0)", "NS" },
    { "max-wait-ms", 0, 0, G_OPTION_ARG_DOUBLE, &opt.max_wait_ms,
      "query-wait: longest WAIT read once its query can be written (default 1000)", "MS" },
    { "max-no-wait-ms", 0, 0, G_OPTION_ARG_DOUBLE, &opt.max_no_wait_ms,
      "query-no-wait: longest a read without WAIT may block (default 100)", "MS" },
    { "calibrations", 0, 0, G_OPTION_ARG_INT, &opt.calibrations,
      "deviation, host-domains: calibrations back to back (default 64)", "N" },
    { "device", 0, 0, G_OPTION_ARG_INT, &opt.device,
      "Probe only the device of this index (default: all)", "INDEX" },
    { "json", 0, 0, G_OPTION_ARG_FILENAME, &opt_json,
      "Also write JSON (schema gputrace-probe/1) to FILE", "FILE" },
    { "junit", 0, 0, G_OPTION_ARG_FILENAME, &opt_junit,
      "Also write JUnit XML to FILE (a test case per check and family)", "FILE" },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static const char description[] =
    "The checks (docs/ci.md): written-vs-calibrated (GPU-written timestamps, mapped\n"
    "through vkGetCalibratedTimestamps, inside the host bracket of their submission\n"
    "widened by maxDeviation, also after idle gaps), period (ticks against host time\n"
    "over --duration), valid-bits (values within timestampValidBits, wraps\n"
    "consistent), order (monotonic on each queue, also after a semaphore wait),\n"
    "cross-queue-order (a stamp after a wait not before the signalling queue's),\n"
    "deviation (maxDeviation against the spread of calibrations), host-domains\n"
    "(calibrated host readings inside the host's own bracket), and the query\n"
    "semantics: query-availability, query-reset, query-wait, query-no-wait (reads\n"
    "that may block run on a watchdog thread). Per queue family, or per device\n"
    "for cross-queue-order, deviation and host-domains.\n"
    "\n"
    "Exit status:\n"
    "  0  every check passed, warned or was not applicable\n"
    "  1  a check failed\n"
    "  2  usage error, no Vulkan driver or device, a device that could not be\n"
    "     opened, or the --json or --junit file could not be written\n"
    "\n"
    "See docs/ci.md.";

static bool options_valid(void)
{
    const char *bad = NULL;
    if (!(opt.duration_s >= 0.05 && opt.duration_s <= 600))
        bad = "--duration takes 0.05 to 600 seconds";
    else if (!(opt.slack_ns >= 0) || !(opt.max_backward_ns >= 0) ||
             !(opt.deviation_slack_ns >= 0) || !(opt.host_slack_ns >= 0))
        bad = "the slack and --max-backward-ns bounds must not be negative";
    else if (!(opt.max_period_ppm > 0))
        bad = "--max-period-ppm must be positive";
    else if (!(opt.max_wait_ms > 0 && opt.max_wait_ms <= 600000) ||
             !(opt.max_no_wait_ms > 0 && opt.max_no_wait_ms <= 600000))
        bad = "--max-wait-ms and --max-no-wait-ms take more than 0, at most 600000";
    else if (opt.calibrations < 3 || opt.calibrations > 100000)
        bad = "--calibrations takes 3 to 100000";
    else if (opt.device < -1)
        bad = "--device takes a device index";
    if (bad)
        tool_error(PR_PROG, "%s", bad);
    return !bad;
}

static const char *device_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "cpu";
    default:
        return "other";
    }
}

static void describe(pr_device_report *rep, const pr_device *d)
{
    rep->index = d->index;
    snprintf(rep->name, sizeof rep->name, "%s", d->props.deviceName);
    rep->type = device_type(d->props.deviceType);
    rep->vendor_id = d->props.vendorID;
    rep->device_id = d->props.deviceID;
    rep->api_version = d->props.apiVersion;
    rep->driver_version = d->props.driverVersion;
    snprintf(rep->driver_name, sizeof rep->driver_name, "%s", d->driver_name);
    snprintf(rep->driver_info, sizeof rep->driver_info, "%s", d->driver_info);
    rep->period_ns = d->facts.period_ns;
    rep->calibration = d->calibration_ext;
    for (int h = 0; h < PR_HOST_COUNT; h++)
        rep->offered[h] = d->calibration_ext && d->facts.offered[h];
    rep->host_reset = d->host_reset;
    rep->timeline = d->timeline;
    rep->nfamilies = d->nfamilies < PR_MAX_FAMILIES ? d->nfamilies : PR_MAX_FAMILIES;
    for (uint32_t i = 0; d->families && i < rep->nfamilies; i++) {
        const pr_family *f = &d->families[i];
        rep->families[i] = (pr_family_info){ .index = i,
                                             .queues = f->props.queueCount,
                                             .used = f->nqueues,
                                             .flags = f->props.queueFlags,
                                             .valid_bits = f->props.timestampValidBits };
    }
}

static void add(pr_device_report *rep, const pr_result *r)
{
    pr_report_result(stdout, r);
    if (!pr_report_add(rep, r))
        tool_error(PR_PROG, "out of memory: a result is missing from --json and --junit");
}

/* A family's timed run and its four checks. A run that broke off fails
 * the checks it left without data. */
static void family_checks(pr_device *d, pr_family *f, pr_device_report *rep)
{
    pr_family_run run;
    pr_run_family(d, f, &opt, &run);
    pr_result r[4];
    pr_judge_written_vs_calibrated(&run, &d->facts, &opt, &r[0]);
    pr_judge_period(&run, &d->facts, &opt, &r[1]);
    pr_judge_valid_bits(&run, &d->facts, &opt, &r[2]);
    pr_judge_order(&run, &d->facts, &opt, &r[3]);
    for (int i = 0; i < 4; i++) {
        if (run.error[0] && r[i].verdict == PR_NA) {
            r[i].verdict = PR_FAIL;
            snprintf(r[i].detail, sizeof r[i].detail, "the timed run failed: %s", run.error);
        }
        add(rep, &r[i]);
    }
    pr_run_free(&run);
}

static void device_checks(pr_device *d, pr_device_report *rep)
{
    pr_calibration *cal = calloc(opt.calibrations, sizeof *cal);
    pr_result r;
    if (cal) {
        size_t n = pr_run_calibrations(d, cal, opt.calibrations);
        pr_judge_deviation(cal, n, &d->facts, &opt, &r);
        add(rep, &r);
        pr_judge_host_domains(cal, n, &d->facts, &opt, &r);
        add(rep, &r);
        free(cal);
    }
    for (uint32_t i = 0; i < d->nfamilies && !d->wedged; i++) {
        if (d->families[i].nqueues)
            family_checks(d, &d->families[i], rep);
    }
    pr_pair pairs[PR_CROSS_PAIRS];
    char err[256] = "";
    size_t n = d->wedged ? 0 : pr_run_cross(d, pairs, PR_CROSS_PAIRS, err, sizeof err);
    pr_judge_cross_queue(pairs, n, &d->facts, &opt, &r);
    if (err[0] && r.verdict != PR_FAIL) {
        r.verdict = PR_FAIL;
        pr_result_say(&r, "; a pair failed: %s", err);
    }
    add(rep, &r);
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        if (!d->families[i].nqueues)
            continue;
        pr_result q[4];
        if (d->wedged) {
            for (int k = 0; k < 4; k++) {
                pr_result_init(&q[k], (pr_check_id)(PR_QUERY_AVAILABILITY + k), (int)i);
                pr_result_na(&q[k], "not run: %s", d->wedged_why);
            }
        } else {
            pr_query_family(d, &d->families[i], &opt, q);
        }
        for (int k = 0; k < 4; k++)
            add(rep, &q[k]);
    }
}

/* Probes one device into `rep`; the device is left behind (not freed,
 * not destroyed) when a call into it never returned. */
static void probe_device(VkInstance instance, VkPhysicalDevice phys, uint32_t index,
                         pr_device_report *rep, bool *wedged)
{
    const double t0 = tool_now_s();
    pr_device *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(rep->error, sizeof rep->error, "out of memory");
        return;
    }
    char err[256];
    const bool opened = pr_device_open(d, instance, phys, index, err, sizeof err);
    describe(rep, d);
    pr_report_device(stdout, rep);
    if (!opened) {
        snprintf(rep->error, sizeof rep->error, "%s", err);
        printf("  ERROR: the device could not be opened: %s\n", err);
    } else {
        device_checks(d, rep);
    }
    rep->seconds = tool_now_s() - t0;
    *wedged |= d->wedged;
    pr_device_close(d);
    if (!d->wedged)
        free(d);
}

/* The summary line: the verdict and every failed check. */
static int summarize(const pr_device_report *reps, size_t n)
{
    pr_totals t;
    pr_report_totals(reps, n, &t);
    const int status = t.errors ? TOOL_EXIT_USAGE : t.fail ? TOOL_EXIT_FAIL : TOOL_EXIT_PASS;
    printf(PR_PROG ": %s: %zu device(s), %zu passed, %zu warned, %zu failed, %zu not applicable",
           status == TOOL_EXIT_PASS   ? "PASS"
           : status == TOOL_EXIT_FAIL ? "FAIL"
                                      : "ERROR",
           n, t.pass, t.warn, t.fail, t.na);
    if (t.errors)
        printf(", %zu not probed", t.errors);
    const char *sep = "; failed: ";
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < reps[i].nresults; k++) {
            const pr_result *r = &reps[i].results[k];
            if (r->verdict != PR_FAIL)
                continue;
            printf("%s%s (device %u", sep, pr_check_name(r->check), reps[i].index);
            if (r->family >= 0)
                printf(" family %d", r->family);
            printf(")");
            sep = ", ";
        }
    }
    printf("\n");
    fflush(stdout);
    return status;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    pr_options_default(&opt);
    gint calibrations = (gint)opt.calibrations;
    g_autoptr(GOptionContext) ctx = g_option_context_new("— check a Vulkan driver's timestamps");
    g_option_context_set_summary(
        ctx, "Measures what every queue family of every Vulkan device reports about GPU time\n"
             "against the host's clocks, and judges each check against a bound.");
    g_option_context_set_description(ctx, description);
    GOptionEntry local[sizeof entries / sizeof entries[0]];
    memcpy(local, entries, sizeof entries);
    for (size_t i = 0; local[i].long_name; i++) {
        if (strcmp(local[i].long_name, "calibrations") == 0)
            local[i].arg_data = &calibrations;
    }
    g_option_context_add_main_entries(ctx, local, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
        fprintf(stderr, PR_PROG ": %s\nTry '" PR_PROG " --help'.\n", error->message);
        return TOOL_EXIT_USAGE;
    }
    if (opt_version) {
        tool_print_version(PR_PROG);
        return TOOL_EXIT_PASS;
    }
    if (argc > 1) {
        fprintf(stderr, PR_PROG ": unexpected argument '%s'\nTry '" PR_PROG " --help'.\n", argv[1]);
        return TOOL_EXIT_USAGE;
    }
    opt.calibrations = calibrations > 0 ? (uint32_t)calibrations : 0;
    if (!options_valid())
        return TOOL_EXIT_USAGE;

    VkInstance instance;
    char err[256];
    if (!pr_instance_create(&instance, err, sizeof err)) {
        tool_error(PR_PROG, "no Vulkan: %s", err);
        return TOOL_EXIT_USAGE;
    }
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, NULL);
    VkPhysicalDevice *phys = calloc(count ? count : 1, sizeof *phys);
    pr_device_report *reps = calloc(count ? count : 1, sizeof *reps);
    if (!phys || !reps || vkEnumeratePhysicalDevices(instance, &count, phys) < 0 || !count) {
        tool_error(PR_PROG, "no Vulkan device (is a driver installed? VK_DRIVER_FILES?)");
        return TOOL_EXIT_USAGE;
    }
    if (opt.device >= (int)count) {
        tool_error(PR_PROG, "--device %d: there are %u device(s)", opt.device, count);
        return TOOL_EXIT_USAGE;
    }
    printf(PR_PROG " %s: %u device(s)\n", GPUTRACE_VERSION, count);
    size_t n = 0;
    bool wedged = false;
    for (uint32_t i = 0; i < count; i++) {
        if (opt.device < 0 || opt.device == (int)i)
            probe_device(instance, phys[i], i, &reps[n++], &wedged);
    }
    int status = summarize(reps, n);
    if (opt_json && !pr_report_json(opt_json, reps, n, &opt, status)) {
        tool_error(PR_PROG, "%s: %s", opt_json, g_strerror(errno));
        status = TOOL_EXIT_USAGE;
    }
    if (opt_junit && !pr_report_junit(opt_junit, reps, n)) {
        tool_error(PR_PROG, "%s: %s", opt_junit, g_strerror(errno));
        status = TOOL_EXIT_USAGE;
    }
    if (wedged) {
        /* A thread is still inside the driver: no destructors, no unloading. */
        fflush(stdout);
        fflush(stderr);
        _exit(status);
    }
    vkDestroyInstance(instance, NULL);
    for (size_t i = 0; i < n; i++)
        free(reps[i].results);
    free(reps);
    free(phys);
    g_free(opt_json);
    g_free(opt_junit);
    return status;
}
