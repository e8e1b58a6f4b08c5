/* SPDX-License-Identifier: MIT */
/* wl_frame.c — what gputrace-workload draws and computes: the shared
 * pipelines, one thread's resources, and recording, submitting and checking
 * one frame.
 *
 * A frame is up to three submissions, one primary command buffer each:
 *   compute      update, dispatch, dispatch indirect, fill, copy
 *   render pass  clear image, classic render pass of two subpasses (the
 *                first drawing through a secondary command buffer, the
 *                second with a labelled clear-attachments recorded inline),
 *                copy image to buffer
 *   dynamic      dynamic rendering with a clear-attachments, copy image to
 *                buffer (only with Vulkan 1.3 dynamicRendering)
 * each inside two nested debug labels when VK_EXT_debug_utils is there.
 * Results are read back and checked, so a layer that broke a command is
 * caught here. With --app-timestamps the wl_stamp calls write the
 * timestamps the layer would (wl_stamps.c); --submissions-per-frame adds
 * tiny submissions (wl_tiny.c).
 *
 * Regions (what the summary line counts; see usage() in
 * gputrace-workload.c): every primary command buffer submitted, every
 * render pass or dynamic rendering instance, every dispatch, every transfer
 * command (update, fill, copy, clear, blit, resolve) and every debug label
 * region, counted where it is recorded. Commands inside secondary command
 * buffers, vkCmdExecuteCommands and draws are not regions.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/workload/wl.h"

#include "shaders/iterate_comp_spv.h"
#include "shaders/triangles_frag_spv.h"
#include "shaders/triangles_vert_spv.h"

#define WL_FORMAT           VK_FORMAT_R8G8B8A8_UNORM
#define WL_FENCE_TIMEOUT_NS (30ull * 1000 * 1000 * 1000)

/* ---- pipelines ----------------------------------------------------------- */

static bool make_shader(wl_context *ctx, const uint32_t *code, size_t size, VkShaderModule *out)
{
    const VkShaderModuleCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = size,
        .pCode = code,
    };
    return WL_VK(vkCreateShaderModule, (ctx->device, &info, NULL, out));
}

static bool make_graphics_pipeline(wl_context *ctx, VkRenderPass render_pass, VkPipeline *out)
{
    VkShaderModule vert = VK_NULL_HANDLE, frag = VK_NULL_HANDLE;
    bool ok = false;
    if (!make_shader(ctx, triangles_vert_spv, sizeof triangles_vert_spv, &vert) ||
        !make_shader(ctx, triangles_frag_spv, sizeof triangles_frag_spv, &frag))
        goto out;

    const VkPipelineShaderStageCreateInfo stages[] = {
        { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
          .stage = VK_SHADER_STAGE_VERTEX_BIT,
          .module = vert,
          .pName = "main" },
        { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
          .stage = VK_SHADER_STAGE_FRAGMENT_BIT,
          .module = frag,
          .pName = "main" },
    };
    const VkPipelineVertexInputStateCreateInfo vertex_input = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
    };
    const VkPipelineInputAssemblyStateCreateInfo assembly = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
        .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
    };
    const VkPipelineViewportStateCreateInfo viewport = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
        .viewportCount = 1,
        .scissorCount = 1,
    };
    const VkPipelineRasterizationStateCreateInfo raster = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
        .polygonMode = VK_POLYGON_MODE_FILL,
        .cullMode = VK_CULL_MODE_NONE,
        .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
        .lineWidth = 1.0f,
    };
    const VkPipelineMultisampleStateCreateInfo multisample = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
        .rasterizationSamples = VK_SAMPLE_COUNT_1_BIT,
    };
    const VkPipelineColorBlendAttachmentState blend_attachment = {
        .colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                          VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT,
    };
    const VkPipelineColorBlendStateCreateInfo blend = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &blend_attachment,
    };
    const VkDynamicState dynamic_states[] = { VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR };
    const VkPipelineDynamicStateCreateInfo dynamic = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
        .dynamicStateCount = 2,
        .pDynamicStates = dynamic_states,
    };
    const VkFormat format = WL_FORMAT;
    const VkPipelineRenderingCreateInfo rendering = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO,
        .colorAttachmentCount = 1,
        .pColorAttachmentFormats = &format,
    };
    const VkGraphicsPipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
        .pNext = render_pass ? NULL : &rendering,
        .stageCount = 2,
        .pStages = stages,
        .pVertexInputState = &vertex_input,
        .pInputAssemblyState = &assembly,
        .pViewportState = &viewport,
        .pRasterizationState = &raster,
        .pMultisampleState = &multisample,
        .pColorBlendState = &blend,
        .pDynamicState = &dynamic,
        .layout = ctx->graphics_layout,
        .renderPass = render_pass,
    };
    ok = WL_VK(vkCreateGraphicsPipelines, (ctx->device, VK_NULL_HANDLE, 1, &info, NULL, out));
