/* SPDX-License-Identifier: MIT */
/* gputrace-service's insides, shared by its three files (not for users of
 * service_session.h):
 *
 *   service_session.c  ProducerPort method handlers, the session lifecycle
 *                      (flush, stop, trace file), logging (gts_core_*)
 *   service_cmd.c      commands to a producer over its GetAsyncCommand
 *                      stream: SetupTracing, Setup/Start/StopDataSource,
 *                      Flush (gts_cmd_*)
 *   service_shm.c      producers' shared memory buffers and what CommitData
 *                      does with them (gts_shm_*, gts_parse_commit)
 *
 * Everything runs on the service's one thread. */
#ifndef SERVICE_INTERNAL_H
#define SERVICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_reader.h"
#include "tracing/ipc/ipc_host.h"
#include "tracing/ipc/service_session.h"
#include "tracing/service_output.h"
#include "tracing/smb_abi.h"
#include "tracing/trace_buffer.h"

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

/* ---- service_session.c -------------------------------------------------- */

/* A line on stderr about one producer, with --verbose only. */
__attribute__((format(printf, 3, 4))) void
gts_core_log(const gts_service *s, const gts_producer *pr, const char *fmt, ...);
/* Counts the error and disconnects the producer. */
void gts_core_protocol_error(gts_service *s, gts_producer *pr, const char *what);

/* ---- service_cmd.c ------------------------------------------------------ */

/* Whether the session asks for data source `name`. */
bool gts_cmd_wanted(const gts_service *s, const char *name);
/* SetupTracing, once the producer has a command stream and an SMB. */
void gts_cmd_send_setup_tracing(gts_service *s, gts_producer *pr);
/* Sets up and starts registered data source `ds` of `pr` in the session. */
void gts_cmd_start_data_source(gts_service *s, gts_producer *pr, size_t ds);
/* Starts every data source of `pr` the session wants. */
void gts_cmd_start_wanted(gts_service *s, gts_producer *pr);
/* Flush for all of `pr`'s instances; false when it has none to ask. */
bool gts_cmd_send_flush(gts_service *s, gts_producer *pr, uint64_t flush_id);
/* StopDataSource for every instance not yet told. */
void gts_cmd_send_stops(gts_service *s, gts_producer *pr);

/* ---- service_shm.c ------------------------------------------------------ */

bool gts_shm_adopt_producer_smb(gts_producer *pr, int fd, size_t max);
bool gts_shm_create_service_smb(gts_producer *pr, size_t max);
/* Copies the chunks `pr` completed but never committed. */
void gts_shm_scrape(gts_service *s, gts_producer *pr);
/* One CommitData request: moves and patches into the central buffer. */
void gts_shm_on_commit(gts_service *s, gts_producer *pr, pb_bytes args);

#endif
