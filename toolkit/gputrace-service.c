/* SPDX-License-Identifier: MIT */
/* gputrace-service: a small Perfetto-compatible tracing service. It
 * listens on the producer socket, enables the named data sources on every
 * producer that registers them, and writes what they trace into a
 * .pftrace when the duration ends or on SIGINT/SIGTERM.
 *
 * Exit status: 0 trace written, 1 runtime failure, 2 usage error. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracing/ipc/ipc_conn.h"
#include "tracing/service_output.h"
#include "tracing/ipc/service_session.h"
#include "toolkit/tool_common.h"

#define PROG             "gputrace-service"
#define MAX_DATA_SOURCES 64

static int g_stop_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    char c = 1;
    ssize_t rc = write(g_stop_pipe[1], &c, 1);
    (void)rc;
    errno = saved;
}

/* What the command line asks for. */
typedef struct svc_options {
    const char *output, *socket_path;
    const char *data_sources[MAX_DATA_SOURCES];
    gts_config cfg;
    mode_t socket_mode;
} svc_options;

/* The options that take a number, by the letter that names them below;
 * false (a usage error) after saying why. */
static bool parse_number_option(int c, const char *opt, const char *arg, svc_options *o)
{
    gts_config *cfg = &o->cfg;
    uint32_t v;
    switch (c) {
    case 'b':
        if (!tool_parse_u32(arg, 10, 4, 4u << 20, &v)) {
            fprintf(stderr, PROG ": --buffer-kb: expected 4..4194304, got '%s'\n", arg);
            return false;
        }
        cfg->buffer_size = (size_t)v * 1024u;
        return true;
    case 't':
    case 'w':
    case 'F':
        if (!tool_parse_u32(arg, 10, 0, UINT32_MAX, &v)) {
            fprintf(stderr, PROG ": %s: not a number: '%s'\n", opt, arg);
            return false;
        }
        if (c == 't')
            cfg->duration_ms = v;
        else if (c == 'w')
            cfg->slow_ms = v;
        else
            cfg->flush_timeout_ms = v;
        return true;
    case 'm':
        if (!tool_parse_u32(arg, 8, 0, 0777, &v)) {
            fprintf(stderr,
                    PROG ": --socket-mode: expected octal permission bits like "
                         "0600, got '%s'\n",
                    arg);
            return false;
        }
        o->socket_mode = (mode_t)v;
        return true;
    default: { /* the limits: P U S H I W */
        bool ok = tool_parse_u32(arg, 10, 1, UINT32_MAX, &v);
        if (c == 'P' || c == 'U')
            ok = ok && v <= 4096;
        else if (c == 'S')
            ok = ok && v >= 32 && v <= 32768 && v % 32 == 0;
        if (!ok) {
            fprintf(stderr, PROG ": %s: out of range: '%s'\n", opt, arg);
            return false;
        }
        if (c == 'P')
            cfg->max_producers = v;
        else if (c == 'U')
            cfg->max_per_uid = v;
        else if (c == 'S')
            cfg->max_smb_size = (size_t)v * 1024u;
        else if (c == 'H')
            cfg->handshake_timeout_ms = v;
        else if (c == 'I')
            cfg->idle_timeout_ms = v;
        else
            cfg->send_timeout_ms = v;
        return true;
    }
    }
}

/* Strings as GOption hands them over; numbers are parsed afterwards with
 * the tools' strict parser (tool_common), so every tool refuses the same
 * inputs ("+5", " 5", "5x") with the same message shape. */
static gchar *opt_output, *opt_socket, *opt_fill_policy;
static gchar **opt_data_sources;
static gboolean opt_verbose, opt_version;
static gchar *opt_numbers[11];
static const char k_number_letters[] = "btwFmPUSHIW";

#define NUMBER_ENTRY(name, i, desc, arg)                            \
    {                                                               \
        name, 0, 0, G_OPTION_ARG_STRING, &opt_numbers[i], desc, arg \
    }

