/* SPDX-License-Identifier: MIT */
/* gputrace-check's command line and the check of one file, shared with
 * gputrace-ci, which passes its check options through and checks the trace
 * in-process with the same code. */
#include "toolkit/tool_check.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "toolkit/tool_common.h"

static gboolean opt_json, opt_verbose, opt_allow_loss, opt_fatal_warnings, opt_no_progress;
static gchar *opt_junit, *opt_plot, *opt_clock_names_file, *opt_gpu_stages;
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
static gboolean opt_frames;
static gdouble opt_max_frame_p99_ms = -1, opt_max_gpu_frame_p99_ms = -1, opt_frame_budget_ms = -1;
static gint64 opt_max_stutters = -1;

static const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &opt_json,
      "Print the report as JSON (schema gputrace-check/1) instead of the summary", NULL },
    { "junit", 0, 0, G_OPTION_ARG_FILENAME, &opt_junit,
      "Also write a JUnit XML report (one test case per file and check)", "FILE" },
    { "plot", 0, 0, G_OPTION_ARG_FILENAME, &opt_plot,
      "Also write an SVG plot of each custom clock's offset and residual", "FILE.svg" },
    { "gpu-stages", 0, 0, G_OPTION_ARG_FILENAME, &opt_gpu_stages,
      "Also write every GPU render stage the import keeps, one line each: event_id, "
      "time on the trace clock (ns), submission_id; \"# FILE\" before each input's",
      "FILE" },
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
    { "frames", 0, 0, G_OPTION_ARG_NONE, &opt_frames,
      "Report frame statistics of the frames tracks: count; mean, p50, p90, p99, max of "
      "frame interval and GPU frame time; stutters (intervals over twice the median); the "
      "longest run of slow frames",
      NULL },
    { "max-frame-p99-ms", 0, 0, G_OPTION_ARG_DOUBLE, &opt_max_frame_p99_ms,
      "Fail when a frames track's frame interval p99 is over MS (implies --frames; <0 off)", "MS" },
    { "max-gpu-frame-p99-ms", 0, 0, G_OPTION_ARG_DOUBLE, &opt_max_gpu_frame_p99_ms,
      "Fail when a frames track's GPU frame time p99 is over MS (implies --frames; <0 off)", "MS" },
    { "max-stutters", 0, 0, G_OPTION_ARG_INT64, &opt_max_stutters,
      "Fail when a frames track has more than N stutters (implies --frames; <0 off)", "N" },
    { "frame-budget-ms", 0, 0, G_OPTION_ARG_DOUBLE, &opt_frame_budget_ms,
      "The longest run counts frames whose interval is over MS (default: twice the median)", "MS" },
    { "clock-name", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_clock_names,
      "Declare a global clock domain name, optionally with the id it uses (repeatable)",
      "[ID=]NAME" },
    { "clock-names", 0, 0, G_OPTION_ARG_FILENAME, &opt_clock_names_file,
      "Read clock names from FILE, one [ID=]NAME per line, # comments", "FILE" },
    { "clock-deviation", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_deviations,
      "A clock's recorded deviation: added to its error bound, allowed by its drift check "
      "(repeatable)",
      "ID=NS" },
    { "max-packet-size", 0, 0, G_OPTION_ARG_INT64, &opt_max_packet,
      "Reject packets larger than this (default 33554432)", "BYTES" },
    { "max-inflated-bytes", 0, 0, G_OPTION_ARG_INT64, &opt_max_inflated,
      "Reject a file whose compressed packets (deflate or zstd) expand to more than this "
      "in total (default 1073741824; 0 no limit)",
      "BYTES" },
    { "max-inflate-ratio", 0, 0, G_OPTION_ARG_INT64, &opt_max_inflate_ratio,
      "Reject a file whose compressed packets (deflate or zstd) expand to more than N "
      "times their size, beyond the first 16 MiB (default 100; 0 no limit)",
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
    "With --frames (or a frame threshold) it reads the frames tracks the Vulkan layer\n"
    "writes (\"Frames\": a slice per frame, present to present, with its GPU time)\n"
    "and reports, per track, the frame interval and GPU frame time (mean, p50, p90,\n"
    "p99, max), the stutters (intervals over twice the median) and the longest run\n"
    "of frames over --frame-budget-ms (default: the stutter threshold).\n"
    "\n"
    "A trace without TraceStats was cut short (its writer crashed or was killed):\n"
    "that is data loss (no_trace_stats), as is an empty trace.\n"
    "\n"
    "Work is linear in the input: compressed packets (deflate or zstd) may expand\n"
    "to at most --max-inflate-ratio times their size (and --max-inflated-bytes in\n"
    "all), and\n"
    "per-id tables are hashed and bounded (docs/toolkit.md, Resource bounds).\n"
    "\n"
    "Exit status:\n"
    "  0  every file passed\n"
    "  1  at least one file has failing violations\n"
    "  2  usage error, an input could not be opened, read or decoded (also: a limit\n"
    "     on packet size or inflated data exceeded), or --junit, --plot or\n"
    "     --gpu-stages could not be written\n";

/* ---- options ---------------------------------------------------------------- */

static bool parse_clock_name(const char *spec, tk_clock_name *out, GError **error)
{
    const char *eq = strchr(spec, '=');
    memset(out, 0, sizeof *out);
    if (eq) {
        g_autofree char *num = g_strndup(spec, (gsize)(eq - spec));
        uint32_t id;
        if (!tool_parse_u32(num, 0, 0, UINT32_MAX, &id)) {
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
    if (!parts[0] || !parts[1] || !tool_parse_u32(parts[0], 0, 0, UINT32_MAX, &id) ||
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
    const char *prog;
    const char *path;
    uint64_t size;
    double start, last;
    bool shown;
} progress;

static void on_progress(void *ctx, uint64_t bytes)
{
    progress *p = ctx;
    double t = tool_now_s();
    if (t - p->last < 0.25)
        return;
    p->last = t;
    p->shown = true;
    double mb = (double)bytes / (1 << 20);
    double rate = t > p->start ? (double)bytes / 1e6 / (t - p->start) : 0;
    if (p->size)
        fprintf(stderr, "\r%s: %s: %.0f/%.0f MiB (%.0f%%), %.0f MB/s  ", p->prog, p->path, mb,
                (double)p->size / (1 << 20), 100.0 * (double)bytes / (double)p->size, rate);
    else
        fprintf(stderr, "\r%s: %s: %.0f MiB, %.0f MB/s  ", p->prog, p->path, mb, rate);
}

/* --clock-names FILE: one [ID=]NAME per line, # comments. */
static bool read_clock_names_file(const char *prog, tool_check_config *cfg)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *text = NULL;
    if (!g_file_get_contents(opt_clock_names_file, &text, NULL, &error)) {
        tool_error(prog, "%s: %s", opt_clock_names_file, error->message);
        return false;
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (gchar **l = lines; *l; l++) {
        gchar *line = g_strstrip(g_strdup(*l));
        g_ptr_array_add(cfg->name_storage, line);
        if (!*line || *line == '#')
            continue;
        tk_clock_name n;
        if (!parse_clock_name(line, &n, &error)) {
            tool_error(prog, "%s: %s", opt_clock_names_file, error->message);
            return false;
        }
        g_array_append_val(cfg->names, n);
    }
    return true;
}

/* --gpu-stages: one line per GPU render stage, as trace_processor's
 * gpu_slice would hold it. */
static void write_gpu_stage(void *ctx, uint64_t event_id, int64_t ts, uint32_t submission_id)
{
    fprintf(ctx, "%" PRIu64 " %" PRId64 " %" PRIu32 "\n", event_id, ts, submission_id);
}

static void fill_options(tool_check_config *cfg)
{
    tk_check_options_default(&cfg->o);
    cfg->o.max_error_ns = opt_max_error_ns;
    cfg->o.max_drift_ppm = opt_max_drift_ppm;
    cfg->o.max_snapshot_gap_ns = opt_max_gap_ns;
    cfg->o.ooo_window_ns = opt_ooo_window_ns;
    cfg->o.max_submit_latency_ns = opt_max_latency_ns;
    cfg->o.submit_tolerance_ns = opt_tolerance_ns;
    cfg->o.expect_gpu_events = opt_expect_gpu;
    cfg->o.allow_loss = opt_allow_loss;
    cfg->o.fatal_warnings = opt_fatal_warnings;
    cfg->o.names = (const tk_clock_name *)(void *)cfg->names->data;
    cfg->o.n_names = cfg->names->len;
    cfg->o.deviations = (const tk_clock_deviation *)(void *)cfg->devs->data;
    cfg->o.n_deviations = cfg->devs->len;
    cfg->o.max_packet_size = (size_t)opt_max_packet;
    cfg->o.inflate_limits.max_bytes = (uint64_t)opt_max_inflated;
    cfg->o.inflate_limits.max_ratio = (uint32_t)opt_max_inflate_ratio;
    cfg->o.keep_plot_points = opt_plot != NULL;
    cfg->o.frames = opt_frames;
    cfg->o.max_frame_p99_ms = opt_max_frame_p99_ms;
    cfg->o.max_gpu_frame_p99_ms = opt_max_gpu_frame_p99_ms;
    cfg->o.max_stutters = opt_max_stutters;
    cfg->o.frame_budget_ms = opt_frame_budget_ms;
    if (cfg->gpu_stages) {
        cfg->o.on_gpu_stage = write_gpu_stage;
        cfg->o.on_gpu_stage_ctx = cfg->gpu_stages;
    }
}

/* ---- interface ------------------------------------------------------------------ */

void tool_check_setup_context(GOptionContext *ctx)
{
    g_option_context_set_summary(
        ctx, "Check GPU traces for clock correlation and data loss, as Perfetto's\n"
             "trace_processor would import them and beyond.");
    g_option_context_set_description(ctx, description);
    g_option_context_add_main_entries(ctx, entries, NULL);
}

bool tool_check_parse_passthrough(GPtrArray *args, GError **error)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_help_enabled(ctx, FALSE);
    gint argc = (gint)args->len + 1;
    gchar **argv = g_new0(gchar *, (gsize)argc + 1);
    argv[0] = g_strdup("gputrace-check");
    for (guint i = 0; i < args->len; i++)
        argv[i + 1] = g_strdup(args->pdata[i]);
    gchar **owned = g_memdup2(argv, sizeof *argv * ((gsize)argc + 1));
    bool ok = g_option_context_parse(ctx, &argc, &argv, error);
    g_strfreev(owned); /* the parser may have reordered argv, not freed it */
    g_free(argv);
    return ok;
}

bool tool_check_config_build(const char *prog, tool_check_config *cfg)
{
    g_autoptr(GError) error = NULL;
    memset(cfg, 0, sizeof *cfg);
    cfg->names = g_array_new(FALSE, TRUE, sizeof(tk_clock_name));
    cfg->name_storage = g_ptr_array_new_with_free_func(g_free);
    cfg->devs = g_array_new(FALSE, TRUE, sizeof(tk_clock_deviation));
    if (!tool_read_limits_valid(prog, opt_max_packet, opt_max_inflated, opt_max_inflate_ratio))
        return false;
    for (gchar **s = opt_clock_names; s && *s; s++) {
        tk_clock_name n;
        if (!parse_clock_name(*s, &n, &error)) {
            tool_error(prog, "%s", error->message);
            return false;
        }
        g_array_append_val(cfg->names, n);
    }
    if (opt_clock_names_file && !read_clock_names_file(prog, cfg))
        return false;
    for (gchar **s = opt_deviations; s && *s; s++) {
        tk_clock_deviation dv;
        if (!parse_deviation(*s, &dv, &error)) {
            tool_error(prog, "%s", error->message);
            return false;
        }
        g_array_append_val(cfg->devs, dv);
    }
    if (opt_gpu_stages && !(cfg->gpu_stages = fopen(opt_gpu_stages, "w"))) {
        tool_error(prog, "%s: %s", opt_gpu_stages, g_strerror(errno));
        return false;
    }
    fill_options(cfg);
    return true;
}

bool tool_check_config_close(const char *prog, tool_check_config *cfg)
{
    if (!cfg->gpu_stages)
        return true;
    bool ok = !ferror(cfg->gpu_stages);
    ok &= fclose(cfg->gpu_stages) == 0;
    cfg->gpu_stages = NULL;
    if (!ok)
        tool_error(prog, "%s: %s", opt_gpu_stages, g_strerror(errno ? errno : EIO));
    return ok;
}

void tool_check_config_clear(tool_check_config *cfg)
{
    if (cfg->gpu_stages)
        fclose(cfg->gpu_stages);
    if (cfg->names)
        g_array_unref(cfg->names);
    if (cfg->name_storage)
        g_ptr_array_unref(cfg->name_storage);
    if (cfg->devs)
        g_array_unref(cfg->devs);
    memset(cfg, 0, sizeof *cfg);
}

bool tool_check_file(const char *prog, const char *path, const tk_check_options *o,
                     bool progress_line, tk_file_result *f, GPtrArray *errors)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    bool is_stdin;
    int fd = tool_open_input(path, &is_stdin);
    struct stat st = { 0 };
    const bool is_dir = fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    if (fd < 0 || is_dir) {
        char *msg = g_strdup(g_strerror(fd < 0 ? errno : EISDIR));
        g_ptr_array_add(errors, msg);
        f->open_error = msg;
        tool_error(prog, "%s: %s", path, msg);
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (o->on_gpu_stage == write_gpu_stage)
        fprintf(o->on_gpu_stage_ctx, "# %s\n", path);
    progress pr = { .prog = prog, .path = path };
    if (S_ISREG(st.st_mode))
        pr.size = (uint64_t)st.st_size;
    pr.start = pr.last = tool_now_s();
    /* A progress line only for big inputs on a terminal. */
    bool show = progress_line && (pr.size == 0 || pr.size > (64u << 20));
    f->result = tk_check_fd(fd, o, show ? on_progress : NULL, &pr);
    f->seconds = tool_now_s() - pr.start;
    if (pr.shown)
        fprintf(stderr, "\r\033[K");
    if (!is_stdin)
        close(fd);
    if (!f->result) {
        f->open_error = "out of memory";
        tool_error(prog, "%s: out of memory", path);
        return false;
    }
    if (!f->result->input_error)
        return true;
    for (size_t k = 0; k < f->result->n_violations; k++)
        if (f->result->violations[k].code == TK_V_input_error)
            tool_error(prog, "%s: %s", path, f->result->violations[k].message);
    return false;
}

gchar **tool_check_files(void)
{
    return opt_files;
}

const char *tool_check_plot_path(void)
{
    return opt_plot;
}

const tool_check_outputs *tool_check_outputs_get(void)
{
    static tool_check_outputs out;
    out = (tool_check_outputs){ opt_json, opt_verbose, opt_no_progress, opt_junit, opt_plot };
    return &out;
}

void tool_check_free_args(void)
{
    g_free(opt_junit);
    g_free(opt_plot);
    g_free(opt_clock_names_file);
    g_free(opt_gpu_stages);
    g_strfreev(opt_clock_names);
    g_strfreev(opt_deviations);
    g_strfreev(opt_files);
    opt_junit = opt_plot = opt_clock_names_file = opt_gpu_stages = NULL;
    opt_clock_names = opt_deviations = opt_files = NULL;
}
