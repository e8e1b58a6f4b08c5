/* layer_dispatch.h — the Vulkan functions the layer calls down to, as X-macro
 * lists, and the dispatch tables built from them.
 *
 * Each entry is the name without the "vk" prefix; the table member has that
 * name and type PFN_vk<name>. A function that is hooked appears in a *_HOOKS
 * list: layer_hooks.c defines gt_<name> for it and vkGet*ProcAddr hands that
 * out, but only when the next entity in the chain returns non-NULL for the
 * same name (an extension the application did not enable stays invisible).
 * Functions the layer only calls (the timing code's queries, fences…) go in a
 * *_CALLS list. Adding a function is one line here, plus a hook body if it is
 * in a *_HOOKS list.
 */
#ifndef GPUTRACE_LAYER_DISPATCH_H
#define GPUTRACE_LAYER_DISPATCH_H

#include <vulkan/vulkan.h>

/* Instance-level functions layer_interface.c intercepts. vkCreateInstance,
 * vkCreateDevice and the vkGet*ProcAddr are not here: they are reached
 * through the loader's link info, not through a table. */
#define GT_INSTANCE_HOOKS(X)                \
   X(DestroyInstance)                       \
   X(EnumeratePhysicalDevices)              \
   X(EnumeratePhysicalDeviceGroups)         \
   X(EnumeratePhysicalDeviceGroupsKHR)      \
   X(EnumerateDeviceExtensionProperties)

#define GT_INSTANCE_CALLS(X)                     \
   X(GetPhysicalDeviceProperties)                \
   X(GetPhysicalDeviceProperties2)               \
   X(GetPhysicalDeviceProperties2KHR)            \
   X(GetPhysicalDeviceQueueFamilyProperties)     \
   X(GetPhysicalDeviceFeatures2)                 \
   X(GetPhysicalDeviceFeatures2KHR)              \
   X(GetPhysicalDeviceCalibrateableTimeDomainsEXT) \
   X(GetPhysicalDeviceMemoryProperties)

/* Device-level functions layer_hooks.c intercepts: the timeline's hook
 * points. vkDestroyDevice and vkGetDeviceProcAddr are handled in
 * layer_interface.c and always returned. */
#define GT_DEVICE_HOOKS(X)              \
   X(GetDeviceQueue)                    \
   X(GetDeviceQueue2)                   \
   X(QueueSubmit)                       \
   X(QueueSubmit2)                      \
   X(QueueSubmit2KHR)                   \
   X(QueueWaitIdle)                     \
   X(DeviceWaitIdle)                    \
   X(CreateCommandPool)                 \
   X(DestroyCommandPool)                \
   X(ResetCommandPool)                  \
   X(AllocateCommandBuffers)            \
   X(FreeCommandBuffers)                \
   X(BeginCommandBuffer)                \
   X(EndCommandBuffer)                  \
   X(ResetCommandBuffer)                \
   X(CreateRenderPass)                  \
   X(CreateRenderPass2)                 \
   X(CreateRenderPass2KHR)              \
   X(DestroyRenderPass)                 \
   X(CmdBeginRenderPass)                \
   X(CmdNextSubpass)                    \
   X(CmdEndRenderPass)                  \
   X(CmdBeginRenderPass2)               \
   X(CmdNextSubpass2)                   \
   X(CmdEndRenderPass2)                 \
   X(CmdBeginRenderPass2KHR)            \
   X(CmdNextSubpass2KHR)                \
   X(CmdEndRenderPass2KHR)              \
   X(CmdBeginRendering)                 \
   X(CmdEndRendering)                   \
   X(CmdBeginRenderingKHR)              \
   X(CmdEndRenderingKHR)                \
   X(CmdDispatch)                       \
   X(CmdDispatchIndirect)               \
   X(CmdDispatchBase)                   \
   X(CmdDispatchBaseKHR)                \
   X(CmdCopyBuffer)                     \
   X(CmdCopyImage)                      \
   X(CmdCopyBufferToImage)              \
   X(CmdCopyImageToBuffer)              \
   X(CmdCopyBuffer2)                    \
   X(CmdCopyImage2)                     \
   X(CmdCopyBufferToImage2)             \
   X(CmdCopyImageToBuffer2)             \
   X(CmdCopyBuffer2KHR)                 \
   X(CmdCopyImage2KHR)                  \
   X(CmdCopyBufferToImage2KHR)          \
   X(CmdCopyImageToBuffer2KHR)          \
   X(CmdBlitImage)                      \
   X(CmdBlitImage2)                     \
   X(CmdBlitImage2KHR)                  \
   X(CmdClearColorImage)                \
   X(CmdClearDepthStencilImage)         \
   X(CmdClearAttachments)               \
   X(CmdResolveImage)                   \
   X(CmdResolveImage2)                  \
   X(CmdResolveImage2KHR)               \
   X(CmdFillBuffer)                     \
   X(CmdUpdateBuffer)                   \
   X(CmdExecuteCommands)                \
   X(CmdPipelineBarrier)                \
   X(CmdPipelineBarrier2)               \
   X(CmdPipelineBarrier2KHR)            \
   X(CmdBeginDebugUtilsLabelEXT)        \
   X(CmdEndDebugUtilsLabelEXT)          \
   X(CmdInsertDebugUtilsLabelEXT)

