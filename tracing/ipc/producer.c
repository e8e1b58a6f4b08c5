/* Perfetto producer: the connection state machine and command handling on
 * one background thread, plus the few entry points application threads use.
 *
 *   app threads --tw_* into SMB--> arbiter --notify (eventfd)--> producer
 *   thread --CommitData--> service
 *
 * Locking: `mu` guards what application threads can reach (instances, the
 * current SMB, writer records, the op queue, sync counters, stats). The
 * producer thread takes it briefly; it never holds it while calling a data
 * source callback or doing I/O. Lock order: mu, then the arbiter's lock. */
#include "tracing/ipc/producer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "protos/perfetto/data_source_descriptor.pbc.h"
#include "tracing/ipc/ipc_client.h"
#include "tracing/ipc/producer_cmd.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/util/util_time.h"

#define SERVICE_NAME "ProducerPort"
/* Largest SMB we map for a service: Perfetto's service caps at 32 MiB. */
#define MAX_SERVICE_SMB (64u << 20)
/* Periodic drain of commits the arbiter did not wake us for. */
#define DRAIN_PERIOD_MS 50
/* Keep each CommitData well under IPC_MAX_FRAME_SIZE. */
#define COMMIT_SPLIT_BYTES (96u * 1024u)

typedef struct producer_smb {
    _Atomic uint32_t refs;
    struct ipc_producer *p;
    void *mem;
    size_t size;
    smb_arbiter *arb;
    uint64_t conn_gen;
} producer_smb;

typedef struct producer_instance {
    bool used;
    bool started;
    uint64_t id;
    size_t ds;
    uint32_t target_buffer;
    smb_exhausted_policy policy;
} producer_instance;

typedef struct producer_writer_rec {
    tw_writer *tw;
    producer_smb *smb;
} producer_writer_rec;

typedef enum {
    OP_REGISTER_WRITER,
    OP_UNREGISTER_WRITER
} producer_op_kind;
typedef struct producer_op {
    producer_op_kind kind;
    uint16_t writer_id;
    uint32_t target_buffer;
    uint64_t conn_gen;
} producer_op;

typedef enum {
    ST_IDLE,         /* not connected; next attempt at next_connect_ms */
    ST_BINDING,      /* BindService sent */
    ST_INITIALIZING, /* InitializeConnection sent */
    ST_CONNECTED,
} conn_state;

struct ipc_producer {
    char *name;
    char *socket_path;
    ipc_producer_data_source ds[IPC_PRODUCER_MAX_DATA_SOURCES];
    char *ds_names[IPC_PRODUCER_MAX_DATA_SOURCES];
    size_t num_ds;
    uint32_t smb_size, page_size;
    bool offer_smb;
    uint32_t backoff_min, backoff_max, io_timeout, stall_timeout, farewell_ms;
    _Atomic uint32_t enabled[IPC_PRODUCER_MAX_DATA_SOURCES];

    pthread_t thread;
    bool joined; /* ipc_producer_stop() ended the thread */
    int wake_fd;
    /* Set by ipc_producer_stop(): the deadline first, then the flag. */
    _Atomic uint64_t stop_deadline_ms;
    _Atomic bool stop;

    pthread_mutex_t mu;
    pthread_cond_t sync_cv;
    producer_instance inst[IPC_PRODUCER_MAX_INSTANCES];
    producer_smb *smb;
    uint64_t conn_gen;
    producer_writer_rec *writers;
    size_t num_writers, cap_writers;
    producer_op *ops;
    size_t num_ops, cap_ops;
    uint64_t sync_req, sync_done, sync_failed;
    ipc_producer_stats stats;
    bool connected;
    ipc_producer_startup startup; /* first connection's outcome; sync_cv */

    /* Producer thread only. */
    ipc_client cl;
    bool have_client;
    conn_state state;
    uint64_t deadline_ms;
    uint64_t next_connect_ms;
    uint32_t backoff_ms;
    int offered_fd;
    void *offered_mem;
    bool fail;
    uint64_t sync_sent;
    uint64_t next_drain_ms;
    smb_commit_batch batch;
    bool out_of_time;         /* work for the service given up at the stop deadline */
    uint64_t chunks_not_sent; /* taken from the arbiter, never committed */
};

/* ---- small helpers ------------------------------------------------------ */

static void wake(ipc_producer *p)
{
    uint64_t one = 1;
    ssize_t rc = write(p->wake_fd, &one, sizeof one);
    (void)rc; /* a full counter still wakes the thread */
}

/* Once the host asked to stop it is waiting: whatever is still being sent
 * ends at the deadline it set (farewell_ms after its call). The clock is
 * read only after a stop. */
static bool past_stop_deadline(ipc_producer *p)
{
    if (!atomic_load_explicit(&p->stop, memory_order_acquire))
        return false;
    if (util_now_ms() < atomic_load_explicit(&p->stop_deadline_ms, memory_order_relaxed))
        return false;
    p->out_of_time = true;
    return true;
}

/* For handlers running inside the client's dispatch: give up on the
 * connection, and let no further frame already read be handled (a command
 * that follows a rejected SetupTracing must not start anything). */
static void fail_connection(ipc_producer *p)
{
    p->fail = true;
    if (p->have_client)
        ipc_client_abandon(&p->cl);
}

static void smb_unref(producer_smb *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    smb_arbiter_destroy(s->arb);
    munmap(s->mem, s->size);
    free(s);
}

