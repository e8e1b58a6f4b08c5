/* SPDX-License-Identifier: MIT */
/* gputrace-ci — one command for driver CI: run any Vulkan program under
 * VK_LAYER_GPUTRACE_timeline, collect its trace (embedded backend,
 * gputrace-service, or a running traced), check it with gputrace-check's
 * code (in-process, toolkit/tool_check.c), print one verdict and exit like
 * gputrace-check (0 pass, 1 fail, 2 usage or unusable input). The program
 * failing (non-zero exit, signal, time-out) fails the run too. docs/ci.md has the details and a CI job.
 */
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "toolkit/ci/ci.h"
#include "toolkit/tool_check.h"
#include "toolkit/tool_common.h"

volatile sig_atomic_t ci_interrupted;

static void on_signal(int sig)
{
    ci_interrupted = sig;
}

/* ---- options -------------------------------------------------------------------- */

ci_options ci_opt;

static gboolean pass_through(const gchar *name, const gchar *value, gpointer data, GError **error)
{
    (void)data;
    (void)error;
    g_ptr_array_add(ci_opt.check_args, g_strdup(name));
    if (value)
        g_ptr_array_add(ci_opt.check_args, g_strdup(value));
    return TRUE;
}

#define PT(long_name, arg, help, desc)                                             \
    {                                                                              \
        long_name, 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)pass_through, help, desc \
    }
#define PT_FLAG(long_name, help)                                                                 \
    {                                                                                            \
        long_name, 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, (gpointer)pass_through, help, \
            NULL                                                                                 \
    }

