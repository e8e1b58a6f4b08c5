/* SPDX-License-Identifier: MIT */
/* gputrace-ci's parts: ci_main.c (options, environment, main),
 * ci_process.c (finding the tools and the layer, processes, backends),
 * ci_probe.c (--probe: gputrace-probe before the program),
 * ci_verdict.c (the run, the in-process check, the verdict, JUnit). */
#ifndef CI_H
#define CI_H

#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#define PROG             "gputrace-ci"
#define LAYER_NAME       "VK_LAYER_GPUTRACE_timeline"
#define LAYER_MANIFEST   "VkLayer_gputrace_timeline.json"
#define DATA_SOURCE      "gpu.renderstages"
#define LAVAPIPE_ICD     "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
#define STOP_TIMEOUT_MS  20000 /* service / perfetto: flush, stop, write */
#define START_TIMEOUT_MS 5000
/* GPUTRACE_STARTUP_WAIT_MS for the program under a system backend, unless
 * the caller set one: CI wants the first frames traced more than it wants
 * a fast start. A service that answers costs a few ms whatever the bound;
 * the producer gives up on one that does not after 5 s anyway. */
#define CI_STARTUP_WAIT_MS "5000"
/* What Perfetto's client logs right before it asks traced to enable the
 * session (perfetto_cmd.cc, OnConnect). */
#define PERFETTO_CONNECTED "Connected to the Perfetto traced service"
/* traced handles EnableTracing within milliseconds of that line; this
 * margin covers a loaded machine. */
#define PERFETTO_ENABLE_MARGIN_MS 200

/* The command line (ci_main.c fills it). */
typedef struct ci_options {
    gboolean service, traced, lavapipe, quiet, allow_unknown, allow_no_events, version, probe;
    gchar *layer_path, *keep_trace, *junit, *check_exe, *service_exe, *perfetto, *probe_exe;
    gchar **service_args, **probe_args, **command;
    gint timeout_s;
    GPtrArray *check_args; /* gputrace-check options, passed through */
} ci_options;

extern ci_options ci_opt;
/* The signal that asked us to stop, or 0. */
extern volatile sig_atomic_t ci_interrupted;

/* One run: its temporary directory, trace, environment and backend. */
typedef struct ci_run {
    gchar *tmp;
    gchar *trace;
    gchar **env;
    GPid backend_pid;
    const char *backend_name;
    gchar *backend_log;
    gboolean backend_killed;
} ci_run;

/* ---- ci_process.c ---- */

gint64 ci_now_ms(void);
gchar *ci_find_tool(const gchar *opt, const gchar *build_path, const gchar *name);
gchar *ci_find_layer_dir(void);
gchar **ci_env_prepend_list(gchar **env, const gchar *var, const gchar *first);
gboolean ci_copy_file(const gchar *from, const gchar *to, GError **error);
void ci_remove_tree(const gchar *dir);
GPid ci_spawn(gchar **argv, gchar **env, const gchar *log_path, gboolean group, GError **error);
gboolean ci_wait_pid(GPid pid, gint64 timeout_ms, int *status);
int ci_stop_pid(GPid pid, gint64 grace_ms, gboolean group, gboolean *killed);
gchar *ci_describe_status(int status);
gboolean ci_start_service(ci_run *r, GError **error);
gboolean ci_start_traced(ci_run *r, GError **error);
void ci_stop_backend(ci_run *r);

/* ---- ci_probe.c ---- */

/* What --probe found: gputrace-probe's exit status (0 pass, 1 a check
 * failed), its summary line, and its JUnit test suites. */
typedef struct ci_probe_result {
    int status; /* -1: not run */
    gchar *summary;
    gchar *junit_suites; /* <testsuite> elements, or NULL */
    unsigned junit_tests, junit_failures;
} ci_probe_result;

/* Runs gputrace-probe (its report on stdout unless -q); TOOL_EXIT_USAGE
 * when it could not run or could not judge (exit 2, killed, timed out). */
int ci_run_probe(ci_run *r, ci_probe_result *p);
void ci_probe_result_clear(ci_probe_result *p);

/* ---- ci_verdict.c ---- */

/* Runs the program with the backend, checks the trace and reports;
 * returns the exit status. `check` holds the parsed gputrace-check
 * options. */
struct tool_check_config;
int ci_execute(ci_run *r, const struct tool_check_config *check, double started);

#endif /* CI_H */
