/* SPDX-License-Identifier: MIT */
/* timeline_cases — submission patterns the workload does not exercise, for
 * testing VK_LAYER_GPUTRACE_timeline's timing on lavapipe:
 *
 *   resubmit      one recording submitted 4 times (waiting each time, then
 *                 re-submitting at once: the layer must read the previous
 *                 execution before its queries are reused)
 *   secondary     a primary executing a secondary (outside any render
 *                 pass) that holds a label and a fill, submitted twice
 *   execute first a primary starting with vkCmdExecuteCommands (an empty
 *                 secondary, then one starting with a label)
 *   simultaneous  a SIMULTANEOUS_USE command buffer pending twice at once
 *                 (no per-region timing: one "Submission" event each)
 *   batches       one vkQueueSubmit with two VkSubmitInfo
 *   render pass   a classic render pass (one inline subpass) with nested
 *                 labels and vkCmdClearAttachments inside, and a label
 *                 begun outside it and ended inside (not a region)
 *   subpasses     three subpasses: inline, secondary contents (executing a
 *                 secondary that continues the render pass, with a label
 *                 and a clear), inline; a label spanning all three
 *   multiview     a VkRenderPassMultiviewCreateInfo render pass (two views,
 *                 two subpasses): a label and clears inside, and a label
 *                 spanning the two subpasses (not a region: multiview
 *                 timestamps compare only within a subpass)
 *   render pass 2 vkCreateRenderPass2 with VkSubpassDescription2::viewMask,
 *                 vkCmdBeginRenderPass2 / NextSubpass2 / EndRenderPass2;
 *                 the second (two-view) subpass is a secondary continuing
 *                 the render pass (a label and a clear)
 *   suspend       dynamic rendering suspended and resumed across three
 *                 command buffers of one batch (labels and clears inside),
 *                 submitted twice with vkQueueSubmit; and across two with
 *                 vkQueueSubmit2. Vulkan requires the suspension and its
 *                 resumption in the same batch (VUID-VkSubmitInfo-
 *                 pCommandBuffers-06014/06193), so there is no case with
 *                 them in separate submissions.
 *   second device a second VkDevice (its own clock id and sequence)
 *
 * Prints "timeline_cases: events=E submission_events=S devices=D": the
 * render stage events the layer should write, and "timeline_cases: checks:
 * ARGS" with trace_check options (--expect-name, --expect-within) for the
 * labels of the render pass cases. What the layer can time depends on host
 * query reset (without it, no new query chunk inside render pass
 * instances), which this program reads from GPUTRACE_HOST_QUERY_RESET like
 * the layer does. --validate enables the Khronos validation layer with
 * synchronization validation and fails on any error; --no-destroy exits
 * without destroying anything (the layer must still finish its trace).
 * Exit 0 success, 1 failure, 2 usage.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <vulkan/vulkan.h>

#define PROG       "timeline_cases"
#define BUF_SIZE   65536u
#define TIMEOUT_NS (30ull * 1000 * 1000 * 1000)

static atomic_uint validation_errors;
static unsigned long events, submission_events;
static bool host_reset = true; /* as the layer is configured */
typedef struct dev dev;
static void run_one(dev *d, VkCommandBuffer cb, unsigned regions);
static void add_check(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char checks[4096]; /* trace_check options for the labels */

#define EXTENT 64u
#define FORMAT VK_FORMAT_R8G8B8A8_UNORM

struct dev {
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkBuffer a, b;
    VkDeviceMemory memory;
    VkFence fence;
    PFN_vkCmdBeginDebugUtilsLabelEXT begin_label;
    PFN_vkCmdEndDebugUtilsLabelEXT end_label;

    /* Render pass cases (first device only). */
    bool graphics, multiview, dynamic_rendering;
    VkImage image; /* 2 layers: multiview renders both */
    VkDeviceMemory image_memory;
    VkImageView view, view2; /* layer 0; both layers */
};

#define CHECK(call)                                                                        \
    do {                                                                                   \
        VkResult r_ = (call);                                                              \
        if (r_ != VK_SUCCESS) {                                                            \
            fprintf(stderr, PROG ": %s failed: %d (line %d)\n", #call, (int)r_, __LINE__); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)types, (void)user;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        atomic_fetch_add(&validation_errors, 1);
        fprintf(stderr, PROG ": validation error: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static void create_device(VkPhysicalDevice pd, uint32_t family, bool graphics, dev *d)
{
    memset(d, 0, sizeof *d);
    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    /* Multiview and dynamic rendering when the device has them. */
    VkPhysicalDeviceVulkan13Features have13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
    };
    VkPhysicalDeviceVulkan11Features have11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &have13,
    };
    VkPhysicalDeviceFeatures2 have = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &have11,
    };
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion >= VK_API_VERSION_1_3)
        vkGetPhysicalDeviceFeatures2(pd, &have);
    VkPhysicalDeviceVulkan13Features want13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .synchronization2 = have13.synchronization2,
        .dynamicRendering = have13.dynamicRendering,
    };
    VkPhysicalDeviceVulkan11Features want11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &want13,
        .multiview = have11.multiview,
    };
    d->graphics = graphics;
    d->multiview = graphics && have11.multiview;
    /* The suspension case submits with vkQueueSubmit2 too. */
    d->dynamic_rendering = graphics && have13.dynamicRendering && have13.synchronization2;
    const VkDeviceCreateInfo di = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = props.apiVersion >= VK_API_VERSION_1_3 ? &want11 : NULL,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi,
    };
    CHECK(vkCreateDevice(pd, &di, NULL, &d->device));
    vkGetDeviceQueue(d->device, family, 0, &d->queue);
    const VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = family,
    };
    CHECK(vkCreateCommandPool(d->device, &pi, NULL, &d->pool));
    const VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = BUF_SIZE,
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
    };
    CHECK(vkCreateBuffer(d->device, &bi, NULL, &d->a));
    CHECK(vkCreateBuffer(d->device, &bi, NULL, &d->b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, d->a, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint32_t type = 0;
    while (type < mp.memoryTypeCount && !(req.memoryTypeBits & (1u << type)))
        type++;
    VkDeviceSize stride = (req.size + req.alignment - 1) / req.alignment * req.alignment;
    const VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = 2 * stride,
        .memoryTypeIndex = type,
    };
    CHECK(vkAllocateMemory(d->device, &ai, NULL, &d->memory));
    CHECK(vkBindBufferMemory(d->device, d->a, d->memory, 0));
    CHECK(vkBindBufferMemory(d->device, d->b, d->memory, stride));
    const VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    CHECK(vkCreateFence(d->device, &fi, NULL, &d->fence));
    d->begin_label = (PFN_vkCmdBeginDebugUtilsLabelEXT)vkGetDeviceProcAddr(
        d->device, "vkCmdBeginDebugUtilsLabelEXT");
    d->end_label = (PFN_vkCmdEndDebugUtilsLabelEXT)vkGetDeviceProcAddr(
        d->device, "vkCmdEndDebugUtilsLabelEXT");
}

