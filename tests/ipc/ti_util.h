/* SPDX-License-Identifier: MIT */
/* Helpers for the IPC tests: child processes with deadlines, waiting for a
 * socket, and checking a trace written by gputrace-stress writers. */
#ifndef TI_UTIL_H
#define TI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracing/ipc/ipc_conn.h"
#include "tracing/ipc/ipc_frame.h"
#include "tests/tracing/tt_util.h"

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

/* ti_spawn() with the child's stderr going to the file `err_path`
 * (created or truncated), NULL: inherited. */
pid_t ti_spawn_logged(char *const argv[], char *const extra_env[], int *out_fd,
                      const char *err_path);

/* Starts gputrace-service on `sock` writing to `out` (extra args appended,
 * NULL-terminated list) and waits until it listens. Returns its pid, or -1. */
pid_t ti_start_service(const char *service_bin, const char *sock, const char *out,
                       const char *const *extra);
/* The same with its stderr in `log_path` (for its summary lines) and
 * extra environment (as for ti_spawn(), may be NULL). */
pid_t ti_start_service_logged(const char *service_bin, const char *sock, const char *out,
                              const char *const *extra, const char *log_path,
                              char *const extra_env[]);
/* The numbers of gputrace-service's "connections:" summary line in its
 * log; false when the line is missing. */
typedef struct ti_service_conns {
    uint64_t accepted, refused, evicted, handshake_timeouts, idle_timeouts, send_timeouts;
} ti_service_conns;
bool ti_parse_service_log(const char *log_path, ti_service_conns *c);
/* Resident set of a process in KiB (VmRSS), or of its peak (VmHWM); 0 when
 * unknown. */
uint64_t ti_rss_kb(pid_t pid, bool peak);
/* SIGTERM, then wait; true when it exited 0. */
bool ti_stop_service(pid_t pid);
/* Kills (SIGKILL) and reaps every service ti_start_service*() started that
 * ti_stop_service() did not stop: a test that failed half-way leaves no
 * process behind (use as cmocka teardown, and at exit). */
void ti_kill_services(void);

/* Every test leaves no service behind, even when it fails half-way. */
#define TI_TEST(test) cmocka_unit_test_teardown(test, ti_kill_services_teardown)

/* The start of an IPC test program run as `prog GPUTRACE_SERVICE
 * GPUTRACE_STRESS`: takes the two paths (false, with a usage line, if
 * they are missing), ignores SIGPIPE, kills left-over services at exit and
 * makes stdout unbuffered (a log cut short by a crash still shows where). */
bool ti_main_init(int argc, char **argv, const char **service, const char **stress);
int ti_kill_services_teardown(void **state);

/* ---- a raw client for hostile-producer tests ----------------------------
 *
 * Speaks the producer protocol frame by frame (and can break it at will).
 * Functions return false on failure instead of asserting, so they work on
 * any thread. */
typedef struct ti_raw {
    ipc_conn c;
    ipc_frame_builder fb;
    ipc_method_table methods;
    uint64_t next_id;
} ti_raw;

/* Connects (and with `bind`, binds ProducerPort and waits for the reply). */
bool ti_raw_connect(ti_raw *r, const char *sock, bool bind, uint32_t timeout_ms);
void ti_raw_close(ti_raw *r);
/* Starts an InvokeMethod of `method` (looked up in the bind reply): fill
 * the returned message, then ti_raw_send(). NULL when unknown. */
pb_msg *ti_raw_invoke(ti_raw *r, const char *method, bool drop_reply, ipc_invoke *inv);
bool ti_raw_send(ti_raw *r, ipc_invoke *inv, int fd);
/* Queues `n` Sync requests that want replies as one write (the service
 * then reads them in big batches). */
bool ti_raw_send_syncs(ti_raw *r, int n);
/* Sends what is queued, waiting up to timeout_ms for the socket. */
bool ti_raw_drain(ti_raw *r, uint32_t timeout_ms);
/* The next frame (decoded from a copy the caller frees). */
bool ti_raw_wait_frame(ti_raw *r, ipc_frame *fr, uint8_t **copy, uint32_t timeout_ms);
/* True when the peer closed the connection within timeout_ms (whatever it
 * sends meanwhile is read and thrown away). */
bool ti_raw_closed(ti_raw *r, uint32_t timeout_ms);
/* True when the peer hung up within timeout_ms, without reading anything
 * (POLLRDHUP): for clients that must look as if they do not read. */
bool ti_raw_hung_up(int fd, uint32_t timeout_ms);
/* InitializeConnection as `name` with these SMB hints, offering `smb_fd`
 * (-1: none); waits for the reply. *adopted: the service took the offer. */
bool ti_raw_initialize(ti_raw *r, const char *name, uint32_t shm_size, uint32_t page_size,
                       int smb_fd, bool *adopted, uint32_t timeout_ms);
/* GetAsyncCommand, then RegisterDataSource(name); when the session wants
 * it, waits for SetupTracing and returns the SMB fd it brought in *smb_fd
 * (-1 when it brought none: an adopted SMB). */
bool ti_raw_register(ti_raw *r, const char *name, int *smb_fd, uint32_t timeout_ms);
/* A memfd of `size` bytes, sealed against resizing when `seal`. */
int ti_memfd(size_t size, bool seal);
/* One pass of garbage over an SMB: random words, page headers that claim
 * complete chunks in random layouts. `state` is the generator's state. */
void ti_scribble(uint8_t *mem, size_t size, uint64_t *state);

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
    uint32_t writer;        /* TestEvent.seq_value */
    int32_t pid;            /* trusted_pid */
    uint64_t packets;       /* TestEvent packets found */
    uint64_t first, last;   /* counters */
    uint64_t missing;       /* counters skipped between first and last */
    uint64_t gaps;          /* places where counters jumped */
    uint64_t flagged_gaps;  /* of those, packets carrying previous_packet_dropped */
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
