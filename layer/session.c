/* SPDX-License-Identifier: MIT */
/* session.c — see session.h: backend selection, the session's lifetime and
 * the registry of writer holders. */
#include "layer/session.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layer/backend.h"
#include "layer/config.h"
#include "layer/log.h"
#include "tracing/util/util_time.h"

atomic_bool tl_session_tracing_flag;
atomic_uint tl_session_generation_counter;

/* Lock order: session.lock, then session.clients_lock. The backend's
 * started/stopping events may arrive on a backend thread and take only
 * clients_lock. */
static struct {
    pthread_mutex_t lock;
    tl_backend *backend;
    unsigned vk_instances;
    unsigned sessions_begun;
    bool tried; /* this instance period already tried (and maybe failed) */

    pthread_mutex_t clients_lock;
    tl_session_client *clients;
} session = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .clients_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Read without a lock by writer creation: set before tracing starts,
 * cleared only after every client released its writers. */
static _Atomic(tl_backend *) active_backend;
static _Atomic uint64_t active_instance;

/* Packets released writers lost because shared memory was full (dropped
 * before reaching it, or cut off in it), logged and reset when tracing
 * stops. */
static _Atomic uint64_t lost_packets;

/* In a child of fork(): the parent's session, threads and file are not
 * ours; the child never traces (see docs/layer.md). */
static bool forked_child;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Nobody may hold the session's locks across fork(), or the child would
 * inherit them locked. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&session.lock);
    pthread_mutex_lock(&session.clients_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&session.clients_lock);
    pthread_mutex_unlock(&session.lock);
}

static void atfork_child(void)
{
    /* Only this thread survived: abandon (never touch) the parent's
    * backend, writers and collector threads. */
    static tl_backend *volatile abandoned; /* kept reachable, never used */
    forked_child = true;
    atomic_store(&tl_session_tracing_flag, false);
    atomic_fetch_add(&tl_session_generation_counter, 1);
    atomic_store(&active_backend, NULL);
    abandoned = session.backend;
    (void)abandoned;
    session.backend = NULL;
    session.clients = NULL;
    pthread_mutex_init(&session.clients_lock, NULL);
    pthread_mutex_init(&session.lock, NULL);
}

static void register_atfork(void)
{
    /* Handlers registered from a shared object go away when it is
    * unloaded. */
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int tl_session_pid(void)
{
    return (int)getpid();
}

/* ---- backend events --------------------------------------------------------- */

static void stop_clients(bool exiting)
{
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client *c = session.clients; c; c = c->next)
        c->stop(c, exiting);
    pthread_mutex_unlock(&session.clients_lock);
}

/* After every writer was released. */
static void report_loss(void)
{
    uint64_t lost = atomic_exchange(&lost_packets, 0);
    if (lost)
        gt_warn("%llu trace packets lost: the tracing service did not free shared memory in "
                "time (each gap is marked previous_packet_dropped in the trace)",
                (unsigned long long)lost);
}

static void on_started(void *ctx, uint64_t instance)
{
    (void)ctx;
    atomic_store(&active_instance, instance);
    atomic_fetch_add(&tl_session_generation_counter, 1);
    atomic_store(&tl_session_tracing_flag, true);
    gt_info("tracing started (data source %s, instance %llu)", TL_DATA_SOURCE_NAME,
            (unsigned long long)instance);
}

static void on_stopping(void *ctx, uint64_t instance)
{
    (void)ctx;
    if (atomic_load(&active_instance) != instance)
        return;
    atomic_store(&tl_session_tracing_flag, false);
    atomic_fetch_add(&tl_session_generation_counter, 1);
    stop_clients(false);
    gt_info("tracing stopped (instance %llu)", (unsigned long long)instance);
    report_loss();
}

static void on_clear_incremental_state(void *ctx, uint64_t instance)
{
    (void)ctx;
    if (atomic_load(&active_instance) != instance)
        return;
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client *c = session.clients; c; c = c->next) {
        if (c->clear_incremental_state)
            c->clear_incremental_state(c);
    }
    pthread_mutex_unlock(&session.clients_lock);
}