static void destroy_device(dev *d)
{
    vkDeviceWaitIdle(d->device);
    vkDestroyImageView(d->device, d->view, NULL);
    vkDestroyImageView(d->device, d->view2, NULL);
    vkDestroyImage(d->device, d->image, NULL);
    vkFreeMemory(d->device, d->image_memory, NULL);
    vkDestroyFence(d->device, d->fence, NULL);
    vkDestroyBuffer(d->device, d->a, NULL);
    vkDestroyBuffer(d->device, d->b, NULL);
    vkFreeMemory(d->device, d->memory, NULL);
    vkDestroyCommandPool(d->device, d->pool, NULL);
    vkDestroyDevice(d->device, NULL);
}

static VkCommandBuffer alloc_cb(dev *d, VkCommandBufferLevel level)
{
    VkCommandBuffer cb;
    const VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->pool,
        .level = level,
        .commandBufferCount = 1,
    };
    CHECK(vkAllocateCommandBuffers(d->device, &ai, &cb));
    return cb;
}

static void begin(VkCommandBuffer cb, VkCommandBufferUsageFlags flags, bool secondary)
{
    const VkCommandBufferInheritanceInfo inherit = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
    };
    const VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = flags,
        .pInheritanceInfo = secondary ? &inherit : NULL,
    };
    CHECK(vkBeginCommandBuffer(cb, &bi));
}

/* Orders this command buffer's transfers after everything before it on
 * the queue (earlier submissions included) and after each other. */
static void transfer_barrier(VkCommandBuffer cb)
{
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
    };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                         &mb, 0, NULL, 0, NULL);
}

static bool label(dev *d, VkCommandBuffer cb, const char *name)
{
    if (!d->begin_label)
        return false;
    const VkDebugUtilsLabelEXT l = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                     .pLabelName = name };
    d->begin_label(cb, &l);
    return true;
}

static void submit(dev *d, uint32_t count, const VkCommandBuffer *cbs, VkFence fence)
{
    const VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = count,
        .pCommandBuffers = cbs,
    };
    CHECK(vkQueueSubmit(d->queue, 1, &si, fence));
}

static void wait(dev *d)
{
    CHECK(vkWaitForFences(d->device, 1, &d->fence, VK_TRUE, TIMEOUT_NS));
    CHECK(vkResetFences(d->device, 1, &d->fence));
}

