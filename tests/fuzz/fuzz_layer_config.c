/* SPDX-License-Identifier: MIT */
/* Fuzz target: the layer's parsing of its settings (layer/config.c), of
 * vk_layer_settings.txt (layer/settings.c) and of the log level
 * (layer/log.c). They read their sources once per process, so their files
 * are included here and the static parse functions called directly, each
 * run.
 *
 * Input: NUL-separated values, seen by the settings' getenv() in turn as
 * GPUTRACE_DISABLE, GPUTRACE_OUTPUT, GPUTRACE_BACKEND, ... (absent: unset);
 * whatever follows the last of them is a vk_layer_settings.txt. Every
 * setting must come out as its default or a value within its documented
 * range. Each environment value with a byte no accepted value has (anything
 * but letters and digits) must warn, and no setting warns more than once;
 * the warnings go through the logger's formatting into /dev/null. The
 * parsed file must hold well-formed entries only; the whole input is also
 * parsed as a settings file on its own. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The settings sources with getenv() answered from the input (other
 * names from the process environment); the logger; then config.c with its
 * warnings routed through a counter in front of the real gt_log(). */
static const char *values[16];
static const char *fuzz_getenv(const char *name);
#define getenv fuzz_getenv
#include "layer/settings.c"
#undef getenv
#include "layer/log.c"

static size_t warnings;

static void __attribute__((format(printf, 2, 3)))
counting_gt_log(enum gt_log_level level, const char *fmt, ...)
{
    if (level == GT_LOG_WARN) /* not the info lines naming each setting */
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
#define gt_log counting_gt_log
#define getenv fuzz_getenv
#include "layer/config.c"
#undef getenv
#undef gt_log

static const char *const vars[] = {
    "GPUTRACE_DISABLE",         "GPUTRACE_OUTPUT",           "GPUTRACE_BACKEND",
    "GPUTRACE_CLOCK_BUDGET_NS", "GPUTRACE_HOST_QUERY_RESET", "GPUTRACE_MAX_PENDING_SUBMISSIONS",
    "GPUTRACE_QUERY_READBACK",  "GPUTRACE_STARTUP_WAIT_MS",  "GPUTRACE_BUFFER_KB",
    "GPUTRACE_SIGNAL_WAIT_MS",  "GPUTRACE_CLOCK_SOURCE",     "GPUTRACE_FRAMES",
    "GPUTRACE_TRIGGER",         "GPUTRACE_TRIGGER_SECONDS",
};
#define NUM_VARS (sizeof vars / sizeof vars[0])

static const char *fuzz_getenv(const char *name)
{
    for (size_t i = 0; i < NUM_VARS; i++)
        if (strcmp(name, vars[i]) == 0)
            return values[i];
    return getenv(name); /* the logger's, XDG_DATA_HOME, ... */
}

static gt_settings_file fuzz_file;

/* Every entry of a parsed file lies in its pool, and neither key nor value
 * holds what ends one. */
static void check_file(const gt_settings_file *f)
{
    if (f->count > GT_SETTINGS_MAX_ENTRIES || f->pool_used > sizeof f->pool)
        abort();
    for (uint32_t i = 0; i < f->count; i++) {
        const gt_settings_entry *e = &f->entries[i];
        if (e->key >= f->pool_used || e->value >= f->pool_used || e->line == 0)
            abort();
        const char *k = f->pool + e->key, *v = f->pool + e->value;
        if (!memchr(k, '\0', f->pool_used - e->key) || !memchr(v, '\0', f->pool_used - e->value))
            abort();
        if (!*k || strpbrk(k, "=#\n") || strchr(v, '\n'))
            abort();
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(k, f->pool + f->entries[j].key) == 0)
                abort();
    }
}

static void logger_to_dev_null(void)
{
    /* Warnings on: the formatting of every bad value is exercised. */
    setenv("GPUTRACE_LOG", "debug", 1);
    setenv("GPUTRACE_LOG_FILE", "/dev/null", 1);
    /* No settings file of the machine's: /dev/null is found, and refused. */
    setenv("XDG_DATA_HOME", "/nonexistent", 1);
    setenv("VK_LAYER_SETTINGS_PATH", "/dev/null", 1);
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
            /* A path takes any bytes and never warns; a trigger or frame
             * range may warn once, whatever its bytes. */
            const bool free_text =
                strcmp(vars[i], "GPUTRACE_TRIGGER") == 0 || strcmp(vars[i], "GPUTRACE_FRAMES") == 0;
            if (*p && strcmp(vars[i], "GPUTRACE_OUTPUT") != 0) {
                set++;
                for (const char *q = p; *q && !free_text; q++) {
                    if (!isalnum((unsigned char)*q)) {
                        must_warn++;
                        break;
                    }
                }
            }
            p += strlen(p) + 1;
        }
    }
    /* The rest: a settings file, and each of its settings may warn once. */
    memset(&fuzz_file, 0, sizeof fuzz_file);
    snprintf(fuzz_file.path, sizeof fuzz_file.path, "fuzz");
    if (p < end)
        gt_settings_parse(&fuzz_file, p, (size_t)(end - p));
    check_file(&fuzz_file);
    size_t file_may_warn = fuzz_file.count + (fuzz_file.problem_count < GT_SETTINGS_MAX_PROBLEMS
                                                  ? fuzz_file.problem_count
                                                  : GT_SETTINGS_MAX_PROBLEMS + 1);

    memset(&config, 0, sizeof config);
    settings_file = &fuzz_file;
    warnings = 0;
    config_init();
    if (warnings < must_warn || warnings > set + file_may_warn)
        abort();
    const gt_config *c = &config;
    if (c->backend > GT_BACKEND_NONE || c->clock_source > GT_CLOCK_SOURCE_BRACKET ||
        c->readback > GT_READBACK_BULK)
        abort();
    if (c->clock_budget_ns < 1 || c->clock_budget_ns > 1000000000ull)
        abort();
    if (c->max_pending_submissions < 1 || c->max_pending_submissions > 1000000)
        abort();
    if (c->startup_wait_ms > 60000 || c->signal_wait_ms > 60000)
        abort();
    if (c->buffer_kb < 64 || c->buffer_kb > (1u << 20))
        abort();
    if (c->frames_first < 1 || c->frames_last < c->frames_first)
        abort();
    if (c->trigger_seconds < 1 || c->trigger_seconds > 3600)
        abort();
    if (c->trigger && c->trigger_spec.kind != TRG_SIGNAL && c->trigger_spec.kind != TRG_FILE)
        abort();
    if (c->trigger && c->trigger_spec.kind == TRG_FILE &&
        (!c->trigger_spec.path[0] || !memchr(c->trigger_spec.path, '\0', TRG_PATH_MAX)))
        abort();
    const char *out = fuzz_getenv("GPUTRACE_OUTPUT");
    const char *file_out = gt_settings_file_find(&fuzz_file, "output", NULL);
    if (out && *out) {
        if (c->output != out)
            abort();
    } else if (file_out && *file_out && strlen(file_out) < sizeof output_copy) {
        if (!c->output || strcmp(c->output, file_out) != 0)
            abort();
    } else if (c->output) {
        abort();
    }

    /* The whole input as one settings file. */
    static gt_settings_file whole;
    memset(&whole, 0, sizeof whole);
    gt_settings_parse(&whole, (const char *)data, size);
    check_file(&whole);

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
