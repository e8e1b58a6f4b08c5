/* SPDX-License-Identifier: MIT */
/* Strict parsing of numbers from command lines and environment variables,
 * and bounded string copies. The parsers accept only what a user would
 * call a number: digits from the first character (no sign, no blanks), no
 * trailing characters, no overflow, and a value within [min, max]. Base is
 * 10, 8 (permission bits), or 0 for C's prefixes (0x.. hexadecimal, 0..
 * octal). On failure they return false and leave *out untouched. */
#ifndef UTIL_PARSE_H
#define UTIL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool util_parse_u64(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out);
bool util_parse_u32(const char *s, int base, uint32_t min, uint32_t max, uint32_t *out);
bool util_parse_size(const char *s, int base, size_t min, size_t max, size_t *out);

/* Copies the NUL-terminated `src` into `dst` of `size` bytes, always
 * terminating it (when size > 0). Returns false when `src` did not fit
 * and was cut. */
bool util_copy_str(char *dst, size_t size, const char *src);

#endif
