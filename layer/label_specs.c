/* SPDX-License-Identifier: MIT */
/* label_specs.c — see label_specs.h. Open addressing on a 32-bit FNV-1a
 * hash of the text, linear probing; entries are only ever added until the
 * next reset, so there is no deletion. */
#include "layer/label_specs.h"

#include <string.h>

void ls_reset(ls_table *t)
{
    t->count = 0;
    t->used = 0;
    memset(t->index, 0, sizeof t->index);
}

static uint32_t fnv1a(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

uint64_t ls_intern(ls_table *t, const char *text, bool *fresh)
{
    *fresh = false;
    if (!text)
        return 0;
    const size_t len = strlen(text);
    const uint32_t h = fnv1a(text, len);
    uint32_t i = h & (LS_SLOTS - 1);
    for (; t->index[i]; i = (i + 1) & (LS_SLOTS - 1)) {
        const uint32_t n = t->index[i] - 1u;
        if (t->hash[i] == h && strcmp(t->text + t->offset[n], text) == 0)
            return LS_IID_BASE + n;
    }
    if (t->count >= LS_MAX_LABELS || t->used + len + 1 > LS_MAX_BYTES)
        return 0;
    const uint32_t n = t->count++;
    t->offset[n] = t->used;
    memcpy(t->text + t->used, text, len + 1);
    t->used += (uint32_t)len + 1;
    t->hash[i] = h;
    t->index[i] = (uint16_t)(n + 1);
    *fresh = true;
    return LS_IID_BASE + n;
}