out:
    vkDestroyShaderModule(ctx->device, vert, NULL);
    vkDestroyShaderModule(ctx->device, frag, NULL);
    return ok;
}

static bool make_render_pass(wl_context *ctx)
{
    /* The target is cleared with vkCmdClearColorImage before the pass, so
    * load it; hand it over ready for the copy to the host buffer. */
    const VkAttachmentDescription attachment = {
        .format = WL_FORMAT,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = VK_ATTACHMENT_LOAD_OP_LOAD,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
    };
    const VkAttachmentReference color = { 0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL };
    /* Subpass 0 draws (secondary command buffer), subpass 1 clears a corner
    * inline: timing inside a render pass instance, in the demo. */
    const VkSubpassDescription subpasses[2] = {
        {
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
            .colorAttachmentCount = 1,
            .pColorAttachments = &color,
        },
        {
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
            .colorAttachmentCount = 1,
            .pColorAttachments = &color,
        },
    };
    const VkSubpassDependency deps[] = {
        {
            .srcSubpass = VK_SUBPASS_EXTERNAL,
            .dstSubpass = 0,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask =
                VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        },
        {
            .srcSubpass = 0,
            .dstSubpass = 1,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask =
                VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        },
        {
            .srcSubpass = 1,
            .dstSubpass = VK_SUBPASS_EXTERNAL,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
        },
    };
    const VkRenderPassCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &attachment,
        .subpassCount = 2,
        .pSubpasses = subpasses,
        .dependencyCount = 3,
        .pDependencies = deps,
    };
    return WL_VK(vkCreateRenderPass, (ctx->device, &info, NULL, &ctx->render_pass));
}

bool wl_pipelines_init(wl_context *ctx)
{
    const VkDescriptorSetLayoutBinding binding = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
    };
    const VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &binding,
    };
    if (!WL_VK(vkCreateDescriptorSetLayout, (ctx->device, &set_info, NULL, &ctx->set_layout)))
        return false;

    const VkPushConstantRange push = { VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t) };
    const VkPipelineLayoutCreateInfo compute_layout = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &ctx->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push,
    };
    if (!WL_VK(vkCreatePipelineLayout, (ctx->device, &compute_layout, NULL, &ctx->compute_layout)))
        return false;

    VkShaderModule comp;
    if (!make_shader(ctx, iterate_comp_spv, sizeof iterate_comp_spv, &comp))
        return false;
    const VkComputePipelineCreateInfo compute = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage =
         {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = comp,
            .pName = "main",
         },
      .layout = ctx->compute_layout,
   };
    bool ok = WL_VK(vkCreateComputePipelines,
                    (ctx->device, VK_NULL_HANDLE, 1, &compute, NULL, &ctx->compute_pipeline));
    vkDestroyShaderModule(ctx->device, comp, NULL);
    if (!ok)
        return false;

    const VkPipelineLayoutCreateInfo graphics_layout = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
    };
    if (!WL_VK(vkCreatePipelineLayout,
               (ctx->device, &graphics_layout, NULL, &ctx->graphics_layout)))
        return false;
    if (!make_render_pass(ctx) ||
        !make_graphics_pipeline(ctx, ctx->render_pass, &ctx->render_pass_pipeline))
        return false;
    if (ctx->dynamic_rendering &&
        !make_graphics_pipeline(ctx, VK_NULL_HANDLE, &ctx->dynamic_pipeline))
        return false;
    return true;
}

void wl_pipelines_finish(wl_context *ctx)
{
    VkDevice dev = ctx->device;
    vkDestroyPipeline(dev, ctx->dynamic_pipeline, NULL);
    vkDestroyPipeline(dev, ctx->render_pass_pipeline, NULL);
    vkDestroyRenderPass(dev, ctx->render_pass, NULL);
    vkDestroyPipelineLayout(dev, ctx->graphics_layout, NULL);
    vkDestroyPipeline(dev, ctx->compute_pipeline, NULL);
    vkDestroyPipelineLayout(dev, ctx->compute_layout, NULL);
    vkDestroyDescriptorSetLayout(dev, ctx->set_layout, NULL);
}

/* ---- per-thread resources ------------------------------------------------ */

