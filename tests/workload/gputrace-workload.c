/* SPDX-License-Identifier: MIT */
/* gputrace-workload — a headless Vulkan program with a known amount of GPU
 * work, for exercising VK_LAYER_GPUTRACE_timeline (and anything else that
 * sits in the Vulkan call chain).
 *
 * It ends with two machine-readable lines on stdout,
 *   gputrace-workload: memory: allocations=A bytes=B buffers=U images=I heap0=H
 *   gputrace-workload: frames=F submissions=S regions=R
 * so a test can compare what the layer timed and tracked with what was
 * recorded and allocated. The definition of a region is in usage() and
 * wl_frame.c.
 *
 * Exit status: 0 success, 1 Vulkan error, wrong results or validation
 * errors, 2 usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/workload/wl.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " WL_PROG " [--frames N] [--threads N] [--queues N] [--validate]\n"
            "       [--duration-ms N] [--work N] [--leak-exit]\n"
            "       [--submissions-per-frame N] [--app-timestamps] [--layer NAME]\n"
            "       [--frame-boundary] [--stall-every N [--stall-ms M]]\n"
            "       [--thread-cpu] [--cross-queue-semaphore] [--layer-setting KEY=VALUE]\n"
            "\n"
            "Runs a fixed amount of compute, render-pass, dynamic-rendering and transfer\n"
            "work on one Vulkan device without a window, checks the results, and prints\n"
            "  " WL_PROG ": memory: allocations=A bytes=B buffers=U images=I heap0=H\n"
            "  " WL_PROG ": frames=F submissions=S regions=R\n"
            "\n"
            "Options:\n"
            "  --frames N    frames per thread (default 3)\n"
            "  --threads N   threads, each recording and submitting its own frames with\n"
            "                its own command pool and resources (default 1, at most %d)\n"
            "  --queues N    use up to N queues of the first graphics+compute family;\n"
            "                thread i submits to queue i mod N, shared queues are locked\n"
            "                (default 1, at most %d)\n"
            "  --validate    enable VK_LAYER_KHRONOS_validation with synchronization\n"
            "                validation; print the error count, fail if it is not 0\n"
            "  --duration-ms N  keep recording frames until N ms have passed (at least\n"
            "                one per thread); --frames is then only an upper bound\n"
            "  --work N      multiply the GPU work of every dispatch (shader rounds) and\n"
            "                draw (instances) by N, 1 to %u (default 1); the commands,\n"
            "                and so the regions, stay the same\n"
            "  --submissions-per-frame N  after each frame's submissions, N more, each one\n"
            "                command buffer filling one word (2 regions each), 0 to %u\n"
            "                (default 0): the submission-heavy case of the layer benchmark\n"
            "  --app-timestamps  write, in the program itself, the timestamps\n"
            "                VK_LAYER_GPUTRACE_timeline would write (same places, same\n"
            "                lavapipe barriers, host query reset), never read back: the\n"
            "                control of the layer benchmark (layer/bench/bench_limit.sh);\n"
            "                the summary line then ends with timestamps=T\n"
            "  --cross-queue-semaphore  (Vulkan 1.2 timeline semaphores) thread i submits its\n"
            "                render pass to queue i+1 mod N, waiting for its compute\n"
            "                submission through a binary semaphore; the dynamic rendering\n"
            "                and the host (vkWaitSemaphores) wait for the render pass\n"
            "                through a timeline semaphore; the summary line then ends with\n"
            "                semaphore_waits=W host_waits=H\n"
            "  --layer NAME  name the layer NAME in VkInstanceCreateInfo::ppEnabledLayerNames,\n"
            "                as an application that wants it does (besides validation's\n"
            "                with --validate); fails when the loader has no such layer\n"
            "  --layer-setting KEY=VALUE  give VK_LAYER_GPUTRACE_timeline the setting KEY\n"
            "                (docs/layer.md, \"Settings\") as a string in a\n"
            "                VkLayerSettingsCreateInfoEXT chained to VkInstanceCreateInfo\n"
            "                (VK_EXT_layer_settings), as an application configuring the\n"
            "                layer itself does; up to %u times\n"
            "  --frame-boundary  end each frame with a VkFrameBoundaryEXT (FRAME_END,\n"
            "                frameID counting from 1) chained to its last submission\n"
            "                (VK_EXT_frame_boundary, which VK_LAYER_GPUTRACE_timeline provides\n"
            "                where the driver lacks it); fails when the device has none\n"
            "  --stall-every N  every Nth frame sleeps before its last submission: a\n"
            "                stutter (0 to %u; default 0, none)\n"
            "  --stall-ms M  how long that sleep is (1 to %u ms, default 100)\n"
            "  --thread-cpu  end the summary line with thread_cpu_ns=C: the CPU time the\n"
            "                recording and submitting threads spent over their frames\n"
            "                (CLOCK_THREAD_CPUTIME_ID, summed), what the application's\n"
            "                threads pay per region (scripts/gpu-bundle's run.sh)\n"
            "  --leak-exit   exit right after the summary line without destroying\n"
            "                anything (no vkDestroyDevice / vkDestroyInstance)\n"
            "  -h, --help    this text\n"
            "\n"
            "A and B count the device memory allocations and their bytes over the whole\n"
            "run, U and I the buffers and images created (all of them freed at the end),\n"
            "H the size of the device's memory heap 0.\n"
            "F is the number of frames completed, summed over threads. S is the number of\n"
            "queue submissions (each with one primary command buffer): 3 per frame, or 2\n"
            "without Vulkan 1.3 dynamic rendering. R counts, in every submitted primary\n"
            "command buffer:\n"
            "  1 for the command buffer itself\n"
            "  1 per render pass instance (vkCmdBeginRenderPass..End) and per dynamic\n"
            "    rendering instance (vkCmdBeginRendering..End)\n"
            "  1 per dispatch (vkCmdDispatch, vkCmdDispatchIndirect)\n"
            "  1 per transfer command (vkCmdUpdateBuffer, vkCmdFillBuffer, vkCmdCopy*,\n"
            "    vkCmdClearColorImage, vkCmdClearAttachments)\n"
            "  1 per debug-utils label region (Begin..End; only with VK_EXT_debug_utils)\n"
            "Commands in secondary command buffers, vkCmdExecuteCommands and draws are\n"
            "not regions. Per frame: 8 + 8 + 6 = 22 with labels and dynamic rendering,\n"
            "15 without labels.\n"
            "\n"
            "Environment:\n"
            "  GPUTRACE_WORKLOAD_DEVICE  device index or part of its name (default: first)\n",
            WL_MAX_THREADS, WL_MAX_QUEUES, WL_MAX_WORK, WL_MAX_TINY, WL_MAX_LAYER_SETTINGS,
            WL_MAX_STALL_EVERY, WL_MAX_STALL_MS);
}

static bool parse_count(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    if (*arg < '0' || *arg > '9' || *end || v < min || v > max) {
        wl_error("%s: expected a number from %u to %u, got '%s'", opt, min, max, arg);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Options that only change how long the program runs or how it ends. */
