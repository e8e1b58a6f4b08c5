/* SPDX-License-Identifier: MIT */
/* object_names.c — see object_names.h.
 *
 * An open-addressing table of TL_NAMES_SLOTS entries keyed by (type,
 * handle), linear probing, backward-shift deletion (no tombstones). Twice
 * as many slots as names, so probes stay short; allocated at the first
 * name, so a device whose application never names anything pays nothing.
 * Each name is its own allocation: naming is rare (at object creation), and
 * lookups copy out under the lock, so the text never escapes it.
 */
#include "layer/object_names.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TL_NAMES_SLOTS (2u * TL_NAMES_MAX_COUNT) /* a power of two */

typedef struct tl_name_entry tl_name_entry;
struct tl_name_entry {
    uint64_t handle; /* 0: empty slot (no object is VK_NULL_HANDLE) */
    VkObjectType type;
    uint32_t len;    /* text bytes, NUL not counted */
    uint64_t seq;    /* the version that set it */
    uint64_t set_ns; /* BOOTTIME */
    char *text;
};

struct tl_object_names {
    pthread_mutex_t lock;
    const gt_allocator *alloc;
    tl_name_entry *slots; /* TL_NAMES_SLOTS, or NULL before the first name */
    uint32_t count;
    size_t bytes;
    _Atomic uint64_t version;
    _Atomic uint64_t refused;
};