static void case_resubmit(dev *d)
{
    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    unsigned regions = 1;
    transfer_barrier(cb);
    bool labelled = label(d, cb, "reused");
    vkCmdFillBuffer(cb, d->a, 0, BUF_SIZE, 0x01020304);
    transfer_barrier(cb);
    const VkBufferCopy copy = { 0, 0, BUF_SIZE };
    vkCmdCopyBuffer(cb, d->a, d->b, 1, &copy);
    regions += 2;
    if (labelled) {
        d->end_label(cb);
        regions++;
    }
    CHECK(vkEndCommandBuffer(cb));
    for (int i = 0; i < 4; i++) {
        submit(d, 1, &cb, d->fence);
        wait(d);
        events += regions;
    }
}

static void case_secondary(dev *d)
{
    VkCommandBuffer sec = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_SECONDARY);
    begin(sec, 0, true);
    unsigned regions = 0;
    transfer_barrier(sec);
    bool labelled = label(d, sec, "in secondary");
    vkCmdFillBuffer(sec, d->b, 0, BUF_SIZE, 7);
    regions++;
    if (labelled) {
        d->end_label(sec);
        regions++;
    }
    CHECK(vkEndCommandBuffer(sec));

    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    regions++;
    transfer_barrier(cb);
    vkCmdFillBuffer(cb, d->a, 0, BUF_SIZE, 5);
    vkCmdExecuteCommands(cb, 1, &sec);
    transfer_barrier(cb);
    vkCmdFillBuffer(cb, d->a, 0, BUF_SIZE, 6);
    regions += 2;
    CHECK(vkEndCommandBuffer(cb));
    for (int i = 0; i < 2; i++) {
        submit(d, 1, &cb, d->fence);
        wait(d);
        events += regions;
    }
}

/* A primary whose first commands execute secondaries: an empty one (says
 * nothing about suspended rendering), then one starting with a label (an
 * action command: the primary's start can be written before it). */
static void case_execute_first(dev *d)
{
    VkCommandBuffer secs[2];
    for (int i = 0; i < 2; i++) {
        secs[i] = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_SECONDARY);
        begin(secs[i], 0, true);
    }
    unsigned regions = 1;
    bool labelled = label(d, secs[1], "sec_first");
    transfer_barrier(secs[1]);
    vkCmdFillBuffer(secs[1], d->b, 0, BUF_SIZE, 8);
    regions++;
    if (labelled) {
        d->end_label(secs[1]);
        regions++;
        add_check(" --expect-name sec_first=1 --expect-within sec_first=Command_buffer");
    }
    for (int i = 0; i < 2; i++)
        CHECK(vkEndCommandBuffer(secs[i]));
    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    vkCmdExecuteCommands(cb, 1, &secs[0]);
    vkCmdExecuteCommands(cb, 1, &secs[1]);
    run_one(d, cb, regions);
}

static void case_simultaneous(dev *d)
{
    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT, false);
    transfer_barrier(cb);
    vkCmdFillBuffer(cb, d->b, 0, BUF_SIZE, 9);
    CHECK(vkEndCommandBuffer(cb));
    /* Pending twice at once: legal with SIMULTANEOUS_USE. */
    submit(d, 1, &cb, VK_NULL_HANDLE);
    submit(d, 1, &cb, d->fence);
    wait(d);
    events += 2;
    submission_events += 2;
}

static void case_batches(dev *d)
{
    VkCommandBuffer cbs[2];
    for (int i = 0; i < 2; i++) {
        cbs[i] = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
        begin(cbs[i], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, false);
        transfer_barrier(cbs[i]);
        vkCmdFillBuffer(cbs[i], i ? d->b : d->a, 0, BUF_SIZE, (uint32_t)i);
        CHECK(vkEndCommandBuffer(cbs[i]));
    }
    const VkSubmitInfo si[2] = {
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
          .commandBufferCount = 1,
          .pCommandBuffers = &cbs[0] },
        { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
          .commandBufferCount = 1,
          .pCommandBuffers = &cbs[1] },
    };
    CHECK(vkQueueSubmit(d->queue, 2, si, d->fence));
    wait(d);
    events += 4;
}

/* ---- render pass cases ------------------------------------------------------ */

/* Appends trace_check options ("--expect-name NAME=N", ...) for the labels
 * the cases below record. Names have no spaces: the script splits words. */
static void add_check(const char *fmt, ...)
{
    size_t used = strlen(checks);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(checks + used, sizeof checks - used, fmt, ap);
    va_end(ap);
}

static void end_label(dev *d, VkCommandBuffer cb, bool labelled)
{
    if (labelled)
        d->end_label(cb);
}

