/* gputrace-check: validates Perfetto traces the way trace_processor would
 * import them (clock conversion, loss accounting) and checks what it does
 * not: per-clock drift and conversion error bounds, global clock ids, GPU
 * stages against their CPU submissions. Streams each input in blocks. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "toolkit/tk_checks.h"
#include "toolkit/tk_report.h"
#include "toolkit/tk_svg.h"

#define PROG "gputrace-check"

enum {
    EXIT_PASS = 0,
    EXIT_VIOLATIONS = 1,
    EXIT_USAGE = 2
};

static gboolean opt_json, opt_verbose, opt_allow_loss, opt_fatal_warnings, opt_no_progress;
static gchar *opt_junit, *opt_plot, *opt_clock_names_file;
static gchar **opt_clock_names, **opt_deviations, **opt_files;
static gint64 opt_max_error_ns = 1000000;
static gdouble opt_max_drift_ppm = 500;
static gint64 opt_max_gap_ns = 20000000000;
static gint64 opt_ooo_window_ns = 5000000000;
static gint64 opt_max_latency_ns = 10000000000;
static gint64 opt_tolerance_ns = 0;
static gint64 opt_expect_gpu = -1;
static gint64 opt_max_packet = TK_READER_DEFAULT_MAX_PACKET;
static gint64 opt_max_inflated = (gint64)TK_INFLATE_DEFAULT_MAX_BYTES;
static gint64 opt_max_inflate_ratio = TK_INFLATE_DEFAULT_MAX_RATIO;

static const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &opt_json,
      "Print the report as JSON (schema gputrace-check/1) instead of the summary", NULL },
    { "junit", 0, 0, G_OPTION_ARG_FILENAME, &opt_junit,
      "Also write a JUnit XML report (one test case per file and check)", "FILE" },
    { "plot", 0, 0, G_OPTION_ARG_FILENAME, &opt_plot,
      "Also write an SVG plot of each custom clock's offset and residual", "FILE.svg" },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose,
      "Summary: list builtin clocks, every non-zero stat and the throughput", NULL },
    { "max-error-ns", 0, 0, G_OPTION_ARG_INT64, &opt_max_error_ns,
      "Largest allowed conversion error bound of a custom clock (default 1000000; <0 off)", "NS" },
    { "max-drift-ppm", 0, 0, G_OPTION_ARG_DOUBLE, &opt_max_drift_ppm,
      "Largest allowed drift of a custom clock between two snapshots (default 500; <0 off)",
      "PPM" },
    { "max-snapshot-gap-ns", 0, 0, G_OPTION_ARG_INT64, &opt_max_gap_ns,
      "Warn when two snapshots of a custom clock are further apart (default 20 s; <0 off)", "NS" },
    { "ooo-window-ns", 0, 0, G_OPTION_ARG_INT64, &opt_ooo_window_ns,
      "Warn about packets older than an earlier packet by more than this (default 5 s; <0 off)",
      "NS" },
    { "max-submit-latency-ns", 0, 0, G_OPTION_ARG_INT64, &opt_max_latency_ns,
      "Warn about GPU stages starting this long after their submission ended (default 10 s; "
      "<0 off)",
      "NS" },
    { "submit-tolerance-ns", 0, 0, G_OPTION_ARG_INT64, &opt_tolerance_ns,
      "How far a GPU stage may start before its vkQueueSubmit (default 0)", "NS" },
    { "allow-loss", 0, 0, G_OPTION_ARG_NONE, &opt_allow_loss,
      "Data loss (overwritten chunks, dropped packets, ...) does not fail the check", NULL },
    { "fatal-warnings", 0, 0, G_OPTION_ARG_NONE, &opt_fatal_warnings, "Warnings fail the check too",
      NULL },
    { "expect-gpu-events", 0, 0, G_OPTION_ARG_INT64, &opt_expect_gpu,
      "Fail unless at least N GPU render stage events would be imported", "N" },
    { "clock-name", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_clock_names,
      "Declare a global clock domain name, optionally with the id it uses (repeatable)",
      "[ID=]NAME" },
    { "clock-names", 0, 0, G_OPTION_ARG_FILENAME, &opt_clock_names_file,
      "Read clock names from FILE, one [ID=]NAME per line, # comments", "FILE" },
    { "clock-deviation", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_deviations,
      "Add a recorded deviation to a clock's error bound (repeatable)", "ID=NS" },
    { "max-packet-size", 0, 0, G_OPTION_ARG_INT64, &opt_max_packet,
      "Reject packets larger than this (default 33554432)", "BYTES" },
    { "max-inflated-bytes", 0, 0, G_OPTION_ARG_INT64, &opt_max_inflated,
      "Reject a file whose compressed_packets inflate to more than this in total "
      "(default 1073741824; 0 no limit)",
      "BYTES" },
    { "max-inflate-ratio", 0, 0, G_OPTION_ARG_INT64, &opt_max_inflate_ratio,
      "Reject a file whose compressed_packets inflate to more than N times their size, "
      "beyond the first 16 MiB (default 100; 0 no limit)",
      "N" },
    { "no-progress", 0, 0, G_OPTION_ARG_NONE, &opt_no_progress,
      "Never print the progress line on a terminal", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &opt_files, NULL, "FILE…" },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static const char description[] =
    "Reads each FILE (\"-\" is standard input) as a Perfetto protobuf trace, packet by\n"
    "packet, including compressed_packets, and imports it with the rules of\n"
    "Perfetto's trace_processor (v47): clock snapshots build a graph of clock domains\n"
    "(builtin 0..63, sequence-scoped 64..127, global >= 128), every timestamp is\n"
    "converted to the trace clock (BOOTTIME unless ClockSnapshot.primary_trace_clock\n"
    "says otherwise) and trace_processor's stats are counted under the same names\n"
    "(clock_sync_failure, invalid_clock_snapshots, traced_buf_*, ...).\n"
    "\n"
    "On top of that, for every custom clock it measures snapshots, drift and residual\n"
    "between consecutive snapshots, bounds the error of every converted timestamp\n"
    "(drift x distance to the snapshot used, plus --clock-deviation), flags use\n"
    "before the first snapshot, checks global ids against FNV-1a(name) | 0x80000000\n"
    "for declared names and against snapshots from several sequences, and checks GPU\n"
    "render stages against the vkQueueSubmit with the same submission_id. Loss checks\n"
    "cover TraceStats buffer and writer stats, previous_packet_dropped (except a\n"
    "sequence's first packet), packets skipped for lack of incremental state, ftrace\n"
    "overruns and packets out of order beyond --ooo-window-ns.\n"
    "\n"
    "Violations have a severity: error and data_loss fail the check (data_loss not\n"
    "with --allow-loss), warning only with --fatal-warnings. All files are checked;\n"
    "results are combined. See docs/toolkit.md for each check and the JSON schema.\n"
    "\n"
    "A trace without TraceStats was cut short (its writer crashed or was killed):\n"
    "that is data loss (no_trace_stats), as is an empty trace.\n"
    "\n"
    "Work is linear in the input: compressed_packets may inflate to at most\n"
    "--max-inflate-ratio times their size (and --max-inflated-bytes in all), and\n"
    "per-id tables are hashed and bounded (docs/toolkit.md, Resource bounds).\n"
    "\n"
    "Exit status:\n"
    "  0  every file passed\n"
    "  1  at least one file has failing violations\n"
    "  2  usage error, or an input could not be opened, read or decoded (also: a\n"
    "     limit on packet size or inflated data exceeded)\n";

/* ---- options ---------------------------------------------------------------- */

