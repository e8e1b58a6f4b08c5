/* SPDX-License-Identifier: MIT */
/* timeline.h — the hook points the loader plumbing calls for the timing
 * feature.
 *
 * This header is the one joint between the loader plumbing and the
 * feature: layer_instance.c, layer_device.c and layer_hooks.c call down the
 * chain and call these around it; timeline_entry.c and timeline_device.c
 * implement them (flows/flow_entry.c and memory/mem_entry.c those of
 * cause and effect and of memory). The feature calls nothing in the plumbing files (the
 * layer-deps test holds it to that): what it needs from the plumbing
 * arrives as data in gt_instance / gt_device (objects.h). Nothing here is
 * called when the layer is disabled (GPUTRACE_DISABLE=1).
 *
 * Conventions:
 * - Every callback gets the gt_device (or gt_instance) the handle belongs
 *   to, so implementations never need to look up a dispatch key. In
 *   particular the dispatch key of a freshly returned VkQueue or
 *   VkCommandBuffer is only written by the loader after the layer returns;
 *   do not dereference those handles in the *_acquired/_allocated calls.
 * - *_pre runs before the call down, *_post after it (with its result where
 *   there is one). Callbacks about something going away run before the call
 *   down, callbacks about something new run after it succeeded.
 * - The callbacks run on the application's thread, under whatever external
 *   synchronisation Vulkan already requires for that call (e.g. the command
 *   pool of a command buffer, the queue of a submit). They must not take
 *   locks that another callback may hold while calling down.
 * - To issue its own Vulkan calls, the timing code uses dev->vk (the next
 *   entity's functions); command buffers it allocates for itself are made
 *   dispatchable with dev->set_loader_data (timeline_query.c).
 */
#ifndef GPUTRACE_LAYER_TIMELINE_H
#define GPUTRACE_LAYER_TIMELINE_H

#include <stdbool.h>

#include <vulkan/vulkan.h>

typedef struct gt_instance gt_instance;
typedef struct gt_device gt_device;

/* Lifetime. An init failure makes vkCreate* fail (after the created
 * object was destroyed again); finish runs before the call down to
 * vkDestroy*, so the device can still be used to drain pending work. */
VkResult tl_instance_init(gt_instance *inst);
void tl_instance_finish(gt_instance *inst);
VkResult tl_device_init(gt_device *dev);
void tl_device_finish(gt_device *dev);

/* vkGetDeviceQueue / vkGetDeviceQueue2 returned this queue (possibly again). */
void tl_queue_acquired(gt_device *dev, VkQueue queue, uint32_t family, uint32_t index);

/* One queue submission; exactly one of submits / submits2 is set. */
typedef struct tl_submit tl_submit;
struct tl_submit {
    const char *api; /* "vkQueueSubmit", "vkQueueSubmit2" or "vkQueueSubmit2KHR" */
    uint32_t count;
    const VkSubmitInfo *submits;
    const VkSubmitInfo2 *submits2;
    VkFence fence;
};
void tl_queue_submit_pre(gt_device *dev, VkQueue queue, const tl_submit *submit);
void tl_queue_submit_post(gt_device *dev, VkQueue queue, const tl_submit *submit, VkResult result);

/* Host waits (vkWaitForFences, vkWaitSemaphores(KHR), vkQueueWaitIdle,
 * vkDeviceWaitIdle): tl_wait_begin before the call down gives CLOCK_BOOTTIME
 * while a session traces and the frame is inside GPUTRACE_FRAMES, else 0;
 * after the call returned (`result`) the matching call below gets it, and
 * does nothing for 0. The wait becomes a slice on the calling thread naming
 * the GPU work it waited for. */
uint64_t tl_wait_begin(gt_device *dev);
void tl_fences_waited(gt_device *dev, uint64_t begin, uint32_t count, const VkFence *fences,
                      VkBool32 wait_all, uint64_t timeout, VkResult result);
