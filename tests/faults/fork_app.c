/* fork_app — a traced Vulkan application that forks, for the fault tests.
 *
 *   fork_app [--fork-after instance|work] [--child vulkan|exit|exec|none] [--submissions N]
 *
 * The parent creates an instance (and, with --fork-after work, the default,
 * a device and N submissions), forks, then does its (remaining) work: N
 * submissions of one vkCmdFillBuffer each, waiting for each, and reaps the
 * child. The child, sharing everything the layer had at the fork:
 *   vulkan  creates its own instance and device, submits N fills, destroys
 *           them and exits (atexit handlers and destructors run);
 *   exit    exits at once through exit(0);
 *   exec    replaces itself with /bin/true.
 * Nothing of the parent's Vulkan objects is used in the child.
 * --child none does not fork at all: instance, device, N submissions,
 * destroy, exit — the shortest complete Vulkan program, which submits
 * within milliseconds of vkCreateDevice (the start-up wait tests).
 *
 * Prints "fork_app: pid=P child_pid=Q submissions=S regions=R child=C"
 * (parent only): S submissions, R regions the timing layer should report
 * for them (the command buffer and the fill: 2 per submission), C the
 * child's exit status.
 * Exit 0 when both succeeded, 1 otherwise, 2 usage.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vulkan/vulkan.h>

#define PROG      "fork_app"
#define FILL_SIZE 65536u
#define WAIT_NS   (30ull * 1000 * 1000 * 1000)

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

static const char *who = "parent";

static bool ok(VkResult r, const char *what)
{
    if (r == VK_SUCCESS)
        return true;
    fprintf(stderr, PROG " (%s): %s failed: %d\n", who, what, (int)r);
    return false;
}

static bool create_instance(gpu *g)
{
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = PROG,
        .apiVersion = VK_API_VERSION_1_1,
    };
    const VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    return ok(vkCreateInstance(&ci, NULL, &g->instance), "vkCreateInstance");
}

static bool create_device(gpu *g)
{
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult r = vkEnumeratePhysicalDevices(g->instance, &n, &pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0)
        return ok(r == VK_SUCCESS ? VK_ERROR_INITIALIZATION_FAILED : r, "no physical device");

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
        return ok(VK_ERROR_FEATURE_NOT_PRESENT, "no queue family with timestamps");

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
    return ok(vkAllocateMemory(g->device, &ai, NULL, &g->memory), "vkAllocateMemory") &&
           ok(vkBindBufferMemory(g->device, g->buffer, g->memory, 0), "vkBindBufferMemory") &&
           ok(vkAllocateCommandBuffers(g->device, &cai, &g->cb), "vkAllocateCommandBuffers");
}

/* N submissions of one fill each, each waited for. */
static bool submit_fills(gpu *g, unsigned n, unsigned *done)
{
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    for (unsigned i = 0; i < n; i++) {
        if (!ok(vkBeginCommandBuffer(g->cb, &begin), "vkBeginCommandBuffer"))
            return false;
        vkCmdFillBuffer(g->cb, g->buffer, 0, FILL_SIZE, i);
        const VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &g->cb,
        };
        if (!ok(vkEndCommandBuffer(g->cb), "vkEndCommandBuffer") ||
            !ok(vkQueueSubmit(g->queue, 1, &si, g->fence), "vkQueueSubmit") ||
            !ok(vkWaitForFences(g->device, 1, &g->fence, VK_TRUE, WAIT_NS), "vkWaitForFences") ||
            !ok(vkResetFences(g->device, 1, &g->fence), "vkResetFences"))
            return false;
        (*done)++;
    }
    return true;
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
    memset(g, 0, sizeof *g);
}

static int child_main(const char *mode, unsigned n)
{
    who = "child";
    if (strcmp(mode, "exit") == 0)
        exit(0);
    if (strcmp(mode, "exec") == 0) {
        execl("/bin/true", "true", (char *)NULL);
        perror(PROG " (child): exec /bin/true");
        _exit(1);
    }
    gpu g = { 0 };
    unsigned done = 0;
    bool good = create_instance(&g) && create_device(&g) && submit_fills(&g, n, &done);
    destroy(&g);
    fprintf(stderr, PROG " (child): %u submission(s)\n", done);
    exit(good ? 0 : 1);
}

int main(int argc, char **argv)
{
    const char *child = "vulkan";
    bool after_work = true;
    unsigned n = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--child") == 0 && i + 1 < argc) {
            child = argv[++i];
        } else if (strcmp(argv[i], "--fork-after") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "instance") != 0 && strcmp(v, "work") != 0)
                goto usage;
            after_work = strcmp(v, "work") == 0;
        } else if (strcmp(argv[i], "--submissions") == 0 && i + 1 < argc) {
            n = (unsigned)strtoul(argv[++i], NULL, 10);
        } else {
            goto usage;
        }
    }
    if (strcmp(child, "vulkan") != 0 && strcmp(child, "exit") != 0 && strcmp(child, "exec") != 0 &&
        strcmp(child, "none") != 0)
        goto usage;
    if (strcmp(child, "none") == 0) {
        gpu g = { 0 };
        unsigned done = 0;
        bool good = create_instance(&g) && create_device(&g) && submit_fills(&g, n, &done);
        destroy(&g);
        printf(PROG ": pid=%ld child_pid=0 submissions=%u regions=%u child=0\n", (long)getpid(),
               done, 2 * done);
        return good ? 0 : 1;
    }

    gpu g = { 0 };
    unsigned done = 0;
    bool good = create_instance(&g);
    if (good && after_work)
        good = create_device(&g) && submit_fills(&g, n, &done);
    if (!good) {
        destroy(&g);
        return 1;
    }

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror(PROG ": fork");
        destroy(&g);
        return 1;
    }
    if (pid == 0)
        return child_main(child, n);

    if (!after_work)
        good = create_device(&g);
    good = good && submit_fills(&g, n, &done);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror(PROG ": waitpid");
            status = 1 << 8;
            break;
        }
    }
    destroy(&g);
    int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf(PROG ": pid=%ld child_pid=%ld submissions=%u regions=%u child=%d\n", (long)getpid(),
           (long)pid, done, 2 * done, child_rc);
    return good && child_rc == 0 ? 0 : 1;

usage:
    fprintf(stderr, "usage: " PROG " [--fork-after instance|work] [--child vulkan|exit|exec|none] "
                    "[--submissions N]\n");
    return 2;
}
