/* SPDX-License-Identifier: MIT */
/* gpu_clock.c — see gpu_clock.h. */
#include "layer/gpu_clock.h"
#include "tracing/util/util_time.h"

#include <string.h>
#include <time.h>

__extension__ typedef unsigned __int128 gc_u128;

/* ---- domain ------------------------------------------------------------- */

bool gc_domain_init(gc_domain *d, float period_ns, uint32_t valid_bits)
{
    bool ok = true;
    uint32_t bits;
    memcpy(&bits, &period_ns, sizeof bits);
    uint32_t exponent = (bits >> 23) & 0xff;
    uint64_t mantissa = (bits & 0x7fffff) | (1u << 23);
    /* Zero, subnormal, negative, infinite or NaN: no usable period. */
    if ((bits >> 31) || exponent == 0 || exponent == 0xff) {
        ok = false;
        exponent = 127; /* 1.0 */
        mantissa = 1u << 23;
    }
    /* value = mantissa * 2^(exponent - 150); in 32.32: shift by exponent - 118. */
    int shift = (int)exponent - 118;
    if (shift >= 40) {
        ok = false; /* >= 2^31 ns per tick: absurd */
        shift = 8;  /* 1.0 */
        mantissa = 1u << 23;
    }
    if (shift >= 0) {
        d->period_fp = mantissa << shift;
    } else {
        /* Below 2^-9 ns per tick the value is no longer exact: round. */
        int s = -shift;
        d->period_fp = s >= 64 ? 0 : (mantissa + (UINT64_C(1) << (s - 1))) >> s;
        if (!d->period_fp) {
            ok = false;
            d->period_fp = UINT64_C(1) << 32;
        }
    }
    if (valid_bits == 0 || valid_bits > 64) {
        ok = false;
        valid_bits = 64;
    }
    d->valid_bits = valid_bits;
    return ok;
}

uint64_t gc_ticks_to_ns(const gc_domain *d, uint64_t ticks)
{
    gc_u128 ns = ((gc_u128)ticks * d->period_fp) >> 32;
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

uint64_t gc_extend(const gc_domain *d, uint64_t reference, uint64_t raw)
{
    if (d->valid_bits >= 64)
        return raw;
    const uint64_t mask = (UINT64_C(1) << d->valid_bits) - 1;
    const uint64_t half = UINT64_C(1) << (d->valid_bits - 1);
    raw &= mask;
    uint64_t forward = (raw - (reference & mask)) & mask;
    if (forward < half)
        return reference + forward;
    uint64_t back = (mask + 1) - forward;
    /* Before the reference; at the very start there is nothing to borrow. */
    return back > reference ? raw : reference - back;
}

uint32_t gc_device_valid_bits(const VkQueueFamilyProperties *families, uint32_t count)
{
    uint32_t bits = 64;
    for (uint32_t i = 0; families && i < count; i++) {
        uint32_t b = families[i].timestampValidBits;
        if (b && b < bits)
            bits = b;
    }
    return bits;
}

/* ---- host clocks -------------------------------------------------------- */

uint64_t gc_monotonic_ns(void)
{
    return util_clock_ns(CLOCK_MONOTONIC);
}

uint64_t gc_boottime_ns(void)
{
    return util_clock_ns(CLOCK_BOOTTIME);
}

void gc_read_host_offsets(gc_host_offsets *o)
{
    /* The first attempt always wins (its width is below UINT64_MAX), but
     * an optimizing compiler cannot see that: start from zeros. */
    *o = (gc_host_offsets){ 0 };
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t m1 = util_clock_ns(CLOCK_MONOTONIC);
        uint64_t boot = util_clock_ns(CLOCK_BOOTTIME);
        uint64_t raw = util_clock_ns(CLOCK_MONOTONIC_RAW);
        uint64_t m2 = util_clock_ns(CLOCK_MONOTONIC);
        uint64_t width = m2 - m1;
        if (width < best) {
            /* Both others were read somewhere inside [m1, m2]: the midpoint
          * is off by at most half the width. */
            uint64_t mid = m1 + width / 2;
            best = width;
            o->boottime = (int64_t)(boot - mid);
            o->monotonic_raw = (int64_t)(raw - mid);
            o->uncertainty_ns = (width + 1) / 2;
        }
    }
}

void gc_host_now(gc_host_time *t)
{
    gc_host_offsets o;
    gc_read_host_offsets(&o);
    t->monotonic_ns = util_clock_ns(CLOCK_MONOTONIC);
    t->boottime_ns = t->monotonic_ns + (uint64_t)o.boottime;
    t->monotonic_raw_ns = t->monotonic_ns + (uint64_t)o.monotonic_raw;
    t->uncertainty_ns = o.uncertainty_ns;
}

