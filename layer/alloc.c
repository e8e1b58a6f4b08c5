/* SPDX-License-Identifier: MIT */
/* alloc.c — see alloc.h. */
#include "layer/alloc.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

void gt_allocator_init(gt_allocator *alloc, const VkAllocationCallbacks *callbacks)
{
    alloc->set = callbacks != NULL;
    if (callbacks)
        alloc->callbacks = *callbacks;
    else
        memset(&alloc->callbacks, 0, sizeof alloc->callbacks);
}

void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope)
{
    void *p;
    if (alloc && alloc->set)
        p = alloc->callbacks.pfnAllocation(alloc->callbacks.pUserData, size, alignof(max_align_t),
                                           scope);
    else
        p = malloc(size);
    if (p)
        memset(p, 0, size);
    return p;
}

void gt_free(const gt_allocator *alloc, void *ptr)
{
    if (!ptr)
        return;
    if (alloc && alloc->set)
        alloc->callbacks.pfnFree(alloc->callbacks.pUserData, ptr);
    else
        free(ptr);
}