static void create_target(VkPhysicalDevice pd, dev *d)
{
    const VkImageCreateInfo ii = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .imageType = VK_IMAGE_TYPE_2D,
        .format = FORMAT,
        .extent = { EXTENT, EXTENT, 1 },
        .mipLevels = 1,
        .arrayLayers = 2,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .tiling = VK_IMAGE_TILING_OPTIMAL,
        .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
        .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
    };
    CHECK(vkCreateImage(d->device, &ii, NULL, &d->image));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(d->device, d->image, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint32_t type = 0;
    while (type < mp.memoryTypeCount && !(req.memoryTypeBits & (1u << type)))
        type++;
    const VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    CHECK(vkAllocateMemory(d->device, &ai, NULL, &d->image_memory));
    CHECK(vkBindImageMemory(d->device, d->image, d->image_memory, 0));
    VkImageViewCreateInfo vi = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .image = d->image,
        .viewType = VK_IMAGE_VIEW_TYPE_2D,
        .format = FORMAT,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
    };
    CHECK(vkCreateImageView(d->device, &vi, NULL, &d->view));
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D_ARRAY;
    vi.subresourceRange.layerCount = 2;
    CHECK(vkCreateImageView(d->device, &vi, NULL, &d->view2));
}

/* Whatever the image held (earlier cases drew into it and copied from it)
 * is discarded; it becomes a color attachment. */
static void to_color_attachment(dev *d, VkCommandBuffer cb)
{
    const VkImageMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
        .newLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = d->image,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 2 },
    };
    vkCmdPipelineBarrier(
        cb, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, 0, 0, NULL, 0, NULL, 1, &b);
}

static void clear_attachment(VkCommandBuffer cb)
{
    const VkClearAttachment c = {
        .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
        .colorAttachment = 0,
        .clearValue = { .color = { .float32 = { 1.0f, 0.0f, 0.0f, 1.0f } } },
    };
    /* Layer 0 only: required inside multiview instances. */
    const VkClearRect r = { { { 0, 0 }, { 16, 16 } }, 0, 1 };
    vkCmdClearAttachments(cb, 1, &c, 1, &r);
}

/* One color attachment in every subpass, each subpass's writes ordered
 * after the previous one's. view_mask != 0: multiview, the same mask in
 * every subpass. */
static VkRenderPass make_render_pass(dev *d, uint32_t subpasses, uint32_t view_mask)
{
    const VkAttachmentDescription att = {
        .format = FORMAT,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
    };
    const VkAttachmentReference ref = { 0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL };
    VkSubpassDescription sp[3];
    VkSubpassDependency dep[3];
    uint32_t masks[3];
    for (uint32_t i = 0; i < subpasses; i++) {
        sp[i] = (VkSubpassDescription){
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
            .colorAttachmentCount = 1,
            .pColorAttachments = &ref,
        };
        dep[i] = (VkSubpassDependency){
            .srcSubpass = i ? i - 1 : VK_SUBPASS_EXTERNAL,
            .dstSubpass = i,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask =
                VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        };
        masks[i] = view_mask;
    }
    const VkRenderPassMultiviewCreateInfo mv = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_MULTIVIEW_CREATE_INFO,
        .subpassCount = subpasses,
        .pViewMasks = masks,
    };
    const VkRenderPassCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
        .pNext = view_mask ? &mv : NULL,
        .attachmentCount = 1,
        .pAttachments = &att,
        .subpassCount = subpasses,
        .pSubpasses = sp,
        .dependencyCount = subpasses,
        .pDependencies = dep,
    };
    VkRenderPass rp;
    CHECK(vkCreateRenderPass(d->device, &info, NULL, &rp));
    return rp;
}

static VkFramebuffer make_framebuffer(dev *d, VkRenderPass rp, bool multiview)
{
    const VkFramebufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
        .renderPass = rp,
        .attachmentCount = 1,
        .pAttachments = multiview ? &d->view2 : &d->view,
        .width = EXTENT,
        .height = EXTENT,
        .layers = 1,
    };
    VkFramebuffer fb;
    CHECK(vkCreateFramebuffer(d->device, &info, NULL, &fb));
    return fb;
}

static VkRenderPassBeginInfo pass_begin(VkRenderPass rp, VkFramebuffer fb)
{
    return (VkRenderPassBeginInfo){
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = rp,
        .framebuffer = fb,
        .renderArea = { { 0, 0 }, { EXTENT, EXTENT } },
    };
}

/* Submits one primary, waits, and counts its regions. */
static void run_one(dev *d, VkCommandBuffer cb, unsigned regions)
{
    CHECK(vkEndCommandBuffer(cb));
    submit(d, 1, &cb, d->fence);
    wait(d);
    events += regions;
}

