/* SPDX-License-Identifier: MIT */
/* layer_dispatch.h — the Vulkan functions the layer calls down to, as X-macro
 * lists, and the dispatch tables built from them.
 *
 * Each entry is the name without the "vk" prefix; the table member has that
 * name and type PFN_vk<name>, filled from the next entity's
 * vkGetInstanceProcAddr / vkGetDeviceProcAddr (NULL where it has none). A
 * function that is hooked appears in a *_HOOKS list: layer_hooks.c (device)
 * or layer_instance.c (instance) defines gt_<name> for it. Functions the
 * layer only calls (the timing code's queries, fences…) go in a *_CALLS
 * list. Adding a function is one line here, plus a hook body if it is in a
 * *_HOOKS list.
 *
 * The dispatch rules (docs/layer.md, "Dispatch rules"):
 * - vkGetDeviceProcAddr hands out a hook only when the next entity's table
 *   entry for that device is non-NULL, and never a command of an extension
 *   the layer enabled for itself that the application did not ask for;
 * - vkGetInstanceProcAddr hands out a device-level hook when the next
 *   entity's vkGetInstanceProcAddr is non-NULL for the name, which says
 *   nothing about a given device: so every device-level hook checks its
 *   device's table entry and, when it is NULL, does what the driver does
 *   for a command that was not enabled: nothing (see layer_hooks.c).
 */
#ifndef GPUTRACE_LAYER_DISPATCH_H
#define GPUTRACE_LAYER_DISPATCH_H

#include <vulkan/vulkan.h>

/* Instance-level functions layer_instance.c intercepts. vkCreateInstance,
 * vkCreateDevice and the vkGet*ProcAddr are not here: they are reached
 * through the loader's link info, not through a table.
 *
 * Every list comes in two parts. *_REQUIRED: Vulkan 1.0 core, which any
 * working next entity has; the layer's own code may call them without a
 * check, and an instance or device whose next entity lacks one of them is
 * passed through untouched (layer_instance.c, layer_device.c). *_OPTIONAL: newer core or
 * extension functions, NULL wherever the instance or device did not enable
 * them; every use checks. */
#define GT_INSTANCE_HOOKS_REQUIRED(X) \
    X(DestroyInstance)                \
    X(EnumeratePhysicalDevices)       \
    X(EnumerateDeviceExtensionProperties)

#define GT_INSTANCE_HOOKS_OPTIONAL(X)   \
    X(EnumeratePhysicalDeviceGroups)    \
    X(EnumeratePhysicalDeviceGroupsKHR) \
    X(GetPhysicalDeviceToolProperties)  \
    X(GetPhysicalDeviceToolPropertiesEXT)

#define GT_INSTANCE_CALLS_REQUIRED(X)         \
    X(GetPhysicalDeviceProperties)            \
    X(GetPhysicalDeviceQueueFamilyProperties) \
    X(GetPhysicalDeviceMemoryProperties)

#define GT_INSTANCE_CALLS_OPTIONAL(X)        \
    X(GetPhysicalDeviceProperties2)          \
    X(GetPhysicalDeviceProperties2KHR)       \
    X(GetPhysicalDeviceMemoryProperties2)    \
    X(GetPhysicalDeviceMemoryProperties2KHR) \
    X(GetPhysicalDeviceCalibrateableTimeDomainsEXT)

/* Frames (layer/frames/, layer_frame_boundary.h): the feature query that
 * answers VK_EXT_frame_boundary's feature where the layer provides it.
 * Optional like the list above. */
#define GT_INSTANCE_HOOKS_FRAMES(X) \
    X(GetPhysicalDeviceFeatures2)   \
    X(GetPhysicalDeviceFeatures2KHR)

#define GT_INSTANCE_HOOKS(X) \
    GT_INSTANCE_HOOKS_REQUIRED(X) GT_INSTANCE_HOOKS_OPTIONAL(X) GT_INSTANCE_HOOKS_FRAMES(X)
#define GT_INSTANCE_CALLS(X) GT_INSTANCE_CALLS_REQUIRED(X) GT_INSTANCE_CALLS_OPTIONAL(X)

/* Device-level functions layer_hooks.c intercepts: the timeline's hook
 * points (GT_DEVICE_HOOKS: these and GT_OBJECT_HOOKS below). vkDestroyDevice (layer_device.c) and vkGetDeviceProcAddr
 * (layer_interface.c) are always returned. */
