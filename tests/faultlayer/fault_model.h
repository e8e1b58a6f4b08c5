/* SPDX-License-Identifier: MIT */
/* fault_model.h — the faults VK_LAYER_GPUTRACE_clockfault injects, as data
 * and pure functions, so the layer (which applies them) and the oracle
 * fault_truth (which undoes them) share one definition.
 *
 * The device clock seen above the fault layer is a function of the
 * driver's raw reading r (lavapipe: CLOCK_MONOTONIC nanoseconds):
 *
 *   drift    r1 = r + (r - t0) * ppm / 1e6           (t0: layer start)
 *   step     r2 = r1 + step_ns        once r >= step_at
 *   period   ticks = floor(r2 / P)                   (P: reported timestampPeriod)
 *   reset    ticks -= ticks at reset_at   once r >= reset_at (the counter restarts at 0)
 *   bits     ticks' = (ticks + wrap_offset) mod 2^B  (B: timestampValidBits)
 *
 * Query results and the DEVICE reading of vkGetCalibratedTimestamps* go
 * through the same function, so a correct consumer can undo all of it. A
 * calibrated reading can additionally carry noise (up to deviation_ns,
 * reported as maxDeviation) or fail; those are not part of the transform:
 * they are what the consumer has to survive.
 *
 * The driver bugs gputrace-probe must catch are not part of it either:
 * they make the driver's reports disagree with each other (the DEVICE
 * domain offset from the queries, a misreported period, an understated
 * maxDeviation, one queue family's stamps offset, host readings offset,
 * too few valid bits reported, availability too early, a WAIT read that
 * never returns). The reset is in the transform: it hits queries and the
 * DEVICE domain alike, as a counter restarting would.
 *
 * Configuration comes from GPUTRACE_FAULT_* (see docs/ci.md); the layer
 * writes what it resolved (t0, wrap offset, ...) to
 * GPUTRACE_FAULT_TRUTH_FILE for the oracle.
 */
#ifndef GPUTRACE_FAULT_MODEL_H
#define GPUTRACE_FAULT_MODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fm_config fm_config;
struct fm_config {
    /* clock transform */
    uint64_t t0_ns;      /* pivot of the drift, CLOCK_MONOTONIC at start */
    double drift_ppm;    /* GPUTRACE_FAULT_DRIFT_PPM */
    uint64_t step_ns;    /* GPUTRACE_FAULT_STEP_NS (forward jump) */
    uint64_t step_at_ns; /* t0 + GPUTRACE_FAULT_STEP_AT_MS */
    float period_ns;     /* GPUTRACE_FAULT_PERIOD_NS; 0: driver's (1 on lavapipe) */
    uint32_t valid_bits; /* GPUTRACE_FAULT_VALID_BITS; 0: driver's */
    uint64_t wrap_offset;
    uint64_t wrap_after_ns; /* GPUTRACE_FAULT_WRAP_AFTER_MS */

    /* calibrated timestamps */
    uint64_t calib_fail_first; /* GPUTRACE_FAULT_CALIB_FAIL_FIRST */
    double calib_fail_prob;    /* GPUTRACE_FAULT_CALIB_FAIL_PROB */
    int32_t calib_result;      /* GPUTRACE_FAULT_CALIB_RESULT (a VkResult) */
    uint64_t deviation_ns;     /* GPUTRACE_FAULT_DEVIATION_NS */
    bool hide_calibration;     /* GPUTRACE_FAULT_HIDE_CALIBRATION */

    /* device loss: VK_ERROR_DEVICE_LOST after this many calls (0: never) */
    uint64_t lost_after_submits; /* GPUTRACE_FAULT_LOST_AFTER_SUBMITS */
    uint64_t lost_after_results; /* GPUTRACE_FAULT_LOST_AFTER_RESULTS */
    uint64_t lost_after_waits;   /* GPUTRACE_FAULT_LOST_AFTER_WAITS */

