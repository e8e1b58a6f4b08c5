/* SPDX-License-Identifier: MIT */
/* tk_frames.c — see tk_frames.h. */
#include "toolkit/tk_frames.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_map.h"

/* Field numbers (Perfetto's, as in our protos/perfetto subset). */
enum {
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_PARENT_UUID = 5,
    PD_PID = 1,
    TE_DEBUG_ANNOTATIONS = 4,
    TE_TYPE = 9,
    TE_TRACK_UUID = 11,
    DA_UINT_VALUE = 3,
    DA_INT_VALUE = 4,
    DA_NAME = 10,
    TYPE_SLICE_BEGIN = 1,
    TYPE_SLICE_END = 2,
};

/* Histogram buckets: bucket b holds values in [1.01^b, 1.01^(b+1)) ns;
 * the last one everything from 1.01^(HIST-1) ns (about 2.5 hours) on. */
#define HIST       3000
#define HIST_RATIO 1.01
/* Process descriptors remembered (for a track's pid). */
#define MAX_PROCESSES 4096u

typedef struct series {
    double *exact; /* the first TK_FRAMES_EXACT values, in frame order */
    size_t n;
    uint64_t count;
    double sum, max;
    uint32_t *hist; /* once count passed TK_FRAMES_EXACT */
} series;

typedef struct track {
    uint64_t uuid, parent;
    char name[64];
    bool open, has_gpu;
    int64_t begin_ts;
    uint64_t frame_number, gpu_ns;
    uint64_t frames, first_frame, last_frame, unmatched;
    series interval, gpu;
    /* Past TK_FRAMES_EXACT intervals: thresholds fixed from those, and the
     * stutters and runs counted from there on. */
    bool frozen;
    double stutter_threshold, slow_threshold;
    uint64_t late_stutters, run, late_longest;
    tk_frames_point *points;
    size_t n_points;
} track;

struct tk_frames {
    double budget_ms;
    bool keep_points;
    track tracks[TK_FRAMES_MAX_TRACKS];
    size_t n_tracks;
    size_t last_hit;
    uint64_t left_out;
    tk_map processes; /* process track uuid -> pid */
};

tk_frames *tk_frames_new(double budget_ms, bool keep_points)
{
    tk_frames *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->budget_ms = budget_ms;
    f->keep_points = keep_points;
    tk_map_init(&f->processes);
    return f;
}

static void series_free(series *s)
{
    free(s->exact);
    free(s->hist);
}

void tk_frames_free(tk_frames *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_tracks; i++) {
        series_free(&f->tracks[i].interval);
        series_free(&f->tracks[i].gpu);
        free(f->tracks[i].points);
    }
    tk_map_free(&f->processes);
    free(f);
}

/* ---- values ------------------------------------------------------------------------- */

static size_t bucket_of(double ms)
{
    const double ns = ms * 1e6;
    if (!(ns >= 1.0))
        return 0;
    const double b = log(ns) / log(HIST_RATIO);
    return b >= HIST - 1 ? HIST - 1 : (size_t)b;
}

static double bucket_value(size_t b)
{
    return pow(HIST_RATIO, (double)b + 0.5) / 1e6;
}

/* False when the histogram could not be had (the value is then only in
 * count, sum and max). */
static bool series_add(series *s, double ms)
{
    s->count++;
    s->sum += ms;
    if (s->count == 1 || ms > s->max)
        s->max = ms;
    if (s->n < TK_FRAMES_EXACT && !s->hist) {
        if (!s->exact && !(s->exact = malloc(TK_FRAMES_EXACT * sizeof *s->exact)))
            return false;
        s->exact[s->n++] = ms;
        return true;
    }
    if (!s->hist) {
        if (!(s->hist = calloc(HIST, sizeof *s->hist)))
            return false;
        for (size_t i = 0; i < s->n; i++)
            s->hist[bucket_of(s->exact[i])]++;
    }
    s->hist[bucket_of(ms)]++;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: index ceil(p * n) - 1 of the sorted values. */
static size_t rank(double p, uint64_t n)
{
    double r = ceil(p * (double)n);
    return r < 1 ? 0 : (size_t)r - 1;
}

static double hist_quantile(const uint32_t *hist, uint64_t n, double p)
{
    const uint64_t want = rank(p, n) + 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < HIST; b++) {
        seen += hist[b];
        if (seen >= want)
            return bucket_value(b);
    }
    return bucket_value(HIST - 1);
}

