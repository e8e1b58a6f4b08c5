/* gputrace-service's core: ProducerPort handlers, the session lifecycle,
 * and the trace file. */
#include "tracing/ipc/service_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "protos/perfetto/data_source_config.pbc.h"
#include "protos/perfetto/data_source_descriptor.pbc.h"
#include "tracing/ipc/ipc_host.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/service_output.h"
#include "tracing/smb_service.h"
#include "tracing/util/util_time.h"

/* Perfetto's service-side limits (tracing_service_impl.cc). */
#define DEFAULT_SHM_SIZE      (256u * 1024u)
#define DEFAULT_PAGE_SIZE     4096u
#define MAX_SHM_SIZE          (32u << 20)
#define MAX_PAGE_SIZE         (32u * 1024u)
#define MAX_PATCHES_PER_CHUNK 1024u
/* The one central buffer; Perfetto numbers global buffers from 1. */
#define BUFFER_ID                  1u
#define SESSION_ID                 1u
#define MAX_DS_PER_PRODUCER        32
#define MAX_INSTANCES_PER_PRODUCER 32
#define MAX_NAME                   256
#define SNAPSHOT_PERIOD_MS         10000u

enum {
    M_INITIALIZE_CONNECTION,
    M_REGISTER_DATA_SOURCE,
    M_UNREGISTER_DATA_SOURCE,
    M_COMMIT_DATA,
    M_GET_ASYNC_COMMAND,
    M_REGISTER_TRACE_WRITER,
    M_UNREGISTER_TRACE_WRITER,
    M_NOTIFY_DATA_SOURCE_STARTED,
    M_NOTIFY_DATA_SOURCE_STOPPED,
    M_ACTIVATE_TRIGGERS,
    M_SYNC,
    M_UPDATE_DATA_SOURCE,
    M_COUNT,
};

/* ProducerPort's methods in the order of producer_port.proto, which is
 * how Perfetto's host numbers them (from 1). */
static const char *const k_methods[M_COUNT] = {
    "InitializeConnection",
    "RegisterDataSource",
    "UnregisterDataSource",
    "CommitData",
    "GetAsyncCommand",
    "RegisterTraceWriter",
    "UnregisterTraceWriter",
    "NotifyDataSourceStarted",
    "NotifyDataSourceStopped",
    "ActivateTriggers",
    "Sync",
    "UpdateDataSource",
};

typedef struct gts_instance {
    uint64_t id;
    char name[MAX_NAME];
    bool started;
    bool stop_sent;
    bool stopped;
    bool will_notify_on_stop;
} gts_instance;

typedef struct gts_producer {
    ipc_host_client *cl;
    uint32_t id;
    char name[MAX_NAME];
    bool initialized;
    uint32_t shm_size_hint, page_size_hint;

    bool has_smb;
    void *smb_mem;
    smb_abi abi;
    int smb_fd; /* service-created: sent with SetupTracing, then closed */
    bool smb_from_producer;
    bool setup_tracing_sent;
    bool in_session; /* may write into our buffer */

    bool has_stream;
    uint64_t stream_request_id;

    struct {
        char name[MAX_NAME];
        bool will_notify_on_stop;
    } ds[MAX_DS_PER_PRODUCER];
    size_t num_ds;
    gts_instance inst[MAX_INSTANCES_PER_PRODUCER];
    size_t num_inst;

    uint64_t flush_pending; /* flush request id awaiting its ack, 0 none */
} gts_producer;

typedef struct gts_ident {
    int32_t uid, pid;
} gts_ident;

struct gts_service {
    gts_config cfg;
    ipc_host *host;
    cb_buffer *cb;
    svc_out out;
    uint8_t *scratch;
    bool session_active;
    uint32_t next_producer_id;
    uint64_t last_instance_id;
    uint64_t last_flush_id;
    gts_ident *idents; /* by producer id */
    size_t cap_idents;
    uint32_t producers_connected;
    uint64_t data_sources_seen;
    uint32_t data_sources_registered;
    svc_session_stats sess;
    gts_stats stats;
};

/* ---- logging ------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static void
logf_pr(const gts_service *s, const gts_producer *pr, const char *fmt, ...)
{
    if (!s->cfg.verbose)
        return;
    fprintf(stderr, "gputrace-service: producer %u (%s, pid %d): ", pr->id,
            pr->name[0] ? pr->name : "?", (int)pr->cl->pid);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void protocol_error(gts_service *s, gts_producer *pr, const char *what)
{
    s->stats.protocol_errors++;
    if (s->cfg.verbose)
        logf_pr(s, pr, "protocol error: %s, disconnecting", what);
    ipc_host_drop(s->host, pr->cl);
}

static void copy_name(char *dst, pb_bytes src)
{
    size_t n = src.size < MAX_NAME - 1 ? src.size : MAX_NAME - 1;
    memcpy(dst, src.data, n);
    dst[n] = '\0';
}

/* ---- SMB ---------------------------------------------------------------- */

