/* gputrace-ci — one command for driver CI: run any Vulkan program under
 * VK_LAYER_GPUTRACE_timeline, collect its trace (embedded backend,
 * gputrace-service, or a running traced), check it with gputrace-check,
 * print one verdict and exit like gputrace-check (0 pass, 1 fail, 2 usage
 * or unusable input). The program failing (non-zero exit, signal, time-out)
 * fails the run too. docs/ci.md has the details and a CI job.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "toolkit/tk_checks.h"

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

enum {
    EXIT_PASS = 0,
    EXIT_FAIL = 1,
    EXIT_USAGE = 2
};

/* ---- options -------------------------------------------------------------------- */

static gboolean opt_service, opt_traced, opt_lavapipe, opt_quiet, opt_allow_unknown;
static gboolean opt_allow_no_events;
static gchar *opt_layer_path, *opt_keep_trace, *opt_junit, *opt_check_exe, *opt_service_exe;
static gchar *opt_perfetto;
static gchar **opt_service_args, **opt_command;
static gint opt_timeout_s;
static GPtrArray *check_args; /* pass-through to gputrace-check */

static gboolean pass_through(const gchar *name, const gchar *value, gpointer data, GError **error)
{
    (void)data;
    (void)error;
    g_ptr_array_add(check_args, g_strdup(name));
    if (value)
        g_ptr_array_add(check_args, g_strdup(value));
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
    { "service", 0, 0, G_OPTION_ARG_NONE, &opt_service,
      "Record with gputrace-service on a private socket (system backend)", NULL },
    { "traced", 0, 0, G_OPTION_ARG_NONE, &opt_traced,
      "Record with the running traced through perfetto (system backend)", NULL },
    { "lavapipe", 0, 0, G_OPTION_ARG_NONE, &opt_lavapipe,
      "Force Mesa's lavapipe driver (VK_DRIVER_FILES, VK_ICD_FILENAMES)", NULL },
    { "layer-path", 0, 0, G_OPTION_ARG_FILENAME, &opt_layer_path,
      "Directory holding " LAYER_MANIFEST " (default: build tree or installed)", "DIR" },
    { "keep-trace", 0, 0, G_OPTION_ARG_FILENAME, &opt_keep_trace, "Keep the trace as FILE",
      "FILE" },
    { "junit", 0, 0, G_OPTION_ARG_FILENAME, &opt_junit,
      "Write JUnit XML (the run, and every gputrace-check test case) to FILE", "FILE" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &opt_timeout_s,
      "Kill the program after SECONDS and fail (default 0: no limit)", "SECONDS" },
    { "allow-unknown-clock-error", 0, 0, G_OPTION_ARG_NONE, &opt_allow_unknown,
      "Pass even when GPU timestamps were converted with a clock whose error bound is unknown",
      NULL },
    { "allow-no-gpu-events", 0, 0, G_OPTION_ARG_NONE, &opt_allow_no_events,
      "Pass even when the trace holds no GPU render stage (default: at least one, or "
      "--expect-gpu-events)",
      NULL },
    { "service-option", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_service_args,
      "Extra option for gputrace-service (repeatable, e.g. --service-option=--slow-ms=5)", "OPT" },
    { "perfetto", 0, 0, G_OPTION_ARG_FILENAME, &opt_perfetto,
      "Perfetto command-line client for --traced (default: perfetto, else tracebox)", "PATH" },
    { "gputrace-check", 0, 0, G_OPTION_ARG_FILENAME, &opt_check_exe,
      "gputrace-check to use (default: build tree, installed, PATH)", "PATH" },
    { "gputrace-service", 0, 0, G_OPTION_ARG_FILENAME, &opt_service_exe,
      "gputrace-service to use (default: build tree, installed, PATH)", "PATH" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &opt_quiet,
      "Print only the verdict (not gputrace-check's summary)", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_command, NULL, NULL },
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
    PT("plot", 1, "Write an SVG of each custom clock's offset", "FILE.svg"),
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
    "fails, or when GPU timestamps were converted with a clock whose error bound\n"
    "is unknown (fewer than two usable snapshots; --allow-unknown-clock-error).\n"
    "\n"
    "Exit status:\n"
    "  0  pass\n"
    "  1  the program or the trace failed\n"
    "  2  usage error, a tool could not be started, or the trace is unreadable\n"
    "\n"
    "See docs/ci.md.";

/* ---- small helpers ------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

static gint64 now_ms(void)
{
    return g_get_monotonic_time() / 1000;
}

static gchar *self_dir(void)
{
    g_autofree gchar *exe = g_file_read_link("/proc/self/exe", NULL);
    return exe ? g_path_get_dirname(exe) : NULL;
}

/* Whether this binary is the one in the build tree (then the build tree's
 * layer and tools are used, not installed ones). */
static gboolean running_from_build_tree(void)
{
    g_autofree gchar *dir = self_dir();
    if (!dir)
        return FALSE;
    char a[PATH_MAX], b[PATH_MAX];
    return realpath(dir, a) && realpath(GTCI_BUILD_DIR, b) && strcmp(a, b) == 0;
}

static gchar *find_tool(const gchar *opt, const gchar *build_path, const gchar *name)
{
    if (opt)
        return g_strdup(opt);
    if (running_from_build_tree() && g_file_test(build_path, G_FILE_TEST_IS_EXECUTABLE))
        return g_strdup(build_path);
    g_autofree gchar *installed = g_build_filename(GTCI_BINDIR, name, NULL);
    if (g_file_test(installed, G_FILE_TEST_IS_EXECUTABLE))
        return g_steal_pointer(&installed);
    return g_find_program_in_path(name);
}

static gchar *find_layer_dir(void)
{
    if (opt_layer_path)
        return g_strdup(opt_layer_path);
    g_autofree gchar *b = g_build_filename(GTCI_BUILD_LAYER_DIR, LAYER_MANIFEST, NULL);
    if (running_from_build_tree() && g_file_test(b, G_FILE_TEST_EXISTS))
        return g_strdup(GTCI_BUILD_LAYER_DIR);
    g_autofree gchar *i = g_build_filename(GTCI_INSTALLED_LAYER_DIR, LAYER_MANIFEST, NULL);
    if (g_file_test(i, G_FILE_TEST_EXISTS))
        return g_strdup(GTCI_INSTALLED_LAYER_DIR);
    return NULL;
}

/* VAR=first:rest, dropping `first` from rest (no duplicates). */
static gchar **env_prepend_list(gchar **env, const gchar *var, const gchar *first)
{
    const gchar *old = g_environ_getenv(env, var);
    GString *s = g_string_new(first);
    if (old && *old) {
        g_auto(GStrv) parts = g_strsplit(old, ":", -1);
        for (gchar **p = parts; *p; p++) {
            if (**p && strcmp(*p, first) != 0)
                g_string_append_printf(s, ":%s", *p);
        }
    }
    env = g_environ_setenv(env, var, s->str, TRUE);
    g_string_free(s, TRUE);
    return env;
}

static gboolean copy_file(const gchar *from, const gchar *to, GError **error)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: %s", from,
                    g_strerror(errno));
        return FALSE;
    }
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: %s", to,
                    g_strerror(errno));
        close(in);
        return FALSE;
    }
    gboolean ok = TRUE;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                ok = FALSE;
                break;
            }
            done += w;
        }
        if (!ok)
            break;
    }
    int saved = errno;
    close(in);
    if (close(out) != 0)
        ok = FALSE;
    if (!ok)
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "copying to %s: %s", to,
                    g_strerror(saved));
    return ok;
}

