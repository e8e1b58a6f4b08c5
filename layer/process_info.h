/* SPDX-License-Identifier: MIT */
/* process_info.h — who the application is (prefix pi_): its pid, name and
 * command line, its threads' names, and the track uuids the trace gives
 * them. Read from /proc/self, never written; no logging.
 */
#ifndef GPUTRACE_LAYER_PROCESS_INFO_H
#define GPUTRACE_LAYER_PROCESS_INFO_H

#include <stddef.h>
#include <stdint.h>

typedef struct pi_process pi_process;
struct pi_process {
    int32_t pid;
    int32_t ppid; /* when first read: a reader would take a new parent for a new process */
    /* The program's file name (argv[0] without its directory; comm when
     * the command line is unreadable): comm is cut at 15 bytes. */
    char name[64];
    /* The arguments, each NUL-terminated, as /proc/self/cmdline (cut at a
     * whole argument when longer). */
    char cmdline[2048];
    size_t cmdline_len;
    /* The process's track: random per process, so pids reused during a
     * long trace never share a track. */
    uint64_t uuid;
};

/* Read once, at the first call (thread-safe). */
const pi_process *pi_process_get(void);

/* The track of thread `tid` of this process. */
uint64_t pi_thread_uuid(int32_t tid);

/* The calling thread's name (its comm: what pthread_setname_np set, else
 * the program's) into `out`; "" if none. One prctl, no file: it runs on
 * the application's submitting threads, once a second at most. */
void pi_current_thread_name(char *out, size_t size);

/* The calling thread's id (cached per thread). */
int32_t pi_thread_id(void);

#endif
