/* SPDX-License-Identifier: MIT */
/* trigger.c — see trigger.h. */
#include "tracing/trigger.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- parsing ---------------------------------------------------------------------------- */

static bool parse_signal(const char *name, int *signo)
{
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    if (strcasecmp(name, "USR1") == 0) {
        *signo = SIGUSR1;
        return true;
    }
    if (strcasecmp(name, "USR2") == 0) {
        *signo = SIGUSR2;
        return true;
    }
    if (strncasecmp(name, "RTMIN", 5) == 0) {
        const char *p = name + 5;
        int n = 0;
        if (*p == '+') {
            p++;
            if (*p < '0' || *p > '9')
                return false;
            for (; *p >= '0' && *p <= '9' && n <= 64; p++)
                n = n * 10 + (*p - '0');
        }
        if (*p || SIGRTMIN + n > SIGRTMAX)
            return false;
        *signo = SIGRTMIN + n;
        return true;
    }
    return false;
}

bool trg_parse(const char *text, trg_spec *out, const char **why)
{
    memset(out, 0, sizeof *out);
    if (strncmp(text, "signal:", 7) == 0) {
        if (!parse_signal(text + 7, &out->signo)) {
            *why = "expected signal:USR1, signal:USR2 or signal:RTMIN+N";
            return false;
        }
        out->kind = TRG_SIGNAL;
        return true;
    }
    if (strncmp(text, "file:", 5) == 0) {
        const size_t len = strlen(text + 5);
        if (!len) {
            *why = "file: needs a path";
            return false;
        }
        if (len >= sizeof out->path) {
            *why = "the path is too long";
            return false;
        }
        memcpy(out->path, text + 5, len + 1);
        out->kind = TRG_FILE;
        return true;
    }
    *why = "expected signal:NAME or file:PATH";
    return false;
}

/* ---- signals ---------------------------------------------------------------------------- */

static struct {
    int signo;
    struct sigaction previous;
    _Atomic(sem_t *) wake;
    atomic_uint fired;
    atomic_bool active;
    bool installed, displaced;
} sig;

static bool is_default_or_ignored(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && (sa->sa_handler == SIG_DFL || sa->sa_handler == SIG_IGN);
}

static void on_signal(int signo, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    if (signo == sig.signo && atomic_load(&sig.active)) {
        atomic_fetch_add(&sig.fired, 1);
        sem_t *w = atomic_load(&sig.wake);
        if (w)
            sem_post(w);
    }
    const struct sigaction *prev = &sig.previous;
    if (prev->sa_flags & SA_SIGINFO)
        prev->sa_sigaction(signo, info, uctx);
    else if (!is_default_or_ignored(prev))
        prev->sa_handler(signo);
    errno = saved_errno;
}

static bool is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_signal;
}

static bool install(int signo, const char **why)
{
    if (atomic_load(&sig.active)) {
        *why = "a signal trigger is running already";
        return false;
    }
    if (sig.displaced && sig.signo == signo) {
        *why = "the program replaced the layer's handler of this signal before";
        return false;
    }
    struct sigaction cur;
    if (sigaction(signo, NULL, &cur) != 0) {
        *why = "sigaction failed";
        return false;
    }
    sig.signo = signo;
    sig.previous = cur;
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_signal;
    if (is_default_or_ignored(&cur)) {
        ours.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&ours.sa_mask);
    } else {
        /* What the program asked for its handler, which we call. */
        ours.sa_flags =
            SA_SIGINFO | (cur.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER | SA_RESETHAND));
        ours.sa_mask = cur.sa_mask;
    }
    atomic_store(&sig.active, true);
    struct sigaction was;
    if (sigaction(signo, &ours, &was) != 0) {
        atomic_store(&sig.active, false);
        *why = "sigaction failed";
        return false;
    }
    sig.installed = true;
    return true;
}

/* Keeps this library mapped: someone holds a pointer to our handler. */
static void pin_library(void)
{
    static bool pinned;
    Dl_info info;
    if (!pinned && dladdr((void *)on_signal, &info) && info.dli_fname &&
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
        pinned = true;
}

static bool uninstall(void)
{
    atomic_store(&sig.active, false);
    atomic_store(&sig.wake, NULL);
    if (!sig.installed)
        return false;
    sig.installed = false;
    struct sigaction cur;
    if (sigaction(sig.signo, NULL, &cur) != 0)
        return false;
    if (is_ours(&cur)) {
        sigaction(sig.signo, &sig.previous, NULL);
        return false;
    }
    sig.displaced = true;
    pin_library();
    return true;
}

/* ---- triggers --------------------------------------------------------------------------- */

struct trg_trigger {
    trg_spec spec;
    unsigned seen; /* signals counted so far */
    bool existed;  /* file: what was there at the last look */
    struct stat last;
    struct timespec fired_mtime; /* file: its modification time when it last fired */
};

/* What is at the path now; false when nothing (or it cannot be looked at). */
static bool look(const char *path, struct stat *st)
{
    return lstat(path, st) == 0;
}

/* Modification times this close are one change: `touch PATH` creates the
 * file and then sets its time, a poll between the two sees both. */
#define TRG_FILE_SETTLE_NS 100000000

static bool changed(const trg_trigger *t, const struct stat *now)
{
    if (now->st_ino != t->last.st_ino || now->st_dev != t->last.st_dev)
        return true;
    const int64_t d = ((int64_t)now->st_mtim.tv_sec - (int64_t)t->fired_mtime.tv_sec) * 1000000000 +
                      ((int64_t)now->st_mtim.tv_nsec - (int64_t)t->fired_mtime.tv_nsec);
    return d >= TRG_FILE_SETTLE_NS || d <= -TRG_FILE_SETTLE_NS;
}

trg_trigger *trg_start(const trg_spec *spec, sem_t *wake, const char **why)
{
    trg_trigger *t = calloc(1, sizeof *t);
    if (!t) {
        *why = "out of memory";
        return NULL;
    }
    t->spec = *spec;
    if (spec->kind == TRG_SIGNAL) {
        atomic_store(&sig.wake, wake);
        t->seen = atomic_load(&sig.fired);
        if (!install(spec->signo, why)) {
            atomic_store(&sig.wake, NULL);
            free(t);
            return NULL;
        }
    } else if (spec->kind == TRG_FILE) {
        t->existed = look(spec->path, &t->last);
        t->fired_mtime = t->last.st_mtim;
    }
    return t;
}

unsigned trg_poll(trg_trigger *t)
{
    if (t->spec.kind == TRG_SIGNAL) {
        const unsigned now = atomic_load(&sig.fired);
        const unsigned n = now - t->seen;
        t->seen = now;
        return n;
    }
    if (t->spec.kind != TRG_FILE)
        return 0;
    struct stat st;
    const bool exists = look(t->spec.path, &st);
    const bool fired = exists && (!t->existed || changed(t, &st));
    t->existed = exists;
    if (exists)
        t->last = st;
    if (fired)
        t->fired_mtime = st.st_mtim;
    return fired ? 1u : 0u;
}

void trg_stop(trg_trigger *t, bool *replaced)
{
    bool displaced = false;
    if (t && t->spec.kind == TRG_SIGNAL)
        displaced = uninstall();
    if (replaced)
        *replaced = displaced;
    free(t);
}
