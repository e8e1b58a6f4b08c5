/* SPDX-License-Identifier: MIT */
/* snapshot_placement.c — see snapshot_placement.h. */
#include "layer/snapshot_placement.h"

#include <string.h>

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* Nearest integer (no libm in the layer for one function). */
static int64_t round_to_int(double v)
{
    return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

void sp_init(sp_state *st, uint64_t budget_ns)
{
    memset(st, 0, sizeof *st);
    st->budget_ns = budget_ns ? budget_ns : 1;
}

static const sp_point *nth_newest(const sp_model *m, uint32_t back)
{
    return &m->readings[(m->newest + SP_HISTORY - back) % SP_HISTORY];
}

void sp_model_update(sp_model *m, const sp_point *reading, uint64_t uncertainty_ns)
{
    m->newest = m->count ? (m->newest + 1) % SP_HISTORY : 0;
    m->readings[m->newest] = *reading;
    m->uncertainty_ns[m->newest] = uncertainty_ns;
    if (m->count < SP_HISTORY)
        m->count++;
    m->reading = *reading;
    m->valid = true;
    m->drift = 0.0;
    m->raw_rate = 1.0;
    if (m->count < 2)
        return;
    /* The newest reading at least a baseline older, or the oldest. */
    uint32_t back = 1;
    while (back + 1 < m->count &&
           reading->monotonic_ns - nth_newest(m, back)->monotonic_ns < SP_DRIFT_BASELINE_NS)
        back++;
    const sp_point *old = nth_newest(m, back);
    const double host = (double)(reading->monotonic_ns - old->monotonic_ns);
    const double device = (double)(reading->device_ns - old->device_ns);
    if (back >= 2) {
        /* The reading before this one against the line from the baseline's
         * reading to this one: how far readings scatter about a line, with
         * the drift (however large) taken out. */
        const sp_point *prev = nth_newest(m, 1);
        const double along = (double)(prev->device_ns - old->device_ns) / device;
        const double line =
            (double)sp_offset(old) + along * (double)(sp_offset(reading) - sp_offset(old));
        const double off = (double)sp_offset(prev) - line;
        m->scatter_ns[m->scatter_count % SP_SCATTER] = (uint64_t)(off < 0 ? -off : off);
        m->scatter_count++;
    }
    const double drift = (device - host) / host;
    /* What the two readings' noise could fake (as they scatter once that
     * is known, else as they report). */
    const double noise =
        m->scatter_count >= SP_SCATTER_MIN
            ? 2.0 * (double)sp_uncertainty(m, reading->device_ns) / host
            : (double)(uncertainty_ns +
                       m->uncertainty_ns[(m->newest + SP_HISTORY - back) % SP_HISTORY]) /
                  host;
    m->drift = (drift < 0 ? -drift : drift) > noise ? drift : 0.0;
    m->raw_rate = (double)(reading->monotonic_raw_ns - old->monotonic_raw_ns) / host;
}

/* The model's point at `device_ns` on the line through `from` with `rate`
 * MONOTONIC ns per device ns. */
static sp_point on_line(const sp_model *m, const sp_point *from, uint64_t device_ns, double rate)
{
    const sp_point *r = &m->reading;
    const int64_t dm = round_to_int((double)(int64_t)(device_ns - from->device_ns) * rate);
    sp_point p = { .device_ns = device_ns, .monotonic_ns = from->monotonic_ns + (uint64_t)dm };
    p.boottime_ns = p.monotonic_ns + (r->boottime_ns - r->monotonic_ns);
    p.monotonic_raw_ns =
        r->monotonic_raw_ns +
        (uint64_t)round_to_int((double)(int64_t)(p.monotonic_ns - r->monotonic_ns) * m->raw_rate);
    return p;
}

/* The kept reading nearest to `device_ns` (ties: the newer). */
static uint32_t nearest(const sp_model *m, uint64_t device_ns)
{
    uint32_t best = 0;
    uint64_t best_distance = UINT64_MAX;
    for (uint32_t back = 0; back < m->count; back++) {
        const sp_point *r = nth_newest(m, back);
        const uint64_t d = magnitude((int64_t)(device_ns - r->device_ns));
        if (d < best_distance) {
            best = back;
            best_distance = d;
        }
        if (r->device_ns < device_ns)
            break; /* older ones are farther still */
    }
    return best;
}

sp_point sp_extrapolate(const sp_model *m, uint64_t device_ns)
{
    /* From the nearest reading with the drift: the line through two
     * neighbouring readings would carry their noise into its slope (two
     * bracket readings a few ms apart, +-300 us each, give a slope of
     * percent), while the drift comes from a baseline of a second. */
    return on_line(m, nth_newest(m, nearest(m, device_ns)), device_ns, 1.0 / (1.0 + m->drift));
}

uint64_t sp_uncertainty(const sp_model *m, uint64_t device_ns)
{
    if (m->scatter_count >= SP_SCATTER_MIN) {
        const uint32_t n = m->scatter_count < SP_SCATTER ? m->scatter_count : SP_SCATTER;
        uint64_t worst = 0;
        for (uint32_t i = 0; i < n; i++)
            worst = m->scatter_ns[i] > worst ? m->scatter_ns[i] : worst;
        return worst;
    }
    return m->count
               ? m->uncertainty_ns[(m->newest + SP_HISTORY - nearest(m, device_ns)) % SP_HISTORY]
               : 0;
}

uint64_t sp_device_at(const sp_model *m, uint64_t boottime_ns)
{
    /* Near the newest reading in practice (submissions of the last few
     * ms), so its line serves. */
    const sp_point *r = &m->reading;
    const uint64_t monotonic = boottime_ns - (r->boottime_ns - r->monotonic_ns);
    const double host = (double)(int64_t)(monotonic - r->monotonic_ns);
    const int64_t device = (int64_t)r->device_ns + round_to_int(host * (1.0 + m->drift));
    return device > 0 ? (uint64_t)device : 0;
}

/* A snapshot after `prev` must move every clock forward, or a trace
 * processor stops using the device clock (or rejects BOOTTIME, its trace
 * clock). */
static bool moves_forward(const sp_point *prev, const sp_point *p)
{
    return p->device_ns > prev->device_ns && p->boottime_ns > prev->boottime_ns &&
           p->monotonic_ns > prev->monotonic_ns && p->monotonic_raw_ns > prev->monotonic_raw_ns;
}

/* Whether a snapshot at device instant `t` (with offset step `step`
 * against the published one) keeps everything written so far (ending by
 * `written_end`) apart from everything after it (starting at `first_new`
 * or later): the later work is drawn moved by `step`. */
static bool keeps_apart(uint64_t written_end, uint64_t first_new, int64_t step)
{
    if (step >= 0 || !written_end)
        return true;
    return first_new > written_end && first_new - written_end >= magnitude(step);
}

/* The largest error of the published offset over [start, end] against
 * the model (linear in between, so the larger of the two ends). */
static uint64_t published_error(const sp_state *st, const sp_model *m, uint64_t start, uint64_t end)
{
    const int64_t published = sp_offset(&st->published);
    const sp_point at_start = sp_extrapolate(m, start), at_end = sp_extrapolate(m, end);
    const uint64_t error_start = magnitude(sp_offset(&at_start) - published);
    const uint64_t error_end = magnitude(sp_offset(&at_end) - published);
    return error_start > error_end ? error_start : error_end;
}

/* How far the model and the published snapshot may disagree from noise
 * alone: their readings' uncertainties. */
static uint64_t noise_at(const sp_model *m, uint64_t device_ns)
{
    /* The published offset came from the same readings: their noise
     * twice (as it stands now, not as it was believed when published). */
    return 2 * sp_uncertainty(m, device_ns);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

bool sp_wants(sp_state *st, const sp_model *m, uint64_t start, uint64_t end)
{
    if (!m->valid)
        return false;
    if (!st->have_published)
        return true;
    if (!st->reading_unpublished && m->drift == 0.0)
        return false; /* nothing can have moved */
    end = end > start ? end : start;
    const uint64_t error = published_error(st, m, start, end);
    const uint64_t noise = noise_at(m, start + (end - start) / 2);
    if (st->reading_unpublished && error <= noise) {
        /* The calibration confirms the published offset: a snapshot
         * would only carry noise into the trace (two noisy snapshots a
         * few ms apart read as a large drift). */
        st->reading_unpublished = false;
        return false;
    }
    return error > (st->reading_unpublished ? noise : max_u64(st->budget_ns / 4, noise));
}

enum sp_where sp_before_submission(const sp_state *st, const sp_model *m, const sp_window *w,
                                   sp_point *out)
{
    if (!m->valid)
        return SP_KEEP;
    if (!st->have_published) {
        *out = m->reading;
        return SP_AT_READING;
    }
    const uint64_t start = w->next_start;
    const uint64_t end = w->next_end > start ? w->next_end : start;
    const uint64_t mid = start + (end - start) / 2;
    const int64_t published = sp_offset(&st->published);
    const uint64_t error = published_error(st, m, start, end);
    const uint64_t noise = noise_at(m, mid);
    if (error <= (st->reading_unpublished ? noise : max_u64(st->budget_ns / 4, noise)))
        return SP_KEEP;

    /* As late as is safe: nearest the reading, which is newer still. */
    const uint64_t gap_end = w->horizon < start ? w->horizon : start;
    /* The model's clocks at that instant, on the line the readings draw:
     * every snapshot says what the clocks read at one instant, so readers
     * that measure drift or bound errors from snapshots see the clock's
     * own drift between them. (An offset for the middle of the submission
     * would halve its worst error, but step off that line by the drift
     * over half of it at every snapshot: under load, submissions of a
     * second, 10 us steps 1 ms apart that read as 9 000 ppm of drift.) */
    const sp_point p = sp_extrapolate(m, gap_end);
    const int64_t step = sp_offset(&p) - published;
    const uint64_t lowest =
        w->written_end > st->published.device_ns ? w->written_end : st->published.device_ns;
    if (gap_end > lowest && keeps_apart(w->written_end, gap_end, step) &&
        moves_forward(&st->published, &p)) {
        *out = p;
        return SP_IN_GAP;
    }
    /* No safe gap. Waiting costs accuracy; past half the budget the
     * submission (and other unwritten work) is kept whole at least: only
     * its order against work already written may move, by the step. */
    if (error > max_u64(st->budget_ns / 2, noise) && gap_end > st->published.device_ns &&
        moves_forward(&st->published, &p)) {
        *out = p;
        return SP_FORCED;
    }
    return SP_KEEP;
}

enum sp_where sp_at_reading(const sp_state *st, const sp_model *m, uint64_t written_end, bool last,
                            sp_point *out)
{
    if (!m->valid)
        return SP_KEEP;
    const sp_point *r = &m->reading;
    if (!st->have_published) {
        *out = *r;
        return SP_AT_READING;
    }
    if (!st->reading_unpublished || r->device_ns <= written_end)
        return SP_KEEP;
    const int64_t step = sp_offset(r) - sp_offset(&st->published);
    /* Within noise it would only add noise; but the last one closes the
     * trace, so its readers measure the drift over the whole run. */
    if (!last && magnitude(step) <= noise_at(m, r->device_ns))
        return SP_KEEP;
    if (!keeps_apart(written_end, r->device_ns, step) || !moves_forward(&st->published, r))
        return SP_KEEP;
    *out = *r;
    return SP_AT_READING;
}

void sp_published(sp_state *st, const sp_model *m, enum sp_where where, const sp_point *p)
{
    if (where == SP_KEEP)
        return;
    if (st->have_published) {
        const uint64_t step = magnitude(sp_offset(p) - sp_offset(&st->published));
        if (step > st->max_step_ns)
            st->max_step_ns = step;
        if (where == SP_FORCED && step > st->max_forced_step_ns)
            st->max_forced_step_ns = step;
    }
    const uint64_t distance = magnitude((int64_t)(p->device_ns - m->reading.device_ns));
    if (distance > st->max_extrapolation_ns)
        st->max_extrapolation_ns = distance;
    st->published = *p;
    st->have_published = true;
    st->reading_unpublished = false;
    st->count[where]++;
}