static void case_render_pass(dev *d)
{
    VkRenderPass rp = make_render_pass(d, 1, 0);
    VkFramebuffer fb = make_framebuffer(d, rp, false);
    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    unsigned regions = 1;
    to_color_attachment(d, cb);
    /* Begun outside the instance, ended inside: cannot nest, not a region. */
    bool cross = label(d, cb, "rp_cross");
    const VkRenderPassBeginInfo bi = pass_begin(rp, fb);
    vkCmdBeginRenderPass(cb, &bi, VK_SUBPASS_CONTENTS_INLINE);
    regions++;
    end_label(d, cb, cross);
    bool outer = label(d, cb, "rp_outer");
    bool inner = label(d, cb, "rp_inner");
    clear_attachment(cb);
    end_label(d, cb, inner);
    clear_attachment(cb);
    end_label(d, cb, outer);
    regions += 2 + outer + inner;
    vkCmdEndRenderPass(cb);
    run_one(d, cb, regions);
    if (outer)
        add_check(" --expect-name rp_cross=0 --expect-name rp_outer=1 --expect-name rp_inner=1"
                  " --expect-within rp_inner=rp_outer --expect-within rp_outer=Render_pass");
    vkDestroyFramebuffer(d->device, fb, NULL);
    vkDestroyRenderPass(d->device, rp, NULL);
}

static void case_subpasses(dev *d)
{
    VkRenderPass rp = make_render_pass(d, 3, 0);
    VkFramebuffer fb = make_framebuffer(d, rp, false);

    /* Subpass 1's contents: a secondary continuing the render pass. Timed
    * only with host query reset (no query chunk can be reset inside). */
    VkCommandBuffer sec = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_SECONDARY);
    const VkCommandBufferInheritanceInfo inherit = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
        .renderPass = rp,
        .subpass = 1,
        .framebuffer = fb,
    };
    const VkCommandBufferBeginInfo sbi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT,
        .pInheritanceInfo = &inherit,
    };
    CHECK(vkBeginCommandBuffer(sec, &sbi));
    bool in_sec = label(d, sec, "in_continue");
    clear_attachment(sec);
    end_label(d, sec, in_sec);
    CHECK(vkEndCommandBuffer(sec));
    const unsigned sec_regions = host_reset ? 1u + in_sec : 0u;

    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    unsigned regions = 1;
    to_color_attachment(d, cb);
    const VkRenderPassBeginInfo bi = pass_begin(rp, fb);
    vkCmdBeginRenderPass(cb, &bi, VK_SUBPASS_CONTENTS_INLINE);
    regions++;
    bool span = label(d, cb, "sp_span"); /* subpass 0 to 2: one region */
    bool first = label(d, cb, "sp_first");
    clear_attachment(cb);
    end_label(d, cb, first);
    vkCmdNextSubpass(cb, VK_SUBPASS_CONTENTS_SECONDARY_COMMAND_BUFFERS);
    vkCmdExecuteCommands(cb, 1, &sec);
    vkCmdNextSubpass(cb, VK_SUBPASS_CONTENTS_INLINE);
    clear_attachment(cb);
    end_label(d, cb, span);
    vkCmdEndRenderPass(cb);
    regions += 2 + span + first + sec_regions;
    run_one(d, cb, regions);
    if (span) {
        add_check(" --expect-name sp_span=1 --expect-name sp_first=1"
                  " --expect-within sp_first=sp_span --expect-within sp_span=Render_pass");
        add_check(" --expect-name in_continue=%u", host_reset ? 1u : 0u);
        if (host_reset)
            add_check(" --expect-within in_continue=sp_span");
    }
    vkDestroyFramebuffer(d->device, fb, NULL);
    vkDestroyRenderPass(d->device, rp, NULL);
}

static void case_multiview(dev *d)
{
    VkRenderPass rp = make_render_pass(d, 2, 0x3);
    VkFramebuffer fb = make_framebuffer(d, rp, true);
    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    unsigned regions = 1;
    to_color_attachment(d, cb);
    const VkRenderPassBeginInfo bi = pass_begin(rp, fb);
    vkCmdBeginRenderPass(cb, &bi, VK_SUBPASS_CONTENTS_INLINE);
    regions++;
    bool first = label(d, cb, "mv_first");
    clear_attachment(cb);
    end_label(d, cb, first);
    /* Spans two multiview subpasses: not a region. */
    bool span = label(d, cb, "mv_span");
    vkCmdNextSubpass(cb, VK_SUBPASS_CONTENTS_INLINE);
    clear_attachment(cb);
    end_label(d, cb, span);
    vkCmdEndRenderPass(cb);
    regions += 2 + first;
    run_one(d, cb, regions);
    if (first)
        add_check(" --expect-name mv_first=1 --expect-name mv_span=0"
                  " --expect-within mv_first=Render_pass");
    vkDestroyFramebuffer(d->device, fb, NULL);
    vkDestroyRenderPass(d->device, rp, NULL);
}

