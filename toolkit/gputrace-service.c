/* SPDX-License-Identifier: MIT */
/* gputrace-service: a small Perfetto-compatible tracing service. It
 * listens on the producer socket, enables the named data sources on every
 * producer that registers them, and writes what they trace into a
 * .pftrace when the duration ends or on SIGINT/SIGTERM.
 *
 * Exit status: 0 trace written, 1 runtime failure, 2 usage error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

/* Every option in two columns (help text, and the man page built from it:
 * toolkit/man), the exit statuses at the end. */
static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " --output FILE --data-source NAME [--data-source NAME ...]\n"
               "       [--socket PATH] [--socket-mode MODE] [--buffer-kb N]\n"
               "       [--fill-policy ring|discard] [--duration-ms N] [--slow-ms N]\n"
               "       [--flush-timeout-ms N] [--max-producers N] [--max-per-uid N]\n"
               "       [--max-smb-kb N] [--handshake-timeout-ms N] [--idle-timeout-ms N]\n"
               "       [--send-timeout-ms N] [--verbose]\n"
               "       " PROG " --help | --version\n"
               "\n"
               "Records the named data sources of every producer that connects to the\n"
               "producer socket until --duration-ms elapses or SIGINT/SIGTERM, then writes\n"
               "a .pftrace to FILE (opened only once the socket listens; never a symbolic\n"
               "link, FIFO, device or directory; a FILE another process is writing is left\n"
               "alone and FILE's stem.PID.ext written beside it).\n"
               "\n"
               "Options:\n"
               "  --output FILE            the trace to write (required)\n"
               "  --data-source NAME       a data source to enable (required; repeatable,\n"
               "                           up to 64)\n"
               "  --socket PATH            the producer socket (default: as Perfetto resolves\n"
               "                           it, honouring PERFETTO_PRODUCER_SOCK_NAME; @NAME:\n"
               "                           abstract namespace)\n"
               "  --socket-mode MODE       permissions of the socket file, octal (default\n"
               "                           0600: the owner's producers only; 0660 adds the\n"
               "                           group, 0666 everyone)\n"
               "  --buffer-kb N            central buffer size (default 32768)\n"
               "  --fill-policy P          ring (overwrite oldest, default) or discard (drop\n"
               "                           new)\n"
               "  --duration-ms N          stop after N ms (default 0: only at SIGINT/SIGTERM)\n"
               "  --flush-timeout-ms N     how long to wait for producers to flush at the end\n"
               "                           (default 5000)\n"
               "  --slow-ms N              sleep N ms before handling each CommitData (loss\n"
               "                           tests)\n"
               "  -v, --verbose            log producer events to standard error\n"
               "  -h, --help               print this help and exit\n"
               "  -V, --version            print the version and exit\n"
               "\n"
               "Limits (producers are untrusted):\n"
               "  --max-producers N        connections at once (default 64)\n"
               "  --max-per-uid N          connections at once from one user (default 32, or\n"
               "                           --max-producers when smaller); beyond a limit a\n"
               "                           new connection replaces the oldest one of that\n"
               "                           limit still in its handshake, or is closed\n"
               "  --max-smb-kb N           shared memory buffer a producer gets, at most\n"
               "                           (multiple of 32, 32..32768, default 4096)\n"
               "  --handshake-timeout-ms N close a connection that has not completed\n"
               "                           InitializeConnection by then (default 5000)\n"
               "  --idle-timeout-ms N      close a producer that has no data source in the\n"
               "                           session and sent nothing for N ms (default 60000)\n"
               "  --send-timeout-ms N      close a producer that reads nothing of what is\n"
               "                           queued for it for N ms (default 10000); at most\n"
               "                           1 MiB may be queued for one producer\n"
               "\n"
               "Exit status:\n"
               "  0  the trace was written\n"
               "  1  the socket could not listen, or the output file could not be opened or\n"
               "     written\n"
               "  2  usage error\n");
}

/* What the command line asks for. */
typedef struct svc_options {
    const char *output, *socket_path;
    const char *data_sources[MAX_DATA_SOURCES];
    gts_config cfg;
    mode_t socket_mode;
} svc_options;

