/* timeline.c — placeholder for the timing feature: every hook point of
 * timeline.h is a no-op, so the layer is a pure pass-through. The timing
 * and trace-writing implementation replaces this file. */
#include "timeline.h"

VkResult
tl_instance_init(struct gt_instance *inst)
{
   (void)inst;
   return VK_SUCCESS;
}

void
tl_instance_finish(struct gt_instance *inst)
{
   (void)inst;
}

VkResult
tl_device_init(struct gt_device *dev)
{
   (void)dev;
   return VK_SUCCESS;
}

void
tl_device_finish(struct gt_device *dev)
{
   (void)dev;
}

void
tl_queue_acquired(struct gt_device *dev, VkQueue queue, uint32_t family, uint32_t index)
{
   (void)dev, (void)queue, (void)family, (void)index;
}

void
tl_queue_submit_pre(struct gt_device *dev, VkQueue queue, const struct tl_submit *submit)
{
   (void)dev, (void)queue, (void)submit;
}

void
tl_queue_submit_post(struct gt_device *dev, VkQueue queue, const struct tl_submit *submit,
                     VkResult result)
{
   (void)dev, (void)queue, (void)submit, (void)result;
}

void
tl_queue_idle(struct gt_device *dev, VkQueue queue)
{
   (void)dev, (void)queue;
}

void
tl_device_idle(struct gt_device *dev)
{
   (void)dev;
}

void
tl_command_pool_created(struct gt_device *dev, VkCommandPool pool,
                        const VkCommandPoolCreateInfo *info)
{
   (void)dev, (void)pool, (void)info;
}

void
tl_command_pool_destroy(struct gt_device *dev, VkCommandPool pool)
{
   (void)dev, (void)pool;
}

void
tl_command_pool_reset(struct gt_device *dev, VkCommandPool pool, VkCommandPoolResetFlags flags)
{
   (void)dev, (void)pool, (void)flags;
}

void
tl_command_buffers_allocated(struct gt_device *dev, const VkCommandBufferAllocateInfo *info,
                             const VkCommandBuffer *buffers)
{
   (void)dev, (void)info, (void)buffers;
}

void
tl_command_buffers_free(struct gt_device *dev, VkCommandPool pool, uint32_t count,
                        const VkCommandBuffer *buffers)
{
   (void)dev, (void)pool, (void)count, (void)buffers;
}

void
tl_command_buffer_reset(struct gt_device *dev, VkCommandBuffer cb, VkCommandBufferResetFlags flags)
{
   (void)dev, (void)cb, (void)flags;
}

void
tl_cmd_begin(struct gt_device *dev, VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
   (void)dev, (void)cb, (void)info;
}

void
tl_cmd_end(struct gt_device *dev, VkCommandBuffer cb)
{
   (void)dev, (void)cb;
}

void
tl_cmd_pre(struct gt_device *dev, VkCommandBuffer cb, const struct tl_cmd *cmd)
{
   (void)dev, (void)cb, (void)cmd;
}

void
tl_cmd_post(struct gt_device *dev, VkCommandBuffer cb, const struct tl_cmd *cmd)
{
   (void)dev, (void)cb, (void)cmd;
}
