/* SPDX-License-Identifier: MIT */
/* In-process backend: the background thread that plays the tracing service
 * for one process. It alone touches the central buffer and the file:
 *
 *   writers --commit queue--> drain() --copy--> cb_buffer --read--> file
 *                  scrape() (chunks still being written) --^
 *
 * Writers wake it through the arbiter's notify hook when a quarter of the
 * SMB waits to be drained, or when they stall or flush; otherwise it polls
 * every drain period.
 *
 * As a flight recorder the "file" is a sink into the recorder, read out
 * every drain period; a trigger has the window rendered into memory
 * (write_window) and written into a new file by the window thread
 * (window_writer.h), so draining never waits for the disk. */
#include "tracing/inproc_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracing/clock_snapshot.h"
#include "tracing/flight_recorder.h"
#include "tracing/service_output.h"
#include "tracing/smb_service.h"
#include "tracing/util/util_thread.h"
#include "tracing/util/util_time.h"
#include "tracing/window_writer.h"

struct inproc_backend {
    inproc_backend_config cfg;
    char path[4096]; /* the file actually written */
    smb_arbiter *arb;
    cb_buffer *cb;
    svc_out out; /* the file; written by the service thread only */
    bool out_open;
    tw_config writer_cfg;

    pthread_t thread;
    bool thread_running; /* not yet joined (creating/stopping thread only) */
    /* Wakes the service thread: posted by writers (notify hook), flush,
     * stop, and signal handlers (sem_post is async-signal-safe, unlike
     * a condition variable). */
    sem_t wake;
    pthread_mutex_t mu;
    pthread_cond_t done_cv; /* flush completions */
    bool stop;
    bool thread_done; /* the service thread serves no more flushes */
    uint64_t flush_req;
    uint64_t flush_done;

    /* Finishing from a signal handler: lock-free. */
    atomic_uint sig_requested;
    atomic_uint sig_served;
    atomic_bool sig_last;
    atomic_bool io_ended; /* the service thread has returned */

    /* Service thread only. */
    smb_commit_batch batch;
    uint8_t *scrape_buf;
    int32_t uid, pid;
    uint64_t writer_loss_reported;
    uint64_t flushes_requested, flushes_succeeded;
    /* cb bytes_written at the last read-out: what came in since is an upper
     * bound on what the ring holds unread. */
    uint64_t written_at_last_read;
    /* Write failures already reported, and the errno of the last report. */
    uint64_t failures_reported;
    int error_reported;
    bool failing;

    /* Flight recorder (cfg.trigger): the recorder the sink feeds, the
     * trigger, and the window files written. */
    flr_recorder *flr;
    trg_trigger *trg;
    ww_writer *ww;
    unsigned windows_started; /* service thread only: numbers the files */
    atomic_uint windows;      /* written and closed */
    char pattern[4096];       /* cfg.output_path, kept: it names every window */
};

static void report(const inproc_backend *be, inproc_backend_report_level level, const char *fmt,
                   ...) __attribute__((format(printf, 3, 4)));

static void report(const inproc_backend *be, inproc_backend_report_level level, const char *fmt,
                   ...)
{
    if (!be->cfg.report)
        return;
    char msg[4608];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    be->cfg.report(be->cfg.report_ctx, level, msg);
}

/* ---- output (service_output.h) ------------------------------------------ */

static void sync_writer_loss(inproc_backend *be)
{
    uint64_t lost = smb_arbiter_packets_lost(be->arb);
    cb_add_trace_writer_packet_loss(be->cb, lost - be->writer_loss_reported);
    be->writer_loss_reported = lost;
}

/* interim: tracing goes on after this one. last_words: written on the way
 * to a signal's death, with data still in the producers. */
static void emit_trace_stats(inproc_backend *be, bool interim, bool last_words)
{
    sync_writer_loss(be);
    svc_session_stats ss = {
        .producers_connected = 1,
        .producers_seen = 1,
        .flushes_requested = be->flushes_requested,
        .flushes_succeeded = be->flushes_succeeded,
        .final_flush_failed = last_words,
        .interim = interim,
    };
    svc_out_trace_stats(&be->out, be->cb, &ss);
}

