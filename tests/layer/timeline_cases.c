/* timeline_cases — submission patterns the workload does not exercise, for
 * testing VK_LAYER_GPUTRACE_timeline's timing on lavapipe:
 *
 *   resubmit      one recording submitted 4 times (waiting each time, then
 *                 re-submitting at once: the layer must read the previous
 *                 execution before its queries are reused)
 *   secondary     a primary executing a secondary (outside any render
 *                 pass) that holds a label and a fill, submitted twice
 *   simultaneous  a SIMULTANEOUS_USE command buffer pending twice at once
 *                 (no per-region timing: one "Submission" event each)
 *   batches       one vkQueueSubmit with two VkSubmitInfo
 *   second device a second VkDevice (its own clock id and sequence)
 *
 * Prints "timeline_cases: events=E submission_events=S devices=D": the
 * render stage events the layer should write. --validate enables the
 * Khronos validation layer with synchronization validation and fails on
 * any error; --no-destroy exits without destroying anything (the layer
 * must still finish its trace). Exit 0 success, 1 failure, 2 usage.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

#define PROG "timeline_cases"
#define BUF_SIZE 65536u
#define TIMEOUT_NS (30ull * 1000 * 1000 * 1000)

static atomic_uint validation_errors;
static unsigned long events, submission_events;

struct dev {
   VkDevice device;
   VkQueue queue;
   VkCommandPool pool;
   VkBuffer a, b;
   VkDeviceMemory memory;
   VkFence fence;
   PFN_vkCmdBeginDebugUtilsLabelEXT begin_label;
   PFN_vkCmdEndDebugUtilsLabelEXT end_label;
};

#define CHECK(call)                                                       \
   do {                                                                   \
      VkResult r_ = (call);                                               \
      if (r_ != VK_SUCCESS) {                                             \
         fprintf(stderr, PROG ": %s failed: %d (line %d)\n", #call, (int)r_, \
                 __LINE__);                                               \
         exit(1);                                                         \
      }                                                                   \
   } while (0)

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   (void)types, (void)user;
   if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
      atomic_fetch_add(&validation_errors, 1);
      fprintf(stderr, PROG ": validation error: %s\n", data->pMessage);
   }
   return VK_FALSE;
}

static void
create_device(VkPhysicalDevice pd, uint32_t family, struct dev *d)
{
   const float priority = 1.0f;
   const VkDeviceQueueCreateInfo qi = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = family,
      .queueCount = 1,
      .pQueuePriorities = &priority,
   };
   const VkDeviceCreateInfo di = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
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
   const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   CHECK(vkCreateFence(d->device, &fi, NULL, &d->fence));
   d->begin_label =
      (PFN_vkCmdBeginDebugUtilsLabelEXT)vkGetDeviceProcAddr(d->device, "vkCmdBeginDebugUtilsLabelEXT");
   d->end_label =
      (PFN_vkCmdEndDebugUtilsLabelEXT)vkGetDeviceProcAddr(d->device, "vkCmdEndDebugUtilsLabelEXT");
}

static void
destroy_device(struct dev *d)
{
   vkDeviceWaitIdle(d->device);
   vkDestroyFence(d->device, d->fence, NULL);
   vkDestroyBuffer(d->device, d->a, NULL);
   vkDestroyBuffer(d->device, d->b, NULL);
   vkFreeMemory(d->device, d->memory, NULL);
   vkDestroyCommandPool(d->device, d->pool, NULL);
   vkDestroyDevice(d->device, NULL);
}

static VkCommandBuffer
alloc_cb(struct dev *d, VkCommandBufferLevel level)
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

static void
begin(VkCommandBuffer cb, VkCommandBufferUsageFlags flags, bool secondary)
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
static void
transfer_barrier(VkCommandBuffer cb)
{
   const VkMemoryBarrier mb = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
      .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
   };
   vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                        &mb, 0, NULL, 0, NULL);
}

static bool
label(struct dev *d, VkCommandBuffer cb, const char *name)
{
   if (!d->begin_label)
      return false;
   const VkDebugUtilsLabelEXT l = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                   .pLabelName = name};
   d->begin_label(cb, &l);
   return true;
}

static void
submit(struct dev *d, uint32_t count, const VkCommandBuffer *cbs, VkFence fence)
{
   const VkSubmitInfo si = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = count,
      .pCommandBuffers = cbs,
   };
   CHECK(vkQueueSubmit(d->queue, 1, &si, fence));
}

static void
wait(struct dev *d)
{
   CHECK(vkWaitForFences(d->device, 1, &d->fence, VK_TRUE, TIMEOUT_NS));
   CHECK(vkResetFences(d->device, 1, &d->fence));
}

static void
case_resubmit(struct dev *d)
{
   VkCommandBuffer cb = alloc_cb(d, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
   begin(cb, 0, false);
   unsigned regions = 1;
   transfer_barrier(cb);
   bool labelled = label(d, cb, "reused");
   vkCmdFillBuffer(cb, d->a, 0, BUF_SIZE, 0x01020304);
   transfer_barrier(cb);
   const VkBufferCopy copy = {0, 0, BUF_SIZE};
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

static void
case_secondary(struct dev *d)
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

static void
case_simultaneous(struct dev *d)
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

static void
case_batches(struct dev *d)
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
      {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cbs[0]},
      {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cbs[1]},
   };
   CHECK(vkQueueSubmit(d->queue, 2, si, d->fence));
   wait(d);
   events += 4;
}

int
main(int argc, char **argv)
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

   const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
   const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
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
      (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                 "vkDestroyDebugUtilsMessengerEXT");
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

   struct dev d1, d2;
   create_device(pd, family, &d1);
   case_resubmit(&d1);
   case_secondary(&d1);
   case_simultaneous(&d1);
   case_batches(&d1);

   create_device(pd, family, &d2);
   case_batches(&d2);

   unsigned errors = atomic_load(&validation_errors);
   printf(PROG ": events=%lu submission_events=%lu devices=2\n", events, submission_events);
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
