/* SPDX-License-Identifier: MIT */
/* fault_model.c — see fault_model.h. */
#include "tests/faultlayer/fault_model.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FM_FP_ONE (1ull << 32)

/* ---- environment -------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void bad(const char *name, const char *v)
{
    fprintf(stderr, "clockfault: ignoring %s=%s\n", name, v);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = env(name);
    if (!v)
        return def;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 0);
    if (errno || *end || *v == '-') {
        bad(name, v);
        return def;
    }
    return x;
}

static double env_double(const char *name, double def, double min, double max)
{
    const char *v = env(name);
    if (!v)
        return def;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || !(x >= min && x <= max)) {
        bad(name, v);
        return def;
    }
    return x;
}

void fm_config_from_env(fm_config *c, uint64_t now_ns)
{
    memset(c, 0, sizeof *c);
    c->t0_ns = now_ns;
    c->drift_ppm = env_double("GPUTRACE_FAULT_DRIFT_PPM", 0, -100000, 100000);
    c->step_ns = env_u64("GPUTRACE_FAULT_STEP_NS", 0);
    c->step_at_ns = now_ns + env_u64("GPUTRACE_FAULT_STEP_AT_MS", 300) * 1000000u;
    c->period_ns = (float)env_double("GPUTRACE_FAULT_PERIOD_NS", 0, 0, 1e6);
    c->valid_bits = (uint32_t)env_u64("GPUTRACE_FAULT_VALID_BITS", 0);
    if (c->valid_bits && (c->valid_bits < 36 || c->valid_bits > 64)) {
        /* The spec's range: 36..64 bits (0 = no timestamps at all). */
        bad("GPUTRACE_FAULT_VALID_BITS", env("GPUTRACE_FAULT_VALID_BITS"));
        c->valid_bits = 0;
    }
    if (c->valid_bits == 64)
        c->valid_bits = 0;
    c->wrap_after_ns = env_u64("GPUTRACE_FAULT_WRAP_AFTER_MS", 500) * 1000000u;
    c->calib_fail_first = env_u64("GPUTRACE_FAULT_CALIB_FAIL_FIRST", 0);
    c->calib_fail_prob = env_double("GPUTRACE_FAULT_CALIB_FAIL_PROB", 0, 0, 1);
    c->calib_result = (int32_t)env_double("GPUTRACE_FAULT_CALIB_RESULT", -1, -1000000000, -1);
    c->deviation_ns = env_u64("GPUTRACE_FAULT_DEVIATION_NS", 0);
    c->hide_calibration = env_u64("GPUTRACE_FAULT_HIDE_CALIBRATION", 0) != 0;
    c->lost_after_submits = env_u64("GPUTRACE_FAULT_LOST_AFTER_SUBMITS", 0);
    c->lost_after_results = env_u64("GPUTRACE_FAULT_LOST_AFTER_RESULTS", 0);
    c->lost_after_waits = env_u64("GPUTRACE_FAULT_LOST_AFTER_WAITS", 0);
    c->seed = env_u64("GPUTRACE_FAULT_SEED", 1);
    c->calib_offset_ns = (int64_t)env_double("GPUTRACE_FAULT_CALIB_OFFSET_NS", 0, -1e15, 1e15);
    c->period_ppm = env_double("GPUTRACE_FAULT_PERIOD_PPM", 0, -100000, 100000);
    c->deviation_reported_ns =
        (int64_t)env_double("GPUTRACE_FAULT_DEVIATION_REPORTED_NS", -1, -1, 1e15);
    c->family_offset_ns = (int64_t)env_double("GPUTRACE_FAULT_FAMILY_OFFSET_NS", 0, -1e15, 1e15);
    c->family = (uint32_t)env_u64("GPUTRACE_FAULT_FAMILY", 0);
    const uint64_t reset_ms = env_u64("GPUTRACE_FAULT_RESET_AT_MS", 0);
    c->reset_at_ns = reset_ms ? now_ns + reset_ms * 1000000u : 0;
    c->reset_after_submits = env_u64("GPUTRACE_FAULT_RESET_AFTER_SUBMITS", 0);
    c->report_bits = (uint32_t)env_u64("GPUTRACE_FAULT_REPORT_BITS", 0);
    if (c->report_bits && (c->report_bits < 36 || c->report_bits > 64)) {
        bad("GPUTRACE_FAULT_REPORT_BITS", env("GPUTRACE_FAULT_REPORT_BITS"));
        c->report_bits = 0;
    }
    c->host_offset_ns = (int64_t)env_double("GPUTRACE_FAULT_HOST_OFFSET_NS", 0, -1e15, 1e15);
    c->early_available = env_u64("GPUTRACE_FAULT_EARLY_AVAILABLE", 0) != 0;
    c->wait_hang = env_u64("GPUTRACE_FAULT_WAIT_HANG", 0) != 0;
    const char *late = env("GPUTRACE_FAULT_LATE_COPIES");
    if (late && !strcmp(late, "late"))
        c->late_copies = FM_COPIES_LATE;
    else if (late && !strcmp(late, "never"))
        c->late_copies = FM_COPIES_NEVER;
    else if (late)
        bad("GPUTRACE_FAULT_LATE_COPIES", late);
    c->transforms = c->drift_ppm != 0 || c->step_ns || c->period_ns > 0 || c->valid_bits ||
                    c->reset_at_ns || c->reset_after_submits;

    if (c->valid_bits) {
        /* Start the counter `wrap_after` before its wrap, so every run of a
       * few hundred milliseconds crosses it. */
        const uint64_t mask = (1ull << c->valid_bits) - 1;
        fm_config unmasked = *c;
        unmasked.valid_bits = 0;
        uint64_t ticks0 = fm_forward(&unmasked, c->t0_ns);
        uint64_t w = (uint64_t)(((unsigned __int128)c->wrap_after_ns << 32) / fm_period_fp(c));
        c->wrap_offset = (mask + 1 - (ticks0 & mask) - (w & mask)) & mask;
    }
}

