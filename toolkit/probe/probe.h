/* SPDX-License-Identifier: MIT */
/* probe.h — gputrace-probe's parts and what they share (docs/ci.md,
 * "gputrace-probe"): the checks and their results, the bounds, and the
 * measurements the judgments are made from.
 *
 *   pr_device.c   instance, devices, queues, query pools, submissions,
 *                 calibrated timestamps (everything that calls Vulkan to
 *                 set up or measure, except the query semantics)
 *   pr_run.c      the timed run of one queue family (bursts of stamped
 *                 submissions between idle gaps), semaphore-ordered pairs,
 *                 repeated calibrations
 *   pr_judge.c    the verdicts, from measurements only (no Vulkan: unit
 *                 tested with made-up measurements, tests/probe)
 *   pr_query.c    query semantics: availability, reset, WAIT and non-WAIT
 *                 reads, the blocking ones on a watchdog thread
 *   pr_report.c   the human report, --json and --junit
 *
 * The measurements never depend on the layer: the probe asks the driver
 * (through whatever the loader puts in between) and the host clocks.
 */
#ifndef GPUTRACE_PROBE_H
#define GPUTRACE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PR_PROG "gputrace-probe"

/* ---- checks and results ---------------------------------------------------------- */

typedef enum pr_check_id {
    PR_WRITTEN_VS_CALIBRATED, /* per family */
    PR_PERIOD,                /* per family */
    PR_VALID_BITS,            /* per family */
    PR_ORDER,                 /* per family */
    PR_CROSS_QUEUE_ORDER,     /* per device */
    PR_DEVIATION,             /* per device */
    PR_HOST_DOMAINS,          /* per device */
    PR_QUERY_AVAILABILITY,    /* per family */
    PR_QUERY_RESET,           /* per family */
    PR_QUERY_WAIT,            /* per family */
    PR_QUERY_NO_WAIT,         /* per family */
    PR_CHECK_COUNT
} pr_check_id;

typedef enum pr_verdict {
    PR_PASS,
    PR_WARN, /* passes, with something a consumer should know */
    PR_FAIL,
    PR_NA, /* not applicable on this device or family, or not run */
} pr_verdict;

/* The check's name as reports, --json and --junit spell it. */
const char *pr_check_name(pr_check_id id);
/* Whether a check is judged once per queue family (else once per device). */
bool pr_check_per_family(pr_check_id id);
const char *pr_verdict_name(pr_verdict v);

/* One verdict. `measured` and `bound` are in `unit`; the check passes
 * when measured <= bound (NAN: nothing measured). */
typedef struct pr_result pr_result;
struct pr_result {
    pr_check_id check;
    int family; /* -1: the device as a whole */
    pr_verdict verdict;
    double measured, bound;
    const char *unit; /* "ns", "ppm", "ms", "bits", "queries" */
    char detail[512]; /* how it was measured, what went wrong */
};

/* ---- bounds (the command line) --------------------------------------------------- */

typedef struct pr_options pr_options;
struct pr_options {
    double duration_s;      /* --duration: the timed run of each family */
    double slack_ns;        /* --calibrated-slack-ns */
    double max_period_ppm;  /* --max-period-ppm */
    double max_backward_ns; /* --max-backward-ns */
    double deviation_slack_ns;
    double host_slack_ns;
    double max_wait_ms;    /* a WAIT read after its query can be written */
    double max_no_wait_ms; /* a read without WAIT */
    uint32_t calibrations; /* --calibrations: repeated back to back */
    uint32_t burst;        /* submissions per burst */
    int device;            /* --device: -1 all */
};

void pr_options_default(pr_options *o);

/* ---- measurements ------------------------------------------------------------------ */

/* The host clocks a driver can be calibrated against on Linux. */
typedef enum pr_host_clock {
    PR_HOST_MONOTONIC,
    PR_HOST_MONOTONIC_RAW,
    PR_HOST_BOOTTIME, /* no Vulkan domain: read beside the others */
    PR_HOST_COUNT
} pr_host_clock;

const char *pr_host_clock_name(pr_host_clock c);

/* One vkGetCalibratedTimestamps call: DEVICE and every host domain the
 * driver offers, each host clock also read by us right before and right
 * after the call. */
typedef struct pr_calibration pr_calibration;
struct pr_calibration {
    bool ok;
    uint64_t device;        /* raw counter value */
    uint64_t max_deviation; /* ns, as reported */
    bool offered[PR_HOST_COUNT];
    uint64_t host[PR_HOST_COUNT];   /* the driver's readings */
    uint64_t before[PR_HOST_COUNT]; /* ours, before the call */
    uint64_t after[PR_HOST_COUNT];  /* ours, after it */
};

/* One stamped submission: a command buffer writing a TOP_OF_PIPE and a
 * BOTTOM_OF_PIPE timestamp, bracketed by CLOCK_MONOTONIC before the submit
 * and after its fence, between two calibrations. */
typedef struct pr_sample pr_sample;
struct pr_sample {
    uint32_t queue; /* index within the family */
    uint32_t burst; /* 0 first; a burst > 0 follows an idle gap */
    double gap_s;   /* the idle time before it (0 inside a burst) */
    uint64_t before, after;
    uint64_t top, bottom; /* raw */
    bool available;       /* both stamps available after the fence */
    pr_calibration pre, post;
};