static bool bind_memory(wl_context *ctx, VkMemoryRequirements req, bool host, VkDeviceMemory *out)
{
    const VkMemoryPropertyFlags need =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
    const VkMemoryPropertyFlags prefer = host ? 0 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = UINT32_MAX;
    for (int pass = 0; pass < 2 && type == UINT32_MAX; pass++) {
        VkMemoryPropertyFlags want = pass == 0 ? need | prefer : need;
        for (uint32_t i = 0; i < ctx->memory.memoryTypeCount && type == UINT32_MAX; i++) {
            if ((req.memoryTypeBits & (1u << i)) &&
                (ctx->memory.memoryTypes[i].propertyFlags & want) == want)
                type = i;
        }
    }
    if (type == UINT32_MAX) {
        wl_error("no suitable memory type (bits 0x%x)", req.memoryTypeBits);
        return false;
    }
    const VkMemoryAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    if (!WL_VK(vkAllocateMemory, (ctx->device, &info, NULL, out)))
        return false;
    atomic_fetch_add(&ctx->allocations, 1);
    atomic_fetch_add(&ctx->allocated_bytes, req.size);
    return true;
}

static bool make_buffer(wl_context *ctx, wl_buffer *b, VkDeviceSize size, VkBufferUsageFlags usage,
                        bool host)
{
    const VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    if (!WL_VK(vkCreateBuffer, (ctx->device, &info, NULL, &b->handle)))
        return false;
    atomic_fetch_add(&ctx->buffers, 1);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx->device, b->handle, &req);
    if (!bind_memory(ctx, req, host, &b->memory) ||
        !WL_VK(vkBindBufferMemory, (ctx->device, b->handle, b->memory, 0)))
        return false;
    return !host || WL_VK(vkMapMemory, (ctx->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->map));
}

static void destroy_buffer(wl_context *ctx, wl_buffer *b)
{
    vkDestroyBuffer(ctx->device, b->handle, NULL);
    vkFreeMemory(ctx->device, b->memory, NULL); /* unmaps too */
}

bool wl_buffer_make(wl_context *ctx, wl_buffer *b, VkDeviceSize size, VkBufferUsageFlags usage,
                    bool host)
{
    return make_buffer(ctx, b, size, usage, host);
}

void wl_buffer_destroy(wl_context *ctx, wl_buffer *b)
{
    destroy_buffer(ctx, b);
}

static bool make_image(wl_context *ctx, wl_image *img)
{
    const VkImageCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .imageType = VK_IMAGE_TYPE_2D,
        .format = WL_FORMAT,
        .extent = { WL_EXTENT, WL_EXTENT, 1 },
        .mipLevels = 1,
        .arrayLayers = 1,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .tiling = VK_IMAGE_TILING_OPTIMAL,
        .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                 VK_IMAGE_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
        .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
    };
    if (!WL_VK(vkCreateImage, (ctx->device, &info, NULL, &img->handle)))
        return false;
    atomic_fetch_add(&ctx->images, 1);
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(ctx->device, img->handle, &req);
    if (!bind_memory(ctx, req, false, &img->memory) ||
        !WL_VK(vkBindImageMemory, (ctx->device, img->handle, img->memory, 0)))
        return false;
    const VkImageViewCreateInfo view = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .image = img->handle,
        .viewType = VK_IMAGE_VIEW_TYPE_2D,
        .format = WL_FORMAT,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
    };
    return WL_VK(vkCreateImageView, (ctx->device, &view, NULL, &img->view));
}

static void destroy_image(wl_context *ctx, wl_image *img)
{
    vkDestroyImageView(ctx->device, img->view, NULL);
    vkDestroyImage(ctx->device, img->handle, NULL);
    vkFreeMemory(ctx->device, img->memory, NULL);
}