void tl_semaphores_waited(gt_device *dev, uint64_t begin, const char *api,
                          const VkSemaphoreWaitInfo *info, uint64_t timeout, VkResult result);
/* Frames (layer/frames/, docs/layer.md "Frames"). Called whether a session
 * traces or not: frames are numbered from the program's first
 * (GPUTRACE_FRAMES). A swapchain was created (after the call succeeded) or
 * is about to be destroyed; vkQueuePresentKHR is about to present (every
 * present ends a frame of each swapchain it presents, and a
 * VkFrameBoundaryEXT in its chain one of the frame-boundary stream);
 * vkQueueBindSparse succeeded on a device with VK_EXT_frame_boundary
 * enabled (only its frame boundaries matter). A submission's frame
 * boundaries are seen in tl_queue_submit_post. */
void tl_swapchain_created(gt_device *dev, VkSwapchainKHR swapchain,
                          const VkSwapchainCreateInfoKHR *info);
void tl_swapchain_destroy(gt_device *dev, VkSwapchainKHR swapchain);
void tl_queue_present(gt_device *dev, VkQueue queue, const VkPresentInfoKHR *info);
void tl_queue_bind_sparse(gt_device *dev, VkQueue queue, uint32_t count,
                          const VkBindSparseInfo *infos);

/* All work on the queue / device completed (the calls succeeded): a point
 * where results can be collected without waiting. */
void tl_queue_idle(gt_device *dev, uint64_t begin, VkQueue queue);
void tl_device_idle(gt_device *dev, uint64_t begin);

/* Semaphores and fences, whose signals flows follow: created (after the
 * call succeeded) and about to be destroyed, tracing or not (a semaphore's
 * type is told only at its creation); vkSignalSemaphore(KHR) succeeded. */
void tl_semaphore_created(gt_device *dev, VkSemaphore semaphore, const VkSemaphoreCreateInfo *info);
void tl_semaphore_destroy(gt_device *dev, VkSemaphore semaphore);
void tl_semaphore_signaled(gt_device *dev, const VkSemaphoreSignalInfo *info);
void tl_fence_destroy(gt_device *dev, VkFence fence);

/* Whether memory events can ever be wanted in this process (false: the
 * embedded backend without GPUTRACE_MEMORY, or GPUTRACE_BACKEND=none), and
 * whether this device's memory is tracked (that, and its table could be
 * made). Where not, the plumbing hands out the next entity's memory
 * functions instead of the hooks below; both answers are fixed for the
 * process / the device's life. */
bool tl_memory_events_possible(void);
bool tl_device_tracks_memory(gt_device *dev);

/* Device memory, buffers and images (memory/mem_entry.c): after a
 * successful allocation, creation, bind or map; before a free, destroy or
 * unmap (the handle may be VK_NULL_HANDLE, then nothing happens). Called
 * tracing or not: the layer keeps the objects alive so that a session
 * starting later first gets them. `api` names the entry point. On a device
 * whose memory is not tracked they do nothing. */
void tl_memory_allocated(gt_device *dev, VkDeviceMemory memory, const VkMemoryAllocateInfo *info);
void tl_memory_free(gt_device *dev, VkDeviceMemory memory);
void tl_memory_mapped(gt_device *dev, VkDeviceMemory memory, VkDeviceSize offset,
                      VkDeviceSize size);
void tl_memory_unmap(gt_device *dev, VkDeviceMemory memory);
void tl_buffer_created(gt_device *dev, VkBuffer buffer, const VkBufferCreateInfo *info);
void tl_buffer_destroy(gt_device *dev, VkBuffer buffer);
void tl_image_created(gt_device *dev, VkImage image, const VkImageCreateInfo *info);
void tl_image_destroy(gt_device *dev, VkImage image);
/* Binds: the *2 forms' arrays (one call each), all of which succeeded. */
void tl_buffers_bound(gt_device *dev, const char *api, uint32_t count,
                      const VkBindBufferMemoryInfo *infos);