static void arbiter_notify(void *ctx, bool urgent)
{
    (void)urgent;
    producer_smb *s = ctx;
    wake(s->p);
}

/* An SMB over `mem` (taken over: unmapped when the last ref goes). */
static producer_smb *smb_new(ipc_producer *p, void *mem, size_t size, size_t page_size)
{
    producer_smb *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->mem = mem;
    s->size = size;
    atomic_init(&s->refs, 1);
    smb_arbiter_config ac = {
        .smb_size = size,
        .page_size = page_size,
        .layout = SMB_PAGE_DIV1, /* Perfetto's default page layout */
        .notify = arbiter_notify,
        .notify_ctx = s,
    };
    s->arb = smb_arbiter_create_on(mem, &ac);
    if (!s->arb) {
        free(s);
        return NULL;
    }
    return s;
}

static bool valid_page_size(size_t ps)
{
    return ps >= SMB_MIN_PAGE_SIZE && ps <= SMB_MAX_PAGE_SIZE && ps % SMB_MIN_PAGE_SIZE == 0;
}

static bool push_op(ipc_producer *p, producer_op op)
{
    if (p->num_ops == p->cap_ops) {
        size_t ncap = p->cap_ops ? p->cap_ops * 2 : 16;
        producer_op *n = realloc(p->ops, ncap * sizeof *n);
        if (!n)
            return false;
        p->ops = n;
        p->cap_ops = ncap;
    }
    p->ops[p->num_ops++] = op;
    return true;
}

/* The first outcome sticks: a host waits for the start-up only once. */
static void set_startup(ipc_producer *p, ipc_producer_startup outcome)
{
    pthread_mutex_lock(&p->mu);
    if (p->startup == GT_STARTUP_PENDING) {
        p->startup = outcome;
        pthread_cond_broadcast(&p->sync_cv);
    }
    pthread_mutex_unlock(&p->mu);
}

static producer_instance *find_instance(ipc_producer *p, uint64_t id)
{
    for (size_t i = 0; i < IPC_PRODUCER_MAX_INSTANCES; i++)
        if (p->inst[i].used && p->inst[i].id == id)
            return &p->inst[i];
    return NULL;
}

static int find_ds(ipc_producer *p, const char *name)
{
    for (size_t i = 0; i < p->num_ds; i++)
        if (strcmp(p->ds_names[i], name) == 0)
            return (int)i;
    return -1;
}

/* ---- the offered (producer-provided) SMB -------------------------------- */

static void drop_offer(ipc_producer *p)
{
    if (p->offered_mem)
        munmap(p->offered_mem, p->smb_size);
    if (p->offered_fd >= 0)
        close(p->offered_fd);
    p->offered_mem = NULL;
    p->offered_fd = -1;
}

/* A sealed memfd, as Perfetto's producers create it: the service refuses
 * an SMB that could still shrink under it. */
static bool make_offer(ipc_producer *p)
{
    int fd = memfd_create("gputrace-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return false;
    if (ftruncate(fd, p->smb_size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        close(fd);
        return false;
    }
    void *mem = mmap(NULL, p->smb_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        close(fd);
        return false;
    }
    p->offered_fd = fd;
    p->offered_mem = mem;
    return true;
}

/* ---- connection lifecycle ----------------------------------------------- */

static void stop_all_instances(ipc_producer *p)
{
    for (size_t i = 0; i < IPC_PRODUCER_MAX_INSTANCES; i++) {
        pthread_mutex_lock(&p->mu);
        producer_instance in = p->inst[i];
        if (in.used && in.started)
            atomic_fetch_sub_explicit(&p->enabled[in.ds], 1, memory_order_relaxed);
        p->inst[i].used = false;
        pthread_mutex_unlock(&p->mu);
        if (in.used && in.started && p->ds[in.ds].on_stop)
            p->ds[in.ds].on_stop(p->ds[in.ds].user, in.id);
    }
}

static void disconnect(ipc_producer *p, bool protocol_error)
{
    bool was = p->have_client;
    if (p->have_client)
        ipc_client_close(&p->cl);
    p->have_client = false;
    drop_offer(p);
    stop_all_instances(p);
    pthread_mutex_lock(&p->mu);
    producer_smb *s = p->smb;
    p->smb = NULL;
    p->connected = false;
    p->stats.using_producer_smb = false;
    p->num_ops = 0; /* ops of the old connection mean nothing to the next */
    if (was)
        p->stats.disconnects++;
    if (protocol_error)
        p->stats.protocol_errors++;
    p->sync_failed = p->sync_req;
    /* A connection lost before the start-up Sync came back: the service
     * is not answering, a host waiting for it should not wait longer. */
    if (p->startup == GT_STARTUP_PENDING)
        p->startup = GT_STARTUP_NO_SERVICE;
    pthread_cond_broadcast(&p->sync_cv);
    pthread_mutex_unlock(&p->mu);
    smb_unref(s); /* writers still holding it keep it mapped */
    p->state = ST_IDLE;
    p->fail = false;
    p->next_connect_ms = ipc_deadline_ms(util_now_ms(), p->backoff_ms);
    p->backoff_ms = p->backoff_ms * 2 > p->backoff_max ? p->backoff_max : p->backoff_ms * 2;
}

static void try_connect(ipc_producer *p)
{
    pthread_mutex_lock(&p->mu);
    p->stats.connect_attempts++;
    pthread_mutex_unlock(&p->mu);
    int fd = ipc_socket_connect(p->socket_path);
    if (fd < 0) {
        /* No socket, or nobody listening: nothing to wait for. */
        set_startup(p, GT_STARTUP_NO_SERVICE);
        p->next_connect_ms = ipc_deadline_ms(util_now_ms(), p->backoff_ms);
        p->backoff_ms = p->backoff_ms * 2 > p->backoff_max ? p->backoff_max : p->backoff_ms * 2;
        return;
    }
    if (!ipc_client_start(&p->cl, fd, SERVICE_NAME)) {
        ipc_client_close(&p->cl);
        p->have_client = false;
        disconnect(p, false);
        return;
    }
    p->have_client = true;
    p->state = ST_BINDING;
    p->deadline_ms = ipc_deadline_ms(util_now_ms(), p->io_timeout);
}

/* ---- outgoing requests -------------------------------------------------- */

static void register_data_sources(ipc_producer *p)
{
    for (size_t i = 0; i < p->num_ds; i++) {
        pb_msg *m = ipc_client_begin_invoke(&p->cl, "RegisterDataSource", true);
        if (!m) {
            p->fail = true;
            return;
        }
        perfetto_protos_DataSourceDescriptor d;
        perfetto_protos_RegisterDataSourceRequest_begin_data_source_descriptor(
            (perfetto_protos_RegisterDataSourceRequest *)m, &d);
        perfetto_protos_DataSourceDescriptor_set_name(&d, p->ds_names[i]);
        perfetto_protos_DataSourceDescriptor_set_will_notify_on_stop(&d, true);
        perfetto_protos_DataSourceDescriptor_set_will_notify_on_start(&d, true);
        perfetto_protos_DataSourceDescriptor_set_handles_incremental_state_clear(
            &d, p->ds[i].on_clear_incremental_state != NULL);
        perfetto_protos_DataSourceDescriptor_end(&d);
        /* The reply carries nothing we act on: ask for none. */
        if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL))
            p->fail = true;
    }
}

