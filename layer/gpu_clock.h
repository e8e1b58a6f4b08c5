/* SPDX-License-Identifier: MIT */
/* gpu_clock.h — a Vulkan device's timestamp counter placed on the host's
 * time line.
 *
 * Three concerns, kept apart so each can be tested alone:
 *
 * - The domain: ticks -> nanoseconds with the device's timestampPeriod
 *   taken exactly (a float is m * 2^e, so m << (e + 32) is its exact
 *   32.32 fixed-point value for any period >= 2^-9 ns; the product is taken
 *   in 128 bits, so converting a tick count is a pure linear function with
 *   no accumulated rounding, however long the process runs), and the 64-bit
 *   extension of counters with timestampValidBits < 64 relative to a nearby
 *   reference reading (the last calibration).
 *
 * - Calibration readings: the device's "device nanoseconds" together with
 *   BOOTTIME, MONOTONIC and MONOTONIC_RAW for one instant, from
 *   VK_{KHR,EXT}_calibrated_timestamps (best of N by maxDeviation) or from
 *   the fallback bracket (a timestamp written on a queue between two host
 *   readings; error bound = half the bracket).
 *
 * - Cadence: when the next calibration is due, from the drift measured
 *   between consecutive readings, so the conversion error from piecewise-
 *   constant offsets (drift x time since the snapshot) stays within a
 *   budget.
 *
 * The clock's values in the trace are device nanoseconds: gc_ticks_to_ns of
 * the extended tick count, with no offset (on lavapipe they equal
 * CLOCK_MONOTONIC).
 */
#ifndef GPUTRACE_LAYER_GPU_CLOCK_H
#define GPUTRACE_LAYER_GPU_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#define GC_INTERVAL_MIN_NS (50ull * 1000 * 1000) /* 50 ms */
/* The second reading comes sooner: until there are two, the drift is
 * unknown and the conversion error grows with it unchecked (50 ppm over
 * these 10 ms: 0.5 us). */
#define GC_INTERVAL_FIRST_NS (10ull * 1000 * 1000)
#define GC_INTERVAL_MAX_NS   (10ull * 1000 * 1000 * 1000) /* 10 s */
#define GC_DEFAULT_BUDGET_NS 1000ull                      /* 1 us */
#define GC_CALIBRATION_TRIES 8
/* The drift is measured over at least this much host time once the
 * readings span it, and the anchor moves up after GC_ANCHOR_MAX_NS. */
#define GC_ANCHOR_MIN_NS (500ull * 1000 * 1000)
#define GC_ANCHOR_MAX_NS (4000ull * 1000 * 1000)
/* A calibration falls due 1/8 of its interval early (see gc_accept). */
#define GC_DUE_EARLY_DIV 8u
/* A bracket wider than this (2 x 500 us) is not worth a snapshot; the very
 * first reference is taken anyway after GC_BRACKET_FIRST_TRIES attempts
 * (the narrowest of them, see gc_accept_best). */
#define GC_BRACKET_MAX_DEVIATION_NS (500ull * 1000)
#define GC_BRACKET_FIRST_TRIES      8

/* ---- domain ------------------------------------------------------------- */

typedef struct gc_domain gc_domain;
struct gc_domain {
    uint64_t period_fp;  /* ns per tick, 32.32 fixed point */
    uint32_t valid_bits; /* 1..64 */
};

/* False when the period is not a usable positive float (then 1 ns is used)
 * or valid_bits is 0 (then 64 is used). */
bool gc_domain_init(gc_domain *d, float period_ns, uint32_t valid_bits);

/* Nanoseconds for a 64-bit (extended) tick count; saturates at UINT64_MAX. */
uint64_t gc_ticks_to_ns(const gc_domain *d, uint64_t ticks);

/* Extends a counter value with valid_bits bits to 64 bits, taking the
 * extension closest to `reference` (an extended tick count read within
 * half a wrap period, 2^(bits-1) ticks: at least 34 s for the smallest
 * legal counter, 36 bits at 1 GHz). */
uint64_t gc_extend(const gc_domain *d, uint64_t reference, uint64_t raw);

/* The valid bits of the device's timestamp counter as a whole (what the
 * DEVICE value of vkGetCalibratedTimestamps carries): the smallest non-zero
 * timestampValidBits of its queue families, 64 if none has timestamps.
 * Extending with fewer bits than the counter really has is harmless (the
 * high bits come from the reference); with more, a wrap reads as a jump
 * back. */
uint32_t gc_device_valid_bits(const VkQueueFamilyProperties *families, uint32_t count);

/* ---- host clocks ------------------------------------------------------------ */

/* BOOTTIME and MONOTONIC_RAW relative to MONOTONIC, measured as tightly as
 * the host allows (best of a few brackets). `uncertainty_ns` is half the
 * narrowest bracket. */
