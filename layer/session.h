/* SPDX-License-Identifier: MIT */
/* session.h — whether the layer is tracing right now, into which backend,
 * and who holds trace writers.
 *
 * One session per process at a time. It begins at the first vkCreateDevice
 * (GPUTRACE_OUTPUT / GPUTRACE_BACKEND pick the backend; probe instances that
 * never create a device leave no file behind) and ends at the last
 * vkDestroyInstance, or at process exit / library unload for applications
 * that never get there. A later session in the same process (instance
 * created again) writes to "<GPUTRACE_OUTPUT>.<n>", never over the first.
 *
 * Hot path: tl_session_tracing() is one relaxed atomic load; hooks test it
 * first and pass the call through when it is false.
 *
 * Writers: a client (one per device) registers with the session; when the
 * backend stops tracing (session end, or traced stopping the data source)
 * every client's stop callback runs and must release its writers before
 * returning. Each start bumps the generation, so a writer remembers which
 * tracing period it belongs to.
 */
#ifndef GPUTRACE_LAYER_SESSION_H
#define GPUTRACE_LAYER_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tracing/trace_writer.h"

extern atomic_bool tl_session_tracing_flag;
extern atomic_uint tl_session_generation_counter;

static inline bool tl_session_tracing(void)
{
    return atomic_load_explicit(&tl_session_tracing_flag, memory_order_relaxed);
}

/* The current tracing period; 0 before the first one. */
static inline uint32_t tl_session_generation(void)
{
    return atomic_load_explicit(&tl_session_generation_counter, memory_order_acquire);
}

typedef struct tl_session_client tl_session_client;
struct tl_session_client {
    tl_session_client *next;
    /* Release every writer of this client; called with tracing already
    * off, from whatever thread ends tracing. `exiting`: the process is
    * exiting (no Vulkan calls, bounded waits). */
    void (*stop)(tl_session_client *client, bool exiting);
    /* Interned data must be emitted again. */
    void (*clear_incremental_state)(tl_session_client *client);
};

/* vkCreateInstance / vkDestroyInstance of an active layer instance. The
 * last destroy ends the session. */
void tl_session_instance_created(void);
void tl_session_instance_destroyed(void);

/* From vkCreateDevice: begins the session if there is none yet (may log
 * why tracing stays off) and registers the client. */
void tl_session_add_client(tl_session_client *client);
/* Unregisters (the client releases its own writers). */
void tl_session_remove_client(tl_session_client *client);

/* How long the collector's writer may wait for the service to free shared
 * memory, when the service asked for the stall policy: per chunk, once per
 * loss episode (trace_writer.h), and never while its device is being
 * destroyed or the process exits. Application threads never wait. */
#define TL_COLLECTOR_STALL_MS 50u

/* A writer for the current period, or NULL (not tracing, generation
 * changed, or out of writers). `gen` is the generation the caller checked.
 * For application threads: it never waits for the tracing service,
 * whatever exhaustion policy the service asked for; when shared memory is
 * full the packet is dropped and counted, and the next one that makes it
 * carries previous_packet_dropped. */
tw_writer *tl_session_new_writer(uint32_t gen);
/* The same for a device's collector thread: it follows the service's
 * policy, a stall bounded by TL_COLLECTOR_STALL_MS. */
tw_writer *tl_session_new_collector_writer(uint32_t gen);
/* Releases a writer and adds what it lost to the session's loss count
 * (logged when tracing stops). */
void tl_session_release_writer(tw_writer *tw);

/* Process id and the name written as producer in docs/logs. */
int tl_session_pid(void);

#endif