bool wl_thread_init(wl_thread *t)
{
    wl_context *ctx = t->ctx;
    VkDevice dev = ctx->device;

    const VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = ctx->family,
    };
    if (!WL_VK(vkCreateCommandPool, (dev, &pool_info, NULL, &t->pool)))
        return false;
    const VkCommandBufferAllocateInfo primary = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = t->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = WL_CB_COUNT,
    };
    const VkCommandBufferAllocateInfo secondary = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = t->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_SECONDARY,
        .commandBufferCount = 1,
    };
    if (!WL_VK(vkAllocateCommandBuffers, (dev, &primary, t->cb)) ||
        !WL_VK(vkAllocateCommandBuffers, (dev, &secondary, &t->secondary)))
        return false;
    const VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    for (int i = 0; i < WL_CB_COUNT + 1; i++) {
        if (!WL_VK(vkCreateFence, (dev, &fence_info, NULL, &t->fence[i])))
            return false;
    }

    if (!make_buffer(ctx, &t->values, WL_VALUES * 4,
                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                         VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     false) ||
        !make_buffer(ctx, &t->indirect, sizeof(VkDispatchIndirectCommand),
                     VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, true) ||
        !make_buffer(ctx, &t->readback, WL_READBACK_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true))
        return false;
    /* Written once before any submission; a submission makes host writes
    * visible to the device. */
    const VkDispatchIndirectCommand groups = { WL_VALUES / 64, 1, 1 };
    memcpy(t->indirect.map, &groups, sizeof groups);

    const VkDescriptorPoolSize pool_size = { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1 };
    const VkDescriptorPoolCreateInfo dpool_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &pool_size,
    };
    if (!WL_VK(vkCreateDescriptorPool, (dev, &dpool_info, NULL, &t->descriptor_pool)))
        return false;
    const VkDescriptorSetAllocateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = t->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &ctx->set_layout,
    };
    if (!WL_VK(vkAllocateDescriptorSets, (dev, &set_info, &t->set)))
        return false;
    const VkDescriptorBufferInfo buffer_info = { t->values.handle, 0, VK_WHOLE_SIZE };
    const VkWriteDescriptorSet write = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = t->set,
        .dstBinding = 0,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = &buffer_info,
    };
    vkUpdateDescriptorSets(dev, 1, &write, 0, NULL);

    if (!make_image(ctx, &t->rp_target))
        return false;
    if (ctx->dynamic_rendering && !make_image(ctx, &t->dyn_target))
        return false;
    const VkFramebufferCreateInfo fb_info = {
        .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
        .renderPass = ctx->render_pass,
        .attachmentCount = 1,
        .pAttachments = &t->rp_target.view,
        .width = WL_EXTENT,
        .height = WL_EXTENT,
        .layers = 1,
    };
    return WL_VK(vkCreateFramebuffer, (dev, &fb_info, NULL, &t->framebuffer)) &&
           wl_stamps_init(t) && wl_tiny_init(t) && wl_sync_init(t);
}

void wl_thread_finish(wl_thread *t)
{
    wl_context *ctx = t->ctx;
    VkDevice dev = ctx->device;
    vkDestroyFramebuffer(dev, t->framebuffer, NULL);
    destroy_image(ctx, &t->dyn_target);
    destroy_image(ctx, &t->rp_target);
    vkDestroyDescriptorPool(dev, t->descriptor_pool, NULL);
    destroy_buffer(ctx, &t->readback);
    destroy_buffer(ctx, &t->indirect);
    destroy_buffer(ctx, &t->values);
    wl_tiny_finish(t);
    wl_stamps_finish(t);
    wl_sync_finish(t);
    for (int i = 0; i < WL_CB_COUNT + 1; i++)
        vkDestroyFence(dev, t->fence[i], NULL);
    vkDestroyCommandPool(dev, t->pool, NULL); /* frees the command buffers */
}

/* ---- recording ----------------------------------------------------------- */

static void label_begin(wl_thread *t, VkCommandBuffer cb, const char *name, uint64_t *regions)
{
    if (!t->ctx->labels)
        return;
    const VkDebugUtilsLabelEXT label = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
        .pLabelName = name,
        .color = { 0.2f, 0.6f, 1.0f, 1.0f },
    };
    wl_stamp(t, cb);
    t->ctx->begin_label(cb, &label);
    ++*regions;
}

static void label_end(wl_thread *t, VkCommandBuffer cb)
{
    if (!t->ctx->labels)
        return;
    t->ctx->end_label(cb);
    wl_stamp(t, cb);
}

static void memory_barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage,
                           VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                           VkAccessFlags dst_access)
{
    const VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
    };
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &barrier, 0, NULL, 0, NULL);
}

static void image_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to,
                          VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                          VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
    const VkImageMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
        .oldLayout = from,
        .newLayout = to,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = image,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
    };
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1, &barrier);
}

