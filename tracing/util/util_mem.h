/* SPDX-License-Identifier: MIT */
/* Growth of malloc'd arrays, as the write path, the fault layer and the
 * tests all need it. */
#ifndef UTIL_MEM_H
#define UTIL_MEM_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room for at least `need` elements of `elem` bytes in the array
 * *arr of capacity *cap (both updated): the capacity doubles from 16
 * until it suffices. Returns false, leaving the array as it was, when
 * memory runs out or the size would overflow. */
bool util_grow_array(void **arr, size_t *cap, size_t need, size_t elem);

#endif
