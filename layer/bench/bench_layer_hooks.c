/* SPDX-License-Identifier: MIT */
/* bench_layer_hooks — CPU time the layer's hooks add per instrumented
 * region, measured without a driver.
 *
 * The program plays loader and ICD for the layer: it dlopens the built
 * library, negotiates, and creates an instance and a device through the
 * layer's own vkCreateInstance / vkCreateDevice with a fake "next" whose
 * entry points do nothing (bench_fake_driver.c: fences are always
 * signalled, query results are invented, calibrated timestamps read
 * CLOCK_MONOTONIC). It then records
 * and submits command buffers through the layer's hooks and, separately,
 * makes exactly the same calls directly on the fake, and reports
 *
 *   (thread CPU time through the layer - thread CPU time direct) / regions
 *
 * for the recording and submitting thread: everything the application's
 * thread pays, from the foundation's handle lookup to the timestamps, the
 * region bookkeeping, the submission snapshot, our fence submit and the
 * vk_queue_submit packet. The collector thread's CPU time (off the
 * application's threads) is reported on its own line. Whether the layer
 * traces is up to the environment (GPUTRACE_OUTPUT / GPUTRACE_BACKEND).
 *
 * With --presents it also measures the application thread's CPU time per
 * vkQueuePresentKHR (through a swapchain created through the layer), as
 * two figures: the presents of frames of one recorded and submitted
 * command buffer each, timed around each present call (<label>_present: a
 * frame whose work is still out when it is presented, the usual case); and
 * presents alone (<label>_present_alone: every frame is ready at its
 * present, so the layer also wakes its collector); and a third, the
 * vkWaitForFences a frame makes for an earlier one's fence (<label>_wait:
 * one fence, signalled, no time limit; while timing, a host-wait slice).
 * --compare OLD.so runs the same measurements on a second build of the
 * layer (loaded beside the first, its figures labelled <label>_old...),
 * interleaved round by round with the first: two builds side by side in
 * one run.
 *
 * --env NAME:VAR=VALUE[,VAR=VALUE...] (up to three) runs them as well on
 * the same build in another configuration, interleaved with the rest and
 * labelled <label>_NAME: a private copy of LAYER.so (its own globals, so
 * it reads its settings afresh) set up, before the others, with the
 * process's environment changed by those assignments (VAR= unsets VAR),
 * put back once its instance and device exist. Settings the layer would
 * read later (none today) come from the process's environment. A session
 * outside its GPUTRACE_FRAMES window beside no session at all, say:
 *   GPUTRACE_BACKEND=system bench_layer_hooks LAYER.so --presents
 *     --env closed:GPUTRACE_OUTPUT=/tmp/t.pftrace,GPUTRACE_BACKEND=,GPUTRACE_FRAMES=1000000..
 *
 * With --memory it measures memory events instead: each round allocates
 * memory, creates a buffer, binds, maps, unmaps, destroys and frees it (7
 * calls, each a memory event while a session wants them), through the layer
 * and directly, and reports the difference per call. With the system
 * backend and no session that is the hooks' own bookkeeping (the
 * live-object table, kept for a later session); with the embedded backend
 * and GPUTRACE_MEMORY unset the layer hands out the fake's own functions
 * (0 ns), as a library without memory hooks does.
 *
 * usage: bench_layer_hooks LAYER.so [--iterations N] [--label NAME]
 *                          [--presents] [--compare OLD.so] [--env NAME:VAR=VALUE,...]...
 *                          [--memory]
 * prints: BENCH <label> <ns> ns   (and BENCH <label>_collector <ns> ns)
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "layer/bench/bench_fake_driver.h"

#define CBS        64
#define DISPATCHES 8
#define COPIES     6
#define FILLS      4
/* Per command buffer: itself, one label, the commands. */
#define REGIONS_PER_CB (1 + 1 + DISPATCHES + COPIES + FILLS)

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the workload ------------------------------------------------------------------ */

