/* SPDX-License-Identifier: MIT */
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

#include "tests/faults/fill_app.h"

#define PROG "fork_app"

/* N submissions of one fill each, each waited for. */
static bool submit_fills(fa_gpu *g, unsigned n, unsigned *done)
{
    for (unsigned i = 0; i < n; i++) {
        if (!fa_submit_fill(g, i))
            return false;
        (*done)++;
    }
    return true;
}

static int child_main(const char *mode, unsigned n)
{
    fa_label = PROG " (child)";
    if (strcmp(mode, "exit") == 0)
        exit(0);
    if (strcmp(mode, "exec") == 0) {
        execl("/bin/true", "true", (char *)NULL);
        perror(PROG " (child): exec /bin/true");
        _exit(1);
    }
    fa_gpu g = { 0 };
    unsigned done = 0;
    bool good = fa_create_instance(&g, PROG) && fa_create_device(&g) && submit_fills(&g, n, &done);
    fa_destroy(&g);
    fprintf(stderr, PROG " (child): %u submission(s)\n", done);
    exit(good ? 0 : 1);
}

int main(int argc, char **argv)
{
    fa_label = PROG " (parent)";
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
        fa_gpu g = { 0 };
        unsigned done = 0;
        bool good =
            fa_create_instance(&g, PROG) && fa_create_device(&g) && submit_fills(&g, n, &done);
        fa_destroy(&g);
        printf(PROG ": pid=%ld child_pid=0 submissions=%u regions=%u child=0\n", (long)getpid(),
               done, 2 * done);
        return good ? 0 : 1;
    }

    fa_gpu g = { 0 };
    unsigned done = 0;
    bool good = fa_create_instance(&g, PROG);
    if (good && after_work)
        good = fa_create_device(&g) && submit_fills(&g, n, &done);
    if (!good) {
        fa_destroy(&g);
        return 1;
    }

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror(PROG ": fork");
        fa_destroy(&g);
        return 1;
    }
    if (pid == 0)
        return child_main(child, n);

    if (!after_work)
        good = fa_create_device(&g);
    good = good && submit_fills(&g, n, &done);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror(PROG ": waitpid");
            status = 1 << 8;
            break;
        }
    }
    fa_destroy(&g);
    int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf(PROG ": pid=%ld child_pid=%ld submissions=%u regions=%u child=%d\n", (long)getpid(),
           (long)pid, done, 2 * done, child_rc);
    return good && child_rc == 0 ? 0 : 1;

usage:
    fprintf(stderr, "usage: " PROG " [--fork-after instance|work] [--child vulkan|exit|exec|none] "
                    "[--submissions N]\n");
    return 2;
}