static void case_render_pass2(dev *d)
{
    const VkAttachmentDescription2 att = {
        .sType = VK_STRUCTURE_TYPE_ATTACHMENT_DESCRIPTION_2,
        .format = FORMAT,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
    };
    const VkAttachmentReference2 ref = {
        .sType = VK_STRUCTURE_TYPE_ATTACHMENT_REFERENCE_2,
        .attachment = 0,
        .layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
    };
    VkSubpassDescription2 sp[2];
    VkSubpassDependency2 dep[2];
    for (uint32_t i = 0; i < 2; i++) {
        sp[i] = (VkSubpassDescription2){
            .sType = VK_STRUCTURE_TYPE_SUBPASS_DESCRIPTION_2,
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
            .viewMask = 0x3,
            .colorAttachmentCount = 1,
            .pColorAttachments = &ref,
        };
        dep[i] = (VkSubpassDependency2){
            .sType = VK_STRUCTURE_TYPE_SUBPASS_DEPENDENCY_2,
            .srcSubpass = i ? i - 1 : VK_SUBPASS_EXTERNAL,
            .dstSubpass = i,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask =
                VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        };
    }
    const VkRenderPassCreateInfo2 info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO_2,
        .attachmentCount = 1,
        .pAttachments = &att,
        .subpassCount = 2,
        .pSubpasses = sp,
        .dependencyCount = 2,
        .pDependencies = dep,
    };
    VkRenderPass rp;
    CHECK(vkCreateRenderPass2(d->device, &info, NULL, &rp));
    VkFramebuffer fb = make_framebuffer(d, rp, true);

    /* Subpass 1 (two views) is a secondary continuing the render pass: its
    * timestamps take the inherited subpass's two queries. */
    VkCommandBuffer sec = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_SECONDARY);
    const VkCommandBufferInheritanceInfo inherit = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
        .renderPass = rp,
        .subpass = 1,
        .framebuffer = fb,
    };
    const VkCommandBufferBeginInfo sbi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT,
        .pInheritanceInfo = &inherit,
    };
    CHECK(vkBeginCommandBuffer(sec, &sbi));
    bool second = label(d, sec, "rp2_second");
    clear_attachment(sec);
    end_label(d, sec, second);
    CHECK(vkEndCommandBuffer(sec));

    VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    begin(cb, 0, false);
    unsigned regions = 1;
    to_color_attachment(d, cb);
    const VkRenderPassBeginInfo bi = pass_begin(rp, fb);
    const VkSubpassBeginInfo inline_contents = {
        .sType = VK_STRUCTURE_TYPE_SUBPASS_BEGIN_INFO,
        .contents = VK_SUBPASS_CONTENTS_INLINE,
    };
    const VkSubpassBeginInfo secondary_contents = {
        .sType = VK_STRUCTURE_TYPE_SUBPASS_BEGIN_INFO,
        .contents = VK_SUBPASS_CONTENTS_SECONDARY_COMMAND_BUFFERS,
    };
    const VkSubpassEndInfo end = { .sType = VK_STRUCTURE_TYPE_SUBPASS_END_INFO };
    vkCmdBeginRenderPass2(cb, &bi, &inline_contents);
    regions++;
    bool first = label(d, cb, "rp2_first");
    clear_attachment(cb);
    end_label(d, cb, first);
    vkCmdNextSubpass2(cb, &secondary_contents, &end);
    vkCmdExecuteCommands(cb, 1, &sec);
    vkCmdEndRenderPass2(cb, &end);
    regions += 1 + first + (host_reset ? 1u + second : 0u);
    run_one(d, cb, regions);
    if (first)
        add_check(" --expect-name rp2_first=1 --expect-within rp2_first=Render_pass");
    if (second) {
        add_check(" --expect-name rp2_second=%u", host_reset ? 1u : 0u);
        if (host_reset)
            add_check(" --expect-within rp2_second=Render_pass");
    }
    vkDestroyFramebuffer(d->device, fb, NULL);
    vkDestroyRenderPass(d->device, rp, NULL);
}

/* One dynamic rendering instance suspended and resumed across the n (2 or
 * 3) command buffers cbs[], for one batch. Where the layer may write
 * timestamps: cbs[0] starts normally and ends just before its suspension;
 * the others start inside their resumed instance, which needs host query
 * reset (a first query chunk cannot be reset there); without it they are
 * not timed until the last one's copy, after the instance. A middle one
 * (n == 3) resumes and suspends again. `tag` names the labels; returns the
 * regions the layer should time in one execution. */
