/* SPDX-License-Identifier: MIT */
/* pr_device.c — gputrace-probe's Vulkan side (pr_device.h): the instance,
 * a device with every timestamp-writing queue, its pools and command
 * buffers, calibrations, resets, submissions and reads. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "toolkit/probe/pr_device.h"

static const clockid_t host_clock_id[PR_HOST_COUNT] = {
    [PR_HOST_MONOTONIC] = CLOCK_MONOTONIC,
    [PR_HOST_MONOTONIC_RAW] = CLOCK_MONOTONIC_RAW,
    [PR_HOST_BOOTTIME] = CLOCK_BOOTTIME,
};

/* The instance's API version, for which core entry points may be used. */
static uint32_t instance_api = VK_API_VERSION_1_0;

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *pr_result_name(VkResult r)
{
    switch (r) {
#define PR_NAME(x) \
    case x:        \
        return #x;
        PR_NAME(VK_SUCCESS)
        PR_NAME(VK_NOT_READY)
        PR_NAME(VK_TIMEOUT)
        PR_NAME(VK_INCOMPLETE)
        PR_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
        PR_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        PR_NAME(VK_ERROR_INITIALIZATION_FAILED)
        PR_NAME(VK_ERROR_DEVICE_LOST)
        PR_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
        PR_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        PR_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
        PR_NAME(VK_ERROR_UNKNOWN)
#undef PR_NAME
    default:
        return "VkResult";
    }
}

void pr_wedge(pr_device *d, const char *fmt, ...)
{
    d->wedged = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->wedged_why, sizeof d->wedged_why, fmt, ap);
    va_end(ap);
}

static bool fail(char *err, size_t len, const char *what, VkResult r)
{
    snprintf(err, len, "%s: %s (%d)", what, pr_result_name(r), (int)r);
    return false;
}

bool pr_instance_create(VkInstance *instance, char *err, size_t errlen)
{
    uint32_t api = VK_API_VERSION_1_0;
    PFN_vkEnumerateInstanceVersion version =
        (PFN_vkEnumerateInstanceVersion)vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (version && version(&api) != VK_SUCCESS)
        api = VK_API_VERSION_1_0;
    if (api > VK_API_VERSION_1_3)
        api = VK_API_VERSION_1_3;
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = PR_PROG,
        .pEngineName = "gputrace",
        .apiVersion = api,
    };
    const VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    VkResult r = vkCreateInstance(&info, NULL, instance);
    if (r != VK_SUCCESS)
        return fail(err, errlen, "vkCreateInstance", r);
    instance_api = api;
    return true;
}

/* ---- opening a device -------------------------------------------------------------- */

static bool has_ext(const VkExtensionProperties *e, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(e[i].extensionName, name) == 0)
            return true;
    }
    return false;
}