static uint32_t duration_ms;
static bool leak_exit;
static uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --layer-setting KEY=VALUE, split in place. */
static bool parse_layer_setting(char *arg, wl_options *opt)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        wl_error("--layer-setting: expected KEY=VALUE, got '%s'", arg);
        return false;
    }
    if (opt->nsettings == WL_MAX_LAYER_SETTINGS) {
        wl_error("--layer-setting: at most %u", WL_MAX_LAYER_SETTINGS);
        return false;
    }
    *eq = '\0';
    opt->setting_keys[opt->nsettings] = arg;
    opt->setting_values[opt->nsettings] = eq + 1;
    opt->nsettings++;
    return true;
}

static bool parse_options(int argc, char **argv, wl_options *opt, int *status)
{
    static const struct option longopts[] = {
        { "frames", required_argument, NULL, 'f' },
        { "threads", required_argument, NULL, 't' },
        { "queues", required_argument, NULL, 'q' },
        { "validate", no_argument, NULL, 'v' },
        { "duration-ms", required_argument, NULL, 'd' },
        { "leak-exit", no_argument, NULL, 'l' },
        { "work", required_argument, NULL, 'w' },
        { "submissions-per-frame", required_argument, NULL, 's' },
        { "app-timestamps", no_argument, NULL, 'a' },
        { "layer", required_argument, NULL, 'L' },
        { "frame-boundary", no_argument, NULL, 'B' },
        { "stall-every", required_argument, NULL, 'S' },
        { "stall-ms", required_argument, NULL, 'M' },
        { "thread-cpu", no_argument, NULL, 'c' },
        { "cross-queue-semaphore", no_argument, NULL, 'x' },
        { "layer-setting", required_argument, NULL, 'Y' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *opt = (wl_options){ .frames = 3, .threads = 1, .queues = 1, .work = 1, .stall_ms = 100 };
    bool frames_given = false;
    *status = 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!parse_count("--frames", optarg, 1, 1000000, &opt->frames))
                return false;
            frames_given = true;
            break;
        case 't':
            if (!parse_count("--threads", optarg, 1, WL_MAX_THREADS, &opt->threads))
                return false;
            break;
        case 'q':
            if (!parse_count("--queues", optarg, 1, WL_MAX_QUEUES, &opt->queues))
                return false;
            break;
        case 'v':
            opt->validate = true;
            break;
        case 'd':
            if (!parse_count("--duration-ms", optarg, 1, 86400000, &duration_ms))
                return false;
            break;
        case 'l':
            leak_exit = true;
            break;
        case 'w':
            if (!parse_count("--work", optarg, 1, WL_MAX_WORK, &opt->work))
                return false;
            break;
        case 's':
            if (!parse_count("--submissions-per-frame", optarg, 0, WL_MAX_TINY, &opt->tiny))
                return false;
            break;
        case 'a':
            opt->app_stamps = true;
            break;
        case 'L':
            opt->layer = optarg;
            break;
        case 'B':
            opt->frame_boundary = true;
            break;
        case 'S':
            if (!parse_count("--stall-every", optarg, 0, WL_MAX_STALL_EVERY, &opt->stall_every))
                return false;
            break;
        case 'M':
            if (!parse_count("--stall-ms", optarg, 1, WL_MAX_STALL_MS, &opt->stall_ms))
                return false;
            break;
        case 'c':
            opt->thread_cpu = true;
            break;
        case 'x':
            opt->cross_queue = true;
            break;
        case 'Y':
            if (!parse_layer_setting(optarg, opt))
                return false;
            break;
        case 'h':
            usage(stdout);
            *status = 0;
            return false;
        default:
            usage(stderr);
            return false;
        }
    }
    if (optind < argc) {
        wl_error("unexpected argument '%s'", argv[optind]);
        usage(stderr);
        return false;
    }
    if (duration_ms && !frames_given)
        opt->frames = 1000000;
    return true;
}

