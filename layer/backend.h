/* SPDX-License-Identifier: MIT */
/* backend.h — where the layer's trace writers come from.
 *
 * Two implementations behind one small interface, chosen by session.c:
 *
 *   backend_inproc.c  the embedded in-process backend (tracing/
 *                     inproc_backend.h): one file per session, tracing
 *                     from creation to destruction;
 *   backend_system.c  the Perfetto producer connected to traced
 *                     (tracing/ipc/producer.h): tracing while sessions of
 *                     traced run our data sources "gpu.renderstages" and
 *                     "vulkan.memory_tracker", each instance with its own
 *                     writers.
 *
 * A backend tells the session when writers may be created (started) and
 * when every writer must be released (stopping); both may be called from a
 * backend thread. Writers are created and released through the backend,
 * from any thread.
 */
#ifndef GPUTRACE_LAYER_BACKEND_H
#define GPUTRACE_LAYER_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "tracing/trace_writer.h"

#define TL_DATA_SOURCE_NAME        "gpu.renderstages"
#define TL_MEMORY_DATA_SOURCE_NAME "vulkan.memory_tracker"
#define TL_PRODUCER_NAME           "gputrace"

typedef struct tl_backend tl_backend;

/* What an instance's session asks of the layer (which data source, and its
 * config: GpuRenderStagesConfig / VulkanMemoryConfig for a system backend,
 * settings for the embedded one). */
typedef struct tl_ds_options tl_ds_options;
struct tl_ds_options {
    bool stages;       /* GPU render stages and what goes with them */
    bool low_overhead; /* of those, command buffers and render passes only */
    bool memory;       /* VulkanMemoryEvents and the heaps' counters */
};

/* What a backend calls back into the session. */
typedef struct tl_backend_events tl_backend_events;
struct tl_backend_events {
    void *ctx;
    /* Writers for `instance` can be created from now on. Several instances
    * may run at once (system backend). */
    void (*started)(void *ctx, uint64_t instance, const tl_ds_options *options);
    /* Tracing of `instance` ends: release every writer before returning. */
    void (*stopping)(void *ctx, uint64_t instance);
    /* The service dropped its copy of our interned data. */
    void (*clear_incremental_state)(void *ctx, uint64_t instance);
};

/* What a backend knew when its start-up wait ended (see wait_startup). */
enum tl_startup {
    TL_STARTUP_TRACING,    /* a session started our data source */
    TL_STARTUP_NO_SESSION, /* the service answered: no session wants it now */
    TL_STARTUP_NO_SERVICE, /* nothing to connect to (or it failed at once) */
    TL_STARTUP_TIMEOUT,    /* the service did not answer within the bound */
};

typedef struct tl_backend_ops tl_backend_ops;
struct tl_backend_ops {
    const char *name;
    /* Optional (NULL: tracing state is known at creation). Waits up to
    * timeout_ms until the backend knows whether a session wants our data
    * now, and, when one does, until it has started (events->started ran).
    * Must return at once when there is no service at all. */
    enum tl_startup (*wait_startup)(tl_backend *be, uint32_t timeout_ms);
    /* NULL when `instance` is not running (or out of writers). */
    tw_writer *(*new_writer)(tl_backend *be, uint64_t instance);
    void (*release_writer)(tl_backend *be, tw_writer *tw);
    /* Final flush and teardown; every writer must have been released. */
    void (*destroy)(tl_backend *be);
};

struct tl_backend {
    const tl_backend_ops *ops;
};

/* Creates the file and calls events->started before returning. NULL (errno
 * set) when the file cannot be created. */
tl_backend *tl_backend_inproc_create(const char *path, const tl_backend_events *events);

/* Starts connecting to traced in the background (ops->wait_startup waits
 * for the outcome). NULL when the system backend is not available in this
 * build, or on error. */
tl_backend *tl_backend_system_create(const tl_backend_events *events);

/* Whether this build has the system backend at all. */
bool tl_backend_system_available(void);

#endif
