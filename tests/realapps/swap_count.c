/* SPDX-License-Identifier: MIT */
/* swap_count.so — an LD_PRELOAD shim for realapps_test.sh: counts an OpenGL
 * program's glXSwapBuffers calls (the frames it shows, its own frame count)
 * and appends "swaps=N" to $GT_SWAP_COUNT_FILE when the program exits. Each
 * call goes on to the real glXSwapBuffers. For programs that print no
 * frame count of their own (glxgears prints a rate). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*swap_fn)(void *display, unsigned long drawable);

static atomic_ulong swaps;

void glXSwapBuffers(void *display, unsigned long drawable);
void glXSwapBuffers(void *display, unsigned long drawable)
{
    static swap_fn next;
    if (!next)
        next = (swap_fn)dlsym(RTLD_NEXT, "glXSwapBuffers");
    atomic_fetch_add(&swaps, 1);
    if (next)
        next(display, drawable);
}

/* Appended, and only by a process that swapped: every program the test
 * starts with the shim preloaded (timeout, xdotool) exits through here. */
__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("GT_SWAP_COUNT_FILE");
    if (!atomic_load(&swaps))
        return;
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "swaps=%lu\n", (unsigned long)atomic_load(&swaps));
    fclose(f);
}