typedef struct totals totals;
struct totals {
    uint64_t frames, submissions, regions, stamps, cpu_ns, semaphore_waits, host_waits;
};

static void print_summary(const wl_options *opt, wl_context *ctx, const totals *t)
{
    printf(WL_PROG ": memory: allocations=%lu bytes=%lu buffers=%lu images=%lu heap0=%llu\n",
           atomic_load(&ctx->allocations), atomic_load(&ctx->allocated_bytes),
           atomic_load(&ctx->buffers), atomic_load(&ctx->images),
           (unsigned long long)(ctx->memory.memoryHeapCount ? ctx->memory.memoryHeaps[0].size : 0));
    printf(WL_PROG ": frames=%llu submissions=%llu regions=%llu", (unsigned long long)t->frames,
           (unsigned long long)t->submissions, (unsigned long long)t->regions);
    if (opt->app_stamps)
        printf(" timestamps=%llu", (unsigned long long)t->stamps);
    if (opt->thread_cpu)
        printf(" thread_cpu_ns=%llu", (unsigned long long)t->cpu_ns);
    if (opt->cross_queue)
        printf(" semaphore_waits=%llu host_waits=%llu", (unsigned long long)t->semaphore_waits,
               (unsigned long long)t->host_waits);
    putchar('\n');
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *thread_main(void *arg)
{
    wl_thread *t = arg;
    t->ok = wl_thread_init(t);
    if (t->ok)
        wl_name_thread(t);
    const uint64_t cpu0 = thread_cpu_ns();
    for (uint32_t f = 0; t->ok && f < t->frames_to_run; f++) {
        if (f > 0 && deadline_ns && monotonic_ns() >= deadline_ns)
            break;
        t->ok = wl_thread_run_frame(t, f);
    }
    t->cpu_ns = thread_cpu_ns() - cpu0;
    return NULL;
}

int main(int argc, char **argv)
{
    wl_options opt;
    int status;
    if (!parse_options(argc, argv, &opt, &status))
        return status;

    static wl_context ctx;
    static wl_thread threads[WL_MAX_THREADS];
    bool ok = wl_context_init(&ctx, &opt) && wl_pipelines_init(&ctx);
    if (ok)
        wl_name_shared(&ctx);
    if (duration_ms)
        deadline_ns = monotonic_ns() + (uint64_t)duration_ms * 1000000u;

    uint32_t started = 0;
    for (uint32_t i = 0; ok && i < opt.threads; i++) {
        threads[i] = (wl_thread){
            .ctx = &ctx,
            .index = i,
            .frames_to_run = opt.frames,
            .queue = &ctx.queues[i % ctx.queue_count],
            .queue2 = &ctx.queues[(i + 1) % ctx.queue_count],
        };
        if (pthread_create(&threads[i].thread, NULL, thread_main, &threads[i]) != 0) {
            wl_error("cannot start thread %u", i);
            ok = false;
            break;
        }
        started++;
    }

    totals sum = { 0 };
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(threads[i].thread, NULL);
        ok = ok && threads[i].ok;
        sum.frames += threads[i].frames;
        sum.submissions += threads[i].submissions;
        sum.regions += threads[i].regions;
        sum.stamps += threads[i].stamps.written;
        sum.cpu_ns += threads[i].cpu_ns;
        sum.semaphore_waits += threads[i].semaphore_waits;
        sum.host_waits += threads[i].host_waits;
    }

    if (leak_exit && ok) {
        /* What a crashing or careless application does: the layers' and the
       * driver's exit-time code is all that runs. */
        print_summary(&opt, &ctx, &sum);
        fflush(stdout);
        exit(0);
    }

    /* Only count messages if the validation layer was really loaded. */
    bool validated = opt.validate && ctx.instance != VK_NULL_HANDLE;

    /* Tear down in reverse, whatever failed: every destroy takes NULL. */
    if (ctx.device) {
        vkDeviceWaitIdle(ctx.device);
        for (uint32_t i = 0; i < started; i++)
            wl_thread_finish(&threads[i]);
        wl_pipelines_finish(&ctx);
    }
    wl_context_finish(&ctx);

    if (validated) {
        unsigned errors = atomic_load(&ctx.validation_errors);
        fprintf(stderr, WL_PROG ": validation: %u error(s)\n", errors);
        ok = ok && errors == 0;
    }
    if (!ok)
        return 1;
    print_summary(&opt, &ctx, &sum);
    return 0;
}