/* Perfetto's rule for SMB sizes: page a power-of-two number of 4 KiB pages
 * up to 32 KiB, SMB a multiple of it up to 32 MiB; anything else falls
 * back to 256 KiB / 4 KiB. Here the SMB is further capped at `max` (a
 * multiple of 32 KiB, so of every valid page size). */
static void valid_shm_sizes(size_t *shm, size_t *page, size_t max)
{
    size_t p = *page ? *page : DEFAULT_PAGE_SIZE;
    size_t m = *shm ? *shm : DEFAULT_SHM_SIZE;
    if (p > MAX_PAGE_SIZE)
        p = MAX_PAGE_SIZE;
    if (m > max)
        m = max;
    size_t pages4k = p / 4096;
    bool ok = p >= 4096 && p % 4096 == 0 && (pages4k & (pages4k - 1)) == 0 && m >= p && m % p == 0;
    *shm = ok ? m : (DEFAULT_SHM_SIZE < max ? DEFAULT_SHM_SIZE : max);
    *page = ok ? p : DEFAULT_PAGE_SIZE;
}

static bool map_smb(gts_producer *pr, int fd, size_t size, size_t page)
{
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED)
        return false;
    if (!smb_abi_init(&pr->abi, mem, size, page)) {
        munmap(mem, size);
        return false;
    }
    pr->smb_mem = mem;
    pr->has_smb = true;
    return true;
}

/* A producer's SMB is adopted only if it cannot shrink under us (a
 * shrunk mapping would SIGBUS the service) and has exactly the geometry
 * the producer announced, as Perfetto requires. */
static bool adopt_producer_smb(gts_producer *pr, int fd, size_t max)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || seals < 0 || (seals & need) != need ||
        st.st_size <= 0 || (uint64_t)st.st_size > max)
        return false;
    size_t size = (size_t)st.st_size, page = pr->page_size_hint;
    valid_shm_sizes(&size, &page, max);
    if (size != (size_t)st.st_size || page != pr->page_size_hint)
        return false;
    if (!map_smb(pr, fd, size, page))
        return false;
    pr->smb_from_producer = true;
    return true;
}

static bool create_service_smb(gts_producer *pr, size_t max)
{
    size_t size = pr->shm_size_hint, page = pr->page_size_hint;
    valid_shm_sizes(&size, &page, max);
    int fd = memfd_create("gputrace-service-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return false;
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        !map_smb(pr, fd, size, page)) {
        close(fd);
        return false;
    }
    pr->smb_fd = fd;
    return true;
}

static uint32_t producer_of(void *ctx, uint16_t writer_id)
{
    (void)writer_id;
    return ((gts_producer *)ctx)->id;
}

static void scrape(gts_service *s, gts_producer *pr)
{
    if (pr->has_smb && pr->in_session)
        svc_scrape(&pr->abi, s->cb, producer_of, pr, s->scratch);
}

/* ---- commands to a producer --------------------------------------------- */

static perfetto_protos_GetAsyncCommandResponse *begin_cmd(gts_service *s, gts_producer *pr)
{
    return (perfetto_protos_GetAsyncCommandResponse *)ipc_host_begin_reply(
        s->host, pr->stream_request_id, true, true);
}

static void end_cmd(gts_service *s, gts_producer *pr, int fd)
{
    ipc_host_end_reply(s->host, pr->cl, fd);
}

static void write_ds_config(gts_service *s, perfetto_protos_DataSourceConfig *c, const char *name)
{
    perfetto_protos_DataSourceConfig_set_name(c, name);
    perfetto_protos_DataSourceConfig_set_target_buffer(c, BUFFER_ID);
    perfetto_protos_DataSourceConfig_set_trace_duration_ms(c, s->cfg.duration_ms);
    perfetto_protos_DataSourceConfig_set_stop_timeout_ms(c, s->cfg.stop_timeout_ms);
    perfetto_protos_DataSourceConfig_set_tracing_session_id(c, SESSION_ID);
}

static void send_setup_tracing(gts_service *s, gts_producer *pr)
{
    if (pr->setup_tracing_sent || !pr->has_stream || !pr->has_smb)
        return;
    perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing st;
    perfetto_protos_GetAsyncCommandResponse_begin_setup_tracing(cmd, &st);
    if (!pr->smb_from_producer)
        perfetto_protos_GetAsyncCommandResponse_SetupTracing_set_shared_buffer_page_size_kb(
            &st, (uint32_t)(pr->abi.page_size / 1024));
    perfetto_protos_GetAsyncCommandResponse_SetupTracing_end(&st);
    end_cmd(s, pr, pr->smb_from_producer ? -1 : pr->smb_fd);
    pr->setup_tracing_sent = true;
    if (pr->smb_fd >= 0) {
        close(pr->smb_fd); /* the producer has its own reference now */
        pr->smb_fd = -1;
    }
}