static void series_dist(const series *s, tk_frames_dist *d)
{
    memset(d, 0, sizeof *d);
    d->count = s->count;
    if (!s->count)
        return;
    d->mean_ms = s->sum / (double)s->count;
    d->max_ms = s->max;
    d->exact = !s->hist;
    if (s->hist) {
        d->p50_ms = hist_quantile(s->hist, s->count, 0.50);
        d->p90_ms = hist_quantile(s->hist, s->count, 0.90);
        d->p99_ms = hist_quantile(s->hist, s->count, 0.99);
        return;
    }
    double *sorted = malloc(s->n * sizeof *sorted);
    if (!sorted)
        return;
    memcpy(sorted, s->exact, s->n * sizeof *sorted);
    qsort(sorted, s->n, sizeof *sorted, cmp_double);
    d->p50_ms = sorted[rank(0.50, s->n)];
    d->p90_ms = sorted[rank(0.90, s->n)];
    d->p99_ms = sorted[rank(0.99, s->n)];
    free(sorted);
}

static double median_of(const double *v, size_t n)
{
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted || !n) {
        free(sorted);
        return 0;
    }
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    const double m = sorted[rank(0.50, n)];
    free(sorted);
    return m;
}

/* Stutters and the longest run over `slow` among the kept intervals; the
 * run still going at their end in *trailing. */
static void judge_prefix(const series *s, double stutter, double slow, uint64_t *stutters,
                         uint64_t *longest, uint64_t *trailing)
{
    uint64_t run = 0;
    *stutters = *longest = 0;
    for (size_t i = 0; i < s->n; i++) {
        *stutters += s->exact[i] > stutter;
        run = s->exact[i] > slow ? run + 1 : 0;
        if (run > *longest)
            *longest = run;
    }
    *trailing = run;
}

static void add_interval(tk_frames *f, track *t, double ms)
{
    if (!t->frozen && t->interval.n == TK_FRAMES_EXACT) {
        /* From here on judged against the first intervals' median. */
        t->frozen = true;
        t->stutter_threshold = 2 * median_of(t->interval.exact, t->interval.n);
        t->slow_threshold = f->budget_ms >= 0 ? f->budget_ms : t->stutter_threshold;
        uint64_t stutters, longest;
        judge_prefix(&t->interval, t->stutter_threshold, t->slow_threshold, &stutters, &longest,
                     &t->run);
    }
    if (t->frozen) {
        t->late_stutters += ms > t->stutter_threshold;
        t->run = ms > t->slow_threshold ? t->run + 1 : 0;
        if (t->run > t->late_longest)
            t->late_longest = t->run;
    }
    series_add(&t->interval, ms);
}

/* ---- packets ------------------------------------------------------------------------ */

