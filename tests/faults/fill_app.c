/* SPDX-License-Identifier: MIT */
/* fill_app.c — see fill_app.h. */
#include "tests/faults/fill_app.h"

#include <stdio.h>
#include <string.h>

const char *fa_label = "fill_app";

bool fa_ok(VkResult r, const char *what)
{
    if (r == VK_SUCCESS)
        return true;
    fprintf(stderr, "%s: %s failed: %d\n", fa_label, what, (int)r);
    return false;
}

bool fa_create_instance(fa_gpu *g, const char *app_name)
{
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = app_name,
        .apiVersion = VK_API_VERSION_1_1,
    };
    const VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    return fa_ok(vkCreateInstance(&ci, NULL, &g->instance), "vkCreateInstance");
}

bool fa_create_device(fa_gpu *g)
{
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult r = vkEnumeratePhysicalDevices(g->instance, &n, &pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0)
        return fa_ok(r == VK_SUCCESS ? VK_ERROR_INITIALIZATION_FAILED : r, "no physical device");

    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nf, NULL);
    VkQueueFamilyProperties fams[16];
    nf = nf > 16 ? 16 : nf;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nf, fams);
    uint32_t family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && family == UINT32_MAX; i++) {
        if ((fams[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) &&
            fams[i].timestampValidBits)
            family = i;
    }
    if (family == UINT32_MAX)
        return fa_ok(VK_ERROR_FEATURE_NOT_PRESENT, "no queue family with timestamps");

    const float prio = 1.0f;
    const VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    const VkDeviceCreateInfo di = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi,
    };
    if (!fa_ok(vkCreateDevice(pd, &di, NULL, &g->device), "vkCreateDevice"))
        return false;
    vkGetDeviceQueue(g->device, family, 0, &g->queue);

    const VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = family,
    };
    const VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = FA_FILL_SIZE,
        .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
    };
    const VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if (!fa_ok(vkCreateCommandPool(g->device, &pi, NULL, &g->pool), "vkCreateCommandPool") ||
        !fa_ok(vkCreateBuffer(g->device, &bi, NULL, &g->buffer), "vkCreateBuffer") ||
        !fa_ok(vkCreateFence(g->device, &fi, NULL, &g->fence), "vkCreateFence"))
        return false;

    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, g->buffer, &req);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    uint32_t type = 0;
    while (type < mem.memoryTypeCount && !(req.memoryTypeBits & (1u << type)))
        type++;
    const VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    const VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = g->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    return fa_ok(vkAllocateMemory(g->device, &ai, NULL, &g->memory), "vkAllocateMemory") &&
           fa_ok(vkBindBufferMemory(g->device, g->buffer, g->memory, 0), "vkBindBufferMemory") &&
           fa_ok(vkAllocateCommandBuffers(g->device, &cai, &g->cb), "vkAllocateCommandBuffers");
}

bool fa_submit_fill(fa_gpu *g, uint32_t value)
{
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (!fa_ok(vkBeginCommandBuffer(g->cb, &begin), "vkBeginCommandBuffer"))
        return false;
    vkCmdFillBuffer(g->cb, g->buffer, 0, FA_FILL_SIZE, value);
    const VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &g->cb,
    };
    return fa_ok(vkEndCommandBuffer(g->cb), "vkEndCommandBuffer") &&
           fa_ok(vkQueueSubmit(g->queue, 1, &si, g->fence), "vkQueueSubmit") &&
           fa_ok(vkWaitForFences(g->device, 1, &g->fence, VK_TRUE, FA_WAIT_NS),
                 "vkWaitForFences") &&
           fa_ok(vkResetFences(g->device, 1, &g->fence), "vkResetFences");
}

void fa_destroy(fa_gpu *g)
{
    if (g->device) {
        vkDeviceWaitIdle(g->device);
        vkDestroyFence(g->device, g->fence, NULL);
        vkDestroyCommandPool(g->device, g->pool, NULL);
        vkDestroyBuffer(g->device, g->buffer, NULL);
        vkFreeMemory(g->device, g->memory, NULL);
        vkDestroyDevice(g->device, NULL);
    }
    if (g->instance)
        vkDestroyInstance(g->instance, NULL);
    memset(g, 0, sizeof *g);
}