void tl_images_bound(gt_device *dev, const char *api, uint32_t count,
                     const VkBindImageMemoryInfo *infos);

/* Command pools and buffers. Destroying or resetting a pool implicitly
 * frees / resets all of its command buffers. */
void tl_command_pool_created(gt_device *dev, VkCommandPool pool,
                             const VkCommandPoolCreateInfo *info);
void tl_command_pool_destroy(gt_device *dev, VkCommandPool pool);
void tl_command_pool_reset(gt_device *dev, VkCommandPool pool, VkCommandPoolResetFlags flags);
void tl_command_buffers_allocated(gt_device *dev, const VkCommandBufferAllocateInfo *info,
                                  const VkCommandBuffer *buffers);
void tl_command_buffers_free(gt_device *dev, VkCommandPool pool, uint32_t count,
                             const VkCommandBuffer *buffers);
void tl_command_buffer_reset(gt_device *dev, VkCommandBuffer cb, VkCommandBufferResetFlags flags);

/* Render passes: created (after the call succeeded; exactly one of info /
 * info2 is set) and about to be destroyed. Called whether a session traces
 * or not: render passes are usually created long before tracing starts. */
void tl_render_pass_created(gt_device *dev, VkRenderPass rp, const VkRenderPassCreateInfo *info,
                            const VkRenderPassCreateInfo2 *info2);
void tl_render_pass_destroy(gt_device *dev, VkRenderPass rp);

/* vkSetDebugUtilsObjectNameEXT / vkDebugMarkerSetObjectNameEXT (the
 * latter's object type is mapped to a VkObjectType; one with no such
 * counterpart is ignored): `name` NULL or empty removes the object's name. Called before the call down, tracing or not: objects are
 * usually named long before tracing starts. */
void tl_object_named(gt_device *dev, VkObjectType type, uint64_t handle, const char *name);
void tl_object_marker_named(gt_device *dev, VkDebugReportObjectTypeEXT type, uint64_t handle,
                            const char *name);

/* After a successful vkBeginCommandBuffer (which may be an implicit reset),
 * and before vkEndCommandBuffer: the first and last places where the
 * timing code can record into the command buffer. */
void tl_cmd_begin(gt_device *dev, VkCommandBuffer cb, const VkCommandBufferBeginInfo *info);
void tl_cmd_end(gt_device *dev, VkCommandBuffer cb);

/* Recorded commands the timing measures. BEGIN_* / END_* bracket a region
 * spanning several commands; the others are regions of one command. */
enum tl_cmd_kind {
    TL_CMD_BEGIN_RENDER_PASS, /* vkCmdBeginRenderPass, …2, …2KHR */
    TL_CMD_NEXT_SUBPASS,      /* vkCmdNextSubpass, …2, …2KHR: not a region */
    TL_CMD_END_RENDER_PASS,
    TL_CMD_BEGIN_RENDERING, /* vkCmdBeginRendering, …KHR */
    TL_CMD_END_RENDERING,
    TL_CMD_BEGIN_LABEL, /* vkCmdBeginDebugUtilsLabelEXT */
    TL_CMD_END_LABEL,
    TL_CMD_INSERT_LABEL, /* a point, not a region */
    TL_CMD_DISPATCH,     /* vkCmdDispatch, …Indirect, …Base(KHR) */
    TL_CMD_COPY,         /* buffer/image copies, 1 and 2 */
    TL_CMD_BLIT,
    TL_CMD_RESOLVE,
    TL_CMD_CLEAR, /* color/depth-stencil image, attachments */
    TL_CMD_FILL,
    TL_CMD_UPDATE,
    TL_CMD_EXECUTE_COMMANDS,
    TL_CMD_BARRIER, /* vkCmdPipelineBarrier, …2, …2KHR: not a region */
};

/* The shapes of a transfer command's parameters (tl_cmd.u.transfer): what
 * tl_cmd.u.transfer.data points to, read only when the command is timed. */
