/* signal_app — a traced Vulkan application with SIGINT/SIGTERM handlers of
 * its own, for output_test.sh (how the layer's embedded backend finishes
 * its trace on a signal without taking the signal from the application).
 *
 *   signal_app --handler before|after|none [--on-signal flag|exit]
 *              [--max-ms N]
 *
 * It creates an instance, installs its handler for SIGINT and SIGTERM
 * before vkCreateDevice (--handler before: the layer then finds it and
 * calls it) or after (the layer's handler, installed by vkCreateDevice, is
 * replaced), prints "signal_app: ready" on stdout and submits one
 * vkCmdFillBuffer at a time, waiting for each, until a signal arrives (or
 * --max-ms passes, default 60000). The handler:
 *   flag  sets a flag: the program stops submitting, destroys everything
 *         and exits 3 (a clean shutdown, the usual pattern);
 *   exit  writes "signal_app: handler exit" and _exit(42)s at once (no
 *         destructor runs: what the file holds is what the layer wrote
 *         before calling the handler).
 * Before exiting (flag, or time out: exit 0) it prints
 *   "signal_app: signal=S submissions=N regions=R"
 * where R = 2 per submission (the command buffer and the fill).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vulkan/vulkan.h>

#define PROG      "signal_app"
#define FILL_SIZE 65536u
#define WAIT_NS   (30ull * 1000 * 1000 * 1000)

static volatile sig_atomic_t got_signal;
static bool exit_in_handler;

static void on_signal(int signo)
{
    got_signal = signo;
    if (exit_in_handler) {
        static const char msg[] = PROG ": handler exit\n";
        ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
        (void)w;
        _exit(42);
    }
}

static void install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static bool ok(VkResult r, const char *what)
{
    if (r == VK_SUCCESS)
        return true;
    fprintf(stderr, PROG ": %s failed: %d\n", what, (int)r);
    return false;
}

typedef struct gpu gpu;
struct gpu {
    VkInstance instance;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkFence fence;
};

static bool create_device(gpu *g)
{
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult r = vkEnumeratePhysicalDevices(g->instance, &n, &pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0)
        return ok(VK_ERROR_INITIALIZATION_FAILED, "vkEnumeratePhysicalDevices");
    VkQueueFamilyProperties fams[16];
    uint32_t nf = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nf, fams);
    uint32_t family = 0;
    while (family < nf &&
           !(fams[family].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)))
        family++;
    if (family == nf)
        return ok(VK_ERROR_FEATURE_NOT_PRESENT, "queue family");
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
    if (!ok(vkCreateDevice(pd, &di, NULL, &g->device), "vkCreateDevice"))
        return false;
    vkGetDeviceQueue(g->device, family, 0, &g->queue);
    const VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = family,
    };
    const VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = FILL_SIZE,
        .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
    };
    const VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if (!ok(vkCreateCommandPool(g->device, &pi, NULL, &g->pool), "vkCreateCommandPool") ||
        !ok(vkCreateBuffer(g->device, &bi, NULL, &g->buffer), "vkCreateBuffer") ||
        !ok(vkCreateFence(g->device, &fi, NULL, &g->fence), "vkCreateFence"))
        return false;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, g->buffer, &req);
    uint32_t type = 0;
    while (type < 32 && !(req.memoryTypeBits & (1u << type)))
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
    return ok(vkAllocateMemory(g->device, &ai, NULL, &g->memory), "vkAllocateMemory") &&
           ok(vkBindBufferMemory(g->device, g->buffer, g->memory, 0), "vkBindBufferMemory") &&
           ok(vkAllocateCommandBuffers(g->device, &cai, &g->cb), "vkAllocateCommandBuffers");
}

static bool submit_fill(gpu *g, uint32_t value)
{
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (!ok(vkBeginCommandBuffer(g->cb, &begin), "vkBeginCommandBuffer"))
        return false;
    vkCmdFillBuffer(g->cb, g->buffer, 0, FILL_SIZE, value);
    const VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &g->cb,
    };
    return ok(vkEndCommandBuffer(g->cb), "vkEndCommandBuffer") &&
           ok(vkQueueSubmit(g->queue, 1, &si, g->fence), "vkQueueSubmit") &&
           ok(vkWaitForFences(g->device, 1, &g->fence, VK_TRUE, WAIT_NS), "vkWaitForFences") &&
           ok(vkResetFences(g->device, 1, &g->fence), "vkResetFences");
}

static void destroy(gpu *g)
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
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int usage(void)
{
    fprintf(stderr, "usage: " PROG " --handler before|after|none [--on-signal flag|exit] "
                    "[--max-ms N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *when = NULL;
    double max_ms = 60000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--handler") == 0 && i + 1 < argc)
            when = argv[++i];
        else if (strcmp(argv[i], "--on-signal") == 0 && i + 1 < argc)
            exit_in_handler = strcmp(argv[++i], "exit") == 0;
        else if (strcmp(argv[i], "--max-ms") == 0 && i + 1 < argc)
            max_ms = atof(argv[++i]);
        else
            return usage();
    }
    if (!when || (strcmp(when, "before") && strcmp(when, "after") && strcmp(when, "none")))
        return usage();

    gpu g;
    memset(&g, 0, sizeof g);
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = PROG,
        .apiVersion = VK_API_VERSION_1_1,
    };
    const VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    if (!ok(vkCreateInstance(&ci, NULL, &g.instance), "vkCreateInstance"))
        return 1;
    if (strcmp(when, "before") == 0)
        install_handler();
    if (!create_device(&g)) {
        destroy(&g);
        return 1;
    }
    if (strcmp(when, "after") == 0)
        install_handler();
    printf(PROG ": ready\n");
    fflush(stdout);

    unsigned submissions = 0;
    bool good = true;
    double until = now_ms() + max_ms;
    while (!got_signal && good && now_ms() < until) {
        good = submit_fill(&g, submissions);
        submissions += good;
    }
    destroy(&g);
    printf(PROG ": signal=%d submissions=%u regions=%u\n", (int)got_signal, submissions,
           2 * submissions);
    if (!good)
        return 1;
    return got_signal ? 3 : 0;
}
