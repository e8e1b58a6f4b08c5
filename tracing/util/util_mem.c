/* SPDX-License-Identifier: MIT */
#include "tracing/util/util_mem.h"

#include <stdint.h>
#include <stdlib.h>

bool util_grow_array(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    if (elem == 0)
        return false;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return false;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem)
        return false;
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return false;
    *arr = n;
    *cap = ncap;
    return true;
}