typedef struct hook_api hook_api;
struct hook_api {
    PFN_vkBeginCommandBuffer BeginCommandBuffer;
    PFN_vkEndCommandBuffer EndCommandBuffer;
    PFN_vkCmdDispatch CmdDispatch;
    PFN_vkCmdCopyBuffer CmdCopyBuffer;
    PFN_vkCmdFillBuffer CmdFillBuffer;
    PFN_vkCmdBeginDebugUtilsLabelEXT CmdBeginDebugUtilsLabelEXT;
    PFN_vkCmdEndDebugUtilsLabelEXT CmdEndDebugUtilsLabelEXT;
    PFN_vkQueueSubmit QueueSubmit;
    PFN_vkQueuePresentKHR QueuePresentKHR;
    PFN_vkWaitForFences WaitForFences;
};

static void load_api(hook_api *a, PFN_vkGetDeviceProcAddr gdpa, VkDevice dev)
{
#define LOAD(n) a->n = (PFN_vk##n)gdpa(dev, "vk" #n)
    LOAD(BeginCommandBuffer);
    LOAD(EndCommandBuffer);
    LOAD(CmdDispatch);
    LOAD(CmdCopyBuffer);
    LOAD(CmdFillBuffer);
    LOAD(CmdBeginDebugUtilsLabelEXT);
    LOAD(CmdEndDebugUtilsLabelEXT);
    LOAD(QueueSubmit);
    LOAD(QueuePresentKHR);
    LOAD(WaitForFences);
#undef LOAD
}

/* What a frame ends with: nothing, or a present of `swapchain`. */
typedef struct frame_end frame_end;
struct frame_end {
    bool present, record; /* record: a command buffer and its submission too */
    VkSwapchainKHR swapchain;
    uint64_t present_ns;
};

static void present(const hook_api *a, VkQueue queue, VkSwapchainKHR swapchain)
{
    const uint32_t image = 0;
    const VkPresentInfoKHR pi = {
        .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR,
        .swapchainCount = 1,
        .pSwapchains = &swapchain,
        .pImageIndices = &image,
    };
    a->QueuePresentKHR(queue, &pi);
}

/* Records and submits `iterations` command buffers (with `fe`, each
 * followed by a present, or only the presents); returns thread CPU ns, and
 * in fe->present_ns what the present calls took. */
static uint64_t run_frames(const hook_api *a, const VkCommandBuffer *cbs, VkQueue queue,
                           unsigned iterations, frame_end *fe);

static uint64_t run(const hook_api *a, const VkCommandBuffer *cbs, VkQueue queue,
                    unsigned iterations)
{
    frame_end none = { .record = true };
    return run_frames(a, cbs, queue, iterations, &none);
}

static uint64_t run_frames(const hook_api *a, const VkCommandBuffer *cbs, VkQueue queue,
                           unsigned iterations, frame_end *fe)
{
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    const VkDebugUtilsLabelEXT label = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                         .pLabelName = "bench region" };
    const VkBufferCopy copy = { 0, 0, 256 };
    const VkBuffer buf = (VkBuffer)(uintptr_t)0x1234;
    uint64_t t0 = thread_cpu_ns();
    for (unsigned i = 0; i < iterations; i++) {
        if (fe->present && !fe->record) {
            present(a, queue, fe->swapchain);
            continue;
        }
        VkCommandBuffer cb = cbs[i % CBS];
        a->BeginCommandBuffer(cb, &begin);
        a->CmdBeginDebugUtilsLabelEXT(cb, &label);
        for (int d = 0; d < DISPATCHES; d++)
            a->CmdDispatch(cb, 16, 1, 1);
        for (int c = 0; c < COPIES; c++)
            a->CmdCopyBuffer(cb, buf, buf, 1, &copy);
        for (int f = 0; f < FILLS; f++)
            a->CmdFillBuffer(cb, buf, 0, 256, 0);
        a->CmdEndDebugUtilsLabelEXT(cb);
        a->EndCommandBuffer(cb);
        const VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &cb,
        };
        a->QueueSubmit(queue, 1, &si, VK_NULL_HANDLE);
        if (fe->present) {
            const uint64_t p0 = thread_cpu_ns();
            present(a, queue, fe->swapchain);
            fe->present_ns += thread_cpu_ns() - p0;
        }
    }
    return thread_cpu_ns() - t0;
}