/* Transfer writes to the readback buffer become readable by the host. */
static void host_read_barrier(VkCommandBuffer cb)
{
    memory_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

static void copy_image_to_readback(wl_thread *t, VkCommandBuffer cb, VkImage image,
                                   VkDeviceSize offset, uint64_t *regions)
{
    const VkBufferImageCopy copy = {
        .bufferOffset = offset,
        .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
        .imageExtent = { WL_EXTENT, WL_EXTENT, 1 },
    };
    wl_stamp(t, cb);
    vkCmdCopyImageToBuffer(cb, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, t->readback.handle, 1,
                           &copy);
    wl_stamp_after(t, cb);
    ++*regions;
}

static uint32_t frame_seed(const wl_thread *t, uint32_t frame)
{
    return (frame * WL_MAX_THREADS + t->index) * WL_VALUES;
}

/* Begins a primary; the layer's command-buffer start goes before its first
 * action or synchronization command, which follows. */
static bool begin(wl_thread *t, VkCommandBuffer cb)
{
    const VkCommandBufferBeginInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (!WL_VK(vkBeginCommandBuffer, (cb, &info)))
        return false;
    wl_stamps_begin(t);
    wl_stamp(t, cb);
    return true;
}

static bool end(wl_thread *t, VkCommandBuffer cb)
{
    wl_stamp(t, cb);
    return WL_VK(vkEndCommandBuffer, (cb));
}

static bool record_compute(wl_thread *t, uint32_t frame, uint64_t *regions)
{
    wl_context *ctx = t->ctx;
    VkCommandBuffer cb = t->cb[WL_CB_COMPUTE];
    char name[64];
    uint32_t init[WL_VALUES];
    for (uint32_t i = 0; i < WL_VALUES; i++)
        init[i] = frame_seed(t, frame) + i;

    if (!begin(t, cb))
        return false;
    ++*regions;
    snprintf(name, sizeof name, "frame %u compute", frame);
    label_begin(t, cb, name, regions);
    label_begin(t, cb, "kernels", regions);

    /* The previous frame's shader and copy accesses are long finished (its
    * fences were waited for), but say so to the GPU as well. */
    memory_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_TRANSFER_WRITE_BIT);
    wl_stamp(t, cb);
    vkCmdUpdateBuffer(cb, t->values.handle, 0, sizeof init, init);
    wl_stamp_after(t, cb);
    ++*regions;
    memory_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);

    const uint32_t params[2] = { WL_ROUNDS * ctx->work, WL_VALUES };
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ctx->compute_pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ctx->compute_layout, 0, 1, &t->set,
                            0, NULL);
    vkCmdPushConstants(cb, ctx->compute_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof params,
                       params);
    wl_stamp(t, cb);
    vkCmdDispatch(cb, WL_VALUES / 64, 1, 1);
    wl_stamp_after(t, cb);
    ++*regions;
    memory_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    wl_stamp(t, cb);
    vkCmdDispatchIndirect(cb, t->indirect.handle, 0);
    wl_stamp_after(t, cb);
    ++*regions;
    label_end(t, cb);

    wl_stamp(t, cb);
    vkCmdFillBuffer(cb, t->readback.handle, WL_READBACK_VALUES, WL_VALUES * 4, 0xdeadbeef);
    wl_stamp_after(t, cb);
    ++*regions;
    /* Shader writes to values -> copy reads; fill -> copy writes (WAW). */
    memory_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    const VkBufferCopy copy = { 0, WL_READBACK_VALUES, WL_VALUES * 4 };
    wl_stamp(t, cb);
    vkCmdCopyBuffer(cb, t->values.handle, t->readback.handle, 1, &copy);
    wl_stamp_after(t, cb);
    ++*regions;
    host_read_barrier(cb);
    label_end(t, cb);
    return end(t, cb);
}

static const VkViewport full_viewport = { 0, 0, WL_EXTENT, WL_EXTENT, 0, 1 };
static const VkRect2D full_rect = { { 0, 0 }, { WL_EXTENT, WL_EXTENT } };

static bool record_secondary(wl_thread *t)
{
    wl_context *ctx = t->ctx;
    VkCommandBuffer cb = t->secondary;
    const VkCommandBufferInheritanceInfo inherit = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
        .renderPass = ctx->render_pass,
        .subpass = 0,
        .framebuffer = t->framebuffer,
    };
    const VkCommandBufferBeginInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT |
                 VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT,
        .pInheritanceInfo = &inherit,
    };
    if (!WL_VK(vkBeginCommandBuffer, (cb, &info)))
        return false;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, ctx->render_pass_pipeline);
    vkCmdSetViewport(cb, 0, 1, &full_viewport);
    vkCmdSetScissor(cb, 0, 1, &full_rect);
    vkCmdDraw(cb, 9, ctx->work, 0, 0); /* instances overdraw the same triangles */
    return WL_VK(vkEndCommandBuffer, (cb));
}