/* ---- readings ----------------------------------------------------------- */

void gc_clock_init(gc_clock *c, const gc_domain *domain, enum gc_source source, bool device_has_raw,
                   uint64_t budget_ns)
{
    memset(c, 0, sizeof *c);
    c->domain = *domain;
    c->source = source;
    c->device_has_raw = device_has_raw;
    c->budget_ns = budget_ns ? budget_ns : GC_DEFAULT_BUDGET_NS;
    c->interval_ns = GC_INTERVAL_MIN_NS;
    /* A quarter wrap: 2^bits ticks at the period (64 bits: no bound). One
     * NVIDIA H200 reports 32 valid bits for its video family, whose
     * timestamps are 64-bit: 2^32 ns wraps in 4.3 s, under the 10 s a
     * quiet device's cadence reaches. */
    c->interval_max_ns = GC_INTERVAL_MAX_NS;
    if (domain->valid_bits < 64) {
        const uint64_t wrap_ticks = UINT64_C(1) << domain->valid_bits;
        const uint64_t quarter = gc_ticks_to_ns(domain, wrap_ticks / 4);
        if (quarter < c->interval_max_ns)
            c->interval_max_ns = quarter;
    }
}

VkResult gc_calibrate(const gc_clock *c, VkDevice device, PFN_vkGetCalibratedTimestampsEXT get,
                      unsigned tries, gc_reading *out)
{
    const VkCalibratedTimestampInfoEXT infos[3] = {
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL, VK_TIME_DOMAIN_DEVICE_EXT },
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL,
          VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT },
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL,
          VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT },
    };
    const uint32_t count = c->device_has_raw ? 3 : 2;
    uint64_t best_ts[3] = { 0, 0, 0 };
    uint64_t best_dev = UINT64_MAX;
    VkResult res = VK_ERROR_UNKNOWN;
    if (tries == 0)
        tries = 1;
    for (unsigned i = 0; i < tries; i++) {
        uint64_t ts[3] = { 0, 0, 0 }, deviation = 0;
        VkResult r = get(device, count, infos, ts, &deviation);
        if (r != VK_SUCCESS) {
            if (res != VK_SUCCESS)
                res = r;
            continue;
        }
        res = VK_SUCCESS;
        if (deviation < best_dev) {
            best_dev = deviation;
            memcpy(best_ts, ts, sizeof ts);
        }
    }
    if (res != VK_SUCCESS)
        return res;

    /* BOOTTIME (and MONOTONIC_RAW when the device cannot) from offsets
    * measured right after: they change only with suspend (NTP slews
    * MONOTONIC_RAW against MONOTONIC by at most 500 ppm, i.e. nothing over
    * the microseconds between the two). */
    gc_host_offsets o;
    gc_read_host_offsets(&o);
    out->device_ticks =
        c->have_last ? gc_extend(&c->domain, c->last.device_ticks, best_ts[0]) : best_ts[0];
    out->device_ns = gc_ticks_to_ns(&c->domain, out->device_ticks);
    out->monotonic_ns = best_ts[1];
    out->boottime_ns = best_ts[1] + (uint64_t)o.boottime;
    out->monotonic_raw_ns = c->device_has_raw ? best_ts[2] : best_ts[1] + (uint64_t)o.monotonic_raw;
    out->deviation_ns = best_dev;
    out->host_uncertainty_ns = o.uncertainty_ns;
    return VK_SUCCESS;
}

void gc_bracket(const gc_clock *c, uint64_t raw_ticks, const gc_host_time *before,
                const gc_host_time *after, gc_reading *out)
{
    out->device_ticks =
        c->have_last ? gc_extend(&c->domain, c->last.device_ticks, raw_ticks) : raw_ticks;
    out->device_ns = gc_ticks_to_ns(&c->domain, out->device_ticks);
    uint64_t width = after->monotonic_ns >= before->monotonic_ns
                         ? after->monotonic_ns - before->monotonic_ns
                         : 0;
    uint64_t half = width / 2;
    out->monotonic_ns = before->monotonic_ns + half;
    out->boottime_ns = before->boottime_ns + half;
    out->monotonic_raw_ns = before->monotonic_raw_ns + half;
    out->deviation_ns = width - half; /* rounds up */
    out->host_uncertainty_ns = before->uncertainty_ns > after->uncertainty_ns
                                   ? before->uncertainty_ns
                                   : after->uncertainty_ns;
}