static unsigned record_suspended_chain(dev *d, uint32_t n, VkCommandBuffer *cbs, const char *tag,
                                       bool *labelled)
{
    const VkRenderingAttachmentInfo color = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
        .imageView = d->view,
        .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .clearValue = { .color = { .float32 = { 0.0f, 0.0f, 1.0f, 1.0f } } },
    };
    /* Identical in every part but for the flags, as Vulkan requires. */
    VkRenderingInfo ri = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
        .renderArea = { { 0, 0 }, { EXTENT, EXTENT } },
        .layerCount = 1,
        .colorAttachmentCount = 1,
        .pColorAttachments = &color,
    };
    unsigned regions = 0;
    char name[32];
    for (uint32_t i = 0; i < n; i++) {
        cbs[i] = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
        begin(cbs[i], 0, false);
        const bool first = i == 0, last = i == n - 1;
        if (first)
            to_color_attachment(d, cbs[i]);
        ri.flags =
            (first ? 0 : VK_RENDERING_RESUMING_BIT) | (last ? 0 : VK_RENDERING_SUSPENDING_BIT);
        vkCmdBeginRendering(cbs[i], &ri);
        snprintf(name, sizeof name, "%s_%u", tag, i);
        bool l = !last && label(d, cbs[i], name);
        clear_attachment(cbs[i]);
        end_label(d, cbs[i], l);
        vkCmdEndRendering(cbs[i]);
        if (!last)
            *labelled = l;
        /* Command buffer, clear, label. */
        if (first || host_reset)
            regions += 2 + l;
        if (!last)
            continue;
        const VkImageMemoryBarrier to_src = {
            .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
            .oldLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
            .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
            .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
            .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
            .image = d->image,
            .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
        };
        vkCmdPipelineBarrier(cbs[i], VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL, 1, &to_src);
        transfer_barrier(cbs[i]);
        const VkBufferImageCopy copy = {
            .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
            .imageExtent = { EXTENT, EXTENT, 1 },
        };
        vkCmdCopyImageToBuffer(cbs[i], d->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, d->b, 1,
                               &copy);
        regions++;
    }
    for (uint32_t i = 0; i < n; i++)
        CHECK(vkEndCommandBuffer(cbs[i]));
    return regions;
}

/* Suspended rendering across command buffers: three of them in one
 * vkQueueSubmit batch, submitted twice (the second time the layer reads
 * the first execution before reusing the queries), and two in one
 * vkQueueSubmit2 batch. Vulkan requires the whole chain in one batch. */
static void case_suspend(dev *d)
{
    VkCommandBuffer cbs[3];
    bool labelled;
    unsigned regions = record_suspended_chain(d, 3, cbs, "sr", &labelled);
    for (int i = 0; i < 2; i++) {
        submit(d, 3, cbs, d->fence);
        wait(d);
        events += regions;
    }
    if (labelled) {
        add_check(" --expect-name sr_0=2 --expect-within sr_0=Command_buffer");
        add_check(" --expect-name sr_1=%u", host_reset ? 2u : 0u);
        if (host_reset)
            add_check(" --expect-within sr_1=Command_buffer");
    }

    VkCommandBuffer cbs2[2];
    regions = record_suspended_chain(d, 2, cbs2, "sr2", &labelled);
    VkCommandBufferSubmitInfo infos[2];
    for (int i = 0; i < 2; i++)
        infos[i] = (VkCommandBufferSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
            .commandBuffer = cbs2[i],
        };
    const VkSubmitInfo2 si2 = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
        .commandBufferInfoCount = 2,
        .pCommandBufferInfos = infos,
    };
    CHECK(vkQueueSubmit2(d->queue, 1, &si2, d->fence));
    wait(d);
    events += regions;
    if (labelled)
        add_check(" --expect-name sr2_0=1 --expect-within sr2_0=Command_buffer");
}

/* A rendering instance suspended inside a secondary (executed by the
 * first primary) and resumed by the second primary of the batch. The first
 * primary cannot write its end after the secondary (the gap begins there)
 * nor inside it: its command-buffer region is dropped; the secondary's
 * label and clear are timed inside its instance (with host query reset). */
