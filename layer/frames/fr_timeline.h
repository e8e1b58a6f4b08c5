/* SPDX-License-Identifier: MIT */
/* fr_timeline.h — frames where the timeline's hook points meet them: this
 * module implements timeline.h's swapchain, present and sparse-binding
 * hook points (tl_swapchain_*, tl_queue_present, tl_queue_bind_sparse) on
 * top of fr_frames.h, and ends frames for the VkFrameBoundaryEXT of a
 * submission (fr_tl_submitted, from timeline_entry.c). Frames are counted
 * whether a session traces or not, so GPUTRACE_FRAMES numbers them from
 * the program's first; a frame ready at once wakes the collector.
 */
#ifndef GPUTRACE_LAYER_FRAMES_FR_TIMELINE_H
#define GPUTRACE_LAYER_FRAMES_FR_TIMELINE_H

#include "layer/timeline.h"
#include "layer/timeline_device_types.h"

/* A submission went down (VK_SUCCESS) on a device with
 * VK_EXT_frame_boundary enabled: each VkFrameBoundaryEXT with FRAME_END in
 * its batches ends a frame. */
void fr_tl_submitted(tl_device *td, const tl_submit *submit);

#endif
