/* SPDX-License-Identifier: MIT */
/* Shared between bench_pb.c (our writer, speed-of-light serializer, driver)
 * and bench_pb_libprotobuf.cc (the libprotobuf C++ serializer). */
#ifndef BENCH_PB_H
#define BENCH_PB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Field numbers shared by every serializer (see pb_bench.proto). */
enum {
    PBB_FIELD_INT32 = 1,
    PBB_FIELD_UINT32 = 2,
    PBB_FIELD_INT64 = 3,
    PBB_FIELD_UINT64 = 4,
    PBB_FIELD_STRING = 5,
    PBB_FIELD_NESTED = 6,
};

/* Levels below the top one in the "nested" shape (FillNested recurses while
 * depth < PBB_NESTED_DEPTH, so there are PBB_NESTED_DEPTH + 1 events). */
#define PBB_NESTED_DEPTH 3
#define PBB_STRING_LEN   32
/* Inputs cycle through this many distinct events, indexed by iteration. */
#define PBB_N_INPUTS 64

typedef struct pbb_event {
    int32_t field_int32;
    uint32_t field_uint32;
    int64_t field_int64;
    uint64_t field_uint64;
    const char *field_string; /* PBB_STRING_LEN chars, NUL-terminated */
} pbb_event;

/* The inputs table (PBB_N_INPUTS events) lives in bench_pb.c; it is
 * written at start-up, so the compiler cannot treat it as constant.
 *
 * Memory layout matters at this scale: a load whose address matches a
 * recent store's in the low 12 bits waits for it ("4K aliasing"). Every
 * output buffer starts at a 4 KiB boundary and uses well under 1 KiB; the
 * inputs are placed between 1 KiB and 4 KiB past a boundary, so no
 * serializer's input loads are stalled by its output stores. */
#define PBB_OUT_ALIGN 4096
extern pbb_event *pbb_inputs;

/* Serializes `iters` messages with libprotobuf, message object reused
 * (Clear + set), each into the same pre-reserved array. Returns a checksum
 * of the output so nothing can be elided. */
uint64_t pbb_lpb_run_simple(uint64_t iters);
uint64_t pbb_lpb_run_nested(uint64_t iters);

/* Correctness cross-checks run before timing. Each returns 0 when libprotobuf
 * parses `data` to exactly the event built from pbb_inputs[input] (nested:
 * the same event at every level, PBB_NESTED_DEPTH levels deep), otherwise
 * prints the difference and returns -1. */
int pbb_lpb_check_simple(const uint8_t *data, size_t len, unsigned input);
int pbb_lpb_check_nested(const uint8_t *data, size_t len, unsigned input);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_PB_H */
