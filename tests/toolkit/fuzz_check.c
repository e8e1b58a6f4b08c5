/* SPDX-License-Identifier: MIT */
/* Fuzz target: the whole gputrace-check pipeline (tokenizer, inflater,
 * packet import, clock graph, checks, JSON/human rendering) on one
 * in-memory trace, frame statistics (tk_frames.c) and their thresholds
 * included. Any crash, sanitizer report or leak is a bug, and so is a
 * clock graph whose path index disagrees with a full search (abort), or
 * frame statistics out of order (p50 <= p90 <= p99 <= max). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "toolkit/tk_checks.h"
#include "toolkit/tk_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tk_check_options o;
    tk_check_options_default(&o);
    o.keep_plot_points = true;
    o.self_check = true;
    o.max_packet_size = 1u << 20;
    /* Small inflate limits keep every run short (the seeds include a
     * decompression bomb). */
    o.inflate_limits.ratio_floor = 1u << 20;
    o.inflate_limits.max_bytes = 64u << 20;
    static const tk_clock_name names[] = { { false, 0, "com.example.gpu" } };
    o.names = names;
    o.n_names = 1;
    o.frames = true;
    o.max_frame_p99_ms = 16.7;
    o.max_stutters = 3;
    tk_result *r = tk_check_buffer(data, size, &o);
    if (!r)
        return 0;
    /* Touch everything a report reads. */
    volatile uint64_t sink = r->packets + r->n_clocks;
    for (size_t i = 0; i < r->n_clocks; i++)
        sink += (uint64_t)r->clocks[i].max_error_ns + r->clocks[i].n_points;
    for (size_t i = 0; i < r->n_violations; i++)
        sink += r->violations[i].message[0];
    for (int s = 0; s < TK_STAT_COUNT; s++)
        sink += (uint64_t)tk_stats_total(&r->stats, (tk_stat_id)s);
    for (size_t i = 0; i < r->frames.n_tracks; i++) {
        const tk_frames_track *t = &r->frames.tracks[i];
        const tk_frames_dist *d[] = { &t->interval, &t->gpu_time };
        for (size_t k = 0; k < 2; k++)
            if (d[k]->count && !(d[k]->p50_ms <= d[k]->p90_ms && d[k]->p90_ms <= d[k]->p99_ms &&
                                 d[k]->p99_ms <= d[k]->max_ms * 1.0101))
                abort();
        sink += t->frames + t->stutters + t->n_points;
    }
    (void)sink;
    (void)tk_result_failed(r, &o);
    static FILE *devnull;
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    if (devnull) {
        tk_file_result f = { .path = "fuzz", .result = r };
        tk_report_json(devnull, &f, 1, &o);
        tk_report_human(devnull, &f, 1, &o, true);
    }
    tk_result_free(r);
    return 0;
}
