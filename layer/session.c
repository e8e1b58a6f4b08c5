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
atomic_bool tl_session_memory_flag;
atomic_uint tl_session_generation_counter;
atomic_bool tl_session_low_overhead_flag;

/* Lock order: session.lock, then session.slots_lock, then
 * session.clients_lock. The backend's started/stopping events may arrive
 * on a backend thread and take only the last two. */
static struct {
    pthread_mutex_t lock;
    tl_backend *backend;
    unsigned vk_instances;
    unsigned sessions_begun;
    bool tried; /* this instance period already tried (and maybe failed) */

    pthread_mutex_t slots_lock; /* changes of the slot table */

    pthread_mutex_t clients_lock;
    tl_session_client *clients;
} session = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .slots_lock = PTHREAD_MUTEX_INITIALIZER,
    .clients_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Read without a lock by writer creation: set before tracing starts,
 * cleared only after every client released its writers. */
static _Atomic(tl_backend *) active_backend;

/* One running data source instance. Written under slots_lock, read
 * without a lock: writer creation checks `active` and `gen` (a writer made
 * for a period that ended meanwhile is released at its holder's next look,
 * as the generation no longer matches). */
typedef struct session_slot session_slot;
struct session_slot {
    _Atomic bool active;
    _Atomic uint32_t gen;
    _Atomic uint64_t instance;
    _Atomic bool low_overhead;
    _Atomic bool stages, memory; /* what it gets (session.h) */
    /* Packets its released writers lost because shared memory was full
    * (dropped before reaching it, or cut off in it), logged and reset when
    * it stops. */
    _Atomic uint64_t lost_packets;
};
static session_slot slots[TL_SESSION_SLOTS];

/* CLOCK_BOOTTIME when each slot's current period started
 * (tl_session_slot_started_ns). */
static _Atomic uint64_t slot_started_ns[TL_SESSION_SLOTS];

/* In a child of fork(): the parent's session, threads and file are not
 * ours; the child never traces (see docs/layer.md). */
static bool forked_child;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Nobody may hold the session's locks across fork(), or the child would
 * inherit them locked. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&session.lock);
    pthread_mutex_lock(&session.slots_lock);
    pthread_mutex_lock(&session.clients_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&session.clients_lock);
    pthread_mutex_unlock(&session.slots_lock);
    pthread_mutex_unlock(&session.lock);
}

static void atfork_child(void)
{
    /* Only this thread survived: abandon (never touch) the parent's
    * backend, writers and collector threads. */
    static tl_backend *volatile abandoned; /* kept reachable, never used */
    forked_child = true;
    atomic_store(&tl_session_tracing_flag, false);
    atomic_store(&tl_session_memory_flag, false);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        atomic_store(&slots[i].active, false);
        atomic_fetch_add(&slots[i].gen, 1);
    }
    atomic_fetch_add(&tl_session_generation_counter, 1);
    atomic_store(&active_backend, NULL);
    abandoned = session.backend;
    (void)abandoned;
    session.backend = NULL;
    session.clients = NULL;
    pthread_mutex_init(&session.clients_lock, NULL);
    pthread_mutex_init(&session.slots_lock, NULL);
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

uint32_t tl_session_active_slots(void)
{
    uint32_t mask = 0;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (atomic_load_explicit(&slots[i].active, memory_order_acquire))
            mask |= 1u << i;
    return mask;
}

uint32_t tl_session_stage_slots(void)
{
    uint32_t mask = 0;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (tl_session_slot_times(i))
            mask |= 1u << i;
    return mask;
}

uint32_t tl_session_memory_slots(void)
{
    uint32_t mask = 0;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (tl_session_slot_memory(i))
            mask |= 1u << i;
    return mask;
}

bool tl_session_slot_times(unsigned slot)
{
    return slot < TL_SESSION_SLOTS &&
           atomic_load_explicit(&slots[slot].active, memory_order_acquire) &&
           atomic_load_explicit(&slots[slot].stages, memory_order_relaxed);
}

bool tl_session_slot_memory(unsigned slot)
{
    return slot < TL_SESSION_SLOTS &&
           atomic_load_explicit(&slots[slot].active, memory_order_acquire) &&
           atomic_load_explicit(&slots[slot].memory, memory_order_relaxed);
}

uint32_t tl_session_slot_generation(unsigned slot)
{
    return slot < TL_SESSION_SLOTS ? atomic_load_explicit(&slots[slot].gen, memory_order_acquire)
                                   : 0;
}

bool tl_session_slot_wants(unsigned slot, unsigned stage)
{
    if (slot >= TL_SESSION_SLOTS ||
        !atomic_load_explicit(&slots[slot].stages, memory_order_relaxed))
        return false;
    return tl_stage_is_coarse(stage) ||
           !atomic_load_explicit(&slots[slot].low_overhead, memory_order_relaxed);
}

