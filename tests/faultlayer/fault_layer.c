/* SPDX-License-Identifier: MIT */
/* fault_layer.c — VK_LAYER_GPUTRACE_clockfault, a test-only Vulkan layer
 * that sits between VK_LAYER_GPUTRACE_timeline and the driver and lies
 * about the device clock (fault_model.h), about calibration, and about the
 * device being alive.
 *
 * What it changes, and through which entry points:
 *  - timestamps: vkGetQueryPoolResults on TIMESTAMP pools (pools are
 *    recorded at vkCreateQueryPool), the DEVICE domain of
 *    vkGetCalibratedTimestamps{EXT,KHR}, and values that
 *    vkCmdCopyQueryPoolResults wrote into mapped memory (fault_memory.c);
 *  - VkPhysicalDeviceLimits::timestampPeriod (Properties, 2, 2KHR) and
 *    VkQueueFamilyProperties::timestampValidBits (all three variants);
 *  - calibration: failures, noise with a matching maxDeviation, or the
 *    extension hidden (filtered from vkEnumerateDeviceExtensionProperties,
 *    and the time-domain / calibration functions not handed out);
 *  - the driver bugs gputrace-probe must catch: the calibrated DEVICE
 *    domain offset from the queries, timestampPeriod misreported,
 *    maxDeviation understated, one queue family's stamps offset
 *    (fault_family.c), the counter restarting at 0, host domains offset,
 *    fewer valid bits shown than used, availability before the write, a
 *    WAIT read that never returns;
 *  - device loss: VK_ERROR_DEVICE_LOST from submits, query results and
 *    fence waits after a number of calls, sticky afterwards. Before the
 *    first lost result the real device is drained, so whatever the
 *    application frees after seeing it is really idle (lavapipe keeps
 *    running; only the answers are faked).
 *
 * With GPUTRACE_FAULT_CHECK_QUERY_REUSE=1 it also checks the timing layer's
 * query reuse (reuse_check.h, fault_reuse_hooks.c).
 *
 * Assumes a driver with timestampPeriod 1 and 64 valid bits (lavapipe).
 * The loader plumbing is the test layers' skeleton
 * (tests/common/test_layer_skeleton.h); this file supplies the hooks and
 * the per-instance and per-device state (fault_layer.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/faultlayer/fault_layer.h"

#define FL_LAYER_NAME    "VK_LAYER_GPUTRACE_clockfault"
#define FL_STACK_QUERIES 64

/* ---- configuration, counters, randomness ----------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
fm_config fl_cfg;
static const char *g_truth_path;
fl_counts fl_count;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_rng;

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_truth(void)
{
    if (!g_truth_path)
        return;
    fm_counters n = {
        .query_values = atomic_load(&fl_count.query_values),
        .calibrations = atomic_load(&fl_count.calibrations),
        .calibration_failures = atomic_load(&fl_count.calibration_failures),
        .noisy_readings = atomic_load(&fl_count.noisy_readings),
        .submits = atomic_load(&fl_count.submits),
        .results = atomic_load(&fl_count.results),
        .waits = atomic_load(&fl_count.waits),
        .lost_returned = atomic_load(&fl_count.lost_returned),
        .lost = atomic_load(&fl_count.lost),
        .early_available = atomic_load(&fl_count.early_available),
        .family_offsets = atomic_load(&fl_count.family_offsets),
        .copies_held = atomic_load(&fl_count.copies_held),
        .copies_revealed = atomic_load(&fl_count.copies_revealed),
    };
    pthread_mutex_lock(&g_lock);
    if (!fm_truth_write(g_truth_path, &fl_cfg, &n))
        fprintf(stderr, "clockfault: cannot write %s\n", g_truth_path);
    pthread_mutex_unlock(&g_lock);
}

static void load_config(void)
{
    fm_config_from_env(&fl_cfg, monotonic_ns());
    g_rng = fl_cfg.seed ? fl_cfg.seed : 1;
    const char *p = getenv("GPUTRACE_FAULT_TRUTH_FILE");
    g_truth_path = p && *p ? p : NULL;
    write_truth();
}

/* xorshift64*: deterministic per seed, which keeps failures reproducible. */
static uint64_t rng_next(void)
{
    pthread_mutex_lock(&g_lock);
    uint64_t x = g_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    g_rng = x;
    pthread_mutex_unlock(&g_lock);
    return x * 0x2545F4914F6CDD1Dull;
}