static void remove_tree(const gchar *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (d) {
        const gchar *name;
        while ((name = g_dir_read_name(d))) {
            g_autofree gchar *p = g_build_filename(dir, name, NULL);
            g_unlink(p);
        }
        g_dir_close(d);
    }
    g_rmdir(dir);
}

/* ---- processes ------------------------------------------------------------------------ */

static void own_process_group(gpointer data)
{
    (void)data;
    setpgid(0, 0); /* async-signal-safe */
}

/* Starts argv with env; stdout/stderr to `log_path` when given (else
 * inherited). With `group`, the child leads a process group of its own, so
 * whatever it forks can be stopped with it. Returns the pid, or -1 with
 * `error` set. */
static GPid spawn(gchar **argv, gchar **env, const gchar *log_path, gboolean group, GError **error)
{
    int fd = -1;
    if (log_path) {
        fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: %s", log_path,
                        g_strerror(errno));
            return -1;
        }
    }
    GPid pid = -1;
    gboolean ok = g_spawn_async_with_pipes_and_fds(
        NULL, (const gchar *const *)argv, (const gchar *const *)env,
        G_SPAWN_SEARCH_PATH_FROM_ENVP | G_SPAWN_DO_NOT_REAP_CHILD |
            (fd >= 0 ? 0 : G_SPAWN_CHILD_INHERITS_STDIN),
        group ? own_process_group : NULL, NULL, -1, fd, fd, NULL, NULL, 0, &pid, NULL, NULL, NULL,
        error);
    if (fd >= 0)
        close(fd);
    return ok ? pid : -1;
}

