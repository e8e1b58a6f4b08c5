/* SPDX-License-Identifier: MIT */
/* process_info.c — see process_info.h. */
#include "layer/process_info.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracing/util/util_parse.h"

static pi_process process;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

/* Reads up to size - 1 bytes of a /proc file; -1 on failure. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t n = read(fd, buf + got, size - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

/* splitmix64's finaliser: spreads bits so nearby inputs land far apart. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void read_process(void)
{
    process.pid = (int32_t)getpid();
    process.ppid = (int32_t)getppid();
    ssize_t n = read_proc("/proc/self/cmdline", process.cmdline, sizeof process.cmdline);
    if (n > 0) {
        /* Whole arguments only: drop a cut-off last one. */
        size_t len = (size_t)n;
        if (len == sizeof process.cmdline - 1 && process.cmdline[len - 1] != '\0') {
            while (len && process.cmdline[len - 1] != '\0')
                len--;
        }
        process.cmdline_len = len;
        const char *arg0 = process.cmdline;
        const char *slash = strrchr(arg0, '/');
        util_copy_str(process.name, sizeof process.name, slash ? slash + 1 : arg0);
    }
    if (!process.name[0]) {
        char comm[64];
        if (read_proc("/proc/self/comm", comm, sizeof comm) > 0) {
            comm[strcspn(comm, "\n")] = '\0';
            util_copy_str(process.name, sizeof process.name, comm);
        }
    }
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    process.uuid = mix(r ^ (uint64_t)process.pid) | 1u; /* never 0: 0 means "no track" */
}

const pi_process *pi_process_get(void)
{
    pthread_once(&process_once, read_process);
    return &process;
}

uint64_t pi_thread_uuid(int32_t tid)
{
    return mix(pi_process_get()->uuid ^ ((uint64_t)(uint32_t)tid << 1)) | 1u;
}

void pi_current_thread_name(char *out, size_t size)
{
    if (!size)
        return;
    out[0] = '\0';
    /* PR_GET_NAME fills 16 bytes, the terminator included. */
    char comm[17] = { 0 };
    if (prctl(PR_GET_NAME, (unsigned long)comm, 0UL, 0UL, 0UL) == 0)
        util_copy_str(out, size, comm);
}

int32_t pi_thread_id(void)
{
    static _Thread_local int32_t tid;
    if (!tid)
        tid = (int32_t)syscall(SYS_gettid);
    return tid;
}