/* The global flags from the slot table; called under slots_lock after a
 * change. */
static void publish_slots(void)
{
    bool any = false, all_low = true, memory = false;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        if (!atomic_load(&slots[i].active))
            continue;
        memory = memory || atomic_load(&slots[i].memory);
        if (!atomic_load(&slots[i].stages))
            continue;
        any = true;
        all_low = all_low && atomic_load(&slots[i].low_overhead);
    }
    atomic_store(&tl_session_low_overhead_flag, any && all_low);
    atomic_fetch_add(&tl_session_generation_counter, 1);
    atomic_store(&tl_session_tracing_flag, any);
    atomic_store(&tl_session_memory_flag, memory);
}

/* After every writer of the slot was released. */
static void report_loss(unsigned slot)
{
    uint64_t lost = atomic_exchange(&slots[slot].lost_packets, 0);
    if (lost)
        gt_warn("%llu trace packets lost: the tracing service did not free shared memory in "
                "time (instance %llu; each gap is marked previous_packet_dropped in the trace)",
                (unsigned long long)lost, (unsigned long long)atomic_load(&slots[slot].instance));
}

static int slot_of(uint64_t instance)
{
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (atomic_load(&slots[i].active) && atomic_load(&slots[i].instance) == instance)
            return (int)i;
    return -1;
}

static void on_started(void *ctx, uint64_t instance, const tl_ds_options *options)
{
    (void)ctx;
    pthread_mutex_lock(&session.slots_lock);
    int free_slot = -1;
    for (unsigned i = 0; i < TL_SESSION_SLOTS && free_slot < 0; i++)
        if (!atomic_load(&slots[i].active))
            free_slot = (int)i;
    if (slot_of(instance) >= 0 || free_slot < 0) {
        pthread_mutex_unlock(&session.slots_lock);
        if (free_slot < 0)
            gt_warn("%s instance %llu not served: already %u sessions trace this process",
                    options && !options->stages ? TL_MEMORY_DATA_SOURCE_NAME : TL_DATA_SOURCE_NAME,
                    (unsigned long long)instance, TL_SESSION_SLOTS);
        return;
    }
    session_slot *sl = &slots[free_slot];
    atomic_store(&sl->instance, instance);
    atomic_store(&sl->low_overhead, options && options->low_overhead);
    atomic_store(&sl->stages, !options || options->stages);
    atomic_store(&sl->memory, options && options->memory);
    atomic_store(&sl->lost_packets, 0);
    atomic_store(&slot_started_ns[free_slot], util_clock_ns(CLOCK_BOOTTIME));
    atomic_fetch_add(&sl->gen, 1);
    atomic_store(&sl->active, true);
    publish_slots();
    pthread_mutex_unlock(&session.slots_lock);
    const bool stages = !options || options->stages, memory = options && options->memory;
    gt_info("tracing started (data source %s, instance %llu, slot %d%s%s)",
            stages ? TL_DATA_SOURCE_NAME : TL_MEMORY_DATA_SOURCE_NAME, (unsigned long long)instance,
            free_slot,
            options && options->low_overhead ? ", low overhead: command buffers and render "
                                               "passes only"
                                             : "",
            stages && memory ? ", with memory events" : "");
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client *c = session.clients; c; c = c->next)
        if (c->started)
            c->started(c, (unsigned)free_slot);
    pthread_mutex_unlock(&session.clients_lock);
}

/* Clients release the writers of every slot whose generation changed.
 * Called with the slots already off (their generation bumped). */
static void stop_clients(bool exiting)
{
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client *c = session.clients; c; c = c->next)
        c->stop(c, exiting);
    pthread_mutex_unlock(&session.clients_lock);
}

static void on_stopping(void *ctx, uint64_t instance)
{
    (void)ctx;
    pthread_mutex_lock(&session.slots_lock);
    int slot = slot_of(instance);
    if (slot < 0) {
        pthread_mutex_unlock(&session.slots_lock);
        return;
    }
    atomic_store(&slots[slot].active, false);
    atomic_fetch_add(&slots[slot].gen, 1);
    publish_slots();
    /* Under slots_lock: a start meanwhile must not take the slot before
    * its writers are gone. Clients never take slots_lock. */
    stop_clients(false);
    pthread_mutex_unlock(&session.slots_lock);
    gt_info("tracing stopped (instance %llu, slot %d)", (unsigned long long)instance, slot);
    report_loss((unsigned)slot);
}