static void on_startup_sync(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    (void)success; /* even a refusal comes after the commands before it */
    (void)has_more;
    (void)reply;
    set_startup(ctx, GT_STARTUP_READY);
}

/* Sent right behind the registrations. A service handles a connection's
 * requests in order, and a session that wants a data source sets it up and
 * starts it while handling its registration; traced posts those commands
 * and the Sync reply as tasks on one queue (TracingServiceImpl
 * ProducerEndpointImpl::Sync), gputrace-service sends them at once. So the
 * reply comes after every Setup/StartDataSource the registrations caused,
 * and the producer thread has run their callbacks when it arrives. The
 * RegisterDataSource reply would not do: traced sends it before the posted
 * commands. A service without Sync gets an empty CommitData instead, which
 * is ordered the same way in gputrace-service. */
static void send_startup_sync(ipc_producer *p)
{
    pthread_mutex_lock(&p->mu);
    bool pending = p->startup == GT_STARTUP_PENDING;
    pthread_mutex_unlock(&p->mu);
    if (!pending || p->fail)
        return;
    pb_msg *m = ipc_client_begin_invoke(&p->cl, "Sync", false);
    if (!m)
        m = ipc_client_begin_invoke(&p->cl, "CommitData", false);
    if (!m || !ipc_client_end_invoke(&p->cl, -1, on_startup_sync, p))
        p->fail = true;
}

static void notify_instance(ipc_producer *p, const char *method, uint64_t id)
{
    pb_msg *m = ipc_client_begin_invoke(&p->cl, method, true);
    if (!m)
        return; /* an old service without it: nothing to tell */
    /* data_source_id is field 1 in both Notify requests. */
    perfetto_protos_NotifyDataSourceStartedRequest_set_data_source_id(
        (perfetto_protos_NotifyDataSourceStartedRequest *)m, id);
    if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL))
        p->fail = true;
}

static void send_writer_ops(ipc_producer *p, const producer_op *ops, size_t n, uint64_t gen,
                            bool reg)
{
    for (size_t i = 0; i < n && !p->fail && !past_stop_deadline(p); i++) {
        if (ops[i].conn_gen != gen || (ops[i].kind == OP_REGISTER_WRITER) != reg)
            continue;
        pb_msg *m = ipc_client_begin_invoke(
            &p->cl, reg ? "RegisterTraceWriter" : "UnregisterTraceWriter", true);
        if (!m)
            continue;
        /* trace_writer_id is field 1 in both requests. */
        perfetto_protos_RegisterTraceWriterRequest *r =
            (perfetto_protos_RegisterTraceWriterRequest *)m;
        perfetto_protos_RegisterTraceWriterRequest_set_trace_writer_id(r, ops[i].writer_id);
        if (reg)
            perfetto_protos_RegisterTraceWriterRequest_set_target_buffer(r, ops[i].target_buffer);
        if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL))
            p->fail = true;
    }
}

static void on_sync_reply(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    (void)success;
    (void)has_more;
    (void)reply;
    ipc_producer *p = ctx;
    pthread_mutex_lock(&p->mu);
    /* Replies come in request order: everything sent so far is acked. */
    if (p->sync_sent > p->sync_done)
        p->sync_done = p->sync_sent;
    pthread_cond_broadcast(&p->sync_cv);
    pthread_mutex_unlock(&p->mu);
}

