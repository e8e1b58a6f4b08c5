/* SPDX-License-Identifier: MIT */
/* backend_inproc.c — the in-process backend (GPUTRACE_OUTPUT=path): the
 * tracing library's embedded service writing one .pftrace, tracing from
 * creation until destruction (final flush, last clock snapshot,
 * TraceStats).
 *
 * It also finishes the file when the process is told to end: SIGINT and
 * SIGTERM get a handler of ours while a backend exists (see "Signals"
 * below and docs/layer.md), unless GPUTRACE_SIGNAL_WAIT_MS=0. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layer/backend.h"
#include "layer/config.h"
#include "tracing/inproc_backend.h"
#include "layer/log.h"

/* Sequences are numbered by the backend; the session has only one. */
#define INPROC_INSTANCE 1

typedef struct inproc inproc;
struct inproc {
    tl_backend base;
    inproc_backend *be;
    const tl_backend_events *events;
};

/* ---- Signals ------------------------------------------------------------------
 *
 * The default action of SIGINT and SIGTERM ends the process at once: no
 * destructor runs, so the file would end wherever the last write-out left
 * it, without TraceStats. Our handler asks the backend's I/O thread to
 * write everything out with a TraceStats and waits for it, bounded by
 * GPUTRACE_SIGNAL_WAIT_MS; then the signal takes its course:
 *   - the application had the default action: we restore it and raise the
 *     signal again, so the process still dies of it (exit status, core
 *     rules and parent's view unchanged); the file is sealed first (nothing
 *     is written after the TraceStats);
 *   - the application had a handler of its own: we call it, as the kernel
 *     would have (its flags and mask were copied into ours); the file got
 *     an interim TraceStats and tracing goes on, since the handler may let
 *     the program carry on or end it cleanly;
 *   - the application ignores the signal: we install nothing.
 * Installed at backend creation (the first vkCreateDevice), so a handler
 * the application installs later simply replaces ours; we never put ours
 * back over it. Removed when the backend goes, if it is still ours. If it
 * is not (the application replaced it and may call it as its "previous"
 * handler), the library is pinned in memory so that pointer stays valid,
 * and that signal is left alone for the rest of the process.
 *
 * The handler uses only async-signal-safe calls: getpid, atomics,
 * sem_post, clock_gettime, nanosleep, sigaction, raise. It waits by
 * polling (sem_timedwait is not on POSIX's list); it never takes a lock,
 * so a lock held by the interrupted thread can at worst make it wait out
 * its bound. */

static const int finish_signals[] = { SIGINT, SIGTERM };
#define NUM_FINISH_SIGNALS (sizeof finish_signals / sizeof finish_signals[0])

static struct {
    /* What the application had; read by the handler. */
    struct sigaction previous[NUM_FINISH_SIGNALS];
    bool installed[NUM_FINISH_SIGNALS];
    /* Replaced by someone else while ours: never touched again. */
    bool displaced[NUM_FINISH_SIGNALS];
    pid_t pid; /* a fork() child keeps our handler but not our I/O thread */
    uint32_t wait_ms;
    _Atomic(inproc_backend *) target;
    atomic_int handlers_inside; /* handlers that may still use target */
} sig;

static void on_finish_signal(int signo, siginfo_t *info, void *uctx);

static bool is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_finish_signal;
}

static bool is_default(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

static bool is_ignored(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN;
}

static void on_finish_signal(int signo, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    size_t i = 0;
    while (i < NUM_FINISH_SIGNALS && finish_signals[i] != signo)
        i++;
    if (i == NUM_FINISH_SIGNALS)
        return;
    const struct sigaction *prev = &sig.previous[i];
    bool dies = is_default(prev);

    if (getpid() == sig.pid) {
        atomic_fetch_add(&sig.handlers_inside, 1);
        inproc_backend *be = atomic_load(&sig.target);
        if (be)
            inproc_backend_finish_from_signal(be, dies, sig.wait_ms);
        atomic_fetch_sub(&sig.handlers_inside, 1);
    }

    if (dies) {
        /* The signal is blocked while we run; raised again with the default
       * action, it ends the process as soon as we return. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(signo, &dfl, NULL);
        raise(signo);
    } else if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(signo, info, uctx);
    } else if (!is_ignored(prev)) {
        prev->sa_handler(signo);
    }
    errno = saved_errno;
}

static void install_signal_handlers(inproc_backend *be, uint32_t wait_ms)
{
    sig.pid = getpid();
    sig.wait_ms = wait_ms;
    atomic_store(&sig.target, be);
    for (size_t i = 0; i < NUM_FINISH_SIGNALS; i++) {
        int signo = finish_signals[i];
        const char *name = sigabbrev_np(signo);
        struct sigaction cur;
        if (sig.displaced[i] || sigaction(signo, NULL, &cur) != 0)
            continue;
        if (is_ignored(&cur)) {
            gt_debug("SIG%s is ignored by the application: left alone", name);
            continue;
        }
        sig.previous[i] = cur;
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_finish_signal;
        if (is_default(&cur)) {
            /* Whatever we interrupt resumes only for a moment. */
            ours.sa_flags = SA_SIGINFO | SA_RESTART;
            sigemptyset(&ours.sa_mask);
        } else {
            /* What the application asked for its handler, which we call. */
            ours.sa_flags =
                SA_SIGINFO | (cur.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER | SA_RESETHAND));
            ours.sa_mask = cur.sa_mask;
        }
        struct sigaction was;
        if (sigaction(signo, &ours, &was) != 0)
            continue;
        /* Another thread changed it between our look and our swap: theirs
       * wins. */
        if ((was.sa_flags & SA_SIGINFO) != (cur.sa_flags & SA_SIGINFO) ||
            was.sa_handler != cur.sa_handler) {
            sigaction(signo, &was, NULL);
            continue;
        }
        sig.installed[i] = true;
        gt_debug("SIG%s: the trace is finished before %s", name,
                 is_default(&cur) ? "the default action" : "the application's handler runs");
    }
}

