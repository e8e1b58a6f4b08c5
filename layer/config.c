/* SPDX-License-Identifier: MIT */
/* config.c — the layer's settings other than the logger's, from the three
 * sources of settings.h, each read once per process. */
#include "layer/config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layer/log.h"
#include "layer/settings.h"

static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool config_ready;
static gt_config config;
static char output_copy[GT_SETTINGS_PATH_SIZE];
static char trigger_copy[GT_SETTINGS_PATH_SIZE];

/* While config_init() runs (under config_lock): the pNext chain of the
 * instance whose VkLayerSettingsCreateInfoEXT counts, and the settings
 * file (set beforehand by the fuzz target; else the located one). */
static const void *api_chain;
static const gt_settings_file *settings_file;

/* The key of every setting the layer reads, the logger's included: a key
 * of ours in the file or the API that is not here is reported. */
static const char *const known_settings[] = {
    "disable",
    "output",
    "backend",
    "clock_budget_ns",
    "clock_source",
    "host_query_reset",
    "max_pending_submissions",
    "query_readback",
    "startup_wait_ms",
    "buffer_kb",
    "signal_wait_ms",
    "low_overhead",
    "memory",
    "frames",
    "trigger",
    "trigger_seconds",
    "log",
    "log_file",
};
#define NUM_KNOWN (sizeof known_settings / sizeof known_settings[0])

/* The setting read from variable `name` in the three sources; false when
 * it is unset or its API value has the wrong type (reported). `where` gets
 * "" for the environment (so its warnings read as before), else " (from
 * ORIGIN)". */
static bool lookup(const char *name, gt_setting_kind kind, gt_setting *s, char *where, size_t size)
{
    gt_settings_lookup(name, kind, api_chain, settings_file, s);
    where[0] = '\0';
    if (s->source == GT_SETTING_UNSET)
        return false;
    if (s->source != GT_SETTING_ENV)
        snprintf(where, size, " (from %s)", s->origin);
    if (!s->value) {
        gt_warn("ignoring %s%s: %s; using the default", s->name, where, s->problem);
        return false;
    }
    gt_info("setting %s=%s%s", s->name, s->value, s->source == GT_SETTING_ENV ? "" : where);
    return true;
}

/* Unset or empty means the default; anything unrecognised is reported once
 * and also means the default. */
static bool env_bool(const char *name, bool fallback)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    gt_setting s;
    char where[sizeof s.origin + 16];
    if (!lookup(name, GT_SETTING_BOOL, &s, where, sizeof where))
        return fallback;
    const char *v = s.value;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return true;
        if (strcasecmp(v, no[i]) == 0)
            return false;
    }
    gt_warn("ignoring %s=%s%s: expected 1 or 0; using %d", s.name, v, where, fallback);
    return fallback;
}

/* One of `names` (case-insensitive), as its index; unset or empty is the
 * fallback, anything else a warning and the fallback. */
static int env_choice(const char *name, const char *const *names, int count, int fallback)
{
    gt_setting s;
    char where[sizeof s.origin + 16];
    if (!lookup(name, GT_SETTING_TEXT, &s, where, sizeof where))
        return fallback;
    const char *v = s.value;
    for (int i = 0; i < count; i++) {
        if (names[i] && strcasecmp(v, names[i]) == 0)
            return i;
    }
    gt_warn("ignoring %s=%s%s: unknown value; using %s", s.name, v, where, names[fallback]);
    return fallback;
}

static uint64_t env_u64(const char *name, uint64_t min, uint64_t max, uint64_t fallback)
{
    gt_setting s;
    char where[sizeof s.origin + 16];
    if (!lookup(name, GT_SETTING_NUMBER, &s, where, sizeof where))
        return fallback;
    const char *v = s.value;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || *v < '0' || *v > '9' || n < min || n > max) {
        gt_warn("ignoring %s=%s%s: expected a number from %llu to %llu; using %llu", s.name, v,
                where, (unsigned long long)min, (unsigned long long)max,
                (unsigned long long)fallback);
        return fallback;
    }
    return n;
}

/* "A..B", "A-B", "A.." or "A": frame numbers from 1. False for anything
 * else (including B < A). */