static bool wanted(const gts_service *s, const char *name)
{
    for (size_t i = 0; i < s->cfg.num_data_sources; i++)
        if (strcmp(s->cfg.data_sources[i], name) == 0)
            return true;
    return false;
}

static void start_data_source(gts_service *s, gts_producer *pr, size_t ds)
{
    if (!s->session_active || !pr->has_stream || pr->num_inst == MAX_INSTANCES_PER_PRODUCER)
        return;
    for (size_t i = 0; i < pr->num_inst; i++)
        if (strcmp(pr->inst[i].name, pr->ds[ds].name) == 0)
            return; /* already running in this session */
    if (!pr->has_smb && !create_service_smb(pr, s->cfg.max_smb_size)) {
        protocol_error(s, pr, "cannot create an SMB");
        return;
    }
    send_setup_tracing(s, pr);
    pr->in_session = true;
    pr->cl->active = true; /* waiting for work is normal from now on */
    gts_instance *in = &pr->inst[pr->num_inst++];
    memset(in, 0, sizeof *in);
    in->id = ++s->last_instance_id;
    in->will_notify_on_stop = pr->ds[ds].will_notify_on_stop;
    memcpy(in->name, pr->ds[ds].name, sizeof in->name);
    for (int step = 0; step < 2; step++) {
        perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
        perfetto_protos_DataSourceConfig c;
        if (step == 0) {
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource m;
            perfetto_protos_GetAsyncCommandResponse_begin_setup_data_source(cmd, &m);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_set_new_instance_id(&m, in->id);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_begin_config(&m, &c);
            write_ds_config(s, &c, in->name);
            perfetto_protos_DataSourceConfig_end(&c);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_end(&m);
        } else {
            perfetto_protos_GetAsyncCommandResponse_StartDataSource m;
            perfetto_protos_GetAsyncCommandResponse_begin_start_data_source(cmd, &m);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_set_new_instance_id(&m, in->id);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_begin_config(&m, &c);
            write_ds_config(s, &c, in->name);
            perfetto_protos_DataSourceConfig_end(&c);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_end(&m);
        }
        end_cmd(s, pr, -1);
    }
    in->started = true;
    logf_pr(s, pr, "started data source %s", in->name);
}

static void start_wanted(gts_service *s, gts_producer *pr)
{
    for (size_t i = 0; i < pr->num_ds; i++)
        if (wanted(s, pr->ds[i].name))
            start_data_source(s, pr, i);
}

static bool send_flush(gts_service *s, gts_producer *pr, uint64_t flush_id)
{
    if (!pr->has_stream || pr->num_inst == 0)
        return false;
    perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
    perfetto_protos_GetAsyncCommandResponse_Flush f;
    perfetto_protos_GetAsyncCommandResponse_begin_flush(cmd, &f);
    for (size_t i = 0; i < pr->num_inst; i++)
        perfetto_protos_GetAsyncCommandResponse_Flush_add_data_source_ids(&f, pr->inst[i].id);
    perfetto_protos_GetAsyncCommandResponse_Flush_set_request_id(&f, flush_id);
    perfetto_protos_GetAsyncCommandResponse_Flush_end(&f);
    end_cmd(s, pr, -1);
    pr->flush_pending = flush_id;
    return true;
}

static void send_stops(gts_service *s, gts_producer *pr)
{
    for (size_t i = 0; i < pr->num_inst; i++) {
        gts_instance *in = &pr->inst[i];
        if (in->stop_sent || !pr->has_stream)
            continue;
        perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource m;
        perfetto_protos_GetAsyncCommandResponse_begin_stop_data_source(cmd, &m);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_set_instance_id(&m, in->id);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_end(&m);
        end_cmd(s, pr, -1);
        in->stop_sent = true;
        if (!in->will_notify_on_stop)
            in->stopped = true;
    }
}

/* ---- CommitData --------------------------------------------------------- */

