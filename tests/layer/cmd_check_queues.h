/* SPDX-License-Identifier: MIT */
/* cmd_check_queues.h — more queues than the driver has, for
 * VK_LAYER_GPUTRACE_cmdcheck (prefix cq_): with GPUTRACE_CMDCHECK_QUEUES=N
 * (2 to CQ_MAX_QUEUES) the layer reports queueCount N for queue family 0,
 * creates the device with the driver's own count, and hands out the
 * missing queues itself. Each runs on the driver's queue 0: every queue
 * call (submits, vkQueueWaitIdle) of the device is made under one lock, so
 * work of several "queues" reaches the driver in one order, and a
 * semaphore signalled on one and waited for on another needs its signal
 * submitted first (as Vulkan requires of binary semaphores; a timeline
 * wait submitted before its signal would hang).
 *
 * So tests of work on several queues (flows between queues) run on
 * lavapipe, which has one. Only submits and vkQueueWaitIdle take the
 * extra queues (no presents, sparse binds or queue labels); their names
 * (vkSetDebugUtilsObjectNameEXT) stop at this layer — the driver would
 * take our handle for one of its objects and write the name into it.
 */
#ifndef GPUTRACE_TESTS_CMD_CHECK_QUEUES_H
#define GPUTRACE_TESTS_CMD_CHECK_QUEUES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "tests/common/test_layer_skeleton.h"

#define CQ_MAX_QUEUES 8u

/* A queue of ours: dispatchable like the driver's (its first word is the
 * loader's dispatch pointer). */
typedef struct cq_queue cq_queue;
struct cq_queue {
    void *loader_data;
    VkQueue real;
};

typedef struct cq_instance cq_instance;
struct cq_instance {
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties2 GetPhysicalDeviceQueueFamilyProperties2;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties2KHR GetPhysicalDeviceQueueFamilyProperties2KHR;
};

typedef struct cq_device cq_device;
struct cq_device {
    bool on;             /* the device was made with more queues than the driver has */
    uint32_t real_count; /* the driver's queues in family 0 */
    uint32_t count;      /* those the application asked for */
    cq_queue extra[CQ_MAX_QUEUES];
    pthread_mutex_t lock; /* every queue call, when `on` */
    PFN_vkGetDeviceQueue GetDeviceQueue;
    PFN_vkGetDeviceQueue2 GetDeviceQueue2;
    PFN_vkQueueWaitIdle QueueWaitIdle;
};

/* GPUTRACE_CMDCHECK_QUEUES, read once; 0: off. */
uint32_t cq_wanted(void);

/* The instance's next functions (at its creation). */
void cq_instance_created(cq_instance *ci, const tls_instance *base);
/* vkGetPhysicalDeviceQueueFamilyProperties{,2,2KHR} through the layer. */
void cq_queue_family_properties(const cq_instance *ci, VkPhysicalDevice pd, uint32_t *count,
                                VkQueueFamilyProperties *props);
void cq_queue_family_properties2(const cq_instance *ci, bool khr, VkPhysicalDevice pd,
                                 uint32_t *count, VkQueueFamilyProperties2 *props);

/* The create info to pass down (queues of family 0 cut to the driver's
 * count), remembered for cq_device_created on this thread. */
const VkDeviceCreateInfo *cq_amend_device_create(const cq_instance *ci, VkPhysicalDevice pd,
                                                 const VkDeviceCreateInfo *info);
void cq_device_created(cq_device *cd, const tls_device *base);
void cq_device_destroyed(cq_device *cd);

/* vkGetDeviceQueue / vkGetDeviceQueue2 through the layer. */
void cq_get_queue(cq_device *cd, VkDevice device, uint32_t family, uint32_t index, VkQueue *queue);
void cq_get_queue2(cq_device *cd, VkDevice device, const VkDeviceQueueInfo2 *info, VkQueue *queue);

/* Around every queue call: the driver's queue for `queue`, with the lock
 * taken when needed; then cq_end. */
VkQueue cq_begin(cq_device *cd, VkQueue queue);
/* Whether `handle` (a VkQueue as a 64-bit object handle) is one of ours. */
bool cq_is_extra(const cq_device *cd, uint64_t handle);
void cq_end(cq_device *cd);

#endif
