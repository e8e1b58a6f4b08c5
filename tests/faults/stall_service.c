/* SPDX-License-Identifier: MIT */
/* stall_service — a hostile tracing service, for tests only.
 *
 * It speaks just enough of the producer protocol (through ipc_host, the
 * host side gputrace-service uses) to start one data source on every
 * producer that registers it, with the shared memory buffer of its own
 * choosing (small, so it fills at once) and the BufferExhaustedPolicy of
 * the command line (by default "stall then drop"). Then it is a service
 * that has hung where it matters: it keeps reading the socket, so the
 * connection stays up and the producer never notices anything, but it
 * ignores every CommitData, never moves or frees a chunk, never flushes
 * and never stops. Whatever waits for it to free shared memory waits in
 * vain.
 *
 *   stall_service --socket PATH [--data-source NAME] [--smb-kb N]
 *                 [--policy unspecified|drop|stall-then-abort|stall-then-drop]
 *                 [--deaf N]
 *
 * --deaf N hangs one step further: when a started producer sends its
 * start-up Sync, the service sends it N Flush commands, then the answer,
 * and from then on never reads a socket again (it still writes what it
 * queued). It stops reading at that very request (ipc_host's
 * reading_paused): a host left to finish its read round would take in
 * thousands of the answers first, and the producer would have nothing
 * left to wait on. Each Flush makes the producer answer with a CommitData,
 * so the producer's requests pile up in a socket nobody reads: whatever
 * waits for them to go out waits in vain. One producer per run: the
 * service is deaf to everyone afterwards.
 *
 * Runs until SIGTERM/SIGINT, then prints one line:
 *   stall_service: producers=N started=N commits=N chunks_offered=N
 *   smb_chunks=N smb_chunks_taken=N deaf=0|1
 * where smb_chunks_taken is the most chunks any one producer's SMB had out
 * of the free state when it disconnected (or at exit): equal to smb_chunks
 * means the producer really ran out of shared memory; deaf=1 when it went
 * deaf (--deaf). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "protos/perfetto/data_source_config.pbc.h"
#include "protos/perfetto/data_source_descriptor.pbc.h"
#include "tracing/ipc/ipc_host.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/smb_abi.h"
#include "tracing/ipc/producer_port.h"
#include "tracing/util/util_parse.h"

#define PAGE_SIZE_BYTES 4096u

typedef struct peer {
    bool has_stream;
    uint64_t stream_id;
    bool started;
    int smb_fd;
    void *smb_mem;
    smb_abi abi;
} peer;

static struct {
    ipc_host *host;
    const char *data_source;
    size_t smb_size;
    uint32_t policy;
    uint32_t deaf_flushes; /* --deaf N; 0: keeps reading */
    bool deaf;
    uint64_t producers, started, commits, chunks_offered;
    size_t smb_chunks, most_taken;
} g;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void reply_empty(ipc_host_client *cl, uint64_t rid, bool drop, bool ok)
{
    if (drop)
        return;
    ipc_host_begin_reply(g.host, rid, ok, false);
    ipc_host_end_reply(g.host, cl, -1);
}

/* A sealed memfd of our size, mapped here too so that at the end we can
 * tell how much of it the producer had used up. */
