/* SPDX-License-Identifier: MIT */
/* The flight recorder (prefix flr_): what the in-process backend keeps
 * when a trigger, not the end of the run, decides what gets written
 * (GPUTRACE_TRIGGER; docs/layer.md, "Flight recorder").
 *
 * It holds whole Trace records, as service_output.h frames them for a
 * file (trusted fields and previous_packet_dropped appended), in a ring of
 * `bytes`, each with the MONOTONIC time it arrived, its sequence and
 * whether it is a restart point: a packet that starts its sequence's
 * incremental state afresh (SEQ_INCREMENTAL_STATE_CLEARED or
 * incremental_state_cleared), from which a reader can make sense of the
 * sequence without anything before it. The oldest records make room for
 * new ones.
 *
 * A window from time T on is written per sequence from its latest
 * restart point at or before T (else its first one after T; a sequence
 * that never has one, from T), so every sequence in the file is readable
 * on its own; sequences with nothing at or after T are left out. Before
 * that, the sequence's last FLR_KEEP_SNAPSHOTS distinct ClockSnapshot
 * packets from earlier are written too, so a short window still has clock
 * readings far enough apart to measure drift. The writer asks its
 * producers for restart points often enough (inproc_backend.h:
 * restart_period_ms) that a window of N seconds holds at most that period
 * more.
 *
 * One owner (the backend's I/O thread) calls everything; no locks.
 */
#ifndef FLIGHT_RECORDER_H
#define FLIGHT_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/service_output.h"

typedef struct flr_recorder flr_recorder;

/* A ring of `bytes` (at least 64 KiB); NULL when out of memory. */
flr_recorder *flr_create(size_t bytes);
void flr_destroy(flr_recorder *r);

/* Records as an svc_out sink hands them over (`data`, each ending at
 * records[i].end), all arrived at `now_ns`. */
void flr_append(flr_recorder *r, const uint8_t *data, const struct svc_out_record *records,
                size_t n, uint64_t now_ns);

/* Writes the window from `from_ns` on into `out`, leaving out sequence
 * `skip_seq` (the service's own: the window file gets fresh ones). Returns
 * the number of records written. */
size_t flr_write_window(flr_recorder *r, svc_out *out, uint64_t from_ns, uint32_t skip_seq);

/* What the ring holds now. */
typedef struct flr_stats {
    uint64_t records, bytes;
    uint64_t evicted;   /* records that made room */
    uint64_t too_large; /* records bigger than the ring, never kept */
    uint64_t empty;     /* empty records, never kept */
    uint64_t oldest_ns; /* arrival of the oldest record (0: none) */
} flr_stats;
void flr_get_stats(const flr_recorder *r, flr_stats *out);

/* Earlier distinct clock snapshots written with each sequence's window. */
#define FLR_KEEP_SNAPSHOTS 4u

/* What one framed Trace record (tag, length, TracePacket) is, as bits: a
 * restart point, a ClockSnapshot. Malformed input is neither. Pure. */
#define FLR_KIND_RESTART        1u
#define FLR_KIND_CLOCK_SNAPSHOT 2u
unsigned flr_record_kind(const uint8_t *record, size_t len);

/* The file name of window `n` from the output pattern: "%n" becomes n (a
 * "%%" stays for svc_out_expand_path); a pattern without "%n" gets "-n"
 * before the extension of its last component ("t.pftrace" ->
 * "t-3.pftrace"). False (nothing written) when it does not fit in `cap`. */
bool flr_window_path(const char *pattern, unsigned n, char *out, size_t cap);

#endif /* FLIGHT_RECORDER_H */
