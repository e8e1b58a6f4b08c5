/* SPDX-License-Identifier: MIT */
/* fr_frames.c — see fr_frames.h. */
#include "layer/frames/fr_frames.h"

#include <pthread.h>
#include <string.h>

/* Live swapchains one device follows. */
#define FR_MAX_SWAPCHAINS 32u

typedef struct fr_slot fr_slot;
struct fr_slot {
    uint64_t frame; /* 0: empty */
    uint64_t start_ns, end_ns;
    bool ended, record;
    uint32_t pending, submissions;
    fr_busy gpu;
    uint64_t swapchain, frame_id;
    uint32_t image_index;
};

typedef struct fr_stream fr_stream;
struct fr_stream {
    enum fr_kind kind;
    uint64_t surface, swapchain; /* the surface's newest swapchain */
    int32_t present_mode;
    uint32_t image_count;
    uint32_t process_number;
    uint64_t current;       /* the open frame's number, from 1 */
    uint64_t current_start; /* and its start (BOOTTIME) */
    uint64_t oldest;        /* the oldest frame not yet taken */
    fr_slot *ring;          /* frame f in ring[f % cap] */
    uint32_t cap;           /* FR_RING_MIN, doubled up to FR_RING_MAX */
};

struct fr_device {
    fr_device_head head; /* first: fr_window_open() reads it */
    gt_allocator alloc;
    pthread_mutex_t lock;
    uint64_t first, last; /* GPUTRACE_FRAMES */
    bool boundaries;      /* VK_EXT_frame_boundary enabled */
    fr_stream *streams[FR_MAX_STREAMS];
    uint32_t nstreams;
    int32_t primary; /* stream index, -1 before any frame ended */
    /* Frame 1's work while no stream has ended a frame yet: the primary
     * stream adopts it (its `frame` is 1 while used). */
    fr_slot early;
    struct {
        uint64_t swapchain;
        uint32_t stream;
    } chains[FR_MAX_SWAPCHAINS];
    uint32_t nchains;
    uint64_t lost; /* recorded frames given up (fr_frames_lost) */
};

/* Numbers streams across the process (several devices): track names. */
static atomic_uint process_streams;

fr_device *fr_device_create(const gt_allocator *alloc, uint64_t first, uint64_t last,
                            bool boundaries)
{
    fr_device *fd = gt_zalloc(alloc, sizeof *fd, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!fd)
        return NULL;
    fd->alloc = *alloc;
    pthread_mutex_init(&fd->lock, NULL);
    fd->first = first ? first : 1;
    fd->last = last >= fd->first ? last : UINT64_MAX;
    fd->primary = -1;
    fd->boundaries = boundaries;
    atomic_init(&fd->head.window_open, fd->first <= 1);
    return fd;
}

void fr_device_destroy(fr_device *fd)
{
    if (!fd)
        return;
    gt_allocator alloc = fd->alloc;
    for (uint32_t i = 0; i < fd->nstreams; i++) {
        gt_free(&alloc, fd->streams[i]->ring);
        gt_free(&alloc, fd->streams[i]);
    }
    pthread_mutex_destroy(&fd->lock);
    gt_free(&alloc, fd);
}

/* ---- streams ----------------------------------------------------------------------- */

static fr_stream *new_stream(fr_device *fd, enum fr_kind kind, uint64_t now_ns)
{
    if (fd->nstreams == FR_MAX_STREAMS)
        return NULL;
    fr_stream *st = gt_zalloc(&fd->alloc, sizeof *st, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!st)
        return NULL;
    st->ring =
        gt_zalloc(&fd->alloc, FR_RING_MIN * sizeof *st->ring, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!st->ring) {
        gt_free(&fd->alloc, st);
        return NULL;
    }
    st->cap = FR_RING_MIN;
    st->kind = kind;
    st->present_mode = -1;
    st->process_number = atomic_fetch_add(&process_streams, 1u) + 1;
    st->current = st->oldest = 1;
    st->current_start = now_ns;
    fd->streams[fd->nstreams++] = st;
    return st;
}

