/* SPDX-License-Identifier: MIT */
/* Perfetto producer: the connection state machine on one background
 * thread, plus the entry points application threads use to start, stop and
 * sync it. Commands, SMBs and commits live beside it (producer_internal.h
 * has the map and the locking rules).
 *
 *   app threads --tw_* into SMB--> arbiter --notify (eventfd)--> producer
 *   thread --CommitData--> service */
#include "tracing/ipc/producer.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "protos/perfetto/data_source_descriptor.pbc.h"
#include "tracing/ipc/ipc_client.h"
#include "tracing/ipc/producer_internal.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/util/util_time.h"

#define SERVICE_NAME "ProducerPort"
/* Periodic drain of commits the arbiter did not wake us for. */
#define DRAIN_PERIOD_MS 50

/* ---- small helpers ------------------------------------------------------ */

void producer_core_wake(ipc_producer *p)
{
    uint64_t one = 1;
    ssize_t rc = write(p->wake_fd, &one, sizeof one);
    (void)rc; /* a full counter still wakes the thread */
}

/* Once the host asked to stop it is waiting: whatever is still being sent
 * ends at the deadline it set (farewell_ms after its call). The clock is
 * read only after a stop. */
bool producer_core_past_stop_deadline(ipc_producer *p)
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
void producer_core_fail_connection(ipc_producer *p)
{
    p->fail = true;
    if (p->have_client)
        ipc_client_abandon(&p->cl);
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

/* ---- connection lifecycle ----------------------------------------------- */

static void disconnect(ipc_producer *p, bool protocol_error)
{
    bool was = p->have_client;
    if (p->have_client)
        ipc_client_close(&p->cl);
    p->have_client = false;
    producer_smb_drop_offer(p);
    producer_ds_stop_all(p);
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
    producer_smb_unref(s); /* writers still holding it keep it mapped */
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

/* ---- the session ------------------------------------------------------- */

static void on_init_reply(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    (void)has_more;
    ipc_producer *p = ctx;
    perfetto_protos_InitializeConnectionResponse_view v;
    if (!success ||
        !perfetto_protos_InitializeConnectionResponse_decode(&v, reply.data, reply.size) ||
        v.use_shmem_emulation) {
        producer_core_fail_connection(p); /* shmem emulation (relays) is not supported */
        return;
    }
    if (p->offered_mem && v.using_shmem_provided_by_producer) {
        producer_smb *s = producer_smb_new(p, p->offered_mem, p->smb_size, p->page_size);
        if (!s) {
            producer_core_fail_connection(p);
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
    producer_smb_drop_offer(p);
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
    if (p->offer_smb && producer_smb_make_offer(p))
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
    if (!g || !ipc_client_end_invoke(&p->cl, -1, producer_ds_on_command, p)) {
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
    producer_commit_send_pending(p, 0, sync);
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
    producer_commit_send_pending(p, 0, false);
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
                producer_commit_send_pending(p, 0, false);
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
    if (!producer_smb_valid_page_size(p->page_size) || p->page_size > 32768 ||
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
    producer_core_wake(p);
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

bool ipc_producer_sync(ipc_producer *p, uint32_t timeout_ms)
{
    struct timespec deadline = util_deadline_after_ms(timeout_ms);
    pthread_mutex_lock(&p->mu);
    uint64_t req = ++p->sync_req;
    pthread_mutex_unlock(&p->mu);
    producer_core_wake(p);
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