/* Decimal or 0x-prefixed hexadecimal 32-bit id. */
static bool parse_u32(const char *s, uint32_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_clock_name(const char *spec, tk_clock_name *out, GError **error)
{
    const char *eq = strchr(spec, '=');
    memset(out, 0, sizeof *out);
    if (eq) {
        g_autofree char *num = g_strndup(spec, (gsize)(eq - spec));
        uint32_t id;
        if (!parse_u32(num, &id)) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "clock name \"%s\": \"%s\" is not a 32-bit clock id", spec, num);
            return false;
        }
        out->has_id = true;
        out->id = id;
        spec = eq + 1;
    }
    if (!*spec) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "empty clock name");
        return false;
    }
    out->name = spec;
    return true;
}

static bool parse_deviation(const char *spec, tk_clock_deviation *out, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(spec, "=", 2);
    uint32_t id;
    gint64 ns;
    if (!parts[0] || !parts[1] || !parse_u32(parts[0], &id) ||
        !g_ascii_string_to_signed(parts[1], 10, 0, G_MAXINT64, &ns, NULL)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--clock-deviation \"%s\": expected ID=NS", spec);
        return false;
    }
    out->clock_id = id;
    out->ns = ns;
    return true;
}

/* ---- progress ----------------------------------------------------------------- */