static bool parse_frames(const char *v, uint64_t *first, uint64_t *last)
{
    char *end;
    if (*v < '1' || *v > '9')
        return false;
    errno = 0;
    unsigned long long a = strtoull(v, &end, 10);
    if (errno || a == 0)
        return false;
    *first = a;
    *last = UINT64_MAX;
    if (!*end) {
        *last = a;
        return true;
    }
    if (strncmp(end, "..", 2) == 0)
        end += 2;
    else if (*end == '-')
        end += 1;
    else
        return false;
    if (!*end)
        return true; /* open-ended */
    const char *b = end;
    if (*b < '0' || *b > '9')
        return false;
    unsigned long long z = strtoull(b, &end, 10);
    if (errno || *end || z < a)
        return false;
    *last = z;
    return true;
}

static void env_frames(const char *name, uint64_t *first, uint64_t *last)
{
    gt_setting s;
    char where[sizeof s.origin + 16];
    *first = 1;
    *last = UINT64_MAX;
    if (!lookup(name, GT_SETTING_TEXT, &s, where, sizeof where))
        return;
    if (!parse_frames(s.value, first, last)) {
        *first = 1;
        *last = UINT64_MAX;
        gt_warn("ignoring %s=%s%s: expected A..B (frame numbers from 1, A <= B), A.. or A; "
                "timing every frame",
                s.name, s.value, where);
    }
}

static const char *env_text(const char *name, char *copy, size_t size);

/* A path: kept as given by the environment, copied from the other sources
 * (the file's text and the application's strings do not last). */
static const char *env_path(const char *name)
{
    return env_text(name, output_copy, sizeof output_copy);
}

static const char *env_text(const char *name, char *copy, size_t size)
{
    gt_setting s;
    char where[sizeof s.origin + 16];
    if (!lookup(name, GT_SETTING_TEXT, &s, where, sizeof where))
        return NULL;
    if (s.source == GT_SETTING_ENV)
        return s.value;
    size_t len = strlen(s.value);
    if (len >= size) {
        gt_warn("ignoring %s%s: longer than %zu bytes", s.name, where, size - 1);
        return NULL;
    }
    memcpy(copy, s.value, len + 1);
    return copy;
}

static bool is_known(const char *key)
{
    for (size_t i = 0; i < NUM_KNOWN; i++) {
        if (strcmp(known_settings[i], key) == 0)
            return true;
    }
    return false;
}

/* What the settings file and the application's structures hold that no
 * setting reads, and the lines of the file that could not be read. */
static void report_unused(void)
{
    const gt_settings_file *f = settings_file;
    for (uint32_t i = 0; i < f->problem_count && i < GT_SETTINGS_MAX_PROBLEMS; i++)
        gt_warn("settings file %s: %s", f->path, f->problems[i]);
    if (f->problem_count > GT_SETTINGS_MAX_PROBLEMS)
        gt_warn("settings file %s: %u more problems", f->path,
                f->problem_count - GT_SETTINGS_MAX_PROBLEMS);
    for (uint32_t i = 0; i < f->count; i++) {
        const char *key = f->pool + f->entries[i].key;
        if (!is_known(key))
            gt_warn("settings file %s:%u: unknown setting %s%s; ignored", f->path,
                    f->entries[i].line, GT_SETTINGS_FILE_PREFIX, key);
    }
    const char *name;
    for (uint32_t i = 0; (name = gt_settings_api_name(api_chain, i)) != NULL; i++) {
        if (!is_known(name))
            gt_warn("VkLayerSettingsCreateInfoEXT: unknown setting %s; ignored", name);
    }
}