/* Names, features and time domains: what the device will be opened with. */
static const char *learn(pr_device *d, VkInstance instance, const VkExtensionProperties *ext,
                         uint32_t n, VkPhysicalDeviceVulkan12Features *f12)
{
    vkGetPhysicalDeviceProperties(d->phys, &d->props);
    snprintf(d->driver_name, sizeof d->driver_name, "unknown");
    if (d->props.apiVersion >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceDriverProperties drv = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
        };
        VkPhysicalDeviceProperties2 p2 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
            .pNext = &drv,
        };
        vkGetPhysicalDeviceProperties2(d->phys, &p2);
        snprintf(d->driver_name, sizeof d->driver_name, "%s", drv.driverName);
        snprintf(d->driver_info, sizeof d->driver_info, "%s", drv.driverInfo);
        VkPhysicalDeviceFeatures2 f2 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            .pNext = f12,
        };
        vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    }
    d->facts.period_ns = d->props.limits.timestampPeriod;
    /* The KHR extension where both exist (FACTS: a wrapper once broke the
     * EXT one); the two share their commands' shape and enums. */
    const char *fn = NULL, *domains_fn = NULL;
    if (has_ext(ext, n, "VK_KHR_calibrated_timestamps")) {
        d->calibration_ext = "VK_KHR_calibrated_timestamps";
        fn = "vkGetCalibratedTimestampsKHR";
        domains_fn = "vkGetPhysicalDeviceCalibrateableTimeDomainsKHR";
    } else if (has_ext(ext, n, "VK_EXT_calibrated_timestamps")) {
        d->calibration_ext = "VK_EXT_calibrated_timestamps";
        fn = "vkGetCalibratedTimestampsEXT";
        domains_fn = "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT";
    }
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT domains =
        domains_fn ? (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)vkGetInstanceProcAddr(
                         instance, domains_fn)
                   : NULL;
    VkTimeDomainEXT dom[16];
    uint32_t ndom = 16;
    bool device_domain = false;
    if (domains && domains(d->phys, &ndom, dom) >= 0) {
        for (uint32_t i = 0; i < ndom; i++) {
            device_domain |= dom[i] == VK_TIME_DOMAIN_DEVICE_EXT;
            d->facts.offered[PR_HOST_MONOTONIC] |= dom[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
            d->facts.offered[PR_HOST_MONOTONIC_RAW] |=
                dom[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT;
        }
    }
    if (!device_domain)
        d->calibration_ext = NULL;
    return d->calibration_ext ? fn : NULL;
}

/* One queue family: its queues, command pool, command buffers and pool. */
static VkResult open_family(pr_device *d, pr_family *f)
{
    for (uint32_t q = 0; q < f->nqueues; q++)
        vkGetDeviceQueue(d->dev, f->index, q, &f->queues[q]);
    const VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = f->index,
    };
    VkResult r = vkCreateCommandPool(d->dev, &pool, NULL, &f->pool);
    if (r != VK_SUCCESS)
        return r;
    const VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = f->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 2 * f->nqueues,
    };
    r = vkAllocateCommandBuffers(d->dev, &alloc, &f->cb[0][0]);
    if (r != VK_SUCCESS)
        return r;
    const VkQueryPoolCreateInfo qp = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 4 * f->nqueues + PR_SEMANTICS_QUERIES,
    };
    return vkCreateQueryPool(d->dev, &qp, NULL, &f->queries);
}

/* The device's synchronisation objects and the pool of cross-queue pairs. */
static VkResult open_shared(pr_device *d)
{
    const VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    VkResult r = vkCreateFence(d->dev, &fi, NULL, &d->fence);
    if (r != VK_SUCCESS)
        return r;
    const VkSemaphoreCreateInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO };
    r = vkCreateSemaphore(d->dev, &si, NULL, &d->binary);
    if (r != VK_SUCCESS)
        return r;
    if (d->timeline) {
        const VkSemaphoreTypeCreateInfo type = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
            .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        };
        const VkSemaphoreCreateInfo ti = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
            .pNext = &type,
        };
        r = vkCreateSemaphore(d->dev, &ti, NULL, &d->timeline_sem);
        if (r != VK_SUCCESS)
            return r;
    }
    return VK_SUCCESS;
}

static VkResult open_cross(pr_device *d)
{
    if (d->facts.queues < 2)
        return VK_SUCCESS;
    const VkQueryPoolCreateInfo qp = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * PR_CROSS_PAIRS,
    };
    VkResult r = vkCreateQueryPool(d->dev, &qp, NULL, &d->cross);
    if (r != VK_SUCCESS)
        return r;
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        if (d->families[i].nqueues)
            return pr_reset_queries(d, &d->families[i], d->cross, 0, qp.queryCount);
    }
    return VK_SUCCESS;
}

/* The families, and the queue create infos of those that write timestamps
 * (with `common_only`, of those that also do graphics, compute or transfer
 * work). */
static uint32_t plan_queues(pr_device *d, VkDeviceQueueCreateInfo *qci, const float *priorities,
                            bool common_only)
{
    const VkQueueFlags common =
        VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT;
    uint32_t n = 0;
    d->facts.queues = 0;
    d->facts.device_bits = 0;
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        pr_family *f = &d->families[i];
        f->index = i;
        f->nqueues = 0;
        if (!f->props.timestampValidBits || !f->props.queueCount ||
            (common_only && !(f->props.queueFlags & common)))
            continue;
        f->nqueues =
            f->props.queueCount < PR_FAMILY_QUEUES ? f->props.queueCount : PR_FAMILY_QUEUES;
        d->facts.queues += f->nqueues;
        if (f->props.timestampValidBits > d->facts.device_bits)
            d->facts.device_bits = f->props.timestampValidBits;
        qci[n++] = (VkDeviceQueueCreateInfo){
            .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            .queueFamilyIndex = i,
            .queueCount = f->nqueues,
            .pQueuePriorities = priorities,
        };
    }
    return n;
}