/* Waits for pid up to timeout_ms (<0: forever, but a pending signal to us
 * ends the wait). True with *status when it exited. */
static gboolean wait_pid(GPid pid, gint64 timeout_ms, int *status)
{
    gint64 deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return TRUE;
        if (r < 0 && errno != EINTR)
            return FALSE;
        if ((deadline >= 0 && now_ms() >= deadline) || interrupted)
            return FALSE;
        g_usleep(10000);
    }
}

/* SIGTERM, then SIGKILL after grace_ms; reaps. With `group`, the whole
 * process group the pid leads. */
static int stop_pid(GPid pid, gint64 grace_ms, gboolean group, gboolean *killed)
{
    int status = 0;
    pid_t target = group ? -pid : pid;
    kill(target, SIGTERM);
    if (!wait_pid(pid, grace_ms, &status)) {
        kill(target, SIGKILL);
        waitpid(pid, &status, 0);
        if (killed)
            *killed = TRUE;
    }
    return status;
}

static gchar *describe_status(int status)
{
    if (WIFEXITED(status))
        return g_strdup_printf("exited with status %d", WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return g_strdup_printf("was killed by signal %d (%s)", WTERMSIG(status),
                               g_strsignal(WTERMSIG(status)));
    return g_strdup("ended abnormally");
}

/* ---- backends ------------------------------------------------------------------------ */

typedef struct run run;
struct run {
    gchar *tmp;
    gchar *trace;
    gchar **env;
    GPid backend_pid;
    const char *backend_name;
    gchar *backend_log;
    gboolean backend_killed;
};

static gboolean start_service(run *r, GError **error)
{
    g_autofree gchar *exe = find_tool(opt_service_exe, GTCI_BUILD_SERVICE, "gputrace-service");
    if (!exe) {
        g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT,
                    "--service: gputrace-service not found (use --gputrace-service PATH)");
        return FALSE;
    }
    g_autofree gchar *sock = g_build_filename(r->tmp, "producer.sock", NULL);
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup(exe));
    g_ptr_array_add(argv, g_strdup("--socket"));
    g_ptr_array_add(argv, g_strdup(sock));
    g_ptr_array_add(argv, g_strdup("--data-source"));
    g_ptr_array_add(argv, g_strdup(DATA_SOURCE));
    g_ptr_array_add(argv, g_strdup("--output"));
    g_ptr_array_add(argv, g_strdup(r->trace));
    for (gchar **a = opt_service_args; a && *a; a++)
        g_ptr_array_add(argv, g_strdup(*a));
    g_ptr_array_add(argv, NULL);
    r->backend_name = "gputrace-service";
    r->backend_log = g_build_filename(r->tmp, "service.log", NULL);
    r->backend_pid = spawn((gchar **)argv->pdata, r->env, r->backend_log, FALSE, error);
    g_ptr_array_unref(argv);
    if (r->backend_pid < 0)
        return FALSE;
    /* Ready once it listens: the socket exists. */
    gint64 deadline = now_ms() + START_TIMEOUT_MS;
    int status;
    while (!g_file_test(sock, G_FILE_TEST_EXISTS)) {
        if (waitpid(r->backend_pid, &status, WNOHANG) == r->backend_pid) {
            r->backend_pid = -1;
            g_autofree gchar *why = describe_status(status);
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        "gputrace-service %s before listening (log: %s)", why, r->backend_log);
            return FALSE;
        }
        if (now_ms() > deadline) {
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        "gputrace-service is not listening on %s after %d ms", sock,
                        START_TIMEOUT_MS);
            return FALSE;
        }
        g_usleep(10000);
    }
    r->env = g_environ_setenv(r->env, "PERFETTO_PRODUCER_SOCK_NAME", sock, TRUE);
    return TRUE;
}

