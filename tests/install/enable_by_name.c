/* SPDX-License-Identifier: MIT */
/* enable_by_name — creates a Vulkan instance with VK_LAYER_GPUTRACE_timeline
 * in ppEnabledLayerNames, as an application that wants the layer would, and
 * destroys it. Whether the layer ran is for the caller to read from the
 * layer's log. Exit 0 when vkCreateInstance succeeded, 1 otherwise.
 */
#include <stdio.h>

#include <vulkan/vulkan.h>

int main(void)
{
    const char *const layers[] = { "VK_LAYER_GPUTRACE_timeline" };
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "enable_by_name",
        .apiVersion = VK_API_VERSION_1_1,
    };
    const VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = 1,
        .ppEnabledLayerNames = layers,
    };
    VkInstance instance;
    VkResult r = vkCreateInstance(&info, NULL, &instance);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "enable_by_name: vkCreateInstance with %s: VkResult %d\n", layers[0], r);
        return 1;
    }
    vkDestroyInstance(instance, NULL);
    return 0;
}