/* `iterations` waits for `fence` (the fake's are always signalled); returns
 * thread CPU ns. */
static uint64_t run_waits(const hook_api *a, VkDevice device, VkFence fence, unsigned iterations)
{
    uint64_t t0 = thread_cpu_ns();
    for (unsigned i = 0; i < iterations; i++)
        a->WaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
    return thread_cpu_ns() - t0;
}

/* The memory calls of one round (see the top): through the layer or to
 * the fake directly. */
typedef struct memory_api memory_api;
struct memory_api {
    PFN_vkAllocateMemory AllocateMemory;
    PFN_vkFreeMemory FreeMemory;
    PFN_vkCreateBuffer CreateBuffer;
    PFN_vkDestroyBuffer DestroyBuffer;
    PFN_vkBindBufferMemory BindBufferMemory;
    PFN_vkMapMemory MapMemory;
    PFN_vkUnmapMemory UnmapMemory;
};
#define MEMORY_CALLS 7

static void load_memory_api(memory_api *a, PFN_vkGetDeviceProcAddr gdpa, VkDevice dev)
{
#define LOAD(n) a->n = (PFN_vk##n)gdpa(dev, "vk" #n)
    LOAD(AllocateMemory);
    LOAD(FreeMemory);
    LOAD(CreateBuffer);
    LOAD(DestroyBuffer);
    LOAD(BindBufferMemory);
    LOAD(MapMemory);
    LOAD(UnmapMemory);
#undef LOAD
}

/* `iterations` rounds of the memory calls; returns thread CPU ns. */
static uint64_t run_memory(const memory_api *a, VkDevice dev, unsigned iterations)
{
    const VkMemoryAllocateInfo alloc = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                         .allocationSize = 4096 };
    const VkBufferCreateInfo buffer = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                        .size = 4096,
                                        .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    uint64_t t0 = thread_cpu_ns();
    for (unsigned i = 0; i < iterations; i++) {
        VkDeviceMemory mem;
        VkBuffer buf;
        void *map;
        a->AllocateMemory(dev, &alloc, NULL, &mem);
        a->CreateBuffer(dev, &buffer, NULL, &buf);
        a->BindBufferMemory(dev, buf, mem, 0);
        a->MapMemory(dev, mem, 0, VK_WHOLE_SIZE, 0, &map);
        a->UnmapMemory(dev, mem);
        a->DestroyBuffer(dev, buf, NULL);
        a->FreeMemory(dev, mem, NULL);
    }
    return thread_cpu_ns() - t0;
}

/* CPU time of the collector thread(s), from /proc (clock ticks). */
static uint64_t collector_cpu_ns(void)
{
    uint64_t total = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    long hz = sysconf(_SC_CLK_TCK);
    while ((e = readdir(d))) {
        char path[300], comm[64] = "", stat[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        if (strncmp(comm, "gputrace-gpu", 12) != 0)
            continue;
        /* schedstat: time on a CPU in ns (stat counts 10 ms ticks, too
         * coarse for a few hundred ns per region). */
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        f = fopen(path, "r");
        unsigned long long run_ns = 0;
        bool have_ns = f && fscanf(f, "%llu", &run_ns) == 1 && run_ns > 0;
        if (f)
            fclose(f);
        if (have_ns) {
            total += run_ns;
            continue;
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = '\0';
        const char *p = strrchr(stat, ')');
        unsigned long utime = 0, stime = 0;
        /* Fields after the command: state ... utime is the 14th overall. */
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                        &stime) == 2)
            total += (uint64_t)(utime + stime) * 1000000000u / (uint64_t)hz;
    }
    closedir(d);
    return total;
}

