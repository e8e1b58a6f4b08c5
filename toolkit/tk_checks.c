/* SPDX-License-Identifier: MIT */
/* The library's entry points: default options and the whole pipeline
 * (tokenizer, import, verdict) over a buffer or a file descriptor. The
 * import is tk_import*.c, the GPU matching tk_match.c, the verdict
 * tk_verdict*.c; tk_checks_internal.h is what they share. */
#include "toolkit/tk_checks.h"

#include <string.h>

#include "toolkit/tk_checks_internal.h"

void tk_check_options_default(tk_check_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_error_ns = 1000000;            /* 1 ms */
    o->max_drift_ppm = 500;               /* beyond any NTP slew */
    o->max_snapshot_gap_ns = 20000000000; /* twice traced's 10 s period */
    o->ooo_window_ns = 5000000000;        /* default file_write_period_ms */
    o->max_submit_latency_ns = 10000000000;
    o->submit_tolerance_ns = 0;
    o->expect_gpu_events = -1;
    o->max_packet_size = TK_READER_DEFAULT_MAX_PACKET;
    tk_inflate_limits_default(&o->inflate_limits);
    o->block_size = TK_READER_DEFAULT_BLOCK;
    o->max_sequences = 1u << 16;
    tk_clock_limits_default(&o->clock_limits);
    o->max_frame_p99_ms = -1;
    o->max_gpu_frame_p99_ms = -1;
    o->max_stutters = -1;
    o->frame_budget_ms = -1;
}

bool tk_check_options_want_frames(const tk_check_options *o)
{
    return o->frames || o->max_frame_p99_ms >= 0 || o->max_gpu_frame_p99_ms >= 0 ||
           o->max_stutters >= 0;
}

/* ---- drivers -------------------------------------------------------------------------- */

static tk_result *finish_with_reader(tk_checker *c, tk_reader *rd, tk_read_status st)
{
    if (st != TK_READ_OK && st != TK_READ_ERR_ABORTED)
        tk_checker_input_error(c, tk_reader_error(rd));
    tk_checker_set_bytes(c, rd->offset + rd->len);
    tk_reader_free(rd);
    return tk_checker_finish(c);
}

tk_result *tk_check_buffer(const void *data, size_t len, const tk_check_options *o)
{
    tk_checker *c = tk_checker_new(o);
    if (!c)
        return NULL;
    tk_reader rd;
    tk_reader_config cfg = { .block_size = c->o.block_size,
                             .max_packet_size = c->o.max_packet_size };
    tk_reader_init(&rd, &cfg);
    tk_read_status st = tk_reader_parse_buffer(&rd, data, len, tk_checker_packet_cb, c);
    return finish_with_reader(c, &rd, st);
}

tk_result *tk_check_fd(int fd, const tk_check_options *o, tk_progress_cb progress, void *pctx)
{
    tk_checker *c = tk_checker_new(o);
    if (!c)
        return NULL;
    tk_reader rd;
    tk_reader_config cfg = { .block_size = c->o.block_size,
                             .max_packet_size = c->o.max_packet_size };
    tk_reader_init(&rd, &cfg);
    tk_read_status st = tk_reader_read_fd(&rd, fd, tk_checker_packet_cb, c, progress, pctx);
    return finish_with_reader(c, &rd, st);
}