bool gts_parse_commit(const uint8_t *data, size_t len, const gts_commit_visitor *v,
                      uint64_t *flush_request_id, uint64_t *discarded_patches)
{
    perfetto_protos_CommitDataRequest_view req;
    *flush_request_id = 0;
    if (!perfetto_protos_CommitDataRequest_decode(&req, data, len))
        return false;
    *flush_request_id = req.flush_request_id;
    /* Moves first, then patches: a patch may be for a chunk moved by this
     * very request. */
    for (int pass = 0; pass < 2; pass++) {
        pb_reader r;
        pb_field f;
        pb_reader_init(&r, data, len);
        while (pb_reader_next(&r, &f)) {
            if (f.wire_type != PB_WIRE_LEN)
                continue;
            if (pass == 0 && f.id == perfetto_protos_CommitDataRequest_FIELD_chunks_to_move) {
                perfetto_protos_CommitDataRequest_ChunksToMove_view m;
                if (!perfetto_protos_CommitDataRequest_ChunksToMove_decode(&m, f.data,
                                                                           (size_t)f.value))
                    return false;
                /* Inline chunk data is for shmem emulation, which we never
                 * offer: ignore such entries. */
                if (!m.has_data && v->move)
                    v->move(v->ctx, m.page, m.chunk, m.target_buffer);
            } else if (pass == 1 &&
                       f.id == perfetto_protos_CommitDataRequest_FIELD_chunks_to_patch) {
                perfetto_protos_CommitDataRequest_ChunkToPatch_view cp;
                if (!perfetto_protos_CommitDataRequest_ChunkToPatch_decode(&cp, f.data,
                                                                           (size_t)f.value))
                    return false;
                smb_patch patches[MAX_PATCHES_PER_CHUNK];
                size_t n = 0;
                uint64_t bad = 0;
                if (cp.patches_count > MAX_PATCHES_PER_CHUNK) {
                    *discarded_patches += cp.patches_count;
                    continue;
                }
                pb_reader pr;
                pb_field pf;
                pb_reader_init(&pr, f.data, (size_t)f.value);
                while (pb_reader_next(&pr, &pf)) {
                    if (pf.id != perfetto_protos_CommitDataRequest_ChunkToPatch_FIELD_patches ||
                        pf.wire_type != PB_WIRE_LEN)
                        continue;
                    perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_view pv;
                    if (!perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_decode(
                            &pv, pf.data, (size_t)pf.value))
                        return false;
                    if (pv.data.size != SMB_PACKET_HEADER_SIZE || n == MAX_PATCHES_PER_CHUNK) {
                        bad++;
                        continue;
                    }
                    patches[n].offset = pv.offset;
                    memcpy(patches[n].data, pv.data.data, SMB_PACKET_HEADER_SIZE);
                    n++;
                }
                if (pr.err != PB_OK)
                    return false;
                *discarded_patches += bad;
                if (cp.writer_id == 0 || cp.writer_id > SMB_MAX_WRITER_ID) {
                    *discarded_patches += n;
                    continue;
                }
                if (v->patch)
                    v->patch(v->ctx, cp.target_buffer, cp.writer_id, cp.chunk_id, patches, n,
                             cp.has_more_patches);
            }
        }
        if (r.err != PB_OK)
            return false;
    }
    return true;
}

typedef struct commit_ctx {
    gts_service *s;
    gts_producer *pr;
} commit_ctx;

static void commit_move(void *ctx, uint32_t page, uint32_t chunk, uint32_t target_buffer)
{
    commit_ctx *c = ctx;
    gts_producer *pr = c->pr;
    if (!pr->has_smb || page >= pr->abi.num_pages || chunk >= SMB_MAX_CHUNKS_PER_PAGE)
        return; /* a buggy or hostile producer: nothing to read */
    if (target_buffer != BUFFER_ID || !pr->in_session) {
        /* Not a buffer this producer may write to: free the chunk without
         * looking at it, and count it. */
        smb_chunk ch;
        if (smb_try_acquire_chunk_for_reading(&pr->abi, page, chunk, &ch))
            smb_release_chunk_as_free(&pr->abi, &ch);
        c->s->sess.chunks_discarded++;
        return;
    }
    if (svc_move_chunk(&pr->abi, c->s->cb, pr->id, page, chunk))
        c->s->stats.chunks_moved++;
}

static void commit_patch(void *ctx, uint32_t target_buffer, uint32_t writer_id, uint32_t chunk_id,
                         const void *patches, size_t n, bool has_more)
{
    commit_ctx *c = ctx;
    if (target_buffer != BUFFER_ID || !c->pr->in_session) {
        c->s->sess.patches_discarded += n;
        return;
    }
    /* The producer id is ours, not the producer's word: it can only patch
     * its own chunks. */
    cb_try_patch(c->s->cb, c->pr->id, (uint16_t)writer_id, chunk_id, patches, n, has_more);
}

