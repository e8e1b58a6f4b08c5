/* SPDX-License-Identifier: MIT */
/* fr_frames.h — frames of one VkDevice (prefix fr_): which frame each timed
 * submission belongs to, when each frame began and ended on the CPU, what
 * its GPU work took, and which frames are ready to be written.
 *
 * A frame stream is a window's sequence of frames: one per VkSurfaceKHR
 * presented to (a swapchain created with oldSwapchain, or for the same
 * surface, continues its predecessor's stream and numbering), plus one for
 * VK_EXT_frame_boundary, whose VkFrameBoundaryEXT with FRAME_END on a
 * submission, present or sparse binding ends a frame. Every present ends
 * the current frame of each swapchain's stream it presents. A frame runs
 * from the end of the stream's previous frame (its first: from the stream's
 * creation or the first submission of the frame, whichever is earlier) to
 * its own end: present to present.
 *
 * The work of a frame is what was submitted between its start and its end.
 * Timed submissions are tagged with the current frame of the device's
 * primary stream (the first stream to end a frame; until then they wait in
 * a frame of their own that it adopts), so only that stream's frames carry
 * GPU times. A frame is ready once it ended and every submission tagged
 * with it was handed back (collected, or dropped); the collector writes the
 * ready frames of each stream in order (collector_sequence.c), so a frame
 * is written with its GPU time, or, when its work stays out for long
 * (FR_FORCE_AFTER newer frames ended), without.
 *
 * GPUTRACE_FRAMES=A..B: fr_window_open() answers whether the primary
 * stream's current frame is in [A, B]: the timeline times only then.
 *
 * Thread-safety: one mutex per device; the application's threads (submit,
 * present) and the collector (submission_done, take_ready) call in.
 */
#ifndef GPUTRACE_LAYER_FRAMES_FR_FRAMES_H
#define GPUTRACE_LAYER_FRAMES_FR_FRAMES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/alloc.h"
#include "layer/frame_boundary_ext.h"
#include "layer/frames/fr_busy.h"

/* Streams one device follows; the swapchains of more surfaces than that
 * have no frames. */
#define FR_MAX_STREAMS 16u
/* Frames of a stream not yet written: the ring starts with FR_RING_MIN
 * slots and doubles, up to FR_RING_MAX, when the collector falls behind
 * (a loaded machine: 500 frames a second and a collector kept from running
 * for 130 ms fill 64). Past FR_RING_MAX the oldest is given up and counted
 * (fr_frames_lost). */
#define FR_RING_MIN 64u
#define FR_RING_MAX 4096u
/* A frame whose work is still out once this many newer frames of its
 * stream ended is written without it. */
#define FR_FORCE_AFTER 32u

enum fr_kind {
    FR_SWAPCHAIN, /* presents to one surface */
    FR_BOUNDARY,  /* VK_EXT_frame_boundary */
};

/* Which frame a submission belongs to: stream 0 is none. */
typedef struct fr_tag fr_tag;
struct fr_tag {
    uint32_t stream; /* index + 1, or FR_TAG_EARLY */
    uint64_t frame;
};
/* Submitted before any stream ended a frame (see above). */
#define FR_TAG_EARLY UINT32_MAX

/* A frame ready to be written. */
typedef struct fr_record fr_record;
struct fr_record {
    uint32_t stream;         /* the device's stream index */
    uint32_t process_stream; /* numbered across the process from 1: track names */
    enum fr_kind kind;
    uint64_t frame;            /* from 1 within its stream */
    uint64_t start_ns, end_ns; /* BOOTTIME */
    bool has_interval;         /* it follows a frame of its stream: present to present */
    uint64_t swapchain;        /* the presented swapchain (0: frame boundary) */
    uint64_t surface;          /* its surface */
    uint32_t image_index;
    int32_t present_mode; /* VkPresentModeKHR, -1 unknown */
    uint32_t image_count; /* the swapchain's minImageCount */
    uint64_t frame_id;    /* VkFrameBoundaryEXT::frameID */
    uint32_t submissions; /* timed submissions in it */
    bool gpu_known;       /* its GPU work was collected */
    uint64_t gpu_time_ns; /* first GPU start to last GPU end */
    uint64_t gpu_busy_ns; /* union of its command buffers */
    bool incomplete;      /* written before all of its work came back */
};

typedef struct fr_device fr_device;

/* `first`..`last`: GPUTRACE_FRAMES (1 .. UINT64_MAX: every frame);
 * `boundaries`: the application enabled VK_EXT_frame_boundary. NULL when
 * out of memory: every other call takes NULL and does nothing. */
fr_device *fr_device_create(const gt_allocator *alloc, uint64_t first, uint64_t last,
                            bool boundaries);
void fr_device_destroy(fr_device *fd);

/* Swapchains: created (after the call succeeded) and about to be destroyed. */
void fr_swapchain_created(fr_device *fd, VkSwapchainKHR swapchain,
                          const VkSwapchainCreateInfoKHR *info, uint64_t now_ns);
void fr_swapchain_destroyed(fr_device *fd, VkSwapchainKHR swapchain);

/* vkQueuePresentKHR at `now_ns` ends a frame of each swapchain's stream;
 * `record`: the session traces (the frames go to the trace when they are
 * also inside the window). True when a recorded frame is ready at once
 * (nothing of it outstanding): the collector should look. */
bool fr_present(fr_device *fd, const VkPresentInfoKHR *info, uint64_t now_ns, bool record);

/* A VkFrameBoundaryEXT seen in a submission, present or sparse binding:
 * ends the boundary stream's frame when it has FRAME_END. Same result. */
bool fr_boundary(fr_device *fd, const VkFrameBoundaryEXT *fb, uint64_t now_ns, bool record);

/* A timed submission at `now_ns`: the frame it belongs to, counted as
 * outstanding until fr_submission_done. None (stream 0) on a device that
 * has neither a frame stream nor VK_EXT_frame_boundary: a program that
 * never presents or marks frames has no frames. */
fr_tag fr_tag_submission(fr_device *fd, uint64_t now_ns);
/* Its work came back (collected: `gpu` holds its command buffers' device
 * times; dropped: NULL or empty). */
void fr_submission_done(fr_device *fd, fr_tag tag, const fr_busy *gpu);

/* Ready frames, oldest first per stream, at most `max` into `out`; `all`:
 * the device goes away, every ended frame is ready. Collector only. */
uint32_t fr_take_ready(fr_device *fd, fr_record *out, uint32_t max, bool all);

/* Recorded frames given up so far, never to be written: the collector was
 * FR_RING_MAX frames behind, or the ring could not grow (no memory). */
uint64_t fr_frames_lost(fr_device *fd);

/* The first member of every fr_device, so the hooks' check below is one
 * load (fr_frames.c owns the rest). */
typedef struct fr_device_head fr_device_head;
struct fr_device_head {
    atomic_bool window_open;
};

/* Whether the timeline times now (GPUTRACE_FRAMES); true without a window. */
static inline bool fr_window_open(const fr_device *fd)
{
    return !fd || atomic_load_explicit(&((const fr_device_head *)(const void *)fd)->window_open,
                                       memory_order_relaxed);
}

/* The name of a present mode ("FIFO", "MAILBOX", ...), or NULL. */
const char *fr_present_mode_name(int32_t mode);

#endif