static const char *error_text(int err, char *buf, size_t cap)
{
    /* GNU strerror_r: thread-safe, may return a static string. */
    return strerror_r(err, buf, cap);
}

/* After each write-out: a warning for the first failure and for each new
 * errno (not one per write-out of a full disk), a note when writes work
 * again. */
static void out_flush(inproc_backend *be)
{
    bool ok = svc_out_flush(&be->out);
    const svc_out *o = &be->out;
    if (o->write_failures != be->failures_reported) {
        if (!be->failing || o->last_error != be->error_reported) {
            char eb[128];
            report(be, INPROC_BACKEND_REPORT_WARN,
                   "writing trace file %s failed: %s; %llu bytes of trace data dropped so "
                   "far (%llu failed write-out(s)), counted in its TraceStats%s",
                   be->path, error_text(o->last_error, eb, sizeof eb),
                   (unsigned long long)o->bytes_dropped, (unsigned long long)o->write_failures,
                   o->broken ? "; the file could not be cut back to whole packets, nothing "
                               "more is written to it"
                             : "");
            be->error_reported = o->last_error;
        }
        be->failures_reported = o->write_failures;
        be->failing = true;
    } else if (ok && be->failing && be->out.file_size > 0) {
        report(be, INPROC_BACKEND_REPORT_INFO, "writing trace file %s works again", be->path);
        be->failing = false;
    }
}

/* ---- moving chunks ------------------------------------------------------ */

static void drain(inproc_backend *be)
{
    smb_arbiter_take_commits(be->arb, &be->batch);
    if (svc_apply_commits(smb_arbiter_abi(be->arb), be->cb, &be->batch))
        smb_arbiter_chunks_freed(be->arb);
}

static uint32_t producer_of(void *ctx, uint16_t writer_id)
{
    return smb_arbiter_writer_gen(ctx, writer_id);
}

static void scrape(inproc_backend *be)
{
    svc_scrape(smb_arbiter_abi(be->arb), be->cb, producer_of, be->arb, be->scrape_buf);
}

static void read_out(inproc_backend *be, bool final_read)
{
    cb_packet p;
    cb_begin_read(be->cb, final_read);
    while (cb_read_next(be->cb, &p))
        svc_out_writer_packet(&be->out, &p, be->uid, be->pid);
    out_flush(be);
    be->written_at_last_read = cb_get_stats(be->cb)->bytes_written;
}

/* Streaming mode writes every write_period_ms, but a burst can fill the
 * ring much sooner; reading out once half of it may be unread keeps the
 * ring from overwriting data the file never saw. */
static bool ring_half_full(const inproc_backend *be)
{
    return cb_get_stats(be->cb)->bytes_written - be->written_at_last_read > be->cfg.buffer_size / 2;
}

/* Everything committed or finished so far, into the file. Draining twice
 * around the scrape: a writer queues chunk N before it can start chunk
 * N + 2, so a scrape that saw N + 2 is followed by a drain that has N + 1,
 * and a sequence never looks like it started late. */
static void flush_all(inproc_backend *be, bool final_read)
{
    drain(be);
    scrape(be);
    drain(be);
    read_out(be, final_read);
}

/* ---- flight recorder ---------------------------------------------------- */

static void to_recorder(void *ctx, const uint8_t *data, const struct svc_out_record *records,
                        size_t n)
{
    inproc_backend *be = ctx;
    flr_append(be->flr, data, records, n, clk_monotonic_ns());
}

