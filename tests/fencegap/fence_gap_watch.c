/* SPDX-License-Identifier: MIT */
/* fence_gap_watch.c — LD_PRELOAD library for scripts/run-fence-gap: finds
 * memory written after it was freed, for objects holding a condition
 * variable (lavapipe's fences). A free() right after a
 * pthread_cond_destroy on the same thread, of a block that contains that
 * condition variable, is not done: the block is zeroed and kept (up to
 * WATCH_KEPT of them, the oldest then freed for real). At exit, and when a
 * block leaves, one that is no longer all zero was written after its free:
 * reported on stderr with the free's call stack. pthread_mutex_unlock on a
 * zeroed mutex decrements its user count (offset 12 in glibc's mutex), so
 * a late unlock always shows. Keeping the blocks also means a late write
 * can no longer corrupt anything. Not part of any test. */
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define WATCH_KEPT  4096
#define WATCH_DEPTH 24

typedef struct {
    void *block;
    size_t size;
    unsigned long number; /* among the watched frees, from 0 */
    int depth;
    void *stack[WATCH_DEPTH];
    char thread[16];
} kept_block;

static _Thread_local uintptr_t destroyed_cond;
static _Thread_local int in_watch;
static int (*next_cond_destroy)(pthread_cond_t *);
static void (*next_free)(void *);
static kept_block kept[WATCH_KEPT];
static unsigned long watched, written;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

int pthread_cond_destroy(pthread_cond_t *cond)
{
    if (!next_cond_destroy)
        next_cond_destroy =
            (int (*)(pthread_cond_t *))dlvsym(RTLD_NEXT, "pthread_cond_destroy", "GLIBC_2.3.2");
    destroyed_cond = (uintptr_t)cond;
    return next_cond_destroy(cond);
}

/* Called with kept_lock held. */
static void report_if_written(const kept_block *k)
{
    const unsigned char *bytes = k->block;
    size_t at = 0;
    while (at < k->size && bytes[at] == 0)
        at++;
    if (at == k->size)
        return;
    written++;
    char line[256];
    const int n = snprintf(line, sizeof line,
                           "fence-gap: freed block %lu of %lu (%zu bytes) written after its free "
                           "at offset %zu; freed by thread '%s' at:\n",
                           k->number, watched, k->size, at, k->thread);
    if (write(2, line, (size_t)n) < 0)
        return;
    backtrace_symbols_fd((void *const *)k->stack, k->depth, 2);
}

void free(void *block)
{
    if (!next_free)
        next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    const uintptr_t cond = destroyed_cond;
    destroyed_cond = 0;
    if (!block || !cond || in_watch || (uintptr_t)block > cond || cond - (uintptr_t)block >= 128) {
        next_free(block);
        return;
    }
    in_watch = 1;
    kept_block k = { .block = block, .size = malloc_usable_size(block) };
    memset(block, 0, k.size); /* before anything slow: a late write must land after it */
    k.depth = backtrace(k.stack, WATCH_DEPTH);
    pthread_getname_np(pthread_self(), k.thread, sizeof k.thread);
    pthread_mutex_lock(&kept_lock);
    k.number = watched;
    kept_block leaving = kept[watched % WATCH_KEPT];
    kept[watched % WATCH_KEPT] = k;
    watched++;
    if (leaving.block)
        report_if_written(&leaving);
    pthread_mutex_unlock(&kept_lock);
    if (leaving.block)
        next_free(leaving.block);
    in_watch = 0;
}

__attribute__((destructor)) static void report_all(void)
{
    pthread_mutex_lock(&kept_lock);
    for (unsigned i = 0; i < WATCH_KEPT; i++) {
        if (kept[i].block)
            report_if_written(&kept[i]);
    }
    char line[128];
    const int n = snprintf(line, sizeof line, "fence-gap: %lu frees watched, %lu written after\n",
                           watched, written);
    if (write(2, line, (size_t)n) < 0)
        written = 0;
    pthread_mutex_unlock(&kept_lock);
}
