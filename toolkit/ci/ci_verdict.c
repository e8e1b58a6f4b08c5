/* SPDX-License-Identifier: MIT */
/* gputrace-ci's run and verdict: the backend and the program, the trace
 * checked in-process with gputrace-check's code (tool_check.c), gputrace-ci's
 * own cases (docs/ci.md), the verdict line and the JUnit file, which embeds
 * gputrace-check's test suites through tk_report. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "toolkit/ci/ci.h"
#include "toolkit/tk_report.h"
#include "toolkit/tk_svg.h"
#include "toolkit/tool_check.h"
#include "toolkit/tool_common.h"

typedef struct ci_case {
    const char *name;
    gchar *failure; /* NULL: passed */
} ci_case;

enum {
    C_PROBE, /* only with --probe */
    C_PROGRAM,
    C_TRACE,
    C_EVENTS,
    C_CHECK,
    C_CLOCK,
    C_COUNT
};

/* Everything the verdict is made of. */
typedef struct ci_verdict {
    ci_case cases[C_COUNT];
    int status; /* the program's wait status */
    gboolean timed_out;
    int check_rc; /* gputrace-check's exit status; -1: not run (no trace) */
    tk_file_result check;
    GPtrArray *errors; /* messages check.open_error points to */
    ci_probe_result probe;
} ci_verdict;

static void xml_escaped(GString *s, const char *text)
{
    g_autofree gchar *e = g_markup_escape_text(text, -1);
    g_string_append(s, e);
}

/* The JUnit file: gputrace-ci's cases (those with a name) as one test
 * suite, then gputrace-probe's suites (--probe), then, when the check ran,
 * gputrace-check's own suites with the trace named `shown` (the temporary
 * file is removed after the run). */
static gboolean write_junit(const gchar *path, const gchar *suite, const ci_case *cases, size_t n,
                            const ci_probe_result *probe, tk_file_result *check,
                            const tk_check_options *o, const gchar *shown, double seconds,
                            GError **error)
{
    size_t inner_tests = probe->junit_tests, inner_failures = probe->junit_failures;
    char *inner = NULL;
    size_t inner_len = 0;
    if (check) {
        const char *path_seen = check->path;
        check->path = shown;
        tk_report_junit_counts(check, 1, o, &inner_tests, &inner_failures);
        FILE *m = open_memstream(&inner, &inner_len);
        if (m) {
            tk_report_junit_suites(m, check, 1, o);
            fclose(m);
        }
        check->path = path_seen;
    }
    unsigned failures = 0, named = 0;
    for (size_t i = 0; i < n; i++) {
        failures += cases[i].failure != NULL;
        named += cases[i].name != NULL;
    }

    GString *s = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    g_string_append_printf(s, "<testsuites name=\"" PROG "\" tests=\"%zu\" failures=\"%zu\">\n",
                           named + inner_tests, failures + inner_failures);
    g_string_append(s, "  <testsuite name=\"");
    xml_escaped(s, suite);
    g_string_append_printf(s, "\" tests=\"%u\" failures=\"%u\" time=\"%.3f\">\n", named, failures,
                           seconds);
    for (size_t i = 0; i < n; i++) {
        if (!cases[i].name)
            continue;
        g_string_append_printf(s, "    <testcase classname=\"" PROG "\" name=\"%s\">",
                               cases[i].name);
        if (cases[i].failure) {
            g_string_append(s, "<failure type=\"error\" message=\"");
            xml_escaped(s, cases[i].failure);
            g_string_append(s, "\"/>");
        }
        g_string_append(s, "</testcase>\n");
    }
    g_string_append(s, "  </testsuite>\n");
    if (probe->junit_suites) {
        g_string_append(s, probe->junit_suites);
        g_string_append_c(s, '\n');
    }
    if (inner)
        g_string_append(s, inner);
    g_string_append(s, "</testsuites>\n");
    free(inner);
    gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, error);
    g_string_free(s, TRUE);
    return ok;
}

/* The GPU clock(s) of the trace, read with the toolkit: the worst error
 * bound, and whether any clock converted timestamps without one. */
typedef struct clock_facts {
    gboolean readable;
    uint64_t gpu_events, submits;
    int64_t worst_bound_ns; /* -1: none known */
    gchar *unknown;         /* description of a clock without a bound, or NULL */
} clock_facts;