/* Two stamps ordered by a semaphore: `first` written before the signal on
 * (family_a, queue_a), `second` after the wait on (family_b, queue_b). */
typedef struct pr_pair pr_pair;
struct pr_pair {
    uint32_t family_a, queue_a, family_b, queue_b;
    uint32_t bits; /* the narrower of the two families' valid bits */
    uint64_t first, second;
};

/* What one family's timed run measured. */
typedef struct pr_family_run pr_family_run;
struct pr_family_run {
    uint32_t family;
    uint32_t valid_bits; /* 0: the family writes no timestamps */
    uint32_t queues;     /* queues used */
    pr_sample *samples;
    size_t n_samples;
    pr_pair *pairs; /* semaphore pairs on each of its queues */
    size_t n_pairs;
    uint32_t bursts;
    char error[256]; /* a failure that cut the run short, or "" */
};

/* What the judgments need to know of a device. */
typedef struct pr_device_facts pr_device_facts;
struct pr_device_facts {
    double period_ns; /* timestampPeriod as reported */
    bool calibrated;  /* VK_KHR/EXT_calibrated_timestamps usable */
    bool offered[PR_HOST_COUNT];
    uint32_t queues;      /* queues of timestamp-writing families, all families */
    uint32_t device_bits; /* valid bits the DEVICE domain is extended with */
};

/* ---- what is reported of a device --------------------------------------------------- */

#define PR_MAX_FAMILIES 32

typedef struct pr_family_info pr_family_info;
struct pr_family_info {
    uint32_t index;
    uint32_t queues; /* the family has */
    uint32_t used;   /* the probe created */
    uint32_t flags;  /* VkQueueFlags */
    uint32_t valid_bits;
};

typedef struct pr_device_report pr_device_report;
struct pr_device_report {
    uint32_t index;
    char name[256];
    const char *type; /* "discrete-gpu", "cpu", ... */
    uint32_t vendor_id, device_id, api_version, driver_version;
    char driver_name[256], driver_info[256];
    double period_ns;
    const char *calibration; /* the extension used, or NULL */
    bool offered[PR_HOST_COUNT];
    bool host_reset, timeline;
    pr_family_info families[PR_MAX_FAMILIES];
    uint32_t nfamilies;
    pr_result *results;
    size_t nresults, cap;
    char error[256]; /* the device could not be opened or probed */
    double seconds;
};

/* Appends a copy of `r` (false when out of memory). */
bool pr_report_add(pr_device_report *d, const pr_result *r);

/* ---- pr_report.c ------------------------------------------------------------------------ */

/* "580.76.5" for NVIDIA's encoding, "22.3.6" for the Vulkan one. */
void pr_driver_version_text(uint32_t vendor_id, uint32_t v, char *buf, size_t len);

/* The human report: a device's header, one result (two lines). */
void pr_report_device(FILE *out, const pr_device_report *d);
void pr_report_result(FILE *out, const pr_result *r);

typedef struct pr_totals pr_totals;
struct pr_totals {
    size_t pass, warn, fail, na, errors; /* errors: devices not probed */
};
void pr_report_totals(const pr_device_report *d, size_t n, pr_totals *t);

/* --json and --junit; false with errno set when the file cannot be
 * written. `status` is the exit status the probe ends with. */
bool pr_report_json(const char *path, const pr_device_report *d, size_t n, const pr_options *o,
                    int status);
bool pr_report_junit(const char *path, const pr_device_report *d, size_t n);

/* ---- pr_judge.c ---------------------------------------------------------------------- */

/* The signed distance in ticks from counter value `from` to `to` of a
 * counter `bits` wide (1..64): forward up to half the range, backwards
 * beyond (a wrap is a small forward step, a jump back a negative one). */
int64_t pr_counter_step(uint64_t from, uint64_t to, uint32_t bits);

void pr_judge_written_vs_calibrated(const pr_family_run *run, const pr_device_facts *d,
                                    const pr_options *o, pr_result *r);
void pr_judge_period(const pr_family_run *run, const pr_device_facts *d, const pr_options *o,
                     pr_result *r);
void pr_judge_valid_bits(const pr_family_run *run, const pr_device_facts *d, const pr_options *o,
                         pr_result *r);
void pr_judge_order(const pr_family_run *run, const pr_device_facts *d, const pr_options *o,
                    pr_result *r);
/* Pairs across queues of the device (any families). */
void pr_judge_cross_queue(const pr_pair *pairs, size_t n, const pr_device_facts *d,
                          const pr_options *o, pr_result *r);
/* Calibrations repeated back to back. */
void pr_judge_deviation(const pr_calibration *c, size_t n, const pr_device_facts *d,
                        const pr_options *o, pr_result *r);
void pr_judge_host_domains(const pr_calibration *c, size_t n, const pr_device_facts *d,
                           const pr_options *o, pr_result *r);

/* Fills the fields every result has; `family` -1 for device checks. */
void pr_result_init(pr_result *r, pr_check_id check, int family);
/* Sets the verdict from measured and bound (PASS when measured <= bound). */
void pr_result_judge(pr_result *r, double measured, double bound, const char *unit);
/* Not applicable, and why (printf format). */
void pr_result_na(pr_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends to the detail (printf format), cut at its size. */
void pr_result_say(pr_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* GPUTRACE_PROBE_H */