/* Drains the arbiter and sends CommitData request(s), the last carrying
 * flush_request_id when non-zero. With `sync`, an empty CommitData that
 * wants a reply follows: the service handles a connection's requests in
 * order, so its reply acknowledges everything before it. */
static void send_commits(ipc_producer *p, uint64_t flush_request_id, bool sync)
{
    if (p->state != ST_CONNECTED || p->fail)
        return;
    producer_smb *s = p->smb; /* only this thread replaces p->smb */
    smb_commit_batch *b = &p->batch;
    smb_commit_batch_clear(b);
    if (s)
        smb_arbiter_take_commits(s->arb, b);
    size_t mi = 0, gi = 0;
    uint64_t moved = 0, patched = 0, commits = 0;
    bool work = b->num_moves || b->num_groups || flush_request_id;
    while (work) {
        if (past_stop_deadline(p)) {
            p->chunks_not_sent += b->num_moves - mi;
            break;
        }
        pb_msg *m = ipc_client_begin_invoke(&p->cl, "CommitData", true);
        if (!m) {
            p->fail = true;
            return;
        }
        perfetto_protos_CommitDataRequest *req = (perfetto_protos_CommitDataRequest *)m;
        size_t est = 0;
        for (; mi < b->num_moves && est < COMMIT_SPLIT_BYTES; mi++, est += 24) {
            perfetto_protos_CommitDataRequest_ChunksToMove mv;
            perfetto_protos_CommitDataRequest_begin_chunks_to_move(req, &mv);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_page(&mv, b->moves[mi].page);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_chunk(&mv, b->moves[mi].chunk);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_target_buffer(
                &mv, b->moves[mi].target_buffer);
            perfetto_protos_CommitDataRequest_ChunksToMove_end(&mv);
            moved++;
        }
        /* Patches after every move: a patch may target a chunk moved in
         * this very batch. */
        for (; mi == b->num_moves && gi < b->num_groups && est < COMMIT_SPLIT_BYTES; gi++) {
            const smb_commit_patch_group *g = &b->groups[gi];
            perfetto_protos_CommitDataRequest_ChunkToPatch cp;
            perfetto_protos_CommitDataRequest_begin_chunks_to_patch(req, &cp);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_target_buffer(&cp, g->target_buffer);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, g->writer_id);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_chunk_id(&cp, g->chunk_id);
            for (uint32_t k = 0; k < g->count; k++) {
                const smb_patch *pt = &b->patches[g->first + k];
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch pp;
                perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &pp);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_offset(&pp, pt->offset);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&pp, pt->data,
                                                                              sizeof pt->data);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&pp);
            }
            if (g->has_more_patches)
                perfetto_protos_CommitDataRequest_ChunkToPatch_set_has_more_patches(&cp, true);
            perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
            est += 32 + 16 * (size_t)g->count;
            patched += g->count;
        }
        work = mi < b->num_moves || gi < b->num_groups;
        if (!work && flush_request_id)
            perfetto_protos_CommitDataRequest_set_flush_request_id(req, flush_request_id);
        commits++;
        if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL)) {
            p->fail = true;
            return;
        }
    }
    if (sync && !p->out_of_time) {
        if (!ipc_client_begin_invoke(&p->cl, "CommitData", false) ||
            !ipc_client_end_invoke(&p->cl, -1, on_sync_reply, p)) {
            p->fail = true;
            return;
        }
        commits++;
    }
    /* The service frees the moved chunks as it copies them; let writers
     * that are dropping or stalling look again (there is no other signal
     * from another process). */
    if (moved && s)
        smb_arbiter_chunks_freed(s->arb);
    pthread_mutex_lock(&p->mu);
    p->stats.commits_sent += commits;
    p->stats.chunks_moved += moved;
    p->stats.patches_sent += patched;
    if (flush_request_id)
        p->stats.flushes_acked++;
    pthread_mutex_unlock(&p->mu);
}

/* Writer registrations, then commits, then unregistrations: a writer is
 * known before its chunks arrive, and stays known until its last chunk
 * (released writers commit before they queue their unregistration). */
static void send_pending(ipc_producer *p, uint64_t flush_request_id, bool sync)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->num_ops;
    producer_op *ops = NULL;
    if (n && (ops = malloc(n * sizeof *ops)) != NULL)
        memcpy(ops, p->ops, n * sizeof *ops);
    p->num_ops = 0;
    uint64_t gen = p->conn_gen;
    pthread_mutex_unlock(&p->mu);
    if (ops)
        send_writer_ops(p, ops, n, gen, true);
    send_commits(p, flush_request_id, sync);
    if (ops)
        send_writer_ops(p, ops, n, gen, false);
    free(ops);
}

/* ---- commands from the service ------------------------------------------ */

static bool attach_service_smb(ipc_producer *p, int fd, uint32_t page_size_kb)
{
    size_t page_size = (size_t)page_size_kb * 1024u;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    /* A service SMB that could shrink would let the service SIGBUS us:
     * require the seal Perfetto's service puts on its memfds. */
    if (!valid_page_size(page_size) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size <= 0 || (uint64_t)st.st_size > MAX_SERVICE_SMB ||
        (size_t)st.st_size % page_size != 0 || seals < 0 || !(seals & F_SEAL_SHRINK))
        return false;
    size_t size = (size_t)st.st_size;
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED)
        return false;
    producer_smb *s = smb_new(p, mem, size, page_size);
    if (!s) {
        munmap(mem, size);
        return false;
    }
    pthread_mutex_lock(&p->mu);
    s->conn_gen = p->conn_gen;
    p->smb = s;
    pthread_mutex_unlock(&p->mu);
    return true;
}

