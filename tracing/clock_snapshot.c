/* SPDX-License-Identifier: MIT */
/* Builtin clock snapshots. */
#include "tracing/clock_snapshot.h"

#include <time.h>

#include "protos/perfetto/builtin_clock.pbc.h"
#include "tracing/util/util_time.h"

uint64_t clk_boottime_ns(void)
{
    return util_clock_ns(CLOCK_BOOTTIME);
}

uint64_t clk_monotonic_ns(void)
{
    return util_clock_ns(CLOCK_MONOTONIC);
}

void clk_take_snapshot(clk_snapshot *s)
{
    uint64_t best_window = UINT64_MAX;
    for (int attempt = 0; attempt < 3; attempt++) {
        /* BOOTTIME brackets the others; the attempt with the shortest
         * bracket was the least disturbed (no preemption in between). */
        uint64_t boot = util_clock_ns(CLOCK_BOOTTIME);
        uint64_t mono = util_clock_ns(CLOCK_MONOTONIC);
        uint64_t raw = util_clock_ns(CLOCK_MONOTONIC_RAW);
        uint64_t real = util_clock_ns(CLOCK_REALTIME);
        uint64_t window = util_clock_ns(CLOCK_BOOTTIME) - boot;
        if (window < best_window) {
            best_window = window;
            s->clocks[0] =
                (clk_reading){ perfetto_protos_BuiltinClock_BUILTIN_CLOCK_BOOTTIME, boot };
            s->clocks[1] =
                (clk_reading){ perfetto_protos_BuiltinClock_BUILTIN_CLOCK_MONOTONIC, mono };
            s->clocks[2] =
                (clk_reading){ perfetto_protos_BuiltinClock_BUILTIN_CLOCK_MONOTONIC_RAW, raw };
            s->clocks[3] =
                (clk_reading){ perfetto_protos_BuiltinClock_BUILTIN_CLOCK_REALTIME, real };
            s->count = CLK_NUM_BUILTIN;
        }
    }
}

void clk_write_snapshot(perfetto_protos_ClockSnapshot *m, const clk_snapshot *s)
{
    for (size_t i = 0; i < s->count; i++) {
        perfetto_protos_ClockSnapshot_Clock c;
        perfetto_protos_ClockSnapshot_begin_clocks(m, &c);
        perfetto_protos_ClockSnapshot_Clock_set_clock_id(&c, s->clocks[i].clock_id);
        perfetto_protos_ClockSnapshot_Clock_set_timestamp(&c, s->clocks[i].timestamp_ns);
        perfetto_protos_ClockSnapshot_Clock_end(&c);
    }
}
