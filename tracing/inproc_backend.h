/* In-process tracing backend: the default when no tracing service runs.
 *
 * One SMB in process memory, one central buffer, and one background thread
 * that moves committed chunks into the buffer and writes a standard
 * .pftrace file (a Trace proto: one field-1 record per TracePacket). The
 * application's threads only encode into the SMB; all I/O happens on the
 * background thread.
 *
 * The file gets, besides the writers' packets (each with a distinct
 * trusted_packet_sequence_id, trusted_uid and trusted_pid appended), a
 * service sequence (trusted_packet_sequence_id 1) with a trace_uuid, clock
 * snapshots of BOOTTIME/MONOTONIC/MONOTONIC_RAW/REALTIME at the start,
 * every ~10 s and at the end, and a final TraceStats (buffer stats and
 * per-writer stats), so any loss is visible in the file itself. */
#ifndef INPROC_BACKEND_H
#define INPROC_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service_output.h"
#include "smb_arbiter.h"
#include "trace_buffer.h"
#include "trace_writer.h"

typedef struct gt_inproc_config {
    const char *output_path;
    size_t buffer_size;          /* central buffer; default 8 MiB */
    cb_fill_policy fill_policy;  /* default CB_RING_BUFFER */
    size_t smb_size;             /* default 1 MiB */
    size_t smb_page_size;        /* default 4 KiB */
    smb_page_layout page_layout; /* 0 = default (one chunk per page) */
    /* Periodic drain-and-write of the central buffer to the file (streaming
     * mode). 0 keeps everything in the ring until destroy/flush (flight
     * recorder mode). Default 2000 ms. */
    uint32_t write_period_ms;
    /* How often the background thread looks at the commit queue when
     * writers did not wake it up. Default 100 ms. */
    uint32_t drain_period_ms;
    /* Default 10000 ms, as traced. */
    uint32_t clock_snapshot_period_ms;
    /* Defaults for gt_inproc_new_writer(). */
    smb_exhausted_policy writer_policy; /* default SMB_POLICY_DROP */
    uint32_t stall_timeout_ms;          /* default 100 ms */
} gt_inproc_config;

typedef struct gt_backend gt_backend;

/* Fills `cfg` with the defaults above (output_path NULL). */
void gt_inproc_config_default(gt_inproc_config *cfg);

/* Opens (truncates) the output file and starts the background thread.
 * NULL on error (errno set when the file could not be opened). Zeroed
 * fields of `cfg` take their defaults. */
gt_backend *gt_inproc_create(const gt_inproc_config *cfg);

/* A trace writer bound to a fresh writer ID (its own packet sequence).
 * Destroy it with tw_destroy() before gt_inproc_destroy(). */
tw_writer *gt_inproc_new_writer(gt_backend *be);
tw_writer *gt_inproc_new_writer_with(gt_backend *be, const tw_config *cfg);

/* Makes everything written so far reach the file: commits pending chunks,
 * copies the finished packets of chunks still being written, writes out.
 * Blocks the caller (not the writers) until done or timeout. */
bool gt_inproc_flush(gt_backend *be, uint32_t timeout_ms);

/* Final flush (packets that can never complete are dropped and marked),
 * last clock snapshot, TraceStats, close. True when every write succeeded. */
bool gt_inproc_destroy(gt_backend *be);

/* The arbiter, for callers that create writers themselves. */
smb_arbiter *gt_inproc_arbiter(gt_backend *be);

#endif /* INPROC_BACKEND_H */
