/* SPDX-License-Identifier: MIT */
/* timeline_render_pass.h — render passes' subpass view masks (and their
 * attachments, and image views' formats, for the stage arguments), kept from
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

/* Stage arguments of a render pass instance: up to `max` of its first
 * attachments into out (returns how many), all attachments, subpasses and
 * the first subpass's view mask; all 0 when the render pass is unknown. */
uint32_t tl_render_pass_describe(tl_device *td, VkRenderPass rp, tl_attachment *out, uint32_t max,
                                 uint32_t *nattachments, uint32_t *nsubpasses, uint32_t *view_mask);
tl_attachment tl_attachment_of(VkFormat format, VkAttachmentLoadOp load, VkAttachmentStoreOp store,
                               enum tl_attachment_role role, uint32_t index);

/* Image view formats, kept like render passes (whether tracing or not):
 * dynamic rendering names its attachments by view. */
void tl_image_view_add(tl_device *td, VkImageView view, VkFormat format);
void tl_image_view_remove(tl_device *td, VkImageView view);
/* Fills atts[i].format from views[i] (0 when unknown), under one lock. */
void tl_image_view_formats(tl_device *td, tl_attachment *atts, const VkImageView *views,
                           uint32_t n);

#endif
