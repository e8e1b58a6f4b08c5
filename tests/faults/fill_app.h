/* SPDX-License-Identifier: MIT */
/* fill_app.h — the Vulkan side of the fault tests' small applications
 * (fork_app.c, signal_app.c): an instance, a device with one queue that
 * writes timestamps, and submissions of one vkCmdFillBuffer each, waited
 * for. Failures are printed on stderr as "<fa_label>: <what> failed: <code>".
 */
#ifndef GPUTRACE_FILL_APP_H
#define GPUTRACE_FILL_APP_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#define FA_FILL_SIZE 65536u
#define FA_WAIT_NS   (30ull * 1000 * 1000 * 1000)

typedef struct fa_gpu fa_gpu;
struct fa_gpu {
    VkInstance instance;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkFence fence;
};

/* What failure messages start with (the program, and which process). */
extern const char *fa_label;

/* True for VK_SUCCESS; otherwise prints what failed. */
bool fa_ok(VkResult r, const char *what);

/* A Vulkan 1.1 instance named `app_name`. */
bool fa_create_instance(fa_gpu *g, const char *app_name);
/* The first physical device: its first graphics or compute family with
 * timestamps, a command buffer, a fence and a buffer to fill. */
bool fa_create_device(fa_gpu *g);
/* One fill of the buffer with `value`, submitted and waited for. */
bool fa_submit_fill(fa_gpu *g, uint32_t value);
/* Destroys whatever exists (after the device is idle) and zeroes `g`. */
void fa_destroy(fa_gpu *g);

#endif