static bool make_smb(peer *p)
{
    int fd = memfd_create("stall-service-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return false;
    if (ftruncate(fd, (off_t)g.smb_size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        close(fd);
        return false;
    }
    void *mem = mmap(NULL, g.smb_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED || !smb_abi_init(&p->abi, mem, g.smb_size, PAGE_SIZE_BYTES)) {
        if (mem != MAP_FAILED)
            munmap(mem, g.smb_size);
        close(fd);
        return false;
    }
    p->smb_fd = fd;
    p->smb_mem = mem;
    return true;
}

/* Chunks not free in the producer's SMB, and how many it has in all (a
 * page never partitioned counts as one chunk, free: all that matters is
 * whether anything was left). */
static void count_taken(const peer *p, size_t *taken, size_t *all)
{
    *taken = *all = 0;
    for (size_t page = 0; page < p->abi.num_pages; page++) {
        uint32_t bitmap = smb_page_bitmap(&p->abi, page);
        size_t n = smb_layout_of(bitmap) ? smb_num_chunks_of(bitmap) : 1;
        *all += n;
        for (uint32_t c = 0; smb_layout_of(bitmap) && c < n; c++)
            *taken += smb_chunk_state_of(bitmap, c) != SMB_CHUNK_FREE;
    }
}

static void note_usage(const peer *p)
{
    if (!p->smb_mem)
        return;
    size_t taken, all;
    count_taken(p, &taken, &all);
    if (taken >= g.most_taken) {
        g.most_taken = taken;
        g.smb_chunks = all;
    }
}

static void write_config(perfetto_protos_DataSourceConfig *c)
{
    perfetto_protos_DataSourceConfig_set_name(c, g.data_source);
    perfetto_protos_DataSourceConfig_set_target_buffer(c, 1);
    perfetto_protos_DataSourceConfig_set_tracing_session_id(c, 1);
    if (g.policy)
        perfetto_protos_DataSourceConfig_set_buffer_exhausted_policy(
            c, (perfetto_protos_DataSourceConfig_BufferExhaustedPolicy)g.policy);
}

/* SetupTracing with our SMB, then SetupDataSource and StartDataSource. */
static void start(ipc_host_client *cl, peer *p)
{
    if (p->started || !p->has_stream || (!p->smb_mem && !make_smb(p)))
        return;
    perfetto_protos_GetAsyncCommandResponse *cmd =
        (perfetto_protos_GetAsyncCommandResponse *)ipc_host_begin_reply(g.host, p->stream_id, true,
                                                                        true);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing st;
    perfetto_protos_GetAsyncCommandResponse_begin_setup_tracing(cmd, &st);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing_set_shared_buffer_page_size_kb(
        &st, PAGE_SIZE_BYTES / 1024);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing_end(&st);
    ipc_host_end_reply(g.host, cl, p->smb_fd);
    for (int step = 0; step < 2; step++) {
        cmd = (perfetto_protos_GetAsyncCommandResponse *)ipc_host_begin_reply(g.host, p->stream_id,
                                                                              true, true);
        perfetto_protos_DataSourceConfig c;
        if (step == 0) {
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource m;
            perfetto_protos_GetAsyncCommandResponse_begin_setup_data_source(cmd, &m);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_set_new_instance_id(&m, 1);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_begin_config(&m, &c);
            write_config(&c);
            perfetto_protos_DataSourceConfig_end(&c);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_end(&m);
        } else {
            perfetto_protos_GetAsyncCommandResponse_StartDataSource m;
            perfetto_protos_GetAsyncCommandResponse_begin_start_data_source(cmd, &m);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_set_new_instance_id(&m, 1);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_begin_config(&m, &c);
            write_config(&c);
            perfetto_protos_DataSourceConfig_end(&c);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_end(&m);
        }
        ipc_host_end_reply(g.host, cl, -1);
    }
    p->started = true;
    g.started++;
}

/* --deaf: requests the producer must answer, each on its own. */
static void send_flushes(ipc_host_client *cl, peer *p)
{
    for (uint32_t i = 0; i < g.deaf_flushes; i++) {
        perfetto_protos_GetAsyncCommandResponse *cmd =
            (perfetto_protos_GetAsyncCommandResponse *)ipc_host_begin_reply(g.host, p->stream_id,
                                                                            true, true);
        perfetto_protos_GetAsyncCommandResponse_Flush f;
        perfetto_protos_GetAsyncCommandResponse_begin_flush(cmd, &f);
        perfetto_protos_GetAsyncCommandResponse_Flush_add_data_source_ids(&f, 1);
        perfetto_protos_GetAsyncCommandResponse_Flush_set_request_id(&f, i + 1u);
        perfetto_protos_GetAsyncCommandResponse_Flush_end(&f);
        if (!ipc_host_end_reply(g.host, cl, -1))
            break;
    }
}

/* Counts the chunks a CommitData offers, and does nothing about them. */
static void on_commit(pb_bytes args)
{
    perfetto_protos_CommitDataRequest_view v;
    if (perfetto_protos_CommitDataRequest_decode(&v, args.data, args.size))
        g.chunks_offered += v.chunks_to_move_count;
}

static void on_invoke(void *ctx, ipc_host_client *cl, uint32_t method, uint64_t rid, bool drop,
                      pb_bytes args)
{
    (void)ctx;
    peer *p = cl->user;
    int fd = ipc_host_take_fd(cl);
    if (fd >= 0)
        close(fd); /* a producer-provided SMB is refused: we hand out our own */
    switch (method) {
    case IPC_PORT_INITIALIZE_CONNECTION:
        if (!drop) {
            perfetto_protos_InitializeConnectionResponse *r =
                (perfetto_protos_InitializeConnectionResponse *)ipc_host_begin_reply(g.host, rid,
                                                                                     true, false);
            perfetto_protos_InitializeConnectionResponse_set_using_shmem_provided_by_producer(
                r, false);
            ipc_host_end_reply(g.host, cl, -1);
        }
        break;
    case IPC_PORT_REGISTER_DATA_SOURCE: {
        reply_empty(cl, rid, drop, true);
        perfetto_protos_RegisterDataSourceRequest_view v;
        perfetto_protos_DataSourceDescriptor_view d;
        if (perfetto_protos_RegisterDataSourceRequest_decode(&v, args.data, args.size) &&
            perfetto_protos_DataSourceDescriptor_decode(&d, v.data_source_descriptor.data,
                                                        v.data_source_descriptor.size) &&
            d.name.size == strlen(g.data_source) &&
            memcmp(d.name.data, g.data_source, d.name.size) == 0)
            start(cl, p);
        break;
    }
    case IPC_PORT_GET_ASYNC_COMMAND:
        if (p->has_stream || drop) {
            reply_empty(cl, rid, drop, false);
            break;
        }
        p->has_stream = true;
        p->stream_id = rid;
        break;
    case IPC_PORT_COMMIT_DATA:
        /* The hang: no reply, no copy, no chunk freed. */
        g.commits++;
        on_commit(args);
        break;
    default:
        /* Sync included: a prompt answer, so the producer's start-up is as
         * quick as with a healthy service. --deaf: the flushes go first, so
         * the producer has answered them all (and its answers are stuck)
         * when its start-up wait ends. */
        if (method == IPC_PORT_SYNC && g.deaf_flushes && p->started && !g.deaf) {
            send_flushes(cl, p);
            g.deaf = true;
            /* At once: the host would otherwise go on reading this
             * round, answers to the flushes included. */
            cl->reading_paused = true;
        }
        reply_empty(cl, rid, drop, true);
        break;
    }
}

static void on_connect(void *ctx, ipc_host_client *cl)
{
    (void)ctx;
    peer *p = calloc(1, sizeof *p);
    if (!p) {
        ipc_host_drop(g.host, cl);
        return;
    }
    p->smb_fd = -1;
    cl->user = p;
    cl->reading_paused = g.deaf;
    g.producers++;
}

static void on_disconnect(void *ctx, ipc_host_client *cl)
{
    (void)ctx;
    peer *p = cl->user;
    if (!p)
        return;
    note_usage(p);
    if (p->smb_mem)
        munmap(p->smb_mem, g.smb_size);
    if (p->smb_fd >= 0)
        close(p->smb_fd);
    free(p);
    cl->user = NULL;
}

static void note_one(void *ctx, ipc_host_client *cl)
{
    (void)ctx;
    if (cl->user)
        note_usage(cl->user);
}

static int usage(void)
{
    fprintf(stderr, "usage: stall_service --socket PATH [--data-source NAME] [--smb-kb 8..32768]\n"
                    "       [--policy unspecified|drop|stall-then-abort|stall-then-drop]\n"
                    "       [--deaf FLUSHES]\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' }, { "data-source", required_argument, NULL, 'd' },
        { "smb-kb", required_argument, NULL, 'k' }, { "policy", required_argument, NULL, 'p' },
        { "deaf", required_argument, NULL, 'D' },   { NULL, 0, NULL, 0 },
    };
    static const char *const policies[] = { "unspecified", "drop", "stall-then-abort",
                                            "stall-then-drop" };
    const char *socket_path = NULL;
    uint32_t smb_kb = 64;
    g.data_source = "gpu.renderstages";
    g.policy = 3;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            socket_path = optarg;
            break;
        case 'd':
            g.data_source = optarg;
            break;
        case 'k':
            if (!util_parse_u32(optarg, 10, 8, 32768, &smb_kb) ||
                smb_kb % (PAGE_SIZE_BYTES / 1024)) {
                fprintf(stderr, "stall_service: --smb-kb: a multiple of 4 in 8..32768\n");
                return 2;
            }
            break;
        case 'D':
            if (!util_parse_u32(optarg, 10, 1, 1000000, &g.deaf_flushes)) {
                fprintf(stderr, "stall_service: --deaf: a count of flushes in 1..1000000\n");
                return 2;
            }
            break;
        case 'p': {
            bool ok = false;
            for (uint32_t i = 0; i < sizeof policies / sizeof *policies; i++)
                if (strcmp(optarg, policies[i]) == 0) {
                    g.policy = i;
                    ok = true;
                }
            if (!ok) {
                fprintf(stderr, "stall_service: unknown --policy '%s'\n", optarg);
                return 2;
            }
            break;
        }
        default:
            return usage();
        }
    }
    if (!socket_path || optind != argc)
        return usage();
    g.smb_size = (size_t)smb_kb * 1024u;

    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    unlink(socket_path);
    int lfd = ipc_socket_listen(socket_path);
    if (lfd < 0) {
        fprintf(stderr, "stall_service: cannot listen on %s: %s\n", socket_path, strerror(errno));
        return 1;
    }
    const ipc_host_config hc = {
        .listen_fd = lfd,
        .service_name = "ProducerPort",
        .methods = ipc_port_method_names,
        .num_methods = IPC_PORT_METHOD_COUNT,
        .max_clients = 64,
        /* What little we send is always read: a producer that stops
         * reading is not what this service is about. */
        .tx_timeout_ms = 60000,
        .ops = { on_connect, on_disconnect, on_invoke },
    };
    g.host = ipc_host_create(&hc);
    if (!g.host) {
        fprintf(stderr, "stall_service: out of memory\n");
        return 1;
    }
    while (!g_stop)
        ipc_host_poll(g.host, 100, -1);
    ipc_host_for_each(g.host, note_one, NULL);
    ipc_host_destroy(g.host);
    unlink(socket_path);
    printf("stall_service: producers=%llu started=%llu commits=%llu chunks_offered=%llu "
           "smb_chunks=%zu smb_chunks_taken=%zu deaf=%d\n",
           (unsigned long long)g.producers, (unsigned long long)g.started,
           (unsigned long long)g.commits, (unsigned long long)g.chunks_offered, g.smb_chunks,
           g.most_taken, g.deaf ? 1 : 0);
    return 0;
}