static bool record_render_pass(wl_thread *t, uint32_t frame, uint64_t *regions)
{
    wl_context *ctx = t->ctx;
    VkCommandBuffer cb = t->cb[WL_CB_RENDER_PASS];
    VkImage image = t->rp_target.handle;
    char name[64];

    if (!record_secondary(t) || !begin(t, cb))
        return false;
    ++*regions;
    snprintf(name, sizeof name, "frame %u render pass", frame);
    label_begin(t, cb, name, regions);
    label_begin(t, cb, "clear", regions);
    /* Waits for the previous frame's copy out of the image. */
    image_barrier(cb, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT);
    const VkClearColorValue blue = { .float32 = { 0.0f, 0.0f, 1.0f, 1.0f } };
    const VkImageSubresourceRange range = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 };
    wl_stamp(t, cb);
    vkCmdClearColorImage(cb, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &blue, 1, &range);
    wl_stamp_after(t, cb);
    ++*regions;
    label_end(t, cb);

    image_barrier(cb, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                  VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                  VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
    const VkRenderPassBeginInfo rp = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = ctx->render_pass,
        .framebuffer = t->framebuffer,
        .renderArea = full_rect,
    };
    wl_stamp(t, cb);
    vkCmdBeginRenderPass(cb, &rp, VK_SUBPASS_CONTENTS_SECONDARY_COMMAND_BUFFERS);
    wl_stamps_inside(t, cb, true);
    ++*regions;
    vkCmdExecuteCommands(cb, 1, &t->secondary);
    vkCmdNextSubpass(cb, VK_SUBPASS_CONTENTS_INLINE);
    label_begin(t, cb, "overlay", regions);
    /* A white square in the top-right corner, which no triangle covers. */
    const VkClearAttachment white = {
        .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
        .colorAttachment = 0,
        .clearValue = { .color = { .float32 = { 1.0f, 1.0f, 1.0f, 1.0f } } },
    };
    const VkClearRect corner = { { { WL_EXTENT - 4, 0 }, { 4, 4 } }, 0, 1 };
    wl_stamp(t, cb);
    vkCmdClearAttachments(cb, 1, &white, 1, &corner);
    wl_stamp_after(t, cb);
    ++*regions;
    label_end(t, cb);
    vkCmdEndRenderPass(cb); /* leaves the image in TRANSFER_SRC_OPTIMAL */
    wl_stamps_inside(t, cb, false);

    copy_image_to_readback(t, cb, image, WL_READBACK_RP, regions);
    host_read_barrier(cb);
    label_end(t, cb);
    return end(t, cb);
}

static bool record_dynamic(wl_thread *t, uint32_t frame, uint64_t *regions)
{
    wl_context *ctx = t->ctx;
    VkCommandBuffer cb = t->cb[WL_CB_DYNAMIC];
    VkImage image = t->dyn_target.handle;
    char name[64];

    if (!begin(t, cb))
        return false;
    ++*regions;
    snprintf(name, sizeof name, "frame %u dynamic rendering", frame);
    label_begin(t, cb, name, regions);
    label_begin(t, cb, "draw", regions);
    image_barrier(cb, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, 0, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                  VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
    const VkRenderingAttachmentInfo color = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
        .imageView = t->dyn_target.view,
        .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .clearValue = { .color = { .float32 = { 0.0f, 1.0f, 0.0f, 1.0f } } },
    };
    const VkRenderingInfo rendering = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
        .renderArea = full_rect,
        .layerCount = 1,
        .colorAttachmentCount = 1,
        .pColorAttachments = &color,
    };
    wl_stamp(t, cb);
    vkCmdBeginRendering(cb, &rendering);
    wl_stamps_inside(t, cb, true);
    ++*regions;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, ctx->dynamic_pipeline);
    vkCmdSetViewport(cb, 0, 1, &full_viewport);
    vkCmdSetScissor(cb, 0, 1, &full_rect);
    vkCmdDraw(cb, 9, ctx->work, 0, 0); /* instances overdraw the same triangles */
    /* A white square in the top-left corner, which no triangle covers. */
    const VkClearAttachment white = {
        .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
        .colorAttachment = 0,
        .clearValue = { .color = { .float32 = { 1.0f, 1.0f, 1.0f, 1.0f } } },
    };
    const VkClearRect corner = { { { 0, 0 }, { 4, 4 } }, 0, 1 };
    wl_stamp(t, cb);
    vkCmdClearAttachments(cb, 1, &white, 1, &corner);
    wl_stamp_after(t, cb);
    ++*regions;
    vkCmdEndRendering(cb);
    wl_stamps_inside(t, cb, false);
    label_end(t, cb);

    image_barrier(
        cb, image, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
        VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    copy_image_to_readback(t, cb, image, WL_READBACK_DYN, regions);
    host_read_barrier(cb);
    label_end(t, cb);
    return end(t, cb);
}

/* ---- submission and checks ----------------------------------------------- */

/* Alternates vkQueueSubmit and vkQueueSubmit2 (when available), so both
 * reach the layer; `sync` (or NULL) names the semaphores it waits for and
 * signals, `chain` goes into the batch's pNext (either kind takes a
 * VkFrameBoundaryEXT). */