static void config_init(void)
{
    if (!settings_file)
        settings_file = gt_settings_file_get();
    /* The logger first: what follows may warn. */
    gt_log_init(api_chain);
    report_unused();
    static const char *const backends[] = {
        [GT_BACKEND_AUTO] = "auto",
        [GT_BACKEND_INPROCESS] = "inprocess",
        [GT_BACKEND_SYSTEM] = "system",
        [GT_BACKEND_NONE] = "none",
    };
    static const char *const clock_sources[] = {
        [GT_CLOCK_SOURCE_AUTO] = "auto",
        [GT_CLOCK_SOURCE_CALIBRATED] = "calibrated",
        [GT_CLOCK_SOURCE_BRACKET] = "bracket",
    };
    config.disabled = env_bool("GPUTRACE_DISABLE", false);
    config.output = env_path("GPUTRACE_OUTPUT");
    config.backend = (enum gt_backend_choice)env_choice(
        "GPUTRACE_BACKEND", backends, sizeof backends / sizeof backends[0], GT_BACKEND_AUTO);
    config.clock_budget_ns = env_u64("GPUTRACE_CLOCK_BUDGET_NS", 1, 1000000000ull, 1000);
    config.host_query_reset = env_bool("GPUTRACE_HOST_QUERY_RESET", true);
    config.max_pending_submissions =
        (uint32_t)env_u64("GPUTRACE_MAX_PENDING_SUBMISSIONS", 1, 1000000, 8192);
    static const char *const readbacks[] = {
        [GT_READBACK_AUTO] = "auto",
        [GT_READBACK_COPY] = "copy",
        [GT_READBACK_DRIVER] = "driver",
        [GT_READBACK_BULK] = "bulk",
    };
    config.readback = (enum gt_readback_choice)env_choice("GPUTRACE_QUERY_READBACK", readbacks,
                                                          sizeof readbacks / sizeof readbacks[0],
                                                          GT_READBACK_AUTO);
    /* The normal cost is a few round trips on a local socket (a few ms, tens
    * under sanitizers), whatever the bound; the bound only matters for a
    * service that accepts connections but does not answer (docs/ci.md). */
    config.startup_wait_ms = (uint32_t)env_u64("GPUTRACE_STARTUP_WAIT_MS", 0, 60000, 500);
    config.buffer_kb = (uint32_t)env_u64("GPUTRACE_BUFFER_KB", 64, 1u << 20, 32768);
    config.signal_wait_ms = (uint32_t)env_u64("GPUTRACE_SIGNAL_WAIT_MS", 0, 60000, 2000);
    config.low_overhead = env_bool("GPUTRACE_LOW_OVERHEAD", false);
    config.memory = env_bool("GPUTRACE_MEMORY", false);
    env_frames("GPUTRACE_FRAMES", &config.frames_first, &config.frames_last);
    config.trigger = env_text("GPUTRACE_TRIGGER", trigger_copy, sizeof trigger_copy);
    const char *why = NULL;
    if (config.trigger && !trg_parse(config.trigger, &config.trigger_spec, &why)) {
        gt_warn("ignoring GPUTRACE_TRIGGER=%s: %s; no flight recorder", config.trigger, why);
        config.trigger = NULL;
    }
    config.trigger_seconds = (uint32_t)env_u64("GPUTRACE_TRIGGER_SECONDS", 1, 3600, 10);
    config.clock_source = (enum gt_clock_source_choice)env_choice(
        "GPUTRACE_CLOCK_SOURCE", clock_sources, sizeof clock_sources / sizeof clock_sources[0],
        GT_CLOCK_SOURCE_AUTO);
}

/* The first caller fixes the process-wide settings, with its instance's
 * VkLayerSettingsCreateInfoEXT if it is vkCreateInstance. */
static bool config_ensure(const void *instance_pnext)
{
    if (atomic_load_explicit(&config_ready, memory_order_acquire))
        return false;
    pthread_mutex_lock(&config_lock);
    bool first = !atomic_load_explicit(&config_ready, memory_order_relaxed);
    if (first) {
        api_chain = instance_pnext;
        config_init();
        api_chain = NULL;
        atomic_store_explicit(&config_ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&config_lock);
    return first;
}

const gt_config *gt_config_get(void)
{
    config_ensure(NULL);
    return &config;
}

bool gt_config_instance(const void *instance_pnext)
{
    if (config_ensure(instance_pnext))
        return config.disabled;
    /* A later instance: only `disable` is its own. */
    pthread_mutex_lock(&config_lock);
    api_chain = instance_pnext;
    bool disabled = env_bool("GPUTRACE_DISABLE", false);
    const char *name;
    for (uint32_t i = 0; (name = gt_settings_api_name(api_chain, i)) != NULL; i++) {
        if (strcmp(name, "disable") != 0) {
            gt_info("VkLayerSettingsCreateInfoEXT of a later instance: %s is process-wide, "
                    "fixed by the first instance; ignored",
                    name);
        }
    }
    api_chain = NULL;
    pthread_mutex_unlock(&config_lock);
    return disabled;
}
