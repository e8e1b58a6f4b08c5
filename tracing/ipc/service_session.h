/* SPDX-License-Identifier: MIT */
/* A small Perfetto-compatible tracing service: the producer side of
 * traced (ProducerPort over the producer socket) with one tracing session
 * and one central buffer (trace_buffer.h), written out as a .pftrace.
 *
 * The session starts when the service starts and enables the configured
 * data sources on every producer that registers them, now or later. It
 * ends on gts_service_run()'s deadline or stop fd: flush (Flush command,
 * wait for each producer's CommitData.flush_request_id), stop
 * (StopDataSource, wait for NotifyDataSourceStopped), scrape what is left
 * in the SMBs, read the buffer out.
 *
 * Producers are untrusted: every id, size, offset and index they send is
 * checked; chunks are copied out of the SMB before they are parsed; an SMB
 * a producer offers is used only when sealed against shrinking. What a
 * connection may cost is bounded (gts_config: connections per uid and in
 * all, handshake and idle time, SMB size, send queue). A producer that
 * breaks the protocol is disconnected; what it committed stays.
 * Single-threaded. */
#ifndef SERVICE_SESSION_H
#define SERVICE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/trace_buffer.h"

typedef struct gts_config {
    const char *const *data_sources;
    size_t num_data_sources;
    size_t buffer_size; /* bytes */
    cb_fill_policy fill_policy;
    uint32_t duration_ms;      /* 0: until the stop fd */
    uint32_t slow_ms;          /* sleep before handling each CommitData */
    uint32_t flush_timeout_ms; /* default 5000 */
    uint32_t stop_timeout_ms;  /* default 5000 */
    /* Resource bounds against misbehaving producers (0: the default). */
    uint32_t max_producers;        /* connections at once, default 64 */
    uint32_t max_per_uid;          /* of them with one uid, default 32 */
    size_t max_smb_size;           /* SMB bytes a producer gets, default 4 MiB */
    uint32_t handshake_timeout_ms; /* accept to InitializeConnection, default 5000 */
    uint32_t idle_timeout_ms;      /* silence of a producer with no data
                                    * source in the session, default 60000 */
    uint32_t send_timeout_ms;      /* a producer not reading, default 10000 */
    bool verbose;                  /* log producer events to stderr */
} gts_config;

/* Fixed bound on the commands and replies queued for one producer: more
 * means it does not read, and it is disconnected. */
#define GTS_MAX_SEND_QUEUE  (1u << 20)
#define GTS_DEFAULT_MAX_SMB (4u << 20)

typedef struct gts_service gts_service;

/* Takes the listening socket and the output fd. NULL on OOM. */
gts_service *gts_service_create(const gts_config *cfg, int listen_fd, int output_fd);
/* Runs the session until duration_ms elapses or stop_fd (>= 0) becomes
 * readable, then ends it and writes the trace. True when the trace was
 * written completely. */
bool gts_service_run(gts_service *s, int stop_fd);
void gts_service_destroy(gts_service *s);

typedef struct gts_stats {
    uint64_t connections;         /* accepted */
    uint64_t connections_refused; /* over a limit, nobody to replace */
    uint64_t connections_evicted; /* pending handshakes replaced */
    uint64_t handshake_timeouts;
    uint64_t idle_timeouts;
    uint64_t send_timeouts; /* stopped reading */
    uint64_t producers_seen;
    uint64_t commits;
    uint64_t chunks_moved;
    uint64_t chunks_discarded;
    uint64_t patches_discarded;
    uint64_t protocol_errors;
    uint64_t packets_written;
} gts_stats;
void gts_service_get_stats(const gts_service *s, gts_stats *out);

/* CommitDataRequest decoding for one producer's request, exposed for the
 * fuzzer: calls move() for each chunk to move and patch() for each chunk
 * to patch with its validated 4-byte patches (at most 1024). Entries that
 * fail validation are counted in *discarded_patches and skipped. Returns
 * false on malformed protobuf. */
typedef struct gts_commit_visitor {
    void (*move)(void *ctx, uint32_t page, uint32_t chunk, uint32_t target_buffer);
    void (*patch)(void *ctx, uint32_t target_buffer, uint32_t writer_id, uint32_t chunk_id,
                  const void *patches /* smb_patch[] */, size_t n, bool has_more);
    void *ctx;
} gts_commit_visitor;
bool gts_parse_commit(const uint8_t *data, size_t len, const gts_commit_visitor *v,
                      uint64_t *flush_request_id, uint64_t *discarded_patches);

#endif /* SERVICE_SESSION_H */
