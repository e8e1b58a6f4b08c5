/* SPDX-License-Identifier: MIT */
/* Frame statistics (gputrace-check --frames; prefix tk_frames_): the frames
 * tracks our layer writes (docs/layer.md, "Frames"), read from any trace
 * that carries them, and per track the distribution of GPU frame time and
 * of frame interval, the stutters and the longest run of slow frames.
 *
 * A frames track is a TrackDescriptor named "Frames" or "Frames #N"; each
 * frame a TYPE_SLICE_BEGIN / TYPE_SLICE_END pair on it whose BEGIN carries
 * the debug annotations frame_number and, when the layer had the frame's
 * GPU work, gpu_time_ns. A frame's interval is its slice's duration
 * (present to present), for frames after the first of their stream
 * (frame_number > 1); its GPU time is gpu_time_ns. The descriptor must
 * come before the track's events, as the layer writes them.
 *
 * Memory is bounded, not proportional to the trace: at most
 * TK_FRAMES_MAX_TRACKS tracks (more are counted and left out), and per
 * track every frame's values up to TK_FRAMES_EXACT frames, which makes
 * every figure exact. Beyond that the quantiles come from a histogram with
 * buckets 1 % wide (each percentile within 1 % of the exact value), and
 * stutters and slow runs are judged against twice the median of the first
 * TK_FRAMES_EXACT intervals; mean and maximum stay exact. */
#ifndef TK_FRAMES_H
#define TK_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TK_FRAMES_MAX_TRACKS 16u
#define TK_FRAMES_EXACT      65536u

/* One distribution, in milliseconds; count 0: no value. Percentiles are
 * nearest-rank: the smallest value with at least p % of them at or below. */
typedef struct tk_frames_dist {
    uint64_t count;
    double mean_ms, p50_ms, p90_ms, p99_ms, max_ms;
    bool exact;
} tk_frames_dist;

/* A frame for --plot: its start on the trace clock and its values (ms; a
 * negative one is absent). */
typedef struct tk_frames_point {
    int64_t t_ns;
    float interval_ms, gpu_ms;
} tk_frames_point;

typedef struct tk_frames_track {
    char name[64]; /* the track's name */
    int64_t pid;   /* its parent's ProcessDescriptor pid, -1 unknown */
    uint64_t frames;
    uint64_t first_frame, last_frame; /* frame_number */
    tk_frames_dist interval, gpu_time;
    uint64_t stutters;           /* intervals over stutter_threshold_ms */
    double stutter_threshold_ms; /* twice the median interval */
    uint64_t longest_slow_run;   /* consecutive frames with an interval over: */
    double slow_threshold_ms;    /* --frame-budget-ms, else the stutter threshold */
    uint64_t unmatched;          /* BEGIN without END or END without BEGIN */
    tk_frames_point *points;     /* with keep_points: the first TK_FRAMES_EXACT frames */
    size_t n_points;
} tk_frames_track;

typedef struct tk_frames_report {
    tk_frames_track *tracks;
    size_t n_tracks;
    uint64_t tracks_left_out; /* beyond TK_FRAMES_MAX_TRACKS */
} tk_frames_report;

typedef struct tk_frames tk_frames;

/* `budget_ms` < 0: slow runs are judged against the stutter threshold. */
tk_frames *tk_frames_new(double budget_ms, bool keep_points);
void tk_frames_free(tk_frames *f);

/* TracePacket.track_descriptor (a TrackDescriptor's bytes). */
void tk_frames_descriptor(tk_frames *f, const uint8_t *data, size_t len);
/* TracePacket.track_event (a TrackEvent's bytes) at `ts` on the trace clock. */
void tk_frames_event(tk_frames *f, const uint8_t *data, size_t len, int64_t ts);

/* The statistics; `f` stays valid (and must still be freed). */
void tk_frames_finish(tk_frames *f, tk_frames_report *out);
void tk_frames_report_free(tk_frames_report *r);

#endif /* TK_FRAMES_H */