static void case_suspend_secondary(dev *d)
{
    const VkRenderingAttachmentInfo color = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
        .imageView = d->view,
        .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .clearValue = { .color = { .float32 = { 0.0f, 1.0f, 0.0f, 1.0f } } },
    };
    VkRenderingInfo ri = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
        .flags = VK_RENDERING_SUSPENDING_BIT,
        .renderArea = { { 0, 0 }, { EXTENT, EXTENT } },
        .layerCount = 1,
        .colorAttachmentCount = 1,
        .pColorAttachments = &color,
    };
    unsigned regions = 0;
    VkCommandBuffer sec = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_SECONDARY);
    begin(sec, 0, true);
    vkCmdBeginRendering(sec, &ri);
    bool labelled = label(d, sec, "ss_in");
    clear_attachment(sec);
    end_label(d, sec, labelled);
    vkCmdEndRendering(sec);
    CHECK(vkEndCommandBuffer(sec));
    if (host_reset)
        regions += 1 + labelled;

    VkCommandBuffer cbs[2];
    for (int i = 0; i < 2; i++) {
        cbs[i] = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
        begin(cbs[i], 0, false);
    }
    to_color_attachment(d, cbs[0]);
    vkCmdExecuteCommands(cbs[0], 1, &sec);
    ri.flags = VK_RENDERING_RESUMING_BIT;
    vkCmdBeginRendering(cbs[1], &ri);
    clear_attachment(cbs[1]);
    vkCmdEndRendering(cbs[1]);
    transfer_barrier(cbs[1]);
    regions += host_reset ? 2 : 0; /* command buffer and clear */
    for (int i = 0; i < 2; i++)
        CHECK(vkEndCommandBuffer(cbs[i]));
    submit(d, 2, cbs, d->fence);
    wait(d);
    events += regions;
    if (labelled)
        add_check(" --expect-name ss_in=%u", host_reset ? 1u : 0u);
}

int main(int argc, char **argv)
{
    bool validate = false, no_destroy = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--validate"))
            validate = true;
        else if (!strcmp(argv[i], "--no-destroy"))
            no_destroy = true;
        else {
            fprintf(stderr, "usage: " PROG " [--validate] [--no-destroy]\n");
            return 2;
        }
    }

    const char *layers[] = { "VK_LAYER_KHRONOS_validation" };
    const char *exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
    const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
    };
    const VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .pNext = validate ? &features : NULL,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = PROG,
        .apiVersion = VK_API_VERSION_1_3,
    };
    const VkInstanceCreateInfo ii = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = &messenger_info,
        .pApplicationInfo = &app,
        .enabledLayerCount = validate ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = 1,
        .ppEnabledExtensionNames = exts,
    };
    VkInstance instance;
    CHECK(vkCreateInstance(&ii, NULL, &instance));
    /* The chained messenger only covers vkCreate/DestroyInstance. */
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                  "vkCreateDebugUtilsMessengerEXT");
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            instance, "vkDestroyDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT runtime_info = messenger_info;
    runtime_info.pNext = NULL;
    if (create_messenger)
        CHECK(create_messenger(instance, &runtime_info, NULL, &messenger));
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, PROG ": no Vulkan device\n");
        return 1;
    }
    uint32_t nfam = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, NULL);
    VkQueueFamilyProperties fams[16];
    nfam = nfam > 16 ? 16 : nfam;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, fams);
    uint32_t family = 0;
    while (family < nfam && !(fams[family].queueFlags & VK_QUEUE_TRANSFER_BIT) &&
           !(fams[family].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)))
        family++;

    dev d1, d2;
    const bool graphics = family < nfam && (fams[family].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    /* The layer's reading of the same variable (config.c): only an explicit
    * false turns host query reset off. */
    const char *hqr = getenv("GPUTRACE_HOST_QUERY_RESET");
    host_reset = !(hqr && (!strcmp(hqr, "0") || !strcasecmp(hqr, "false") ||
                           !strcasecmp(hqr, "no") || !strcasecmp(hqr, "off")));

    create_device(pd, family, graphics, &d1);
    case_resubmit(&d1);
    case_secondary(&d1);
    case_execute_first(&d1);
    case_simultaneous(&d1);
    case_batches(&d1);
    if (d1.graphics) {
        create_target(pd, &d1);
        case_render_pass(&d1);
        case_subpasses(&d1);
        if (d1.multiview) {
            case_multiview(&d1);
            case_render_pass2(&d1);
        }
        if (d1.dynamic_rendering) {
            case_suspend(&d1);
            case_suspend_secondary(&d1);
        }
    }

    create_device(pd, family, false, &d2);
    case_batches(&d2);

    unsigned errors = atomic_load(&validation_errors);
    printf(PROG ": events=%lu submission_events=%lu devices=2\n", events, submission_events);
    printf(PROG ": checks:%s\n", checks);
    fflush(stdout);
    if (no_destroy) /* the layer's exit path must finish the trace */
        exit(errors ? 1 : 0);
    destroy_device(&d2);
    destroy_device(&d1);
    if (messenger && destroy_messenger)
        destroy_messenger(instance, messenger, NULL);
    vkDestroyInstance(instance, NULL);
    if (validate)
        fprintf(stderr, PROG ": validation: %u error(s)\n", errors);
    return errors ? 1 : 0;
}