uint64_t gc_next_interval(double drift, uint64_t budget_ns, uint64_t previous)
{
    double magnitude = drift < 0 ? -drift : drift;
    double wanted = magnitude > 0 ? (double)budget_ns / magnitude : (double)GC_INTERVAL_MAX_NS;
    /* Grow at most twofold per step, so a drift that appears (NTP starting
    * to slew) is seen again within one short interval. */
    double cap = previous ? 2.0 * (double)previous : (double)GC_INTERVAL_MIN_NS;
    if (wanted > cap)
        wanted = cap;
    if (wanted > (double)GC_INTERVAL_MAX_NS)
        wanted = (double)GC_INTERVAL_MAX_NS;
    if (wanted < (double)GC_INTERVAL_MIN_NS)
        wanted = (double)GC_INTERVAL_MIN_NS;
    return (uint64_t)wanted;
}

bool gc_accept(gc_clock *c, const gc_reading *r, uint64_t now_ns)
{
    if (c->source == GC_SOURCE_BRACKET && r->deviation_ns > GC_BRACKET_MAX_DEVIATION_NS) {
        if (!c->have_last && c->rejected + 1 >= GC_BRACKET_FIRST_TRIES) {
            /* A wide bracket is still better than no reference at all. */
        } else {
            if (!c->have_last &&
                (!c->have_best_rejected || r->deviation_ns < c->best_rejected.deviation_ns)) {
                c->best_rejected = *r;
                c->have_best_rejected = true;
            }
            c->rejected++;
            return false;
        }
    }
    if (c->have_last) {
        const gc_reading *p = &c->last;
        /* Snapshots of one clock must move forward, or trace_processor stops
       * using the clock as a source. */
        if (r->device_ns <= p->device_ns || r->boottime_ns <= p->boottime_ns ||
            r->monotonic_ns <= p->monotonic_ns || r->monotonic_raw_ns <= p->monotonic_raw_ns) {
            c->rejected++;
            return false;
        }
        /* Against the anchor once it lies far enough back (the noise of a
         * pair shrinks with its distance), else against the last. */
        if (p->boottime_ns - c->anchor.boottime_ns >= GC_ANCHOR_MAX_NS)
            c->anchor = *p;
        const gc_reading *a =
            r->boottime_ns - c->anchor.boottime_ns >= GC_ANCHOR_MIN_NS ? &c->anchor : p;
        double dt = (double)(r->boottime_ns - a->boottime_ns);
        double ddev = (double)(r->device_ns - a->device_ns);
        double drift = (ddev - dt) / dt;
        /* What the readings' own uncertainty could fake. */
        double noise = (double)(r->deviation_ns + r->host_uncertainty_ns + a->deviation_ns +
                                a->host_uncertainty_ns) /
                       dt;
        double magnitude = drift < 0 ? -drift : drift;
        double effective = magnitude > noise ? magnitude - noise : 0.0;
        c->drift = drift;
        if (effective > 0 && (double)c->budget_ns / effective < (double)GC_INTERVAL_MIN_NS)
            c->budget_unreachable = true;
        uint64_t next = gc_next_interval(effective, c->budget_ns, c->interval_ns);
        /* Lengthen the interval only as far as the worst drift these readings
       * allow (|drift| + noise) keeps the budget. Two readings close
       * together prove next to nothing (a restarting sequence takes one a
       * moment after the last): with 20 ppm of real drift, such a pair
       * once read as "none" and doubled the interval to 100 ms, twice the
       * budget's error. Never shortened by noise alone, though. */
        const double worst = magnitude + noise;
        if (next > c->interval_ns && worst > 0 && (double)next * worst > (double)c->budget_ns) {
            double safe = (double)c->budget_ns / worst;
            next = safe > (double)c->interval_ns ? (uint64_t)safe : c->interval_ns;
        }
        c->interval_ns = next < c->interval_max_ns ? next : c->interval_max_ns;
    } else {
        c->interval_ns = GC_INTERVAL_FIRST_NS;
        c->anchor = *r;
    }
    c->last = *r;
    c->have_last = true;
    c->accepted++;
    uint64_t total = r->deviation_ns + r->host_uncertainty_ns;
    if (total > c->max_deviation_ns)
        c->max_deviation_ns = total;
    /* Due a little early: the interval is the longest the conversion may
    * go without a snapshot, and the thread taking the calibration wakes a
    * little late, more so on a loaded machine. */
    c->next_due_ns = now_ns + c->interval_ns - c->interval_ns / GC_DUE_EARLY_DIV;
    return true;
}

bool gc_accept_best(gc_clock *c, uint64_t now_ns)
{
    if (c->have_last || !c->have_best_rejected)
        return false;
    c->rejected = GC_BRACKET_FIRST_TRIES; /* no longer refuse it */
    return gc_accept(c, &c->best_rejected, now_ns);
}

/* ---- global clock id ------------------------------------------------------ */

uint32_t gc_fnv1a32(const char *s)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h;
}

uint32_t gc_global_clock_id(const char *name)
{
    return gc_fnv1a32(name) | 0x80000000u;
}