static double rng_unit(void)
{
    return (double)(rng_next() >> 11) / 9007199254740992.0;
}

static void __attribute__((destructor)) final_truth(void)
{
    /* Applications that exit without vkDestroyInstance still leave counts. */
    if (g_truth_path)
        write_truth();
}

/* ---- objects ----------------------------------------------------------------- */

typedef struct fl_instance fl_instance;
struct fl_instance {
    tls_instance base;
    PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;
    PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2KHR;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties2 GetPhysicalDeviceQueueFamilyProperties2;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties2 GetPhysicalDeviceQueueFamilyProperties2KHR;
    PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
};

static fl_instance *instance_of(const void *dispatchable)
{
    return (fl_instance *)tls_instance_of(dispatchable);
}

static bool is_calibration_name(const char *name)
{
    return strcmp(name, "vkGetCalibratedTimestampsEXT") == 0 ||
           strcmp(name, "vkGetCalibratedTimestampsKHR") == 0 ||
           strcmp(name, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT") == 0 ||
           strcmp(name, "vkGetPhysicalDeviceCalibrateableTimeDomainsKHR") == 0;
}

static bool is_calibration_extension(const char *name)
{
    return strcmp(name, "VK_EXT_calibrated_timestamps") == 0 ||
           strcmp(name, "VK_KHR_calibrated_timestamps") == 0;
}

/* ---- timestamp pools ----------------------------------------------------------- */

static void pool_add(fl_device *d, VkQueryPool pool)
{
    pthread_mutex_lock(&d->pool_lock);
    if (d->npools == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        VkQueryPool *p = realloc(d->timestamp_pools, cap * sizeof *p);
        if (p) {
            d->timestamp_pools = p;
            d->cap = cap;
        }
    }
    if (d->npools < d->cap)
        d->timestamp_pools[d->npools++] = pool;
    else
        fprintf(stderr, "clockfault: out of memory: a timestamp pool stays untransformed\n");
    pthread_mutex_unlock(&d->pool_lock);
}

static void pool_remove(fl_device *d, VkQueryPool pool)
{
    pthread_mutex_lock(&d->pool_lock);
    for (size_t i = 0; i < d->npools; i++) {
        if (d->timestamp_pools[i] == pool) {
            d->timestamp_pools[i] = d->timestamp_pools[--d->npools];
            break;
        }
    }
    pthread_mutex_unlock(&d->pool_lock);
}

bool fl_pool_is_timestamp(fl_device *d, VkQueryPool pool)
{
    bool found = false;
    pthread_mutex_lock(&d->pool_lock);
    for (size_t i = 0; i < d->npools && !found; i++)
        found = d->timestamp_pools[i] == pool;
    pthread_mutex_unlock(&d->pool_lock);
    return found;
}

/* ---- device loss ------------------------------------------------------------- */

static void declare_lost(fl_device *d)
{
    pthread_rwlock_wrlock(&d->submit_lock);
    if (!atomic_load(&d->lost)) {
        /* Nothing new goes down once `lost` is set; wait for what already
       * did, so resources freed after the error are really unused. */
        d->DeviceWaitIdle(d->base.handle);
        atomic_store(&d->lost, true);
        atomic_store(&fl_count.lost, true);
        fprintf(stderr, "clockfault: device %p is now lost (injected)\n", (void *)d->base.handle);
    }
    pthread_rwlock_unlock(&d->submit_lock);
}

/* Counts one call on `counter`; true (and the device lost) when this call
 * is past `limit`, or the device already is. */
static bool lost_now(fl_device *d, atomic_uint_fast64_t *counter, uint64_t limit)
{
    uint64_t n = atomic_fetch_add(counter, 1) + 1;
    if (!atomic_load(&d->lost) && limit && n > limit)
        declare_lost(d);
    if (atomic_load(&d->lost)) {
        atomic_fetch_add(&fl_count.lost_returned, 1);
        return true;
    }
    return false;
}

static bool already_lost(fl_device *d)
{
    if (!atomic_load(&d->lost))
        return false;
    atomic_fetch_add(&fl_count.lost_returned, 1);
    return true;
}

/* ---- instance hooks ------------------------------------------------------------ */

static void fl_before_create_instance(void)
{
    pthread_once(&g_once, load_config);
}

static void fl_instance_created(tls_instance *base)
{
    fl_instance *inst = (fl_instance *)base;
    PFN_vkGetInstanceProcAddr gipa = base->gipa;
    VkInstance handle = base->handle;
#define GET(name) inst->name = (PFN_vk##name)gipa(handle, "vk" #name)
    GET(GetPhysicalDeviceProperties);
    GET(GetPhysicalDeviceProperties2);
    GET(GetPhysicalDeviceQueueFamilyProperties);
    GET(GetPhysicalDeviceQueueFamilyProperties2);
    GET(EnumerateDeviceExtensionProperties);
#undef GET
    inst->GetPhysicalDeviceProperties2KHR =
        (PFN_vkGetPhysicalDeviceProperties2)gipa(handle, "vkGetPhysicalDeviceProperties2KHR");
    inst->GetPhysicalDeviceQueueFamilyProperties2KHR =
        (PFN_vkGetPhysicalDeviceQueueFamilyProperties2)gipa(
            handle, "vkGetPhysicalDeviceQueueFamilyProperties2KHR");
}

static void fl_instance_destroyed(bool last)
{
    (void)last;
    write_truth();
}

static void patch_limits(VkPhysicalDeviceLimits *limits)
{
    if (fl_cfg.period_ns > 0)
        limits->timestampPeriod = fl_cfg.period_ns;
    /* A misreported period: the ticks stay what they were. */
    if (fl_cfg.period_ppm != 0)
        limits->timestampPeriod = (float)(limits->timestampPeriod * (1 + fl_cfg.period_ppm * 1e-6));
}

static VKAPI_ATTR void VKAPI_CALL fl_GetPhysicalDeviceProperties(VkPhysicalDevice pd,
                                                                 VkPhysicalDeviceProperties *props)
{
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return;
    inst->GetPhysicalDeviceProperties(pd, props);
    patch_limits(&props->limits);
}

static VKAPI_ATTR void VKAPI_CALL
fl_GetPhysicalDeviceProperties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *props)
{
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return;
    inst->GetPhysicalDeviceProperties2(pd, props);
    patch_limits(&props->properties.limits);
}