/* ---- transform ---------------------------------------------------------- */

uint64_t fm_period_fp(const fm_config *c)
{
    if (!(c->period_ns > 0))
        return FM_FP_ONE;
    /* A float times 2^32 is exact in a double. */
    return (uint64_t)((double)c->period_ns * 4294967296.0);
}

static uint64_t drifted(const fm_config *c, uint64_t raw)
{
    if (c->drift_ppm == 0)
        return raw;
    int64_t d = (int64_t)(raw - c->t0_ns);
    return raw + (uint64_t)(int64_t)llround((double)d * c->drift_ppm * 1e-6);
}

static uint64_t undrifted(const fm_config *c, uint64_t r1)
{
    if (c->drift_ppm == 0)
        return r1;
    int64_t d1 = (int64_t)(r1 - c->t0_ns);
    return c->t0_ns + (uint64_t)(int64_t)llround((double)d1 / (1.0 + c->drift_ppm * 1e-6));
}

/* Nanoseconds before the period and the mask are applied. */
static uint64_t shifted(const fm_config *c, uint64_t raw)
{
    uint64_t r = drifted(c, raw);
    if (c->step_ns && raw >= c->step_at_ns)
        r += c->step_ns;
    return r;
}

static uint64_t ns_to_ticks(const fm_config *c, uint64_t ns)
{
    if (!(c->period_ns > 0))
        return ns;
    return (uint64_t)(((unsigned __int128)ns << 32) / fm_period_fp(c));
}

static uint64_t ticks_to_ns(const fm_config *c, uint64_t ticks)
{
    if (!(c->period_ns > 0))
        return ticks;
    return (uint64_t)(((unsigned __int128)ticks * fm_period_fp(c)) >> 32);
}

/* The counter's value when it restarts (GPUTRACE_FAULT_RESET_AT_MS). */
static uint64_t reset_ticks(const fm_config *c)
{
    return ns_to_ticks(c, shifted(c, c->reset_at_ns));
}

void fm_reset_if_due(fm_config *c, uint64_t submits, uint64_t now_ns)
{
    uint64_t never = 0;
    if (c->reset_after_submits && submits > c->reset_after_submits)
        atomic_compare_exchange_strong(&c->reset_at_ns, &never, now_ns);
}

uint64_t fm_forward(const fm_config *c, uint64_t raw_ns)
{
    uint64_t ticks = ns_to_ticks(c, shifted(c, raw_ns));
    if (c->reset_at_ns && raw_ns >= c->reset_at_ns)
        ticks -= reset_ticks(c);
    if (c->valid_bits)
        ticks = (ticks + c->wrap_offset) & ((1ull << c->valid_bits) - 1);
    return ticks;
}

