/* SPDX-License-Identifier: MIT */
/* Triggers of the flight recorder (prefix trg_): GPUTRACE_TRIGGER's
 * "signal:NAME" or "file:PATH" (docs/layer.md, "Flight recorder").
 *
 * signal:USR1, signal:USR2 or signal:RTMIN+N (also with a "SIG" prefix):
 * while started, the signal is caught by a handler of ours, which counts
 * it, wakes the recorder and then does what the program asked for: calls
 * the program's own handler (with its flags and mask), or nothing where the
 * program ignored the signal or left it at its default (which for these
 * signals would end the process: catching them is the point). A handler
 * the program installs later replaces ours; we never put ours back.
 * Stopped, ours is removed if it is still there; if the program replaced
 * it (and may call it as its "previous" handler) the library is pinned in
 * memory so that pointer stays valid. The handler is async-signal-safe
 * (atomics and sem_post). One signal trigger per process.
 *
 * file:PATH: every poll looks at PATH (lstat, never opening or following
 * it): it fires when PATH appears, when another file takes its place
 * (inode), or when its modification time is 100 ms or more away from the
 * one it had when it last fired, so `touch PATH` fires each time, once
 * (touch creates the file and then sets its time: a poll may see both).
 * What is there when the trigger starts does not fire.
 */
#ifndef TRIGGER_H
#define TRIGGER_H

#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRG_PATH_MAX 4096

typedef enum trg_kind {
    TRG_NONE,
    TRG_SIGNAL,
    TRG_FILE,
} trg_kind;

typedef struct trg_spec {
    trg_kind kind;
    int signo;               /* TRG_SIGNAL */
    char path[TRG_PATH_MAX]; /* TRG_FILE */
} trg_spec;

/* Parses "signal:NAME" or "file:PATH". False with *why (a static string)
 * for anything else. Pure. */
bool trg_parse(const char *text, trg_spec *out, const char **why);

typedef struct trg_trigger trg_trigger;

/* Starts watching; `wake` (may be NULL) is posted on every signal. NULL
 * with *why when it cannot (out of memory, a signal trigger already
 * running, sigaction failed). */
trg_trigger *trg_start(const trg_spec *spec, sem_t *wake, const char **why);

/* How many times it fired since the last poll. */
unsigned trg_poll(trg_trigger *t);

/* Stops watching; `replaced` (may be NULL) says whether the program had
 * replaced our handler meanwhile. */
void trg_stop(trg_trigger *t, bool *replaced);

#endif /* TRIGGER_H */