static VKAPI_ATTR void VKAPI_CALL
fl_GetPhysicalDeviceProperties2KHR(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *props)
{
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return;
    inst->GetPhysicalDeviceProperties2KHR(pd, props);
    patch_limits(&props->properties.limits);
}

static void patch_family(VkQueueFamilyProperties *f)
{
    if (fl_cfg.valid_bits && f->timestampValidBits)
        f->timestampValidBits = fl_cfg.valid_bits;
    /* Fewer bits shown than the values use. */
    if (fl_cfg.report_bits && f->timestampValidBits)
        f->timestampValidBits = fl_cfg.report_bits;
}

static VKAPI_ATTR void VKAPI_CALL fl_GetPhysicalDeviceQueueFamilyProperties(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties *props)
{
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return;
    inst->GetPhysicalDeviceQueueFamilyProperties(pd, count, props);
    for (uint32_t i = 0; props && i < *count; i++)
        patch_family(&props[i]);
}

static VKAPI_ATTR void VKAPI_CALL fl_GetPhysicalDeviceQueueFamilyProperties2(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties2 *props)
{
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return;
    inst->GetPhysicalDeviceQueueFamilyProperties2(pd, count, props);
    for (uint32_t i = 0; props && i < *count; i++)
        patch_family(&props[i].queueFamilyProperties);
}

static VKAPI_ATTR void VKAPI_CALL fl_GetPhysicalDeviceQueueFamilyProperties2KHR(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties2 *props)
{
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return;
    inst->GetPhysicalDeviceQueueFamilyProperties2KHR(pd, count, props);
    for (uint32_t i = 0; props && i < *count; i++)
        patch_family(&props[i].queueFamilyProperties);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_EnumerateDeviceExtensionProperties(
    VkPhysicalDevice pd, const char *layer, uint32_t *count, VkExtensionProperties *props)
{
    if (layer && strcmp(layer, FL_LAYER_NAME) == 0) {
        *count = 0; /* this layer offers no extensions */
        return VK_SUCCESS;
    }
    fl_instance *inst = instance_of(pd);
    if (!inst)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (layer || !fl_cfg.hide_calibration)
        return inst->EnumerateDeviceExtensionProperties(pd, layer, count, props);

    uint32_t n = 0;
    VkResult r = inst->EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    if (r != VK_SUCCESS)
        return r;
    VkExtensionProperties *all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    r = inst->EnumerateDeviceExtensionProperties(pd, NULL, &n, all);
    if (r < 0) {
        free(all);
        return r;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!is_calibration_extension(all[i].extensionName))
            all[kept++] = all[i];
    }
    if (!props) {
        *count = kept;
        free(all);
        return VK_SUCCESS;
    }
    uint32_t copy = *count < kept ? *count : kept;
    memcpy(props, all, copy * sizeof *props);
    *count = copy;
    free(all);
    return copy < kept ? VK_INCOMPLETE : VK_SUCCESS;
}

