/* SPDX-License-Identifier: MIT */
/* timeline_device.h — the timing feature's per-device state (prefix tl_):
 * creation from a gt_device, destruction, and the collector started
 * lazily on first use while tracing. The timeline.h calls about queues,
 * command pools and command buffers are in timeline_device.c too.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_DEVICE_H
#define GPUTRACE_LAYER_TIMELINE_DEVICE_H

#include <stdbool.h>

#include <vulkan/vulkan.h>

#include "layer/objects.h"
#include "layer/timeline_device_types.h"

VkResult tl_device_create(gt_device *dev);
void tl_device_destroy(gt_device *dev);
/* Starts the collector on first use while tracing; false if it cannot. */
bool tl_device_ensure_started(tl_device *td);

#endif
