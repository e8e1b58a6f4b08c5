/* SPDX-License-Identifier: MIT */
/* trigger_app — a traced Vulkan application with a SIGUSR1 handler of its
 * own, for frames_test.sh's flight recorder cases: the layer's trigger on
 * the same signal must leave that handler working.
 *
 *   trigger_app --signals N [--gap-ms MS]
 *
 * It installs its handler for SIGUSR1 (counting) before vkCreateDevice,
 * submits one vkCmdFillBuffer at a time (waiting for each, then sleeping
 * 1 ms), and every --gap-ms (default 1000) of that raises SIGUSR1 itself, N
 * times; then it submits for one more gap and exits 0, printing
 *   "trigger_app: raised=N handled=H submissions=S"
 * H must equal N (the layer took none of them from it). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vulkan/vulkan.h>

#include "tests/faults/fill_app.h"

#define PROG "trigger_app"

static volatile sig_atomic_t handled;

static void on_usr1(int signo)
{
    (void)signo;
    handled++;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int signals = -1;
    double gap_ms = 1000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--signals") == 0 && i + 1 < argc)
            signals = atoi(argv[++i]);
        else if (strcmp(argv[i], "--gap-ms") == 0 && i + 1 < argc)
            gap_ms = atof(argv[++i]);
        else
            signals = -1, i = argc;
    }
    if (signals < 0 || gap_ms <= 0 || (signals + 1) * gap_ms >= 8192) {
        fprintf(stderr, "usage: " PROG " --signals N [--gap-ms MS], (N + 1) * MS < 8192\n");
        return 2;
    }
    fa_label = PROG;
    fa_gpu g = { 0 };
    if (!fa_create_instance(&g, PROG))
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    if (!fa_create_device(&g)) {
        fa_destroy(&g);
        return 1;
    }
    unsigned submissions = 0;
    bool good = true;
    for (int raised = 0; good && raised <= signals; raised++) {
        const double until = now_ms() + gap_ms;
        while (good && now_ms() < until) {
            good = fa_submit_fill(&g, submissions);
            submissions += good;
            /* At most one submission a millisecond: (N + 1) gaps of MS hold
             * fewer than the collector's backlog (8192 by default) however
             * long a loaded machine keeps the collector from running, so
             * no submission goes untimed and every window passes the check
             * (unthrottled, 11 000 a second outran a starved collector). */
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
        }
        if (raised < signals)
            raise(SIGUSR1);
    }
    fa_destroy(&g);
    printf(PROG ": raised=%d handled=%d submissions=%u\n", signals, (int)handled, submissions);
    return good ? 0 : 1;
}