/* getopt's own messages name argv[0] as typed (./gputrace-service); ours
 * name the program, like the other tools. */
static int unknown_option(int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        fprintf(stderr, PROG ": option '%s' needs an argument\n", arg);
    else if (optopt)
        fprintf(stderr, PROG ": unknown option '-%c'\n", optopt);
    else
        fprintf(stderr, PROG ": unknown option '%s'\n", arg);
    usage(stderr);
    return TOOL_EXIT_USAGE;
}

/* The options that take a number; false (a usage error) after saying why. */
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

/* Fills *o from the command line; -1 to go on, else the exit status
 * (0 after --help or --version). */
static int parse_options(int argc, char **argv, svc_options *o)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' },
        { "data-source", required_argument, NULL, 'd' },
        { "socket", required_argument, NULL, 's' },
        { "buffer-kb", required_argument, NULL, 'b' },
        { "fill-policy", required_argument, NULL, 'f' },
        { "duration-ms", required_argument, NULL, 't' },
        { "slow-ms", required_argument, NULL, 'w' },
        { "flush-timeout-ms", required_argument, NULL, 'F' },
        { "socket-mode", required_argument, NULL, 'm' },
        { "max-producers", required_argument, NULL, 'P' },
        { "max-per-uid", required_argument, NULL, 'U' },
        { "max-smb-kb", required_argument, NULL, 'S' },
        { "handshake-timeout-ms", required_argument, NULL, 'H' },
        { "idle-timeout-ms", required_argument, NULL, 'I' },
        { "send-timeout-ms", required_argument, NULL, 'W' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    *o = (svc_options){
        .cfg = { .buffer_size = 32u << 20, .fill_policy = CB_RING_BUFFER },
        .socket_mode = 0600,
    };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:d:s:b:f:t:w:F:m:P:U:S:H:I:W:vhV", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->output = optarg;
            break;
        case 'd':
            if (o->cfg.num_data_sources == MAX_DATA_SOURCES) {
                fprintf(stderr, PROG ": too many --data-source\n");
                return TOOL_EXIT_USAGE;
            }
            o->data_sources[o->cfg.num_data_sources++] = optarg;
            break;
        case 's':
            o->socket_path = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "ring") == 0) {
                o->cfg.fill_policy = CB_RING_BUFFER;
            } else if (strcmp(optarg, "discard") == 0) {
                o->cfg.fill_policy = CB_DISCARD;
            } else {
                fprintf(stderr, PROG ": --fill-policy: expected ring or discard\n");
                return TOOL_EXIT_USAGE;
            }
            break;
        case 'b':
        case 't':
        case 'w':
        case 'F':
        case 'm':
        case 'P':
        case 'U':
        case 'S':
        case 'H':
        case 'I':
        case 'W':
            if (!parse_number_option(c, argv[optind - 1], optarg, o))
                return TOOL_EXIT_USAGE;
            break;
        case 'v':
            o->cfg.verbose = true;
            break;
        case 'h':
            usage(stdout);
            return TOOL_EXIT_PASS;
        case 'V':
            tool_print_version(PROG);
            return TOOL_EXIT_PASS;
        default:
            return unknown_option(c, argv);
        }
    }
    if (optind != argc || !o->output || o->cfg.num_data_sources == 0) {
        if (!o->output || o->cfg.num_data_sources == 0)
            fprintf(stderr, PROG ": --output and at least one --data-source are required\n");
        usage(stderr);
        return TOOL_EXIT_USAGE;
    }
    o->cfg.data_sources = o->data_sources;
    if (!o->socket_path)
        o->socket_path = ipc_producer_socket_path();
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
    svc_options o;
    int status = parse_options(argc, argv, &o);
    if (status >= 0)
        return status;
    int listen_fd, out_fd;
    if (!set_up(&o, &listen_fd, &out_fd))
        return TOOL_EXIT_FAIL;
    return run(&o, listen_fd, out_fd);
}