static void on_commit(gts_service *s, gts_producer *pr, pb_bytes args)
{
    if (s->cfg.slow_ms) {
        struct timespec ts = { (time_t)(s->cfg.slow_ms / 1000),
                               (long)(s->cfg.slow_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    s->stats.commits++;
    commit_ctx ctx = { s, pr };
    gts_commit_visitor v = { commit_move, commit_patch, &ctx };
    uint64_t flush_id = 0;
    if (!gts_parse_commit(args.data, args.size, &v, &flush_id, &s->sess.patches_discarded)) {
        protocol_error(s, pr, "malformed CommitData");
        return;
    }
    if (flush_id && pr->flush_pending && flush_id >= pr->flush_pending)
        pr->flush_pending = 0;
}

/* ---- method handlers ---------------------------------------------------- */

static gts_producer *producer_of_client(ipc_host_client *cl)
{
    return cl->user;
}

static void reply_empty(gts_service *s, ipc_host_client *cl, uint64_t rid, bool drop, bool ok)
{
    if (drop)
        return;
    ipc_host_begin_reply(s->host, rid, ok, false);
    ipc_host_end_reply(s->host, cl, -1);
}

/* Producer ids (the central buffer's, and the key of the uid/pid table)
 * are handed out at InitializeConnection, not at accept: connections that
 * never get that far cost no table entry. */
static bool assign_producer_id(gts_service *s, gts_producer *pr)
{
    uint32_t id = s->next_producer_id + 1;
    if (id == 0)
        return false;
    if (id >= s->cap_idents) {
        size_t ncap = s->cap_idents ? s->cap_idents * 2 : 64;
        gts_ident *n = realloc(s->idents, ncap * sizeof *n);
        if (!n)
            return false;
        s->idents = n;
        s->cap_idents = ncap;
    }
    s->next_producer_id = id;
    s->idents[id] = (gts_ident){ (int32_t)pr->cl->uid, (int32_t)pr->cl->pid };
    pr->id = id;
    return true;
}

static void on_initialize(gts_service *s, gts_producer *pr, uint64_t rid, bool drop, pb_bytes args)
{
    perfetto_protos_InitializeConnectionRequest_view v;
    int fd = ipc_host_take_fd(pr->cl);
    if (pr->initialized ||
        !perfetto_protos_InitializeConnectionRequest_decode(&v, args.data, args.size)) {
        /* Re-initializing is refused, as in Perfetto. */
        if (fd >= 0)
            close(fd);
        reply_empty(s, pr->cl, rid, drop, false);
        return;
    }
    if (!assign_producer_id(s, pr)) {
        if (fd >= 0)
            close(fd);
        protocol_error(s, pr, "out of producer ids or memory");
        return;
    }
    pr->initialized = true;
    pr->cl->established = true;
    copy_name(pr->name, v.producer_name);
    pr->shm_size_hint = v.shared_memory_size_hint_bytes;
    pr->page_size_hint = v.shared_memory_page_size_hint_bytes;
    if (v.producer_provided_shmem && fd >= 0 && !adopt_producer_smb(pr, fd, s->cfg.max_smb_size))
        logf_pr(s, pr, "%s",
                "producer SMB refused (unsealed, bad or too large a size): using our own");
    if (fd >= 0)
        close(fd);
    s->sess.producers_seen++;
    s->stats.producers_seen++;
    logf_pr(s, pr, "connected%s", pr->smb_from_producer ? " (producer-provided SMB)" : "");
    if (drop)
        return;
    perfetto_protos_InitializeConnectionResponse *r =
        (perfetto_protos_InitializeConnectionResponse *)ipc_host_begin_reply(s->host, rid, true,
                                                                             false);
    perfetto_protos_InitializeConnectionResponse_set_using_shmem_provided_by_producer(
        r, pr->smb_from_producer);
    perfetto_protos_InitializeConnectionResponse_set_direct_smb_patching_supported(r, false);
    ipc_host_end_reply(s->host, pr->cl, -1);
}

static void on_register_ds(gts_service *s, gts_producer *pr, uint64_t rid, bool drop, pb_bytes args)
{
    perfetto_protos_RegisterDataSourceRequest_view v;
    perfetto_protos_DataSourceDescriptor_view d;
    if (!perfetto_protos_RegisterDataSourceRequest_decode(&v, args.data, args.size) ||
        !perfetto_protos_DataSourceDescriptor_decode(&d, v.data_source_descriptor.data,
                                                     v.data_source_descriptor.size) ||
        d.name.size == 0 || d.name.size >= MAX_NAME) {
        protocol_error(s, pr, "bad RegisterDataSource");
        return;
    }
    char name[MAX_NAME];
    copy_name(name, d.name);
    bool dup = false;
    for (size_t i = 0; i < pr->num_ds; i++)
        dup |= strcmp(pr->ds[i].name, name) == 0;
    if (!dup && pr->num_ds < MAX_DS_PER_PRODUCER) {
        snprintf(pr->ds[pr->num_ds].name, MAX_NAME, "%s", name);
        pr->ds[pr->num_ds].will_notify_on_stop = d.will_notify_on_stop;
        pr->num_ds++;
        s->data_sources_seen++;
        s->data_sources_registered++;
        logf_pr(s, pr, "registered data source %s", name);
    }
    if (!drop) {
        ipc_host_begin_reply(s->host, rid, true, false);
        ipc_host_end_reply(s->host, pr->cl, -1);
    }
    if (!dup && wanted(s, name))
        start_data_source(s, pr, pr->num_ds - 1);
}

static void on_unregister_ds(gts_service *s, gts_producer *pr, pb_bytes args)
{
    perfetto_protos_UnregisterDataSourceRequest_view v;
    if (!perfetto_protos_UnregisterDataSourceRequest_decode(&v, args.data, args.size))
        return;
    char name[MAX_NAME];
    copy_name(name, v.data_source_name);
    for (size_t i = 0; i < pr->num_ds; i++) {
        if (strcmp(pr->ds[i].name, name) == 0) {
            pr->ds[i] = pr->ds[--pr->num_ds];
            s->data_sources_registered--;
            break;
        }
    }
    for (size_t i = 0; i < pr->num_inst; i++)
        if (strcmp(pr->inst[i].name, name) == 0)
            pr->inst[i].stopped = true; /* gone: nothing to wait for */
}

static void on_notify(gts_producer *pr, pb_bytes args, bool stopped)
{
    /* data_source_id is field 1 in both requests. */
    perfetto_protos_NotifyDataSourceStoppedRequest_view v;
    if (!perfetto_protos_NotifyDataSourceStoppedRequest_decode(&v, args.data, args.size))
        return;
    for (size_t i = 0; i < pr->num_inst; i++)
        if (pr->inst[i].id == v.data_source_id && stopped && pr->inst[i].stop_sent)
            pr->inst[i].stopped = true;
}

static void on_invoke(void *ctx, ipc_host_client *cl, uint32_t method, uint64_t rid, bool drop,
                      pb_bytes args)
{
    gts_service *s = ctx;
    gts_producer *pr = producer_of_client(cl);
    if (method != M_INITIALIZE_CONNECTION && !pr->initialized) {
        /* Before InitializeConnection nothing else is allowed (Perfetto
         * rejects the request). */
        reply_empty(s, cl, rid, drop, false);
        return;
    }
    switch (method) {
    case M_INITIALIZE_CONNECTION:
        on_initialize(s, pr, rid, drop, args);
        break;
    case M_REGISTER_DATA_SOURCE:
        on_register_ds(s, pr, rid, drop, args);
        break;
    case M_UNREGISTER_DATA_SOURCE:
        on_unregister_ds(s, pr, args);
        reply_empty(s, cl, rid, drop, true);
        break;
    case M_COMMIT_DATA:
        on_commit(s, pr, args);
        reply_empty(s, cl, rid, drop, true);
        break;
    case M_GET_ASYNC_COMMAND:
        if (pr->has_stream || drop) {
            reply_empty(s, cl, rid, drop, false);
            break;
        }
        pr->has_stream = true;
        pr->stream_request_id = rid;
        send_setup_tracing(s, pr); /* an adopted SMB is ready already */
        start_wanted(s, pr);
        break;
    case M_REGISTER_TRACE_WRITER:
    case M_UNREGISTER_TRACE_WRITER: {
        /* Only one buffer exists, so a registration only tells us which
         * writers exist; a registration for another buffer is refused. */
        perfetto_protos_RegisterTraceWriterRequest_view v;
        bool ok = perfetto_protos_RegisterTraceWriterRequest_decode(&v, args.data, args.size) &&
                  v.trace_writer_id > 0 && v.trace_writer_id <= SMB_MAX_WRITER_ID &&
                  (method == M_UNREGISTER_TRACE_WRITER || v.target_buffer == BUFFER_ID);
        reply_empty(s, cl, rid, drop, ok);
        break;
    }
    case M_NOTIFY_DATA_SOURCE_STARTED:
    case M_NOTIFY_DATA_SOURCE_STOPPED:
        on_notify(pr, args, method == M_NOTIFY_DATA_SOURCE_STOPPED);
        reply_empty(s, cl, rid, drop, true);
        break;
    case M_ACTIVATE_TRIGGERS:
    case M_SYNC:
    case M_UPDATE_DATA_SOURCE:
    default:
        reply_empty(s, cl, rid, drop, true);
        break;
    }
}

static void on_connect(void *ctx, ipc_host_client *cl)
{
    gts_service *s = ctx;
    gts_producer *pr = calloc(1, sizeof *pr);
    if (!pr) {
        ipc_host_drop(s->host, cl);
        cl->user = NULL;
        return;
    }
    pr->cl = cl;
    pr->smb_fd = -1;
    cl->user = pr;
    s->producers_connected++;
}

static void on_disconnect(void *ctx, ipc_host_client *cl)
{
    gts_service *s = ctx;
    gts_producer *pr = cl->user;
    if (!pr)
        return;
    /* What the producer finished but never committed is still worth
     * having (traced scrapes on disconnect too). */
    scrape(s, pr);
    /* Nothing more can come from it (producer ids are never reused): the
     * central buffer lets its sequences go once what they hold is read or
     * overwritten, so reconnecting producers cannot grow our memory. */
    if (pr->id)
        cb_close_producer(s->cb, pr->id);
    static const char *const why[] = {
        [IPC_DROP_NONE] = "",
        [IPC_DROP_OWNER] = "",
        [IPC_DROP_BROKEN] = "",
        [IPC_DROP_STALLED] = " (not reading)",
        [IPC_DROP_HANDSHAKE] = " (handshake timeout)",
        [IPC_DROP_IDLE] = " (idle)",
        [IPC_DROP_EVICTED] = " (pending handshake, replaced)",
    };
    logf_pr(s, pr, "disconnected%s", why[cl->drop_reason]);
    s->data_sources_registered -= (uint32_t)pr->num_ds;
    if (pr->has_smb)
        munmap(pr->smb_mem, pr->abi.size);
    if (pr->smb_fd >= 0)
        close(pr->smb_fd);
    s->producers_connected--;
    free(pr);
    cl->user = NULL;
}

/* ---- public API --------------------------------------------------------- */

gts_service *gts_service_create(const gts_config *cfg, int listen_fd, int output_fd)
{
    gts_service *s = calloc(1, sizeof *s);
    if (!s) {
        close(listen_fd);
        close(output_fd);
        return NULL;
    }
    s->cfg = *cfg;
    if (!s->cfg.flush_timeout_ms)
        s->cfg.flush_timeout_ms = 5000;
    if (!s->cfg.stop_timeout_ms)
        s->cfg.stop_timeout_ms = 5000;
    if (!s->cfg.buffer_size)
        s->cfg.buffer_size = 32u << 20;
    if (!s->cfg.max_producers)
        s->cfg.max_producers = 64;
    if (!s->cfg.max_per_uid)
        s->cfg.max_per_uid = s->cfg.max_producers < 32 ? s->cfg.max_producers : 32;
    if (!s->cfg.max_smb_size)
        s->cfg.max_smb_size = GTS_DEFAULT_MAX_SMB;
    if (s->cfg.max_smb_size > MAX_SHM_SIZE)
        s->cfg.max_smb_size = MAX_SHM_SIZE;
    s->cfg.max_smb_size -= s->cfg.max_smb_size % MAX_PAGE_SIZE;
    if (s->cfg.max_smb_size < MAX_PAGE_SIZE)
        s->cfg.max_smb_size = MAX_PAGE_SIZE;
    if (!s->cfg.handshake_timeout_ms)
        s->cfg.handshake_timeout_ms = 5000;
    if (!s->cfg.idle_timeout_ms)
        s->cfg.idle_timeout_ms = 60000;
    if (!s->cfg.send_timeout_ms)
        s->cfg.send_timeout_ms = 10000;
    svc_out_init(&s->out, output_fd);
    s->cb = cb_create(s->cfg.buffer_size, s->cfg.fill_policy, GT_SERVICE_SEQUENCE_ID + 1);
    s->scratch = malloc(SMB_MAX_PAGE_SIZE);
    ipc_host_config hc = {
        .listen_fd = listen_fd,
        .service_name = "ProducerPort",
        .methods = k_methods,
        .num_methods = M_COUNT,
        .max_clients = s->cfg.max_producers,
        .max_per_uid = s->cfg.max_per_uid,
        .max_tx_bytes = GTS_MAX_SEND_QUEUE,
        .tx_timeout_ms = s->cfg.send_timeout_ms,
        .handshake_timeout_ms = s->cfg.handshake_timeout_ms,
        .idle_timeout_ms = s->cfg.idle_timeout_ms,
        .ops = { on_connect, on_disconnect, on_invoke },
        .ctx = s,
    };
    s->host = ipc_host_create(&hc);
    if (!s->cb || !s->scratch || !s->host) {
        if (!s->host)
            close(listen_fd);
        gts_service_destroy(s);
        return NULL;
    }
    s->session_active = true;
    return s;
}

void gts_service_destroy(gts_service *s)
{
    if (!s)
        return;
    ipc_host_destroy(s->host);
    if (s->out.fd >= 0)
        svc_out_close(&s->out);
    cb_destroy(s->cb);
    free(s->scratch);
    free(s->idents);
    free(s);
}

static void poll_for(gts_service *s, uint32_t ms, bool (*done)(gts_service *s))
{
    uint64_t until = ipc_deadline_ms(util_now_ms(), ms);
    while (!done(s)) {
        uint64_t now = util_now_ms();
        if (now >= until)
            break;
        ipc_host_poll(s->host, ipc_ms_left(until, now, 50), -1);
    }
}

typedef struct walk {
    gts_service *s;
    int what;
    uint64_t arg;
    bool all_done;
} walk;

enum {
    W_FLUSH,
    W_FLUSH_DONE,
    W_SCRAPE,
    W_STOP,
    W_STOP_DONE
};

static void walk_one(void *ctx, ipc_host_client *cl)
{
    walk *w = ctx;
    gts_producer *pr = cl->user;
    if (!pr || cl->dropping)
        return;
    switch (w->what) {
    case W_FLUSH:
        send_flush(w->s, pr, w->arg);
        break;
    case W_FLUSH_DONE:
        if (pr->flush_pending)
            w->all_done = false;
        break;
    case W_SCRAPE:
        scrape(w->s, pr);
        break;
    case W_STOP:
        send_stops(w->s, pr);
        break;
    case W_STOP_DONE:
        for (size_t i = 0; i < pr->num_inst; i++)
            if (pr->inst[i].stop_sent && !pr->inst[i].stopped)
                w->all_done = false;
        break;
    }
}

static bool walk_all(gts_service *s, int what, uint64_t arg)
{
    walk w = { s, what, arg, true };
    ipc_host_for_each(s->host, walk_one, &w);
    return w.all_done;
}

static bool flush_done(gts_service *s)
{
    return walk_all(s, W_FLUSH_DONE, 0);
}

static bool stop_done(gts_service *s)
{
    return walk_all(s, W_STOP_DONE, 0);
}

static void write_trace(gts_service *s)
{
    cb_packet p;
    cb_begin_read(s->cb, true);
    while (cb_read_next(s->cb, &p)) {
        gts_ident id = { 0, 0 };
        if (p.producer_id < s->cap_idents && p.producer_id <= s->next_producer_id)
            id = s->idents[p.producer_id];
        svc_out_writer_packet(&s->out, &p, id.uid, id.pid);
        s->stats.packets_written++;
    }
}

bool gts_service_run(gts_service *s, int stop_fd)
{
    svc_out_trace_uuid(&s->out);
    svc_out_clock_snapshot(&s->out);
    svc_out_flush(&s->out);
    uint64_t start = util_now_ms();
    uint64_t end = s->cfg.duration_ms ? ipc_deadline_ms(start, s->cfg.duration_ms) : UINT64_MAX;
    uint64_t next_snapshot = ipc_deadline_ms(start, SNAPSHOT_PERIOD_MS);
    for (;;) {
        uint64_t now = util_now_ms();
        if (now >= end)
            break;
        if (now >= next_snapshot) {
            svc_out_clock_snapshot(&s->out);
            next_snapshot = ipc_deadline_ms(now, SNAPSHOT_PERIOD_MS);
        }
        uint64_t wake_at = end < next_snapshot ? end : next_snapshot;
        /* At most 1 s: the host's handshake and idle checks run per round. */
        if (ipc_host_poll(s->host, ipc_ms_left(wake_at, now, 1000), stop_fd))
            break;
    }

    /* Flush, then stop, as traced ends a session. */
    uint64_t flush_id = ++s->last_flush_id;
    walk_all(s, W_FLUSH, flush_id);
    s->sess.flushes_requested++;
    poll_for(s, s->cfg.flush_timeout_ms, flush_done);
    bool flushed = flush_done(s);
    if (flushed)
        s->sess.flushes_succeeded++;
    else
        s->sess.flushes_failed++;
    s->sess.final_flush_failed = !flushed;
    walk_all(s, W_SCRAPE, 0);
    s->session_active = false;
    walk_all(s, W_STOP, 0);
    poll_for(s, s->cfg.stop_timeout_ms, stop_done);
    walk_all(s, W_SCRAPE, 0);

    write_trace(s);
    svc_out_clock_snapshot(&s->out);
    s->sess.producers_connected = s->producers_connected;
    s->sess.data_sources_registered = s->data_sources_registered;
    s->sess.data_sources_seen = s->data_sources_seen;
    svc_out_trace_stats(&s->out, s->cb, &s->sess);
    bool ok = svc_out_close(&s->out);
    s->out.fd = -1;
    return ok;
}

void gts_service_get_stats(const gts_service *s, gts_stats *out)
{
    *out = s->stats;
    const ipc_host_stats *h = ipc_host_get_stats(s->host);
    out->connections = h->accepted;
    out->connections_refused = h->refused;
    out->connections_evicted = h->dropped[IPC_DROP_EVICTED];
    out->handshake_timeouts = h->dropped[IPC_DROP_HANDSHAKE];
    out->idle_timeouts = h->dropped[IPC_DROP_IDLE];
    out->send_timeouts = h->dropped[IPC_DROP_STALLED];
    out->chunks_discarded = s->sess.chunks_discarded;
    out->patches_discarded = s->sess.patches_discarded;
}
