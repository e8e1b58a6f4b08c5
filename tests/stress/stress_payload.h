/* SPDX-License-Identifier: MIT */
/* The bytes gputrace-stress puts in TestEvent.str, so a checker can verify
 * every packet it reads back byte for byte: a function of the writer
 * index, the packet counter and the position only. */
#ifndef STRESS_PAYLOAD_H
#define STRESS_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint8_t stress_payload_byte(uint32_t writer, uint64_t counter, size_t i)
{
    return (uint8_t)('a' + (writer * 31u + counter * 7u + i) % 26u);
}

static inline void stress_payload_fill(uint32_t writer, uint64_t counter, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = stress_payload_byte(writer, counter, i);
}

static inline bool stress_payload_check(uint32_t writer, uint64_t counter, const uint8_t *p,
                                        size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != stress_payload_byte(writer, counter, i))
            return false;
    return true;
}

#endif /* STRESS_PAYLOAD_H */