typedef struct progress {
    const char *path;
    uint64_t size;
    double start, last;
    bool shown;
} progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_progress(void *ctx, uint64_t bytes)
{
    progress *p = ctx;
    double t = now_s();
    if (t - p->last < 0.25)
        return;
    p->last = t;
    p->shown = true;
    double mb = (double)bytes / (1 << 20);
    double rate = t > p->start ? (double)bytes / 1e6 / (t - p->start) : 0;
    if (p->size)
        fprintf(stderr, "\r" PROG ": %s: %.0f/%.0f MiB (%.0f%%), %.0f MB/s  ", p->path, mb,
                (double)p->size / (1 << 20), 100.0 * (double)bytes / (double)p->size, rate);
    else
        fprintf(stderr, "\r" PROG ": %s: %.0f MiB, %.0f MB/s  ", p->path, mb, rate);
}

/* ---- main --------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new("FILE… — check Perfetto traces");
    g_autoptr(GError) error = NULL;
    g_option_context_set_summary(
        ctx, "Check GPU traces for clock correlation and data loss, as Perfetto's\n"
             "trace_processor would import them and beyond.");
    g_option_context_set_description(ctx, description);
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
        fprintf(stderr, PROG ": %s\nTry '" PROG " --help'.\n", error->message);
        return EXIT_USAGE;
    }
    if (!opt_files || !opt_files[0]) {
        fprintf(stderr,
                PROG ": no input file (use - for standard input)\nTry '" PROG " --help'.\n");
        return EXIT_USAGE;
    }
    if (opt_max_packet < 64) {
        fprintf(stderr, PROG ": --max-packet-size must be at least 64\n");
        return EXIT_USAGE;
    }
    if (opt_max_inflated < 0 || opt_max_inflate_ratio < 0 || opt_max_inflate_ratio > UINT32_MAX) {
        fprintf(stderr, PROG ": --max-inflated-bytes and --max-inflate-ratio take 0 (no limit) "
                             "or a positive number\n");
        return EXIT_USAGE;
    }

    g_autoptr(GArray) names = g_array_new(FALSE, TRUE, sizeof(tk_clock_name));
    g_autoptr(GPtrArray) name_storage = g_ptr_array_new_with_free_func(g_free);
    for (gchar **s = opt_clock_names; s && *s; s++) {
        tk_clock_name n;
        if (!parse_clock_name(*s, &n, &error)) {
            fprintf(stderr, PROG ": %s\n", error->message);
            return EXIT_USAGE;
        }
        g_array_append_val(names, n);
    }
    if (opt_clock_names_file) {
        g_autofree gchar *text = NULL;
        if (!g_file_get_contents(opt_clock_names_file, &text, NULL, &error)) {
            fprintf(stderr, PROG ": %s: %s\n", opt_clock_names_file, error->message);
            return EXIT_USAGE;
        }
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (gchar **l = lines; *l; l++) {
            gchar *line = g_strstrip(g_strdup(*l));
            g_ptr_array_add(name_storage, line);
            if (!*line || *line == '#')
                continue;
            tk_clock_name n;
            if (!parse_clock_name(line, &n, &error)) {
                fprintf(stderr, PROG ": %s: %s\n", opt_clock_names_file, error->message);
                return EXIT_USAGE;
            }
            g_array_append_val(names, n);
        }
    }
    g_autoptr(GArray) devs = g_array_new(FALSE, TRUE, sizeof(tk_clock_deviation));
    for (gchar **s = opt_deviations; s && *s; s++) {
        tk_clock_deviation d;
        if (!parse_deviation(*s, &d, &error)) {
            fprintf(stderr, PROG ": %s\n", error->message);
            return EXIT_USAGE;
        }
        g_array_append_val(devs, d);
    }

    tk_check_options o;
    tk_check_options_default(&o);
    o.max_error_ns = opt_max_error_ns;
    o.max_drift_ppm = opt_max_drift_ppm;
    o.max_snapshot_gap_ns = opt_max_gap_ns;
    o.ooo_window_ns = opt_ooo_window_ns;
    o.max_submit_latency_ns = opt_max_latency_ns;
    o.submit_tolerance_ns = opt_tolerance_ns;
    o.expect_gpu_events = opt_expect_gpu;
    o.allow_loss = opt_allow_loss;
    o.fatal_warnings = opt_fatal_warnings;
    o.names = (const tk_clock_name *)(void *)names->data;
    o.n_names = names->len;
    o.deviations = (const tk_clock_deviation *)(void *)devs->data;
    o.n_deviations = devs->len;
    o.max_packet_size = (size_t)opt_max_packet;
    o.inflate_limits.max_bytes = (uint64_t)opt_max_inflated;
    o.inflate_limits.max_ratio = (uint32_t)opt_max_inflate_ratio;
    o.keep_plot_points = opt_plot != NULL;

    const bool tty = !opt_no_progress && isatty(STDERR_FILENO);
    size_t n_files = g_strv_length(opt_files);
    tk_file_result *files = g_new0(tk_file_result, n_files);
    g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);
    bool unreadable = false;

    for (size_t i = 0; i < n_files; i++) {
        tk_file_result *f = &files[i];
        f->path = opt_files[i];
        const bool is_stdin = strcmp(f->path, "-") == 0;
        int fd = is_stdin ? STDIN_FILENO : open(f->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            char *msg = g_strdup(g_strerror(errno));
            g_ptr_array_add(errors, msg);
            f->open_error = msg;
            fprintf(stderr, PROG ": %s: %s\n", f->path, msg);
            unreadable = true;
            continue;
        }
        struct stat st;
        progress pr = { .path = f->path };
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            pr.size = (uint64_t)st.st_size;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            char *msg = g_strdup(g_strerror(EISDIR));
            g_ptr_array_add(errors, msg);
            f->open_error = msg;
            fprintf(stderr, PROG ": %s: %s\n", f->path, msg);
            unreadable = true;
            close(fd);
            continue;
        }
        pr.start = pr.last = now_s();
        /* A progress line only for big inputs on a terminal. */
        bool show = tty && (pr.size == 0 || pr.size > (64u << 20));
        f->result = tk_check_fd(fd, &o, show ? on_progress : NULL, &pr);
        f->seconds = now_s() - pr.start;
        if (pr.shown)
            fprintf(stderr, "\r\033[K");
        if (!is_stdin)
            close(fd);
        if (!f->result) {
            f->open_error = "out of memory";
            fprintf(stderr, PROG ": %s: out of memory\n", f->path);
            unreadable = true;
            continue;
        }
        if (f->result->input_error) {
            unreadable = true;
            for (size_t k = 0; k < f->result->n_violations; k++)
                if (f->result->violations[k].code == TK_V_input_error)
                    fprintf(stderr, PROG ": %s: %s\n", f->path, f->result->violations[k].message);
        }
    }

    bool failed = false;
    for (size_t i = 0; i < n_files; i++)
        failed |= tk_file_failed(&files[i], &o);

    if (opt_json)
        tk_report_json(stdout, files, n_files, &o);
    else
        tk_report_human(stdout, files, n_files, &o, opt_verbose);
    fflush(stdout);

    int status = unreadable ? EXIT_USAGE : failed ? EXIT_VIOLATIONS : EXIT_PASS;
    if (opt_junit && !tk_report_junit(opt_junit, files, n_files, &o)) {
        fprintf(stderr, PROG ": %s: %s\n", opt_junit, g_strerror(errno));
        status = EXIT_USAGE;
    }
    if (opt_plot && !tk_svg_write(opt_plot, files, n_files)) {
        fprintf(stderr, PROG ": %s: %s\n", opt_plot, g_strerror(errno));
        status = EXIT_USAGE;
    }

    for (size_t i = 0; i < n_files; i++)
        tk_result_free(files[i].result);
    g_free(files);
    g_free(opt_junit);
    g_free(opt_plot);
    g_free(opt_clock_names_file);
    g_strfreev(opt_clock_names);
    g_strfreev(opt_deviations);
    g_strfreev(opt_files);
    return status;
}
