/* SPDX-License-Identifier: MIT */
/* timeline_util.c — see timeline_util.h. */
#include "layer/timeline_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layer/log.h"

static atomic_uint next_submission_id = 1;

bool tl_grow(const tl_device *td, void **array, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = tl_alloc(td, (size_t)ncap * elem);
    if (!p)
        return false;
    if (*array)
        memcpy(p, *array, (size_t)*cap * elem);
    tl_free(td, *array);
    *array = p;
    *cap = ncap;
    return true;
}

void tl_warn_once(tl_device *td, uint32_t bit, const char *fmt, ...)
{
    if (atomic_fetch_or(&td->warned, bit) & bit)
        return;
    if (!gt_log_enabled(GT_LOG_ERROR))
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gt_error("%s", msg);
}

const void *tl_find_in_chain(const void *next, VkStructureType type)
{
    for (const VkBaseInStructure *s = next; s; s = s->pNext) {
        if (s->sType == type)
            return s;
    }
    return NULL;
}

uint32_t tl_next_submission_id(void)
{
    return atomic_fetch_add_explicit(&next_submission_id, 1, memory_order_relaxed);
}

uint32_t tl_peek_submission_id(void)
{
    return atomic_load_explicit(&next_submission_id, memory_order_relaxed);
}