static int32_t stream_of_swapchain(const fr_device *fd, uint64_t swapchain)
{
    for (uint32_t i = 0; i < fd->nchains; i++)
        if (fd->chains[i].swapchain == swapchain)
            return (int32_t)fd->chains[i].stream;
    return -1;
}

void fr_swapchain_created(fr_device *fd, VkSwapchainKHR swapchain,
                          const VkSwapchainCreateInfoKHR *info, uint64_t now_ns)
{
    if (!fd || !info || swapchain == VK_NULL_HANDLE)
        return;
    const uint64_t handle = (uint64_t)swapchain, surface = (uint64_t)info->surface;
    pthread_mutex_lock(&fd->lock);
    /* The surface's stream goes on (a resized window), else the old
     * swapchain's. */
    int32_t index = -1;
    for (uint32_t i = 0; i < fd->nstreams && index < 0; i++)
        if (fd->streams[i]->kind == FR_SWAPCHAIN && fd->streams[i]->surface == surface)
            index = (int32_t)i;
    if (index < 0 && info->oldSwapchain != VK_NULL_HANDLE)
        index = stream_of_swapchain(fd, (uint64_t)info->oldSwapchain);
    if (index < 0 && new_stream(fd, FR_SWAPCHAIN, now_ns))
        index = (int32_t)fd->nstreams - 1;
    if (index >= 0 && fd->nchains < FR_MAX_SWAPCHAINS && stream_of_swapchain(fd, handle) < 0) {
        fr_stream *st = fd->streams[index];
        st->surface = surface;
        st->swapchain = handle;
        st->present_mode = (int32_t)info->presentMode;
        st->image_count = info->minImageCount;
        fd->chains[fd->nchains].swapchain = handle;
        fd->chains[fd->nchains].stream = (uint32_t)index;
        fd->nchains++;
    }
    pthread_mutex_unlock(&fd->lock);
}

void fr_swapchain_destroyed(fr_device *fd, VkSwapchainKHR swapchain)
{
    if (!fd || swapchain == VK_NULL_HANDLE)
        return;
    pthread_mutex_lock(&fd->lock);
    for (uint32_t i = 0; i < fd->nchains; i++) {
        if (fd->chains[i].swapchain == (uint64_t)swapchain) {
            fd->chains[i] = fd->chains[--fd->nchains];
            break;
        }
    }
    pthread_mutex_unlock(&fd->lock);
}

/* ---- frames ------------------------------------------------------------------------ */

/* Doubles the ring (up to FR_RING_MAX) until frames oldest..f fit, each
 * frame not yet taken moving to its slot in the new one. False when it is
 * at its largest or there is no memory: the caller gives a frame up. */
static bool grow_ring(fr_device *fd, fr_stream *st, uint64_t f)
{
    uint32_t cap = st->cap;
    while (cap < FR_RING_MAX && f - st->oldest >= cap)
        cap *= 2;
    if (cap == st->cap)
        return false;
    fr_slot *ring =
        gt_zalloc(&fd->alloc, (size_t)cap * sizeof *ring, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!ring)
        return false;
    for (uint32_t i = 0; i < st->cap; i++) {
        const fr_slot *s = &st->ring[i];
        if (s->frame && s->frame >= st->oldest)
            ring[s->frame % cap] = *s;
    }
    gt_free(&fd->alloc, st->ring);
    st->ring = ring;
    st->cap = cap;
    return true;
}

/* Frame f's slot, made for it. A frame not yet taken in that slot means the
 * collector is a whole ring behind: the ring grows, and only where it
 * cannot is that frame given up (counted when it was to be recorded). */
static fr_slot *slot_for(fr_device *fd, fr_stream *st, uint64_t f)
{
    fr_slot *s = &st->ring[f % st->cap];
    if (s->frame == f)
        return s;
    if (s->frame && s->frame >= st->oldest && grow_ring(fd, st, f))
        return slot_for(fd, st, f);
    if (s->frame && s->frame >= st->oldest && s->record)
        fd->lost++;
    memset(s, 0, sizeof *s);
    s->frame = f;
    return s;
}

static void update_window(fr_device *fd)
{
    const uint64_t next = fd->primary < 0 ? 1 : fd->streams[fd->primary]->current;
    atomic_store_explicit(&fd->head.window_open, next >= fd->first && next <= fd->last,
                          memory_order_relaxed);
}

