/* SPDX-License-Identifier: MIT */
/* Background threads that live inside someone else's process. */
#ifndef UTIL_THREAD_H
#define UTIL_THREAD_H

#include <pthread.h>

/* pthread_create for a thread that takes no asynchronous signal: the
 * application's handlers never run on it, a handler waiting for it can
 * never be waiting on itself, and SIGXFSZ (a write past RLIMIT_FSIZE)
 * stays pending on it instead of killing the process, so the write just
 * fails with EFBIG. Faults (SIGSEGV, SIGBUS, SIGABRT, ...) stay
 * deliverable. Returns pthread_create's result. */
int util_thread_start_quiet(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
