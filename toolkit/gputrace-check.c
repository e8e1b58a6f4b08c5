/* SPDX-License-Identifier: MIT */
/* gputrace-check: validates Perfetto traces the way trace_processor would
 * import them (clock conversion, loss accounting) and checks what it does
 * not: per-clock drift and conversion error bounds, global clock ids, GPU
 * stages against their CPU submissions. Streams each input in blocks.
 * Options and the check of one file live in tool_check.c (gputrace-ci
 * shares them). */
#include <errno.h>
#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <unistd.h>

#include "toolkit/tk_checks.h"
#include "toolkit/tk_report.h"
#include "toolkit/tk_svg.h"
#include "toolkit/tool_check.h"
#include "toolkit/tool_common.h"

#define PROG "gputrace-check"

/* The reports of all files; returns the exit status. */
static int report(const tk_file_result *files, size_t n, const tk_check_options *o, bool unreadable)
{
    const tool_check_outputs *out = tool_check_outputs_get();
    bool failed = false;
    for (size_t i = 0; i < n; i++)
        failed |= tk_file_failed(&files[i], o);
    if (out->json)
        tk_report_json(stdout, files, n, o);
    else
        tk_report_human(stdout, files, n, o, out->verbose);
    fflush(stdout);

    int status = unreadable ? TOOL_EXIT_USAGE : failed ? TOOL_EXIT_FAIL : TOOL_EXIT_PASS;
    if (out->junit && !tk_report_junit(out->junit, files, n, o)) {
        tool_error(PROG, "%s: %s", out->junit, g_strerror(errno));
        status = TOOL_EXIT_USAGE;
    }
    if (out->plot && !tk_svg_write(out->plot, files, n)) {
        tool_error(PROG, "%s: %s", out->plot, g_strerror(errno));
        status = TOOL_EXIT_USAGE;
    }
    return status;
}

static gboolean opt_version;

/* gputrace-check's own; tool_check.c has the options gputrace-ci shares. */
static const GOptionEntry version_entries[] = {
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
    /* GOption prints its help in the locale's charset: "?" for every
     * non-ASCII character under the C locale a program starts in. */
    setlocale(LC_ALL, "");
    g_autoptr(GOptionContext) ctx = g_option_context_new("— check Perfetto traces");
    g_autoptr(GError) error = NULL;
    tool_check_setup_context(ctx);
    g_option_context_add_main_entries(ctx, version_entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
        fprintf(stderr, PROG ": %s\nTry '" PROG " --help'.\n", error->message);
        return TOOL_EXIT_USAGE;
    }
    if (opt_version) {
        tool_print_version(PROG);
        tool_check_free_args();
        return TOOL_EXIT_PASS;
    }
    gchar **paths = tool_check_files();
    if (!paths || !paths[0]) {
        fprintf(stderr,
                PROG ": no input file (use - for standard input)\nTry '" PROG " --help'.\n");
        return TOOL_EXIT_USAGE;
    }
    tool_check_config cfg;
    if (!tool_check_config_build(PROG, &cfg)) {
        tool_check_config_clear(&cfg);
        return TOOL_EXIT_USAGE;
    }

    const bool tty = !tool_check_outputs_get()->no_progress && isatty(STDERR_FILENO);
    size_t n_files = g_strv_length(paths);
    tk_file_result *files = g_new0(tk_file_result, n_files);
    g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);
    bool unreadable = false;
    for (size_t i = 0; i < n_files; i++)
        unreadable |= !tool_check_file(PROG, paths[i], &cfg.o, tty, &files[i], errors);

    int status = report(files, n_files, &cfg.o, unreadable);
    if (!tool_check_config_close(PROG, &cfg))
        status = TOOL_EXIT_USAGE;

    for (size_t i = 0; i < n_files; i++)
        tk_result_free(files[i].result);
    g_free(files);
    tool_check_config_clear(&cfg);
    tool_check_free_args();
    return status;
}
