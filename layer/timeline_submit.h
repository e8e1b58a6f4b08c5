/* SPDX-License-Identifier: MIT */
/* timeline_submit.h — what happens at vkQueueSubmit / vkQueueSubmit2
 * (prefix tl_). See timeline_submit.c.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_SUBMIT_H
#define GPUTRACE_LAYER_TIMELINE_SUBMIT_H

#include <vulkan/vulkan.h>

#include "layer/timeline.h"
#include "layer/timeline_device_types.h"

void tl_submit_pre(tl_device *td, VkQueue queue, const tl_submit *submit);
void tl_submit_post(tl_device *td, VkQueue queue, const tl_submit *submit, VkResult result);

#endif
