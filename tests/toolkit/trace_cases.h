/* SPDX-License-Identifier: MIT */
/* Crafted traces for the toolkit tests. Each case is named by the outcome
 * gputrace-check must report for it:
 *   pass-NAME   exit 0, no violation at all
 *   warn-CODE   exit 0, violation CODE (a warning) present
 *   fail-CODE   exit 1, violation CODE present
 *   loss-CODE[-VARIANT]  exit 1, violation CODE present with severity
 *               data_loss (the trace records a loss that accounts for it),
 *               and no error: exit 0 with --allow-loss
 *   error-NAME  exit 2, unreadable or corrupt input (input_error)
 * `args` are extra gputrace-check options the case needs (NULL-terminated,
 * or NULL). Used by make_traces (files for the integration tests) and by
 * the in-process unit tests.
 * `make_seed` is set for the hostile inputs kept as fuzzer seeds in
 * tests/toolkit/corpus (make_traces --corpus DIR writes them): a version
 * small enough to commit, with the same outcome (the same function when
 * the case is small already). */
#ifndef TRACE_CASES_H
#define TRACE_CASES_H

#include <stddef.h>
#include <stdint.h>

typedef struct tk_case_out {
    uint8_t *data; /* malloc'd */
    size_t len;
} tk_case_out;

typedef struct tk_case {
    const char *name;
    void (*make)(tk_case_out *out);
    const char *const *args;
    void (*make_seed)(tk_case_out *out);
} tk_case;

extern const tk_case tk_cases[];
extern const size_t tk_n_cases;

/* Seeds of fuzz_toolkit_inflate (tests/fuzz): not traces but one options
 * byte and a compressed payload as it sits in compressed_packets or
 * zstd_compressed_packets (make_traces --inflate-seeds DIR). */
extern const tk_case tk_inflate_seeds[];
extern const size_t tk_n_inflate_seeds;

/* The k-th 64-bit key whose unkeyed tk_map hash has its low 20 bits clear. */
uint64_t tk_case_colliding_key(uint32_t k);

#endif /* TRACE_CASES_H */
