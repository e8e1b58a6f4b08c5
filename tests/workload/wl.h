/* SPDX-License-Identifier: MIT */
/* wl.h — gputrace-workload's shared types: the Vulkan context every thread
 * uses, one thread's resources, and the error-checking helpers.
 *
 *   wl_context.c        instance, validation, device and queue selection
 *   wl_frame.c          pipelines, per-thread resources, recording a frame
 *   wl_stamps.c         --app-timestamps: the layer's timestamps, by hand
 *   wl_tiny.c           --submissions-per-frame: tiny submissions
 *   wl_sync.c           --cross-queue-semaphore: semaphores between queues
 *   gputrace-workload.c command line, threads, the summary line
 */
#ifndef GPUTRACE_WORKLOAD_WL_H
#define GPUTRACE_WORKLOAD_WL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/frame_boundary_ext.h"

#define WL_PROG        "gputrace-workload"
#define WL_MAX_QUEUES  16
#define WL_MAX_THREADS 64

/* Sizes of the work in one frame. */
#define WL_VALUES             4096u /* uints in the compute buffer */
#define WL_ROUNDS             64u   /* LCG steps per element per dispatch, times --work */
#define WL_MAX_WORK           4096u
#define WL_EXTENT             64u      /* width = height of the render targets */
#define WL_MAX_TINY           1000u    /* --submissions-per-frame */
#define WL_MAX_STALL_EVERY    1000000u /* --stall-every */
#define WL_MAX_STALL_MS       60000u   /* --stall-ms */
#define WL_MAX_LAYER_SETTINGS 8u       /* --layer-setting */

typedef struct wl_options wl_options;
struct wl_options {
    uint32_t frames;
    uint32_t threads;
    uint32_t queues;
    uint32_t work; /* --work: scales the GPU work of every dispatch and draw */
    uint32_t tiny; /* --submissions-per-frame */
    bool validate;
    bool app_stamps;   /* --app-timestamps */
    bool cross_queue;  /* --cross-queue-semaphore */
    const char *layer; /* --layer: named in ppEnabledLayerNames; NULL: none */
    /* --frame-boundary: each frame's last submission carries a
     * VkFrameBoundaryEXT with FRAME_END (VK_EXT_frame_boundary). */
    bool frame_boundary;
    /* --stall-every N --stall-ms M: every Nth frame (0: none) sleeps M ms
     * before its last submission, a stutter the trace must show. */
    uint32_t stall_every, stall_ms;
    bool thread_cpu; /* --thread-cpu */
    /* --layer-setting KEY=VALUE: strings for VK_LAYER_GPUTRACE_timeline in
     * a VkLayerSettingsCreateInfoEXT chained to the instance create info. */
    const char *setting_keys[WL_MAX_LAYER_SETTINGS];
    const char *setting_values[WL_MAX_LAYER_SETTINGS];
    uint32_t nsettings;
};

/* Queues are externally synchronised: threads sharing one take the lock. */
typedef struct wl_queue wl_queue;
struct wl_queue {
    VkQueue handle;
    pthread_mutex_t lock;
};

typedef struct wl_context wl_context;
struct wl_context {
    VkInstance instance;
    uint32_t api_version; /* requested for the instance */
    VkDebugUtilsMessengerEXT messenger;
    bool validate;
    uint32_t work;
    atomic_uint validation_errors;

    VkPhysicalDevice physical_device;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    VkDevice device;
    uint32_t family;
    wl_queue queues[WL_MAX_QUEUES];
    uint32_t queue_count;

    /* Optional features, decided once. */
    bool labels;            /* VK_EXT_debug_utils present */
    bool dynamic_rendering; /* Vulkan 1.3 feature */
    bool submit2;           /* Vulkan 1.3 synchronization2 */
    bool app_stamps;        /* --app-timestamps (hostQueryReset enabled) */
    bool llvmpipe;          /* lavapipe: the layer's workarounds apply */
    uint32_t tiny;          /* --submissions-per-frame */
    bool cross_queue;       /* --cross-queue-semaphore (timeline semaphores enabled) */
    bool frame_boundary;    /* --frame-boundary: the extension is enabled */
    uint32_t stall_every, stall_ms;
    atomic_uint frame_ids; /* VkFrameBoundaryEXT::frameID of the next frame */
    PFN_vkCmdBeginDebugUtilsLabelEXT begin_label;
    PFN_vkCmdEndDebugUtilsLabelEXT end_label;
    PFN_vkSetDebugUtilsObjectNameEXT set_name; /* NULL without VK_EXT_debug_utils */

    /* Shared by all threads. */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout compute_layout;
    VkPipeline compute_pipeline;
    VkRenderPass render_pass;
    VkPipelineLayout graphics_layout;
    VkPipeline render_pass_pipeline;
    VkPipeline dynamic_pipeline;

    /* What the program made of device memory, buffers and images over the
     * whole run (the memory line of the summary). */
    atomic_ulong allocations, allocated_bytes, buffers, images;
};

/* What one submission waits for and signals (--cross-queue-semaphore): a
 * value of 0 means a binary semaphore. */
typedef struct wl_sync wl_sync;
struct wl_sync {
    VkSemaphore wait;
    uint64_t wait_value;
    VkSemaphore signal;
    uint64_t signal_value;
};

typedef struct wl_buffer wl_buffer;
struct wl_buffer {
    VkBuffer handle;
    VkDeviceMemory memory;
    void *map; /* host-visible buffers only */
};