uint64_t fm_offset_ticks(const fm_config *c, uint64_t ticks, int64_t ns)
{
    const double period = c->period_ns > 0 ? (double)c->period_ns : 1.0;
    ticks += (uint64_t)(int64_t)llround((double)ns / period);
    return c->valid_bits ? ticks & ((1ull << c->valid_bits) - 1) : ticks;
}

bool fm_rewrites_results(const fm_config *c)
{
    return c->transforms || c->family_offset_ns || c->early_available || c->wait_hang;
}

uint64_t fm_inverse(const fm_config *c, uint64_t device_ns, uint64_t hint_raw_ns)
{
    /* device_ns = floor(ticks x P): the smallest ticks that reaches it. */
    uint64_t ticks = device_ns;
    if (c->period_ns > 0) {
        unsigned __int128 num = (unsigned __int128)device_ns << 32;
        uint64_t p = fm_period_fp(c);
        ticks = (uint64_t)((num + p - 1) / p);
    }
    const bool after_reset = c->reset_at_ns && hint_raw_ns >= c->reset_at_ns;
    if (c->valid_bits) {
        const uint64_t mod = 1ull << c->valid_bits;
        uint64_t base = (ticks - c->wrap_offset) & (mod - 1);
        uint64_t hint =
            ns_to_ticks(c, shifted(c, hint_raw_ns)) - (after_reset ? reset_ticks(c) : 0);
        int64_t diff = (int64_t)(hint - base);
        int64_t k = diff >= 0 ? (diff + (int64_t)(mod / 2)) / (int64_t)mod
                              : -((-diff + (int64_t)(mod / 2) - 1) / (int64_t)mod);
        ticks = base + (uint64_t)(k * (int64_t)mod);
    }
    if (after_reset) /* near the reset instant the hint decides the side */
        ticks += reset_ticks(c);
    uint64_t r = ticks_to_ns(c, ticks);
    if (c->step_ns) {
        /* Values inside [edge, edge + step) are never produced; a tick that
       * starts just below edge + step still belongs after the step. */
        uint64_t edge = drifted(c, c->step_at_ns) + c->step_ns;
        uint64_t slack = ticks_to_ns(c, 1);
        if (r + slack >= edge)
            r -= c->step_ns;
    }
    return undrifted(c, r);
}

/* ---- truth file ------------------------------------------------------------ */

bool fm_truth_write(const char *path, const fm_config *c, const fm_counters *n)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return false;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    uint32_t pbits;
    memcpy(&pbits, &c->period_ns, sizeof pbits);
    fprintf(f,
            "# VK_LAYER_GPUTRACE_clockfault: the faults in effect (fault_model.h)\n"
            "t0_ns=%" PRIu64 "\ndrift_ppm=%.17g\nstep_ns=%" PRIu64 "\nstep_at_ns=%" PRIu64
            "\nperiod_bits=0x%08" PRIx32 "\nperiod_ns=%.9g\nvalid_bits=%" PRIu32
            "\nwrap_offset=%" PRIu64 "\nwrap_after_ns=%" PRIu64 "\ncalib_fail_first=%" PRIu64
            "\ncalib_fail_prob=%.17g\ncalib_result=%" PRId32 "\ndeviation_ns=%" PRIu64
            "\nhide_calibration=%d\nlost_after_submits=%" PRIu64 "\nlost_after_results=%" PRIu64
            "\nlost_after_waits=%" PRIu64 "\nseed=%" PRIu64 "\n",
            c->t0_ns, c->drift_ppm, c->step_ns, c->step_at_ns, pbits, (double)c->period_ns,
            c->valid_bits, c->wrap_offset, c->wrap_after_ns, c->calib_fail_first,
            c->calib_fail_prob, c->calib_result, c->deviation_ns, (int)c->hide_calibration,
            c->lost_after_submits, c->lost_after_results, c->lost_after_waits, c->seed);
    fprintf(f,
            "calib_offset_ns=%" PRId64 "\nperiod_ppm=%.17g\ndeviation_reported_ns=%" PRId64
            "\nfamily_offset_ns=%" PRId64 "\nfamily=%" PRIu32 "\nreset_at_ns=%" PRIu64
            "\nreport_bits=%" PRIu32 "\nhost_offset_ns=%" PRId64 "\nearly_available=%d"
            "\nwait_hang=%d\nreset_after_submits=%" PRIu64 "\n",
            c->calib_offset_ns, c->period_ppm, c->deviation_reported_ns, c->family_offset_ns,
            c->family, (uint64_t)c->reset_at_ns, c->report_bits, c->host_offset_ns,
            (int)c->early_available, (int)c->wait_hang, c->reset_after_submits);
    if (n)
        fprintf(f,
                "query_values=%" PRIu64 "\ncalibrations=%" PRIu64 "\ncalibration_failures=%" PRIu64
                "\nnoisy_readings=%" PRIu64 "\nsubmits=%" PRIu64 "\nresults=%" PRIu64
                "\nwaits=%" PRIu64 "\nlost_returned=%" PRIu64
                "\nlost=%d\nearly_available_reads=%" PRIu64 "\nfamily_offsets=%" PRIu64
                "\ncopies_held=%" PRIu64 "\ncopies_revealed=%" PRIu64 "\n",
                n->query_values, n->calibrations, n->calibration_failures, n->noisy_readings,
                n->submits, n->results, n->waits, n->lost_returned, (int)n->lost,
                n->early_available, n->family_offsets, n->copies_held, n->copies_revealed);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return false;
    }
    return true;
}