/* Ends the open frame of stream `index`; `fill` describes it. True when it
 * is recorded and nothing of it is outstanding. Lock held. */
static bool end_frame(fr_device *fd, uint32_t index, uint64_t now_ns, bool record,
                      const fr_slot *fill)
{
    fr_stream *st = fd->streams[index];
    const uint64_t f = st->current;
    fr_slot *s = slot_for(fd, st, f);
    bool in_window = atomic_load_explicit(&fd->head.window_open, memory_order_relaxed);
    if (fd->primary < 0) {
        /* The first frame to end: its stream is the primary one, and the work
         * submitted so far is its first frame's. */
        fd->primary = (int32_t)index;
        if (fd->early.frame) {
            s->pending += fd->early.pending;
            s->submissions += fd->early.submissions;
            fr_busy_merge(&s->gpu, &fd->early.gpu);
            if (fd->early.start_ns && fd->early.start_ns < st->current_start)
                st->current_start = fd->early.start_ns;
        }
    }
    if ((int32_t)index == fd->primary)
        in_window = f >= fd->first && f <= fd->last;
    s->start_ns = st->current_start;
    s->end_ns = now_ns > s->start_ns ? now_ns : s->start_ns;
    s->ended = true;
    s->record = record && in_window;
    s->swapchain = fill->swapchain;
    s->image_index = fill->image_index;
    s->frame_id = fill->frame_id;
    st->current = f + 1;
    st->current_start = s->end_ns;
    if ((int32_t)index == fd->primary)
        update_window(fd);
    return s->record && !s->pending;
}

bool fr_present(fr_device *fd, const VkPresentInfoKHR *info, uint64_t now_ns, bool record)
{
    if (!fd || !info)
        return false;
    bool ready = false;
    pthread_mutex_lock(&fd->lock);
    for (uint32_t i = 0; i < info->swapchainCount; i++) {
        const uint64_t sc = (uint64_t)info->pSwapchains[i];
        const int32_t index = stream_of_swapchain(fd, sc);
        if (index < 0)
            continue;
        const fr_slot fill = {
            .swapchain = sc,
            .image_index = info->pImageIndices ? info->pImageIndices[i] : 0,
        };
        ready = end_frame(fd, (uint32_t)index, now_ns, record, &fill) || ready;
    }
    pthread_mutex_unlock(&fd->lock);
    return ready;
}

bool fr_boundary(fr_device *fd, const VkFrameBoundaryEXT *fb, uint64_t now_ns, bool record)
{
    if (!fd || !fb || !(fb->flags & VK_FRAME_BOUNDARY_FRAME_END_BIT_EXT))
        return false;
    bool ready = false;
    pthread_mutex_lock(&fd->lock);
    int32_t index = -1;
    for (uint32_t i = 0; i < fd->nstreams && index < 0; i++)
        if (fd->streams[i]->kind == FR_BOUNDARY)
            index = (int32_t)i;
    if (index < 0 && new_stream(fd, FR_BOUNDARY, now_ns))
        index = (int32_t)fd->nstreams - 1;
    if (index >= 0) {
        const fr_slot fill = { .frame_id = fb->frameID };
        ready = end_frame(fd, (uint32_t)index, now_ns, record, &fill);
    }
    pthread_mutex_unlock(&fd->lock);
    return ready;
}

fr_tag fr_tag_submission(fr_device *fd, uint64_t now_ns)
{
    fr_tag tag = { 0, 0 };
    if (!fd)
        return tag;
    pthread_mutex_lock(&fd->lock);
    if (fd->primary < 0 && !fd->nstreams && !fd->boundaries) {
        pthread_mutex_unlock(&fd->lock); /* no frames here (yet) */
        return tag;
    }
    fr_slot *s;
    if (fd->primary < 0) {
        s = &fd->early;
        if (!s->frame) {
            s->frame = 1;
            s->start_ns = now_ns;
        }
        tag = (fr_tag){ FR_TAG_EARLY, 1 };
    } else {
        fr_stream *st = fd->streams[fd->primary];
        s = slot_for(fd, st, st->current);
        tag = (fr_tag){ (uint32_t)fd->primary + 1, st->current };
    }
    s->pending++;
    s->submissions++;
    pthread_mutex_unlock(&fd->lock);
    return tag;
}