#define GT_DEVICE_HOOKS_REQUIRED(X) \
    X(GetDeviceQueue)               \
    X(QueueSubmit)                  \
    X(QueueWaitIdle)                \
    X(DeviceWaitIdle)               \
    X(CreateCommandPool)            \
    X(DestroyCommandPool)           \
    X(ResetCommandPool)             \
    X(AllocateCommandBuffers)       \
    X(FreeCommandBuffers)           \
    X(BeginCommandBuffer)           \
    X(EndCommandBuffer)             \
    X(ResetCommandBuffer)           \
    X(CreateRenderPass)             \
    X(DestroyRenderPass)            \
    X(CreateImageView)              \
    X(DestroyImageView)             \
    X(CmdBeginRenderPass)           \
    X(CmdNextSubpass)               \
    X(CmdEndRenderPass)             \
    X(CmdDispatch)                  \
    X(CmdDispatchIndirect)          \
    X(CmdCopyBuffer)                \
    X(CmdCopyImage)                 \
    X(CmdCopyBufferToImage)         \
    X(CmdCopyImageToBuffer)         \
    X(CmdBlitImage)                 \
    X(CmdClearColorImage)           \
    X(CmdClearDepthStencilImage)    \
    X(CmdClearAttachments)          \
    X(CmdResolveImage)              \
    X(CmdFillBuffer)                \
    X(CmdUpdateBuffer)              \
    X(CmdExecuteCommands)           \
    X(CmdPipelineBarrier)           \
    X(CmdBindPipeline)              \
    X(CmdDraw)                      \
    X(CmdDrawIndexed)               \
    X(CmdDrawIndirect)              \
    X(CmdDrawIndexedIndirect)

/* Debug-utils commands belong to an instance extension but dispatch on
 * devices: the loader answers them through vkGetInstanceProcAddr for every
 * instance, enabled or not, while the device-level lookup answers NULL
 * unless the instance enabled VK_EXT_debug_utils. */
#define GT_DEVICE_HOOKS_OPTIONAL(X)   \
    X(GetDeviceQueue2)                \
    X(QueueSubmit2)                   \
    X(QueueSubmit2KHR)                \
    X(CreateRenderPass2)              \
    X(CreateRenderPass2KHR)           \
    X(CmdBeginRenderPass2)            \
    X(CmdNextSubpass2)                \
    X(CmdEndRenderPass2)              \
    X(CmdBeginRenderPass2KHR)         \
    X(CmdNextSubpass2KHR)             \
    X(CmdEndRenderPass2KHR)           \
    X(CmdBeginRendering)              \
    X(CmdEndRendering)                \
    X(CmdBeginRenderingKHR)           \
    X(CmdEndRenderingKHR)             \
    X(CmdDispatchBase)                \
    X(CmdDispatchBaseKHR)             \
    X(CmdCopyBuffer2)                 \
    X(CmdCopyImage2)                  \
    X(CmdCopyBufferToImage2)          \
    X(CmdCopyImageToBuffer2)          \
    X(CmdCopyBuffer2KHR)              \
    X(CmdCopyImage2KHR)               \
    X(CmdCopyBufferToImage2KHR)       \
    X(CmdCopyImageToBuffer2KHR)       \
    X(CmdBlitImage2)                  \
    X(CmdBlitImage2KHR)               \
    X(CmdResolveImage2)               \
    X(CmdResolveImage2KHR)            \
    X(CmdPipelineBarrier2)            \
    X(CmdPipelineBarrier2KHR)         \
    X(CmdBeginDebugUtilsLabelEXT)     \
    X(CmdEndDebugUtilsLabelEXT)       \
    X(SetDebugUtilsObjectNameEXT)     \
    X(DebugMarkerSetObjectNameEXT)    \
    X(CmdInsertDebugUtilsLabelEXT)    \
    X(CmdDrawIndirectCount)           \
    X(CmdDrawIndexedIndirectCount)    \
    X(CmdDrawIndirectCountKHR)        \
    X(CmdDrawIndexedIndirectCountKHR) \
    X(CmdDrawMeshTasksEXT)            \
    X(CmdDrawMeshTasksIndirectEXT)    \
    X(CmdDrawMeshTasksIndirectCountEXT)

/* Device-level functions layer_hooks_objects.c intercepts: semaphores,
 * fences and host waits (flows), and memory, buffers and images (memory
 * events). vkGet*ProcAddr hand out the memory hooks only where a session
 * may ever want memory events (tl_memory_events_possible,
 * tl_device_tracks_memory); elsewhere the next entity's functions. */
#define GT_FLOW_HOOKS_REQUIRED(X) \
    X(WaitForFences)              \
    X(DestroyFence)               \
    X(CreateSemaphore)            \
    X(DestroySemaphore)

#define GT_FLOW_HOOKS_OPTIONAL(X) \
    X(WaitSemaphores)             \
    X(WaitSemaphoresKHR)          \
    X(SignalSemaphore)            \
    X(SignalSemaphoreKHR)