    /* driver bugs for gputrace-probe (docs/ci.md) */
    int64_t calib_offset_ns;       /* GPUTRACE_FAULT_CALIB_OFFSET_NS: DEVICE domain vs queries */
    double period_ppm;             /* GPUTRACE_FAULT_PERIOD_PPM: timestampPeriod misreported */
    int64_t deviation_reported_ns; /* GPUTRACE_FAULT_DEVIATION_REPORTED_NS; -1: honest */
    int64_t family_offset_ns;      /* GPUTRACE_FAULT_FAMILY_OFFSET_NS */
    uint32_t family;               /* GPUTRACE_FAULT_FAMILY: the family it applies to */
    /* When the counter restarts (MONOTONIC); 0: not (yet). Set at start-up
     * by GPUTRACE_FAULT_RESET_AT_MS, or by the submission that follows the
     * first GPUTRACE_FAULT_RESET_AFTER_SUBMITS (fm_reset_if_due): atomic,
     * since the application's threads set it while others convert. */
    _Atomic uint64_t reset_at_ns;
    uint64_t reset_after_submits;
    uint32_t report_bits;   /* GPUTRACE_FAULT_REPORT_BITS: timestampValidBits shown */
    int64_t host_offset_ns; /* GPUTRACE_FAULT_HOST_OFFSET_NS: calibrated host domains */
    bool early_available;   /* GPUTRACE_FAULT_EARLY_AVAILABLE */
    /* GPUTRACE_FAULT_LATE_COPIES (fault_memory.c): timestamps copied into
     * mapped memory show up late, or never (a shadowing layer). */
    enum {
        FM_COPIES_ON_TIME,
        FM_COPIES_LATE,
        FM_COPIES_NEVER
    } late_copies;
    bool wait_hang; /* GPUTRACE_FAULT_WAIT_HANG */

    uint64_t seed; /* GPUTRACE_FAULT_SEED */
    /* Any transform of timestamps at all. */
    bool transforms;
};

/* Reads GPUTRACE_FAULT_* and resolves t0 / wrap offset against `now_ns`
 * (CLOCK_MONOTONIC). Bad values are reported on stderr and ignored. */
void fm_config_from_env(fm_config *c, uint64_t now_ns);

/* GPUTRACE_FAULT_RESET_AFTER_SUBMITS=N: called by each submission once
 * counted (`submits` so far, itself included); the first one past N
 * restarts the counter now, before it goes down, so the stamps of every
 * submission up to N were written on the old counter. */
void fm_reset_if_due(fm_config *c, uint64_t submits, uint64_t now_ns);

/* Raw driver nanoseconds -> device ticks as reported above the layer. */
uint64_t fm_forward(const fm_config *c, uint64_t raw_ns);

/* `ns` nanoseconds of offset in reported ticks, added to `ticks` and kept
 * within the reported valid bits (for the offset faults). */
uint64_t fm_offset_ticks(const fm_config *c, uint64_t ticks, int64_t ns);

/* Whether query results pass through the layer's rewriting at all. */
bool fm_rewrites_results(const fm_config *c);

/* The reported period as the timing layer converts it: exact 32.32 fixed
 * point of the float (what any exact converter computes). 1.0 when the
 * period is not changed. */
uint64_t fm_period_fp(const fm_config *c);

/* Inverse: a device timestamp written by the timing layer (device
 * nanoseconds = extended ticks x period) back to the raw driver time at the
 * start of that tick. `hint_raw_ns` (any estimate within a quarter of the
 * counter's wrap period, e.g. the converted value) picks the wrap. */
uint64_t fm_inverse(const fm_config *c, uint64_t device_ns, uint64_t hint_raw_ns);

/* Truth file: "key=value" lines, rewritten whole each time (write to a
 * temporary name, then rename). `counters` may be NULL. */
typedef struct fm_counters fm_counters;
struct fm_counters {
    uint64_t query_values, calibrations, calibration_failures, noisy_readings;
    uint64_t submits, results, waits, lost_returned;
    uint64_t early_available, family_offsets;
    uint64_t copies_held, copies_revealed;
    bool lost;
};
bool fm_truth_write(const char *path, const fm_config *c, const fm_counters *n);
/* Reads a truth file back (the oracle's side). */
bool fm_truth_read(const char *path, fm_config *c, fm_counters *n);

#endif
