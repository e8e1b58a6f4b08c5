/* fault_layer.c — VK_LAYER_GPUTRACE_clockfault, a test-only Vulkan layer
 * that sits between VK_LAYER_GPUTRACE_timeline and the driver and lies
 * about the device clock (fault_model.h), about calibration, and about the
 * device being alive.
 *
 * What it changes, and through which entry points:
 *  - timestamps: vkGetQueryPoolResults on TIMESTAMP pools (pools are
 *    recorded at vkCreateQueryPool), the DEVICE domain of
 *    vkGetCalibratedTimestamps{EXT,KHR}, and values that
 *    vkCmdCopyQueryPoolResults wrote into mapped memory: the GPU's writes
 *    cannot be altered, but the timing layer invalidates the mapped range
 *    before every read of them (GPUTRACE_QUERY_READBACK=copy), so they are
 *    rewritten in place there, once per value (see copy_* below);
 *  - VkPhysicalDeviceLimits::timestampPeriod (Properties, 2, 2KHR) and
 *    VkQueueFamilyProperties::timestampValidBits (all three variants);
 *  - calibration: failures, noise with a matching maxDeviation, or the
 *    extension hidden (filtered from vkEnumerateDeviceExtensionProperties,
 *    and the time-domain / calibration functions not handed out);
 *  - device loss: VK_ERROR_DEVICE_LOST from submits, query results and
 *    fence waits after a number of calls, sticky afterwards. Before the
 *    first lost result the real device is drained, so whatever the
 *    application frees after seeing it is really idle (lavapipe keeps
 *    running; only the answers are faked).
 *
 * Assumes a driver with timestampPeriod 1 and 64 valid bits (lavapipe).
 * Loader plumbing follows docs/LoaderLayerInterface.md (interface 2); state
 * is keyed on the dispatch key, never on wrapped handles.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/faultlayer/fault_model.h"
#include "tests/faultlayer/reuse_check.h"
#include "tests/common/test_layer_objects.h"

#define FL_LAYER_NAME    "VK_LAYER_GPUTRACE_clockfault"
#define FL_STACK_QUERIES 64

/* ---- configuration, counters, randomness ----------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static fm_config g_cfg;
static const char *g_truth_path;

static struct {
    atomic_uint_fast64_t query_values, calibrations, calibration_failures, noisy_readings;
    atomic_uint_fast64_t submits, results, waits, lost_returned;
    atomic_bool lost;
} g_count;

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
        .query_values = atomic_load(&g_count.query_values),
        .calibrations = atomic_load(&g_count.calibrations),
        .calibration_failures = atomic_load(&g_count.calibration_failures),
        .noisy_readings = atomic_load(&g_count.noisy_readings),
        .submits = atomic_load(&g_count.submits),
        .results = atomic_load(&g_count.results),
        .waits = atomic_load(&g_count.waits),
        .lost_returned = atomic_load(&g_count.lost_returned),
        .lost = atomic_load(&g_count.lost),
    };
    pthread_mutex_lock(&g_lock);
    if (!fm_truth_write(g_truth_path, &g_cfg, &n))
        fprintf(stderr, "clockfault: cannot write %s\n", g_truth_path);
    pthread_mutex_unlock(&g_lock);
}

static void load_config(void)
{
    fm_config_from_env(&g_cfg, monotonic_ns());
    g_rng = g_cfg.seed ? g_cfg.seed : 1;
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
    void *key;
    VkInstance handle;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkDestroyInstance DestroyInstance;
    PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;
    PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2KHR;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties2 GetPhysicalDeviceQueueFamilyProperties2;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties2 GetPhysicalDeviceQueueFamilyProperties2KHR;
    PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
};

typedef struct fl_device fl_device;
struct fl_device {
    void *key;
    VkDevice handle;
    PFN_vkGetDeviceProcAddr gdpa;
    PFN_vkDestroyDevice DestroyDevice;
    PFN_vkCreateQueryPool CreateQueryPool;
    PFN_vkDestroyQueryPool DestroyQueryPool;
    PFN_vkGetQueryPoolResults GetQueryPoolResults;
    PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestampsEXT;
    PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestampsKHR;
    PFN_vkQueueSubmit QueueSubmit;
    PFN_vkQueueSubmit2 QueueSubmit2;
    PFN_vkQueueSubmit2 QueueSubmit2KHR;
    PFN_vkWaitForFences WaitForFences;
    PFN_vkGetFenceStatus GetFenceStatus;
    PFN_vkQueueWaitIdle QueueWaitIdle;
    PFN_vkDeviceWaitIdle DeviceWaitIdle;

    /* Submits hold it shared; declaring the device lost holds it
    * exclusively while draining the real device. */
    pthread_rwlock_t submit_lock;
    atomic_bool lost;

    pthread_mutex_t pool_lock;
    VkQueryPool *timestamp_pools;
    size_t npools, cap;

    /* Query copies into mapped memory (under copy_lock). */
    PFN_vkBindBufferMemory BindBufferMemory;
    PFN_vkMapMemory MapMemory;
    PFN_vkCmdCopyQueryPoolResults CmdCopyQueryPoolResults;
    PFN_vkInvalidateMappedMemoryRanges InvalidateMappedMemoryRanges;
    pthread_mutex_t copy_lock;
    struct fl_binding {
        VkBuffer buffer;
        VkDeviceMemory memory;
        VkDeviceSize offset;
    } * bindings;
    size_t nbindings, bindings_cap;
    struct fl_mapping {
        VkDeviceMemory memory;
        VkDeviceSize offset;
        uint8_t *ptr;
    } * mappings;
    size_t nmappings, mappings_cap;
    /* A destination of timestamp copies: `count` records of (value,
    * availability) at `offset` in `memory`; `out` holds what this layer
    * last wrote into each value, so a value is rewritten exactly once per
    * copy (a new copy writes a raw value, which differs from it). */
    struct fl_copy {
        VkDeviceMemory memory;
        VkDeviceSize offset;
        uint32_t count;
        uint64_t *out;
    } * copies;
    size_t ncopies, copies_cap;

    /* GPUTRACE_FAULT_CHECK_QUERY_REUSE (reuse_check.h); NULL when off. */
    rc_state *reuse;
    PFN_vkBeginCommandBuffer BeginCommandBuffer;
    PFN_vkResetCommandBuffer ResetCommandBuffer;
    PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
    PFN_vkCmdWriteTimestamp2 CmdWriteTimestamp2;
    PFN_vkCmdWriteTimestamp2 CmdWriteTimestamp2KHR;
    PFN_vkCmdResetQueryPool CmdResetQueryPool;
    PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
    PFN_vkCmdPipelineBarrier2 CmdPipelineBarrier2;
    PFN_vkCmdPipelineBarrier2 CmdPipelineBarrier2KHR;
    PFN_vkCmdExecuteCommands CmdExecuteCommands;
    PFN_vkResetQueryPool ResetQueryPool;
    PFN_vkResetQueryPool ResetQueryPoolEXT;
};

