/* SPDX-License-Identifier: MIT */
/* timeline_record.h — what one recording of a command buffer times
 * (prefix tl_): regions and their timestamps, from vkBeginCommandBuffer to
 * vkEndCommandBuffer. See timeline_record.c.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_RECORD_H
#define GPUTRACE_LAYER_TIMELINE_RECORD_H

#include <vulkan/vulkan.h>

#include "layer/timeline.h"
#include "layer/timeline_device_types.h"

void tl_record_begin(tl_device *td, tl_cb *tcb, const VkCommandBufferBeginInfo *info);
void tl_record_end(tl_device *td, tl_cb *tcb);
void tl_record_cmd_pre(tl_device *td, tl_cb *tcb, const tl_cmd *cmd);
void tl_record_cmd_post(tl_device *td, tl_cb *tcb, const tl_cmd *cmd);
/* The command buffer is reset, re-begun or freed. */
void tl_cb_drop_recording(tl_cb *tcb);

#endif