static void read_clock_facts(const gchar *trace, clock_facts *f)
{
    memset(f, 0, sizeof *f);
    f->worst_bound_ns = -1;
    int fd = open(trace, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    tk_check_options o;
    tk_check_options_default(&o);
    tk_result *res = tk_check_fd(fd, &o, NULL, NULL);
    close(fd);
    if (!res)
        return;
    f->readable = !res->input_error;
    f->gpu_events = res->gpu_render_stage_events;
    f->submits = res->vk_queue_submits;
    for (size_t i = 0; i < res->n_clocks; i++) {
        const tk_clock_report *c = &res->clocks[i];
        if (c->info.scope == TK_SCOPE_BUILTIN || c->info.conversions == 0)
            continue;
        if (!c->error_known) {
            if (!f->unknown)
                f->unknown =
                    g_strdup_printf("clock %" PRId64 " converted %" PRIu64
                                    " timestamp(s) but its error bound is unknown (%" PRIu64
                                    " snapshot(s): drift cannot be measured)",
                                    c->info.id, c->info.conversions, c->info.snapshots);
        } else if (c->max_error_ns > f->worst_bound_ns) {
            f->worst_bound_ns = c->max_error_ns;
        }
    }
    tk_result_free(res);
}

static gboolean expect_given(void)
{
    for (guint i = 0; i < ci_opt.check_args->len; i++) {
        if (strcmp(ci_opt.check_args->pdata[i], "--expect-gpu-events") == 0)
            return TRUE;
    }
    return FALSE;
}

/* The backend chosen by the options, started; the program's environment
 * points at it. */
static int start_backend(ci_run *r)
{
    g_autoptr(GError) error = NULL;
    if (ci_opt.service || ci_opt.traced) {
        r->env = g_environ_setenv(r->env, "GPUTRACE_BACKEND", "system", TRUE);
        r->env = g_environ_unsetenv(r->env, "GPUTRACE_OUTPUT");
        r->env = g_environ_setenv(r->env, "GPUTRACE_STARTUP_WAIT_MS", CI_STARTUP_WAIT_MS, FALSE);
        gboolean ok = ci_opt.service ? ci_start_service(r, &error) : ci_start_traced(r, &error);
        if (!ok) {
            g_printerr(PROG ": %s\n", error->message);
            return TOOL_EXIT_USAGE;
        }
    } else {
        r->env = g_environ_setenv(r->env, "GPUTRACE_BACKEND", "inprocess", TRUE);
        r->env = g_environ_setenv(r->env, "GPUTRACE_OUTPUT", r->trace, TRUE);
    }

    return TOOL_EXIT_PASS;
}

/* Runs the program to its end (or time-out); a non-zero return is the
 * exit status of a run that cannot go on. */
static int run_program(ci_run *r, ci_verdict *v)
{
    g_autoptr(GError) error = NULL;
    GPid pid = ci_spawn(ci_opt.command, r->env, NULL, TRUE, &error);
    if (pid < 0) {
        g_printerr(PROG ": cannot run %s: %s\n", ci_opt.command[0], error->message);
        return TOOL_EXIT_USAGE;
    }
    if (!ci_wait_pid(pid, ci_opt.timeout_s > 0 ? (gint64)ci_opt.timeout_s * 1000 : -1,
                     &v->status)) {
        v->timed_out = !ci_interrupted;
        v->status = ci_stop_pid(pid, 5000, TRUE, NULL);
    }
    /* Whatever the program left behind (a hung child of a fork, a daemon)
    * must not outlive the run. */
    for (int i = 0; i < 50 && kill(-pid, 0) == 0; i++)
        g_usleep(20000); /* children exiting with it (xvfb-run's X server) */
    if (kill(-pid, 0) == 0) {
        g_printerr(PROG ": processes left behind by %s: killed\n", ci_opt.command[0]);
        kill(-pid, SIGKILL);
    }
    if (ci_interrupted) {
        g_printerr(PROG ": interrupted (signal %d)\n", (int)ci_interrupted);
        return TOOL_EXIT_USAGE;
    }
    (void)r;
    return TOOL_EXIT_PASS;
}

/* gputrace-check's part, in-process: its summary (unless -q), its exit
 * status (0, 1, 2) and the result for the JUnit file. */
static int run_check(ci_run *r, const tool_check_config *cfg, ci_verdict *v)
{
    const char *check_prog = "gputrace-check"; /* its messages read as before */
    const bool readable =
        tool_check_file(check_prog, r->trace, &cfg->o, false, &v->check, v->errors);
    if (!ci_opt.quiet) {
        tk_report_human(stdout, &v->check, 1, &cfg->o, false);
        fflush(stdout);
    }
    int rc = !readable                            ? TOOL_EXIT_USAGE
             : tk_file_failed(&v->check, &cfg->o) ? TOOL_EXIT_FAIL
                                                  : TOOL_EXIT_PASS;
    const char *plot = tool_check_plot_path();
    if (plot && !tk_svg_write(plot, &v->check, 1)) {
        tool_error(check_prog, "%s: %s", plot, g_strerror(errno));
        rc = TOOL_EXIT_USAGE;
    }
    return rc;
}

/* The trace's cases: written at all, checked, GPU events, clock bounds. */
static void judge_trace(ci_run *r, const tool_check_config *cfg, ci_verdict *v, clock_facts *facts)
{
    ci_case *cases = v->cases;
    struct stat st;
    if (stat(r->trace, &st) != 0 || st.st_size == 0) {
        if (ci_opt.service || ci_opt.traced)
            cases[C_TRACE].failure =
                g_strdup_printf("no trace collected: %s wrote nothing", r->backend_name);
        else
            cases[C_TRACE].failure =
                g_strdup("no trace written: was the layer loaded? (GPUTRACE_LOG=info shows it)");
        cases[C_CHECK].failure = g_strdup("not run: no trace");
        return;
    }
    if (r->backend_killed)
        cases[C_TRACE].failure = g_strdup_printf(
            "%s did not stop within %d ms and was killed: the trace may be incomplete",
            r->backend_name, STOP_TIMEOUT_MS);
    v->check_rc = run_check(r, cfg, v);
    if (v->check_rc == 1)
        cases[C_CHECK].failure = g_strdup("gputrace-check failed (violations above)");
    else if (v->check_rc != 0)
        cases[C_CHECK].failure =
            g_strdup_printf("gputrace-check could not read the trace (exit %d)", v->check_rc);
    read_clock_facts(r->trace, facts);
    if (facts->readable && facts->gpu_events == 0 && !ci_opt.allow_no_events && !expect_given()) {
        cases[C_EVENTS].failure = g_strdup_printf(
            "the trace holds no GPU render stage%s",
            ci_opt.service || ci_opt.traced
                ? " (was the layer loaded, and did the service answer within the layer's "
                  "start-up wait? GPUTRACE_LOG=info shows both)"
                : "");
    }
    if (facts->unknown && !ci_opt.allow_unknown)
        cases[C_CLOCK].failure = g_strdup(facts->unknown);
}

/* The verdict line on stdout and each failed case on stderr; returns the
 * exit status, like gputrace-check's: 2 when the trace cannot be read,
 * else 1 on any failure. */
static int print_verdict(const ci_verdict *v, const clock_facts *facts)
{
    const ci_case *cases = v->cases;
    const int check_rc = v->check_rc;
    gboolean failed = FALSE;
    for (size_t i = 0; i < C_COUNT; i++)
        failed = failed || cases[i].failure;
    int exit_code = check_rc >= TOOL_EXIT_USAGE ? TOOL_EXIT_USAGE
                    : failed                    ? TOOL_EXIT_FAIL
                                                : TOOL_EXIT_PASS;
    g_autofree gchar *why = ci_describe_status(v->status);
    const gboolean timed_out = v->timed_out;
    GString *summary = g_string_new(NULL);
    g_string_append_printf(summary, "%s %s", ci_opt.command[0], timed_out ? "timed out" : why);
    if (v->probe.status >= 0)
        g_string_append_printf(summary, "; driver probe %s",
                               v->probe.status == 0 ? "pass" : "FAIL");
    if (check_rc >= 0) {
        g_string_append_printf(summary, "; %" PRIu64 " GPU render stages, %" PRIu64 " submits",
                               facts->gpu_events, facts->submits);
        if (facts->worst_bound_ns >= 0)
            g_string_append_printf(summary, "; GPU clock error <= %" PRId64 " ns",
                                   facts->worst_bound_ns);
        g_string_append_printf(summary, "; gputrace-check %s",
                               check_rc == 0   ? "pass"
                               : check_rc == 1 ? "FAIL"
                                               : "error");
    }
    printf(PROG ": %s (%s backend): %s\n", exit_code == TOOL_EXIT_PASS ? "PASS" : "FAIL",
           ci_opt.service  ? "gputrace-service"
           : ci_opt.traced ? "traced"
                           : "embedded",
           summary->str);
    fflush(stdout);
    g_string_free(summary, TRUE);
    for (size_t i = 0; i < C_COUNT; i++) {
        if (cases[i].name && cases[i].failure)
            g_printerr(PROG ": %s: %s\n", cases[i].name, cases[i].failure);
    }

    return exit_code;
}

/* --keep-trace and --junit; a failure to write them turns a pass into 2. */
static int write_outputs(ci_run *r, ci_verdict *v, const tool_check_config *cfg, double started,
                         int exit_code)
{
    struct stat st;
    if (ci_opt.keep_trace && stat(r->trace, &st) == 0) {
        g_autoptr(GError) e = NULL;
        if (!ci_copy_file(r->trace, ci_opt.keep_trace, &e)) {
            g_printerr(PROG ": --keep-trace: %s\n", e->message);
            exit_code = exit_code == TOOL_EXIT_PASS ? TOOL_EXIT_USAGE : exit_code;
        }
    }
    if (ci_opt.junit) {
        g_autoptr(GError) e = NULL;
        g_autofree gchar *cmdline = g_strjoinv(" ", ci_opt.command);
        g_autofree gchar *suite = g_strdup_printf(PROG ": %s", cmdline);
        if (!write_junit(ci_opt.junit, suite, v->cases, C_COUNT, &v->probe,
                         v->check_rc >= 0 ? &v->check : NULL, &cfg->o,
                         ci_opt.keep_trace ? ci_opt.keep_trace : "trace.pftrace",
                         (double)g_get_monotonic_time() / 1e6 - started, &e)) {
            g_printerr(PROG ": --junit: %s\n", e->message);
            exit_code = exit_code == TOOL_EXIT_PASS ? TOOL_EXIT_USAGE : exit_code;
        }
    }
    return exit_code;
}

int ci_execute(ci_run *r, const tool_check_config *cfg, double started)
{
    ci_verdict v = { .cases = { { ci_opt.probe ? "probe" : NULL, NULL },
                                { "program", NULL },
                                { "trace", NULL },
                                { "gpu-events", NULL },
                                { "gputrace-check", NULL },
                                { "clock-error-known", NULL } },
                     .check_rc = -1,
                     .probe = { .status = -1 } };
    /* The driver first: a trace is trusted only from a driver that passed.
     * The program runs either way, so both verdicts reach the report. */
    int rc = ci_opt.probe ? ci_run_probe(r, &v.probe) : TOOL_EXIT_PASS;
    if (rc == TOOL_EXIT_PASS && v.probe.status == TOOL_EXIT_FAIL)
        v.cases[C_PROBE].failure = g_strdup(v.probe.summary);
    if (rc == TOOL_EXIT_PASS)
        rc = start_backend(r);
    if (rc == TOOL_EXIT_PASS)
        rc = run_program(r, &v);
    if (rc != TOOL_EXIT_PASS) {
        g_free(v.cases[C_PROBE].failure);
        ci_probe_result_clear(&v.probe);
        return rc;
    }
    ci_stop_backend(r);

    g_autofree gchar *why = ci_describe_status(v.status);
    if (v.timed_out)
        v.cases[C_PROGRAM].failure =
            g_strdup_printf("%s timed out after %d s", ci_opt.command[0], ci_opt.timeout_s);
    else if (!WIFEXITED(v.status) || WEXITSTATUS(v.status) != 0)
        v.cases[C_PROGRAM].failure = g_strdup_printf("%s %s", ci_opt.command[0], why);

    v.errors = g_ptr_array_new_with_free_func(g_free);
    clock_facts facts = { .worst_bound_ns = -1 };
    judge_trace(r, cfg, &v, &facts);
    if (r->backend_log &&
        (v.cases[C_TRACE].failure || v.cases[C_EVENTS].failure || v.cases[C_CHECK].failure)) {
        g_autofree gchar *blog = NULL;
        if (g_file_get_contents(r->backend_log, &blog, NULL, NULL) && *blog)
            g_printerr("--- %s log:\n%s", r->backend_name, blog);
    }
    int exit_code = print_verdict(&v, &facts);
    exit_code = write_outputs(r, &v, cfg, started, exit_code);

    for (size_t i = 0; i < C_COUNT; i++)
        g_free(v.cases[i].failure);
    g_free(facts.unknown);
    ci_probe_result_clear(&v.probe);
    tk_result_free(v.check.result);
    g_ptr_array_unref(v.errors);
    return exit_code;
}