static gboolean start_traced(run *r, GError **error)
{
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
    g_autofree gchar *perfetto =
        opt_perfetto ? g_strdup(opt_perfetto) : g_find_program_in_path("perfetto");
    if (perfetto) {
        g_ptr_array_add(argv, g_steal_pointer(&perfetto));
    } else {
        gchar *tracebox = g_find_program_in_path("tracebox");
        if (!tracebox) {
            g_ptr_array_unref(argv);
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT,
                        "--traced needs Perfetto's command-line client: perfetto or tracebox in "
                        "PATH, or --perfetto PATH");
            return FALSE;
        }
        g_ptr_array_add(argv, tracebox);
        g_ptr_array_add(argv, g_strdup("perfetto"));
    }
    g_autofree gchar *cfg = g_build_filename(r->tmp, "trace.cfg", NULL);
    static const char config[] = "buffers { size_kb: 65536 fill_policy: RING_BUFFER }\n"
                                 "data_sources { config { name: \"" DATA_SOURCE "\" } }\n";
    if (!g_file_set_contents(cfg, config, -1, error)) {
        g_ptr_array_unref(argv);
        return FALSE;
    }
    g_ptr_array_add(argv, g_strdup("--txt"));
    g_ptr_array_add(argv, g_strdup("-c"));
    g_ptr_array_add(argv, g_strdup(cfg));
    g_ptr_array_add(argv, g_strdup("-o"));
    g_ptr_array_add(argv, g_strdup(r->trace));
    g_ptr_array_add(argv, NULL);
    r->backend_name = "perfetto";
    r->backend_log = g_build_filename(r->tmp, "perfetto.log", NULL);
    r->backend_pid = spawn((gchar **)argv->pdata, r->env, r->backend_log, FALSE, error);
    g_ptr_array_unref(argv);
    if (r->backend_pid < 0)
        return FALSE;
    /* The session must be running before the producer registers, or the
    * layer's start-up wait finds no session and the program's first
    * frames are not traced: wait for the client to log that it is
    * connected (it enables the session right then), plus a margin, and
    * make sure it did not give up (traced not running). A client that
    * logs differently gets START_TIMEOUT_MS, as before this check. */
    gint64 deadline = now_ms() + START_TIMEOUT_MS;
    gboolean connected = FALSE;
    int status;
    while (!connected && now_ms() < deadline) {
        if (wait_pid(r->backend_pid, 20, &status)) {
            r->backend_pid = -1;
            g_autofree gchar *why = describe_status(status);
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        "perfetto %s: is traced running? (log: %s)", why, r->backend_log);
            return FALSE;
        }
        g_autofree gchar *log = NULL;
        connected = g_file_get_contents(r->backend_log, &log, NULL, NULL) &&
                    strstr(log, PERFETTO_CONNECTED) != NULL;
    }
    if (!connected)
        g_printerr(PROG ": perfetto did not log \"" PERFETTO_CONNECTED "\" within %d ms; "
                        "starting the program anyway\n",
                   START_TIMEOUT_MS);
    if (wait_pid(r->backend_pid, PERFETTO_ENABLE_MARGIN_MS, &status)) {
        r->backend_pid = -1;
        g_autofree gchar *why = describe_status(status);
        g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                    "perfetto %s: is traced running? (log: %s)", why, r->backend_log);
        return FALSE;
    }
    return TRUE;
}

static void stop_backend(run *r)
{
    if (r->backend_pid <= 0)
        return;
    stop_pid(r->backend_pid, STOP_TIMEOUT_MS, FALSE, &r->backend_killed);
    r->backend_pid = -1;
}

/* ---- JUnit ------------------------------------------------------------------------------- */

typedef struct ci_case ci_case;
struct ci_case {
    const char *name;
    gchar *failure; /* NULL: passed */
};

static void xml_escaped(GString *s, const char *text)
{
    g_autofree gchar *e = g_markup_escape_text(text, -1);
    g_string_append(s, e);
}

/* `trace` is the temporary trace path gputrace-check saw, `shown` the name
 * to report instead (it is removed after the run). */