static bool submit_chained(wl_thread *t, wl_queue *q, VkCommandBuffer cb, VkFence fence,
                           const wl_sync *sync, const void *chain)
{
    bool use2 = t->ctx->submit2 && t->submissions % 2 == 1;
    const bool wait = sync && sync->wait, signal = sync && sync->signal;
    const uint64_t wait_value = wait ? sync->wait_value : 0;
    const uint64_t signal_value = signal ? sync->signal_value : 0;
    VkResult res;
    pthread_mutex_lock(&q->lock);
    if (use2) {
        const VkCommandBufferSubmitInfo cb_info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
            .commandBuffer = cb,
        };
        const VkSemaphoreSubmitInfo wait_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
            .semaphore = wait ? sync->wait : VK_NULL_HANDLE,
            .value = wait_value,
            .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        };
        const VkSemaphoreSubmitInfo signal_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
            .semaphore = signal ? sync->signal : VK_NULL_HANDLE,
            .value = signal_value,
            .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        };
        const VkSubmitInfo2 info = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
            .pNext = chain,
            .waitSemaphoreInfoCount = wait,
            .pWaitSemaphoreInfos = wait ? &wait_info : NULL,
            .commandBufferInfoCount = 1,
            .pCommandBufferInfos = &cb_info,
            .signalSemaphoreInfoCount = signal,
            .pSignalSemaphoreInfos = signal ? &signal_info : NULL,
        };
        res = vkQueueSubmit2(q->handle, 1, &info, fence);
    } else {
        const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
        /* Values for timeline semaphores (ignored for a binary one). */
        const VkTimelineSemaphoreSubmitInfo values = {
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .pNext = chain,
            .waitSemaphoreValueCount = wait,
            .pWaitSemaphoreValues = wait ? &wait_value : NULL,
            .signalSemaphoreValueCount = signal,
            .pSignalSemaphoreValues = signal ? &signal_value : NULL,
        };
        const VkSubmitInfo info = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .pNext = wait || signal ? (const void *)&values : chain,
            .waitSemaphoreCount = wait,
            .pWaitSemaphores = wait ? &sync->wait : NULL,
            .pWaitDstStageMask = wait ? &stage : NULL,
            .commandBufferCount = 1,
            .pCommandBuffers = &cb,
            .signalSemaphoreCount = signal,
            .pSignalSemaphores = signal ? &sync->signal : NULL,
        };
        res = vkQueueSubmit(q->handle, 1, &info, fence);
    }
    pthread_mutex_unlock(&q->lock);
    if (!wl_check(res, use2 ? "vkQueueSubmit2" : "vkQueueSubmit"))
        return false;
    t->submissions++;
    return true;
}

static bool submit(wl_thread *t, wl_queue *q, VkCommandBuffer cb, VkFence fence,
                   const wl_sync *sync)
{
    return submit_chained(t, q, cb, fence, sync, NULL);
}

bool wl_submit(wl_thread *t, VkCommandBuffer cb, VkFence fence)
{
    return submit(t, t->queue, cb, fence, NULL);
}

bool wl_submit_sync(wl_thread *t, wl_queue *q, VkCommandBuffer cb, VkFence fence,
                    const wl_sync *sync)
{
    return submit(t, q, cb, fence, sync);
}

/* A frame's last main submission: --stall-every sleeps first (a stutter:
 * the frame takes that much longer), --frame-boundary ends the frame with
 * it. */
static bool submit_last(wl_thread *t, uint32_t frame, wl_queue *q, VkCommandBuffer cb,
                        VkFence fence, const wl_sync *sync)
{
    wl_context *ctx = t->ctx;
    if (ctx->stall_every && (frame + 1) % ctx->stall_every == 0) {
        struct timespec nap = { (time_t)(ctx->stall_ms / 1000),
                                (long)(ctx->stall_ms % 1000) * 1000000L };
        while (nanosleep(&nap, &nap) != 0)
            ;
    }
    if (!ctx->frame_boundary)
        return submit(t, q, cb, fence, sync);
    const VkFrameBoundaryEXT fb = {
        .sType = VK_STRUCTURE_TYPE_FRAME_BOUNDARY_EXT,
        .flags = VK_FRAME_BOUNDARY_FRAME_END_BIT_EXT,
        .frameID = atomic_fetch_add(&ctx->frame_ids, 1u),
    };
    return submit_chained(t, q, cb, fence, sync, &fb);
}

/* `rounds` steps of the shader's generator. Composing affine steps by
 * squaring keeps the host's check O(log rounds), so --work scales the GPU's
 * work and not the checking thread's. */
static uint32_t lcg(uint32_t x, uint32_t rounds)
{
    uint32_t mul = 1664525u, add = 1013904223u; /* one step: x -> mul x + add */
    while (rounds) {
        if (rounds & 1u)
            x = x * mul + add;
        add = add * mul + add; /* the step applied twice */
        mul *= mul;
        rounds >>= 1;
    }
    return x;
}

static bool check_values(const wl_thread *t, uint32_t frame)
{
    const uint32_t *got = (const uint32_t *)((const char *)t->readback.map + WL_READBACK_VALUES);
    for (uint32_t i = 0; i < WL_VALUES; i++) {
        /* Two dispatches of WL_ROUNDS x work steps each. */
        uint32_t want = lcg(frame_seed(t, frame) + i, 2 * WL_ROUNDS * t->ctx->work);
        if (got[i] != want) {
            wl_error("thread %u frame %u: value[%u] = 0x%08x, expected 0x%08x", t->index, frame, i,
                     got[i], want);
            return false;
        }
    }
    return true;
}

