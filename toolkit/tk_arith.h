/* SPDX-License-Identifier: MIT */
/* Arithmetic on values read from traces. Timestamps, durations, offsets and
 * counters come from untrusted input: any of them may be near INT64_MIN or
 * INT64_MAX, so the toolkit never adds, subtracts, multiplies or negates them
 * with plain signed operators (signed overflow is undefined behaviour).
 *
 *   tk_wrap_*   the two's complement result trace_processor computes (it
 *               does the same operations in int64_t), plus whether it
 *               overflowed, so the import stays faithful and the checker can
 *               still call the result what it is: an overflow.
 *   tk_sat_*    the result clamped to [INT64_MIN, INT64_MAX], for our own
 *               judgements (windows, latencies, sums of stats).
 *   tk_abs_u64 / tk_distance_u64  magnitudes without the INT64_MIN trap. */
#ifndef TK_ARITH_H
#define TK_ARITH_H

#include <stdbool.h>
#include <stdint.h>

static inline int64_t tk_wrap_add(int64_t a, int64_t b, bool *overflow)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        *overflow = true;
    return r;
}

static inline int64_t tk_wrap_sub(int64_t a, int64_t b, bool *overflow)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        *overflow = true;
    return r;
}

static inline int64_t tk_wrap_mul(int64_t a, int64_t b, bool *overflow)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        *overflow = true;
    return r;
}

static inline int64_t tk_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t tk_sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* An unsigned 64-bit value read from the wire (a duration, a count) as a
 * non-negative int64_t, clamped. */
static inline int64_t tk_sat_from_u64(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static inline uint64_t tk_abs_u64(int64_t v)
{
    return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/* |a - b|, exact for any pair. */
static inline uint64_t tk_distance_u64(int64_t a, int64_t b)
{
    return a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* How far `later` is after `earlier` (0 when it is not): exact for any
 * pair of timestamps, however absurd. */
static inline uint64_t tk_lead(int64_t earlier, int64_t later)
{
    return later > earlier ? tk_distance_u64(later, earlier) : 0;
}

#endif /* TK_ARITH_H */