static const tl_backend_events events = {
    .ctx = NULL,
    .started = on_started,
    .stopping = on_stopping,
    .clear_incremental_state = on_clear_incremental_state,
};

/* ---- lifetime ------------------------------------------------------------------ */

/* A system backend connects in the background. A program that submits
 * right after creating its device, and exits a few milliseconds later,
 * would be done before a session already waiting for it could start our
 * data source. So the first device waits, bounded by
 * GPUTRACE_STARTUP_WAIT_MS, until the service has either started it or
 * answered that no session wants it; with no service at all the backend
 * returns at once. Called with session.lock held: the wait is bounded, and
 * the backend's events take no session lock, so they come in meanwhile. */
static void wait_for_startup(tl_backend *be, uint32_t bound_ms, uint64_t created_ns)
{
    if (!be->ops->wait_startup || bound_ms == 0)
        return;
    static const char *const outcome[] = {
        [TL_STARTUP_TRACING] = "tracing started",
        [TL_STARTUP_NO_SESSION] = "the service has no session for " TL_DATA_SOURCE_NAME,
        [TL_STARTUP_NO_SERVICE] = "no tracing service (no socket, or nobody accepting)",
        [TL_STARTUP_TIMEOUT] = "the service did not answer in time (tracing starts whenever it "
                               "does)",
    };
    uint64_t t0 = util_now_ns();
    enum tl_startup s = be->ops->wait_startup(be, bound_ms);
    uint64_t t1 = util_now_ns();
    /* The wait, and what the start-up cost in all since the backend was
    * created (the producer connects meanwhile). */
    double ms = (double)(t1 - t0) / 1e6;
    double all = (double)(t1 - created_ns) / 1e6;
    gt_info("system backend: start-up wait %.1f ms (%.1f ms since the producer started; bound "
            "%u ms): %s",
            ms, all, bound_ms, (unsigned)s < sizeof outcome / sizeof outcome[0] ? outcome[s] : "?");
}

/* Called with session.lock held. */
static void begin_session(void)
{
    const gt_config *cfg = gt_config_get();
    enum gt_backend_choice choice = cfg->backend;
    if (choice == GT_BACKEND_AUTO)
        choice = cfg->output ? GT_BACKEND_INPROCESS : GT_BACKEND_SYSTEM;

    tl_backend *be = NULL;
    uint64_t created_ns = util_now_ns();
    switch (choice) {
    case GT_BACKEND_INPROCESS: {
        char path[4096];
        int n;
        if (cfg->output && session.sessions_begun == 0)
            n = snprintf(path, sizeof path, "%s", cfg->output);
        else if (cfg->output)
            n = snprintf(path, sizeof path, "%s.%u", cfg->output, session.sessions_begun + 1);
        else if (session.sessions_begun == 0)
            n = snprintf(path, sizeof path, "gputrace-%d.pftrace", tl_session_pid());
        else
            n = snprintf(path, sizeof path, "gputrace-%d.pftrace.%u", tl_session_pid(),
                         session.sessions_begun + 1);
        if (n < 0 || (size_t)n >= sizeof path) {
            gt_error("GPUTRACE_OUTPUT is too long; not tracing");
            break;
        }
        /* The backend logs the file it really writes (a pattern or the
       * per-process fallback may name another) and why it refused one. */
        be = tl_backend_inproc_create(path, &events);
        if (!be)
            gt_error("no trace file for GPUTRACE_OUTPUT=%s; not tracing", path);
        break;
    }
    case GT_BACKEND_SYSTEM:
        if (cfg->output)
            gt_warn("GPUTRACE_BACKEND=system: ignoring GPUTRACE_OUTPUT=%s", cfg->output);
        be = tl_backend_system_create(&events);
        if (!be)
            gt_info("system backend unavailable (%s); not tracing",
                    tl_backend_system_available() ? "producer could not start"
                                                  : "not built with the Perfetto producer");
        else
            gt_info("system backend: producer %s, data source %s, socket of traced or "
                    "gputrace-service",
                    TL_PRODUCER_NAME, TL_DATA_SOURCE_NAME);
        break;
    case GT_BACKEND_NONE:
    case GT_BACKEND_AUTO:
        break;
    }
    session.sessions_begun++;
    if (be) {
        session.backend = be;
        atomic_store(&active_backend, be);
        /* After publishing the backend: a start during the wait is complete
       * (writers can be created) by the time the wait returns. */
        wait_for_startup(be, cfg->startup_wait_ms, created_ns);
    }
}

