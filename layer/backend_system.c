/* SPDX-License-Identifier: MIT */
/* backend_system.c — the system backend: a Perfetto producer ("gputrace")
 * offering the data sources "gpu.renderstages" (GPU stages, the CPU-side
 * submits and waits) and "vulkan.memory_tracker" (VulkanMemoryEvents) to
 * traced. The layer traces while instances of them run: each tracing
 * session that asks for one gets its own instance, served at the same time
 * as the others (session.c gives each a slot of writers), with the options
 * of its DataSourceConfig.gpu_renderstages_config or
 * vulkan_memory_config.
 *
 * Built only when the tracing library provides the producer
 * (GT_HAVE_SYSTEM_BACKEND, set by layer/meson.build); otherwise
 * tl_backend_system_create() reports the backend as unavailable. */
#include <stdlib.h>

#include "layer/backend.h"

#ifdef GT_HAVE_SYSTEM_BACKEND

#include <stdatomic.h>

#include "layer/log.h"
#include "protos/perfetto/data_source_config.pbc.h"
#include "tracing/ipc/producer.h"

#define SYSTEM_SMB_SIZE (4u << 20)

typedef struct system_backend system_backend;
struct system_backend {
    tl_backend base;
    ipc_producer *producer;
    tl_backend_events events;
    /* Instances started and not stopped (producer thread's callbacks). */
    atomic_uint running;
    /* What the memory data source's callbacks get (instance ids are the
     * service's, unique across both data sources). */
    struct memory_ds {
        system_backend *backend;
    } memory;
};

/* The options of GpuRenderStagesConfig (DataSourceConfig field 133) that
 * apply; what gputrace cannot do is logged once per process. */
static void parse_options(const ipc_producer_ds_config *cfg, tl_ds_options *out)
{
    static atomic_bool told_loadstore, told_metrics;
    *out = (tl_ds_options){ .stages = true };
    perfetto_protos_DataSourceConfig_view dsc;
    perfetto_protos_GpuRenderStagesConfig_view gpu;
    if (!cfg->raw || !perfetto_protos_DataSourceConfig_decode(&dsc, cfg->raw, cfg->raw_size) ||
        !dsc.has_gpu_renderstages_config ||
        !perfetto_protos_GpuRenderStagesConfig_decode(&gpu, dsc.gpu_renderstages_config.data,
                                                      dsc.gpu_renderstages_config.size))
        return;
    out->low_overhead = gpu.low_overhead;
    if (gpu.full_loadstore && !atomic_exchange(&told_loadstore, true))
        gt_info("gpu_renderstages_config.full_loadstore is not supported (the layer has no "
                "load/store stages); ignored");
    if (gpu.trace_metrics_count && !atomic_exchange(&told_metrics, true))
        gt_info("gpu_renderstages_config.trace_metrics is not supported (no hardware "
                "counters); %u metric(s) ignored",
                gpu.trace_metrics_count);
}

/* VulkanMemoryConfig (DataSourceConfig field 112): device memory unless
 * the session turned it off; driver (host) memory is not tracked. */
static bool parse_memory_options(const ipc_producer_ds_config *cfg)
{
    static atomic_bool told_driver;
    perfetto_protos_DataSourceConfig_view dsc;
    perfetto_protos_VulkanMemoryConfig_view mem;
    if (!cfg->raw || !perfetto_protos_DataSourceConfig_decode(&dsc, cfg->raw, cfg->raw_size) ||
        !dsc.has_vulkan_memory_config ||
        !perfetto_protos_VulkanMemoryConfig_decode(&mem, dsc.vulkan_memory_config.data,
                                                   dsc.vulkan_memory_config.size))
        return true;
    if (mem.track_driver_memory_usage && !atomic_exchange(&told_driver, true))
        gt_info("vulkan_memory_config.track_driver_memory_usage is not supported (host memory "
                "the driver allocates is not tracked); ignored");
    if (mem.has_track_device_memory_usage && !mem.track_device_memory_usage) {
        gt_info("vulkan_memory_config.track_device_memory_usage is off: this session gets no "
                "memory events");
        return false;
    }
    return true;
}

static void ds_start(void *user, uint64_t instance, const ipc_producer_ds_config *cfg)
{
    system_backend *b = user;
    tl_ds_options options;
    parse_options(cfg, &options);
    atomic_fetch_add(&b->running, 1);
    b->events.started(b->events.ctx, instance, &options);
}

static void memory_ds_start(void *user, uint64_t instance, const ipc_producer_ds_config *cfg)
{
    system_backend *b = ((struct memory_ds *)user)->backend;
    const tl_ds_options options = { .memory = parse_memory_options(cfg) };
    atomic_fetch_add(&b->running, 1);
    b->events.started(b->events.ctx, instance, &options);
}

