/* SPDX-License-Identifier: MIT */
/* gputrace-service's core: ProducerPort handlers, the session lifecycle,
 * and the trace file. Commands to producers and their SMBs live beside it
 * (service_internal.h has the map). */
#include "tracing/ipc/service_session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "protos/perfetto/data_source_descriptor.pbc.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/ipc/service_internal.h"
#include "tracing/ipc/producer_port.h"
#include "tracing/util/util_time.h"

#define SNAPSHOT_PERIOD_MS 10000u

/* ---- logging ------------------------------------------------------------ */

void gts_core_log(const gts_service *s, const gts_producer *pr, const char *fmt, ...)
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

void gts_core_protocol_error(gts_service *s, gts_producer *pr, const char *what)
{
    s->stats.protocol_errors++;
    if (s->cfg.verbose)
        gts_core_log(s, pr, "protocol error: %s, disconnecting", what);
    ipc_host_drop(s->host, pr->cl);
}

static void copy_name(char *dst, pb_bytes src)
{
    size_t n = src.size < MAX_NAME - 1 ? src.size : MAX_NAME - 1;
    memcpy(dst, src.data, n);
    dst[n] = '\0';
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
        gts_core_protocol_error(s, pr, "out of producer ids or memory");
        return;
    }
    pr->initialized = true;
    pr->cl->established = true;
    copy_name(pr->name, v.producer_name);
    pr->shm_size_hint = v.shared_memory_size_hint_bytes;
    pr->page_size_hint = v.shared_memory_page_size_hint_bytes;
    if (v.producer_provided_shmem && fd >= 0 &&
        !gts_shm_adopt_producer_smb(pr, fd, s->cfg.max_smb_size))
        gts_core_log(s, pr, "%s",
                     "producer SMB refused (unsealed, bad or too large a size): using our own");
    if (fd >= 0)
        close(fd);
    s->sess.producers_seen++;
    s->stats.producers_seen++;
    gts_core_log(s, pr, "connected%s", pr->smb_from_producer ? " (producer-provided SMB)" : "");
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
        gts_core_protocol_error(s, pr, "bad RegisterDataSource");
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
        gts_core_log(s, pr, "registered data source %s", name);
    }
    if (!drop) {
        ipc_host_begin_reply(s->host, rid, true, false);
        ipc_host_end_reply(s->host, pr->cl, -1);
    }
    if (!dup && gts_cmd_wanted(s, name))
        gts_cmd_start_data_source(s, pr, pr->num_ds - 1);
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
    if (method != IPC_PORT_INITIALIZE_CONNECTION && !pr->initialized) {
        /* Before InitializeConnection nothing else is allowed (Perfetto
         * rejects the request). */
        reply_empty(s, cl, rid, drop, false);
        return;
    }
    switch (method) {
    case IPC_PORT_INITIALIZE_CONNECTION:
        on_initialize(s, pr, rid, drop, args);
        break;
    case IPC_PORT_REGISTER_DATA_SOURCE:
        on_register_ds(s, pr, rid, drop, args);
        break;
    case IPC_PORT_UNREGISTER_DATA_SOURCE:
        on_unregister_ds(s, pr, args);
        reply_empty(s, cl, rid, drop, true);
        break;
    case IPC_PORT_COMMIT_DATA:
        gts_shm_on_commit(s, pr, args);
        reply_empty(s, cl, rid, drop, true);
        break;
    case IPC_PORT_GET_ASYNC_COMMAND:
        if (pr->has_stream || drop) {
            reply_empty(s, cl, rid, drop, false);
            break;
        }
        pr->has_stream = true;
        pr->stream_request_id = rid;
        gts_cmd_send_setup_tracing(s, pr); /* an adopted SMB is ready already */
        gts_cmd_start_wanted(s, pr);
        break;
    case IPC_PORT_REGISTER_TRACE_WRITER:
    case IPC_PORT_UNREGISTER_TRACE_WRITER: {
        /* Only one buffer exists, so a registration only tells us which
         * writers exist; a registration for another buffer is refused. */
        perfetto_protos_RegisterTraceWriterRequest_view v;
        bool ok = perfetto_protos_RegisterTraceWriterRequest_decode(&v, args.data, args.size) &&
                  v.trace_writer_id > 0 && v.trace_writer_id <= SMB_MAX_WRITER_ID &&
                  (method == IPC_PORT_UNREGISTER_TRACE_WRITER || v.target_buffer == BUFFER_ID);
        reply_empty(s, cl, rid, drop, ok);
        break;
    }
    case IPC_PORT_NOTIFY_DATA_SOURCE_STARTED:
    case IPC_PORT_NOTIFY_DATA_SOURCE_STOPPED:
        on_notify(pr, args, method == IPC_PORT_NOTIFY_DATA_SOURCE_STOPPED);
        reply_empty(s, cl, rid, drop, true);
        break;
    case IPC_PORT_ACTIVATE_TRIGGERS:
    case IPC_PORT_SYNC:
    case IPC_PORT_UPDATE_DATA_SOURCE:
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
    gts_shm_scrape(s, pr);
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
    gts_core_log(s, pr, "disconnected%s", why[cl->drop_reason]);
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
        .methods = ipc_port_method_names,
        .num_methods = IPC_PORT_METHOD_COUNT,
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
        gts_cmd_send_flush(w->s, pr, w->arg);
        break;
    case W_FLUSH_DONE:
        if (pr->flush_pending)
            w->all_done = false;
        break;
    case W_SCRAPE:
        gts_shm_scrape(w->s, pr);
        break;
    case W_STOP:
        gts_cmd_send_stops(w->s, pr);
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