static const GOptionEntry run_entries[] = {
    { "service", 0, 0, G_OPTION_ARG_NONE, &ci_opt.service,
      "Record with gputrace-service on a private socket (system backend)", NULL },
    { "traced", 0, 0, G_OPTION_ARG_NONE, &ci_opt.traced,
      "Record with the running traced through perfetto (system backend)", NULL },
    { "lavapipe", 0, 0, G_OPTION_ARG_NONE, &ci_opt.lavapipe,
      "Force Mesa's lavapipe driver (VK_DRIVER_FILES, VK_ICD_FILENAMES, LP_NUM_THREADS)", NULL },
    { "layer-path", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.layer_path,
      "Directory holding " LAYER_MANIFEST " (default: build tree or installed)", "DIR" },
    { "keep-trace", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.keep_trace, "Keep the trace as FILE",
      "FILE" },
    { "junit", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.junit,
      "Write JUnit XML (the run, and every gputrace-check test case) to FILE", "FILE" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &ci_opt.timeout_s,
      "Kill the program after SECONDS and fail (default 0: no limit)", "SECONDS" },
    { "allow-unknown-clock-error", 0, 0, G_OPTION_ARG_NONE, &ci_opt.allow_unknown,
      "Pass even when GPU timestamps were converted with a clock whose error bound is unknown",
      NULL },
    { "allow-no-gpu-events", 0, 0, G_OPTION_ARG_NONE, &ci_opt.allow_no_events,
      "Pass even when the trace holds no GPU render stage (default: at least one, or "
      "--expect-gpu-events)",
      NULL },
    { "service-option", 0, 0, G_OPTION_ARG_STRING_ARRAY, &ci_opt.service_args,
      "Extra option for gputrace-service (repeatable, e.g. --service-option=--slow-ms=5)", "OPT" },
    { "perfetto", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.perfetto,
      "Perfetto command-line client for --traced (default: perfetto, else tracebox)", "PATH" },
    { "gputrace-check", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.check_exe,
      "Ignored: the trace is checked in-process (kept so that scripts using it still run)",
      "PATH" },
    { "gputrace-service", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.service_exe,
      "gputrace-service to use (default: build tree, installed, PATH)", "PATH" },
    { "probe", 0, 0, G_OPTION_ARG_NONE, &ci_opt.probe,
      "Run gputrace-probe on the driver first: the run fails unless its timestamps pass", NULL },
    { "probe-option", 0, 0, G_OPTION_ARG_STRING_ARRAY, &ci_opt.probe_args,
      "Extra option for gputrace-probe (repeatable, e.g. --probe-option=--duration=2)", "OPT" },
    { "gputrace-probe", 0, 0, G_OPTION_ARG_FILENAME, &ci_opt.probe_exe,
      "gputrace-probe to use (default: build tree, installed, PATH)", "PATH" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &ci_opt.quiet,
      "Print only the verdict (not gputrace-check's summary)", NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &ci_opt.version, "Print the version and exit", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &ci_opt.command, NULL, NULL },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static const GOptionEntry check_entries[] = {
    PT("max-error-ns", 1, "Largest allowed conversion error bound of a GPU clock", "NS"),
    PT("max-drift-ppm", 1, "Largest allowed drift over one snapshot interval", "PPM"),
    PT("max-snapshot-gap-ns", 1, "Warn when clock snapshots are further apart", "NS"),
    PT("ooo-window-ns", 1, "Warn about packets older than this", "NS"),
    PT("max-submit-latency-ns", 1, "Warn about late GPU stages", "NS"),
    PT("submit-tolerance-ns", 1, "How far a stage may start before its submit", "NS"),
    PT_FLAG("allow-loss", "Data loss is reported but does not fail"),
    PT_FLAG("fatal-warnings", "Warnings fail too"),
    PT("expect-gpu-events", 1, "Fail unless at least N GPU render stages are imported", "N"),
    PT("clock-name", 1, "Declare a global clock domain name (repeatable)", "[ID=]NAME"),
    PT("clock-names", 1, "Clock domain names from FILE", "FILE"),
    PT("clock-deviation", 1, "Recorded uncertainty of clock ID (repeatable)", "ID=NS"),
    PT("plot", 1, "Write an SVG of each custom clock's offset (and the frame times)", "FILE.svg"),
    PT_FLAG("frames", "Report frame statistics (interval, GPU time, stutters)"),
    PT("max-frame-p99-ms", 1, "Fail when the frame interval p99 is over MS", "MS"),
    PT("max-gpu-frame-p99-ms", 1, "Fail when the GPU frame time p99 is over MS", "MS"),
    PT("max-stutters", 1, "Fail when a frames track has more than N stutters", "N"),
    PT("frame-budget-ms", 1, "Slow-run threshold (default: twice the median interval)", "MS"),
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static const char description[] =
    "Backends: the embedded one by default (GPUTRACE_OUTPUT, a temporary file);\n"
    "--service starts gputrace-service on a private socket; --traced records with\n"
    "a running traced through the perfetto client. The layer is found through\n"
    "--layer-path, else the build tree (when run from it), else the installed\n"
    "manifest, and enabled first in VK_INSTANCE_LAYERS (other layers named there\n"
    "stay, below it; name it there yourself to choose its place).\n"
    "\n"
    "The run fails when the program exits non-zero, is killed or times out, when\n"
    "no trace was collected or it holds no GPU render stage, when gputrace-check\n"
    "fails, when GPU timestamps were converted with a clock whose error bound\n"
    "is unknown (fewer than two usable snapshots; --allow-unknown-clock-error),\n"
    "or, with --probe, when gputrace-probe finds the driver's timestamps wrong.\n"
    "\n"
    "Exit status:\n"
    "  0  pass\n"
    "  1  the program or the trace failed\n"
    "  2  usage error, the program, the backend or gputrace-probe could not be\n"
    "     started (or the probe could not judge the driver), the run was\n"
    "     interrupted (SIGINT, SIGTERM, SIGHUP), the trace is unreadable, or\n"
    "     --keep-trace, --junit or --plot could not be written\n"
    "\n"
    "See docs/ci.md.";

static int usage_error(GOptionContext *ctx, const char *msg)
{
    g_printerr(PROG ": %s\n", msg);
    g_autofree gchar *help = g_option_context_get_help(ctx, TRUE, NULL);
    g_printerr("%s", help);
    return TOOL_EXIT_USAGE;
}

/* The program's (and the backend's) environment: the layer enabled and
 * found, the backend chosen later by ci_execute. */
static void setup_environment(ci_run *r, const gchar *layer_dir)
{
    r->env = g_get_environ();
    /* First (closest to the application) unless the caller placed it. */
    const gchar *layers = g_environ_getenv(r->env, "VK_INSTANCE_LAYERS");
    g_auto(GStrv) named = g_strsplit(layers ? layers : "", ":", -1);
    if (!g_strv_contains((const gchar *const *)named, LAYER_NAME))
        r->env = ci_env_prepend_list(r->env, "VK_INSTANCE_LAYERS", LAYER_NAME);
    /* VK_ADD_LAYER_PATH keeps the system's explicit layers (validation...)
    * visible; VK_LAYER_PATH would replace them. A VK_LAYER_PATH the caller
    * set is extended instead. */
    if (g_environ_getenv(r->env, "VK_LAYER_PATH"))
        r->env = ci_env_prepend_list(r->env, "VK_LAYER_PATH", layer_dir);
    else
        r->env = ci_env_prepend_list(r->env, "VK_ADD_LAYER_PATH", layer_dir);
    r->env = g_environ_unsetenv(r->env, "GPUTRACE_DISABLE");
    if (ci_opt.lavapipe) {
        r->env = g_environ_setenv(r->env, "VK_DRIVER_FILES", LAVAPIPE_ICD, TRUE);
        r->env = g_environ_setenv(r->env, "VK_ICD_FILENAMES", LAVAPIPE_ICD, TRUE);
        /* Rasterizing on the queue's thread: Mesa 22.3's rasterizer
        * threads can free a fence while still unlocking it (a corrupted heap
        * or a queue that never finishes, rarely, with or without the layer;
        * docs/ci.md). A value the caller set is kept. */
        r->env = g_environ_setenv(r->env, "LP_NUM_THREADS", "0", FALSE);
    }
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    ci_opt.check_args = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GOptionContext) ctx = g_option_context_new("[--] COMMAND [ARG...]");
    g_option_context_set_summary(
        ctx, "Runs a Vulkan program with VK_LAYER_GPUTRACE_timeline, checks the trace it\n"
             "produced with gputrace-check, and gives one verdict for CI.");
    g_option_context_set_description(ctx, description);
    g_option_context_add_main_entries(ctx, run_entries, NULL);
    GOptionGroup *check_group =
        g_option_group_new("check", "Passed to gputrace-check (see gputrace-check --help):",
                           "Show the gputrace-check options", NULL, NULL);
    g_option_group_add_entries(check_group, check_entries);
    g_option_context_add_group(ctx, check_group);
    /* The first non-option starts the command: its own options stay its own. */
    g_option_context_set_strict_posix(ctx, TRUE);

    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return usage_error(ctx, error->message);
    if (ci_opt.version) {
        tool_print_version(PROG);
        g_ptr_array_unref(ci_opt.check_args);
        return TOOL_EXIT_PASS;
    }
    if (!ci_opt.command || !ci_opt.command[0])
        return usage_error(ctx, "no command given");
    if (ci_opt.service && ci_opt.traced)
        return usage_error(ctx, "--service and --traced exclude each other");
    if (ci_opt.timeout_s < 0)
        return usage_error(ctx, "--timeout must not be negative");
    if (ci_opt.service_args && !ci_opt.service)
        return usage_error(ctx, "--service-option needs --service");
    if (ci_opt.probe_args && !ci_opt.probe)
        return usage_error(ctx, "--probe-option needs --probe");

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    /* gputrace-check's options, checked now: the trace is checked in-process
     * with the same code once the program has run. */
    if (!tool_check_parse_passthrough(ci_opt.check_args, &error))
        return usage_error(ctx, error->message);
    tool_check_config check;
    if (!tool_check_config_build(PROG, &check)) {
        tool_check_config_clear(&check);
        return TOOL_EXIT_USAGE;
    }
    g_autofree gchar *layer_dir = ci_find_layer_dir();
    if (!layer_dir) {
        g_printerr(PROG ": " LAYER_MANIFEST " not found in the build tree or in %s "
                        "(use --layer-path DIR)\n",
                   GTCI_INSTALLED_LAYER_DIR);
        return TOOL_EXIT_USAGE;
    }
    g_autofree gchar *manifest = g_build_filename(layer_dir, LAYER_MANIFEST, NULL);
    if (!g_file_test(manifest, G_FILE_TEST_EXISTS)) {
        g_printerr(PROG ": %s: no such file\n", manifest);
        return TOOL_EXIT_USAGE;
    }
    if (ci_opt.lavapipe && !g_file_test(LAVAPIPE_ICD, G_FILE_TEST_EXISTS)) {
        g_printerr(PROG ": --lavapipe: %s not found (Debian: mesa-vulkan-drivers)\n", LAVAPIPE_ICD);
        return TOOL_EXIT_USAGE;
    }

    ci_run r = { .backend_pid = -1 };
    r.tmp = g_dir_make_tmp(PROG "-XXXXXX", &error);
    if (!r.tmp) {
        g_printerr(PROG ": %s\n", error->message);
        return TOOL_EXIT_USAGE;
    }
    r.trace = g_build_filename(r.tmp, "trace.pftrace", NULL);

    setup_environment(&r, layer_dir);

    int exit_code = ci_execute(&r, &check, (double)g_get_monotonic_time() / 1e6);

    ci_stop_backend(&r);
    ci_remove_tree(r.tmp);
    g_free(r.tmp);
    g_free(r.trace);
    g_free(r.backend_log);
    g_strfreev(r.env);
    g_ptr_array_unref(ci_opt.check_args);
    tool_check_config_clear(&check);
    tool_check_free_args();
    return exit_code;
}