/* Waits until the collector thread used no CPU for 60 ms (at most 5 s): it
 * has written out everything submitted so far. */
static void wait_collector_idle(void)
{
    uint64_t last = collector_cpu_ns();
    for (int i = 0; i < 250; i++) {
        usleep(20000);
        uint64_t now = collector_cpu_ns();
        if (now == last && i >= 2)
            return;
        last = now;
    }
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The layer's vkGetInstanceProcAddr, from its negotiation; NULL on error. */
static PFN_vkGetInstanceProcAddr load_layer(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench_layer_hooks: %s\n", dlerror());
        return NULL;
    }
    PFN_vkNegotiateLoaderLayerInterfaceVersion negotiate =
        (PFN_vkNegotiateLoaderLayerInterfaceVersion)dlsym(h,
                                                          "vkNegotiateLoaderLayerInterfaceVersion");
    VkNegotiateLayerInterface ni = {
        .sType = LAYER_NEGOTIATE_INTERFACE_STRUCT,
        .loaderLayerInterfaceVersion = 2,
    };
    if (!negotiate || negotiate(&ni) != VK_SUCCESS) {
        fprintf(stderr, "bench_layer_hooks: negotiation failed\n");
        return NULL;
    }
    return ni.pfnGetInstanceProcAddr;
}

/* An instance and a device created through the layer over the fake
 * driver; false on error. */
static bool create_through_layer(PFN_vkGetInstanceProcAddr layer_gipa, VkInstance *out_instance,
                                 VkDevice *out_device)
{
    /* Instance through the layer. */
    VkLayerInstanceLink ilink = { .pfnNextGetInstanceProcAddr = fake_gipa };
    VkLayerInstanceCreateInfo ilci = {
        .sType = VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO,
        .function = VK_LAYER_LINK_INFO,
        .u.pLayerInfo = &ilink,
    };
    const VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                    .apiVersion = VK_API_VERSION_1_3 };
    const VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                       .pNext = &ilci,
                                       .pApplicationInfo = &app };
    VkInstance instance;
    PFN_vkCreateInstance create_instance =
        (PFN_vkCreateInstance)layer_gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (create_instance(&ici, NULL, &instance) != VK_SUCCESS) {
        fprintf(stderr, "bench_layer_hooks: vkCreateInstance failed\n");
        return false;
    }
    PFN_vkEnumeratePhysicalDevices enumerate =
        (PFN_vkEnumeratePhysicalDevices)layer_gipa(instance, "vkEnumeratePhysicalDevices");
    uint32_t npd = 1;
    VkPhysicalDevice pd;
    enumerate(instance, &npd, &pd);

    /* Device through the layer. */
    VkLayerDeviceLink dlink = { .pfnNextGetInstanceProcAddr = fake_gipa,
                                .pfnNextGetDeviceProcAddr = fake_gdpa };
    VkLayerDeviceCreateInfo loader_data = {
        .sType = VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO,
        .function = VK_LOADER_DATA_CALLBACK,
        .u.pfnSetDeviceLoaderData = fake_set_loader_data,
    };
    VkLayerDeviceCreateInfo dlci = {
        .sType = VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO,
        .pNext = &loader_data,
        .function = VK_LAYER_LINK_INFO,
        .u.pLayerInfo = &dlink,
    };
    const float prio = 1.0f;
    const VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                          .queueCount = 1,
                                          .pQueuePriorities = &prio };
    const VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                     .pNext = &dlci,
                                     .queueCreateInfoCount = 1,
                                     .pQueueCreateInfos = &qci };
    PFN_vkCreateDevice create_device = (PFN_vkCreateDevice)layer_gipa(instance, "vkCreateDevice");
    VkDevice device;
    if (create_device(pd, &dci, NULL, &device) != VK_SUCCESS) {
        fprintf(stderr, "bench_layer_hooks: vkCreateDevice failed\n");
        return false;
    }
    *out_instance = instance;
    *out_device = device;
    return true;
}

