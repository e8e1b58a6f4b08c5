/* SPDX-License-Identifier: MIT */
/* fault_truth — measures how far each GPU event of a trace, converted to
 * trace time the way trace_processor converts it, is from when the GPU
 * really ran it.
 *
 *   fault_truth TRUTH_FILE TRACE
 *
 * The truth: on lavapipe the driver's timestamps are CLOCK_MONOTONIC, and
 * VK_LAYER_GPUTRACE_clockfault wrote in TRUTH_FILE the transform it applied
 * on top (fault_model.h), so each device timestamp in the trace maps back
 * to the monotonic instant of its tick; MONOTONIC is taken to trace time
 * with the trace's own snapshots. The conversion under test uses the
 * toolkit's clock graph (trace_processor's rules, in file order).
 *
 * Prints one line:
 *   fault_truth: events=N converted=C failed=F max_error_ns=E
 *                min_error_ns=A max_signed_error_ns=B mean_abs_error_ns=M
 *                ... max_start_error_ns=S worst_event_duration_ns=D
 * (error = converted - true, for starts and ends; S for starts only, D the
 * duration of the event with the largest error). An end is converted as
 * start + duration, and the duration is in device nanoseconds, so an end
 * carries the start's conversion error plus the drift over the event's own
 * duration (20 ppm x a 100 ms command buffer = 2 us) that no snapshot
 * cadence removes: S is the conversion error proper. Judging is left to
 * the caller. Exit 0, or 2 for unreadable input.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protos/perfetto/clock_snapshot.pbc.h"
#include "tests/faultlayer/fault_model.h"
#include "protos/perfetto/gpu_render_stage_event.pbc.h"
#include "toolkit/tk_clock_graph.h"
#include "toolkit/tk_inflate.h"
#include "toolkit/tk_trace_reader.h"
#include "protos/perfetto/trace_packet.pbc.h"

#define MAX_SNAPSHOT_CLOCKS 64

typedef struct event event;
struct event {
    uint64_t device_ns, duration;
    int64_t converted; /* trace time of the start */
};

typedef struct state state;
struct state {
    tk_clock_graph *graph;
    event *events;
    size_t n, cap;
    uint64_t gpu_events, failed;
    tk_inflater *inflater;
    bool oom;
};

static bool on_packet(void *ctx, const uint8_t *data, size_t len, uint64_t offset);

static void on_snapshot(state *s, uint32_t seq, pb_bytes b)
{
    perfetto_protos_ClockSnapshot_view v;
    if (!perfetto_protos_ClockSnapshot_decode(&v, b.data, b.size))
        return;
    tk_snapshot_clock clocks[MAX_SNAPSHOT_CLOCKS];
    size_t n = 0;
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f) && n < MAX_SNAPSHOT_CLOCKS) {
        if (f.id != perfetto_protos_ClockSnapshot_FIELD_clocks || f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_ClockSnapshot_Clock_view c;
        if (!perfetto_protos_ClockSnapshot_Clock_decode(&c, f.data, (size_t)f.value))
            continue;
        clocks[n++] = (tk_snapshot_clock){
            .clock_id = c.clock_id,
            .timestamp = c.timestamp,
            .unit_multiplier_ns = c.unit_multiplier_ns,
            .is_incremental = c.is_incremental,
        };
    }
    const char *reason = NULL;
    tk_clock_graph_add_clock_snapshot(
        s->graph, seq, v.has_primary_trace_clock ? v.primary_trace_clock : 0, clocks, n, &reason);
}

static void on_gpu_event(state *s, const perfetto_protos_TracePacket_view *p)
{
    perfetto_protos_GpuRenderStageEvent_view v;
    if (!perfetto_protos_GpuRenderStageEvent_decode(&v, p->gpu_render_stage_event.data,
                                                    p->gpu_render_stage_event.size))
        return;
    s->gpu_events++;
    if (!p->has_timestamp_clock_id || p->timestamp_clock_id < 128)
        return; /* not on a device clock: nothing to measure */
    int64_t conv;
    /* Converted when read, as trace_processor does. */
    if (!tk_clock_graph_to_trace_time(s->graph, p->timestamp_clock_id, (int64_t)p->timestamp,
                                      &conv)) {
        s->failed++;
        return;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        event *e = realloc(s->events, cap * sizeof *e);
        if (!e) {
            s->oom = true;
            return;
        }
        s->events = e;
        s->cap = cap;
    }
    s->events[s->n++] = (event){ p->timestamp, v.duration, conv };
}