static tlo_table g_instances = TLO_TABLE_INIT;
static tlo_table g_devices = TLO_TABLE_INIT;

static fl_instance *instance_of(const void *dispatchable)
{
    return tlo_find(&g_instances, dispatchable);
}

static fl_device *device_of(const void *dispatchable)
{
    return tlo_find(&g_devices, dispatchable);
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

static bool pool_is_timestamp(fl_device *d, VkQueryPool pool)
{
    bool found = false;
    pthread_mutex_lock(&d->pool_lock);
    for (size_t i = 0; i < d->npools && !found; i++)
        found = d->timestamp_pools[i] == pool;
    pthread_mutex_unlock(&d->pool_lock);
    return found;
}

/* ---- copies into mapped memory --------------------------------------------- */

/* Room for one more element in a malloc'd array; false when out of memory. */
static bool grow(void **array, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t want = *cap ? 2 * *cap : 16;
    void *p = realloc(*array, want * size);
    if (!p)
        return false;
    *array = p;
    *cap = want;
    return true;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_BindBufferMemory(VkDevice device, VkBuffer buffer,
                                                          VkDeviceMemory memory,
                                                          VkDeviceSize offset)
{
    fl_device *d = device_of(device);
    VkResult r = d->BindBufferMemory(device, buffer, memory, offset);
    if (r == VK_SUCCESS) {
        pthread_mutex_lock(&d->copy_lock);
        if (grow((void **)&d->bindings, &d->bindings_cap, d->nbindings, sizeof *d->bindings))
            d->bindings[d->nbindings++] = (struct fl_binding){ buffer, memory, offset };
        pthread_mutex_unlock(&d->copy_lock);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_MapMemory(VkDevice device, VkDeviceMemory memory,
                                                   VkDeviceSize offset, VkDeviceSize size,
                                                   VkMemoryMapFlags flags, void **data)
{
    fl_device *d = device_of(device);
    VkResult r = d->MapMemory(device, memory, offset, size, flags, data);
    if (r == VK_SUCCESS) {
        pthread_mutex_lock(&d->copy_lock);
        if (grow((void **)&d->mappings, &d->mappings_cap, d->nmappings, sizeof *d->mappings))
            d->mappings[d->nmappings++] = (struct fl_mapping){ memory, offset, *data };
        pthread_mutex_unlock(&d->copy_lock);
    }
    return r;
}

/* Remembers where timestamps are copied to (64-bit values with
 * availability, the only form the timing layer records). */
static VKAPI_ATTR void VKAPI_CALL fl_CmdCopyQueryPoolResults(VkCommandBuffer cb, VkQueryPool pool,
                                                             uint32_t first, uint32_t count,
                                                             VkBuffer buffer, VkDeviceSize offset,
                                                             VkDeviceSize stride,
                                                             VkQueryResultFlags flags)
{
    fl_device *d = device_of(cb);
    const VkQueryResultFlags need = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT;
    if (g_cfg.transforms && (flags & need) == need && stride == 16 && pool_is_timestamp(d, pool)) {
        pthread_mutex_lock(&d->copy_lock);
        const struct fl_binding *b = NULL;
        for (size_t i = 0; i < d->nbindings && !b; i++)
            b = d->bindings[i].buffer == buffer ? &d->bindings[i] : NULL;
        if (b) {
            const VkDeviceSize at = b->offset + offset;
            struct fl_copy *c = NULL;
            for (size_t i = 0; i < d->ncopies && !c; i++)
                c = d->copies[i].memory == b->memory && d->copies[i].offset == at ? &d->copies[i]
                                                                                  : NULL;
            if (!c && grow((void **)&d->copies, &d->copies_cap, d->ncopies, sizeof *d->copies)) {
                c = &d->copies[d->ncopies++];
                *c = (struct fl_copy){ .memory = b->memory, .offset = at };
            }
            if (c && count > c->count) {
                uint64_t *out = realloc(c->out, (size_t)count * sizeof *out);
                if (out) {
                    memset(out + c->count, 0, (size_t)(count - c->count) * sizeof *out);
                    c->out = out;
                    c->count = count;
                }
            }
        }
        pthread_mutex_unlock(&d->copy_lock);
    }
    if (d->reuse && count && (flags & need) == need) {
        /* Where the last query's availability word lands, if mapped. */
        const uint64_t *avail = NULL;
        pthread_mutex_lock(&d->copy_lock);
        const struct fl_binding *b = NULL;
        for (size_t i = 0; i < d->nbindings && !b; i++)
            b = d->bindings[i].buffer == buffer ? &d->bindings[i] : NULL;
        for (size_t i = 0; b && i < d->nmappings && !avail; i++) {
            const struct fl_mapping *m = &d->mappings[i];
            const VkDeviceSize at = b->offset + offset + (VkDeviceSize)(count - 1) * stride + 8;
            if (m->memory == b->memory && at >= m->offset)
                avail = (const uint64_t *)(const void *)(m->ptr + (at - m->offset));
        }
        pthread_mutex_unlock(&d->copy_lock);
        rc_copy(d->reuse, cb, avail);
    }
    d->CmdCopyQueryPoolResults(cb, pool, first, count, buffer, offset, stride, flags);
}

/* ---- query reuse check (reuse_check.h) ------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL fl_BeginCommandBuffer(VkCommandBuffer cb,
                                                            const VkCommandBufferBeginInfo *info)
{
    fl_device *d = device_of(cb);
    rc_cb_begin(d->reuse, cb);
    return d->BeginCommandBuffer(cb, info);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_ResetCommandBuffer(VkCommandBuffer cb,
                                                            VkCommandBufferResetFlags flags)
{
    fl_device *d = device_of(cb);
    rc_cb_begin(d->reuse, cb);
    return d->ResetCommandBuffer(cb, flags);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp(VkCommandBuffer cb,
                                                       VkPipelineStageFlagBits stage,
                                                       VkQueryPool pool, uint32_t query)
{
    fl_device *d = device_of(cb);
    rc_timestamp(d->reuse, cb, pool, query, stage == VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT);
    d->CmdWriteTimestamp(cb, stage, pool, query);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp2(VkCommandBuffer cb,
                                                        VkPipelineStageFlags2 stage,
                                                        VkQueryPool pool, uint32_t query)
{
    fl_device *d = device_of(cb);
    rc_timestamp(d->reuse, cb, pool, query, stage == VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    d->CmdWriteTimestamp2(cb, stage, pool, query);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp2KHR(VkCommandBuffer cb,
                                                           VkPipelineStageFlags2 stage,
                                                           VkQueryPool pool, uint32_t query)
{
    fl_device *d = device_of(cb);
    rc_timestamp(d->reuse, cb, pool, query, stage == VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    d->CmdWriteTimestamp2KHR(cb, stage, pool, query);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdResetQueryPool(VkCommandBuffer cb, VkQueryPool pool,
                                                       uint32_t first, uint32_t count)
{
    fl_device *d = device_of(cb);
    rc_cmd_reset(d->reuse, cb, pool, first, count);
    d->CmdResetQueryPool(cb, pool, first, count);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier(
    VkCommandBuffer cb, VkPipelineStageFlags src, VkPipelineStageFlags dst, VkDependencyFlags deps,
    uint32_t nmem, const VkMemoryBarrier *mem, uint32_t nbuf, const VkBufferMemoryBarrier *buf,
    uint32_t nimg, const VkImageMemoryBarrier *img)
{
    fl_device *d = device_of(cb);
    rc_barrier(d->reuse, cb);
    d->CmdPipelineBarrier(cb, src, dst, deps, nmem, mem, nbuf, buf, nimg, img);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier2(VkCommandBuffer cb,
                                                         const VkDependencyInfo *dep)
{
    fl_device *d = device_of(cb);
    rc_barrier(d->reuse, cb);
    d->CmdPipelineBarrier2(cb, dep);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier2KHR(VkCommandBuffer cb,
                                                            const VkDependencyInfo *dep)
{
    fl_device *d = device_of(cb);
    rc_barrier(d->reuse, cb);
    d->CmdPipelineBarrier2KHR(cb, dep);
}

static VKAPI_ATTR void VKAPI_CALL fl_CmdExecuteCommands(VkCommandBuffer cb, uint32_t count,
                                                        const VkCommandBuffer *secondaries)
{
    fl_device *d = device_of(cb);
    rc_execute(d->reuse, cb, count, secondaries);
    d->CmdExecuteCommands(cb, count, secondaries);
}

static VKAPI_ATTR void VKAPI_CALL fl_ResetQueryPool(VkDevice device, VkQueryPool pool,
                                                    uint32_t first, uint32_t count)
{
    fl_device *d = device_of(device);
    rc_host_reset(d->reuse, pool, first, count);
    d->ResetQueryPool(device, pool, first, count);
}

static VKAPI_ATTR void VKAPI_CALL fl_ResetQueryPoolEXT(VkDevice device, VkQueryPool pool,
                                                       uint32_t first, uint32_t count)
{
    fl_device *d = device_of(device);
    rc_host_reset(d->reuse, pool, first, count);
    d->ResetQueryPoolEXT(device, pool, first, count);
}

/* The command buffers of every batch, in order, for rc_submitted. */
static void reuse_submitted(fl_device *d, VkQueue queue, uint32_t n, const VkSubmitInfo *submits,
                            const VkSubmitInfo2 *submits2)
{
    if (!d->reuse)
        return;
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += submits ? submits[i].commandBufferCount : submits2[i].commandBufferInfoCount;
    VkCommandBuffer *cbs = malloc((total ? total : 1) * sizeof *cbs);
    if (!cbs) {
        fprintf(stderr, "clockfault: out of memory: a submission is not checked\n");
        return;
    }
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (submits) {
            for (uint32_t j = 0; j < submits[i].commandBufferCount; j++)
                cbs[k++] = submits[i].pCommandBuffers[j];
        } else {
            for (uint32_t j = 0; j < submits2[i].commandBufferInfoCount; j++)
                cbs[k++] = submits2[i].pCommandBufferInfos[j].commandBuffer;
        }
    }
    rc_submitted(d->reuse, queue, (uint32_t)k, cbs);
    free(cbs);
}

/* Rewrites the copied timestamps that landed since the last look. A value
 * is taken once both it and its availability word are non-zero (a driver
 * may write either first). */
static VKAPI_ATTR VkResult VKAPI_CALL
fl_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n, const VkMappedMemoryRange *ranges)
{
    fl_device *d = device_of(device);
    VkResult r = d->InvalidateMappedMemoryRanges(device, n, ranges);
    if (r != VK_SUCCESS || !g_cfg.transforms)
        return r;
    pthread_mutex_lock(&d->copy_lock);
    for (uint32_t k = 0; k < n; k++) {
        const struct fl_mapping *m = NULL;
        for (size_t i = 0; i < d->nmappings && !m; i++)
            m = d->mappings[i].memory == ranges[k].memory ? &d->mappings[i] : NULL;
        if (!m)
            continue;
        for (size_t i = 0; i < d->ncopies; i++) {
            struct fl_copy *c = &d->copies[i];
            if (c->memory != ranges[k].memory || c->offset < m->offset)
                continue;
            uint64_t *rec = (uint64_t *)(m->ptr + (c->offset - m->offset));
            for (uint32_t q = 0; q < c->count; q++) {
                uint64_t avail = __atomic_load_n(&rec[2 * q + 1], __ATOMIC_ACQUIRE);
                uint64_t value = __atomic_load_n(&rec[2 * q], __ATOMIC_ACQUIRE);
                if (!avail || !value || value == c->out[q])
                    continue;
                c->out[q] = fm_forward(&g_cfg, value);
                __atomic_store_n(&rec[2 * q], c->out[q], __ATOMIC_RELEASE);
                atomic_fetch_add(&g_count.query_values, 1);
            }
        }
    }
    pthread_mutex_unlock(&d->copy_lock);
    return r;
}

/* ---- device loss ------------------------------------------------------------- */

static void declare_lost(fl_device *d)
{
    pthread_rwlock_wrlock(&d->submit_lock);
    if (!atomic_load(&d->lost)) {
        /* Nothing new goes down once `lost` is set; wait for what already
       * did, so resources freed after the error are really unused. */
        d->DeviceWaitIdle(d->handle);
        atomic_store(&d->lost, true);
        atomic_store(&g_count.lost, true);
        fprintf(stderr, "clockfault: device %p is now lost (injected)\n", (void *)d->handle);
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
        atomic_fetch_add(&g_count.lost_returned, 1);
        return true;
    }
    return false;
}

static bool already_lost(fl_device *d)
{
    if (!atomic_load(&d->lost))
        return false;
    atomic_fetch_add(&g_count.lost_returned, 1);
    return true;
}

/* ---- instance hooks ------------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL fl_CreateInstance(const VkInstanceCreateInfo *info,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkInstance *out)
{
    VkLayerInstanceLink *link = tlo_take_instance_link(info);
    if (!link)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->pfnNextGetInstanceProcAddr;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (!create)
        return VK_ERROR_INITIALIZATION_FAILED;

    pthread_once(&g_once, load_config);
    VkResult r = create(info, alloc, out);
    if (r != VK_SUCCESS)
        return r;

    fl_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        goto fail_destroy;
    inst->key = tlo_dispatch_key(*out);
    inst->handle = *out;
    inst->gipa = gipa;
#define GET(name) inst->name = (PFN_vk##name)gipa(*out, "vk" #name)
    GET(DestroyInstance);
    GET(GetPhysicalDeviceProperties);
    GET(GetPhysicalDeviceProperties2);
    GET(GetPhysicalDeviceQueueFamilyProperties);
    GET(GetPhysicalDeviceQueueFamilyProperties2);
    GET(EnumerateDeviceExtensionProperties);
#undef GET
    inst->GetPhysicalDeviceProperties2KHR =
        (PFN_vkGetPhysicalDeviceProperties2)gipa(*out, "vkGetPhysicalDeviceProperties2KHR");
    inst->GetPhysicalDeviceQueueFamilyProperties2KHR =
        (PFN_vkGetPhysicalDeviceQueueFamilyProperties2)gipa(
            *out, "vkGetPhysicalDeviceQueueFamilyProperties2KHR");
    if (!tlo_publish(&g_instances, inst))
        goto fail_free;
    return VK_SUCCESS;

fail_free:
    free(inst);
fail_destroy:;
    PFN_vkDestroyInstance destroy = (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance");
    if (destroy)
        destroy(*out, alloc);
    *out = VK_NULL_HANDLE;
    return VK_ERROR_OUT_OF_HOST_MEMORY;
}

static VKAPI_ATTR void VKAPI_CALL fl_DestroyInstance(VkInstance instance,
                                                     const VkAllocationCallbacks *alloc)
{
    fl_instance *inst = instance_of(instance);
    if (!inst)
        return;
    tlo_unpublish(&g_instances, inst);
    inst->DestroyInstance(instance, alloc);
    free(inst);
    write_truth();
}

static void patch_limits(VkPhysicalDeviceLimits *limits)
{
    if (g_cfg.period_ns > 0)
        limits->timestampPeriod = g_cfg.period_ns;
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
    if (g_cfg.valid_bits && f->timestampValidBits)
        f->timestampValidBits = g_cfg.valid_bits;
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
    if (layer || !g_cfg.hide_calibration)
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

/* ---- device creation --------------------------------------------------------- */

static PFN_vkVoidFunction fl_device_hook(const char *name);

static VKAPI_ATTR VkResult VKAPI_CALL fl_CreateDevice(VkPhysicalDevice pd,
                                                      const VkDeviceCreateInfo *info,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkDevice *out)
{
    fl_instance *inst = instance_of(pd);
    VkLayerDeviceLink *link = inst ? tlo_take_device_link(info) : NULL;
    if (!link)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = link->pfnNextGetDeviceProcAddr;
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(inst->handle, "vkCreateDevice");
    if (!create)
        return VK_ERROR_INITIALIZATION_FAILED;
    VkResult r = create(pd, info, alloc, out);
    if (r != VK_SUCCESS)
        return r;

    fl_device *d = calloc(1, sizeof *d);
    if (!d)
        goto fail_destroy;
    d->key = tlo_dispatch_key(*out);
    d->handle = *out;
    d->gdpa = gdpa;
#define GET(name) d->name = (PFN_vk##name)gdpa(*out, "vk" #name)
    GET(BindBufferMemory);
    GET(MapMemory);
    GET(CmdCopyQueryPoolResults);
    GET(InvalidateMappedMemoryRanges);
    GET(DestroyDevice);
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
#undef GET
    d->CmdWriteTimestamp2KHR = (PFN_vkCmdWriteTimestamp2)gdpa(*out, "vkCmdWriteTimestamp2KHR");
    d->CmdPipelineBarrier2KHR = (PFN_vkCmdPipelineBarrier2)gdpa(*out, "vkCmdPipelineBarrier2KHR");
    d->ResetQueryPoolEXT = (PFN_vkResetQueryPool)gdpa(*out, "vkResetQueryPoolEXT");
    d->reuse = rc_create(*out, gdpa);
    d->GetCalibratedTimestampsKHR =
        (PFN_vkGetCalibratedTimestampsEXT)gdpa(*out, "vkGetCalibratedTimestampsKHR");
    d->QueueSubmit2KHR = (PFN_vkQueueSubmit2)gdpa(*out, "vkQueueSubmit2KHR");
    pthread_rwlock_init(&d->submit_lock, NULL);
    pthread_mutex_init(&d->pool_lock, NULL);
    pthread_mutex_init(&d->copy_lock, NULL);
    atomic_init(&d->lost, false);
    if (!tlo_publish(&g_devices, d))
        goto fail_free;
    return VK_SUCCESS;

fail_free:
    rc_destroy(d->reuse);
    pthread_rwlock_destroy(&d->submit_lock);
    pthread_mutex_destroy(&d->pool_lock);
    free(d);
fail_destroy:;
    PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)gdpa(*out, "vkDestroyDevice");
    if (destroy)
        destroy(*out, alloc);
    *out = VK_NULL_HANDLE;
    return VK_ERROR_OUT_OF_HOST_MEMORY;
}

static VKAPI_ATTR void VKAPI_CALL fl_DestroyDevice(VkDevice device,
                                                   const VkAllocationCallbacks *alloc)
{
    if (!device)
        return;
    fl_device *d = device_of(device);
    if (!d)
        return;
    tlo_unpublish(&g_devices, d);
    rc_destroy(d->reuse); /* its fences go before the device */
    d->DestroyDevice(device, alloc);
    pthread_rwlock_destroy(&d->submit_lock);
    pthread_mutex_destroy(&d->pool_lock);
    free(d->timestamp_pools);
    for (size_t i = 0; i < d->ncopies; i++)
        free(d->copies[i].out);
    free(d->copies);
    free(d->bindings);
    free(d->mappings);
    pthread_mutex_destroy(&d->copy_lock);
    free(d);
    write_truth();
}

/* ---- device hooks ------------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL fl_CreateQueryPool(VkDevice device,
                                                         const VkQueryPoolCreateInfo *info,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkQueryPool *pool)
{
    fl_device *d = device_of(device);
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
    fl_device *d = device_of(device);
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
    fl_device *d = device_of(device);
    if (lost_now(d, &g_count.results, g_cfg.lost_after_results))
        return VK_ERROR_DEVICE_LOST;
    if (!g_cfg.transforms || !pool_is_timestamp(d, pool))
        return d->GetQueryPoolResults(device, pool, first, count, size, data, stride, flags);

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
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *dst = (uint8_t *)data + (size_t)i * stride;
        uint64_t value = tmp[2 * i], avail = tmp[2 * i + 1];
        bool write_value = avail || (flags & VK_QUERY_RESULT_PARTIAL_BIT);
        if (avail) {
            value = fm_forward(&g_cfg, value);
            atomic_fetch_add(&g_count.query_values, 1);
        }
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
out:
    if (tmp != stack)
        free(tmp);
    return r;
}

static VkResult calibrated(fl_device *d, PFN_vkGetCalibratedTimestampsEXT next, uint32_t count,
                           const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
                           uint64_t *max_deviation)
{
    uint64_t call = atomic_fetch_add(&g_count.calibrations, 1);
    if (call < g_cfg.calib_fail_first ||
        (g_cfg.calib_fail_prob > 0 && rng_unit() < g_cfg.calib_fail_prob)) {
        atomic_fetch_add(&g_count.calibration_failures, 1);
        return (VkResult)g_cfg.calib_result;
    }
    VkResult r = next(d->handle, count, infos, ts, max_deviation);
    if (r != VK_SUCCESS)
        return r;
    /* The device sample taken up to maxDeviation after the host ones: what
    * the reported deviation allows. */
    uint64_t noise = 0;
    if (g_cfg.deviation_ns) {
        noise = rng_next() % (g_cfg.deviation_ns + 1);
        atomic_fetch_add(&g_count.noisy_readings, 1);
        if (*max_deviation < g_cfg.deviation_ns)
            *max_deviation = g_cfg.deviation_ns;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (infos[i].timeDomain == VK_TIME_DOMAIN_DEVICE_EXT)
            ts[i] = fm_forward(&g_cfg, ts[i] + noise);
    }
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetCalibratedTimestampsEXT(
    VkDevice device, uint32_t count, const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
    uint64_t *max_deviation)
{
    fl_device *d = device_of(device);
    return calibrated(d, d->GetCalibratedTimestampsEXT, count, infos, ts, max_deviation);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetCalibratedTimestampsKHR(
    VkDevice device, uint32_t count, const VkCalibratedTimestampInfoEXT *infos, uint64_t *ts,
    uint64_t *max_deviation)
{
    fl_device *d = device_of(device);
    return calibrated(d, d->GetCalibratedTimestampsKHR, count, infos, ts, max_deviation);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueSubmit(VkQueue queue, uint32_t n,
                                                     const VkSubmitInfo *submits, VkFence fence)
{
    fl_device *d = device_of(queue);
    if (lost_now(d, &g_count.submits, g_cfg.lost_after_submits))
        return VK_ERROR_DEVICE_LOST;
    pthread_rwlock_rdlock(&d->submit_lock);
    VkResult r = already_lost(d) ? VK_ERROR_DEVICE_LOST : d->QueueSubmit(queue, n, submits, fence);
    if (r == VK_SUCCESS)
        reuse_submitted(d, queue, n, submits, NULL);
    pthread_rwlock_unlock(&d->submit_lock);
    return r;
}

static VkResult submit2(fl_device *d, PFN_vkQueueSubmit2 next, VkQueue queue, uint32_t n,
                        const VkSubmitInfo2 *submits, VkFence fence)
{
    if (lost_now(d, &g_count.submits, g_cfg.lost_after_submits))
        return VK_ERROR_DEVICE_LOST;
    pthread_rwlock_rdlock(&d->submit_lock);
    VkResult r = already_lost(d) ? VK_ERROR_DEVICE_LOST : next(queue, n, submits, fence);
    if (r == VK_SUCCESS)
        reuse_submitted(d, queue, n, NULL, submits);
    pthread_rwlock_unlock(&d->submit_lock);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueSubmit2(VkQueue queue, uint32_t n,
                                                      const VkSubmitInfo2 *submits, VkFence fence)
{
    fl_device *d = device_of(queue);
    return submit2(d, d->QueueSubmit2, queue, n, submits, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueSubmit2KHR(VkQueue queue, uint32_t n,
                                                         const VkSubmitInfo2 *submits,
                                                         VkFence fence)
{
    fl_device *d = device_of(queue);
    return submit2(d, d->QueueSubmit2KHR, queue, n, submits, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_WaitForFences(VkDevice device, uint32_t n,
                                                       const VkFence *fences, VkBool32 all,
                                                       uint64_t timeout)
{
    fl_device *d = device_of(device);
    if (lost_now(d, &g_count.waits, g_cfg.lost_after_waits))
        return VK_ERROR_DEVICE_LOST;
    return d->WaitForFences(device, n, fences, all, timeout);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_GetFenceStatus(VkDevice device, VkFence fence)
{
    fl_device *d = device_of(device);
    if (already_lost(d))
        return VK_ERROR_DEVICE_LOST;
    return d->GetFenceStatus(device, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_QueueWaitIdle(VkQueue queue)
{
    fl_device *d = device_of(queue);
    if (already_lost(d))
        return VK_ERROR_DEVICE_LOST;
    return d->QueueWaitIdle(queue);
}

static VKAPI_ATTR VkResult VKAPI_CALL fl_DeviceWaitIdle(VkDevice device)
{
    fl_device *d = device_of(device);
    if (already_lost(d))
        return VK_ERROR_DEVICE_LOST;
    return d->DeviceWaitIdle(device);
}

/* ---- lookup -------------------------------------------------------------------- */

typedef struct fl_hook fl_hook;
struct fl_hook {
    const char *name;
    PFN_vkVoidFunction fn;
};

#define HOOK(name)                                \
    {                                             \
        "vk" #name, (PFN_vkVoidFunction)fl_##name \
    }

static const fl_hook instance_hooks[] = {
    HOOK(GetPhysicalDeviceProperties),
    HOOK(GetPhysicalDeviceProperties2),
    HOOK(GetPhysicalDeviceProperties2KHR),
    HOOK(GetPhysicalDeviceQueueFamilyProperties),
    HOOK(GetPhysicalDeviceQueueFamilyProperties2),
    HOOK(GetPhysicalDeviceQueueFamilyProperties2KHR),
    HOOK(EnumerateDeviceExtensionProperties),
};

static const fl_hook device_hooks[] = {
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
};

static PFN_vkVoidFunction find_hook(const fl_hook *hooks, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(hooks[i].name, name) == 0)
            return hooks[i].fn;
    }
    return NULL;
}

static PFN_vkVoidFunction fl_device_hook(const char *name)
{
    return find_hook(device_hooks, sizeof device_hooks / sizeof device_hooks[0], name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fl_GetDeviceProcAddr(VkDevice device,
                                                                     const char *name);

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fl_GetInstanceProcAddr(VkInstance instance,
                                                                       const char *name)
{
    if (strcmp(name, "vkGetInstanceProcAddr") == 0)
        return (PFN_vkVoidFunction)fl_GetInstanceProcAddr;
    if (strcmp(name, "vkCreateInstance") == 0)
        return (PFN_vkVoidFunction)fl_CreateInstance;
    if (strcmp(name, "vkDestroyInstance") == 0)
        return (PFN_vkVoidFunction)fl_DestroyInstance;
    if (strcmp(name, "vkCreateDevice") == 0)
        return (PFN_vkVoidFunction)fl_CreateDevice;
    if (strcmp(name, "vkGetDeviceProcAddr") == 0)
        return (PFN_vkVoidFunction)fl_GetDeviceProcAddr;
    if (strcmp(name, "vkDestroyDevice") == 0)
        return (PFN_vkVoidFunction)fl_DestroyDevice;
    fl_instance *inst = instance_of(instance);
    if (!inst)
        return NULL;
    if (g_cfg.hide_calibration && is_calibration_name(name))
        return NULL;
    PFN_vkVoidFunction next = inst->gipa(instance, name);
    if (!next)
        return NULL;
    PFN_vkVoidFunction hook =
        find_hook(instance_hooks, sizeof instance_hooks / sizeof instance_hooks[0], name);
    if (!hook)
        hook = fl_device_hook(name);
    return hook ? hook : next;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fl_GetDeviceProcAddr(VkDevice device,
                                                                     const char *name)
{
    if (strcmp(name, "vkGetDeviceProcAddr") == 0)
        return (PFN_vkVoidFunction)fl_GetDeviceProcAddr;
    if (strcmp(name, "vkDestroyDevice") == 0)
        return (PFN_vkVoidFunction)fl_DestroyDevice;
    fl_device *d = device ? device_of(device) : NULL;
    if (!d)
        return NULL;
    if (g_cfg.hide_calibration && is_calibration_name(name))
        return NULL;
    PFN_vkVoidFunction next = d->gdpa(device, name);
    if (!next)
        return NULL;
    PFN_vkVoidFunction hook = fl_device_hook(name);
    return hook ? hook : next;
}

VK_LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (v->loaderLayerInterfaceVersion < 2)
        return VK_ERROR_INITIALIZATION_FAILED;
    v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = fl_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = fl_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