/* One build of the layer with its instance, device and the calls through it. */
typedef struct subject subject;
struct subject {
    char label[128];
    /* --env: a private copy of the library, and what to change in the
     * environment while it is set up ("VAR=VALUE,..."). */
    const char *env;
    bool expect_stamps;   /* it should time: GPUTRACE_OUTPUT, no GPUTRACE_FRAMES */
    unsigned long stamps; /* timestamps its recordings wrote */
    VkInstance instance;
    VkDevice device;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkGetDeviceProcAddr gdpa;
    hook_api api;
    VkQueue queue;
    VkCommandBuffer cbs[CBS];
    VkSwapchainKHR swapchain;
    VkFence fence;
};

/* A private copy of `lib` in $TMPDIR (the same file would be the same
 * library to dlopen, globals and all); its path into `path`. */
static bool copy_library(const char *lib, char *path, size_t size)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/bench_layer_hooks-XXXXXX.so", dir && *dir ? dir : "/tmp");
    int out = mkstemps(path, 3), in = open(lib, O_RDONLY);
    bool ok = out >= 0 && in >= 0;
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof buf)) != 0)
        ok = n > 0 && write(out, buf, (size_t)n) == n;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "bench_layer_hooks: cannot copy %s to %s\n", lib, path);
        if (out >= 0)
            unlink(path);
        path[0] = '\0';
    }
    return ok;
}

/* Makes the assignments "VAR=VALUE,..." of `env` (an empty VALUE unsets
 * VAR), the old values into `saved`; with `restore`, puts `saved` back. */
#define MAX_ASSIGNMENTS 16
static bool apply_env(const char *env, char **saved, bool restore)
{
    char copy[1024];
    if (snprintf(copy, sizeof copy, "%s", env) >= (int)sizeof copy)
        return false;
    int i = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ","), i++) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || i == MAX_ASSIGNMENTS)
            return false;
        *eq = '\0';
        if (restore) {
            if (saved[i])
                setenv(tok, saved[i], 1);
            else
                unsetenv(tok);
            free(saved[i]);
            saved[i] = NULL;
            continue;
        }
        const char *old = getenv(tok);
        saved[i] = old ? strdup(old) : NULL;
        if (eq[1])
            setenv(tok, eq + 1, 1);
        else
            unsetenv(tok);
    }
    return true;
}

static bool set_up_layer(subject *sub, const char *lib)
{
    const char *out = getenv("GPUTRACE_OUTPUT"), *frames = getenv("GPUTRACE_FRAMES");
    sub->expect_stamps = out && *out && !(frames && *frames);
    sub->gipa = load_layer(lib);
    return sub->gipa && create_through_layer(sub->gipa, &sub->instance, &sub->device);
}

static bool set_up(subject *sub, const char *lib)
{
    bool ok;
    if (sub->env) {
        char copy[4096], *saved[MAX_ASSIGNMENTS] = { 0 };
        if (!apply_env(sub->env, saved, false)) {
            fprintf(stderr, "bench_layer_hooks: --env %s: expected VAR=VALUE,...\n", sub->env);
            return false;
        }
        ok = copy_library(lib, copy, sizeof copy);
        ok = ok && set_up_layer(sub, copy);
        if (copy[0])
            unlink(copy); /* mapped: it stays loaded */
        apply_env(sub->env, saved, true);
    } else {
        ok = set_up_layer(sub, lib);
    }
    if (!ok)
        return false;
    sub->gdpa = (PFN_vkGetDeviceProcAddr)sub->gipa(sub->instance, "vkGetDeviceProcAddr");
    VkDevice device = sub->device;
    load_api(&sub->api, sub->gdpa, device);
    ((PFN_vkGetDeviceQueue)sub->gdpa(device, "vkGetDeviceQueue"))(device, 0, 0, &sub->queue);
    const VkCommandPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO };
    VkCommandPool pool;
    ((PFN_vkCreateCommandPool)sub->gdpa(device, "vkCreateCommandPool"))(device, &pci, NULL, &pool);
    const VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = CBS,
    };
    ((PFN_vkAllocateCommandBuffers)sub->gdpa(device, "vkAllocateCommandBuffers"))(device, &cai,
                                                                                  sub->cbs);
    /* A FIFO swapchain (the layer follows it from here: present mode). */
    const VkSwapchainCreateInfoKHR sci = {
        .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR,
        .surface = (VkSurfaceKHR)(uintptr_t)0x5000,
        .minImageCount = 3,
        .presentMode = VK_PRESENT_MODE_FIFO_KHR,
    };
    ((PFN_vkCreateSwapchainKHR)sub->gdpa(device, "vkCreateSwapchainKHR"))(device, &sci, NULL,
                                                                          &sub->swapchain);
    const VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    ((PFN_vkCreateFence)sub->gdpa(device, "vkCreateFence"))(device, &fci, NULL, &sub->fence);
    return true;
}