/* ---- device life ------------------------------------------------------------- */

static void fl_device_created(tls_device *base)
{
    fl_device *d = (fl_device *)base;
    PFN_vkGetDeviceProcAddr gdpa = base->gdpa;
    VkDevice h = base->handle;
#define GET(name) d->name = (PFN_vk##name)gdpa(h, "vk" #name)
    GET(BindBufferMemory);
    GET(MapMemory);
    GET(CmdCopyQueryPoolResults);
    GET(InvalidateMappedMemoryRanges);
    GET(CreateQueryPool);
    GET(DestroyQueryPool);
    GET(GetQueryPoolResults);
    GET(GetCalibratedTimestampsEXT);
    GET(QueueSubmit);
    GET(QueueSubmit2);
    GET(WaitForFences);
    GET(GetFenceStatus);
    GET(QueueWaitIdle);
    GET(DeviceWaitIdle);
    GET(BeginCommandBuffer);
    GET(ResetCommandBuffer);
    GET(CmdWriteTimestamp);
    GET(CmdWriteTimestamp2);
    GET(CmdResetQueryPool);
    GET(CmdPipelineBarrier);
    GET(CmdPipelineBarrier2);
    GET(CmdExecuteCommands);
    GET(ResetQueryPool);
    GET(CreateCommandPool);
    GET(AllocateCommandBuffers);
#undef GET
    d->CmdWriteTimestamp2KHR = (PFN_vkCmdWriteTimestamp2)gdpa(h, "vkCmdWriteTimestamp2KHR");
    d->CmdPipelineBarrier2KHR = (PFN_vkCmdPipelineBarrier2)gdpa(h, "vkCmdPipelineBarrier2KHR");
    d->ResetQueryPoolEXT = (PFN_vkResetQueryPool)gdpa(h, "vkResetQueryPoolEXT");
    d->reuse = rc_create(h, gdpa);
    d->GetCalibratedTimestampsKHR =
        (PFN_vkGetCalibratedTimestampsEXT)gdpa(h, "vkGetCalibratedTimestampsKHR");
    d->QueueSubmit2KHR = (PFN_vkQueueSubmit2)gdpa(h, "vkQueueSubmit2KHR");
    pthread_rwlock_init(&d->submit_lock, NULL);
    pthread_mutex_init(&d->pool_lock, NULL);
    pthread_mutex_init(&d->copy_lock, NULL);
    pthread_mutex_init(&d->family_lock, NULL);
    atomic_init(&d->lost, false);
}

static void fl_device_destroy_before(tls_device *base)
{
    fl_device *d = (fl_device *)base;
    rc_destroy(d->reuse); /* its fences go before the device */
}

static void fl_device_destroy_after(tls_device *base)
{
    fl_device *d = (fl_device *)base;
    pthread_rwlock_destroy(&d->submit_lock);
    pthread_mutex_destroy(&d->pool_lock);
    free(d->timestamp_pools);
    fl_memory_release(d);
    pthread_mutex_destroy(&d->copy_lock);
    fl_family_release(d);
    pthread_mutex_destroy(&d->family_lock);
    write_truth();
}

