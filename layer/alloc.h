/* SPDX-License-Identifier: MIT */
/* alloc.h — every allocation of the layer: through the application's
 * VkAllocationCallbacks when it gave some to vkCreateInstance /
 * vkCreateDevice, else malloc.
 *
 * Below both the loader plumbing and the timing feature: each keeps a copy
 * of the allocator with the object it belongs to (gt_instance.alloc,
 * gt_device.alloc) and passes it here. Prefix gt_.
 */
#ifndef GPUTRACE_LAYER_ALLOC_H
#define GPUTRACE_LAYER_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include <vulkan/vulkan.h>

/* Application allocator, copied because the application's struct need not
 * outlive the call that passed it. */
typedef struct gt_allocator gt_allocator;
struct gt_allocator {
    VkAllocationCallbacks callbacks;
    bool set;
};

/* `callbacks` may be NULL (malloc then). */
void gt_allocator_init(gt_allocator *alloc, const VkAllocationCallbacks *callbacks);

/* Zeroed memory, suitably aligned for any type; NULL on failure. `alloc`
 * may be NULL (malloc). */
void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope);
void gt_free(const gt_allocator *alloc, void *ptr);

/* The callbacks to pass down to Vulkan calls the layer makes itself. */
static inline const VkAllocationCallbacks *gt_allocator_callbacks(const gt_allocator *alloc)
{
    return alloc->set ? &alloc->callbacks : NULL;
}

#endif