static void tear_down(subject *sub)
{
    ((PFN_vkDestroyDevice)sub->gdpa(sub->device, "vkDestroyDevice"))(sub->device, NULL);
    ((PFN_vkDestroyInstance)sub->gipa(sub->instance, "vkDestroyInstance"))(sub->instance, NULL);
}

enum {
    ROUNDS = 7,
    MAX_SUBJECTS = 5 /* the build, --compare's and three --env */
};
/* What one round measures for each subject, and directly. */
enum {
    M_REGIONS,
    M_FRAMES,  /* the presents of frames of a command buffer each */
    M_PRESENT, /* presents alone */
    M_WAIT,    /* fence waits */
    M_COUNT
};

/* Medians of ROUNDS thread CPU times: [subject + 1][what] (0: direct). */
static uint64_t times[MAX_SUBJECTS + 1][M_COUNT][ROUNDS];

static void measure_round(subject *subs, int nsubs, const hook_api *direct, int r,
                          unsigned per_round, bool presents)
{
    for (int k = 0; k <= nsubs; k++) {
        const hook_api *a = k ? &subs[k - 1].api : direct;
        const VkCommandBuffer *cbs = k ? subs[k - 1].cbs : subs[0].cbs;
        VkQueue queue = k ? subs[k - 1].queue : subs[0].queue;
        const VkSwapchainKHR sc = k ? subs[k - 1].swapchain : subs[0].swapchain;
        const unsigned long stamps0 = fake_timestamps_written();
        times[k][M_REGIONS][r] = run(a, cbs, queue, per_round);
        if (presents) {
            frame_end frames = { .present = true, .record = true, .swapchain = sc };
            frame_end alone = { .present = true, .swapchain = sc };
            run_frames(a, cbs, queue, per_round, &frames);
            times[k][M_FRAMES][r] = frames.present_ns;
            times[k][M_PRESENT][r] = run_frames(a, cbs, queue, per_round, &alone);
            const subject *s = &subs[k ? k - 1 : 0];
            times[k][M_WAIT][r] = run_waits(a, s->device, s->fence, per_round);
        }
        if (k)
            subs[k - 1].stamps += fake_timestamps_written() - stamps0;
        /* Each subject starts with the collectors idle and the shared
         * memory drained, as an application's frames would find them: one
         * that found them still busy with the last would measure the layer
         * dropping packets (a full buffer), not tracing. */
        wait_collector_idle();
    }
}

static double median_of(int k, int what)
{
    qsort(times[k][what], ROUNDS, sizeof times[k][what][0], cmp_u64);
    return (double)times[k][what][ROUNDS / 2];
}

/* --memory: rounds of memory calls through the layer and directly,
 * interleaved; the difference per call (medians). */