/* vkCreateDevice with the queues of every timestamp-writing family; where
 * that fails and some family does only other work (video, optical flow:
 * they may want their own extensions), once more without those. */
static VkResult create_device(pr_device *d, bool core12, char *err, size_t errlen)
{
    static const float priorities[PR_FAMILY_QUEUES] = { 1, 1, 1, 1 };
    VkDeviceQueueCreateInfo *qci = calloc(d->nfamilies ? d->nfamilies : 1, sizeof *qci);
    if (!qci)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    VkPhysicalDeviceVulkan12Features enable = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .hostQueryReset = d->host_reset,
        .timelineSemaphore = d->timeline,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = core12 ? &enable : NULL,
        .pQueueCreateInfos = qci,
        .enabledExtensionCount = d->calibration_ext ? 1 : 0,
        .ppEnabledExtensionNames = &d->calibration_ext,
    };
    VkResult r = VK_ERROR_INITIALIZATION_FAILED;
    uint32_t all = 0;
    for (int common_only = 0; common_only < 2 && r != VK_SUCCESS; common_only++) {
        info.queueCreateInfoCount = plan_queues(d, qci, priorities, common_only);
        if (common_only && info.queueCreateInfoCount == all)
            break; /* no family left out: nothing new to try */
        all = info.queueCreateInfoCount;
        if (!info.queueCreateInfoCount) {
            snprintf(err, errlen, "no queue family writes timestamps (timestampValidBits 0)");
            break;
        }
        r = vkCreateDevice(d->phys, &info, NULL, &d->dev);
        if (r != VK_SUCCESS)
            snprintf(err, errlen, "vkCreateDevice: %s (%d)", pr_result_name(r), (int)r);
    }
    free(qci);
    return r;
}

bool pr_device_open(pr_device *d, VkInstance instance, VkPhysicalDevice phys, uint32_t index,
                    char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->index = index;
    d->phys = phys;
    uint32_t next = 0;
    vkEnumerateDeviceExtensionProperties(phys, NULL, &next, NULL);
    VkExtensionProperties *ext = calloc(next ? next : 1, sizeof *ext);
    if (!ext)
        return fail(err, errlen, "out of memory", VK_ERROR_OUT_OF_HOST_MEMORY);
    vkEnumerateDeviceExtensionProperties(phys, NULL, &next, ext);
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    };
    const char *calibrate_fn = learn(d, instance, ext, next, &f12);
    free(ext);
    const bool core12 =
        d->props.apiVersion >= VK_API_VERSION_1_2 && instance_api >= VK_API_VERSION_1_2;
    d->host_reset = core12 && f12.hostQueryReset;
    d->timeline = core12 && f12.timelineSemaphore;

    vkGetPhysicalDeviceQueueFamilyProperties(phys, &d->nfamilies, NULL);
    d->families = calloc(d->nfamilies ? d->nfamilies : 1, sizeof *d->families);
    VkQueueFamilyProperties *props = calloc(d->nfamilies ? d->nfamilies : 1, sizeof *props);
    if (!d->families || !props) {
        free(props);
        return fail(err, errlen, "out of memory", VK_ERROR_OUT_OF_HOST_MEMORY);
    }
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &d->nfamilies, props);
    for (uint32_t i = 0; i < d->nfamilies; i++)
        d->families[i].props = props[i];
    free(props);
    if (create_device(d, core12, err, errlen) != VK_SUCCESS)
        return false;
    if (calibrate_fn)
        d->calibrate = (PFN_vkGetCalibratedTimestampsEXT)vkGetDeviceProcAddr(d->dev, calibrate_fn);
    d->facts.calibrated = d->calibrate != NULL;
    if (d->host_reset)
        d->reset_pool = (PFN_vkResetQueryPool)vkGetDeviceProcAddr(d->dev, "vkResetQueryPool");
    d->host_reset = d->reset_pool != NULL;
    if (d->timeline)
        d->signal_semaphore =
            (PFN_vkSignalSemaphore)vkGetDeviceProcAddr(d->dev, "vkSignalSemaphore");
    d->timeline = d->signal_semaphore != NULL;

    VkResult r;
    if ((r = open_shared(d)) != VK_SUCCESS)
        return fail(err, errlen, "fence or semaphore", r);
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        if (d->families[i].nqueues && (r = open_family(d, &d->families[i])) != VK_SUCCESS)
            return fail(err, errlen, "queue family set-up", r);
    }
    /* Queries start out undefined: reset them all before their first use
     * (once every family can record, for devices resetting on a queue). */
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        pr_family *f = &d->families[i];
        if (f->nqueues &&
            (r = pr_reset_queries(d, f, f->queries, 0, 4 * f->nqueues + PR_SEMANTICS_QUERIES)) !=
                VK_SUCCESS)
            return fail(err, errlen, "query reset", r);
    }
    if ((r = open_cross(d)) != VK_SUCCESS)
        return fail(err, errlen, "cross-queue query pool", r);
    return true;
}