static void on_clear_incremental_state(void *ctx, uint64_t instance)
{
    (void)ctx;
    int slot = slot_of(instance);
    if (slot < 0)
        return;
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client *c = session.clients; c; c = c->next) {
        if (c->clear_incremental_state)
            c->clear_incremental_state(c, (unsigned)slot);
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

/* The backend the settings pick (`auto` resolved). */
static enum gt_backend_choice backend_choice(const gt_config *cfg)
{
    if (cfg->backend == GT_BACKEND_AUTO)
        return cfg->output ? GT_BACKEND_INPROCESS : GT_BACKEND_SYSTEM;
    return cfg->backend;
}

bool tl_session_memory_possible(void)
{
    const gt_config *cfg = gt_config_get();
    switch (backend_choice(cfg)) {
    case GT_BACKEND_SYSTEM:
        /* A session may start any time and want them. */
        return tl_backend_system_available();
    case GT_BACKEND_INPROCESS:
        return cfg->memory; /* its one session, as GPUTRACE_MEMORY says */
    case GT_BACKEND_NONE:
    case GT_BACKEND_AUTO:
        break;
    }
    return false;
}

/* Called with session.lock held. */
static void begin_session(void)
{
    const gt_config *cfg = gt_config_get();
    enum gt_backend_choice choice = backend_choice(cfg);

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
        if (cfg->trigger)
            gt_info("GPUTRACE_TRIGGER is the embedded backend's flight recorder; with a tracing "
                    "service use its triggers (TraceConfig.trigger_config, perfetto --trigger)");
        be = tl_backend_system_create(&events);
        if (!be)
            gt_info("system backend unavailable (%s); not tracing",
                    tl_backend_system_available() ? "producer could not start"
                                                  : "not built with the Perfetto producer");
        else
            gt_info("system backend: producer %s, data sources %s and %s, socket of traced or "
                    "gputrace-service",
                    TL_PRODUCER_NAME, TL_DATA_SOURCE_NAME, TL_MEMORY_DATA_SOURCE_NAME);
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

/* At process exit, with the slots still on. A collector that the load
 * kept behind (or that had not run at all since vkCreateDevice) used to
 * meet slots already off: it dropped its writer at its next look, or never
 * took one, and the events of work the application had waited for were
 * neither written nor counted as lost (timeline-exit-without-destroy:
 * 88 or 34 of 92 events with two busy loops beside it). */
static void drain_clients_at_exit(void)
{
    pthread_mutex_lock(&session.clients_lock);
    for (tl_session_client *c = session.clients; c; c = c->next)
        if (c->drain_at_exit)
            c->drain_at_exit(c);
    pthread_mutex_unlock(&session.clients_lock);
}

/* Called with session.lock held. */
static void end_session(bool exiting)
{
    tl_backend *be = session.backend;
    if (!be)
        return;
    if (exiting)
        drain_clients_at_exit();
    pthread_mutex_lock(&session.slots_lock);
    uint32_t ended = tl_session_active_slots();
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        if (ended & (1u << i)) {
            atomic_store(&slots[i].active, false);
            atomic_fetch_add(&slots[i].gen, 1);
        }
    }
    publish_slots();
    stop_clients(exiting);
    pthread_mutex_unlock(&session.slots_lock);
    atomic_store(&active_backend, NULL);
    session.backend = NULL;
    be->ops->destroy(be);
    gt_info("session ended%s", exiting ? " at process exit" : "");
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (ended & (1u << i))
            report_loss(i);
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
static tw_writer *new_writer(unsigned slot, uint32_t gen, uint32_t max_stall_ms)
{
    if (slot >= TL_SESSION_SLOTS)
        return NULL;
    session_slot *sl = &slots[slot];
    if (!atomic_load_explicit(&sl->active, memory_order_acquire) ||
        atomic_load_explicit(&sl->gen, memory_order_acquire) != gen)
        return NULL;
    tl_backend *be = atomic_load(&active_backend);
    if (!be)
        return NULL;
    tw_writer *tw = be->ops->new_writer(be, atomic_load(&sl->instance));
    if (tw)
        tw_cap_stall(tw, max_stall_ms);
    return tw;
}

tw_writer *tl_session_new_writer(unsigned slot, uint32_t gen)
{
    return new_writer(slot, gen, 0);
}

tw_writer *tl_session_new_collector_writer(unsigned slot, uint32_t gen)
{
    return new_writer(slot, gen, TL_COLLECTOR_STALL_MS);
}

void tl_session_release_writer(unsigned slot, tw_writer *tw)
{
    if (!tw)
        return;
    tw_stats st;
    tw_get_stats(tw, &st);
    if (st.packets_dropped + st.packets_aborted && slot < TL_SESSION_SLOTS)
        atomic_fetch_add(&slots[slot].lost_packets, st.packets_dropped + st.packets_aborted);
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

uint64_t tl_session_slot_started_ns(unsigned slot)
{
    return slot < TL_SESSION_SLOTS ? atomic_load(&slot_started_ns[slot]) : 0;
}
