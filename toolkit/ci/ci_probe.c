/* SPDX-License-Identifier: MIT */
/* gputrace-ci --probe: gputrace-probe runs before the program, on the same
 * driver (the caller's environment and --lavapipe, without our layer:
 * GPUTRACE_DISABLE=1), so a trace is only trusted from a driver whose
 * timestamps passed. Its report goes to standard output, its summary line
 * becomes the `probe` case and its JUnit suites join gputrace-ci's. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <glib.h>

#include "toolkit/ci/ci.h"
#include "toolkit/tool_common.h"

/* How long the probe may take without a --timeout (a few seconds per
 * queue family normally). */
#define PROBE_TIMEOUT_MS (300 * 1000)

/* The <testsuite> elements of the probe's JUnit file, and its counts. */
static void read_junit(const gchar *path, ci_probe_result *p)
{
    g_autofree gchar *xml = NULL;
    if (!g_file_get_contents(path, &xml, NULL, NULL))
        return;
    const gchar *head = strstr(xml, "<testsuites ");
    const gchar *first = head ? strstr(head, "\n  <testsuite") : NULL;
    const gchar *end = strstr(xml, "</testsuites>");
    if (!head || !first || !end || end < first)
        return;
    unsigned tests = 0, failures = 0;
    const gchar *t = strstr(head, "tests=\""), *f = strstr(head, "failures=\"");
    if (!t || !f || sscanf(t, "tests=\"%u\"", &tests) != 1 ||
        sscanf(f, "failures=\"%u\"", &failures) != 1)
        return;
    p->junit_suites = g_strndup(first + 1, (gsize)(end - first - 1));
    p->junit_tests = tests;
    p->junit_failures = failures;
}

/* The probe's last "gputrace-probe: VERDICT: ..." line. */
static gchar *summary_line(const gchar *log)
{
    const gchar *last = NULL;
    for (const gchar *p = log; (p = strstr(p, "gputrace-probe: ")); p++) {
        if (p == log || p[-1] == '\n')
            last = p;
    }
    if (!last)
        return NULL;
    const gchar *nl = strchr(last, '\n');
    return nl ? g_strndup(last, (gsize)(nl - last)) : g_strdup(last);
}

static gchar **probe_environment(void)
{
    gchar **env = g_get_environ();
    env = g_environ_setenv(env, "GPUTRACE_DISABLE", "1", TRUE);
    if (ci_opt.lavapipe) {
        env = g_environ_setenv(env, "VK_DRIVER_FILES", LAVAPIPE_ICD, TRUE);
        env = g_environ_setenv(env, "VK_ICD_FILENAMES", LAVAPIPE_ICD, TRUE);
    }
    return env;
}

int ci_run_probe(ci_run *r, ci_probe_result *p)
{
    memset(p, 0, sizeof *p);
    p->status = -1;
    g_autofree gchar *exe = ci_find_tool(ci_opt.probe_exe, GTCI_BUILD_PROBE, "gputrace-probe");
    if (!exe) {
        g_printerr(PROG ": --probe: gputrace-probe not found (use --gputrace-probe PATH)\n");
        return TOOL_EXIT_USAGE;
    }
    g_autofree gchar *junit = g_build_filename(r->tmp, "probe.xml", NULL);
    g_autofree gchar *log = g_build_filename(r->tmp, "probe.log", NULL);
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup(exe));
    g_ptr_array_add(argv, g_strdup_printf("--junit=%s", junit));
    for (gchar **a = ci_opt.probe_args; a && *a; a++)
        g_ptr_array_add(argv, g_strdup(*a));
    g_ptr_array_add(argv, NULL);
    g_auto(GStrv) env = probe_environment();
    g_autoptr(GError) error = NULL;
    GPid pid = ci_spawn((gchar **)argv->pdata, env, log, TRUE, &error);
    g_ptr_array_unref(argv);
    if (pid < 0) {
        g_printerr(PROG ": cannot run %s: %s\n", exe, error->message);
        return TOOL_EXIT_USAGE;
    }
    int status = 0;
    const gint64 limit = ci_opt.timeout_s > 0 ? (gint64)ci_opt.timeout_s * 1000 : PROBE_TIMEOUT_MS;
    const gboolean exited = ci_wait_pid(pid, limit, &status);
    if (!exited)
        status = ci_stop_pid(pid, 2000, TRUE, NULL);
    g_autofree gchar *text = NULL;
    g_file_get_contents(log, &text, NULL, NULL);
    if (text && !ci_opt.quiet)
        fputs(text, stdout);
    p->summary = text ? summary_line(text) : NULL;
    if (ci_interrupted) {
        g_printerr(PROG ": interrupted (signal %d)\n", (int)ci_interrupted);
        return TOOL_EXIT_USAGE;
    }
    if (!exited || !WIFEXITED(status) || WEXITSTATUS(status) > TOOL_EXIT_FAIL) {
        g_autofree gchar *why = exited ? ci_describe_status(status) : g_strdup("timed out");
        g_printerr(PROG ": --probe: gputrace-probe %s%s%s\n", why, p->summary ? ": " : "",
                   p->summary ? p->summary : "");
        if (text && ci_opt.quiet)
            g_printerr("%s", text);
        return TOOL_EXIT_USAGE;
    }
    p->status = WEXITSTATUS(status);
    if (!p->summary)
        p->summary = g_strdup_printf("gputrace-probe exited with status %d", p->status);
    read_junit(junit, p);
    return TOOL_EXIT_PASS;
}

void ci_probe_result_clear(ci_probe_result *p)
{
    g_free(p->summary);
    g_free(p->junit_suites);
    memset(p, 0, sizeof *p);
}
