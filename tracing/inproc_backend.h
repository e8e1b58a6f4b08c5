/* SPDX-License-Identifier: MIT */
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
 * per-writer stats), so any loss is visible in the file itself.
 *
 * As a flight recorder (config.trigger set) it writes no file as it goes:
 * it keeps what arrives (flight_recorder.h) and, each time the trigger
 * fires, writes the last window_ms of it into a new file, named from
 * output_path with flr_window_path (%n numbers the files from 1), with
 * clock snapshots and a TraceStats of its own, while tracing goes on. The
 * application is never held up: the trigger only wakes the I/O thread. */
#ifndef INPROC_BACKEND_H
#define INPROC_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/service_output.h"
#include "tracing/smb_arbiter.h"
#include "tracing/trace_buffer.h"
#include "tracing/trace_writer.h"
#include "tracing/trigger.h"

/* What the backend has to say about its file (the caller decides where it
 * goes: the layer's logger, stderr...). */
typedef enum inproc_backend_report_level {
    INPROC_BACKEND_REPORT_WARN,
    INPROC_BACKEND_REPORT_INFO,
} inproc_backend_report_level;

typedef void (*inproc_backend_report_fn)(void *ctx, inproc_backend_report_level level,
                                         const char *msg);

typedef struct inproc_backend_config {
    /* The trace file; may hold the escapes of svc_out_expand_path() (%p,
     * %t, %h, %e, %%) and is opened by svc_out_create_file(): no links,
     * FIFOs or devices; a file another process is writing is left alone
     * and "<stem>.<pid><ext>" written instead. */
    const char *output_path;
    /* Optional: open outcome, failed writes (first one, each new errno, a
     * summary at the end), recovery. Called from the creating thread and
     * from the I/O thread. */
    inproc_backend_report_fn report;
    void *report_ctx;
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
    /* Defaults for inproc_backend_new_writer(). */
    smb_exhausted_policy writer_policy; /* default SMB_POLICY_DROP */
    uint32_t stall_timeout_ms;          /* default 100 ms */

    /* Flight recorder: NULL (default) writes the file as it goes. */
    const trg_spec *trigger;
    uint32_t window_ms;  /* what a trigger writes (default 10000) */
    size_t record_bytes; /* what the recorder keeps (default buffer_size) */
    /* Called from the I/O thread every restart_period_ms (default the
     * smaller of 1000 and window_ms / 4): the producers are to write restart
     * points (their interned data, descriptors) so that a window's
     * sequences can be read from shortly before its start. */
    void (*restart)(void *ctx);
    void *restart_ctx;
    uint32_t restart_period_ms;
} inproc_backend_config;

typedef struct inproc_backend inproc_backend;

/* Fills `cfg` with the defaults above (output_path NULL). */
void inproc_backend_config_default(inproc_backend_config *cfg);

/* Opens the output file (see output_path) and starts the background
 * thread, which blocks every asynchronous signal (the application's
 * handlers never run on it, and a write past RLIMIT_FSIZE gets EFBIG
 * instead of killing the process with SIGXFSZ). NULL on error (errno set;
 * a refused path is reported through cfg->report). Zeroed fields of `cfg`
 * take their defaults. */
inproc_backend *inproc_backend_create(const inproc_backend_config *cfg);

/* The file actually written (expanded, maybe the per-pid fallback). */
const char *inproc_backend_output_path(const inproc_backend *be);

/* A trace writer bound to a fresh writer ID (its own packet sequence).
 * Destroy it with tw_destroy() before inproc_backend_destroy(). */
tw_writer *inproc_backend_new_writer(inproc_backend *be);
tw_writer *inproc_backend_new_writer_with(inproc_backend *be, const tw_config *cfg);

/* Makes everything written so far reach the file: commits pending chunks,
 * copies the finished packets of chunks still being written, writes out.
 * Blocks the caller (not the writers) until done or timeout. */
bool inproc_backend_flush(inproc_backend *be, uint32_t timeout_ms);

/* Async-signal-safe: from a signal handler, asks the I/O thread to write
 * out everything committed so far, a clock snapshot and a TraceStats, and
 * waits (polling with nanosleep, at most timeout_ms) until that is in the
 * file. `last`: the process is about to die: incomplete packets are
 * dropped and marked, the TraceStats says the final flush failed (data
 * still in the producers is lost) and nothing is written afterwards.
 * Otherwise tracing goes on and the TraceStats is an interim one. True
 * when done in time (or the I/O thread had already ended). */
bool inproc_backend_finish_from_signal(inproc_backend *be, bool last, uint32_t timeout_ms);

/* Final flush (packets that can never complete are dropped and marked),
 * last clock snapshot, TraceStats; joins the I/O thread. The backend stays
 * valid (inproc_backend_finish_from_signal returns at once) until destroyed.
 * Idempotent. True when every write so far succeeded. */
bool inproc_backend_stop(inproc_backend *be);

/* inproc_backend_stop() if not done yet, close, free. True when every write
 * succeeded. */
bool inproc_backend_destroy(inproc_backend *be);

/* Flight recorder: the files written so far (each trigger's). */
unsigned inproc_backend_windows_written(inproc_backend *be);

/* The arbiter, for callers that create writers themselves. */
smb_arbiter *inproc_backend_arbiter(inproc_backend *be);

#endif /* INPROC_BACKEND_H */