typedef struct wl_image wl_image;
struct wl_image {
    VkImage handle;
    VkDeviceMemory memory;
    VkImageView view;
};

enum {
    WL_CB_COMPUTE,
    WL_CB_RENDER_PASS,
    WL_CB_DYNAMIC,
    WL_CB_COUNT
};

/* --app-timestamps: one thread's query pool and where its recording is. */
typedef struct wl_stamps wl_stamps;
struct wl_stamps {
    VkQueryPool pool;
    uint32_t next, end; /* free queries of this frame's half */
    bool work;          /* a command doing work since the last timestamp */
    bool shared;        /* the last timestamp may be shared by the next boundary */
    bool inside;        /* in a render pass or rendering instance */
    uint64_t written;   /* timestamps written, for the summary */
};

/* One worker: its own pool, buffers, images and fences; only the device,
 * the pipelines and possibly the queue are shared. */
typedef struct wl_thread wl_thread;
struct wl_thread {
    pthread_t thread;
    wl_context *ctx;
    uint32_t index;
    uint32_t frames_to_run;
    wl_queue *queue;
    wl_queue *queue2; /* --cross-queue-semaphore: the render pass's queue */

    VkCommandPool pool;
    VkCommandBuffer cb[WL_CB_COUNT];
    VkCommandBuffer secondary;
    VkFence fence[WL_CB_COUNT + 1]; /* the last: the tiny submissions' */

    wl_buffer values;   /* the compute kernel's data */
    wl_buffer indirect; /* VkDispatchIndirectCommand */
    wl_buffer readback; /* values, then both images, for the host */
    VkDescriptorPool descriptor_pool;
    VkDescriptorSet set;

    wl_image rp_target;  /* classic render pass */
    wl_image dyn_target; /* dynamic rendering */
    VkFramebuffer framebuffer;

    wl_stamps stamps;
    /* --cross-queue-semaphore: compute -> render pass (binary), render pass
     * -> dynamic rendering and the host (timeline, one value per frame). */
    VkSemaphore binary, timeline;
    uint64_t timeline_value;
    uint64_t semaphore_waits, host_waits; /* on the GPU, on the host */
    VkCommandBuffer tiny_cb[WL_MAX_TINY];
    wl_buffer tiny_words; /* one word filled by each tiny submission */

    /* Results. */
    uint64_t frames, submissions, regions;
    uint64_t cpu_ns; /* the thread's CPU time over its frames */
    bool ok;
};

/* Readback buffer layout. */
#define WL_READBACK_VALUES 0u
#define WL_READBACK_RP     (WL_VALUES * 4u)
#define WL_READBACK_DYN    (WL_READBACK_RP + WL_EXTENT * WL_EXTENT * 4u)
#define WL_READBACK_SIZE   (WL_READBACK_DYN + WL_EXTENT * WL_EXTENT * 4u)

/* Prints "gputrace-workload: <fn> failed: <VkResult>" unless res is
 * VK_SUCCESS. */
bool wl_check(VkResult res, const char *fn);
#define WL_VK(fn, args) wl_check(fn args, #fn)
const char *wl_result_name(VkResult res);
void wl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* wl_context.c */
bool wl_context_init(wl_context *ctx, const wl_options *opt);
void wl_context_finish(wl_context *ctx);

/* wl_frame.c */
bool wl_pipelines_init(wl_context *ctx);
void wl_pipelines_finish(wl_context *ctx);
bool wl_thread_init(wl_thread *t);
void wl_thread_finish(wl_thread *t);
bool wl_thread_run_frame(wl_thread *t, uint32_t frame);
bool wl_submit(wl_thread *t, VkCommandBuffer cb, VkFence fence);
/* The same on queue `q`, waiting for and signalling what `sync` says (may
 * be NULL). */
bool wl_submit_sync(wl_thread *t, wl_queue *q, VkCommandBuffer cb, VkFence fence,
                    const wl_sync *sync);
bool wl_buffer_make(wl_context *ctx, wl_buffer *b, VkDeviceSize size, VkBufferUsageFlags usage,
                    bool host);
void wl_buffer_destroy(wl_context *ctx, wl_buffer *b);

/* wl_stamps.c: each a no-op without --app-timestamps. wl_stamp writes the
 * timestamp of a boundary (or shares the last), wl_stamp_after the one after
 * a command doing work, wl_stamps_inside enters or leaves an instance. */
bool wl_stamps_init(wl_thread *t);
void wl_stamps_finish(wl_thread *t);
void wl_stamps_frame(wl_thread *t, uint32_t frame);
void wl_stamps_begin(wl_thread *t);
void wl_stamp(wl_thread *t, VkCommandBuffer cb);
void wl_stamp_after(wl_thread *t, VkCommandBuffer cb);
void wl_stamps_inside(wl_thread *t, VkCommandBuffer cb, bool inside);

/* wl_names.c: names the objects (the list is there), when it can. */
void wl_name_shared(const wl_context *ctx);
void wl_name_thread(const wl_thread *t);

/* wl_sync.c: each a no-op without --cross-queue-semaphore. */
bool wl_sync_init(wl_thread *t);
void wl_sync_finish(wl_thread *t);
/* The frame's host wait for the render pass's timeline value. */
bool wl_sync_host_wait(wl_thread *t);

/* wl_tiny.c */
bool wl_tiny_init(wl_thread *t);
void wl_tiny_finish(wl_thread *t);
bool wl_tiny_run(wl_thread *t, uint32_t frame, VkFence fence, uint64_t *regions);
bool wl_tiny_check(const wl_thread *t, uint32_t frame);

#endif