static bool check_pixel(const wl_thread *t, uint32_t frame, const char *what, uint32_t offset,
                        uint32_t x, uint32_t y, const uint8_t want[4])
{
    const uint8_t *p = (const uint8_t *)t->readback.map + offset + (size_t)(y * WL_EXTENT + x) * 4;
    if (memcmp(p, want, 4) == 0)
        return true;
    wl_error("thread %u frame %u: %s pixel (%u,%u) = %u,%u,%u,%u, expected %u,%u,%u,%u", t->index,
             frame, what, x, y, p[0], p[1], p[2], p[3], want[0], want[1], want[2], want[3]);
    return false;
}

static const uint8_t red[4] = { 255, 0, 0, 255 };
static const uint8_t blue[4] = { 0, 0, 255, 255 };
static const uint8_t green[4] = { 0, 255, 0, 255 };
static const uint8_t white[4] = { 255, 255, 255, 255 };

bool wl_thread_run_frame(wl_thread *t, uint32_t frame)
{
    wl_context *ctx = t->ctx;
    uint64_t regions = 0;
    uint32_t n = 0;

    /* Everything from the previous frame has completed. */
    if (!WL_VK(vkResetCommandPool, (ctx->device, t->pool, 0)))
        return false;
    wl_stamps_frame(t, frame);
    /* --cross-queue-semaphore: compute -> render pass (on the second queue)
     * -> dynamic rendering and the host (wl_sync.c). */
    const bool cross = ctx->cross_queue;
    const wl_sync to_render_pass = { .signal = t->binary };
    const wl_sync from_compute = { .wait = t->binary,
                                   .signal = t->timeline,
                                   .signal_value = t->timeline_value + 1 };
    const wl_sync from_render_pass = { .wait = t->timeline, .wait_value = t->timeline_value + 1 };
    if (!record_compute(t, frame, &regions) ||
        !submit(t, t->queue, t->cb[WL_CB_COMPUTE], t->fence[n++], cross ? &to_render_pass : NULL))
        return false;
    if (!record_render_pass(t, frame, &regions))
        return false;
    /* The frame's last submission (submit_last) is its dynamic rendering
     * where there is one, else the render pass. */
    wl_queue *const rp_queue = cross ? t->queue2 : t->queue;
    const wl_sync *const rp_sync = cross ? &from_compute : NULL;
    if (!(ctx->dynamic_rendering
              ? submit(t, rp_queue, t->cb[WL_CB_RENDER_PASS], t->fence[n++], rp_sync)
              : submit_last(t, frame, rp_queue, t->cb[WL_CB_RENDER_PASS], t->fence[n++], rp_sync)))
        return false;
    if (cross) {
        t->timeline_value++;
        t->semaphore_waits++;
    }
    if (ctx->dynamic_rendering && (!record_dynamic(t, frame, &regions) ||
                                   !submit_last(t, frame, t->queue, t->cb[WL_CB_DYNAMIC],
                                                t->fence[n++], cross ? &from_render_pass : NULL)))
        return false;
    if (cross && ctx->dynamic_rendering)
        t->semaphore_waits++;
    if (ctx->tiny && !wl_tiny_run(t, frame, t->fence[n++], &regions))
        return false;

    if (!wl_sync_host_wait(t) ||
        !WL_VK(vkWaitForFences, (ctx->device, n, t->fence, VK_TRUE, WL_FENCE_TIMEOUT_NS)) ||
        !WL_VK(vkResetFences, (ctx->device, n, t->fence)))
        return false;

    const uint32_t mid = WL_EXTENT / 2, far = WL_EXTENT - 2;
    if (!check_values(t, frame) ||
        !check_pixel(t, frame, "render pass", WL_READBACK_RP, mid, mid, red) ||
        !check_pixel(t, frame, "render pass", WL_READBACK_RP, 1, 1, blue) ||
        !check_pixel(t, frame, "render pass", WL_READBACK_RP, far, 1, white) ||
        !wl_tiny_check(t, frame))
        return false;
    if (ctx->dynamic_rendering &&
        (!check_pixel(t, frame, "dynamic rendering", WL_READBACK_DYN, mid, mid, red) ||
         !check_pixel(t, frame, "dynamic rendering", WL_READBACK_DYN, 1, 1, white) ||
         !check_pixel(t, frame, "dynamic rendering", WL_READBACK_DYN, far, 1, green)))
        return false;

    t->regions += regions;
    t->frames++;
    return true;
}