static const GOptionEntry main_entries[] = {
    { "output", 0, 0, G_OPTION_ARG_FILENAME, &opt_output, "The trace to write (required)", "FILE" },
    { "data-source", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_data_sources,
      "A data source to enable (required; repeatable, up to 64)", "NAME" },
    { "socket", 0, 0, G_OPTION_ARG_FILENAME, &opt_socket,
      "The producer socket (default: as Perfetto resolves it, honouring "
      "PERFETTO_PRODUCER_SOCK_NAME; @NAME: abstract namespace)",
      "PATH" },
    NUMBER_ENTRY("socket-mode", 4,
                 "Permissions of the socket file, octal (default 0600: the owner's producers "
                 "only; 0660 adds the group, 0666 everyone)",
                 "MODE"),
    NUMBER_ENTRY("buffer-kb", 0, "Central buffer size in KiB (default 32768)", "N"),
    { "fill-policy", 0, 0, G_OPTION_ARG_STRING, &opt_fill_policy,
      "ring (overwrite the oldest, default) or discard (drop the new)", "P" },
    NUMBER_ENTRY("duration-ms", 1, "Stop after N ms (default 0: only at SIGINT/SIGTERM)", "N"),
    NUMBER_ENTRY("flush-timeout-ms", 3,
                 "How long to wait for producers to flush at the end (default 5000)", "N"),
    NUMBER_ENTRY("slow-ms", 2, "Sleep N ms before handling each CommitData (loss tests)", "N"),
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose, "Log producer events to standard error",
      NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static const GOptionEntry limit_entries[] = {
    NUMBER_ENTRY("max-producers", 5, "Connections at once (default 64)", "N"),
    NUMBER_ENTRY("max-per-uid", 6,
                 "Connections at once from one user (default 32, or --max-producers when "
                 "smaller); beyond a limit a new connection replaces the oldest one of that "
                 "limit still in its handshake, or is closed",
                 "N"),
    NUMBER_ENTRY("max-smb-kb", 7,
                 "Shared memory buffer a producer gets, at most (multiple of 32, 32..32768, "
                 "default 4096)",
                 "N"),
    NUMBER_ENTRY("handshake-timeout-ms", 8,
                 "Close a connection that has not completed InitializeConnection by then "
                 "(default 5000)",
                 "N"),
    NUMBER_ENTRY("idle-timeout-ms", 9,
                 "Close a producer that has no data source in the session and sent nothing for "
                 "N ms (default 60000)",
                 "N"),
    NUMBER_ENTRY("send-timeout-ms", 10,
                 "Close a producer that reads nothing of what is queued for it for N ms "
                 "(default 10000); at most 1 MiB may be queued for one producer",
                 "N"),
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static const char *const k_number_names[11] = {
    "--buffer-kb",        "--duration-ms",     "--slow-ms",
    "--flush-timeout-ms", "--socket-mode",     "--max-producers",
    "--max-per-uid",      "--max-smb-kb",      "--handshake-timeout-ms",
    "--idle-timeout-ms",  "--send-timeout-ms",
};

static GOptionContext *option_context(void)
{
    GOptionContext *octx = g_option_context_new("— a Perfetto-compatible tracing service");
    g_option_context_set_summary(
        octx, "Records the named data sources of every producer that connects to the producer\n"
              "socket until --duration-ms elapses or SIGINT/SIGTERM, then writes a .pftrace to\n"
              "FILE (opened only once the socket listens; never a symbolic link, FIFO, device\n"
              "or directory; a FILE another process is writing is left alone and FILE's\n"
              "stem.PID.ext written beside it).");
    g_option_context_set_description(
        octx, "Exit status:\n"
              "  0  the trace was written\n"
              "  1  the socket could not listen, or the output file could not be opened or\n"
              "     written\n"
              "  2  usage error\n");
    g_option_context_add_main_entries(octx, main_entries, NULL);
    GOptionGroup *limits = g_option_group_new(
        "limits", "Limits (producers are untrusted):", "Show the limits on producers", NULL, NULL);
    g_option_group_add_entries(limits, limit_entries);
    g_option_context_add_group(octx, limits);
    return octx;
}

/* Fills *o from the command line; -1 to go on, else the exit status
 * (0 after --version; GOption itself answers --help and exits 0). */
static int parse_options(int argc, char **argv, svc_options *o)
{
    *o = (svc_options){
        .cfg = { .buffer_size = 32u << 20, .fill_policy = CB_RING_BUFFER },
        .socket_mode = 0600,
    };
    GOptionContext *octx = option_context();
    GError *error = NULL;
    bool parsed = g_option_context_parse(octx, &argc, &argv, &error);
    g_option_context_free(octx);
    if (!parsed) {
        fprintf(stderr, PROG ": %s\nTry '" PROG " --help-all'.\n", error->message);
        g_error_free(error);
        return TOOL_EXIT_USAGE;
    }
    if (opt_version) {
        tool_print_version(PROG);
        return TOOL_EXIT_PASS;
    }
    for (size_t i = 0; i < sizeof k_number_letters - 1; i++)
        if (opt_numbers[i] &&
            !parse_number_option(k_number_letters[i], k_number_names[i], opt_numbers[i], o))
            return TOOL_EXIT_USAGE;
    if (opt_fill_policy) {
        if (strcmp(opt_fill_policy, "ring") == 0) {
            o->cfg.fill_policy = CB_RING_BUFFER;
        } else if (strcmp(opt_fill_policy, "discard") == 0) {
            o->cfg.fill_policy = CB_DISCARD;
        } else {
            fprintf(stderr, PROG ": --fill-policy: expected ring or discard\n");
            return TOOL_EXIT_USAGE;
        }
    }
    for (gchar **ds = opt_data_sources; ds && *ds; ds++) {
        if (o->cfg.num_data_sources == MAX_DATA_SOURCES) {
            fprintf(stderr, PROG ": too many --data-source\n");
            return TOOL_EXIT_USAGE;
        }
        o->data_sources[o->cfg.num_data_sources++] = *ds;
    }
    if (argc > 1) {
        fprintf(stderr, PROG ": unexpected argument '%s'\nTry '" PROG " --help-all'.\n", argv[1]);
        return TOOL_EXIT_USAGE;
    }
    if (!opt_output || o->cfg.num_data_sources == 0) {
        fprintf(stderr, PROG ": --output and at least one --data-source are required\n"
                             "Try '" PROG " --help-all'.\n");
        return TOOL_EXIT_USAGE;
    }
    o->output = opt_output;
    o->cfg.verbose = opt_verbose;
    o->cfg.data_sources = o->data_sources;
    o->socket_path = opt_socket ? opt_socket : ipc_producer_socket_path();
    return -1;
}

/* Signals, the listening socket and the output file, in that order; false
 * (exit status 1) after saying why. o->output becomes the path written. */
static bool set_up(svc_options *o, int *listen_fd, int *out_fd)
{
    if (pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        perror(PROG ": pipe");
        return false;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Listen first: an instance that cannot (another one serves the
     * socket) must not truncate a trace that one may be writing. */
    *listen_fd = ipc_socket_listen_mode(o->socket_path, o->socket_mode);
    if (*listen_fd < 0) {
        fprintf(stderr, PROG ": %s: cannot listen: %s\n", o->socket_path, strerror(errno));
        return false;
    }
    /* As the layer opens its trace file: never through a link, never a
     * FIFO or device (open would block or act), locked before it is
     * truncated so a trace another process is writing is left alone. */
    static svc_out_file out_file;
    svc_out_create_file(o->output, &out_file);
    *out_fd = out_file.fd;
    if (*out_fd < 0) {
        if (out_file.refused)
            fprintf(stderr, PROG ": %s %s; not writing there\n", out_file.path, out_file.refused);
        else
            fprintf(stderr, PROG ": %s: %s\n", out_file.path, strerror(errno));
        close(*listen_fd);
        if (o->socket_path[0] != '@')
            unlink(o->socket_path);
        return false;
    }
    if (out_file.fell_back)
        fprintf(stderr, PROG ": %s is being written by another process; writing %s\n", o->output,
                out_file.path);
    o->output = out_file.path;
    return true;
}

/* Serves producers until the duration ends or a signal, writes the trace
 * and prints what happened; the exit status. */
static int run(const svc_options *o, int listen_fd, int out_fd)
{
    const char *output = o->output, *socket_path = o->socket_path;
    gts_service *s = gts_service_create(&o->cfg, listen_fd, out_fd);
    if (!s) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    fprintf(stderr, PROG ": listening on %s\n", socket_path);
    bool ok = gts_service_run(s, g_stop_pipe[0]);
    gts_stats st;
    gts_service_get_stats(s, &st);
    gts_service_destroy(s);
    if (socket_path[0] != '@')
        unlink(socket_path);
    fprintf(stderr,
            PROG ": %s: %llu packets from %llu producers (%llu commits, %llu chunks, "
                 "%llu chunks discarded, %llu protocol errors)\n",
            output, (unsigned long long)st.packets_written, (unsigned long long)st.producers_seen,
            (unsigned long long)st.commits, (unsigned long long)st.chunks_moved,
            (unsigned long long)st.chunks_discarded, (unsigned long long)st.protocol_errors);
    fprintf(stderr,
            PROG ": connections: %llu accepted, %llu refused, %llu evicted in handshake, "
                 "%llu handshake timeouts, %llu idle timeouts, %llu send timeouts\n",
            (unsigned long long)st.connections, (unsigned long long)st.connections_refused,
            (unsigned long long)st.connections_evicted, (unsigned long long)st.handshake_timeouts,
            (unsigned long long)st.idle_timeouts, (unsigned long long)st.send_timeouts);
    if (!ok) {
        fprintf(stderr, PROG ": %s: write failed\n", output);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* GOption prints its help in the locale's charset. */
    setlocale(LC_ALL, "");
    svc_options o;
    int status = parse_options(argc, argv, &o);
    if (status >= 0)
        return status;
    int listen_fd, out_fd;
    if (!set_up(&o, &listen_fd, &out_fd))
        return TOOL_EXIT_FAIL;
    return run(&o, listen_fd, out_fd);
}
