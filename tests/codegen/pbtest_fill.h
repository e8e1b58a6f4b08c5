/* SPDX-License-Identifier: MIT */
/* Reference contents of the pbtest messages, written with the generated C
 * writers and checked with the generated C decoders. Shared by the cmocka
 * tests and the libprotobuf cross-check (which fills and checks the same
 * values on the C++ side), hence plain C types and extern "C". */
#ifndef PBTEST_FILL_H
#define PBTEST_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- pbtest.Scalars ---- */
#define PBT_F_DOUBLE    (-2.5)
#define PBT_F_FLOAT     1.5f
#define PBT_F_INT64     ((int64_t)-2)
#define PBT_F_UINT64    UINT64_MAX
#define PBT_F_INT32     ((int32_t)-1)
#define PBT_F_FIXED64   UINT64_C(0x0102030405060708)
#define PBT_F_FIXED32   UINT32_C(0xDEADBEEF)
#define PBT_F_BOOL      true
#define PBT_F_STRING    "hi"
#define PBT_F_BYTES_LEN 2
extern const uint8_t pbt_f_bytes[PBT_F_BYTES_LEN]; /* {0x00, 0xff} */
#define PBT_F_UINT32   UINT32_C(300)
#define PBT_F_ENUM     (-1) /* COLOR_NEGATIVE */
#define PBT_F_SFIXED32 ((int32_t)-2)
#define PBT_F_SFIXED64 ((int64_t)-3)
#define PBT_F_SINT32   INT32_MIN
#define PBT_F_SINT64   INT64_MIN

/* ---- pbtest.Repeated (two elements each) and pbtest.Packed ---- */
extern const double pbt_r_double[2];
extern const float pbt_r_float[2];
extern const int64_t pbt_r_int64[2];
extern const uint64_t pbt_r_uint64[2];
extern const int32_t pbt_r_int32[2];
extern const uint64_t pbt_r_fixed64[2];
extern const uint32_t pbt_r_fixed32[2];
extern const bool pbt_r_bool[2];
extern const char *const pbt_r_string[2];
extern const uint8_t pbt_r_bytes0[1]; /* r_bytes = {pbt_r_bytes0, ""} */
extern const uint32_t pbt_r_uint32[2];
extern const int32_t pbt_r_enum[2];
extern const int32_t pbt_r_sfixed32[2];
extern const int64_t pbt_r_sfixed64[2];
extern const int32_t pbt_r_sint32[2];
extern const int64_t pbt_r_sint64[2];

extern const double pbt_p_double[2];
extern const float pbt_p_float[2];
extern const int64_t pbt_p_int64[3];
extern const uint64_t pbt_p_uint64[2];
extern const int32_t pbt_p_int32[3];
extern const uint64_t pbt_p_fixed64[2];
extern const uint32_t pbt_p_fixed32[2];
extern const bool pbt_p_bool[3];
extern const uint32_t pbt_p_uint32[3];
extern const int32_t pbt_p_enum[2];
extern const int32_t pbt_p_sfixed32[2];
extern const int64_t pbt_p_sfixed64[2];
extern const int32_t pbt_p_sint32[3];
extern const int64_t pbt_p_sint64[2];

/* ---- pbtest.Outer ----
 *   mode = MODE_AUTO
 *   middle = {id: 7, leaf: {depth: 3, tag: "leaf"}, leaves: [{depth: 4}, {tag: "b"}]}
 *   middles = [{id: 1}, {id: 2, leaf: {depth: 9}}]
 *   point = {x: -5, y: 6, label: "p"}
 *   points = [{x: 1}, {y: -1}]
 *   dep_color = DEP_NEGATIVE
 *   scalars = the Scalars reference above
 *   default = 42, register = "rax", case = [1, 2, 3], true = true
 *   choice_number = -9
 *   counts = {"k": 5}
 *   wide_tag = 0xCAFEF00D, max_field = 1234567890123 */
#define PBT_WIDE_TAG  UINT32_C(0xCAFEF00D)
#define PBT_MAX_FIELD UINT64_C(1234567890123)

/* Serialize the reference message with the generated writer through a
 * pb_heap_buffer of `slice` bytes per slice (small slices take the slow
 * paths). The result is malloc'd; NULL on OOM. */
uint8_t *pbtest_write_scalars(size_t slice, size_t *len);
/* Same bytes, through runs of <msg>_reserve / _put_<field> / _commit. */
uint8_t *pbtest_write_scalars_runs(size_t slice, size_t *len);
uint8_t *pbtest_write_repeated(size_t slice, size_t *len);
uint8_t *pbtest_write_packed(size_t slice, size_t *len);
uint8_t *pbtest_write_outer(size_t slice, size_t *len);

/* Check serialized bytes against the reference with the generated decoders
 * (repeated elements are read back with pb_reader, in either encoding).
 * Return the number of mismatches, each described on stderr. */
int pbtest_check_scalars(const void *data, size_t len);
int pbtest_check_repeated(const void *data, size_t len);
int pbtest_check_packed(const void *data, size_t len);
int pbtest_check_outer(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* PBTEST_FILL_H */
