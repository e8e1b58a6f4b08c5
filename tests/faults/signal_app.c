/* SPDX-License-Identifier: MIT */
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

#include "tests/faults/fill_app.h"

#define PROG "signal_app"

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

    fa_label = PROG;
    fa_gpu g = { 0 };
    if (!fa_create_instance(&g, PROG))
        return 1;
    if (strcmp(when, "before") == 0)
        install_handler();
    if (!fa_create_device(&g)) {
        fa_destroy(&g);
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
        good = fa_submit_fill(&g, submissions);
        submissions += good;
    }
    fa_destroy(&g);
    printf(PROG ": signal=%d submissions=%u regions=%u\n", (int)got_signal, submissions,
           2 * submissions);
    if (!good)
        return 1;
    return got_signal ? 3 : 0;
}