void pr_device_close(pr_device *d)
{
    if (d->dev && !d->wedged) {
        vkDeviceWaitIdle(d->dev);
        for (uint32_t i = 0; i < d->nfamilies; i++) {
            pr_family *f = &d->families[i];
            if (f->queries)
                vkDestroyQueryPool(d->dev, f->queries, NULL);
            if (f->pool)
                vkDestroyCommandPool(d->dev, f->pool, NULL);
        }
        if (d->cross)
            vkDestroyQueryPool(d->dev, d->cross, NULL);
        if (d->timeline_sem)
            vkDestroySemaphore(d->dev, d->timeline_sem, NULL);
        if (d->binary)
            vkDestroySemaphore(d->dev, d->binary, NULL);
        if (d->fence)
            vkDestroyFence(d->dev, d->fence, NULL);
        vkDestroyDevice(d->dev, NULL);
    }
    if (!d->wedged) {
        free(d->families);
        d->families = NULL;
    }
    d->dev = VK_NULL_HANDLE;
}

/* ---- measuring ----------------------------------------------------------------------- */

void pr_calibrate(pr_device *d, pr_calibration *c)
{
    memset(c, 0, sizeof *c);
    if (!d->calibrate)
        return;
    VkCalibratedTimestampInfoEXT info[3];
    pr_host_clock which[3] = { PR_HOST_COUNT, PR_HOST_COUNT, PR_HOST_COUNT };
    uint32_t n = 0;
    info[n++] = (VkCalibratedTimestampInfoEXT){
        .sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
        .timeDomain = VK_TIME_DOMAIN_DEVICE_EXT,
    };
    static const VkTimeDomainEXT domain[PR_HOST_COUNT] = {
        [PR_HOST_MONOTONIC] = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT,
        [PR_HOST_MONOTONIC_RAW] = VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT,
    };
    for (int h = PR_HOST_MONOTONIC; h <= PR_HOST_MONOTONIC_RAW; h++) {
        if (!d->facts.offered[h])
            continue;
        which[n] = (pr_host_clock)h;
        info[n++] = (VkCalibratedTimestampInfoEXT){
            .sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
            .timeDomain = domain[h],
        };
    }
    uint64_t ts[3] = { 0 };
    /* CLOCK_MONOTONIC read last before and first after: its bracket, the
     * one stamps are judged by, is the narrowest. */
    for (int h = PR_HOST_COUNT - 1; h >= 0; h--)
        c->before[h] = read_clock(host_clock_id[h]);
    VkResult r = d->calibrate(d->dev, n, info, ts, &c->max_deviation);
    for (int h = 0; h < PR_HOST_COUNT; h++)
        c->after[h] = read_clock(host_clock_id[h]);
    if (r != VK_SUCCESS)
        return;
    c->ok = true;
    c->device = ts[0];
    for (uint32_t i = 1; i < n; i++) {
        c->offered[which[i]] = true;
        c->host[which[i]] = ts[i];
    }
}