/* ---- device hooks ------------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL fl_CreateQueryPool(VkDevice device,
                                                         const VkQueryPoolCreateInfo *info,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkQueryPool *pool)
{
    fl_device *d = fl_device_of(device);
    VkResult r = d->CreateQueryPool(device, info, alloc, pool);
    if (r == VK_SUCCESS && info->queryType == VK_QUERY_TYPE_TIMESTAMP) {
        pool_add(d, *pool);
        rc_pool_created(d->reuse, *pool, info->queryCount);
    }
    return r;
}

static VKAPI_ATTR void VKAPI_CALL fl_DestroyQueryPool(VkDevice device, VkQueryPool pool,
                                                      const VkAllocationCallbacks *alloc)
{
    fl_device *d = fl_device_of(device);
    if (pool) {
        pool_remove(d, pool);
        rc_pool_destroyed(d->reuse, pool);
    }
    d->DestroyQueryPool(device, pool, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetQueryPoolResults(VkDevice device, VkQueryPool pool,
                                                             uint32_t first, uint32_t count,
                                                             size_t size, void *data,
                                                             VkDeviceSize stride,
                                                             VkQueryResultFlags flags)
{
    fl_device *d = fl_device_of(device);
    if (lost_now(d, &fl_count.results, fl_cfg.lost_after_results))
        return VK_ERROR_DEVICE_LOST;
    if (!fm_rewrites_results(&fl_cfg) || !fl_pool_is_timestamp(d, pool))
        return d->GetQueryPoolResults(device, pool, first, count, size, data, stride, flags);
    if (fl_cfg.wait_hang && (flags & VK_QUERY_RESULT_WAIT_BIT)) {
        /* A WAIT read that never returns (gapid #3661); the caller must
         * give up on the thread. */
        fprintf(stderr, "clockfault: a WAIT read of a timestamp query hangs (injected)\n");
        for (;;)
            sleep(3600);
    }

    /* Read everything as 64-bit with availability into our own buffer, so
    * 32-bit results are transformed from the full value and unavailable
    * queries are left untouched as the spec requires. */
    uint64_t stack[2 * FL_STACK_QUERIES];
    uint64_t *tmp = count <= FL_STACK_QUERIES ? stack : malloc((size_t)count * 16);
    if (!tmp)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    const VkQueryResultFlags down =
        (flags & (VK_QUERY_RESULT_WAIT_BIT | VK_QUERY_RESULT_PARTIAL_BIT)) |
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT;
    VkResult r =
        d->GetQueryPoolResults(device, pool, first, count, (size_t)count * 16, tmp, 16, down);
    if (r != VK_SUCCESS && r != VK_NOT_READY)
        goto out;
    const bool wide = flags & VK_QUERY_RESULT_64_BIT;
    const bool with_avail = flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT;
    bool all = true;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *dst = (uint8_t *)data + (size_t)i * stride;
        uint64_t value = tmp[2 * i], avail = tmp[2 * i + 1];
        if (!avail && fl_cfg.early_available && !(flags & VK_QUERY_RESULT_WAIT_BIT)) {
            /* Available before it was written: a value of 0. */
            avail = 1;
            value = 0;
            atomic_fetch_add(&fl_count.early_available, 1);
        } else if (avail) {
            if (fl_cfg.transforms)
                value = fm_forward(&fl_cfg, value);
            if (fl_cfg.family_offset_ns &&
                fl_family_of_query(d, pool, first + i) == fl_cfg.family) {
                value = fm_offset_ticks(&fl_cfg, value, fl_cfg.family_offset_ns);
                atomic_fetch_add(&fl_count.family_offsets, 1);
            }
            atomic_fetch_add(&fl_count.query_values, 1);
        }
        all = all && avail;
        bool write_value = avail || (flags & VK_QUERY_RESULT_PARTIAL_BIT);
        if (wide) {
            if (write_value)
                memcpy(dst, &value, 8);
            if (with_avail)
                memcpy(dst + 8, &avail, 8);
        } else {
            uint32_t v32 = (uint32_t)value, a32 = (uint32_t)(avail != 0);
            if (write_value)
                memcpy(dst, &v32, 4);
            if (with_avail)
                memcpy(dst + 4, &a32, 4);
        }
    }
    if (r == VK_NOT_READY && all)
        r = VK_SUCCESS;
out:
    if (tmp != stack)
        free(tmp);
    return r;
}

