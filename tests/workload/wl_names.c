/* SPDX-License-Identifier: MIT */
/* wl_names.c — gputrace-workload names its objects with
 * vkSetDebugUtilsObjectNameEXT (when VK_EXT_debug_utils is there), so
 * traces of it show names the tests can expect. The names, <t> being the
 * worker thread's index (0, 1, ...) and <q> the queue's:
 *
 *   VkQueue          "wl queue <q>"
 *   VkRenderPass     "wl render pass"
 *   VkPipeline       "wl compute pipeline", "wl render pass pipeline",
 *                    "wl dynamic rendering pipeline"
 *   VkCommandBuffer  "wl compute cb <t>", "wl render pass cb <t>",
 *                    "wl dynamic cb <t>", "wl secondary cb <t>"
 *   VkFramebuffer    "wl framebuffer <t>"
 *   VkImage          "wl rp image <t>", "wl dyn image <t>"
 *   VkImageView      "wl rp view <t>", "wl dyn view <t>"
 *   VkBuffer         "wl values buffer <t>", "wl indirect buffer <t>",
 *                    "wl readback buffer <t>", "wl tiny buffer <t>"
 *   VkDeviceMemory   the same with "memory" for "buffer" / "image"
 *
 * The labels wl_frame.c records are named in its own header comment.
 */
#include <stdarg.h>
#include <stdio.h>

#include "tests/workload/wl.h"

static void name(const wl_context *ctx, VkObjectType type, uint64_t handle, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void name(const wl_context *ctx, VkObjectType type, uint64_t handle, const char *fmt, ...)
{
    if (!ctx->set_name || !handle)
        return;
    char text[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const VkDebugUtilsObjectNameInfoEXT info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
        .objectType = type,
        .objectHandle = handle,
        .pObjectName = text,
    };
    /* A name is a courtesy: a failure changes nothing the workload checks. */
    (void)ctx->set_name(ctx->device, &info);
}

#define H(h) ((uint64_t)(uintptr_t)(h))

void wl_name_shared(const wl_context *ctx)
{
    for (uint32_t q = 0; q < ctx->queue_count; q++)
        name(ctx, VK_OBJECT_TYPE_QUEUE, H(ctx->queues[q].handle), "wl queue %u", q);
    name(ctx, VK_OBJECT_TYPE_RENDER_PASS, H(ctx->render_pass), "wl render pass");
    name(ctx, VK_OBJECT_TYPE_PIPELINE, H(ctx->compute_pipeline), "wl compute pipeline");
    name(ctx, VK_OBJECT_TYPE_PIPELINE, H(ctx->render_pass_pipeline), "wl render pass pipeline");
    name(ctx, VK_OBJECT_TYPE_PIPELINE, H(ctx->dynamic_pipeline), "wl dynamic rendering pipeline");
}

void wl_name_thread(const wl_thread *t)
{
    const wl_context *ctx = t->ctx;
    const uint32_t i = t->index;
    name(ctx, VK_OBJECT_TYPE_COMMAND_BUFFER, H(t->cb[WL_CB_COMPUTE]), "wl compute cb %u", i);
    name(ctx, VK_OBJECT_TYPE_COMMAND_BUFFER, H(t->cb[WL_CB_RENDER_PASS]), "wl render pass cb %u",
         i);
    name(ctx, VK_OBJECT_TYPE_COMMAND_BUFFER, H(t->cb[WL_CB_DYNAMIC]), "wl dynamic cb %u", i);
    name(ctx, VK_OBJECT_TYPE_COMMAND_BUFFER, H(t->secondary), "wl secondary cb %u", i);
    name(ctx, VK_OBJECT_TYPE_FRAMEBUFFER, H(t->framebuffer), "wl framebuffer %u", i);
    name(ctx, VK_OBJECT_TYPE_IMAGE, H(t->rp_target.handle), "wl rp image %u", i);
    name(ctx, VK_OBJECT_TYPE_IMAGE_VIEW, H(t->rp_target.view), "wl rp view %u", i);
    name(ctx, VK_OBJECT_TYPE_IMAGE, H(t->dyn_target.handle), "wl dyn image %u", i);
    name(ctx, VK_OBJECT_TYPE_IMAGE_VIEW, H(t->dyn_target.view), "wl dyn view %u", i);
    name(ctx, VK_OBJECT_TYPE_DEVICE_MEMORY, H(t->rp_target.memory), "wl rp memory %u", i);
    name(ctx, VK_OBJECT_TYPE_DEVICE_MEMORY, H(t->dyn_target.memory), "wl dyn memory %u", i);
    const struct {
        const wl_buffer *b;
        const char *what;
    } buffers[] = {
        { &t->values, "values" },
        { &t->indirect, "indirect" },
        { &t->readback, "readback" },
        { &t->tiny_words, "tiny" },
    };
    for (size_t k = 0; k < sizeof buffers / sizeof buffers[0]; k++) {
        name(ctx, VK_OBJECT_TYPE_BUFFER, H(buffers[k].b->handle), "wl %s buffer %u",
             buffers[k].what, i);
        name(ctx, VK_OBJECT_TYPE_DEVICE_MEMORY, H(buffers[k].b->memory), "wl %s memory %u",
             buffers[k].what, i);
    }
}