static bool is_frames_name(const uint8_t *name, size_t len)
{
    static const char base[] = "Frames";
    const size_t n = sizeof base - 1;
    if (len < n || memcmp(name, base, n) != 0)
        return false;
    if (len == n)
        return true;
    if (len < n + 3 || memcmp(name + n, " #", 2) != 0)
        return false;
    for (size_t i = n + 2; i < len; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    return true;
}

void tk_frames_descriptor(tk_frames *f, const uint8_t *data, size_t len)
{
    pb_reader r;
    pb_field fd;
    uint64_t uuid = 0, parent = 0;
    int64_t pid = -1;
    pb_bytes name = { 0 };
    bool has_name = false;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &fd)) {
        if (fd.id == TD_UUID && fd.wire_type == PB_WIRE_VARINT) {
            uuid = fd.value;
        } else if (fd.id == TD_PARENT_UUID && fd.wire_type == PB_WIRE_VARINT) {
            parent = fd.value;
        } else if (fd.id == TD_NAME && fd.wire_type == PB_WIRE_LEN) {
            name = pb_field_bytes(&fd);
            has_name = true;
        } else if (fd.id == TD_PROCESS && fd.wire_type == PB_WIRE_LEN) {
            pb_bytes b = pb_field_bytes(&fd);
            pb_reader pr;
            pb_field pf;
            pb_reader_init(&pr, b.data, b.size);
            while (pb_reader_next(&pr, &pf))
                if (pf.id == PD_PID && pf.wire_type == PB_WIRE_VARINT)
                    pid = (int32_t)pf.value;
        }
    }
    if (r.err != PB_OK || !uuid)
        return;
    if (pid >= 0 && f->processes.len < MAX_PROCESSES) {
        bool ins;
        uint64_t *v = tk_map_insert(&f->processes, uuid, (uint64_t)pid, &ins);
        if (v)
            *v = (uint64_t)pid;
    }
    if (!has_name || !is_frames_name(name.data, name.size))
        return;
    for (size_t i = 0; i < f->n_tracks; i++)
        if (f->tracks[i].uuid == uuid)
            return; /* described again (a sequence restarted) */
    if (f->n_tracks == TK_FRAMES_MAX_TRACKS) {
        f->left_out++;
        return;
    }
    track *t = &f->tracks[f->n_tracks++];
    memset(t, 0, sizeof *t);
    t->uuid = uuid;
    t->parent = parent;
    memcpy(t->name, name.data, name.size < sizeof t->name ? name.size : sizeof t->name - 1);
}

static track *find_track(tk_frames *f, uint64_t uuid)
{
    if (f->last_hit < f->n_tracks && f->tracks[f->last_hit].uuid == uuid)
        return &f->tracks[f->last_hit];
    for (size_t i = 0; i < f->n_tracks; i++) {
        if (f->tracks[i].uuid == uuid) {
            f->last_hit = i;
            return &f->tracks[i];
        }
    }
    return NULL;
}

/* frame_number and gpu_time_ns among the annotations of a BEGIN. */
static void read_annotation(track *t, pb_bytes b)
{
    pb_reader r;
    pb_field fd;
    pb_bytes name = { 0 };
    uint64_t value = 0;
    bool has_value = false;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &fd)) {
        if (fd.id == DA_NAME && fd.wire_type == PB_WIRE_LEN) {
            name = pb_field_bytes(&fd);
        } else if ((fd.id == DA_UINT_VALUE || fd.id == DA_INT_VALUE) &&
                   fd.wire_type == PB_WIRE_VARINT) {
            value = fd.value;
            has_value = true;
        }
    }
    if (r.err != PB_OK || !has_value)
        return;
    if (name.size == 12 && memcmp(name.data, "frame_number", 12) == 0) {
        t->frame_number = value;
    } else if (name.size == 11 && memcmp(name.data, "gpu_time_ns", 11) == 0) {
        t->gpu_ns = value;
        t->has_gpu = true;
    }
}

static void end_frame(tk_frames *f, track *t, int64_t ts)
{
    const double dur_ms = ts > t->begin_ts ? (double)(ts - t->begin_ts) / 1e6 : 0;
    const bool has_interval = t->frame_number > 1;
    if (!t->frames || t->frame_number < t->first_frame)
        t->first_frame = t->frame_number;
    if (t->frame_number > t->last_frame)
        t->last_frame = t->frame_number;
    t->frames++;
    if (has_interval)
        add_interval(f, t, dur_ms);
    if (t->has_gpu)
        series_add(&t->gpu, (double)t->gpu_ns / 1e6);
    if (f->keep_points && t->n_points < TK_FRAMES_EXACT) {
        if (!t->points && !(t->points = malloc(TK_FRAMES_EXACT * sizeof *t->points)))
            return;
        t->points[t->n_points++] = (tk_frames_point){
            .t_ns = t->begin_ts,
            .interval_ms = has_interval ? (float)dur_ms : -1.0f,
            .gpu_ms = t->has_gpu ? (float)((double)t->gpu_ns / 1e6) : -1.0f,
        };
    }
}