typedef struct gc_host_offsets gc_host_offsets;
struct gc_host_offsets {
    int64_t boottime;      /* BOOTTIME - MONOTONIC */
    int64_t monotonic_raw; /* MONOTONIC_RAW - MONOTONIC */
    uint64_t uncertainty_ns;
};
void gc_read_host_offsets(gc_host_offsets *o);

/* One host instant: MONOTONIC read, BOOTTIME and MONOTONIC_RAW estimated
 * at it from fresh offsets. */
typedef struct gc_host_time gc_host_time;
struct gc_host_time {
    uint64_t monotonic_ns, boottime_ns, monotonic_raw_ns;
    uint64_t uncertainty_ns;
};
void gc_host_now(gc_host_time *t);
uint64_t gc_monotonic_ns(void);
uint64_t gc_boottime_ns(void);

/* ---- readings ----------------------------------------------------------- */

typedef struct gc_reading gc_reading;
struct gc_reading {
    uint64_t device_ticks; /* extended */
    uint64_t device_ns;
    uint64_t monotonic_ns, boottime_ns, monotonic_raw_ns;
    /* Device vs MONOTONIC: maxDeviation, or half the bracket. */
    uint64_t deviation_ns;
    /* Added for BOOTTIME / MONOTONIC_RAW when they were estimated from
    * MONOTONIC (the host bracket). */
    uint64_t host_uncertainty_ns;
};

enum gc_source {
    GC_SOURCE_CALIBRATED, /* vkGetCalibratedTimestamps{KHR,EXT} */
    GC_SOURCE_BRACKET,    /* queue timestamp between two host readings */
};

typedef struct gc_clock gc_clock;
struct gc_clock {
    gc_domain domain;
    enum gc_source source;
    bool device_has_raw; /* the device calibrates against MONOTONIC_RAW too */
    uint64_t budget_ns;

    gc_reading last;
    bool have_last;
    /* An older accepted reading the drift is also measured against, at
     * least GC_ANCHOR_MIN_NS before the last where possible: drivers that
     * report a maxDeviation of microseconds (NVIDIA: ~3 us) make two
     * readings 50 ms apart prove nothing about a drift of 20 ppm. */
    gc_reading anchor;
    uint64_t interval_ns; /* current cadence */
    /* The longest interval the counter allows: a quarter of its wrap
     * period at the device's smallest timestampValidBits (the extension
     * relative to the last reading must stay within half a wrap). */
    uint64_t interval_max_ns;
    uint64_t next_due_ns; /* MONOTONIC; interval_ns after the last, less a margin */
    double drift;         /* last estimate: d(device) / d(BOOTTIME) - 1 */
    uint64_t max_deviation_ns;
    uint32_t accepted, rejected;
    /* The narrowest bracket refused while there was no reference yet. */
    gc_reading best_rejected;
    bool have_best_rejected;
    bool budget_unreachable; /* a drift that needs < GC_INTERVAL_MIN_NS was seen */
};

void gc_clock_init(gc_clock *c, const gc_domain *domain, enum gc_source source, bool device_has_raw,
                   uint64_t budget_ns);

/* A calibrated reading: `tries` calls, the one with the smallest
 * maxDeviation kept. */
VkResult gc_calibrate(const gc_clock *c, VkDevice device, PFN_vkGetCalibratedTimestampsEXT get,
                      unsigned tries, gc_reading *out);

/* A fallback reading: `raw_ticks` was written by the device at some
 * instant between the host readings `before` and `after`. */
void gc_bracket(const gc_clock *c, uint64_t raw_ticks, const gc_host_time *before,
                const gc_host_time *after, gc_reading *out);

/* Takes a reading as the new reference if it is consistent (every clock
 * moved forward, bracket narrow enough), updates the drift estimate and the
 * cadence. `now_ns` is MONOTONIC. */
bool gc_accept(gc_clock *c, const gc_reading *r, uint64_t now_ns);

/* Takes the narrowest refused first bracket as the reference (when waiting
 * for a better one is no longer possible). False if there is none. */
bool gc_accept_best(gc_clock *c, uint64_t now_ns);

/* Device nanoseconds of a timestamp read from a query, extended relative
 * to the last accepted reading. */
static inline uint64_t gc_convert(const gc_clock *c, uint64_t raw_ticks)
{
    return gc_ticks_to_ns(&c->domain, gc_extend(&c->domain, c->last.device_ticks, raw_ticks));
}

/* The next interval for a measured drift and budget (exposed for tests):
 * budget / |drift|, at most twice `previous`, within [MIN, MAX]. */
uint64_t gc_next_interval(double drift, uint64_t budget_ns, uint64_t previous);

/* ---- global clock id ------------------------------------------------------ */

uint32_t gc_fnv1a32(const char *s);
/* FNV-1a-32(name) | 0x80000000: a Perfetto global clock id (always >= 128). */
uint32_t gc_global_clock_id(const char *name);

#endif