static void handle_setup_tracing(ipc_producer *p, const producer_cmd *c)
{
    int fd = ipc_client_take_fd(&p->cl);
    if (p->smb) {
        /* Ours was adopted (or a repeated SetupTracing): nothing to map. */
        if (fd >= 0)
            close(fd);
        return;
    }
    if (fd < 0 || !attach_service_smb(p, fd, c->page_size_kb))
        fail_connection(p);
    if (fd >= 0)
        close(fd);
}

static producer_instance *setup_instance(ipc_producer *p, uint64_t id, pb_bytes config,
                                         bool *is_new)
{
    char name[256];
    ipc_producer_ds_config cfg;
    *is_new = false;
    if (!producer_parse_ds_config(config, &cfg, name, sizeof name))
        return NULL;
    int ds = find_ds(p, name);
    if (ds < 0)
        return NULL; /* not ours: ignore, as for any unknown name */
    pthread_mutex_lock(&p->mu);
    producer_instance *in = find_instance(p, id);
    if (!in) {
        for (size_t i = 0; i < IPC_PRODUCER_MAX_INSTANCES && !in; i++)
            if (!p->inst[i].used)
                in = &p->inst[i];
        if (in) {
            *in = (producer_instance){
                .used = true,
                .id = id,
                .ds = (size_t)ds,
                .target_buffer = cfg.target_buffer,
                .policy = cfg.buffer_exhausted_policy == 0   ? p->ds[ds].policy
                          : cfg.buffer_exhausted_policy >= 2 ? SMB_POLICY_STALL
                                                             : SMB_POLICY_DROP,
            };
            *is_new = true;
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (in && *is_new && p->ds[ds].on_setup)
        p->ds[ds].on_setup(p->ds[ds].user, id, &cfg);
    return in;
}

static void handle_start(ipc_producer *p, const producer_cmd *c)
{
    bool is_new;
    /* Without a SetupDataSource first (older services), set up now, as
     * Perfetto's producer does. */
    producer_instance *in = setup_instance(p, c->instance_id, c->config, &is_new);
    if (!in)
        return;
    char name[256];
    ipc_producer_ds_config cfg;
    producer_parse_ds_config(c->config, &cfg, name, sizeof name);
    pthread_mutex_lock(&p->mu);
    bool start = in->used && !in->started;
    size_t ds = in->ds;
    if (start) {
        in->started = true;
        in->target_buffer = cfg.target_buffer;
        atomic_fetch_add_explicit(&p->enabled[ds], 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&p->mu);
    if (!start)
        return;
    if (p->ds[ds].on_start)
        p->ds[ds].on_start(p->ds[ds].user, c->instance_id, &cfg);
    notify_instance(p, "NotifyDataSourceStarted", c->instance_id);
}

static void handle_stop(ipc_producer *p, uint64_t id)
{
    pthread_mutex_lock(&p->mu);
    producer_instance *in = find_instance(p, id);
    producer_instance copy = in ? *in : (producer_instance){ 0 };
    if (in) {
        if (in->started)
            atomic_fetch_sub_explicit(&p->enabled[in->ds], 1, memory_order_relaxed);
        in->used = false;
    }
    pthread_mutex_unlock(&p->mu);
    if (!copy.used)
        return;
    if (copy.started && p->ds[copy.ds].on_stop)
        p->ds[copy.ds].on_stop(p->ds[copy.ds].user, id);
    send_pending(p, 0, false);
    notify_instance(p, "NotifyDataSourceStopped", id);
}

typedef struct id_visit {
    ipc_producer *p;
    bool flush;
} id_visit;

static void visit_id(void *ctx, uint64_t id)
{
    id_visit *v = ctx;
    ipc_producer *p = v->p;
    pthread_mutex_lock(&p->mu);
    producer_instance *in = find_instance(p, id);
    producer_instance copy = in ? *in : (producer_instance){ 0 };
    pthread_mutex_unlock(&p->mu);
    if (!copy.used || !copy.started)
        return;
    const ipc_producer_data_source *d = &p->ds[copy.ds];
    if (v->flush && d->on_flush)
        d->on_flush(d->user, id);
    else if (!v->flush && d->on_clear_incremental_state)
        d->on_clear_incremental_state(d->user, id);
}

static void on_command(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    ipc_producer *p = ctx;
    producer_cmd c;
    /* The host is stopping us: commands still arriving are not worth
     * holding it up for. */
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
        return;
    if (!success || !has_more) {
        /* The command stream ended: the service will never talk to us
         * again on this connection. */
        fail_connection(p);
        return;
    }
    if (!producer_cmd_parse(reply.data, reply.size, &c)) {
        fail_connection(p);
        return;
    }
    switch (c.kind) {
    case PRODUCER_CMD_SETUP_TRACING:
        handle_setup_tracing(p, &c);
        break;
    case PRODUCER_CMD_SETUP_DATA_SOURCE: {
        bool is_new;
        setup_instance(p, c.instance_id, c.config, &is_new);
        break;
    }
    case PRODUCER_CMD_START_DATA_SOURCE:
        handle_start(p, &c);
        break;
    case PRODUCER_CMD_STOP_DATA_SOURCE:
        handle_stop(p, c.instance_id);
        break;
    case PRODUCER_CMD_FLUSH: {
        id_visit v = { p, true };
        producer_cmd_for_each_id(&c, visit_id, &v);
        /* Always answer, even with nothing to commit: the service waits
         * for every producer it asked. */
        send_pending(p, c.flush_request_id, false);
        break;
    }
    case PRODUCER_CMD_CLEAR_INCREMENTAL_STATE: {
        id_visit v = { p, false };
        producer_cmd_for_each_id(&c, visit_id, &v);
        break;
    }
    default:
        break; /* a command from a newer service: ignore */
    }
}

static void on_init_reply(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    (void)has_more;
    ipc_producer *p = ctx;
    perfetto_protos_InitializeConnectionResponse_view v;
    if (!success ||
        !perfetto_protos_InitializeConnectionResponse_decode(&v, reply.data, reply.size) ||
        v.use_shmem_emulation) {
        fail_connection(p); /* shmem emulation (relays) is not supported */
        return;
    }
    if (p->offered_mem && v.using_shmem_provided_by_producer) {
        producer_smb *s = smb_new(p, p->offered_mem, p->smb_size, p->page_size);
        if (!s) {
            fail_connection(p);
            return;
        }
        p->offered_mem = NULL; /* owned by the SMB now */
        pthread_mutex_lock(&p->mu);
        s->conn_gen = p->conn_gen;
        p->smb = s;
        p->stats.using_producer_smb = true;
        pthread_mutex_unlock(&p->mu);
    }
    /* Not adopted: the service sends its own with SetupTracing. */
    drop_offer(p);
    p->state = ST_CONNECTED;
    p->backoff_ms = p->backoff_min;
    pthread_mutex_lock(&p->mu);
    p->connected = true;
    p->stats.connections++;
    pthread_mutex_unlock(&p->mu);
    register_data_sources(p);
    send_startup_sync(p);
}

static void start_session(ipc_producer *p)
{
    pthread_mutex_lock(&p->mu);
    p->conn_gen++;
    pthread_mutex_unlock(&p->mu);
    int fd = -1;
    if (p->offer_smb && make_offer(p))
        fd = p->offered_fd;
    pb_msg *m = ipc_client_begin_invoke(&p->cl, "InitializeConnection", false);
    pb_msg *g = NULL;
    if (!m) {
        p->fail = true;
        return;
    }
    perfetto_protos_InitializeConnectionRequest *r =
        (perfetto_protos_InitializeConnectionRequest *)m;
    perfetto_protos_InitializeConnectionRequest_set_shared_memory_page_size_hint_bytes(
        r, p->page_size);
    perfetto_protos_InitializeConnectionRequest_set_shared_memory_size_hint_bytes(r, p->smb_size);
    perfetto_protos_InitializeConnectionRequest_set_producer_name(r, p->name);
    if (fd >= 0)
        perfetto_protos_InitializeConnectionRequest_set_producer_provided_shmem(r, true);
    perfetto_protos_InitializeConnectionRequest_set_sdk_version(r, "gputrace-0.1");
    if (!ipc_client_end_invoke(&p->cl, fd, on_init_reply, p)) {
        p->fail = true;
        return;
    }
    /* The command stream goes out right behind, as Perfetto's producer
     * does, without waiting for the InitializeConnection reply. */
    g = ipc_client_begin_invoke(&p->cl, "GetAsyncCommand", false);
    if (!g || !ipc_client_end_invoke(&p->cl, -1, on_command, p)) {
        p->fail = true;
        return;
    }
    p->state = ST_INITIALIZING;
    p->deadline_ms = ipc_deadline_ms(util_now_ms(), p->io_timeout);
}

/* Methods a service must offer for us to work with it. */
static bool service_usable(const ipc_client *c)
{
    static const char *const required[] = { "InitializeConnection", "RegisterDataSource",
                                            "GetAsyncCommand", "CommitData" };
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!ipc_method_id(&c->methods, required[i]))
            return false;
    return true;
}

/* ---- the thread --------------------------------------------------------- */

static void handle_wake(ipc_producer *p)
{
    uint64_t v;
    ssize_t rc = read(p->wake_fd, &v, sizeof v);
    (void)rc;
    if (p->state != ST_CONNECTED) {
        pthread_mutex_lock(&p->mu);
        p->num_ops = 0;
        if (p->sync_req > p->sync_done) {
            p->sync_failed = p->sync_req;
            pthread_cond_broadcast(&p->sync_cv);
        }
        pthread_mutex_unlock(&p->mu);
        return;
    }
    pthread_mutex_lock(&p->mu);
    uint64_t req = p->sync_req;
    pthread_mutex_unlock(&p->mu);
    bool sync = req > p->sync_sent;
    if (sync)
        p->sync_sent = req;
    send_pending(p, 0, sync);
}

/* Last words: the writer registrations, commits and unregistrations still
 * queued go out. The host is waiting for this (ipc_producer_stop from
 * vkDestroyInstance, say), so it gets `farewell_ms` in all, however the
 * service behaves: a service that reads promptly takes everything at once
 * (the bytes only have to reach the kernel: a closed socket's data stays
 * readable to the peer), and what a service that stopped reading has not
 * taken by then is dropped and counted. */
static void farewell(ipc_producer *p)
{
    if (p->state != ST_CONNECTED || p->fail || !p->have_client)
        return;
    send_pending(p, 0, false);
    ipc_conn *c = &p->cl.conn;
    uint64_t until = atomic_load_explicit(&p->stop_deadline_ms, memory_order_relaxed);
    while (ipc_conn_wants_write(c) && !c->broken) {
        uint64_t now = util_now_ms();
        if (now >= until)
            break;
        struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
        if (poll(&pf, 1, ipc_ms_left(until, now, 50)) > 0 && !ipc_conn_flush(c))
            break;
    }
    size_t unsent = c->tx_len - c->tx_off;
    if (!unsent && !p->out_of_time && !p->fail)
        return;
    pthread_mutex_lock(&p->mu);
    p->stats.farewells_cut++;
    p->stats.farewell_bytes_unsent += unsent;
    p->stats.farewell_chunks_unsent += p->chunks_not_sent;
    pthread_mutex_unlock(&p->mu);
}

static void *producer_main(void *arg)
{
    ipc_producer *p = arg;
    while (!atomic_load(&p->stop)) {
        uint64_t now = util_now_ms();
        if (p->state == ST_IDLE && now >= p->next_connect_ms)
            try_connect(p);

        int timeout;
        if (p->state == ST_IDLE) {
            now = util_now_ms();
            timeout = ipc_ms_left(p->next_connect_ms, now, INT_MAX);
        } else if (p->state == ST_CONNECTED) {
            timeout = DRAIN_PERIOD_MS;
        } else {
            timeout = ipc_ms_left(p->deadline_ms, now, INT_MAX);
        }
        struct pollfd pf[2] = {
            { .fd = p->wake_fd, .events = POLLIN },
            { .fd = p->have_client ? p->cl.conn.fd : -1,
              .events =
                  (short)(POLLIN |
                          (p->have_client && ipc_conn_wants_write(&p->cl.conn) ? POLLOUT : 0)) },
        };
        int rc = poll(pf, 2, timeout);
        if (rc < 0 && errno != EINTR)
            break;
        if (atomic_load(&p->stop))
            break;
        if (rc > 0 && (pf[0].revents & POLLIN))
            handle_wake(p);
        if (p->have_client && rc > 0 && (pf[1].revents & POLLOUT))
            if (!ipc_client_on_writable(&p->cl))
                p->fail = true;
        if (p->have_client && !p->fail && rc > 0 &&
            (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            if (!ipc_client_on_readable(&p->cl))
                p->fail = true;
        }
        now = util_now_ms();
        if (p->have_client && !p->fail) {
            if (p->state == ST_BINDING && p->cl.bind_done) {
                if (p->cl.bound && service_usable(&p->cl))
                    start_session(p);
                else
                    p->fail = true;
            } else if (p->state != ST_CONNECTED && now >= p->deadline_ms) {
                p->fail = true; /* no reply in time */
            } else if (p->state == ST_CONNECTED && now >= p->next_drain_ms) {
                send_pending(p, 0, false);
                if (p->smb)
                    smb_arbiter_chunks_freed(p->smb->arb);
                p->next_drain_ms = now + DRAIN_PERIOD_MS;
            }
            if (ipc_conn_tx_stalled(&p->cl.conn, p->io_timeout) || p->cl.conn.broken)
                p->fail = true;
        }
        if (p->have_client && p->fail)
            disconnect(p, true);
    }
    farewell(p);
    disconnect(p, false);
    return NULL;
}

/* ---- public API --------------------------------------------------------- */

static void free_producer(ipc_producer *p)
{
    free(p->name);
    free(p->socket_path);
    for (size_t i = 0; i < p->num_ds; i++)
        free(p->ds_names[i]);
    if (p->wake_fd >= 0)
        close(p->wake_fd);
    free(p->writers);
    free(p->ops);
    smb_commit_batch_free(&p->batch);
    free(p);
}

ipc_producer *ipc_producer_create(const ipc_producer_config *cfg)
{
    if (!cfg || cfg->num_data_sources > IPC_PRODUCER_MAX_DATA_SOURCES)
        return NULL;
    ipc_producer *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->wake_fd = -1;
    p->offered_fd = -1;
    p->name = strdup(cfg->name ? cfg->name : "gputrace");
    p->socket_path = strdup(cfg->socket_path ? cfg->socket_path : ipc_producer_socket_path());
    if (!p->name || !p->socket_path)
        goto fail;
    for (size_t i = 0; i < cfg->num_data_sources; i++) {
        p->ds[i] = cfg->data_sources[i];
        if (!cfg->data_sources[i].name || !(p->ds_names[i] = strdup(cfg->data_sources[i].name)))
            goto fail;
        p->ds[i].name = p->ds_names[i];
        p->num_ds++;
        atomic_init(&p->enabled[i], 0);
    }
    p->smb_size = cfg->smb_size_hint ? cfg->smb_size_hint : 256u * 1024u;
    p->page_size = cfg->smb_page_size_hint ? cfg->smb_page_size_hint : 4096u;
    /* Perfetto's service accepts 4, 8, 16 or 32 KiB pages and an SMB that
     * is a multiple of the page size. */
    if (!valid_page_size(p->page_size) || p->page_size > 32768 ||
        (p->page_size & (p->page_size - 1)) || p->smb_size % p->page_size ||
        p->smb_size > (32u << 20))
        goto fail;
    p->offer_smb = !cfg->no_producer_smb;
    p->backoff_min = cfg->reconnect_min_ms ? cfg->reconnect_min_ms : 500;
    p->backoff_max = cfg->reconnect_max_ms ? cfg->reconnect_max_ms : 10000;
    if (p->backoff_max < p->backoff_min)
        p->backoff_max = p->backoff_min;
    p->backoff_ms = p->backoff_min;
    p->io_timeout = cfg->io_timeout_ms ? cfg->io_timeout_ms : 5000;
    p->stall_timeout = cfg->stall_timeout_ms ? cfg->stall_timeout_ms : 100;
    p->farewell_ms = cfg->farewell_ms ? cfg->farewell_ms : IPC_PRODUCER_FAREWELL_MS;
    p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (p->wake_fd < 0)
        goto fail;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->sync_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&p->thread, NULL, producer_main, p) != 0) {
        pthread_cond_destroy(&p->sync_cv);
        pthread_mutex_destroy(&p->mu);
        goto fail;
    }
    return p;
fail:
    free_producer(p);
    return NULL;
}

void ipc_producer_stop(ipc_producer *p)
{
    if (!p || p->joined)
        return;
    atomic_store_explicit(&p->stop_deadline_ms, ipc_deadline_ms(util_now_ms(), p->farewell_ms),
                          memory_order_relaxed);
    atomic_store(&p->stop, true);
    wake(p);
    pthread_join(p->thread, NULL);
    p->joined = true;
}

void ipc_producer_destroy(ipc_producer *p)
{
    if (!p)
        return;
    ipc_producer_stop(p);
    /* Writers the caller forgot: release them so their SMB goes too. */
    while (p->num_writers)
        ipc_producer_release_writer(p, p->writers[p->num_writers - 1].tw);
    pthread_cond_destroy(&p->sync_cv);
    pthread_mutex_destroy(&p->mu);
    free_producer(p);
}

const _Atomic uint32_t *ipc_producer_enabled_flag(ipc_producer *p, size_t ds_index)
{
    return ds_index < IPC_PRODUCER_MAX_DATA_SOURCES ? &p->enabled[ds_index] : NULL;
}

tw_writer *ipc_producer_new_writer(ipc_producer *p, uint64_t instance_id)
{
    tw_writer *tw = NULL;
    pthread_mutex_lock(&p->mu);
    producer_instance *in = find_instance(p, instance_id);
    producer_smb *s = p->smb;
    if (!in || !in->started || !s)
        goto out;
    if (p->num_writers == p->cap_writers) {
        size_t ncap = p->cap_writers ? p->cap_writers * 2 : 8;
        producer_writer_rec *n = realloc(p->writers, ncap * sizeof *n);
        if (!n)
            goto out;
        p->writers = n;
        p->cap_writers = ncap;
    }
    tw_config tc = {
        .policy = in->policy,
        .stall_timeout_ms = p->stall_timeout,
        .target_buffer = (uint16_t)in->target_buffer,
    };
    tw = tw_create(s->arb, &tc);
    if (!tw)
        goto out;
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    p->writers[p->num_writers++] = (producer_writer_rec){ tw, s };
    push_op(p,
            (producer_op){ OP_REGISTER_WRITER, tw_writer_id(tw), in->target_buffer, s->conn_gen });
out:
    pthread_mutex_unlock(&p->mu);
    if (tw)
        wake(p);
    return tw;
}

void ipc_producer_release_writer(ipc_producer *p, tw_writer *tw)
{
    if (!tw)
        return;
    pthread_mutex_lock(&p->mu);
    producer_smb *s = NULL;
    for (size_t i = 0; i < p->num_writers; i++) {
        if (p->writers[i].tw == tw) {
            s = p->writers[i].smb;
            p->writers[i] = p->writers[--p->num_writers];
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    uint16_t id = tw_writer_id(tw);
    tw_destroy(tw); /* commits its last chunk first, and wakes us */
    if (s) {
        pthread_mutex_lock(&p->mu);
        push_op(p, (producer_op){ OP_UNREGISTER_WRITER, id, 0, s->conn_gen });
        pthread_mutex_unlock(&p->mu);
    }
    smb_unref(s);
}

bool ipc_producer_sync(ipc_producer *p, uint32_t timeout_ms)
{
    struct timespec deadline = util_deadline_after_ms(timeout_ms);
    pthread_mutex_lock(&p->mu);
    uint64_t req = ++p->sync_req;
    pthread_mutex_unlock(&p->mu);
    wake(p);
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    while (p->sync_done < req && p->sync_failed < req && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&p->sync_cv, &p->mu, &deadline);
    bool ok = p->sync_done >= req;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

ipc_producer_startup ipc_producer_wait_startup(ipc_producer *p, uint32_t timeout_ms)
{
    struct timespec deadline = util_deadline_after_ms(timeout_ms);
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    while (p->startup == GT_STARTUP_PENDING && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&p->sync_cv, &p->mu, &deadline);
    ipc_producer_startup s = p->startup;
    pthread_mutex_unlock(&p->mu);
    return s;
}

bool ipc_producer_connected(ipc_producer *p)
{
    pthread_mutex_lock(&p->mu);
    bool c = p->connected;
    pthread_mutex_unlock(&p->mu);
    return c;
}

void ipc_producer_get_stats(ipc_producer *p, ipc_producer_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->stats;
    pthread_mutex_unlock(&p->mu);
}
