/* SPDX-License-Identifier: MIT */
/* Perfetto producer ("system backend"): connects to a tracing service
 * (Perfetto's traced, tracebox, or gputrace-service) over the producer
 * socket, registers data sources, and runs them when a tracing session asks
 * for them. Trace data goes through a shared memory buffer (SMB) with the
 * regular trace writers (trace_writer.h); this module only adds the control
 * plane and the commits.
 *
 * Threads: one background thread per producer does all socket I/O and runs
 * every data source callback. Application threads only write packets, check
 * the enabled flag, and create/release writers.
 *
 * Failure behaviour: if the service is absent, dies, or misbehaves, the
 * connection is dropped, every running instance is stopped (on_stop), the
 * enabled flags go to 0 and the producer reconnects with exponential
 * backoff. Tracing simply stays off meanwhile; nothing blocks the caller. */
#ifndef PRODUCER_H
#define PRODUCER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/trace_writer.h"

#define IPC_PRODUCER_MAX_DATA_SOURCES 16
#define IPC_PRODUCER_MAX_INSTANCES    32
/* Default bound on the producer's last words at stop (see ipc_producer_stop). */
#define IPC_PRODUCER_FAREWELL_MS 100u

/* What a data source instance gets from DataSourceConfig. Pointers are
 * valid during the callback only. */
typedef struct ipc_producer_ds_config {
    const char *name;
    uint32_t target_buffer;
    uint64_t tracing_session_id;
    uint32_t trace_duration_ms;
    uint32_t stop_timeout_ms;
    /* DataSourceConfig.BufferExhaustedPolicy (0 unspecified, 1 drop,
     * 2 stall then abort, 3 stall then drop). */
    uint32_t buffer_exhausted_policy;
    /* The whole serialized DataSourceConfig, for data-source specific
     * fields (decode with the generated headers). */
    const uint8_t *raw;
    size_t raw_size;
} ipc_producer_ds_config;

/* A data source. Callbacks run on the producer thread, may be NULL, and
 * must not block for long (they hold up every other command). */
typedef struct ipc_producer_data_source {
    const char *name; /* e.g. "gpu.renderstages" */
    void *user;
    /* What its writers do when the SMB is full, unless the session's
     * DataSourceConfig.buffer_exhausted_policy says otherwise (as in
     * Perfetto's SDK). Default: drop. */
    smb_exhausted_policy policy;
    void (*on_setup)(void *user, uint64_t instance_id, const ipc_producer_ds_config *cfg);
    /* After on_start the enabled flag is set and writers can be created. */
    void (*on_start)(void *user, uint64_t instance_id, const ipc_producer_ds_config *cfg);
    /* The flag is already cleared: stop writing, flush and release the
     * instance's writers (possibly from the writing threads). Whatever was
     * committed when this returns is sent before NotifyDataSourceStopped. */
    void (*on_stop)(void *user, uint64_t instance_id);
    /* The service asks for a flush: writers should tw_flush() at their next
     * packet boundary. Committed chunks are sent right after this returns;
     * chunks still being written are copied by the service (scraping). */
    void (*on_flush)(void *user, uint64_t instance_id);
    void (*on_clear_incremental_state)(void *user, uint64_t instance_id);
} ipc_producer_data_source;

typedef struct ipc_producer_config {
    const char *name;        /* producer name; "gputrace" when NULL */
    const char *socket_path; /* NULL: resolved as Perfetto does */
    const ipc_producer_data_source *data_sources;
    size_t num_data_sources;
    /* InitializeConnection hints; 0 = 256 KiB / 4 KiB (Perfetto's
     * defaults). The page size must be 4, 8, 16 or 32 KiB. */
    uint32_t smb_size_hint;
    uint32_t smb_page_size_hint;
    /* Do not offer a producer-provided SMB: wait for the service's. */
    bool no_producer_smb;
    /* Reconnect backoff: first delay and cap (defaults 500 ms, 10 s). */
    uint32_t reconnect_min_ms;
    uint32_t reconnect_max_ms;
    /* Replies to BindService/InitializeConnection, and sends blocked by
     * a service that does not read, time out after this (default 5 s). */
    uint32_t io_timeout_ms;
    /* How long a writer with a stall policy waits for a free chunk. */
    uint32_t stall_timeout_ms; /* default 100 ms */
    /* How long ipc_producer_stop()/destroy() may spend handing the service
     * what is still queued (default IPC_PRODUCER_FAREWELL_MS). */
    uint32_t farewell_ms;
} ipc_producer_config;