/* The window thread, after a window file is closed. */
static void window_written(void *ctx, const ww_result *r)
{
    inproc_backend *be = ctx;
    atomic_store(&be->windows, r->number);
    report(be, r->ok ? INPROC_BACKEND_REPORT_INFO : INPROC_BACKEND_REPORT_WARN,
           "flight recorder: %s %s (the last %u ms: %zu packets%s)",
           r->ok ? "wrote" : "could not write all of", r->path, be->cfg.window_ms, r->packets,
           r->fired > 1 ? "; several triggers at once, one file" : "");
    /* The trigger is polled again once no window is in hand. */
    sem_post(&be->wake);
}

/* The window into `w`: trace uuid, clock snapshot, the window, clock
 * snapshot, TraceStats. False when memory ran out on the way. */
static bool render_window(inproc_backend *be, ww_window *w, size_t *records)
{
    svc_out wo;
    svc_out_init_sink(&wo, ww_window_sink, w);
    svc_out_trace_uuid(&wo);
    svc_out_clock_snapshot(&wo);
    const uint64_t now = clk_monotonic_ns(), span = (uint64_t)be->cfg.window_ms * 1000000u;
    *records = flr_write_window(be->flr, &wo, now > span ? now - span : 0, GT_SERVICE_SEQUENCE_ID);
    svc_out_clock_snapshot(&wo);
    sync_writer_loss(be);
    const svc_session_stats ss = {
        .producers_connected = 1,
        .producers_seen = 1,
        .flushes_requested = be->flushes_requested,
        .flushes_succeeded = be->flushes_succeeded,
    };
    svc_out_trace_stats(&wo, be->cb, &ss);
    return svc_out_close(&wo) && ww_window_complete(w);
}

/* One window file: rendered here (render_window), written by the window
 * thread. */
static void write_window(inproc_backend *be, unsigned fired)
{
    flush_all(be, false); /* what is in the writers' chunks now, too */
    const unsigned n = be->windows_started + 1;
    char pattern[sizeof be->path], expanded[sizeof be->path];
    unsigned unknown = 0;
    if (!flr_window_path(be->cfg.output_path, n, pattern, sizeof pattern) ||
        !svc_out_expand_path(pattern, expanded, sizeof expanded, &unknown)) {
        report(be, INPROC_BACKEND_REPORT_WARN, "flight recorder: file name %s too long",
               be->cfg.output_path);
        return;
    }
    svc_out_file f;
    svc_out_create_file(expanded, &f);
    if (f.fd < 0) {
        char eb[128];
        report(be, INPROC_BACKEND_REPORT_WARN, "flight recorder: trace file %s %s; not written",
               f.path, f.refused ? f.refused : error_text(errno, eb, sizeof eb));
        return;
    }
    ww_window *w = ww_window_new();
    size_t records = 0;
    if (!w || !render_window(be, w, &records)) {
        report(be, INPROC_BACKEND_REPORT_WARN,
               "flight recorder: no memory for a copy of the window; %s not written", f.path);
        ww_window_free(w);
        close(f.fd);
        unlink(f.path);
        return;
    }
    be->windows_started = n;
    /* Never refused: the trigger is polled only while no window is in
     * hand (record()). */
    ww_submit(be->ww, w, f.fd, f.path, n, records, fired);
}

/* One pass of the flight recorder's loop. */
static void record(inproc_backend *be, uint64_t now_ms, uint64_t *next_restart)
{
    drain(be);
    read_out(be, false);
    if (be->cfg.restart && now_ms >= *next_restart) {
        be->cfg.restart(be->cfg.restart_ctx);
        *next_restart = now_ms + be->cfg.restart_period_ms;
    }
    /* Triggers that come while a window is being written wait for it (the
     * trigger counts them), and are answered by one file. */
    const unsigned fired = ww_busy(be->ww) ? 0 : trg_poll(be->trg);
    if (fired)
        write_window(be, fired);
}

/* ---- the thread --------------------------------------------------------- */

static uint64_t mono_ms(void)
{
    return clk_monotonic_ns() / 1000000u;
}

/* A clock snapshot and a TraceStats. A last one that finds no room (full
 * disk, RLIMIT_FSIZE) gets some: whole packets are cut off the end of the
 * file (and counted) so the file can still tell what it lost. */