bool fm_truth_read(const char *path, fm_config *c, fm_counters *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    memset(c, 0, sizeof *c);
    memset(n, 0, sizeof *n);
    char line[512];
    bool have_t0 = false;
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq)
            continue;
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        uint64_t u = strtoull(v, NULL, 0);
#define U(name, field) else if (strcmp(k, name) == 0) field = u;
        if (strcmp(k, "t0_ns") == 0) {
            c->t0_ns = u;
            have_t0 = true;
        } else if (strcmp(k, "drift_ppm") == 0) {
            c->drift_ppm = strtod(v, NULL);
        } else if (strcmp(k, "period_bits") == 0) {
            uint32_t bits = (uint32_t)u;
            memcpy(&c->period_ns, &bits, sizeof bits);
        } else if (strcmp(k, "calib_fail_prob") == 0) {
            c->calib_fail_prob = strtod(v, NULL);
        } else if (strcmp(k, "calib_result") == 0) {
            c->calib_result = (int32_t)strtol(v, NULL, 10);
        } else if (strcmp(k, "period_ppm") == 0) {
            c->period_ppm = strtod(v, NULL);
        } else if (strcmp(k, "calib_offset_ns") == 0) {
            c->calib_offset_ns = strtoll(v, NULL, 10);
        } else if (strcmp(k, "deviation_reported_ns") == 0) {
            c->deviation_reported_ns = strtoll(v, NULL, 10);
        } else if (strcmp(k, "family_offset_ns") == 0) {
            c->family_offset_ns = strtoll(v, NULL, 10);
        } else if (strcmp(k, "host_offset_ns") == 0) {
            c->host_offset_ns = strtoll(v, NULL, 10);
        }
        U("step_ns", c->step_ns)
        U("step_at_ns", c->step_at_ns)
        U("valid_bits", c->valid_bits)
        U("wrap_offset", c->wrap_offset)
        U("wrap_after_ns", c->wrap_after_ns)
        U("calib_fail_first", c->calib_fail_first)
        U("deviation_ns", c->deviation_ns)
        U("hide_calibration", c->hide_calibration)
        U("lost_after_submits", c->lost_after_submits)
        U("lost_after_results", c->lost_after_results)
        U("lost_after_waits", c->lost_after_waits)
        U("seed", c->seed)
        U("family", c->family)
        U("reset_at_ns", c->reset_at_ns)
        U("reset_after_submits", c->reset_after_submits)
        U("report_bits", c->report_bits)
        U("early_available", c->early_available)
        U("wait_hang", c->wait_hang)
        U("query_values", n->query_values)
        U("calibrations", n->calibrations)
        U("calibration_failures", n->calibration_failures)
        U("noisy_readings", n->noisy_readings)
        U("submits", n->submits)
        U("results", n->results)
        U("waits", n->waits)
        U("lost_returned", n->lost_returned)
        U("lost", n->lost)
        U("early_available_reads", n->early_available)
        U("family_offsets", n->family_offsets)
        U("copies_held", n->copies_held)
        U("copies_revealed", n->copies_revealed)
#undef U
    }
    fclose(f);
    c->transforms = c->drift_ppm != 0 || c->step_ns || c->period_ns > 0 || c->valid_bits ||
                    c->reset_at_ns || c->reset_after_submits;
    return have_t0;
}
