/* config.c — parsing of GPUTRACE_ variables other than the logger's. */
#include "layer/config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>

#include "layer/log.h"

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static gt_config config;

/* Unset or empty means the default; anything unrecognised is reported once
 * and also means the default. */
static bool env_bool(const char *name, bool fallback)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return true;
        if (strcasecmp(v, no[i]) == 0)
            return false;
    }
    gt_warn("ignoring %s=%s: expected 1 or 0; using %d", name, v, fallback);
    return fallback;
}

/* One of `names` (case-insensitive), as its index; unset or empty is the
 * fallback, anything else a warning and the fallback. */
static int env_choice(const char *name, const char *const *names, int count, int fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    for (int i = 0; i < count; i++) {
        if (names[i] && strcasecmp(v, names[i]) == 0)
            return i;
    }
    gt_warn("ignoring %s=%s: unknown value; using %s", name, v, names[fallback]);
    return fallback;
}

static uint64_t env_u64(const char *name, uint64_t min, uint64_t max, uint64_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || *v < '0' || *v > '9' || n < min || n > max) {
        gt_warn("ignoring %s=%s: expected a number from %llu to %llu; using %llu", name, v,
                (unsigned long long)min, (unsigned long long)max, (unsigned long long)fallback);
        return fallback;
    }
    return n;
}

static void config_init(void)
{
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
    const char *output = getenv("GPUTRACE_OUTPUT");
    config.output = output && *output ? output : NULL;
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
    config.clock_source = (enum gt_clock_source_choice)env_choice(
        "GPUTRACE_CLOCK_SOURCE", clock_sources, sizeof clock_sources / sizeof clock_sources[0],
        GT_CLOCK_SOURCE_AUTO);
}

const gt_config *gt_config_get(void)
{
    pthread_once(&config_once, config_init);
    return &config;
}