static int bench_memory(subject *sub, unsigned iterations, const char *label)
{
    memory_api through, direct;
    load_memory_api(&through, sub->gdpa, sub->device);
    load_memory_api(&direct, fake_gdpa, sub->device);
    uint64_t with[ROUNDS], without[ROUNDS];
    const unsigned per_round = iterations / ROUNDS + 1;
    run_memory(&through, sub->device, per_round / 4 + 1); /* warm up: tables, blocks */
    wait_collector_idle();
    uint64_t col0 = collector_cpu_ns();
    for (int r = 0; r < ROUNDS; r++) {
        without[r] = run_memory(&direct, sub->device, per_round);
        with[r] = run_memory(&through, sub->device, per_round);
        wait_collector_idle(); /* as in the region rounds: nothing queued */
    }
    uint64_t col = collector_cpu_ns() - col0;
    qsort(with, ROUNDS, sizeof with[0], cmp_u64);
    qsort(without, ROUNDS, sizeof without[0], cmp_u64);
    const double calls = (double)per_round * MEMORY_CALLS;
    printf("BENCH %s %.1f ns\n", label,
           ((double)with[ROUNDS / 2] - (double)without[ROUNDS / 2]) / calls);
    printf("BENCH %s_collector %.1f ns\n", label, (double)col / (calls * ROUNDS));
    fprintf(stderr,
            "bench_layer_hooks --memory: %u rounds x %d calls, %d rounds; median thread CPU "
            "%.2f ms through the layer, %.2f ms direct\n",
            per_round, MEMORY_CALLS, ROUNDS, (double)with[ROUNDS / 2] / 1e6,
            (double)without[ROUNDS / 2] / 1e6);
    tear_down(sub);
    return 0;
}

/* Each round's figure (subject k's time minus direct's in that round, per
 * call), lowest and highest: the spread beside the medians' figure.
 * Before median_of, which sorts the rounds. */
static void round_spread(int k, int what, double calls, double *lo, double *hi)
{
    for (int r = 0; r < ROUNDS; r++) {
        const double d = ((double)times[k][what][r] - (double)times[0][what][r]) / calls;
        *lo = r == 0 || d < *lo ? d : *lo;
        *hi = r == 0 || d > *hi ? d : *hi;
    }
}

/* The figures of every subject: medians of its rounds minus direct's, per
 * call; each one's spread over the rounds on stderr. */
static void report(const subject *subs, int nsubs, unsigned per_round, bool presents)
{
    static const struct {
        int what;
        const char *suffix;
        bool per_region;
    } figures[] = { { M_REGIONS, "", true },
                    { M_FRAMES, "_present", false },
                    { M_PRESENT, "_present_alone", false },
                    { M_WAIT, "_wait", false } };
    _Static_assert(sizeof figures / sizeof figures[0] == M_COUNT, "a figure per measurement");
    const int nfigures = presents ? M_COUNT : 1;
    const double regions = (double)per_round * REGIONS_PER_CB;
    double lo[MAX_SUBJECTS + 1][M_COUNT], hi[MAX_SUBJECTS + 1][M_COUNT];
    for (int k = 1; k <= nsubs; k++)
        for (int f = 0; f < nfigures; f++)
            round_spread(k, figures[f].what, figures[f].per_region ? regions : per_round, &lo[k][f],
                         &hi[k][f]);
    for (int k = 1; k <= nsubs; k++) {
        for (int f = 0; f < nfigures; f++) {
            const int w = figures[f].what;
            const double calls = figures[f].per_region ? regions : per_round;
            printf("BENCH %s%s %.1f ns\n", subs[k - 1].label, figures[f].suffix,
                   (median_of(k, w) - median_of(0, w)) / calls);
            fprintf(stderr, "bench_layer_hooks: %s%s: rounds %.1f to %.1f ns\n", subs[k - 1].label,
                    figures[f].suffix, lo[k][f], hi[k][f]);
        }
    }
    for (int k = 1; k <= nsubs; k++)
        fprintf(stderr,
                "bench_layer_hooks: %s: median thread CPU %.1f ms for %u command buffers x %d "
                "regions (direct %.1f ms); %.2f timestamps per region\n",
                subs[k - 1].label, median_of(k, M_REGIONS) / 1e6, per_round, REGIONS_PER_CB,
                median_of(0, M_REGIONS) / 1e6,
                (double)subs[k - 1].stamps / (regions * (presents ? 2 : 1) * ROUNDS));
}