static gboolean write_junit(const gchar *path, const gchar *suite, const ci_case *cases, size_t n,
                            const gchar *check_junit, const gchar *trace, const gchar *shown,
                            double seconds, GError **error)
{
    /* gputrace-check's own test suites are kept whole, after ours. */
    g_autofree gchar *inner = NULL;
    unsigned inner_tests = 0, inner_failures = 0;
    g_autofree gchar *check_xml = NULL;
    if (check_junit && g_file_get_contents(check_junit, &check_xml, NULL, NULL)) {
        const char *open = strstr(check_xml, "<testsuites");
        const char *body = open ? strchr(open, '>') : NULL;
        const char *close = g_strrstr(check_xml, "</testsuites>");
        if (body && close && close > body) {
            GString *in = g_string_new_len(body + 1, (gssize)(close - body - 1));
            g_autofree gchar *escaped = g_markup_escape_text(shown, -1);
            g_string_replace(in, trace, escaped, 0);
            inner = g_string_free(in, FALSE);
            for (const char *p = inner; (p = strstr(p, "<testcase ")); p++)
                inner_tests++;
            for (const char *p = inner; (p = strstr(p, "<failure ")); p++)
                inner_failures++;
        }
    }
    unsigned failures = 0;
    for (size_t i = 0; i < n; i++)
        failures += cases[i].failure != NULL;

    GString *s = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    g_string_append_printf(s, "<testsuites name=\"" PROG "\" tests=\"%u\" failures=\"%u\">\n",
                           (unsigned)n + inner_tests, failures + inner_failures);
    g_string_append(s, "  <testsuite name=\"");
    xml_escaped(s, suite);
    g_string_append_printf(s, "\" tests=\"%u\" failures=\"%u\" time=\"%.3f\">\n", (unsigned)n,
                           failures, seconds);
    for (size_t i = 0; i < n; i++) {
        g_string_append_printf(s, "    <testcase classname=\"" PROG "\" name=\"%s\">",
                               cases[i].name);
        if (cases[i].failure) {
            g_string_append(s, "<failure type=\"error\" message=\"");
            xml_escaped(s, cases[i].failure);
            g_string_append(s, "\"/>");
        }
        g_string_append(s, "</testcase>\n");
    }
    g_string_append(s, "  </testsuite>");
    if (inner)
        g_string_append(s, inner);
    else
        g_string_append(s, "\n");
    g_string_append(s, "</testsuites>\n");
    gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, error);
    g_string_free(s, TRUE);
    return ok;
}

/* ---- main ----------------------------------------------------------------------------- */

static int usage_error(GOptionContext *ctx, const char *msg)
{
    g_printerr(PROG ": %s\n", msg);
    g_autofree gchar *help = g_option_context_get_help(ctx, TRUE, NULL);
    g_printerr("%s", help);
    return EXIT_USAGE;
}

/* The GPU clock(s) of the trace, read with the toolkit: the worst error
 * bound, and whether any clock converted timestamps without one. */
typedef struct clock_facts clock_facts;
struct clock_facts {
    gboolean readable;
    uint64_t gpu_events, submits;
    int64_t worst_bound_ns; /* -1: none known */
    gchar *unknown;         /* description of a clock without a bound, or NULL */
};

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
    for (guint i = 0; i < check_args->len; i++) {
        if (strcmp(check_args->pdata[i], "--expect-gpu-events") == 0)
            return TRUE;
    }
    return FALSE;
}