#define GT_MEMORY_HOOKS_REQUIRED(X) \
    X(AllocateMemory)               \
    X(FreeMemory)                   \
    X(MapMemory)                    \
    X(UnmapMemory)                  \
    X(CreateBuffer)                 \
    X(DestroyBuffer)                \
    X(CreateImage)                  \
    X(DestroyImage)                 \
    X(BindBufferMemory)             \
    X(BindImageMemory)

#define GT_MEMORY_HOOKS_OPTIONAL(X) \
    X(BindBufferMemory2)            \
    X(BindBufferMemory2KHR)         \
    X(BindImageMemory2)             \
    X(BindImageMemory2KHR)

#define GT_OBJECT_HOOKS_REQUIRED(X) GT_FLOW_HOOKS_REQUIRED(X) GT_MEMORY_HOOKS_REQUIRED(X)
#define GT_OBJECT_HOOKS_OPTIONAL(X) GT_FLOW_HOOKS_OPTIONAL(X) GT_MEMORY_HOOKS_OPTIONAL(X)
#define GT_FLOW_HOOKS(X)            GT_FLOW_HOOKS_REQUIRED(X) GT_FLOW_HOOKS_OPTIONAL(X)
#define GT_MEMORY_HOOKS(X)          GT_MEMORY_HOOKS_REQUIRED(X) GT_MEMORY_HOOKS_OPTIONAL(X)

/* Frames (layer/frames/): swapchains and presents end frames; sparse
 * binding only matters for its VK_EXT_frame_boundary structures.
 * Optional: checked at every use like the list above. */
#define GT_DEVICE_HOOKS_FRAMES(X) \
    X(QueuePresentKHR)            \
    X(CreateSwapchainKHR)         \
    X(DestroySwapchainKHR)        \
    X(QueueBindSparse)

/* Device-level functions the layer (and the timing code) calls on its own
 * behalf. */
#define GT_DEVICE_CALLS_REQUIRED(X) \
    X(DestroyDevice)                \
    X(CreateQueryPool)              \
    X(DestroyQueryPool)             \
    X(GetQueryPoolResults)          \
    X(CmdResetQueryPool)            \
    X(CmdWriteTimestamp)            \
    X(CreateFence)                  \
    X(ResetFences)                  \
    X(GetFenceStatus)               \
    X(GetBufferMemoryRequirements)  \
    X(GetImageMemoryRequirements)   \
    X(CmdCopyQueryPoolResults)      \
    X(FlushMappedMemoryRanges)      \
    X(InvalidateMappedMemoryRanges)

#define GT_DEVICE_CALLS_OPTIONAL(X)   \
    X(ResetQueryPool)                 \
    X(ResetQueryPoolEXT)              \
    X(CmdWriteTimestamp2)             \
    X(CmdWriteTimestamp2KHR)          \
    X(GetCalibratedTimestampsEXT)     \
    X(GetImageMemoryRequirements2)    \
    X(GetImageMemoryRequirements2KHR) \
    X(GetSemaphoreCounterValue)       \
    X(GetSemaphoreCounterValueKHR)

#define GT_DEVICE_COMMAND_HOOKS(X) \
    GT_DEVICE_HOOKS_REQUIRED(X) GT_DEVICE_HOOKS_OPTIONAL(X) GT_DEVICE_HOOKS_FRAMES(X)
#define GT_OBJECT_HOOKS(X) GT_OBJECT_HOOKS_REQUIRED(X) GT_OBJECT_HOOKS_OPTIONAL(X)
#define GT_DEVICE_HOOKS(X) GT_DEVICE_COMMAND_HOOKS(X) GT_OBJECT_HOOKS(X)
#define GT_DEVICE_CALLS(X) GT_DEVICE_CALLS_REQUIRED(X) GT_DEVICE_CALLS_OPTIONAL(X)

#define GT_DISPATCH_MEMBER(name) PFN_vk##name name;

typedef struct gt_instance_dispatch gt_instance_dispatch;
struct gt_instance_dispatch {
    GT_INSTANCE_HOOKS(GT_DISPATCH_MEMBER)
    GT_INSTANCE_CALLS(GT_DISPATCH_MEMBER)
};

typedef struct gt_device_dispatch gt_device_dispatch;
struct gt_device_dispatch {
    GT_DEVICE_HOOKS(GT_DISPATCH_MEMBER)
    GT_DEVICE_CALLS(GT_DISPATCH_MEMBER)
};

/* One intercepted entry point: what vkGet*ProcAddr returns for name, and
 * where the next entity's pointer for the same name sits in the table. */
typedef struct gt_hook gt_hook;
struct gt_hook {
    const char *name;
    PFN_vkVoidFunction fn;
    size_t next_offset;
};

/* The next entity's pointer for a hook, read from a dispatch table. */
static inline PFN_vkVoidFunction gt_hook_next(const void *table, const gt_hook *hook)
{
    return *(const PFN_vkVoidFunction *)(const void *)((const char *)table + hook->next_offset);
}

#endif
