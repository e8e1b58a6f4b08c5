/* SPDX-License-Identifier: MIT */
/* config.h — the layer's settings, read once per process.
 *
 * Each comes from the environment (GPUTRACE_<KEY>), vk_layer_settings.txt
 * or the first instance's VkLayerSettingsCreateInfoEXT, in that order of
 * precedence (settings.h). Logging has its own settings (see log.h),
 * initialised from here first. Anything the timing code needs later goes
 * here too, so every setting is parsed in one place and a bad value always
 * ends as one warning and the default.
 */
#ifndef GPUTRACE_LAYER_CONFIG_H
#define GPUTRACE_LAYER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "tracing/trigger.h"

enum gt_backend_choice {
    GT_BACKEND_AUTO,      /* in-process if GPUTRACE_OUTPUT is set, else system */
    GT_BACKEND_INPROCESS, /* GPUTRACE_BACKEND=inprocess */
    GT_BACKEND_SYSTEM,    /* GPUTRACE_BACKEND=system */
    GT_BACKEND_NONE,      /* GPUTRACE_BACKEND=none: never trace */
};

enum gt_clock_source_choice {
    GT_CLOCK_SOURCE_AUTO,       /* calibrated timestamps if enabled, else bracket */
    GT_CLOCK_SOURCE_CALIBRATED, /* GPUTRACE_CLOCK_SOURCE=calibrated */
    GT_CLOCK_SOURCE_BRACKET,    /* GPUTRACE_CLOCK_SOURCE=bracket (the fallback) */
};

enum gt_readback_choice {
    GT_READBACK_AUTO,   /* copy on drivers where a query read idles the device */
    GT_READBACK_COPY,   /* GPUTRACE_QUERY_READBACK=copy */
    GT_READBACK_DRIVER, /* GPUTRACE_QUERY_READBACK=driver: vkGetQueryPoolResults */
    GT_READBACK_BULK,   /* =bulk: copy, but one-time-submit ones read in bulk */
};

typedef struct gt_config gt_config;
struct gt_config {
    /* GPUTRACE_DISABLE=1: the layer stays in the call chain (it must, to
    * keep the loader's link info consistent) but hooks nothing, amends
    * nothing and calls no timeline code. */
    bool disabled;

    /* GPUTRACE_OUTPUT: trace file of the in-process backend, or NULL. */
    const char *output;
    enum gt_backend_choice backend;
    /* GPUTRACE_CLOCK_BUDGET_NS: conversion error allowed to accumulate from
    * drift between two clock snapshots (default 1000). */
    uint64_t clock_budget_ns;
    enum gt_clock_source_choice clock_source;
    /* GPUTRACE_HOST_QUERY_RESET=0: reset the layer's queries with recorded
    * vkCmdResetQueryPool even where host query reset exists (the path for
    * devices without it, kept testable). Default 1. */
    bool host_query_reset;
    /* GPUTRACE_MAX_PENDING_SUBMISSIONS: timed submissions a device's
    * collector may have waiting at once (default 8192); submissions beyond
    * it are passed through untimed and reported as lost. */
    uint32_t max_pending_submissions;
    /* GPUTRACE_QUERY_READBACK: how timestamps come back to the host (see
    * docs/layer.md, "Reading results"). */
    enum gt_readback_choice readback;
    /* GPUTRACE_STARTUP_WAIT_MS: with the system backend, how long the first
    * vkCreateDevice may wait for a tracing service that accepted our
    * connection to start our data source or show that no session wants it
    * (default 500; 0 never waits). No service: no wait. */
    uint32_t startup_wait_ms;
    /* GPUTRACE_BUFFER_KB: the embedded backend's central (ring) buffer,
    * default 32768. Its pages are touched as it first fills, so RSS grows
    * by up to this much before it wraps (which the soak must allow for). */
    uint32_t buffer_kb;
    /* GPUTRACE_SIGNAL_WAIT_MS: the embedded backend finishes its file on
    * SIGINT/SIGTERM before the signal takes its course, waiting at most
    * this long (default 2000); 0 leaves both signals alone. */
    uint32_t signal_wait_ms;
    /* GPUTRACE_LOW_OVERHEAD=1: the embedded backend's session times and
    * writes command buffers and render pass / dynamic rendering instances
    * only, as GpuRenderStagesConfig.low_overhead asks of a system
    * backend's session (default off). */
    bool low_overhead;
    /* GPUTRACE_MEMORY=1: the embedded backend's session also gets the
     * memory events (VulkanMemoryEvent and the heaps' counters), as a
     * system backend's session running "vulkan.memory_tracker" does
     * (default off). */
    bool memory;

    /* GPUTRACE_FRAMES=A..B (also A-B, A.. for "from A on", or A alone):
     * time only frames A to B of each device's first frame stream
     * (docs/layer.md, "Frames"); default every frame (1 .. UINT64_MAX). */
    uint64_t frames_first, frames_last;

    /* GPUTRACE_TRIGGER=signal:NAME|file:PATH: the embedded backend is a
     * flight recorder writing the last GPUTRACE_TRIGGER_SECONDS (1..3600,
     * default 10) into a new file at each trigger (docs/layer.md, "Flight
     * recorder"); NULL: off. The text as given, and parsed. */
    const char *trigger;
    trg_spec trigger_spec;
    uint32_t trigger_seconds;
};

/* The process-wide settings. Fixed by the first call of this or of
 * gt_config_instance(), without API settings if it is this one. */
const gt_config *gt_config_get(void);

/* vkCreateInstance, with the instance's pNext chain: the first instance's
 * VkLayerSettingsCreateInfoEXT takes part in the process-wide settings
 * (later ones' are reported at info level and ignored). Returns whether the
 * layer is disabled for this instance: `disable` is the one setting each
 * instance's own structure decides (below the environment and the file). */
bool gt_config_instance(const void *instance_pnext);

#endif
