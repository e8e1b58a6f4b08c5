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
 * Hot path: tl_session_tracing() (some session wants the GPU stages) and
 * tl_session_memory() (some session wants memory events) are one relaxed
 * atomic load each; hooks test them first and pass the call through when
 * false.
 *
 * Several tracing sessions at once. A system backend's service may run our
 * data source in several tracing sessions at the same time (each its own
 * instance, target buffer and config). Each running instance has a slot
 * (0 .. TL_SESSION_SLOTS-1): every holder of writers keeps one writer per
 * slot, so each instance gets its own sequences, clock snapshots, interned
 * data and loss accounting. The embedded backend uses slot 0 only.
 *
 * Writers: a client (one per device) registers with the session; when an
 * instance stops (session end, or traced stopping the data source) every
 * client's stop callback runs and must release the writers of every slot
 * whose generation changed before returning. Each start and stop of a slot
 * bumps its generation, so a writer remembers which tracing period of
 * which slot it belongs to; any start or stop also bumps the global
 * generation (one load tells a holder whether to look at the slots).
 *
 * What a slot gets: a data source instance of "gpu.renderstages" gets the
 * GPU stages, the CPU-side submits and waits (tl_session_slot_times); one
 * of "vulkan.memory_tracker" the memory events (tl_session_slot_memory);
 * the embedded backend's one slot both (the latter with GPUTRACE_MEMORY).
 *
 * What is timed: a session may ask for command buffers and render pass /
 * dynamic rendering instances only (GpuRenderStagesConfig.low_overhead, or
 * GPUTRACE_LOW_OVERHEAD for the embedded backend). The recording code
 * times the union of what the running sessions ask for
 * (tl_session_times_stage); the collector writes each slot only its own
 * stages (tl_session_slot_wants).
 */
#ifndef GPUTRACE_LAYER_SESSION_H
#define GPUTRACE_LAYER_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "layer/timeline_stage.h"
#include "tracing/trace_writer.h"

/* Data source instances the layer serves at once; a further one is told
 * nothing (logged). */
#define TL_SESSION_SLOTS 8u

extern atomic_bool tl_session_tracing_flag;
extern atomic_bool tl_session_memory_flag;
extern atomic_uint tl_session_generation_counter;
/* Set while at least one session runs and every running one asked for
 * low overhead. */
extern atomic_bool tl_session_low_overhead_flag;

static inline bool tl_session_tracing(void)
{
    return atomic_load_explicit(&tl_session_tracing_flag, memory_order_relaxed);
}

/* Whether some running session wants memory events. */
static inline bool tl_session_memory(void)
{
    return atomic_load_explicit(&tl_session_memory_flag, memory_order_relaxed);
}

/* Whether any session of this process can ever want memory events: a
 * system backend's (where built) may start at any time; the embedded
 * backend's one session wants them only with GPUTRACE_MEMORY;
 * GPUTRACE_BACKEND=none never traces. Fixed for the process (the settings
 * are read once, by the first vkCreateInstance). */
bool tl_session_memory_possible(void);

/* The current tracing period; 0 before the first one. */
static inline uint32_t tl_session_generation(void)
{
    return atomic_load_explicit(&tl_session_generation_counter, memory_order_acquire);
}

/* The stages a low-overhead session gets: command buffers (and the
 * submission span standing in for command buffers that cannot carry
 * timestamps) and render pass / dynamic rendering instances. */
static inline bool tl_stage_is_coarse(unsigned stage)
{
    return stage == TL_STAGE_COMMAND_BUFFER || stage == TL_STAGE_RENDER_PASS ||
           stage == TL_STAGE_RENDERING || stage == TL_STAGE_SUBMISSION;
}

/* Whether a region of `stage` is timed: some running session wants it
 * (every stage while no session runs, so a recording made then is
 * complete for a session starting before it is submitted). */
static inline bool tl_session_times_stage(unsigned stage)
{
    return tl_stage_is_coarse(stage) ||
           !atomic_load_explicit(&tl_session_low_overhead_flag, memory_order_relaxed);
}

/* The running slots, one bit each: all of them, those that get the GPU
 * stages, those that get memory events. */
uint32_t tl_session_active_slots(void);
uint32_t tl_session_stage_slots(void);
uint32_t tl_session_memory_slots(void);
/* Whether the session in `slot` gets GPU stages and CPU-side submits /
 * memory events. */
bool tl_session_slot_times(unsigned slot);
bool tl_session_slot_memory(unsigned slot);
/* The current tracing period of `slot` (0 before its first). */
uint32_t tl_session_slot_generation(unsigned slot);
/* Whether the session in `slot` gets events of `stage`. */
bool tl_session_slot_wants(unsigned slot, unsigned stage);

typedef struct tl_session_client tl_session_client;
struct tl_session_client {
    tl_session_client *next;
    /* Release every writer of this client whose slot's generation
    * changed (all of them when the whole session ends); called with those
    * slots already off, from whatever thread stops them. `exiting`: the
    * process is exiting (no Vulkan calls, bounded waits). */
    void (*stop)(tl_session_client *client, bool exiting);
    /* The process is exiting and the session still runs: write what has
    * completed into the session's writers (bounded waits), before the
    * slots go off and stop() releases the writers. */
    void (*drain_at_exit)(tl_session_client *client);
    /* Interned data must be emitted again on the sequences of `slot`. */
    void (*clear_incremental_state)(tl_session_client *client, unsigned slot);
    /* Optional: `slot` started (after its writers can be made), from
     * whatever thread starts it; called with no session lock a hook
     * takes. Lets an idle device write what a new session needs at once
     * (the memory snapshot). */
    void (*started)(tl_session_client *client, unsigned slot);
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

/* A writer for the current period of `slot`, or NULL (slot not running,
 * its generation changed, or out of writers). `gen` is the slot's
 * generation the caller checked.
 * For application threads: it never waits for the tracing service,
 * whatever exhaustion policy the service asked for; when shared memory is
 * full the packet is dropped and counted, and the next one that makes it
 * carries previous_packet_dropped. */
tw_writer *tl_session_new_writer(unsigned slot, uint32_t gen);
/* The same for a device's collector thread: it follows the service's
 * policy, a stall bounded by TL_COLLECTOR_STALL_MS. */
tw_writer *tl_session_new_collector_writer(unsigned slot, uint32_t gen);
/* Releases a writer of `slot` and adds what it lost to that session's
 * loss count (logged when it stops). */
void tl_session_release_writer(unsigned slot, tw_writer *tw);

/* CLOCK_BOOTTIME when the current (or last) period of `slot` started: no
 * work traced in it is older. 0 before the first one. */
uint64_t tl_session_slot_started_ns(unsigned slot);

/* Process id and the name written as producer in docs/logs. */
int tl_session_pid(void);

#endif
