/* SPDX-License-Identifier: MIT */
/* log.c — GPUTRACE_LOG / GPUTRACE_LOG_FILE handling and line output. */
#include "layer/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "layer/settings.h"

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
/* The instance pNext chain of gt_log_init(), while it sets the logger up. */
static _Atomic(const void *) log_api_chain;
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

/* " (from ORIGIN)" for a setting not from the environment, else "". */
static const char *origin_of(const gt_setting *s, char *buf, size_t size)
{
    if (s->source == GT_SETTING_ENV)
        return "";
    snprintf(buf, size, " (from %s)", s->origin);
    return buf;
}

static void log_init(void)
{
    const void *chain = atomic_load(&log_api_chain);
    const gt_settings_file *file = gt_settings_file_get();
    gt_setting level, path;
    char level_from[sizeof level.origin + 16], path_from[sizeof path.origin + 16];
    gt_settings_lookup("GPUTRACE_LOG", GT_SETTING_TEXT, chain, file, &level);
    gt_settings_lookup("GPUTRACE_LOG_FILE", GT_SETTING_TEXT, chain, file, &path);
    bool bad_level = false;
    if (level.source != GT_SETTING_UNSET &&
        (!level.value || !parse_level(level.value, &log_threshold))) {
        log_threshold = GT_LOG_NONE;
        bad_level = true;
    }

    /* Only create the file when something may be written to it. */
    if (path.value && (log_threshold != GT_LOG_NONE || bad_level)) {
        /* The same care as for the trace file: never through a symbolic
       * link, and never blocked by a FIFO nobody reads (O_NONBLOCK makes
       * that open fail with ENXIO, and a later full pipe drops a line
       * instead of stalling the application). */
        int fd = open(path.value,
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
        if (fd >= 0) {
            log_fd = fd;
            log_fd_owned = true;
        } else {
            setup_warning("cannot open %s=%s%s (%s); logging to stderr", path.name, path.value,
                          origin_of(&path, path_from, sizeof path_from), strerror(errno));
        }
    }

    if (bad_level && level.value)
        setup_warning("ignoring %s=%s%s: expected error, warn, info or debug; "
                      "logging stays off",
                      level.name, level.value, origin_of(&level, level_from, sizeof level_from));
    else if (bad_level)
        setup_warning("ignoring %s%s: %s; logging stays off", level.name,
                      origin_of(&level, level_from, sizeof level_from), level.problem);
}

void gt_log_init(const void *instance_pnext)
{
    atomic_store(&log_api_chain, instance_pnext);
    pthread_once(&log_once, log_init);
    atomic_store(&log_api_chain, NULL);
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