static bool on_packet(void *ctx, const uint8_t *data, size_t len, uint64_t offset)
{
    state *s = ctx;
    perfetto_protos_TracePacket_view p;
    if (!perfetto_protos_TracePacket_decode(&p, data, len))
        return false;
    if (p.has_compressed_packets) {
        if (!s->inflater)
            s->inflater = tk_inflater_new(0);
        if (!s->inflater ||
            tk_inflate_packets(s->inflater, p.compressed_packets.data, p.compressed_packets.size,
                               offset, on_packet, s, NULL) != TK_READ_OK)
            return false;
    }
    if (p.has_clock_snapshot)
        on_snapshot(s, p.trusted_packet_sequence_id, p.clock_snapshot);
    if (p.has_gpu_render_stage_event)
        on_gpu_event(s, &p);
    return !s->oom;
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fault_truth TRUTH_FILE TRACE\n");
        return 2;
    }
    fm_config cfg;
    fm_counters counters;
    if (!fm_truth_read(argv[1], &cfg, &counters)) {
        fprintf(stderr, "fault_truth: %s: cannot read the truth file\n", argv[1]);
        return 2;
    }
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "fault_truth: %s: %s\n", argv[2], strerror(errno));
        return 2;
    }
    tk_clock_limits limits;
    tk_clock_limits_default(&limits);
    state s = { .graph = tk_clock_graph_new(&limits) };
    tk_reader reader;
    tk_reader_init(&reader, NULL);
    tk_read_status st =
        s.graph ? tk_reader_read_fd(&reader, fd, on_packet, &s, NULL, NULL) : TK_READ_ERR_NOMEM;
    close(fd);
    if (st != TK_READ_OK) {
        fprintf(stderr, "fault_truth: %s: %s\n", argv[2],
                s.oom ? "out of memory" : tk_reader_error(&reader));
        return 2;
    }
    tk_reader_free(&reader);

    /* MONOTONIC -> trace time: constant without suspend; taken once from the
    * trace's own snapshots, at the fault layer's start. */
    int64_t mono_to_trace = 0;
    bool have_offset = false;
    if (s.n) {
        int64_t t;
        have_offset =
            tk_clock_graph_to_trace_time(s.graph, TK_CLOCK_MONOTONIC, (int64_t)cfg.t0_ns, &t);
        mono_to_trace = t - (int64_t)cfg.t0_ns;
    }
    if (s.n && !have_offset) {
        fprintf(stderr, "fault_truth: %s: no path from MONOTONIC to the trace clock\n", argv[2]);
        return 2;
    }

    int64_t max_abs = 0, min_err = INT64_MAX, max_err = INT64_MIN, max_start = 0;
    uint64_t worst_duration = 0, longest = 0;
    double sum_abs = 0;
    for (size_t i = 0; i < s.n; i++) {
        const event *e = &s.events[i];
        int64_t hint = e->converted - mono_to_trace;
        int64_t t_start = (int64_t)fm_inverse(&cfg, e->device_ns, (uint64_t)hint) + mono_to_trace;
        int64_t t_end =
            (int64_t)fm_inverse(&cfg, e->device_ns + e->duration, (uint64_t)hint + e->duration) +
            mono_to_trace;
        const int64_t errs[2] = { e->converted - t_start,
                                  e->converted + (int64_t)e->duration - t_end };
        if (abs64(errs[0]) > max_start)
            max_start = abs64(errs[0]);
        if (e->duration > longest)
            longest = e->duration;
        for (int k = 0; k < 2; k++) {
            if (abs64(errs[k]) > max_abs) {
                max_abs = abs64(errs[k]);
                worst_duration = e->duration;
            }
            if (errs[k] < min_err)
                min_err = errs[k];
            if (errs[k] > max_err)
                max_err = errs[k];
            sum_abs += (double)abs64(errs[k]);
        }
    }
    if (!s.n)
        min_err = max_err = 0;
    printf("fault_truth: events=%" PRIu64 " converted=%zu failed=%" PRIu64 " max_error_ns=%" PRId64
           " min_error_ns=%" PRId64 " max_signed_error_ns=%" PRId64
           " mean_abs_error_ns=%.1f query_values=%" PRIu64 " calibrations=%" PRIu64
           " calibration_failures=%" PRIu64 " max_start_error_ns=%" PRId64
           " worst_event_duration_ns=%" PRIu64 " longest_event_ns=%" PRIu64 "\n",
           s.gpu_events, s.n, s.failed, max_abs, min_err, max_err,
           s.n ? sum_abs / (2.0 * (double)s.n) : 0.0, counters.query_values, counters.calibrations,
           counters.calibration_failures, max_start, worst_duration, longest);
    free(s.events);
    tk_inflater_free(s.inflater);
    tk_clock_graph_free(s.graph);
    return 0;
}