enum tl_xfer_form {
    TL_XFER_NONE,
    TL_XFER_BUFFER_COPY,       /* count VkBufferCopy */
    TL_XFER_BUFFER_COPY2,      /* VkCopyBufferInfo2 */
    TL_XFER_IMAGE_COPY,        /* count VkImageCopy */
    TL_XFER_IMAGE_COPY2,       /* VkCopyImageInfo2 */
    TL_XFER_BUFFER_IMAGE,      /* count VkBufferImageCopy (either direction) */
    TL_XFER_BUFFER_TO_IMAGE2,  /* VkCopyBufferToImageInfo2 */
    TL_XFER_IMAGE_TO_BUFFER2,  /* VkCopyImageToBufferInfo2 */
    TL_XFER_BLIT,              /* count VkImageBlit */
    TL_XFER_BLIT2,             /* VkBlitImageInfo2 */
    TL_XFER_RESOLVE,           /* count VkImageResolve */
    TL_XFER_RESOLVE2,          /* VkResolveImageInfo2 */
    TL_XFER_CLEAR_IMAGE,       /* count subresource ranges */
    TL_XFER_CLEAR_ATTACHMENTS, /* count attachments, size rectangles */
    TL_XFER_FILL,              /* size bytes (VK_WHOLE_SIZE: the rest of the buffer) */
    TL_XFER_UPDATE,            /* size bytes */
};

/* Contents not known (a NULL VkSubpassBeginInfo): nothing is timed there. */
#define TL_SUBPASS_CONTENTS_UNKNOWN VK_SUBPASS_CONTENTS_MAX_ENUM

typedef struct tl_cmd tl_cmd;
struct tl_cmd {
    enum tl_cmd_kind kind;
    const char *api; /* the entry point, e.g. "vkCmdDispatchIndirect" */
    union {
        struct {
            const VkRenderPassBeginInfo *info;
            VkSubpassContents contents;
        } render_pass;                     /* BEGIN_RENDER_PASS */
        VkSubpassContents contents;        /* NEXT_SUBPASS */
        const VkRenderingInfo *rendering;  /* BEGIN_RENDERING */
        const VkDebugUtilsLabelEXT *label; /* BEGIN_LABEL, INSERT_LABEL */
        struct {
            uint32_t count;
            const VkCommandBuffer *buffers;
        } execute; /* EXECUTE_COMMANDS */
        struct {
            uint32_t x, y, z; /* group counts; 0 for the indirect form */
            uint32_t base_x, base_y, base_z;
            VkBuffer buffer; /* vkCmdDispatchIndirect, else VK_NULL_HANDLE */
            VkDeviceSize offset;
        } dispatch; /* DISPATCH */
        struct {
            enum tl_xfer_form form;
            uint32_t count;
            const void *data;
            VkDeviceSize size;
        } transfer; /* COPY, BLIT, RESOLVE, CLEAR, FILL, UPDATE */
    } u;
};
void tl_cmd_pre(gt_device *dev, VkCommandBuffer cb, const tl_cmd *cmd);
void tl_cmd_post(gt_device *dev, VkCommandBuffer cb, const tl_cmd *cmd);

/* Commands that are no region but describe the ones that are (stage
 * arguments, docs/layer.md): a draw of any kind is counted, a bound
 * pipeline remembered. Called before the call down, cheap when tracing and
 * one atomic load when not. */
void tl_cmd_draw(gt_device *dev, VkCommandBuffer cb);
void tl_cmd_bind_pipeline(gt_device *dev, VkCommandBuffer cb, VkPipelineBindPoint point,
                          VkPipeline pipeline);

/* Image views: created (after the call succeeded) and about to be
 * destroyed; their formats name dynamic rendering's attachments. Called
 * whether a session traces or not, like render passes. */
void tl_image_view_created(gt_device *dev, VkImageView view, const VkImageViewCreateInfo *info);
void tl_image_view_destroy(gt_device *dev, VkImageView view);

#endif