/* Called with session.lock held. */
static void end_session(bool exiting)
{
    tl_backend *be = session.backend;
    if (!be)
        return;
    atomic_store(&tl_session_tracing_flag, false);
    atomic_fetch_add(&tl_session_generation_counter, 1);
    stop_clients(exiting);
    atomic_store(&active_backend, NULL);
    session.backend = NULL;
    be->ops->destroy(be);
    gt_info("session ended%s", exiting ? " at process exit" : "");
    report_loss();
}

void tl_session_instance_created(void)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&session.lock);
    session.vk_instances++;
    pthread_mutex_unlock(&session.lock);
}

void tl_session_instance_destroyed(void)
{
    pthread_mutex_lock(&session.lock);
    if (session.vk_instances && --session.vk_instances == 0) {
        end_session(false);
        session.tried = false;
    }
    pthread_mutex_unlock(&session.lock);
}

void tl_session_add_client(tl_session_client *client)
{
    pthread_mutex_lock(&session.lock);
    static bool told;
    if (forked_child && !told) {
        told = true;
        gt_info("process %d is a fork() child of a traced process: not tracing", tl_session_pid());
    }
    if (!forked_child && !session.backend && !session.tried) {
        session.tried = true;
        begin_session();
    }
    pthread_mutex_lock(&session.clients_lock);
    client->next = session.clients;
    session.clients = client;
    pthread_mutex_unlock(&session.clients_lock);
    pthread_mutex_unlock(&session.lock);
}

void tl_session_remove_client(tl_session_client *client)
{
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client **p = &session.clients; *p; p = &(*p)->next) {
        if (*p == client) {
            *p = client->next;
            break;
        }
    }
    pthread_mutex_unlock(&session.clients_lock);
}

/* The backend's writer comes with the policy the service asked for
 * (Perfetto's BufferExhaustedPolicy: a stall policy lets any local service
 * that a session runs in make writers wait); the cap is applied before the
 * writer's first packet. */
static tw_writer *new_writer(uint32_t gen, uint32_t max_stall_ms)
{
    if (!tl_session_tracing() || tl_session_generation() != gen)
        return NULL;
    tl_backend *be = atomic_load(&active_backend);
    if (!be)
        return NULL;
    tw_writer *tw = be->ops->new_writer(be, atomic_load(&active_instance));
    if (tw)
        tw_cap_stall(tw, max_stall_ms);
    return tw;
}

tw_writer *tl_session_new_writer(uint32_t gen)
{
    return new_writer(gen, 0);
}

tw_writer *tl_session_new_collector_writer(uint32_t gen)
{
    return new_writer(gen, TL_COLLECTOR_STALL_MS);
}

void tl_session_release_writer(tw_writer *tw)
{
    if (!tw)
        return;
    tw_stats st;
    tw_get_stats(tw, &st);
    if (st.packets_dropped + st.packets_aborted)
        atomic_fetch_add(&lost_packets, st.packets_dropped + st.packets_aborted);
    tl_backend *be = atomic_load(&active_backend);
    if (be)
        be->ops->release_writer(be, tw);
}

/* Applications that exit without vkDestroyInstance (or with devices still
 * alive) still get a complete file. A destructor, not atexit(): it runs at
 * exit or when the loader unloads the library, whichever comes first, and
 * is never left pointing into an unmapped library. */
__attribute__((destructor)) static void session_at_exit(void)
{
    if (forked_child)
        return; /* nothing of the parent's session is ours to end */
    pthread_mutex_lock(&session.lock);
    end_session(true);
    pthread_mutex_unlock(&session.lock);
}