void fr_submission_done(fr_device *fd, fr_tag tag, const fr_busy *gpu)
{
    if (!fd || !tag.stream)
        return;
    pthread_mutex_lock(&fd->lock);
    fr_slot *s = NULL;
    uint32_t index = tag.stream - 1;
    if (tag.stream == FR_TAG_EARLY) {
        if (fd->primary < 0)
            s = &fd->early;
        else
            index = (uint32_t)fd->primary; /* adopted as the primary's frame 1 */
    }
    if (!s && index < fd->nstreams) {
        const fr_stream *st = fd->streams[index];
        fr_slot *c = &st->ring[tag.frame % st->cap];
        s = c->frame == tag.frame ? c : NULL;
    }
    if (s) {
        if (s->pending)
            s->pending--;
        if (gpu && gpu->n)
            fr_busy_merge(&s->gpu, gpu);
    }
    pthread_mutex_unlock(&fd->lock);
}

static void make_record(const fr_stream *st, uint32_t index, const fr_slot *s, bool forced,
                        fr_record *r)
{
    *r = (fr_record){
        .stream = index,
        .process_stream = st->process_number,
        .kind = st->kind,
        .frame = s->frame,
        .start_ns = s->start_ns,
        .end_ns = s->end_ns,
        .has_interval = s->frame > 1,
        .swapchain = s->swapchain,
        .surface = st->surface,
        .image_index = s->image_index,
        .present_mode = st->kind == FR_SWAPCHAIN ? st->present_mode : -1,
        .image_count = st->image_count,
        .frame_id = s->frame_id,
        .submissions = s->submissions,
        .gpu_known = s->gpu.n != 0,
        .gpu_time_ns = fr_busy_span(&s->gpu),
        .gpu_busy_ns = fr_busy_total(&s->gpu),
        .incomplete = forced && s->pending,
    };
}

uint32_t fr_take_ready(fr_device *fd, fr_record *out, uint32_t max, bool all)
{
    if (!fd)
        return 0;
    uint32_t n = 0;
    pthread_mutex_lock(&fd->lock);
    for (uint32_t i = 0; i < fd->nstreams && n < max; i++) {
        fr_stream *st = fd->streams[i];
        while (st->oldest < st->current && n < max) {
            fr_slot *s = &st->ring[st->oldest % st->cap];
            if (s->frame != st->oldest) {
                st->oldest++; /* given up for a newer frame */
                continue;
            }
            if (!s->ended)
                break;
            const bool forced = all || st->current - st->oldest > FR_FORCE_AFTER;
            if (s->pending && !forced)
                break;
            if (s->record)
                make_record(st, i, s, forced, &out[n++]);
            s->frame = 0;
            st->oldest++;
        }
    }
    pthread_mutex_unlock(&fd->lock);
    return n;
}

uint64_t fr_frames_lost(fr_device *fd)
{
    if (!fd)
        return 0;
    pthread_mutex_lock(&fd->lock);
    const uint64_t lost = fd->lost;
    pthread_mutex_unlock(&fd->lock);
    return lost;
}

const char *fr_present_mode_name(int32_t mode)
{
    switch (mode) {
    case VK_PRESENT_MODE_IMMEDIATE_KHR:
        return "IMMEDIATE";
    case VK_PRESENT_MODE_MAILBOX_KHR:
        return "MAILBOX";
    case VK_PRESENT_MODE_FIFO_KHR:
        return "FIFO";
    case VK_PRESENT_MODE_FIFO_RELAXED_KHR:
        return "FIFO_RELAXED";
    case VK_PRESENT_MODE_SHARED_DEMAND_REFRESH_KHR:
        return "SHARED_DEMAND_REFRESH";
    case VK_PRESENT_MODE_SHARED_CONTINUOUS_REFRESH_KHR:
        return "SHARED_CONTINUOUS_REFRESH";
    default:
        return NULL;
    }
}
