/* SPDX-License-Identifier: MIT */
/* pr_device.h — gputrace-probe's Vulkan side (probe.h lists the parts):
 * one logical device per physical device, with every queue (up to
 * PR_FAMILY_QUEUES) of every family that writes timestamps, a query pool
 * and re-recordable command buffers per family, and the calls every
 * measurement is made of. A call that does not return within its bound
 * marks the device wedged: nothing more is asked of it, not even its
 * destruction. */
#ifndef GPUTRACE_PROBE_DEVICE_H
#define GPUTRACE_PROBE_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "toolkit/probe/probe.h"

#define PR_FAMILY_QUEUES 4
/* Query slots of a family's pool: 2 per queue for the stamped
 * submissions, 2 per queue for semaphore pairs, then the query-semantics
 * slots. */
#define PR_SEMANTICS_QUERIES 4
#define PR_CROSS_PAIRS       32

typedef struct pr_family pr_family;
struct pr_family {
    uint32_t index;
    VkQueueFamilyProperties props;
    uint32_t nqueues; /* created (0 for a family without timestamps) */
    VkQueue queues[PR_FAMILY_QUEUES];
    VkCommandPool pool;
    VkCommandBuffer cb[PR_FAMILY_QUEUES]
                      [2]; /* per queue: a stamped submission's, a pair's second */
    VkQueryPool queries;
};

typedef struct pr_device pr_device;
struct pr_device {
    uint32_t index;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    char driver_name[VK_MAX_DRIVER_NAME_SIZE];
    char driver_info[VK_MAX_DRIVER_INFO_SIZE];
    VkDevice dev;
    pr_family *families;
    uint32_t nfamilies;
    pr_device_facts facts;
    const char *calibration_ext; /* the extension used, or NULL */
    bool host_reset;             /* vkResetQueryPool usable */
    bool timeline;               /* timeline semaphores usable */
    VkFence fence;
    VkSemaphore binary;       /* semaphore pairs */
    VkSemaphore timeline_sem; /* gated submissions; VK_NULL_HANDLE without */
    uint64_t timeline_value;
    VkQueryPool cross; /* PR_CROSS_PAIRS pairs of slots */
    PFN_vkGetCalibratedTimestampsEXT calibrate;
    PFN_vkResetQueryPool reset_pool;
    PFN_vkSignalSemaphore signal_semaphore;
    bool wedged;
    char wedged_why[160];
};

/* The instance (Vulkan 1.3 at most, what the loader offers); false with
 * the reason in `err`. */
bool pr_instance_create(VkInstance *instance, char *err, size_t errlen);

/* Opens physical device `phys` (index `index`) with everything above;
 * false with the reason in `err` (the device stays unusable). */
bool pr_device_open(pr_device *d, VkInstance instance, VkPhysicalDevice phys, uint32_t index,
                    char *err, size_t errlen);
/* Destroys what pr_device_open made (nothing of a wedged device). */
void pr_device_close(pr_device *d);

/* One vkGetCalibratedTimestamps call with DEVICE and the offered host
 * domains, each host clock read around it. */
void pr_calibrate(pr_device *d, pr_calibration *c);

/* Makes `count` queries from `first` of `pool` unavailable: on the host
 * where the device allows it, else with a submission on `fam`'s first
 * queue. */
VkResult pr_reset_queries(pr_device *d, pr_family *fam, VkQueryPool pool, uint32_t first,
                          uint32_t count);

/* Records `cb` afresh: for each of the `n` slots, a timestamp at
 * `stages[i]` into `pool` (reset beforehand: pr_reset_queries). */
VkResult pr_record_stamps(pr_device *d, VkCommandBuffer cb, VkQueryPool pool, const uint32_t *slots,
                          const VkPipelineStageFlagBits *stages, uint32_t n);

/* Submits `cb` on `queue` with the device's fence, optionally waiting on
 * / signalling a semaphore; `fence` false leaves the fence out. */
typedef struct pr_submit pr_submit;
struct pr_submit {
    VkSemaphore wait, signal;
    uint64_t wait_value, signal_value; /* timeline semaphores; 0 for binary */
    bool fence;
};
VkResult pr_submit_cb(pr_device *d, VkQueue queue, VkCommandBuffer cb, const pr_submit *s);

/* Waits for the device's fence (and resets it), at most `timeout_ms`; a
 * time-out wedges the device. */
VkResult pr_wait_fence(pr_device *d, double timeout_ms);

/* Reads `count` timestamp queries with availability (64-bit), no WAIT. */
VkResult pr_read(pr_device *d, VkQueryPool pool, uint32_t first, uint32_t count,
                 uint64_t (*out)[2]);

/* "VK_ERROR_DEVICE_LOST" and the like. */
const char *pr_result_name(VkResult r);

/* Marks the device wedged, with why (printf format). */
void pr_wedge(pr_device *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* GPUTRACE_PROBE_DEVICE_H */
