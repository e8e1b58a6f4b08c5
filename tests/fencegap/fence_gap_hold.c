/* SPDX-License-Identifier: MIT */
/* fence_gap_hold.c — LD_PRELOAD library for scripts/run-fence-gap: holds
 * llvmpipe's rasterizer threads (named "llvmpipe-N") for 0-5 ms right after
 * each pthread_cond_broadcast. lp_fence_signal broadcasts and then unlocks
 * the fence's mutex, so this widens, from nanoseconds to milliseconds, the
 * gap in which Mesa 22.3 may free the fence under the signalling thread
 * (docs/ci.md, known problem 11). Not part of any test. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int (*next_broadcast)(pthread_cond_t *);

int pthread_cond_broadcast(pthread_cond_t *cond)
{
    if (!next_broadcast)
        next_broadcast =
            (int (*)(pthread_cond_t *))dlvsym(RTLD_NEXT, "pthread_cond_broadcast", "GLIBC_2.3.2");
    const int r = next_broadcast(cond);
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strncmp(name, "llvmpipe-", 9) == 0) {
        static _Thread_local unsigned seed;
        if (!seed)
            seed = (unsigned)(uintptr_t)&seed | 1u;
        const struct timespec hold = { 0, (long)(rand_r(&seed) % 5000) * 1000L };
        nanosleep(&hold, NULL);
    }
    return r;
}
