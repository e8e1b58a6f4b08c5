/* log.c — GPUTRACE_LOG / GPUTRACE_LOG_FILE handling and line output. */
#include "layer/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static enum gt_log_level log_threshold = GT_LOG_NONE;
static int log_fd = STDERR_FILENO;
static bool log_fd_owned;

static const char *const level_tag[] = {
    [GT_LOG_NONE] = "", [GT_LOG_ERROR] = "error: ", [GT_LOG_WARN] = "warning: ",
    [GT_LOG_INFO] = "", [GT_LOG_DEBUG] = "debug: ",
};

static void __attribute__((format(printf, 2, 0)))
write_line(enum gt_log_level level, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "gputrace: %s", level_tag[level]);
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    /* Truncated messages still end in a newline. */
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';

    size_t off = 0;
    while (off < len) {
        ssize_t w = write(log_fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += (size_t)w;
    }
}

/* Only for the two set-up warnings below: printed even when the threshold
 * would hide them, because they explain why logging is not what the user
 * asked for. */
static void __attribute__((format(printf, 1, 2))) setup_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(GT_LOG_WARN, fmt, ap);
    va_end(ap);
}

static bool parse_level(const char *s, enum gt_log_level *out)
{
    static const struct {
        const char *name;
        enum gt_log_level level;
    } names[] = {
        { "none", GT_LOG_NONE },   { "off", GT_LOG_NONE },     { "error", GT_LOG_ERROR },
        { "warn", GT_LOG_WARN },   { "warning", GT_LOG_WARN }, { "info", GT_LOG_INFO },
        { "debug", GT_LOG_DEBUG },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].level;
            return true;
        }
    }
    return false;
}

static void log_init(void)
{
    const char *level = getenv("GPUTRACE_LOG");
    bool bad_level = false;
    if (level && *level && !parse_level(level, &log_threshold)) {
        log_threshold = GT_LOG_NONE;
        bad_level = true;
    }

    /* Only create the file when something may be written to it. */
    const char *path = getenv("GPUTRACE_LOG_FILE");
    if (path && *path && (log_threshold != GT_LOG_NONE || bad_level)) {
        /* The same care as for the trace file: never through a symbolic
       * link, and never blocked by a FIFO nobody reads (O_NONBLOCK makes
       * that open fail with ENXIO, and a later full pipe drops a line
       * instead of stalling the application). */
        int fd =
            open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
        if (fd >= 0) {
            log_fd = fd;
            log_fd_owned = true;
        } else {
            setup_warning("cannot open GPUTRACE_LOG_FILE=%s (%s); logging to stderr", path,
                          strerror(errno));
        }
    }

    if (bad_level)
        setup_warning("ignoring GPUTRACE_LOG=%s: expected error, warn, info or debug; "
                      "logging stays off",
                      level);
}

/* The loader dlcloses the layer when the last instance is destroyed and may
 * load it again later; do not leak one descriptor per cycle. */
__attribute__((destructor)) static void log_fini(void)
{
    if (log_fd_owned) {
        close(log_fd);
        log_fd = STDERR_FILENO;
        log_fd_owned = false;
    }
}

bool gt_log_enabled(enum gt_log_level level)
{
    pthread_once(&log_once, log_init);
    return level != GT_LOG_NONE && level <= log_threshold;
}

void gt_log(enum gt_log_level level, const char *fmt, ...)
{
    if (!gt_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    write_line(level, fmt, ap);
    va_end(ap);
}
