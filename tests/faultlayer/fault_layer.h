/* SPDX-License-Identifier: MIT */
/* fault_layer.h — what the files of VK_LAYER_GPUTRACE_clockfault share
 * (private to tests/faultlayer): the per-device state, the configuration
 * and the counters written to the truth file.
 *
 *   fault_layer.c        configuration, timestamps, calibration, device
 *                        loss, properties; the hook tables
 *   fault_memory.c       timestamps copied into mapped memory
 *   fault_reuse_hooks.c  the commands the query-reuse check watches
 *                        (reuse_check.h)
 *   fault_family.c       which queue family wrote each timestamp query
 *                        (GPUTRACE_FAULT_FAMILY_OFFSET_NS)
 */
#ifndef GPUTRACE_FAULT_LAYER_H
#define GPUTRACE_FAULT_LAYER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <vulkan/vulkan.h>

#include "tests/common/test_layer_skeleton.h"
#include "tests/faultlayer/fault_model.h"
#include "tests/faultlayer/reuse_check.h"

/* The configuration (GPUTRACE_FAULT_*), read at the first vkCreateInstance. */
extern fm_config fl_cfg;

/* Live counts, copied into the truth file (fm_counters). */
typedef struct fl_counts fl_counts;
struct fl_counts {
    atomic_uint_fast64_t query_values, calibrations, calibration_failures, noisy_readings;
    atomic_uint_fast64_t submits, results, waits, lost_returned;
    atomic_uint_fast64_t early_available, family_offsets;
    atomic_uint_fast64_t copies_held, copies_revealed;
    atomic_bool lost;
};
extern fl_counts fl_count;

typedef struct fl_binding fl_binding;
struct fl_binding {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize offset;
};

typedef struct fl_mapping fl_mapping;
struct fl_mapping {
    VkDeviceMemory memory;
    VkDeviceSize offset;
    uint8_t *ptr;
};

/* A destination of timestamp copies: `count` records of (value,
 * availability) at `offset` in `memory`; `out` holds what this layer last
 * wrote into each value, so a value is rewritten exactly once per copy (a
 * new copy writes a raw value, which differs from it). */
typedef struct fl_copy fl_copy;
struct fl_copy {
    VkDeviceMemory memory;
    VkDeviceSize offset;
    uint32_t count;
    uint64_t *out;
    /* GPUTRACE_FAULT_LATE_COPIES: the value each record last showed after
     * being held back (never held back again); the command buffer that
     * last recorded a copy here, and the number of the last submission of
     * it (fl_copies_submit). */
    uint64_t *shown;
    VkCommandBuffer cb;
    uint64_t submitted;
};

/* A copied record held back (GPUTRACE_FAULT_LATE_COPIES): where it is and
 * what the copy wrote there. */
typedef struct fl_held fl_held;
struct fl_held {
    size_t copy;
    uint32_t query;
    uint64_t value, avail;
};

/* A handle (or a query pool and its query) and the queue family it
 * belongs to (fault_family.c). */
typedef struct fl_family_entry fl_family_entry;
struct fl_family_entry {
    uint64_t handle;
    uint32_t query;
    uint32_t family;
};

typedef struct fl_family_map fl_family_map;
struct fl_family_map {
    fl_family_entry *e;
    size_t n, cap;
};

typedef struct fl_device fl_device;
struct fl_device {
    tls_device base;
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
    fl_binding *bindings;
    size_t nbindings, bindings_cap;
    fl_mapping *mappings;
    size_t nmappings, mappings_cap;
    fl_copy *copies;
    size_t ncopies, copies_cap;
    fl_held *held;
    size_t nheld, held_cap;
    /* Submissions counted (fl_copies_submit), and how many of them are
     * known to have run (copies of those are never held back). */
    uint64_t submit_serial, ran_serial;

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

    /* GPUTRACE_FAULT_FAMILY_OFFSET_NS: command pools and buffers to their
     * family, timestamp queries to the family that last wrote them
     * (under family_lock; fault_family.c). */
    PFN_vkCreateCommandPool CreateCommandPool;
    PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
    pthread_mutex_t family_lock;
    fl_family_map command_pools, command_buffers, stamps;
};

static inline fl_device *fl_device_of(const void *dispatchable)
{
    return (fl_device *)tls_device_of(dispatchable);
}

/* Room for one more element in a malloc'd array of `*cap` elements of
 * `size` bytes holding `n`; false when out of memory. Shared with
 * reuse_check.c. */
static inline bool fl_grow(void **array, size_t *cap, size_t n, size_t size)
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

/* fault_layer.c */
bool fl_pool_is_timestamp(fl_device *d, VkQueryPool pool);

/* fault_memory.c */
VKAPI_ATTR VkResult VKAPI_CALL fl_BindBufferMemory(VkDevice device, VkBuffer buffer,
                                                   VkDeviceMemory memory, VkDeviceSize offset);
