/* Helpers for the IPC tests: child processes with deadlines, waiting for a
 * socket, and checking a trace written by gputrace-stress writers. */
#ifndef TI_UTIL_H
#define TI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tt_util.h"

/* Starts argv[0] with argv (NULL-terminated). When out_fd is not NULL the
 * child's stdout is a pipe whose read end is returned there. Extra
 * environment: "NAME=VALUE" strings (NULL-terminated, may be NULL). */
pid_t ti_spawn(char *const argv[], char *const extra_env[], int *out_fd);
/* Waits up to timeout_ms; on timeout kills the child (SIGKILL) and
 * returns false. *status gets the waitpid() status. */
bool ti_wait(pid_t pid, uint32_t timeout_ms, int *status);
/* Everything the fd delivers until EOF (or timeout), NUL-terminated. */
char *ti_read_all(int fd, uint32_t timeout_ms);
/* True once something accepts on `path` (within timeout_ms). */
bool ti_wait_socket(const char *path, uint32_t timeout_ms);
/* A fresh path under $TMPDIR with `tag` in it; caller frees. */
char *ti_temp_path(const char *tag, const char *ext);
void ti_sleep_ms(uint32_t ms);

/* Starts gputrace-service on `sock` writing to `out` (extra args appended,
 * NULL-terminated list) and waits until it listens. Returns its pid, or -1. */
pid_t ti_start_service(const char *service_bin, const char *sock, const char *out,
                       const char *const *extra);
/* SIGTERM, then wait; true when it exited 0. */
bool ti_stop_service(pid_t pid);

/* What gputrace-stress printed. */
typedef struct ti_stress_summary {
    uint64_t written, dropped, aborted;
    double packets_per_s;
    bool delivered;
} ti_stress_summary;
bool ti_parse_stress(const char *out, ti_stress_summary *s);

/* Per-sequence view of the TestEvent packets in a trace. */
typedef struct ti_seq {
    uint32_t sequence_id;
    uint32_t writer;   /* TestEvent.seq_value */
    int32_t pid;       /* trusted_pid */
    uint64_t packets;  /* TestEvent packets found */
    uint64_t first, last; /* counters */
    uint64_t missing;  /* counters skipped between first and last */
    uint64_t gaps;     /* places where counters jumped */
    uint64_t flagged_gaps; /* of those, packets carrying previous_packet_dropped */
    uint64_t dropped_flags; /* packets with previous_packet_dropped (any) */
    bool out_of_order;
    bool bad_payload;
} ti_seq;

typedef struct ti_report {
    bool parsed;
    ti_seq *seqs;
    size_t num_seqs;
    uint64_t total_packets;
    uint64_t clock_snapshots;
    bool has_stats;
    perfetto_protos_TraceStats_view stats;
    perfetto_protos_TraceStats_BufferStats_view buf;
} ti_report;

/* Loads `path` and checks every TestEvent packet: counters strictly
 * increasing per sequence, payload of `size` bytes as gputrace-stress
 * writes it (size 0: any). */
bool ti_check_trace(const char *path, uint32_t size, ti_report *r);
void ti_report_free(ti_report *r);
/* Prints one line per sequence (for failing tests' logs). */
void ti_report_print(const ti_report *r);

#endif /* TI_UTIL_H */