/* Keeps this library mapped for the rest of the process: someone holds a
 * pointer to our handler. */
static void pin_library(void)
{
    static bool pinned;
    Dl_info info;
    if (pinned || !dladdr((void *)on_finish_signal, &info) || !info.dli_fname)
        return;
    if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
        pinned = true;
    else
        gt_warn("cannot pin the layer in memory (%s): unloading it could leave a signal "
                "handler pointing nowhere",
                dlerror());
}

/* Before the backend goes. */
static void remove_signal_handlers(void)
{
    atomic_store(&sig.target, NULL);
    /* A handler that saw the backend keeps using it until it returns; its
    * wait is bounded by wait_ms. */
    struct timespec nap = { 0, 1000000L };
    for (uint32_t waited = 0; atomic_load(&sig.handlers_inside) > 0 && waited < sig.wait_ms + 1000u;
         waited++)
        nanosleep(&nap, NULL);
    for (size_t i = 0; i < NUM_FINISH_SIGNALS; i++) {
        if (!sig.installed[i])
            continue;
        sig.installed[i] = false;
        int signo = finish_signals[i];
        struct sigaction cur;
        if (sigaction(signo, NULL, &cur) != 0)
            continue;
        if (is_ours(&cur)) {
            sigaction(signo, &sig.previous[i], NULL);
            continue;
        }
        gt_info("SIG%s: the application replaced the layer's handler; leaving it alone",
                sigabbrev_np(signo));
        sig.displaced[i] = true;
        pin_library();
    }
}

/* ---- backend ------------------------------------------------------------------ */

static tw_writer *inproc_new_writer(tl_backend *base, uint64_t instance)
{
    inproc *b = (inproc *)base;
    if (instance != INPROC_INSTANCE)
        return NULL;
    return inproc_backend_new_writer(b->be);
}

static void inproc_release_writer(tl_backend *base, tw_writer *tw)
{
    (void)base;
    tw_destroy(tw);
}

static void inproc_destroy(tl_backend *base)
{
    inproc *b = (inproc *)base;
    /* The handlers stay while the final flush runs: a signal meanwhile
    * waits for it to end instead of cutting it short. */
    inproc_backend_stop(b->be);
    remove_signal_handlers();
    inproc_backend_destroy(b->be);
    free(b);
}

static const tl_backend_ops inproc_ops = {
    .name = "inprocess",
    .new_writer = inproc_new_writer,
    .release_writer = inproc_release_writer,
    .destroy = inproc_destroy,
};

static void report(void *ctx, inproc_backend_report_level level, const char *msg)
{
    (void)ctx;
    gt_log(level == INPROC_BACKEND_REPORT_WARN ? GT_LOG_WARN : GT_LOG_INFO, "%s", msg);
}

/* Flight recorder: the I/O thread asks for restart points; the session's
 * clients write them as after a service's ClearIncrementalState. */
static void ask_restart(void *ctx)
{
    inproc *b = ctx;
    if (b->events->clear_incremental_state)
        b->events->clear_incremental_state(b->events->ctx, INPROC_INSTANCE);
}

tl_backend *tl_backend_inproc_create(const char *path, const tl_backend_events *events)
{
    inproc *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    cfg.output_path = path;
    cfg.report = report;
    /* A GPU producer writes in bursts after each completion: room for a
    * few seconds of them without ever blocking the collector. The ring
    * (GPUTRACE_BUFFER_KB, 32 MiB by default) bounds what a long run keeps
    * in memory before it is written out. */
    cfg.smb_size = 4u << 20;
    cfg.buffer_size = (size_t)gt_config_get()->buffer_kb * 1024u;
    b->events = events;
    const gt_config *gc = gt_config_get();
    if (gc->trigger) {
        /* The ring is the recorder's; the central buffer only passes
         * chunks on, a drain period at a time. */
        cfg.trigger = &gc->trigger_spec;
        cfg.window_ms = gc->trigger_seconds * 1000u;
        cfg.record_bytes = cfg.buffer_size;
        cfg.buffer_size = cfg.buffer_size < (8u << 20) ? cfg.buffer_size : 8u << 20;
        cfg.restart = ask_restart;
        cfg.restart_ctx = b;
    }
    b->base.ops = &inproc_ops;
    b->be = inproc_backend_create(&cfg);
    if (!b->be) {
        int err = errno;
        free(b);
        errno = err;
        return NULL;
    }
    const char *written = inproc_backend_output_path(b->be);
    if (gc->trigger)
        gt_info("in-process backend: flight recorder, on %s the last %u s into %s (numbered)",
                gc->trigger, gc->trigger_seconds, written);
    else if (strcmp(written, path) != 0)
        gt_info("in-process backend: writing %s (GPUTRACE_OUTPUT=%s)", written, path);
    else
        gt_info("in-process backend: writing %s", written);
    /* A flight recorder has no file to finish when the process is told to
     * end. */
    if (gc->signal_wait_ms && !gc->trigger)
        install_signal_handlers(b->be, gc->signal_wait_ms);
    const tl_ds_options options = {
        .stages = true,
        .low_overhead = gc->low_overhead,
        .memory = gc->memory,
    };
    events->started(events->ctx, INPROC_INSTANCE, &options);
    return &b->base;
}
