/* SPDX-License-Identifier: MIT */
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

#include "protos/pb/pb_heap.h"
#include "tracing/trace_buffer.h"

/* Service-owned sequence; writers get 2, 3, ... */
#define GT_SERVICE_SEQUENCE_ID 1u

typedef struct svc_out {
    int fd;
    uint8_t *buf;
    size_t len, cap;
    bool io_error; /* any write or allocation failed */
    int32_t service_uid;
    pb_heap_buffer heap;

    /* Failed writes. A write-out that fails (ENOSPC, EIO, EFBIG, a short
     * write) is cut back to the last whole record it wrote, so the file
     * always parses; the rest of its bytes are dropped, counted here and in
     * TraceStats (flushes_failed), and the next packet of every sequence
     * that lost packets carries previous_packet_dropped. */
    uint64_t file_size;      /* bytes of whole records in the file */
    uint64_t write_failures; /* write-outs that failed */
    uint64_t bytes_dropped;  /* what they could not write */
    uint64_t packets_dropped;
    int last_error; /* errno of the last one */
    /* The file could not be cut back (ftruncate failed too): nothing more
     * is written, since what follows would not parse. */
    bool broken;
    /* The records in buf: where each ends, and its sequence. */
    struct svc_out_record {
        size_t end;
        uint32_t sequence_id;
    } * records;
    size_t num_records, records_cap;
    /* File offsets where the last records in the file end (a ring), so
     * whole records can be cut off the end: svc_out_make_room(). */
    uint64_t tail_ends[256];
    size_t num_tail_ends, tail_head;
    /* Sequence ids whose next packet must say previous_packet_dropped. */
    uint8_t *dropped_seq;
    size_t dropped_seq_len;
    bool alloc_failed; /* while appending the current record */
    /* Set (svc_out_init_sink): write-outs hand the buffered records to it
     * instead of a file (the flight recorder, flight_recorder.h). */
    void (*sink)(void *ctx, const uint8_t *data, const struct svc_out_record *records, size_t n);
    void *sink_ctx;
} svc_out;

/* Takes ownership of `fd`, which must be a regular file positioned at its
 * end (empty for a new trace). */
void svc_out_init(svc_out *o, int fd);
/* An output without a file: every write-out hands its whole records (the
 * bytes, and for each where it ends and its sequence) to `sink`. */
void svc_out_init_sink(svc_out *o,
                       void (*sink)(void *ctx, const uint8_t *data,
                                    const struct svc_out_record *records, size_t n),
                       void *ctx);
/* Appends one Trace record that is already framed (as a sink received it),
 * of sequence `sequence_id`. */
void svc_out_raw_record(svc_out *o, const uint8_t *record, size_t len, uint32_t sequence_id);
/* Writes what is buffered and closes the fd. True when every write
 * succeeded. */
bool svc_out_close(svc_out *o);
/* Writes the buffered bytes to the fd. False when they did not all get
 * there (see write_failures above); never retried. */
bool svc_out_flush(svc_out *o);

/* After a write-out failed for lack of room (ENOSPC, EDQUOT, EFBIG): cuts
 * whole records off the end of the file until `bytes` are free below where
 * it ended, so a last TraceStats can still say what was lost. Counted as
 * dropped. False when the recent records do not add up to that much, or
 * the error was of another kind. */
bool svc_out_make_room(svc_out *o, size_t bytes);

/* ---- opening trace files ------------------------------------------------
 *
 * A trace path may hold these escapes (the letters of core(5)):
 *   %p  process id          %t  seconds since the Epoch (UTC)
 *   %h  host name           %e  program name (basename of argv[0])
 *   %%  a literal %
 * Any other % sequence is kept as written and counted in *unknown. False
 * (errno ENAMETOOLONG) when the result does not fit in `cap`. */
bool svc_out_expand_path(const char *pattern, char *out, size_t cap, unsigned *unknown);

typedef struct svc_out_file {
    int fd;         /* -1 on failure (errno set) */
    bool fell_back; /* the requested path was busy: `path` is the per-pid name */
    /* On failure, why the requested path was refused, or NULL when open(2)
     * itself failed (errno says why). */
    const char *refused;
    char path[4096]; /* the file actually opened (or the one refused) */
} svc_out_file;

/* Opens `path` for a new trace, the careful way:
 *  - an existing symbolic link, FIFO, socket, device or directory there is
 *    refused (never followed, opened or clobbered): refused says which;
 *    O_NOFOLLOW | O_NONBLOCK close the race between the check and open;
 *  - the file is created 0644 (minus umask) or reused, and locked
 *    (flock LOCK_EX | LOCK_NB) before it is truncated: a file another
 *    process holds locked (is writing now) is never touched; this process
 *    writes "<stem>.<pid><ext>" beside it instead (fell_back), where ext is
 *    the last ".xxx" of the file name, if any;
 *  - the lock stays with the fd until it is closed.
 * A finished trace (nobody holds it) at the path is replaced. */
void svc_out_create_file(const char *path, svc_out_file *res);

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
    /* A TraceStats written while tracing goes on (e.g. on a signal): no
     * final_flush_outcome. */
    bool interim;
} svc_session_stats;

/* TraceStats: the central buffer's BufferStats and per-writer stats, plus
 * the session counters. Failed write-outs of this output are added to
 * flushes_failed. */
void svc_out_trace_stats(svc_out *o, const cb_buffer *cb, const svc_session_stats *s);

#endif /* SERVICE_OUTPUT_H */