/* Device-level functions the layer (and later the timing code) calls on its
 * own behalf. */
#define GT_DEVICE_CALLS(X)              \
   X(DestroyDevice)                     \
   X(CreateQueryPool)                   \
   X(DestroyQueryPool)                  \
   X(ResetQueryPool)                    \
   X(ResetQueryPoolEXT)                 \
   X(GetQueryPoolResults)               \
   X(CmdResetQueryPool)                 \
   X(CmdWriteTimestamp)                 \
   X(CmdWriteTimestamp2)                \
   X(CmdWriteTimestamp2KHR)             \
   X(GetCalibratedTimestampsEXT)        \
   X(CreateFence)                       \
   X(DestroyFence)                      \
   X(WaitForFences)                     \
   X(ResetFences)                       \
   X(GetFenceStatus)                    \
   X(CreateBuffer)                      \
   X(DestroyBuffer)                     \
   X(GetBufferMemoryRequirements)       \
   X(AllocateMemory)                    \
   X(FreeMemory)                        \
   X(BindBufferMemory)                  \
   X(MapMemory)                         \
   X(CmdCopyQueryPoolResults)           \
   X(FlushMappedMemoryRanges)           \
   X(InvalidateMappedMemoryRanges)

#define GT_DISPATCH_MEMBER(name) PFN_vk##name name;

struct gt_instance_dispatch {
   GT_INSTANCE_HOOKS(GT_DISPATCH_MEMBER)
   GT_INSTANCE_CALLS(GT_DISPATCH_MEMBER)
};

struct gt_device_dispatch {
   GT_DEVICE_HOOKS(GT_DISPATCH_MEMBER)
   GT_DEVICE_CALLS(GT_DISPATCH_MEMBER)
};

/* One intercepted entry point: what vkGet*ProcAddr returns for name, and
 * where the next entity's pointer for the same name sits in the table. */
struct gt_hook {
   const char *name;
   PFN_vkVoidFunction fn;
   size_t next_offset;
};

/* The next entity's pointer for a hook, read from a dispatch table. */
static inline PFN_vkVoidFunction
gt_hook_next(const void *table, const struct gt_hook *hook)
{
   return *(const PFN_vkVoidFunction *)(const void *)((const char *)table + hook->next_offset);
}

/* Defined in layer_hooks.c: the hook for a device-level name, or NULL. */
const struct gt_hook *gt_device_hook_find(const char *name);

#endif
