/* SPDX-License-Identifier: MIT */
/* layer_frame_boundary.h — VK_EXT_frame_boundary provided by the layer
 * where the layers and driver below lack it (loader plumbing, prefix
 * gt_fb_).
 *
 * The extension lets a program that never presents say where its frames
 * end (VkFrameBoundaryEXT chained to a submission, present or sparse
 * binding); the timeline turns those into frames (docs/layer.md, "Frames").
 * lavapipe 22.3 and Khronos validation 1.3.239 do not know it, so:
 *
 * - vkEnumerateDeviceExtensionProperties lists it (also for the layer's own
 *   name, as the manifest does: the loader lets vkCreateDevice enable an
 *   extension only when the driver or an enabled layer's manifest lists
 *   it), and vkGetPhysicalDeviceFeatures2 answers frameBoundary = VK_TRUE;
 * - a device whose application enables it gets it emulated unless the next
 *   entity provides it for real (it lists it, and answers frameBoundary =
 *   VK_TRUE when asked: a loader that copied the layer's own manifest into
 *   the list, as it does for an implicit layer, has a driver that leaves
 *   the unknown structure's VK_FALSE alone);
 * - emulated, nothing of it goes down: the extension name and its feature
 *   structure are taken out of vkCreateDevice's (copied) create info, the
 *   feature structure out of vkGetPhysicalDeviceFeatures2's chain while the
 *   call is down, and every VkFrameBoundaryEXT out of (copies of) the
 *   submission, present and sparse-binding chains, so a validation layer
 *   or driver below never sees a structure it does not know. A chain whose
 *   structures before a VkFrameBoundaryEXT include one the layer cannot size
 *   goes down as it is (logged once): drivers skip what they do not know.
 *
 * Copies live in a gt_fb_scratch for the duration of one call down.
 */
#ifndef GPUTRACE_LAYER_FRAME_BOUNDARY_H
#define GPUTRACE_LAYER_FRAME_BOUNDARY_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/frame_boundary_ext.h"
#include "layer/objects.h"

/* Whether the next entity of `inst` provides the extension for real on
 * `pd` (see above; `probe` also asks for the feature). */
bool gt_fb_native(const gt_instance *inst, VkPhysicalDevice pd, bool probe);

/* vkEnumerateDeviceExtensionProperties(pd, NULL, ...) through the layer:
 * the next entity's list, with VK_EXT_frame_boundary added if missing. */
VkResult gt_fb_enumerate_device_extensions(const gt_instance *inst, VkPhysicalDevice pd,
                                           uint32_t *count, VkExtensionProperties *props);

/* vkGetPhysicalDeviceFeatures2(KHR) through the layer. */
void gt_fb_get_features2(const gt_instance *inst, VkPhysicalDevice pd,
                         VkPhysicalDeviceFeatures2 *features, bool khr);

/* Copies owned for one call down: bump-allocated from up to
 * GT_FB_SCRATCH_BLOCKS blocks of GT_FB_SCRATCH_BLOCK bytes (or one larger
 * array). Initialise with { .alloc = ... }. */
#define GT_FB_SCRATCH_BLOCKS 16u
#define GT_FB_SCRATCH_BLOCK  4096u
typedef struct gt_fb_scratch gt_fb_scratch;
struct gt_fb_scratch {
    const gt_allocator *alloc;
    void *blocks[GT_FB_SCRATCH_BLOCKS];
    uint32_t nblocks;
    size_t used, size; /* in the last block */
};
void gt_fb_scratch_release(gt_fb_scratch *s);

/* Whether a pNext chain holds a VkFrameBoundaryEXT. */
bool gt_fb_in_chain(const void *pnext);

/* The structures to pass down in place of the application's: the same
 * pointer when nothing had to change (not emulated, or no
 * VkFrameBoundaryEXT), else copies without it. NULL only when out of
 * memory (the caller then passes the original). */
const VkSubmitInfo *gt_fb_strip_submits(gt_fb_scratch *s, uint32_t count,
                                        const VkSubmitInfo *submits);
const VkSubmitInfo2 *gt_fb_strip_submits2(gt_fb_scratch *s, uint32_t count,
                                          const VkSubmitInfo2 *submits);
const VkPresentInfoKHR *gt_fb_strip_present(gt_fb_scratch *s, const VkPresentInfoKHR *info);
const VkBindSparseInfo *gt_fb_strip_bind_sparse(gt_fb_scratch *s, uint32_t count,
                                                const VkBindSparseInfo *infos);

/* vkCreateDevice: what the device gets for the application's create info.
 * Emulated, device_setup.c takes the name and the feature structure out of
 * what goes down. */
enum gt_frame_boundary gt_fb_plan_device(const gt_instance *inst, VkPhysicalDevice pd,
                                         const VkDeviceCreateInfo *app);

#endif