static void write_trailer(inproc_backend *be, bool interim, bool last_words)
{
    svc_out_clock_snapshot(&be->out);
    emit_trace_stats(be, interim, last_words);
    uint64_t failures = be->out.write_failures;
    size_t size = be->out.len;
    out_flush(be);
    /* Room for it and then some: blocks, and counters that grew. */
    if (!interim && be->out.write_failures != failures &&
        svc_out_make_room(&be->out, size + 4096)) {
        emit_trace_stats(be, interim, last_words);
        out_flush(be);
        if (be->out.write_failures == failures + 1)
            report(be, INPROC_BACKEND_REPORT_WARN,
                   "trace file %s: the last packets were cut off to make room for its "
                   "TraceStats",
                   be->path);
    }
}

/* Everything so far and a trailer, for a signal handler waiting in
 * inproc_backend_finish_from_signal(). */
static void serve_signal(inproc_backend *be, unsigned ticket, bool last)
{
    flush_all(be, last);
    write_trailer(be, !last, last);
    atomic_store(&be->sig_served, ticket);
}

static bool signal_pending(inproc_backend *be, unsigned *ticket)
{
    *ticket = atomic_load(&be->sig_requested);
    return *ticket != atomic_load(&be->sig_served);
}

static void *service_main(void *arg)
{
    inproc_backend *be = arg;
    /* Named so that top -H and a debugger show whose thread it is. */
    pthread_setname_np(pthread_self(), "gputrace-io");
    svc_out_trace_uuid(&be->out);
    svc_out_clock_snapshot(&be->out);
    out_flush(be);
    uint64_t now = mono_ms();
    uint64_t next_write = now + be->cfg.write_period_ms;
    uint64_t next_snapshot = now + be->cfg.clock_snapshot_period_ms;
    uint64_t next_restart = now;
    bool sealed = false; /* a dying process's last words are written */

    for (;;) {
        now = mono_ms();
        uint64_t wake_at = now + be->cfg.drain_period_ms;
        if (be->cfg.write_period_ms && next_write < wake_at)
            wake_at = next_write;
        if (next_snapshot < wake_at)
            wake_at = next_snapshot;
        struct timespec ts = { (time_t)(wake_at / 1000), (long)(wake_at % 1000) * 1000000L };
        while (sem_clockwait(&be->wake, CLOCK_MONOTONIC, &ts) != 0 && errno == EINTR)
            ;
        /* One pass serves every wake-up so far. */
        while (sem_trywait(&be->wake) == 0)
            ;

        unsigned ticket;
        if (signal_pending(be, &ticket)) {
            bool last = atomic_load(&be->sig_last);
            serve_signal(be, ticket, last);
            if (last) {
                sealed = true;
                break;
            }
        }

        pthread_mutex_lock(&be->mu);
        bool stopping = be->stop;
        uint64_t req = be->flush_req;
        pthread_mutex_unlock(&be->mu);

        if (stopping)
            break;
        now = mono_ms();
        if (be->flr) {
            record(be, now, &next_restart);
            if (req != be->flush_done) {
                flush_all(be, false); /* into the recorder */
                pthread_mutex_lock(&be->mu);
                be->flush_done = req;
                pthread_cond_broadcast(&be->done_cv);
                pthread_mutex_unlock(&be->mu);
            }
            continue;
        }
        if (now >= next_snapshot) {
            svc_out_clock_snapshot(&be->out);
            next_snapshot = now + be->cfg.clock_snapshot_period_ms;
        }
        if (req != be->flush_done) {
            be->flushes_requested++;
            uint64_t failures = be->out.write_failures;
            flush_all(be, false);
            if (!be->out.broken && be->out.write_failures == failures)
                be->flushes_succeeded++;
            pthread_mutex_lock(&be->mu);
            be->flush_done = req;
            pthread_cond_broadcast(&be->done_cv);
            pthread_mutex_unlock(&be->mu);
        } else if (be->cfg.write_period_ms && now >= next_write) {
            flush_all(be, false);
            next_write = now + be->cfg.write_period_ms;
        } else {
            drain(be);
            if (be->cfg.write_period_ms && ring_half_full(be))
                read_out(be, false);
        }
    }

    if (!sealed && !be->flr) {
        flush_all(be, true);
        write_trailer(be, false, false);
    }
    /* A handler that came in meanwhile: the file is as finished as it gets. */
    unsigned ticket;
    if (signal_pending(be, &ticket))
        atomic_store(&be->sig_served, ticket);
    /* Let any late flush waiter go. */
    pthread_mutex_lock(&be->mu);
    be->flush_done = be->flush_req;
    be->thread_done = true;
    pthread_cond_broadcast(&be->done_cv);
    pthread_mutex_unlock(&be->mu);
    atomic_store(&be->io_ended, true);
    return NULL;
}

