/* SPDX-License-Identifier: MIT */
/* gputrace-workload — a headless Vulkan program with a known amount of GPU
 * work, for exercising VK_LAYER_GPUTRACE_timeline (and anything else that
 * sits in the Vulkan call chain).
 *
 * It ends with exactly one machine-readable line on stdout,
 *   gputrace-workload: frames=F submissions=S regions=R
 * so a test can compare what the layer timed with what was recorded. The
 * definition of a region is in usage() and wl_frame.c.
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
            "       [--thread-cpu]\n"
            "\n"
            "Runs a fixed amount of compute, render-pass, dynamic-rendering and transfer\n"
            "work on one Vulkan device without a window, checks the results, and prints\n"
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
            "  --layer NAME  name the layer NAME in VkInstanceCreateInfo::ppEnabledLayerNames,\n"
            "                as an application that wants it does (besides validation's\n"
            "                with --validate); fails when the loader has no such layer\n"
            "  --thread-cpu  end the summary line with thread_cpu_ns=C: the CPU time the\n"
            "                recording and submitting threads spent over their frames\n"
            "                (CLOCK_THREAD_CPUTIME_ID, summed), what the application's\n"
            "                threads pay per region (scripts/gpu-bundle's run.sh)\n"
            "  --leak-exit   exit right after the summary line without destroying\n"
            "                anything (no vkDestroyDevice / vkDestroyInstance)\n"
            "  -h, --help    this text\n"
            "\n"
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
            WL_MAX_THREADS, WL_MAX_QUEUES, WL_MAX_WORK, WL_MAX_TINY);
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
        { "thread-cpu", no_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *opt = (wl_options){ .frames = 3, .threads = 1, .queues = 1, .work = 1 };
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
        case 'c':
            opt->thread_cpu = true;
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

static void print_summary(const wl_options *opt, uint64_t frames, uint64_t submissions,
                          uint64_t regions, uint64_t stamps, uint64_t cpu_ns)
{
    printf(WL_PROG ": frames=%llu submissions=%llu regions=%llu", (unsigned long long)frames,
           (unsigned long long)submissions, (unsigned long long)regions);
    if (opt->app_stamps)
        printf(" timestamps=%llu", (unsigned long long)stamps);
    if (opt->thread_cpu)
        printf(" thread_cpu_ns=%llu", (unsigned long long)cpu_ns);
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
        };
        if (pthread_create(&threads[i].thread, NULL, thread_main, &threads[i]) != 0) {
            wl_error("cannot start thread %u", i);
            ok = false;
            break;
        }
        started++;
    }

    uint64_t frames = 0, submissions = 0, regions = 0, stamps = 0, cpu_ns = 0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(threads[i].thread, NULL);
        ok = ok && threads[i].ok;
        frames += threads[i].frames;
        submissions += threads[i].submissions;
        regions += threads[i].regions;
        stamps += threads[i].stamps.written;
        cpu_ns += threads[i].cpu_ns;
    }

    if (leak_exit && ok) {
        /* What a crashing or careless application does: the layers' and the
       * driver's exit-time code is all that runs. */
        print_summary(&opt, frames, submissions, regions, stamps, cpu_ns);
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
    print_summary(&opt, frames, submissions, regions, stamps, cpu_ns);
    return 0;
}
