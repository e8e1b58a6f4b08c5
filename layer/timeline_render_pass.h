/* SPDX-License-Identifier: MIT */
/* timeline_render_pass.h — render passes' subpass view masks, kept from
 * vkCreateRenderPass* to vkDestroyRenderPass whether tracing or not (under
 * tl_device.rp_lock), and copied into a recording at its render pass begin
 * (prefix tl_).
 */
#ifndef GPUTRACE_LAYER_TIMELINE_RENDER_PASS_H
#define GPUTRACE_LAYER_TIMELINE_RENDER_PASS_H

#include <vulkan/vulkan.h>

#include "layer/timeline_device_types.h"
#include "layer/timeline_recording_types.h"

void tl_render_passes_init(tl_device *td);
void tl_render_passes_finish(tl_device *td);
void tl_render_pass_add(tl_device *td, VkRenderPass rp, const VkRenderPassCreateInfo *info,
                        const VkRenderPassCreateInfo2 *info2);
void tl_render_pass_remove(tl_device *td, VkRenderPass rp);

/* Copies the render pass's view masks into the recording (rec->rp_masks):
 * the render pass may be destroyed while the recording is still in use.
 * None when the render pass is unknown or the recording does not time. */
void tl_render_pass_copy_masks(tl_device *td, tl_recording *rec, VkRenderPass rp);

#endif