int main(int argc, char **argv)
{
    const char *lib = NULL, *old = NULL, *label = "layer_cpu_ns_per_region";
    const char *envs[MAX_SUBJECTS];
    int nenvs = 0;
    unsigned iterations = 7000; /* 1001 command buffers a round: no packet lost */
    bool presents = false;
    bool memory = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--label") && i + 1 < argc)
            label = argv[++i];
        else if (!strcmp(argv[i], "--compare") && i + 1 < argc)
            old = argv[++i];
        else if (!strcmp(argv[i], "--env") && i + 1 < argc && nenvs < MAX_SUBJECTS - 2)
            envs[nenvs++] = argv[++i];
        else if (!strcmp(argv[i], "--presents"))
            presents = true;
        else if (!strcmp(argv[i], "--memory"))
            memory = true;
        else if (argv[i][0] != '-')
            lib = argv[i];
        else
            iterations = 0; /* an unknown option, or --env once too often: usage */
    }
    if (!lib || !iterations) {
        fprintf(stderr, "usage: bench_layer_hooks LAYER.so [--iterations N] [--label NAME] "
                        "[--presents] [--compare OLD.so] [--env NAME:VAR=VALUE,...]... "
                        "[--memory]\n");
        return 2;
    }
    if (memory && (old || nenvs)) {
        fprintf(stderr, "bench_layer_hooks: --memory measures one build (no --compare, --env)\n");
        return 2;
    }
    static subject subs[MAX_SUBJECTS];
    int nsubs = 0;
    snprintf(subs[nsubs++].label, sizeof subs[0].label, "%s", label);
    if (old)
        snprintf(subs[nsubs++].label, sizeof subs[0].label, "%s_old", label);
    for (int i = 0; i < nenvs; i++) {
        const char *colon = strchr(envs[i], ':');
        if (!colon || colon == envs[i]) {
            fprintf(stderr, "bench_layer_hooks: --env %s: expected NAME:VAR=VALUE,...\n", envs[i]);
            return 2;
        }
        subject *sub = &subs[nsubs++];
        snprintf(sub->label, sizeof sub->label, "%s_%.*s", label, (int)(colon - envs[i]), envs[i]);
        sub->env = colon + 1;
    }
    /* The --env ones first: the environment changes while no other copy's
     * threads (started with its session) may be reading it. */
    for (int k = nsubs - 1; k >= 0; k--)
        if (!set_up(&subs[k], k == 1 && old ? old : lib))
            return 1;
    if (memory)
        return bench_memory(&subs[0], iterations, label);
    hook_api direct;
    load_api(&direct, fake_gdpa, subs[0].device);

    /* Interleaved rounds, medians. */
    const unsigned per_round = iterations / ROUNDS + 1;
    for (int k = 0; k < nsubs; k++)
        run(&subs[k].api, subs[k].cbs, subs[k].queue, per_round / 4 + 1); /* warm up */
    wait_collector_idle();
    uint64_t col0 = collector_cpu_ns();
    for (int r = 0; r < ROUNDS; r++)
        measure_round(subs, nsubs, &direct, r, per_round, presents);
    uint64_t col = collector_cpu_ns() - col0;
    for (int k = 0; k < nsubs; k++) {
        if (subs[k].expect_stamps && !subs[k].stamps) {
            fprintf(stderr,
                    "bench_layer_hooks: %s: the layer wrote no timestamp although it should "
                    "trace (GPUTRACE_OUTPUT is set): it passed everything through "
                    "(GPUTRACE_LOG=info says why)\n",
                    subs[k].label);
            return 1;
        }
    }
    report(subs, nsubs, per_round, presents);
    if (nsubs == 1)
        printf("BENCH %s_collector %.1f ns\n", label,
               (double)col / ((double)per_round * REGIONS_PER_CB * ROUNDS));
    for (int k = nsubs - 1; k >= 0; k--)
        tear_down(&subs[k]);
    return 0;
}