tl_object_names *tl_names_create(const gt_allocator *alloc)
{
    tl_object_names *n = gt_zalloc(alloc, sizeof *n, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
    if (!n)
        return NULL;
    pthread_mutex_init(&n->lock, NULL);
    n->alloc = alloc;
    return n;
}

void tl_names_destroy(tl_object_names *n)
{
    if (!n)
        return;
    if (n->slots) {
        for (uint32_t i = 0; i < TL_NAMES_SLOTS; i++)
            gt_free(n->alloc, n->slots[i].text);
        gt_free(n->alloc, n->slots);
    }
    pthread_mutex_destroy(&n->lock);
    gt_free(n->alloc, n);
}

static uint32_t home_slot(VkObjectType type, uint64_t handle)
{
    /* Handles are pointers or small indices: mix every bit in. */
    uint64_t h = (handle ^ ((uint64_t)type << 56) ^ (uint64_t)type) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return (uint32_t)h & (TL_NAMES_SLOTS - 1);
}

/* The slot holding (type, handle), or the empty slot where it would go. */
static uint32_t find(const tl_object_names *n, VkObjectType type, uint64_t handle)
{
    uint32_t i = home_slot(type, handle);
    while (n->slots[i].handle && (n->slots[i].handle != handle || n->slots[i].type != type))
        i = (i + 1) & (TL_NAMES_SLOTS - 1);
    return i;
}

/* Empties slot i and moves later entries of its probe run back, so every
 * entry stays reachable from its home slot without tombstones. */
static void remove_at(tl_object_names *n, uint32_t i)
{
    tl_name_entry *s = n->slots;
    n->count--;
    n->bytes -= s[i].len + 1u;
    gt_free(n->alloc, s[i].text);
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & (TL_NAMES_SLOTS - 1); s[j].handle;
         j = (j + 1) & (TL_NAMES_SLOTS - 1)) {
        uint32_t home = home_slot(s[j].type, s[j].handle);
        /* Entry j may fill the hole unless its home lies cyclically in
         * (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            s[hole] = s[j];
            hole = j;
        }
    }
    memset(&s[hole], 0, sizeof s[hole]);
}

/* Length of `name` cut to TL_NAMES_MAX_LEN without splitting a UTF-8
 * character (continuation bytes are 10xxxxxx). */
static size_t cut_length(const char *name)
{
    size_t len = strnlen(name, TL_NAMES_MAX_LEN + 1u);
    if (len <= TL_NAMES_MAX_LEN)
        return len;
    len = TL_NAMES_MAX_LEN;
    while (len > 0 && ((unsigned char)name[len] & 0xc0u) == 0x80u)
        len--;
    return len;
}

static bool refuse(tl_object_names *n)
{
    atomic_fetch_add(&n->refused, 1);
    return false;
}

bool tl_names_set(tl_object_names *n, VkObjectType type, uint64_t handle, const char *name,
                  uint64_t set_ns)
{
    if (!n || !handle)
        return false;
    const bool removing = !name || !name[0];
    const size_t len = removing ? 0 : cut_length(name);
    /* Copied before taking the lock, which is held only for the table
     * (and its one allocation, at the first name). */
    char *text = NULL;
    if (!removing) {
        text = gt_zalloc(n->alloc, len + 1, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
        if (text)
            memcpy(text, name, len);
    }
    pthread_mutex_lock(&n->lock);
    if (!n->slots && !removing)
        n->slots = gt_zalloc(n->alloc, TL_NAMES_SLOTS * sizeof *n->slots,
                             VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
    bool ok = removing;
    char *old = NULL; /* freed after the unlock, as is a refused copy */
    if (n->slots) {
        uint32_t i = find(n, type, handle);
        if (n->slots[i].handle) {
            old = n->slots[i].text;
            n->slots[i].text = NULL;
            remove_at(n, i);
            atomic_fetch_add(&n->version, 1);
            i = find(n, type, handle);
        }
        if (!removing && text && n->count < TL_NAMES_MAX_COUNT &&
            n->bytes + len + 1 <= TL_NAMES_MAX_BYTES) {
            n->slots[i] = (tl_name_entry){ .handle = handle,
                                           .type = type,
                                           .len = (uint32_t)len,
                                           .seq = atomic_fetch_add(&n->version, 1) + 1,
                                           .set_ns = set_ns,
                                           .text = text };
            n->count++;
            n->bytes += len + 1;
            text = NULL;
            ok = true;
        }
    }
    pthread_mutex_unlock(&n->lock);
    gt_free(n->alloc, old);
    gt_free(n->alloc, text);
    return ok ? true : refuse(n);
}

bool tl_names_get(tl_object_names *n, VkObjectType type, uint64_t handle, char *buf, size_t size)
{
    if (!n || !handle || !buf || !size)
        return false;
    bool found = false;
    pthread_mutex_lock(&n->lock);
    if (n->slots) {
        const tl_name_entry *e = &n->slots[find(n, type, handle)];
        if (e->handle) {
            size_t len = e->len < size - 1 ? e->len : size - 1;
            memcpy(buf, e->text, len);
            buf[len] = '\0';
            found = true;
        }
    }
    pthread_mutex_unlock(&n->lock);
    return found;
}

uint64_t tl_names_version(const tl_object_names *n)
{
    return n ? atomic_load_explicit(&n->version, memory_order_acquire) : 0;
}

uint64_t tl_names_refused(const tl_object_names *n)
{
    return n ? atomic_load(&n->refused) : 0;
}

static int by_seq(const void *a, const void *b)
{
    const tl_name_item *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

uint64_t tl_names_collect(tl_object_names *n, uint64_t since, tl_names_snapshot *out)
{
    out->count = 0;
    if (!n)
        return 0;
    pthread_mutex_lock(&n->lock);
    const uint64_t version = atomic_load(&n->version);
    size_t used = 0;
    /* The table never holds more than the snapshot can take. */
    for (uint32_t i = 0; n->slots && i < TL_NAMES_SLOTS; i++) {
        const tl_name_entry *e = &n->slots[i];
        if (!e->handle || e->seq <= since)
            continue;
        out->items[out->count++] = (tl_name_item){ .type = e->type,
                                                   .handle = e->handle,
                                                   .set_ns = e->set_ns,
                                                   .seq = e->seq,
                                                   .text = out->text + used };
        memcpy(out->text + used, e->text, e->len + 1u);
        used += e->len + 1u;
    }
    pthread_mutex_unlock(&n->lock);
    qsort(out->items, out->count, sizeof out->items[0], by_seq);
    return version;
}

VkObjectType tl_names_from_debug_report(VkDebugReportObjectTypeEXT type)
{
    switch (type) {
    /* The core object types share their numbers with VkObjectType. */
    case VK_DEBUG_REPORT_OBJECT_TYPE_INSTANCE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_PHYSICAL_DEVICE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_DEVICE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_QUEUE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_SEMAPHORE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_COMMAND_BUFFER_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_FENCE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_DEVICE_MEMORY_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_BUFFER_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_IMAGE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_EVENT_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_QUERY_POOL_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_BUFFER_VIEW_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_IMAGE_VIEW_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_SHADER_MODULE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_PIPELINE_CACHE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_PIPELINE_LAYOUT_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_RENDER_PASS_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_PIPELINE_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_SAMPLER_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_DESCRIPTOR_POOL_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_DESCRIPTOR_SET_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_FRAMEBUFFER_EXT:
    case VK_DEBUG_REPORT_OBJECT_TYPE_COMMAND_POOL_EXT:
        return (VkObjectType)type;
    /* From here on the numbers differ. */
    case VK_DEBUG_REPORT_OBJECT_TYPE_SURFACE_KHR_EXT:
        return VK_OBJECT_TYPE_SURFACE_KHR;
    case VK_DEBUG_REPORT_OBJECT_TYPE_SWAPCHAIN_KHR_EXT:
        return VK_OBJECT_TYPE_SWAPCHAIN_KHR;
    case VK_DEBUG_REPORT_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT_EXT:
        return VK_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT;
    case VK_DEBUG_REPORT_OBJECT_TYPE_DISPLAY_KHR_EXT:
        return VK_OBJECT_TYPE_DISPLAY_KHR;
    case VK_DEBUG_REPORT_OBJECT_TYPE_DISPLAY_MODE_KHR_EXT:
        return VK_OBJECT_TYPE_DISPLAY_MODE_KHR;
    case VK_DEBUG_REPORT_OBJECT_TYPE_VALIDATION_CACHE_EXT_EXT:
        return VK_OBJECT_TYPE_VALIDATION_CACHE_EXT;
    case VK_DEBUG_REPORT_OBJECT_TYPE_SAMPLER_YCBCR_CONVERSION_EXT:
        return VK_OBJECT_TYPE_SAMPLER_YCBCR_CONVERSION;
    case VK_DEBUG_REPORT_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_EXT:
        return VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE;
    case VK_DEBUG_REPORT_OBJECT_TYPE_ACCELERATION_STRUCTURE_KHR_EXT:
        return VK_OBJECT_TYPE_ACCELERATION_STRUCTURE_KHR;
    case VK_DEBUG_REPORT_OBJECT_TYPE_ACCELERATION_STRUCTURE_NV_EXT:
        return VK_OBJECT_TYPE_ACCELERATION_STRUCTURE_NV;
    default:
        return VK_OBJECT_TYPE_UNKNOWN;
    }
}
