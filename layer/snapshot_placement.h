/* SPDX-License-Identifier: MIT */
/* snapshot_placement.h — where in device time the device clock's
 * ClockSnapshots go, and what they say (prefix sp_). Pure: no Vulkan, no
 * threads, no I/O; the collector feeds it and writes what it decides.
 *
 * Why: trace processors convert a GPU event's start through the newest
 * snapshot *read so far in the file* whose device value is at or before
 * it, then add the event's duration unconverted. Offsets between device
 * and host clocks move a little with every calibration (noise; drift on
 * hardware), so a snapshot whose device instant falls inside a submission
 * converts its stages with two offsets: a child then sticks out of its
 * parent, or the next stage starts before the previous one ends.
 *
 * So snapshots are not written at the instant of the calibration that
 * measured them. A calibration updates a model (the reading and the drift
 * it implies); a snapshot is published only where no unwritten GPU work
 * can straddle it: in an idle gap of the device between the work already
 * written and the work about to be written, with its values extrapolated
 * from the model to that instant. A gap must also be wider than the step
 * the new offset makes, or the work after it would be drawn overlapping
 * the work before it. Every submission is then converted with one offset,
 * and its stages keep the order and nesting they had on the GPU. Where no
 * such gap comes while the error of the published offset grows past half
 * the budget (drift on a device that is never idle), the snapshot is
 * forced where the next submission (and other unwritten work) begins
 * instead: every submission stays whole, only its order against work
 * already written may move by the step. docs/layer.md, "Snapshot
 * placement", has the error analysis.
 */
#ifndef GPUTRACE_LAYER_SNAPSHOT_PLACEMENT_H
#define GPUTRACE_LAYER_SNAPSHOT_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

/* One instant on every clock a snapshot holds. */
typedef struct sp_point sp_point;
struct sp_point {
    uint64_t device_ns, boottime_ns, monotonic_ns, monotonic_raw_ns;
};

/* Readings the model keeps: with the calibration cadence's shortest
 * interval (50 ms), the last 3 s at least, so a collector that writes
 * work a second or two after it ran still interpolates between readings
 * on either side of it. */
#define SP_HISTORY 64u
/* Drift is measured over at least this much host time where the history
 * reaches that far: noise over 50 ms (tens of ns of host uncertainty per
 * reading) is ~1 ppm, over a second ~0.05 ppm. */
#define SP_DRIFT_BASELINE_NS (1000ull * 1000 * 1000)
/* Readings whose scatter about the model is kept, and how many it takes
 * before the scatter stands for the readings' reported uncertainty. */
#define SP_SCATTER     16u
#define SP_SCATTER_MIN 4u

/* The device clock as the calibrations measured it. A calibration reads
 * the device clock against MONOTONIC (vkGetCalibratedTimestamps); BOOTTIME
 * and MONOTONIC_RAW are MONOTONIC plus offsets the host measured beside
 * it. So the model is device -> MONOTONIC from the reading nearest in
 * device time, extended with the drift measured over a baseline, plus the
 * newest reading's BOOTTIME and MONOTONIC_RAW offsets (BOOTTIME moves
 * against MONOTONIC only with suspend; RAW at the measured rate). On
 * lavapipe, whose device clock is MONOTONIC, every point of the model
 * keeps device == MONOTONIC. */
typedef struct sp_model sp_model;
struct sp_model {
    sp_point readings[SP_HISTORY]; /* a ring, device and host times increasing */
    uint64_t uncertainty_ns[SP_HISTORY];
    uint32_t count, newest; /* entries, and the index of the newest */
    sp_point reading;       /* the newest, for convenience */
    /* d(device) / d(MONOTONIC) - 1 over the baseline, where the readings'
     * uncertainty lets it be told from zero (0 otherwise: extrapolating
     * with noise would add error, not remove it). */
    double drift;
    /* d(MONOTONIC_RAW) / d(MONOTONIC) over the same readings (NTP slews one
     * and not the other); 1 until there are two. */
    double raw_rate;
    /* How far the last SP_SCATTER readings fell from what the model
     * predicted for them: the noise the model really has. Drivers report
     * maxDeviation loosely (an NVIDIA H200: ~3 us, while its readings
     * scatter by ~0.2 us), so past a few readings this, not what they
     * report, tells noise from a change. */
    uint64_t scatter_ns[SP_SCATTER];
    uint32_t scatter_count;
    bool valid;
};

