/* SPDX-License-Identifier: MIT */
/* gputrace-ci's processes: where the tools and the layer are, the program
 * and the backends (gputrace-service, perfetto) started and stopped. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "toolkit/ci/ci.h"

/* ---- small helpers ------------------------------------------------------------------ */

gint64 ci_now_ms(void)
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

/* Where this binary's install tree is rooted: "" when it runs from
 * GTCI_BINDIR, the staging directory when it runs from DESTDIR/GTCI_BINDIR
 * (`meson install --destdir`, or the tree copied under another root), NULL
 * otherwise. The installed layer and tools are looked up under that root. */
static gchar *installed_root(void)
{
    g_autofree gchar *dir = self_dir();
    if (!dir)
        return NULL;
    size_t n = strlen(dir), b = strlen(GTCI_BINDIR);
    if (n < b || strcmp(dir + n - b, GTCI_BINDIR) != 0)
        return NULL;
    return g_strndup(dir, n - b);
}

gchar *ci_find_tool(const gchar *opt, const gchar *build_path, const gchar *name)
{
    if (opt)
        return g_strdup(opt);
    if (running_from_build_tree() && g_file_test(build_path, G_FILE_TEST_IS_EXECUTABLE))
        return g_strdup(build_path);
    g_autofree gchar *root = installed_root();
    g_autofree gchar *installed = g_build_filename(root ? root : "", GTCI_BINDIR, name, NULL);
    if (g_file_test(installed, G_FILE_TEST_IS_EXECUTABLE))
        return g_steal_pointer(&installed);
    return g_find_program_in_path(name);
}

gchar *ci_find_layer_dir(void)
{
    if (ci_opt.layer_path)
        return g_strdup(ci_opt.layer_path);
    g_autofree gchar *b = g_build_filename(GTCI_BUILD_LAYER_DIR, LAYER_MANIFEST, NULL);
    if (running_from_build_tree() && g_file_test(b, G_FILE_TEST_EXISTS))
        return g_strdup(GTCI_BUILD_LAYER_DIR);
    g_autofree gchar *root = installed_root();
    g_autofree gchar *dir = g_build_filename(root ? root : "", GTCI_INSTALLED_LAYER_DIR, NULL);
    g_autofree gchar *i = g_build_filename(dir, LAYER_MANIFEST, NULL);
    if (g_file_test(i, G_FILE_TEST_EXISTS))
        return g_steal_pointer(&dir);
    return NULL;
}

/* VAR=first:rest, dropping `first` from rest (no duplicates). */
gchar **ci_env_prepend_list(gchar **env, const gchar *var, const gchar *first)
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

gboolean ci_copy_file(const gchar *from, const gchar *to, GError **error)
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

void ci_remove_tree(const gchar *dir)
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
GPid ci_spawn(gchar **argv, gchar **env, const gchar *log_path, gboolean group, GError **error)
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
gboolean ci_wait_pid(GPid pid, gint64 timeout_ms, int *status)
{
    gint64 deadline = timeout_ms < 0 ? -1 : ci_now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return TRUE;
        if (r < 0 && errno != EINTR)
            return FALSE;
        if ((deadline >= 0 && ci_now_ms() >= deadline) || ci_interrupted)
            return FALSE;
        g_usleep(10000);
    }
}

/* SIGTERM, then SIGKILL after grace_ms; reaps. With `group`, the whole
 * process group the pid leads. */
int ci_stop_pid(GPid pid, gint64 grace_ms, gboolean group, gboolean *killed)
{
    int status = 0;
    pid_t target = group ? -pid : pid;
    kill(target, SIGTERM);
    if (!ci_wait_pid(pid, grace_ms, &status)) {
        kill(target, SIGKILL);
        waitpid(pid, &status, 0);
        if (killed)
            *killed = TRUE;
    }
    return status;
}

gchar *ci_describe_status(int status)
{
    if (WIFEXITED(status))
        return g_strdup_printf("exited with status %d", WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return g_strdup_printf("was killed by signal %d (%s)", WTERMSIG(status),
                               g_strsignal(WTERMSIG(status)));
    return g_strdup("ended abnormally");
}

/* ---- backends ------------------------------------------------------------------------ */

gboolean ci_start_service(ci_run *r, GError **error)
{
    g_autofree gchar *exe =
        ci_find_tool(ci_opt.service_exe, GTCI_BUILD_SERVICE, "gputrace-service");
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
    for (gchar **a = ci_opt.service_args; a && *a; a++)
        g_ptr_array_add(argv, g_strdup(*a));
    g_ptr_array_add(argv, NULL);
    r->backend_name = "gputrace-service";
    r->backend_log = g_build_filename(r->tmp, "service.log", NULL);
    r->backend_pid = ci_spawn((gchar **)argv->pdata, r->env, r->backend_log, FALSE, error);
    g_ptr_array_unref(argv);
    if (r->backend_pid < 0)
        return FALSE;
    /* Ready once it listens: the socket exists. */
    gint64 deadline = ci_now_ms() + START_TIMEOUT_MS;
    int status;
    while (!g_file_test(sock, G_FILE_TEST_EXISTS)) {
        if (waitpid(r->backend_pid, &status, WNOHANG) == r->backend_pid) {
            r->backend_pid = -1;
            g_autofree gchar *why = ci_describe_status(status);
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        "gputrace-service %s before listening (log: %s)", why, r->backend_log);
            return FALSE;
        }
        if (ci_now_ms() > deadline) {
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

gboolean ci_start_traced(ci_run *r, GError **error)
{
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
    g_autofree gchar *perfetto =
        ci_opt.perfetto ? g_strdup(ci_opt.perfetto) : g_find_program_in_path("perfetto");
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
    r->backend_pid = ci_spawn((gchar **)argv->pdata, r->env, r->backend_log, FALSE, error);
    g_ptr_array_unref(argv);
    if (r->backend_pid < 0)
        return FALSE;
    /* The session must be running before the producer registers, or the
    * layer's start-up wait finds no session and the program's first
    * frames are not traced: wait for the client to log that it is
    * connected (it enables the session right then), plus a margin, and
    * make sure it did not give up (traced not running). A client that
    * logs differently gets START_TIMEOUT_MS, as before this check. */
    gint64 deadline = ci_now_ms() + START_TIMEOUT_MS;
    gboolean connected = FALSE;
    int status;
    while (!connected && ci_now_ms() < deadline) {
        if (ci_wait_pid(r->backend_pid, 20, &status)) {
            r->backend_pid = -1;
            g_autofree gchar *why = ci_describe_status(status);
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
    if (ci_wait_pid(r->backend_pid, PERFETTO_ENABLE_MARGIN_MS, &status)) {
        r->backend_pid = -1;
        g_autofree gchar *why = ci_describe_status(status);
        g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                    "perfetto %s: is traced running? (log: %s)", why, r->backend_log);
        return FALSE;
    }
    return TRUE;
}

void ci_stop_backend(ci_run *r)
{
    if (r->backend_pid <= 0)
        return;
    ci_stop_pid(r->backend_pid, STOP_TIMEOUT_MS, FALSE, &r->backend_killed);
    r->backend_pid = -1;
}