static void notify_service(void *ctx, bool urgent)
{
    (void)urgent;
    inproc_backend *be = ctx;
    sem_post(&be->wake);
}

/* ---- public API --------------------------------------------------------- */

void inproc_backend_config_default(inproc_backend_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->buffer_size = 8u << 20;
    cfg->fill_policy = CB_RING_BUFFER;
    cfg->smb_size = 1u << 20;
    cfg->smb_page_size = 4096;
    cfg->page_layout = SMB_PAGE_DIV1;
    cfg->write_period_ms = 2000;
    cfg->drain_period_ms = 100;
    cfg->clock_snapshot_period_ms = 10000;
    cfg->writer_policy = SMB_POLICY_DROP;
    cfg->stall_timeout_ms = 100;
}

/* Opens the file the careful way (service_output.h) and says what
 * happened. */
static bool open_output(inproc_backend *be)
{
    char expanded[sizeof be->path];
    unsigned unknown = 0;
    if (!svc_out_expand_path(be->cfg.output_path, expanded, sizeof expanded, &unknown)) {
        report(be, INPROC_BACKEND_REPORT_WARN, "trace file name %s: too long once expanded",
               be->cfg.output_path);
        errno = ENAMETOOLONG;
        return false;
    }
    if (unknown)
        report(be, INPROC_BACKEND_REPORT_WARN,
               "trace file name %s: %u unknown %%-escape(s) kept as written (known: %%p %%t "
               "%%h %%e %%%%)",
               be->cfg.output_path, unknown);
    svc_out_file f;
    svc_out_create_file(expanded, &f);
    snprintf(be->path, sizeof be->path, "%s", f.path);
    if (f.fd < 0) {
        int err = errno;
        if (f.refused)
            report(be, INPROC_BACKEND_REPORT_WARN, "trace file %s %s; not writing it", f.path,
                   f.refused);
        errno = err;
        return false;
    }
    if (f.fell_back)
        report(be, INPROC_BACKEND_REPORT_INFO,
               "trace file %s is being written by another process; writing %s instead", expanded,
               f.path);
    svc_out_init(&be->out, f.fd);
    be->out_open = true;
    return true;
}

/* Flight recorder: the recorder, the window thread and the trigger;
 * nothing is written until the trigger fires. False with errno (what was
 * made is released by the caller). */
static bool start_recorder(inproc_backend *be)
{
    const char *why = NULL;
    be->flr = flr_create(be->cfg.record_bytes);
    if (!be->flr) {
        errno = ENOMEM;
        return false;
    }
    be->ww = ww_create(window_written, be);
    if (!be->ww)
        return false;
    be->trg = trg_start(be->cfg.trigger, &be->wake, &why);
    if (!be->trg) {
        report(be, INPROC_BACKEND_REPORT_WARN, "flight recorder: cannot start its trigger: %s",
               why);
        errno = EBUSY;
        return false;
    }
    snprintf(be->pattern, sizeof be->pattern, "%s", be->cfg.output_path);
    be->cfg.output_path = be->pattern;
    snprintf(be->path, sizeof be->path, "%s", be->pattern);
    svc_out_init_sink(&be->out, to_recorder, be);
    be->out_open = true;
    return true;
}

