/* SPDX-License-Identifier: MIT */
#include "tracing/util/util_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool util_parse_u64(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out)
{
    /* strtoull itself would skip blanks, take a sign and negate "-1" into
     * a huge value: only a leading digit is let through to it. */
    if (!s || *s < '0' || *s > '9' || (base != 0 && base != 8 && base != 10))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = (uint64_t)v;
    return true;
}

bool util_parse_u32(const char *s, int base, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (!util_parse_u64(s, base, min, max, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool util_parse_size(const char *s, int base, size_t min, size_t max, size_t *out)
{
    uint64_t v;
    if (!util_parse_u64(s, base, min, max, &v))
        return false;
    *out = (size_t)v;
    return true;
}

bool util_copy_str(char *dst, size_t size, const char *src)
{
    if (size == 0)
        return false;
    size_t len = strlen(src);
    bool fits = len < size;
    size_t n = fits ? len : size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return fits;
}
