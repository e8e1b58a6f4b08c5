/* SPDX-License-Identifier: MIT */
/* The flight recorder's window files, written off the service thread.
 *
 * The service thread must keep draining the SMB while a window goes to
 * disk: at tens of MB a second of trace, a disk that takes a second for a
 * window (a loaded machine, writeback throttling, a network file system)
 * would otherwise fill the SMB and lose packets. So a window is rendered
 * into memory on the service thread (a copy of the recorder's records,
 * fast), and one thread of its own writes it to the file.
 *
 *   service thread: svc_out_init_sink(&o, ww_window_sink, w) ... ww_submit
 *   window thread:  the records -> svc_out on the file -> done callback
 *
 * One window is written at a time; ww_busy says when the next may be
 * handed over. */
#ifndef WINDOW_WRITER_H
#define WINDOW_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "tracing/service_output.h"

/* A window rendered into memory: the sink of an svc_out. */
typedef struct ww_window ww_window;

ww_window *ww_window_new(void);
void ww_window_free(ww_window *w);
/* svc_out_init_sink's sink, ctx a ww_window. */
void ww_window_sink(void *ctx, const uint8_t *data, const struct svc_out_record *records, size_t n);
/* The records it holds. */
size_t ww_window_records(const ww_window *w);
/* False when memory ran out while it was rendered: records are missing. */
bool ww_window_complete(const ww_window *w);

typedef struct ww_result {
    const char *path;
    bool ok;         /* every write succeeded (svc_out_close) */
    unsigned number; /* as submitted */
    size_t packets;  /* the window's packets, as submitted */
    unsigned fired;  /* triggers it answers, as submitted */
} ww_result;

typedef struct ww_writer ww_writer;

/* Starts the window thread (signals blocked: util_thread_start_quiet).
 * `done` runs on it after each window's file is closed. NULL with errno
 * when it cannot. */
ww_writer *ww_create(void (*done)(void *ctx, const ww_result *r), void *ctx);
/* A window is being written (service thread: do not submit another). */
bool ww_busy(ww_writer *ww);
/* Hands `w` (owned from here) to the window thread, to be written to `fd`
 * (a new, empty trace file, owned from here too) named `path`. False,
 * with both released, while another is being written. */
bool ww_submit(ww_writer *ww, ww_window *w, int fd, const char *path, unsigned number,
               size_t packets, unsigned fired);
/* Writes out the window in hand, if any, then ends the thread. */
void ww_destroy(ww_writer *ww);

#endif
