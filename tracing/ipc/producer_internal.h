/* SPDX-License-Identifier: MIT */
/* The producer's insides, shared by its four files (not for users of
 * producer.h):
 *
 *   producer.c         the connection state machine, the producer thread,
 *                      the public lifecycle and sync entry points
 *                      (ipc_producer_*, helpers producer_core_*)
 *   producer_ds.c      data source instances: SetupTracing/Setup/Start/
 *                      Stop/Flush commands and their callbacks (producer_ds_*)
 *   producer_smb.c     the shared memory buffers: mapping the service's,
 *                      offering ours (producer_smb_*)
 *   producer_commit.c  writer records and the commit path: writer
 *                      (un)registrations and CommitData (producer_commit_*,
 *                      ipc_producer_new_writer/release_writer)
 *
 * Locking: `mu` guards what application threads can reach (instances, the
 * current SMB, writer records, the op queue, sync counters, stats). The
 * producer thread takes it briefly; it never holds it while calling a data
 * source callback or doing I/O. Lock order: mu, then the arbiter's lock.
 * Fields under "Producer thread only" are touched by that thread alone. */
#ifndef PRODUCER_INTERNAL_H
#define PRODUCER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_reader.h"
#include "tracing/ipc/ipc_client.h"
#include "tracing/ipc/producer.h"
#include "tracing/smb_arbiter.h"

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

/* ---- producer.c --------------------------------------------------------- */

/* Wakes the producer thread (from any thread). */
void producer_core_wake(ipc_producer *p);
/* Producer thread: whether the host's stop deadline passed (then it also
 * marks the producer out of time). */
bool producer_core_past_stop_deadline(ipc_producer *p);
/* Producer thread, inside the client's dispatch: gives up on the
 * connection; no further frame already read is handled. */
void producer_core_fail_connection(ipc_producer *p);

/* ---- producer_ds.c ------------------------------------------------------ */

/* The instance with service id `id`, or NULL; caller holds mu. */
producer_instance *producer_ds_find_instance(ipc_producer *p, uint64_t id);
/* Stops every instance (on_stop for the started ones): the connection is
 * gone. */
void producer_ds_stop_all(ipc_producer *p);
/* The GetAsyncCommand stream's callback: one command from the service. */
void producer_ds_on_command(void *ctx, bool success, bool has_more, pb_bytes reply);

/* ---- producer_smb.c ----------------------------------------------------- */

/* An SMB over `mem` (taken over: unmapped when the last ref goes), one
 * ref held by the caller; NULL when the arbiter refuses the layout. */
producer_smb *producer_smb_new(ipc_producer *p, void *mem, size_t size, size_t page_size);
void producer_smb_unref(producer_smb *s);
bool producer_smb_valid_page_size(size_t ps);
/* Maps the SMB the service sent with SetupTracing and makes it current. */
bool producer_smb_attach_service(ipc_producer *p, int fd, uint32_t page_size_kb);
/* Our own SMB for InitializeConnection, and dropping it when not adopted. */
bool producer_smb_make_offer(ipc_producer *p);
void producer_smb_drop_offer(ipc_producer *p);

/* ---- producer_commit.c -------------------------------------------------- */

/* Queues a writer (un)registration for the producer thread; caller holds
 * mu. False when out of memory. */
bool producer_commit_push_op(ipc_producer *p, producer_op op);
/* Producer thread: sends what is queued (see the definition for the
 * order), the last CommitData carrying flush_request_id when non-zero,
 * followed by a Sync-like empty CommitData when `sync`. */
void producer_commit_send_pending(ipc_producer *p, uint64_t flush_request_id, bool sync);

#endif