static void memory_ds_stop(void *user, uint64_t instance)
{
    system_backend *b = ((struct memory_ds *)user)->backend;
    b->events.stopping(b->events.ctx, instance);
    atomic_fetch_sub(&b->running, 1);
}

static void memory_ds_clear(void *user, uint64_t instance)
{
    system_backend *b = ((struct memory_ds *)user)->backend;
    b->events.clear_incremental_state(b->events.ctx, instance);
}

/* The producer calls this only for an instance it started. */
static void ds_stop(void *user, uint64_t instance)
{
    system_backend *b = user;
    b->events.stopping(b->events.ctx, instance);
    atomic_fetch_sub(&b->running, 1);
}

static void ds_clear(void *user, uint64_t instance)
{
    system_backend *b = user;
    b->events.clear_incremental_state(b->events.ctx, instance);
}

/* The writer follows the exhaustion policy the session's DataSourceConfig
 * asks for; a stall policy would let the service hold up whichever thread
 * writes. session.c caps it before the first packet: application threads
 * never wait, the collector only briefly (TL_COLLECTOR_STALL_MS). */
static tw_writer *system_new_writer(tl_backend *base, uint64_t instance)
{
    system_backend *b = (system_backend *)base;
    return ipc_producer_new_writer(b->producer, instance);
}

static void system_release_writer(tl_backend *base, tw_writer *tw)
{
    system_backend *b = (system_backend *)base;
    ipc_producer_release_writer(b->producer, tw);
}

static enum tl_startup system_wait_startup(tl_backend *base, uint32_t timeout_ms)
{
    system_backend *b = (system_backend *)base;
    ipc_producer_startup s = ipc_producer_wait_startup(b->producer, timeout_ms);
    if (s == GT_STARTUP_NO_SERVICE)
        return TL_STARTUP_NO_SERVICE;
    if (s == GT_STARTUP_PENDING)
        return TL_STARTUP_TIMEOUT;
    /* READY: ds_start already ran for every session that wanted us. */
    return atomic_load(&b->running) ? TL_STARTUP_TRACING : TL_STARTUP_NO_SESSION;
}

static void system_destroy(tl_backend *base)
{
    system_backend *b = (system_backend *)base;
    /* The application is waiting here (vkDestroyInstance, or exit): the
    * producer hands the service what is left within
    * IPC_PRODUCER_FAREWELL_MS, and gives up on a service that does not
    * take it. */
    ipc_producer_stop(b->producer);
    ipc_producer_stats st;
    ipc_producer_get_stats(b->producer, &st);
    if (st.farewells_cut)
        gt_warn("system backend: the tracing service did not take the producer's last "
                "requests within %u ms (%llu bytes, %llu more chunks uncommitted); the end of "
                "the trace may be missing",
                IPC_PRODUCER_FAREWELL_MS, (unsigned long long)st.farewell_bytes_unsent,
                (unsigned long long)st.farewell_chunks_unsent);
    ipc_producer_destroy(b->producer);
    free(b);
}

static const tl_backend_ops system_ops = {
    .name = "system",
    .wait_startup = system_wait_startup,
    .new_writer = system_new_writer,
    .release_writer = system_release_writer,
    .destroy = system_destroy,
};

tl_backend *tl_backend_system_create(const tl_backend_events *events)
{
    system_backend *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->base.ops = &system_ops;
    b->events = *events;
    atomic_init(&b->running, 0);
    b->memory.backend = b;
    const ipc_producer_data_source ds[] = {
        {
            .name = TL_DATA_SOURCE_NAME,
            .user = b,
            .on_start = ds_start,
            .on_stop = ds_stop,
            .on_clear_incremental_state = ds_clear,
        },
        {
            .name = TL_MEMORY_DATA_SOURCE_NAME,
            .user = &b->memory,
            .on_start = memory_ds_start,
            .on_stop = memory_ds_stop,
            .on_clear_incremental_state = memory_ds_clear,
        },
    };
    const ipc_producer_config cfg = {
        .name = TL_PRODUCER_NAME,
        .data_sources = ds,
        .num_data_sources = sizeof ds / sizeof ds[0],
        /* The collector writes in bursts after each completion, thousands
       * of events at once from a busy device: Perfetto's default 256 KiB
       * filled (and dropped, counted) under load before the producer
       * thread could commit it. 4 MiB, as the embedded backend has, is
       * room for a few seconds of them; services accept up to 32 MiB. */
        .smb_size_hint = SYSTEM_SMB_SIZE,
    };
    b->producer = ipc_producer_create(&cfg);
    if (!b->producer) {
        free(b);
        return NULL;
    }
    return &b->base;
}

bool tl_backend_system_available(void)
{
    return true;
}

#else /* !GT_HAVE_SYSTEM_BACKEND */

tl_backend *tl_backend_system_create(const tl_backend_events *events)
{
    (void)events;
    return NULL;
}

bool tl_backend_system_available(void)
{
    return false;
}

#endif