VKAPI_ATTR VkResult VKAPI_CALL fl_MapMemory(VkDevice device, VkDeviceMemory memory,
                                            VkDeviceSize offset, VkDeviceSize size,
                                            VkMemoryMapFlags flags, void **data);
VKAPI_ATTR void VKAPI_CALL fl_CmdCopyQueryPoolResults(VkCommandBuffer cb, VkQueryPool pool,
                                                      uint32_t first, uint32_t count,
                                                      VkBuffer buffer, VkDeviceSize offset,
                                                      VkDeviceSize stride,
                                                      VkQueryResultFlags flags);
VKAPI_ATTR VkResult VKAPI_CALL fl_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n,
                                                               const VkMappedMemoryRange *ranges);
/* Frees what the device's copy tracking holds. */
void fl_memory_release(fl_device *d);

/* GPUTRACE_FAULT_LATE_COPIES=late: anything that shows the copies ran
 * (a submission after them, a fence or idle wait that returned) puts the
 * records held back in place, and what was submitted before it is never
 * held back again. */
void fl_copies_land(fl_device *d);
/* A submission of these batches (one of `s1` or `s2`) is about to go down:
 * the copies before it land, those in its command buffers may be late. */
void fl_copies_submit(fl_device *d, uint32_t n, const VkSubmitInfo *s1, const VkSubmitInfo2 *s2);

/* fault_family.c */
VKAPI_ATTR VkResult VKAPI_CALL fl_CreateCommandPool(VkDevice device,
                                                    const VkCommandPoolCreateInfo *info,
                                                    const VkAllocationCallbacks *alloc,
                                                    VkCommandPool *pool);
VKAPI_ATTR VkResult VKAPI_CALL fl_AllocateCommandBuffers(VkDevice device,
                                                         const VkCommandBufferAllocateInfo *info,
                                                         VkCommandBuffer *cbs);
/* A timestamp recorded into `cb`: remembers its family for the query. */
void fl_family_stamp(fl_device *d, VkCommandBuffer cb, VkQueryPool pool, uint32_t query);
/* The family whose command buffer last wrote the query; UINT32_MAX if
 * unknown. */
uint32_t fl_family_of_query(fl_device *d, VkQueryPool pool, uint32_t query);
void fl_family_release(fl_device *d);

/* fault_reuse_hooks.c */
VKAPI_ATTR VkResult VKAPI_CALL fl_BeginCommandBuffer(VkCommandBuffer cb,
                                                     const VkCommandBufferBeginInfo *info);
VKAPI_ATTR VkResult VKAPI_CALL fl_ResetCommandBuffer(VkCommandBuffer cb,
                                                     VkCommandBufferResetFlags flags);
VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp(VkCommandBuffer cb, VkPipelineStageFlagBits stage,
                                                VkQueryPool pool, uint32_t query);
VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp2(VkCommandBuffer cb, VkPipelineStageFlags2 stage,
                                                 VkQueryPool pool, uint32_t query);
VKAPI_ATTR void VKAPI_CALL fl_CmdWriteTimestamp2KHR(VkCommandBuffer cb, VkPipelineStageFlags2 stage,
                                                    VkQueryPool pool, uint32_t query);
VKAPI_ATTR void VKAPI_CALL fl_CmdResetQueryPool(VkCommandBuffer cb, VkQueryPool pool,
                                                uint32_t first, uint32_t count);
VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier(VkCommandBuffer cb, VkPipelineStageFlags src,
                                                 VkPipelineStageFlags dst, VkDependencyFlags deps,
                                                 uint32_t nmem, const VkMemoryBarrier *mem,
                                                 uint32_t nbuf, const VkBufferMemoryBarrier *buf,
                                                 uint32_t nimg, const VkImageMemoryBarrier *img);
VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier2(VkCommandBuffer cb, const VkDependencyInfo *dep);
VKAPI_ATTR void VKAPI_CALL fl_CmdPipelineBarrier2KHR(VkCommandBuffer cb,
                                                     const VkDependencyInfo *dep);
VKAPI_ATTR void VKAPI_CALL fl_CmdExecuteCommands(VkCommandBuffer cb, uint32_t count,
                                                 const VkCommandBuffer *secondaries);
VKAPI_ATTR void VKAPI_CALL fl_ResetQueryPool(VkDevice device, VkQueryPool pool, uint32_t first,
                                             uint32_t count);
VKAPI_ATTR void VKAPI_CALL fl_ResetQueryPoolEXT(VkDevice device, VkQueryPool pool, uint32_t first,
                                                uint32_t count);
/* After a successful vkQueueSubmit (`submits`) or vkQueueSubmit2
 * (`submits2`) with `fence`: the command buffers of every batch, in order,
 * to rc_submitted. */
void fl_reuse_submitted(fl_device *d, VkQueue queue, uint32_t n, const VkSubmitInfo *submits,
                        const VkSubmitInfo2 *submits2, VkFence fence);

#endif
