/* SPDX-License-Identifier: MIT */
/* bench_fake_driver.h — the do-nothing "next" entity bench_layer_hooks
 * puts below the layer (prefix fake_): an instance, one physical device
 * (one queue family, one memory heap, calibrated timestamps) and a device
 * whose entry points do nothing. Fences are always signalled, query results
 * are invented from CLOCK_MONOTONIC, handles are counted up; commands,
 * destroys and frees return nothing, everything else VK_SUCCESS. Its
 * functions are also what the benchmark calls "directly", to subtract.
 */
#ifndef GPUTRACE_LAYER_BENCH_FAKE_DRIVER_H
#define GPUTRACE_LAYER_BENCH_FAKE_DRIVER_H

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

/* vkGetInstanceProcAddr / vkGetDeviceProcAddr of the fake, and the
 * loader's callback that gives a new dispatchable object its key. */
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_gipa(VkInstance instance, const char *name);
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_gdpa(VkDevice dev, const char *name);
VKAPI_ATTR VkResult VKAPI_CALL fake_set_loader_data(VkDevice dev, void *object);

/* Timestamps the layer wrote through the fake: a run that should trace but
 * wrote none measured a pass-through, and fails instead of printing a
 * figure. */
unsigned long fake_timestamps_written(void);

#endif