/* A family whose queues can record vkCmdResetQueryPool (graphics or
 * compute), for resets the host cannot make. */
static pr_family *reset_family(pr_device *d)
{
    for (uint32_t i = 0; i < d->nfamilies; i++) {
        pr_family *f = &d->families[i];
        if (f->nqueues && (f->props.queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)))
            return f;
    }
    return NULL;
}

VkResult pr_reset_queries(pr_device *d, pr_family *fam, VkQueryPool pool, uint32_t first,
                          uint32_t count)
{
    (void)fam;
    if (d->host_reset) {
        d->reset_pool(d->dev, pool, first, count);
        return VK_SUCCESS;
    }
    pr_family *f = reset_family(d);
    if (!f || !f->pool)
        return VK_ERROR_FEATURE_NOT_PRESENT;
    VkCommandBuffer cb = f->cb[0][1];
    VkResult r = vkResetCommandBuffer(cb, 0);
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (r == VK_SUCCESS)
        r = vkBeginCommandBuffer(cb, &begin);
    if (r != VK_SUCCESS)
        return r;
    vkCmdResetQueryPool(cb, pool, first, count);
    if ((r = vkEndCommandBuffer(cb)) != VK_SUCCESS)
        return r;
    const pr_submit s = { .fence = true };
    if ((r = pr_submit_cb(d, f->queues[0], cb, &s)) != VK_SUCCESS)
        return r;
    return pr_wait_fence(d, 10000);
}

VkResult pr_record_stamps(pr_device *d, VkCommandBuffer cb, VkQueryPool pool, const uint32_t *slots,
                          const VkPipelineStageFlagBits *stages, uint32_t n)
{
    (void)d;
    VkResult r = vkResetCommandBuffer(cb, 0);
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (r == VK_SUCCESS)
        r = vkBeginCommandBuffer(cb, &begin);
    if (r != VK_SUCCESS)
        return r;
    for (uint32_t i = 0; i < n; i++)
        vkCmdWriteTimestamp(cb, stages[i], pool, slots[i]);
    return vkEndCommandBuffer(cb);
}

VkResult pr_submit_cb(pr_device *d, VkQueue queue, VkCommandBuffer cb, const pr_submit *s)
{
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    const VkTimelineSemaphoreSubmitInfo values = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = s->wait ? 1 : 0,
        .pWaitSemaphoreValues = &s->wait_value,
        .signalSemaphoreValueCount = s->signal ? 1 : 0,
        .pSignalSemaphoreValues = &s->signal_value,
    };
    const VkSubmitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = s->wait_value || s->signal_value ? &values : NULL,
        .waitSemaphoreCount = s->wait ? 1 : 0,
        .pWaitSemaphores = &s->wait,
        .pWaitDstStageMask = &stage,
        .commandBufferCount = 1,
        .pCommandBuffers = &cb,
        .signalSemaphoreCount = s->signal ? 1 : 0,
        .pSignalSemaphores = &s->signal,
    };
    return vkQueueSubmit(queue, 1, &info, s->fence ? d->fence : VK_NULL_HANDLE);
}

VkResult pr_wait_fence(pr_device *d, double timeout_ms)
{
    VkResult r = vkWaitForFences(d->dev, 1, &d->fence, VK_TRUE, (uint64_t)(timeout_ms * 1e6));
    if (r == VK_TIMEOUT) {
        pr_wedge(d, "a submission did not complete within %.0f ms", timeout_ms);
        return r;
    }
    if (r == VK_SUCCESS)
        r = vkResetFences(d->dev, 1, &d->fence);
    return r;
}

VkResult pr_read(pr_device *d, VkQueryPool pool, uint32_t first, uint32_t count, uint64_t (*out)[2])
{
    memset(out, 0, (size_t)count * sizeof *out);
    return vkGetQueryPoolResults(d->dev, pool, first, count, (size_t)count * sizeof *out, out,
                                 sizeof *out,
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
}