void tk_frames_event(tk_frames *f, const uint8_t *data, size_t len, int64_t ts)
{
    if (!f->n_tracks)
        return;
    pb_reader r;
    pb_field fd;
    uint64_t type = 0, uuid = 0;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &fd)) {
        if (fd.id == TE_TYPE && fd.wire_type == PB_WIRE_VARINT)
            type = fd.value;
        else if (fd.id == TE_TRACK_UUID && fd.wire_type == PB_WIRE_VARINT)
            uuid = fd.value;
    }
    if (r.err != PB_OK || (type != TYPE_SLICE_BEGIN && type != TYPE_SLICE_END))
        return;
    track *t = find_track(f, uuid);
    if (!t)
        return;
    if (type == TYPE_SLICE_END) {
        if (!t->open) {
            t->unmatched++;
            return;
        }
        t->open = false;
        end_frame(f, t, ts);
        return;
    }
    if (t->open)
        t->unmatched++; /* a BEGIN whose END never came */
    t->open = true;
    t->begin_ts = ts;
    t->frame_number = 0;
    t->has_gpu = false;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &fd))
        if (fd.id == TE_DEBUG_ANNOTATIONS && fd.wire_type == PB_WIRE_LEN)
            read_annotation(t, pb_field_bytes(&fd));
}

/* ---- results ------------------------------------------------------------------------ */

static void finish_track(tk_frames *f, track *t, tk_frames_track *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->name, t->name, sizeof out->name);
    const uint64_t *pid = tk_map_find(&f->processes, t->parent);
    out->pid = pid ? (int64_t)*pid : -1;
    out->frames = t->frames;
    out->first_frame = t->first_frame;
    out->last_frame = t->last_frame;
    out->unmatched = t->unmatched + (t->open ? 1 : 0);
    series_dist(&t->interval, &out->interval);
    series_dist(&t->gpu, &out->gpu_time);
    double stutter =
        t->frozen ? t->stutter_threshold : 2 * median_of(t->interval.exact, t->interval.n);
    double slow = t->frozen ? t->slow_threshold : f->budget_ms >= 0 ? f->budget_ms : stutter;
    uint64_t stutters = 0, longest = 0, trailing = 0;
    if (t->interval.n)
        judge_prefix(&t->interval, stutter, slow, &stutters, &longest, &trailing);
    out->stutters = stutters + t->late_stutters;
    out->longest_slow_run = longest > t->late_longest ? longest : t->late_longest;
    out->stutter_threshold_ms = stutter;
    out->slow_threshold_ms = slow;
    out->points = t->points;
    out->n_points = t->n_points;
    t->points = NULL; /* moved */
    t->n_points = 0;
}

void tk_frames_finish(tk_frames *f, tk_frames_report *out)
{
    memset(out, 0, sizeof *out);
    out->tracks_left_out = f->left_out;
    if (!f->n_tracks)
        return;
    out->tracks = calloc(f->n_tracks, sizeof *out->tracks);
    if (!out->tracks)
        return;
    for (size_t i = 0; i < f->n_tracks; i++)
        finish_track(f, &f->tracks[i], &out->tracks[i]);
    out->n_tracks = f->n_tracks;
}

void tk_frames_report_free(tk_frames_report *r)
{
    for (size_t i = 0; i < r->n_tracks; i++)
        free(r->tracks[i].points);
    free(r->tracks);
    memset(r, 0, sizeof *r);
}