static VkResult calibrated(fl_device *d, PFN_vkGetCalibratedTimestampsEXT next, uint32_t count,
                           const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
                           uint64_t *max_deviation)
{
    uint64_t call = atomic_fetch_add(&fl_count.calibrations, 1);
    if (call < fl_cfg.calib_fail_first ||
        (fl_cfg.calib_fail_prob > 0 && rng_unit() < fl_cfg.calib_fail_prob)) {
        atomic_fetch_add(&fl_count.calibration_failures, 1);
        return (VkResult)fl_cfg.calib_result;
    }
    VkResult r = next(d->base.handle, count, infos, ts, max_deviation);
    if (r != VK_SUCCESS)
        return r;
    /* The device sample taken up to maxDeviation after the host ones: what
    * the reported deviation allows. */
    uint64_t noise = 0;
    if (fl_cfg.deviation_ns) {
        noise = rng_next() % (fl_cfg.deviation_ns + 1);
        atomic_fetch_add(&fl_count.noisy_readings, 1);
        if (*max_deviation < fl_cfg.deviation_ns)
            *max_deviation = fl_cfg.deviation_ns;
    }
    if (fl_cfg.deviation_reported_ns >= 0) /* understated (or overstated) */
        *max_deviation = (uint64_t)fl_cfg.deviation_reported_ns;
    for (uint32_t i = 0; i < count; i++) {
        if (infos[i].timeDomain == VK_TIME_DOMAIN_DEVICE_EXT) {
            ts[i] = fm_forward(&fl_cfg, ts[i] + noise);
            /* Another counter than the queries' (AMD GFX11.5: 11.85 s). */
            if (fl_cfg.calib_offset_ns)
                ts[i] = fm_offset_ticks(&fl_cfg, ts[i], fl_cfg.calib_offset_ns);
        } else if (fl_cfg.host_offset_ns) {
            ts[i] += (uint64_t)fl_cfg.host_offset_ns;
        }
    }
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetCalibratedTimestampsEXT(
    VkDevice device, uint32_t count, const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
    uint64_t *max_deviation)
{
    fl_device *d = fl_device_of(device);
    return calibrated(d, d->GetCalibratedTimestampsEXT, count, infos, ts, max_deviation);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetCalibratedTimestampsKHR(
    VkDevice device, uint32_t count, const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
    uint64_t *max_deviation)
{
    fl_device *d = fl_device_of(device);
    return calibrated(d, d->GetCalibratedTimestampsKHR, count, infos, ts, max_deviation);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueSubmit(VkQueue queue, uint32_t n,
                                                     const VkSubmitInfo *submits, VkFence fence)
{
    fl_device *d = fl_device_of(queue);
    if (lost_now(d, &fl_count.submits, fl_cfg.lost_after_submits))
        return VK_ERROR_DEVICE_LOST;
    fm_reset_if_due(&fl_cfg, atomic_load(&fl_count.submits), monotonic_ns());
    /* Late copies land before anything submitted after them runs. */
    fl_copies_submit(d, n, submits, NULL);
    pthread_rwlock_rdlock(&d->submit_lock);
    VkResult r = already_lost(d) ? VK_ERROR_DEVICE_LOST : d->QueueSubmit(queue, n, submits, fence);
    if (r == VK_SUCCESS)
        fl_reuse_submitted(d, queue, n, submits, NULL, fence);
    pthread_rwlock_unlock(&d->submit_lock);
    return r;
}

static VkResult submit2(fl_device *d, PFN_vkQueueSubmit2 next, VkQueue queue, uint32_t n,
                        const VkSubmitInfo2 *submits, VkFence fence)
{
    if (lost_now(d, &fl_count.submits, fl_cfg.lost_after_submits))
        return VK_ERROR_DEVICE_LOST;
    fm_reset_if_due(&fl_cfg, atomic_load(&fl_count.submits), monotonic_ns());
    /* Late copies land before anything submitted after them runs. */
    fl_copies_submit(d, n, NULL, submits);
    pthread_rwlock_rdlock(&d->submit_lock);
    VkResult r = already_lost(d) ? VK_ERROR_DEVICE_LOST : next(queue, n, submits, fence);
    if (r == VK_SUCCESS)
        fl_reuse_submitted(d, queue, n, NULL, submits, fence);
    pthread_rwlock_unlock(&d->submit_lock);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueSubmit2(VkQueue queue, uint32_t n,
                                                      const VkSubmitInfo2 *submits, VkFence fence)
{
    fl_device *d = fl_device_of(queue);
    return submit2(d, d->QueueSubmit2, queue, n, submits, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueSubmit2KHR(VkQueue queue, uint32_t n,
                                                         const VkSubmitInfo2 *submits,
                                                         VkFence fence)
{
    fl_device *d = fl_device_of(queue);
    return submit2(d, d->QueueSubmit2KHR, queue, n, submits, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_WaitForFences(VkDevice device, uint32_t n,
                                                       const VkFence *fences, VkBool32 all,
                                                       uint64_t timeout)
{
    fl_device *d = fl_device_of(device);
    if (lost_now(d, &fl_count.waits, fl_cfg.lost_after_waits))
        return VK_ERROR_DEVICE_LOST;
    VkResult r = d->WaitForFences(device, n, fences, all, timeout);
    /* Which of several fences signalled is unknown unless all had to. */
    if (r == VK_SUCCESS && (all || n == 1))
        rc_fences_signalled(d->reuse, n, fences);
    if (r == VK_SUCCESS)
        fl_copies_land(d);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetFenceStatus(VkDevice device, VkFence fence)
{
    fl_device *d = fl_device_of(device);
    if (already_lost(d))
        return VK_ERROR_DEVICE_LOST;
    VkResult r = d->GetFenceStatus(device, fence);
    if (r == VK_SUCCESS) {
        rc_fences_signalled(d->reuse, 1, &fence);
        fl_copies_land(d);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueWaitIdle(VkQueue queue)
{
    fl_device *d = fl_device_of(queue);
    if (already_lost(d))
        return VK_ERROR_DEVICE_LOST;
    VkResult r = d->QueueWaitIdle(queue);
    if (r == VK_SUCCESS)
        fl_copies_land(d);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_DeviceWaitIdle(VkDevice device)
{
    fl_device *d = fl_device_of(device);
    if (already_lost(d))
        return VK_ERROR_DEVICE_LOST;
    VkResult r = d->DeviceWaitIdle(device);
    if (r == VK_SUCCESS)
        fl_copies_land(d);
    return r;
}

/* ---- lookup -------------------------------------------------------------------- */

#define HOOK(name) TLS_HOOK(fl_, name)

static const tls_hook instance_hooks[] = {
    HOOK(GetPhysicalDeviceProperties),
    HOOK(GetPhysicalDeviceProperties2),
    HOOK(GetPhysicalDeviceProperties2KHR),
    HOOK(GetPhysicalDeviceQueueFamilyProperties),
    HOOK(GetPhysicalDeviceQueueFamilyProperties2),
    HOOK(GetPhysicalDeviceQueueFamilyProperties2KHR),
    HOOK(EnumerateDeviceExtensionProperties),
};

static const tls_hook device_hooks[] = {
    HOOK(BindBufferMemory),
    HOOK(MapMemory),
    HOOK(CmdCopyQueryPoolResults),
    HOOK(InvalidateMappedMemoryRanges),
    HOOK(CreateQueryPool),
    HOOK(DestroyQueryPool),
    HOOK(GetQueryPoolResults),
    HOOK(GetCalibratedTimestampsEXT),
    HOOK(GetCalibratedTimestampsKHR),
    HOOK(QueueSubmit),
    HOOK(QueueSubmit2),
    HOOK(QueueSubmit2KHR),
    HOOK(WaitForFences),
    HOOK(GetFenceStatus),
    HOOK(QueueWaitIdle),
    HOOK(DeviceWaitIdle),
    HOOK(BeginCommandBuffer),
    HOOK(ResetCommandBuffer),
    HOOK(CmdWriteTimestamp),
    HOOK(CmdWriteTimestamp2),
    HOOK(CmdWriteTimestamp2KHR),
    HOOK(CmdResetQueryPool),
    HOOK(CmdPipelineBarrier),
    HOOK(CmdPipelineBarrier2),
    HOOK(CmdPipelineBarrier2KHR),
    HOOK(CmdExecuteCommands),
    HOOK(ResetQueryPool),
    HOOK(ResetQueryPoolEXT),
    HOOK(CreateCommandPool),
    HOOK(AllocateCommandBuffers),
};

#undef HOOK

static bool fl_hidden(const char *name)
{
    return fl_cfg.hide_calibration && is_calibration_name(name);
}

const tls_layer tls_the_layer = {
    .instance_hooks = instance_hooks,
    .n_instance_hooks = TLS_COUNT(instance_hooks),
    .device_hooks = device_hooks,
    .n_device_hooks = TLS_COUNT(device_hooks),
    .instance_size = sizeof(fl_instance),
    .device_size = sizeof(fl_device),
    .before_create_instance = fl_before_create_instance,
    .instance_created = fl_instance_created,
    .device_created = fl_device_created,
    .instance_destroyed = fl_instance_destroyed,
    .device_destroy_before = fl_device_destroy_before,
    .device_destroy_after = fl_device_destroy_after,
    .hidden = fl_hidden,
};

VK_LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    return tls_negotiate(v);
}