inproc_backend *inproc_backend_create(const inproc_backend_config *cfg)
{
    if (!cfg || !cfg->output_path) {
        errno = EINVAL;
        return NULL;
    }
    inproc_backend_config d;
    inproc_backend_config_default(&d);
    inproc_backend *be = calloc(1, sizeof *be);
    if (!be)
        return NULL;
    be->cfg = *cfg;
    if (!be->cfg.buffer_size)
        be->cfg.buffer_size = d.buffer_size;
    if (!be->cfg.smb_size)
        be->cfg.smb_size = d.smb_size;
    if (!be->cfg.smb_page_size)
        be->cfg.smb_page_size = d.smb_page_size;
    if (!be->cfg.page_layout)
        be->cfg.page_layout = d.page_layout;
    if (!be->cfg.drain_period_ms)
        be->cfg.drain_period_ms = d.drain_period_ms;
    if (!be->cfg.clock_snapshot_period_ms)
        be->cfg.clock_snapshot_period_ms = d.clock_snapshot_period_ms;
    if (cfg->trigger) {
        if (!be->cfg.window_ms)
            be->cfg.window_ms = 10000;
        if (!be->cfg.record_bytes)
            be->cfg.record_bytes = be->cfg.buffer_size;
        if (!be->cfg.restart_period_ms)
            be->cfg.restart_period_ms = be->cfg.window_ms / 4 < 1000 ? be->cfg.window_ms / 4 : 1000;
        if (!be->cfg.restart_period_ms)
            be->cfg.restart_period_ms = 1;
    }
    be->writer_cfg = (tw_config){
        .policy = cfg->writer_policy,
        .stall_timeout_ms = cfg->stall_timeout_ms ? cfg->stall_timeout_ms : d.stall_timeout_ms,
        .target_buffer = 0,
    };
    be->uid = (int32_t)geteuid();
    be->pid = (int32_t)getpid();
    if (sem_init(&be->wake, 0, 0) != 0) {
        free(be);
        return NULL;
    }

    smb_arbiter_config ac = {
        .smb_size = be->cfg.smb_size,
        .page_size = be->cfg.smb_page_size,
        .layout = be->cfg.page_layout,
        .notify = notify_service,
        .notify_ctx = be,
    };
    be->arb = smb_arbiter_create(&ac);
    be->cb = cb_create(be->cfg.buffer_size, be->cfg.fill_policy, GT_SERVICE_SEQUENCE_ID + 1);
    be->scrape_buf = malloc(SMB_MAX_PAGE_SIZE);
    if (!be->arb || !be->cb || !be->scrape_buf) {
        errno = errno ? errno : ENOMEM;
        goto fail;
    }
    if (cfg->trigger) {
        if (!start_recorder(be))
            goto fail;
    } else if (!open_output(be)) {
        goto fail;
    }

    pthread_mutex_init(&be->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&be->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = util_thread_start_quiet(&be->thread, service_main, be);
    if (rc != 0) {
        pthread_cond_destroy(&be->done_cv);
        pthread_mutex_destroy(&be->mu);
        errno = rc;
        goto fail;
    }
    be->thread_running = true;
    return be;

fail : {
    int err = errno;
    if (be->out_open) {
        svc_out_close(&be->out);
        /* Nothing was written: leave no empty file behind. */
        if (!be->flr)
            unlink(be->path);
    }
    trg_stop(be->trg, NULL);
    ww_destroy(be->ww);
    flr_destroy(be->flr);
    free(be->scrape_buf);
    cb_destroy(be->cb);
    smb_arbiter_destroy(be->arb);
    sem_destroy(&be->wake);
    free(be);
    errno = err;
    return NULL;
}
}

const char *inproc_backend_output_path(const inproc_backend *be)
{
    return be->path;
}

tw_writer *inproc_backend_new_writer(inproc_backend *be)
{
    return tw_create(be->arb, &be->writer_cfg);
}

tw_writer *inproc_backend_new_writer_with(inproc_backend *be, const tw_config *cfg)
{
    return tw_create(be->arb, cfg ? cfg : &be->writer_cfg);
}

smb_arbiter *inproc_backend_arbiter(inproc_backend *be)
{
    return be->arb;
}

bool inproc_backend_flush(inproc_backend *be, uint32_t timeout_ms)
{
    struct timespec deadline = util_deadline_after_ms(timeout_ms);
    pthread_mutex_lock(&be->mu);
    if (be->thread_done) {
        /* Sealed by a signal, or stopped: nothing more reaches the file. */
        pthread_mutex_unlock(&be->mu);
        return false;
    }
    uint64_t req = ++be->flush_req;
    sem_post(&be->wake);
    int rc = 0;
    while (be->flush_done < req && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&be->done_cv, &be->mu, &deadline);
    bool ok = be->flush_done >= req;
    pthread_mutex_unlock(&be->mu);
    return ok;
}

unsigned inproc_backend_windows_written(inproc_backend *be)
{
    return atomic_load(&be->windows);
}

bool inproc_backend_finish_from_signal(inproc_backend *be, bool last, uint32_t timeout_ms)
{
    /* Only atomics, sem_post and util_time (clock_gettime, nanosleep): all
     * async-signal-safe (POSIX). A handler never takes be->mu: the thread
     * it interrupted may hold it. */
    if (atomic_load(&be->io_ended))
        return true;
    if (last)
        atomic_store(&be->sig_last, true);
    unsigned ticket = atomic_fetch_add(&be->sig_requested, 1) + 1;
    sem_post(&be->wake);
    struct timespec until = util_deadline_after_ms(timeout_ms);
    for (;;) {
        /* Served when sig_served reached our ticket (wrapping counters). */
        if ((int)(atomic_load(&be->sig_served) - ticket) >= 0 || atomic_load(&be->io_ended))
            return true;
        if (util_remaining_ms(&until) == 0)
            return false;
        util_sleep_ms(1);
    }
}

bool inproc_backend_stop(inproc_backend *be)
{
    if (!be)
        return true;
    if (be->thread_running) {
        pthread_mutex_lock(&be->mu);
        be->stop = true;
        pthread_mutex_unlock(&be->mu);
        sem_post(&be->wake);
        pthread_join(be->thread, NULL);
        be->thread_running = false;
        /* The window in hand, if any, is finished first. */
        ww_destroy(be->ww);
        be->ww = NULL;
        if (be->out.write_failures)
            report(be, INPROC_BACKEND_REPORT_WARN,
                   "trace file %s: %llu write-out(s) failed, %llu bytes of trace data "
                   "dropped%s",
                   be->path, (unsigned long long)be->out.write_failures,
                   (unsigned long long)be->out.bytes_dropped,
                   be->out.broken ? " (the file ends at the first failure)" : "");
    }
    return !be->out.io_error;
}

bool inproc_backend_destroy(inproc_backend *be)
{
    if (!be)
        return true;
    inproc_backend_stop(be);
    bool ok = svc_out_close(&be->out);
    bool replaced = false;
    trg_stop(be->trg, &replaced);
    if (replaced)
        report(be, INPROC_BACKEND_REPORT_INFO,
               "flight recorder: the program replaced the trigger's signal handler; left alone");
    flr_destroy(be->flr);
    free(be->scrape_buf);
    smb_commit_batch_free(&be->batch);
    cb_destroy(be->cb);
    smb_arbiter_destroy(be->arb);
    sem_destroy(&be->wake);
    pthread_cond_destroy(&be->done_cv);
    pthread_mutex_destroy(&be->mu);
    free(be);
    return ok;
}