/* Takes a newly accepted reading into the model; `uncertainty_ns` is how
 * far its device and host values may be from one instant. Readings must
 * move every clock forward (gc_accept sees to it). */
void sp_model_update(sp_model *m, const sp_point *reading, uint64_t uncertainty_ns);

/* The model at another device instant: the nearest reading extended with
 * the drift. */
sp_point sp_extrapolate(const sp_model *m, uint64_t device_ns);

/* How far that may be off from noise alone: the readings' scatter about
 * the model once there are SP_SCATTER_MIN of them, before that the
 * nearest reading's reported uncertainty. */
uint64_t sp_uncertainty(const sp_model *m, uint64_t device_ns);

/* The device instant of a BOOTTIME, through the model. */
uint64_t sp_device_at(const sp_model *m, uint64_t boottime_ns);

/* BOOTTIME - device of a point: what a trace processor adds to a device
 * timestamp converted through it. */
static inline int64_t sp_offset(const sp_point *p)
{
    return (int64_t)(p->boottime_ns - p->device_ns);
}

/* What surrounds the next submission to be written, in device ns. */
typedef struct sp_window sp_window;
struct sp_window {
    uint64_t written_end; /* latest end of any GPU event written so far; 0: none */
    uint64_t next_start;  /* the submission about to be written: its first start */
    uint64_t next_end;    /* ... and its last end */
    /* No other work not yet written can start before this: the earliest
     * device time at which such work was (or will be) submitted. */
    uint64_t horizon;
};

enum sp_where {
    SP_KEEP,       /* the published snapshot serves; write nothing */
    SP_AT_READING, /* the calibration's own instant (nothing can straddle it) */
    SP_IN_GAP,     /* extrapolated into an idle gap of the device */
    SP_FORCED,     /* no gap in time: where the next submission begins */
};

typedef struct sp_state sp_state;
struct sp_state {
    sp_point published; /* the last snapshot written */
    bool have_published;
    bool reading_unpublished; /* a calibration newer than `published` */
    uint64_t budget_ns;
    /* Figures for the log and the tests. */
    uint64_t count[4];             /* by enum sp_where, SP_KEEP unused */
    uint64_t max_step_ns;          /* largest |offset change| published */
    uint64_t max_forced_step_ns;   /* ... of a forced snapshot */
    uint64_t max_extrapolation_ns; /* largest |snapshot instant - its reading| */
};

void sp_init(sp_state *st, uint64_t budget_ns);

/* A calibration was accepted: the model has a newer reading. */
static inline void sp_reading_accepted(sp_state *st)
{
    st->reading_unpublished = true;
}

/* Whether a snapshot is wanted before writing a submission whose events
 * span [start, end]: the published offset is off the model by more than
 * the two readings' noise and a calibration is waiting, or by more than a
 * quarter of the budget. A waiting calibration found within noise of the
 * published offset is taken as confirming it (cleared). */
bool sp_wants(sp_state *st, const sp_model *m, uint64_t start, uint64_t end);

/* Before writing the submission described by `w`: whether to publish a
 * snapshot first, and which (`out`): the model's clocks at the instant it
 * is placed, on the line the readings draw (never an offset moved off it
 * to suit one submission, which would read as drift). SP_KEEP when the
 * published one serves or no place is safe yet. */
enum sp_where sp_before_submission(const sp_state *st, const sp_model *m, const sp_window *w,
                                   sp_point *out);

/* When the device is idle (nothing submitted and not yet written):
 * whether the model's reading itself can be published (not when it only
 * differs within noise, unless it is the `last`, which closes the trace).
 * Also the very first snapshot, which every later event converts through
 * whatever its place. */
enum sp_where sp_at_reading(const sp_state *st, const sp_model *m, uint64_t written_end, bool last,
                            sp_point *out);

/* Records what was published (`where` from one of the two above). */
void sp_published(sp_state *st, const sp_model *m, enum sp_where where, const sp_point *p);

#endif
