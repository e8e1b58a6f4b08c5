/* Service-side .pftrace output: a standard Trace proto (one field-1
 * record per TracePacket) written to a file descriptor through a buffer.
 *
 * Writers' packets read back from a central buffer get the fields only the
 * service may set appended (trusted_uid, trusted_packet_sequence_id,
 * trusted_pid, previous_packet_dropped); the service's own packets (trace
 * UUID, clock snapshots, TraceStats) go on sequence GT_SERVICE_SEQUENCE_ID.
 * Shared by the in-process backend and gputrace-service. */
#ifndef SERVICE_OUTPUT_H
#define SERVICE_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pb_heap.h"
#include "trace_buffer.h"

/* Service-owned sequence; writers get 2, 3, ... */
#define GT_SERVICE_SEQUENCE_ID 1u

typedef struct svc_out {
    int fd;
    uint8_t *buf;
    size_t len, cap;
    bool io_error;
    int32_t service_uid;
    pb_heap_buffer heap;
} svc_out;

/* Takes ownership of `fd`. */
void svc_out_init(svc_out *o, int fd);
/* Writes what is buffered and closes the fd. True when every write
 * succeeded. */
bool svc_out_close(svc_out *o);
/* Writes the buffered bytes to the fd. */
void svc_out_flush(svc_out *o);

/* A writer packet from the central buffer, stamped with the producer's
 * identity as the service knows it. */
void svc_out_writer_packet(svc_out *o, const cb_packet *p, int32_t uid, int32_t pid);
void svc_out_trace_uuid(svc_out *o);
/* BOOTTIME, MONOTONIC, MONOTONIC_RAW and REALTIME (clock_snapshot.h). */
void svc_out_clock_snapshot(svc_out *o);

/* TraceStats fields that depend on who runs the session. */
typedef struct svc_session_stats {
    uint32_t producers_connected;
    uint64_t producers_seen;
    uint32_t data_sources_registered;
    uint64_t data_sources_seen;
    uint64_t chunks_discarded;
    uint64_t patches_discarded;
    uint64_t flushes_requested;
    uint64_t flushes_succeeded;
    uint64_t flushes_failed;
    bool final_flush_failed;
} svc_session_stats;

/* TraceStats: the central buffer's BufferStats and per-writer stats, plus
 * the session counters. */
void svc_out_trace_stats(svc_out *o, const cb_buffer *cb, const svc_session_stats *s);

#endif /* SERVICE_OUTPUT_H */