typedef struct ipc_producer ipc_producer;

/* Starts the producer thread, which connects in the background. NULL on
 * bad config or OOM. */
ipc_producer *ipc_producer_create(const ipc_producer_config *cfg);
/* Ends the producer: sends what is committed and queued, disconnects and
 * joins its thread. The caller waits for the service at most farewell_ms
 * (default 100 ms): what a service that does not read has not taken by
 * then is dropped and counted (farewells_cut, farewell_bytes_unsent). The
 * stats stay readable until ipc_producer_destroy(); the producer does
 * nothing more (new writers are NULL). Idempotent; not from a callback. */
void ipc_producer_stop(ipc_producer *p);
/* ipc_producer_stop() if the host has not, then frees everything. Release
 * every writer first. */
void ipc_producer_destroy(ipc_producer *p);

/* Number of started instances of data source `ds_index` (its index in
 * the config). The pointer stays valid for the producer's life, so a
 * caller can keep it and test `atomic_load_explicit(f, relaxed) != 0` on
 * its hot path: one load when nothing traces. */
const _Atomic uint32_t *ipc_producer_enabled_flag(ipc_producer *p, size_t ds_index);
static inline bool ipc_producer_enabled(const _Atomic uint32_t *flag)
{
    return atomic_load_explicit(flag, memory_order_relaxed) != 0;
}

/* A trace writer for a started instance, bound to the instance's target
 * buffer (and exhaustion policy), registered with the service
 * (RegisterTraceWriter). NULL when the instance is not running or there is
 * no SMB. Any thread. */
tw_writer *ipc_producer_new_writer(ipc_producer *p, uint64_t instance_id);
/* Flushes and destroys the writer (any thread). */
void ipc_producer_release_writer(ipc_producer *p, tw_writer *tw);

/* Hands everything committed so far to the service and waits until the
 * service has processed it (a CommitData round trip). False on timeout or
 * when not connected. */
bool ipc_producer_sync(ipc_producer *p, uint32_t timeout_ms);

/* What became of the producer's first connection, for a host that wants
 * its data sources running before it goes on (the layer's start-up wait). */
typedef enum ipc_producer_startup {
    GT_STARTUP_PENDING,    /* not known yet (the wait timed out) */
    GT_STARTUP_NO_SERVICE, /* no socket, nobody accepting, or the service
                            * dropped/failed the connection before answering */
    GT_STARTUP_READY,      /* connected, data sources registered, and the
                            * service has answered a Sync sent behind the
                            * registrations: every SetupDataSource and
                            * StartDataSource an active session had for
                            * them was handled (on_start ran) before it */
} ipc_producer_startup;

/* Waits up to timeout_ms for the first connection's outcome and returns
 * it; GT_STARTUP_PENDING on timeout. Never waits when there is no service
 * (the first connect fails at once). Later reconnections do not change the
 * outcome. Any thread but the producer's (not from a callback). */
ipc_producer_startup ipc_producer_wait_startup(ipc_producer *p, uint32_t timeout_ms);

/* True once InitializeConnection succeeded on the current connection. */
bool ipc_producer_connected(ipc_producer *p);

typedef struct ipc_producer_stats {
    uint64_t connect_attempts;
    uint64_t connections;     /* InitializeConnection succeeded */
    uint64_t disconnects;     /* connections lost or dropped by us */
    uint64_t protocol_errors; /* why we dropped one */
    uint64_t commits_sent;    /* CommitData requests */
    uint64_t chunks_moved;
    uint64_t patches_sent;
    uint64_t flushes_acked;
    /* Stops whose last words the service did not take within farewell_ms
     * (or a connection that broke meanwhile); the bytes of requests it did
     * not take (commits: the service never learns of those chunks, patches,
     * writer unregistrations); chunks whose commit was never even written
     * for lack of time (lost with their packets). */
    uint64_t farewells_cut;
    uint64_t farewell_bytes_unsent;
    uint64_t farewell_chunks_unsent;
    bool using_producer_smb; /* current connection adopted our SMB */
} ipc_producer_stats;
void ipc_producer_get_stats(ipc_producer *p, ipc_producer_stats *out);

#endif /* PRODUCER_H */