/* Runs the program with the backend, then judges. Returns the exit code. */
static int execute(run *r, const gchar *check_exe, double started)
{
    g_autoptr(GError) error = NULL;
    if (opt_service || opt_traced) {
        r->env = g_environ_setenv(r->env, "GPUTRACE_BACKEND", "system", TRUE);
        r->env = g_environ_unsetenv(r->env, "GPUTRACE_OUTPUT");
        r->env = g_environ_setenv(r->env, "GPUTRACE_STARTUP_WAIT_MS", CI_STARTUP_WAIT_MS, FALSE);
        gboolean ok = opt_service ? start_service(r, &error) : start_traced(r, &error);
        if (!ok) {
            g_printerr(PROG ": %s\n", error->message);
            return EXIT_USAGE;
        }
    } else {
        r->env = g_environ_setenv(r->env, "GPUTRACE_BACKEND", "inprocess", TRUE);
        r->env = g_environ_setenv(r->env, "GPUTRACE_OUTPUT", r->trace, TRUE);
    }

    /* ---- the program ---- */
    GPid pid = spawn(opt_command, r->env, NULL, TRUE, &error);
    if (pid < 0) {
        g_printerr(PROG ": cannot run %s: %s\n", opt_command[0], error->message);
        return EXIT_USAGE;
    }
    int status = 0;
    gboolean timed_out = FALSE;
    if (!wait_pid(pid, opt_timeout_s > 0 ? (gint64)opt_timeout_s * 1000 : -1, &status)) {
        timed_out = !interrupted;
        status = stop_pid(pid, 5000, TRUE, NULL);
    }
    /* Whatever the program left behind (a hung child of a fork, a daemon)
    * must not outlive the run. */
    for (int i = 0; i < 50 && kill(-pid, 0) == 0; i++)
        g_usleep(20000); /* children exiting with it (xvfb-run's X server) */
    if (kill(-pid, 0) == 0) {
        g_printerr(PROG ": processes left behind by %s: killed\n", opt_command[0]);
        kill(-pid, SIGKILL);
    }
    if (interrupted) {
        g_printerr(PROG ": interrupted (signal %d)\n", (int)interrupted);
        return EXIT_USAGE;
    }
    stop_backend(r);

    /* ---- verdict ---- */
    ci_case cases[5] = { { "program", NULL },
                         { "trace", NULL },
                         { "gpu-events", NULL },
                         { "gputrace-check", NULL },
                         { "clock-error-known", NULL } };
    enum {
        C_PROGRAM,
        C_TRACE,
        C_EVENTS,
        C_CHECK,
        C_CLOCK
    };
    g_autofree gchar *why = describe_status(status);
    if (timed_out)
        cases[C_PROGRAM].failure =
            g_strdup_printf("%s timed out after %d s", opt_command[0], opt_timeout_s);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        cases[C_PROGRAM].failure = g_strdup_printf("%s %s", opt_command[0], why);

    g_autofree gchar *check_junit = g_build_filename(r->tmp, "check.xml", NULL);
    struct stat st;
    int check_rc = -1;
    clock_facts facts = { .worst_bound_ns = -1 };
    if (stat(r->trace, &st) != 0 || st.st_size == 0) {
        if (opt_service || opt_traced)
            cases[C_TRACE].failure =
                g_strdup_printf("no trace collected: %s wrote nothing", r->backend_name);
        else
            cases[C_TRACE].failure =
                g_strdup("no trace written: was the layer loaded? (GPUTRACE_LOG=info shows it)");
        cases[C_CHECK].failure = g_strdup("not run: no trace");
    } else {
        if (r->backend_killed)
            cases[C_TRACE].failure = g_strdup_printf(
                "%s did not stop within %d ms and was killed: the trace may be incomplete",
                r->backend_name, STOP_TIMEOUT_MS);
        GPtrArray *cargv = g_ptr_array_new();
        g_ptr_array_add(cargv, (gpointer)check_exe);
        g_ptr_array_add(cargv, (gpointer) "--no-progress");
        for (guint i = 0; i < check_args->len; i++)
            g_ptr_array_add(cargv, check_args->pdata[i]);
        if (opt_junit) {
            g_ptr_array_add(cargv, (gpointer) "--junit");
            g_ptr_array_add(cargv, check_junit);
        }
        g_ptr_array_add(cargv, r->trace);
        g_ptr_array_add(cargv, NULL);
        g_autofree gchar *check_out = NULL, *check_err = NULL;
        int wait_status = 0;
        gboolean ran = g_spawn_sync(NULL, (gchar **)cargv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                    &check_out, &check_err, &wait_status, &error);
        g_ptr_array_unref(cargv);
        if (!ran) {
            g_printerr(PROG ": cannot run %s: %s\n", check_exe, error->message);
            for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                g_free(cases[i].failure);
            return EXIT_USAGE;
        }
        check_rc = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : EXIT_USAGE;
        if (!opt_quiet && check_out)
            fputs(check_out, stdout);
        if (check_err && *check_err)
            fputs(check_err, stderr);
        if (check_rc == 1)
            cases[C_CHECK].failure = g_strdup("gputrace-check failed (violations above)");
        else if (check_rc != 0)
            cases[C_CHECK].failure =
                g_strdup_printf("gputrace-check could not read the trace (exit %d)", check_rc);
        read_clock_facts(r->trace, &facts);
        if (facts.readable && facts.gpu_events == 0 && !opt_allow_no_events && !expect_given()) {
            cases[C_EVENTS].failure = g_strdup_printf(
                "the trace holds no GPU render stage%s",
                opt_service || opt_traced
                    ? " (was the layer loaded, and did the service answer within the layer's "
                      "start-up wait? GPUTRACE_LOG=info shows both)"
                    : "");
        }
        if (facts.unknown && !opt_allow_unknown)
            cases[C_CLOCK].failure = g_strdup(facts.unknown);
    }

    if (r->backend_log &&
        (cases[C_TRACE].failure || cases[C_EVENTS].failure || cases[C_CHECK].failure)) {
        g_autofree gchar *blog = NULL;
        if (g_file_get_contents(r->backend_log, &blog, NULL, NULL) && *blog)
            g_printerr("--- %s log:\n%s", r->backend_name, blog);
    }

    /* Exit like gputrace-check: 2 when the trace cannot be read, else 1 on
    * any failure. */
    gboolean failed = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        failed = failed || cases[i].failure;
    int exit_code = check_rc >= EXIT_USAGE ? EXIT_USAGE : failed ? EXIT_FAIL : EXIT_PASS;

    GString *summary = g_string_new(NULL);
    g_string_append_printf(summary, "%s %s", opt_command[0], timed_out ? "timed out" : why);
    if (check_rc >= 0) {
        g_string_append_printf(summary, "; %" PRIu64 " GPU render stages, %" PRIu64 " submits",
                               facts.gpu_events, facts.submits);
        if (facts.worst_bound_ns >= 0)
            g_string_append_printf(summary, "; GPU clock error <= %" PRId64 " ns",
                                   facts.worst_bound_ns);
        g_string_append_printf(summary, "; gputrace-check %s",
                               check_rc == 0   ? "pass"
                               : check_rc == 1 ? "FAIL"
                                               : "error");
    }
    printf(PROG ": %s (%s backend): %s\n", exit_code == EXIT_PASS ? "PASS" : "FAIL",
           opt_service  ? "gputrace-service"
           : opt_traced ? "traced"
                        : "embedded",
           summary->str);
    fflush(stdout);
    g_string_free(summary, TRUE);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (cases[i].failure)
            g_printerr(PROG ": %s: %s\n", cases[i].name, cases[i].failure);
    }

    if (opt_keep_trace && stat(r->trace, &st) == 0) {
        g_autoptr(GError) e = NULL;
        if (!copy_file(r->trace, opt_keep_trace, &e)) {
            g_printerr(PROG ": --keep-trace: %s\n", e->message);
            exit_code = exit_code == EXIT_PASS ? EXIT_USAGE : exit_code;
        }
    }
    if (opt_junit) {
        g_autoptr(GError) e = NULL;
        g_autofree gchar *cmdline = g_strjoinv(" ", opt_command);
        g_autofree gchar *suite = g_strdup_printf(PROG ": %s", cmdline);
        if (!write_junit(opt_junit, suite, cases, G_N_ELEMENTS(cases),
                         check_rc >= 0 ? check_junit : NULL, r->trace,
                         opt_keep_trace ? opt_keep_trace : "trace.pftrace",
                         (double)g_get_monotonic_time() / 1e6 - started, &e)) {
            g_printerr(PROG ": --junit: %s\n", e->message);
            exit_code = exit_code == EXIT_PASS ? EXIT_USAGE : exit_code;
        }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        g_free(cases[i].failure);
    g_free(facts.unknown);
    return exit_code;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    check_args = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GOptionContext) ctx = g_option_context_new("[--] COMMAND [ARG...]");
    g_option_context_set_summary(
        ctx, "Runs a Vulkan program with VK_LAYER_GPUTRACE_timeline, checks the trace it\n"
             "produced with gputrace-check, and gives one verdict for CI.");
    g_option_context_set_description(ctx, description);
    g_option_context_add_main_entries(ctx, run_entries, NULL);
    GOptionGroup *check =
        g_option_group_new("check", "Passed to gputrace-check (see gputrace-check --help):",
                           "Show the gputrace-check options", NULL, NULL);
    g_option_group_add_entries(check, check_entries);
    g_option_context_add_group(ctx, check);
    /* The first non-option starts the command: its own options stay its own. */
    g_option_context_set_strict_posix(ctx, TRUE);

    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return usage_error(ctx, error->message);
    if (!opt_command || !opt_command[0])
        return usage_error(ctx, "no command given");
    if (opt_service && opt_traced)
        return usage_error(ctx, "--service and --traced exclude each other");
    if (opt_timeout_s < 0)
        return usage_error(ctx, "--timeout must not be negative");
    if (opt_service_args && !opt_service)
        return usage_error(ctx, "--service-option needs --service");

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    g_autofree gchar *check_exe = find_tool(opt_check_exe, GTCI_BUILD_CHECK, "gputrace-check");
    if (!check_exe) {
        g_printerr(PROG ": gputrace-check not found (use --gputrace-check PATH)\n");
        return EXIT_USAGE;
    }
    g_autofree gchar *layer_dir = find_layer_dir();
    if (!layer_dir) {
        g_printerr(PROG ": " LAYER_MANIFEST " not found in the build tree or in %s "
                        "(use --layer-path DIR)\n",
                   GTCI_INSTALLED_LAYER_DIR);
        return EXIT_USAGE;
    }
    g_autofree gchar *manifest = g_build_filename(layer_dir, LAYER_MANIFEST, NULL);
    if (!g_file_test(manifest, G_FILE_TEST_EXISTS)) {
        g_printerr(PROG ": %s: no such file\n", manifest);
        return EXIT_USAGE;
    }
    if (opt_lavapipe && !g_file_test(LAVAPIPE_ICD, G_FILE_TEST_EXISTS)) {
        g_printerr(PROG ": --lavapipe: %s not found (Debian: mesa-vulkan-drivers)\n", LAVAPIPE_ICD);
        return EXIT_USAGE;
    }

    run r = { .backend_pid = -1 };
    r.tmp = g_dir_make_tmp(PROG "-XXXXXX", &error);
    if (!r.tmp) {
        g_printerr(PROG ": %s\n", error->message);
        return EXIT_USAGE;
    }
    r.trace = g_build_filename(r.tmp, "trace.pftrace", NULL);

    /* ---- environment of the program (and of the backend) ---- */
    r.env = g_get_environ();
    /* First (closest to the application) unless the caller placed it. */
    const gchar *layers = g_environ_getenv(r.env, "VK_INSTANCE_LAYERS");
    g_auto(GStrv) named = g_strsplit(layers ? layers : "", ":", -1);
    if (!g_strv_contains((const gchar *const *)named, LAYER_NAME))
        r.env = env_prepend_list(r.env, "VK_INSTANCE_LAYERS", LAYER_NAME);
    /* VK_ADD_LAYER_PATH keeps the system's explicit layers (validation...)
    * visible; VK_LAYER_PATH would replace them. A VK_LAYER_PATH the caller
    * set is extended instead. */
    if (g_environ_getenv(r.env, "VK_LAYER_PATH"))
        r.env = env_prepend_list(r.env, "VK_LAYER_PATH", layer_dir);
    else
        r.env = env_prepend_list(r.env, "VK_ADD_LAYER_PATH", layer_dir);
    r.env = g_environ_unsetenv(r.env, "GPUTRACE_DISABLE");
    if (opt_lavapipe) {
        r.env = g_environ_setenv(r.env, "VK_DRIVER_FILES", LAVAPIPE_ICD, TRUE);
        r.env = g_environ_setenv(r.env, "VK_ICD_FILENAMES", LAVAPIPE_ICD, TRUE);
    }

    int exit_code = execute(&r, check_exe, (double)g_get_monotonic_time() / 1e6);

    stop_backend(&r);
    remove_tree(r.tmp);
    g_free(r.tmp);
    g_free(r.trace);
    g_free(r.backend_log);
    g_strfreev(r.env);
    g_ptr_array_unref(check_args);
    return exit_code;
}
