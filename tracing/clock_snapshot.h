/* SPDX-License-Identifier: MIT */
/* Builtin clock snapshots (ClockSnapshot packets): the readings that let a
 * trace reader convert between BOOTTIME (the default trace clock),
 * MONOTONIC, MONOTONIC_RAW and REALTIME. */
#ifndef CLOCK_SNAPSHOT_H
#define CLOCK_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "protos/perfetto/clock_snapshot.pbc.h"

#define CLK_NUM_BUILTIN 4

typedef struct clk_reading {
    uint32_t clock_id; /* perfetto_protos_BuiltinClock */
    uint64_t timestamp_ns;
} clk_reading;

typedef struct clk_snapshot {
    clk_reading clocks[CLK_NUM_BUILTIN];
    size_t count;
} clk_snapshot;

/* Reads the four clocks back to back, a few times, and keeps the attempt
 * that took the least time: the readings are then as close to one instant
 * as this process can make them. */
void clk_take_snapshot(clk_snapshot *s);

/* Appends the readings as ClockSnapshot.clocks entries. */
void clk_write_snapshot(perfetto_protos_ClockSnapshot *m, const clk_snapshot *s);

uint64_t clk_boottime_ns(void);
uint64_t clk_monotonic_ns(void);

#endif /* CLOCK_SNAPSHOT_H */
