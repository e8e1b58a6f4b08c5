/* Fuzz target: the layer's parsing of its GPUTRACE_ environment variables
 * (layer/config.c) and of the log level (layer/log.c). Both read the
 * environment once per process behind pthread_once, so their files are
 * included here and the static parse functions called directly, each run.
 *
 * Input: NUL-separated values, seen by config.c's getenv() in turn as
 * GPUTRACE_DISABLE, GPUTRACE_OUTPUT, GPUTRACE_BACKEND, ... (absent: unset). Every
 * setting must come out as its default or a value within its documented
 * range. Each value with a byte no accepted value has (anything but
 * letters and digits) must warn, and no variable warns more than once; the
 * warnings go through the logger's formatting into /dev/null. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The logger first; then config.c with its warnings routed through a
 * counter in front of the real gt_log(). */
#include "layer/log.c"

static size_t warnings;

static void __attribute__((format(printf, 2, 3)))
counting_gt_log(enum gt_log_level level, const char *fmt, ...)
{
    warnings++;
    if (!gt_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    write_line(level, fmt, ap);
    va_end(ap);
}

/* The values come from the input, not the process environment: setenv()
 * never frees what it replaces, which a long run would pile up. */
static const char *values[16];
static const char *fuzz_getenv(const char *name);

#define gt_log counting_gt_log
#define getenv fuzz_getenv
#include "layer/config.c"
#undef getenv
#undef gt_log

static const char *const vars[] = {
    "GPUTRACE_DISABLE",         "GPUTRACE_OUTPUT",           "GPUTRACE_BACKEND",
    "GPUTRACE_CLOCK_BUDGET_NS", "GPUTRACE_HOST_QUERY_RESET", "GPUTRACE_MAX_PENDING_SUBMISSIONS",
    "GPUTRACE_QUERY_READBACK",  "GPUTRACE_STARTUP_WAIT_MS",  "GPUTRACE_BUFFER_KB",
    "GPUTRACE_SIGNAL_WAIT_MS",  "GPUTRACE_CLOCK_SOURCE",
};
#define NUM_VARS (sizeof vars / sizeof vars[0])

static const char *fuzz_getenv(const char *name)
{
    for (size_t i = 0; i < NUM_VARS; i++)
        if (strcmp(name, vars[i]) == 0)
            return values[i];
    return NULL;
}

static void logger_to_dev_null(void)
{
    /* Warnings on: the formatting of every bad value is exercised. */
    setenv("GPUTRACE_LOG", "debug", 1);
    setenv("GPUTRACE_LOG_FILE", "/dev/null", 1);
    if (!gt_log_enabled(GT_LOG_WARN))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool once;
    if (!once) {
        logger_to_dev_null();
        once = true;
    }
    /* NUL-terminated copy, split at NULs. */
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    const char *p = text, *end = text + size;
    size_t set = 0, must_warn = 0;
    for (size_t i = 0; i < NUM_VARS; i++) {
        values[i] = p <= end ? p : NULL;
        if (p <= end) {
            if (*p && strcmp(vars[i], "GPUTRACE_OUTPUT") != 0) {
                set++;
                for (const char *q = p; *q; q++) {
                    if (!isalnum((unsigned char)*q)) {
                        must_warn++;
                        break;
                    }
                }
            }
            p += strlen(p) + 1;
        }
    }

    memset(&config, 0, sizeof config);
    warnings = 0;
    config_init();
    if (warnings < must_warn || warnings > set)
        abort();
    const gt_config *c = &config;
    if (c->backend > GT_BACKEND_NONE || c->clock_source > GT_CLOCK_SOURCE_BRACKET ||
        c->readback > GT_READBACK_DRIVER)
        abort();
    if (c->clock_budget_ns < 1 || c->clock_budget_ns > 1000000000ull)
        abort();
    if (c->max_pending_submissions < 1 || c->max_pending_submissions > 1000000)
        abort();
    if (c->startup_wait_ms > 60000 || c->signal_wait_ms > 60000)
        abort();
    if (c->buffer_kb < 64 || c->buffer_kb > (1u << 20))
        abort();
    const char *out = fuzz_getenv("GPUTRACE_OUTPUT");
    if (c->output != (out && *out ? out : NULL))
        abort();

    /* The level names: the whole input, then each value, as GPUTRACE_LOG. */
    enum gt_log_level level = GT_LOG_NONE;
    if (parse_level(text, &level) && level > GT_LOG_DEBUG)
        abort();
    for (size_t i = 0; i < NUM_VARS; i++) {
        const char *v = values[i];
        if (v && parse_level(v, &level) && level > GT_LOG_DEBUG)
            abort();
    }
    free(text);
    return 0;
}
