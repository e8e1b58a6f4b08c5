/* SPDX-License-Identifier: MIT */
/* object_names.h — the names an application gave its Vulkan objects
 * (vkSetDebugUtilsObjectNameEXT, vkDebugMarkerSetObjectNameEXT), one table
 * per device (tl_device.names), prefix tl_names_.
 *
 * Written from the application's threads (the naming calls), read from the
 * device's collector thread, which emits each name as a
 * VulkanApiEvent.vk_debug_utils_object_name packet and may look names up to
 * describe what a GPU event used. Every function takes the table's own
 * lock; none calls Vulkan or writes trace packets.
 *
 * Bounded: at most TL_NAMES_MAX_COUNT names holding TL_NAMES_MAX_BYTES of
 * text; a name longer than TL_NAMES_MAX_LEN bytes is cut there (at a UTF-8
 * character boundary). A name that does not fit is refused: the object then
 * has no name (an older name of it is removed too, so a lookup never
 * answers with a stale one), and the refusal is counted.
 */
#ifndef GPUTRACE_LAYER_OBJECT_NAMES_H
#define GPUTRACE_LAYER_OBJECT_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "layer/alloc.h"

#define TL_NAMES_MAX_COUNT 1024u
#define TL_NAMES_MAX_BYTES (64u * 1024u) /* text, terminating NULs included */
#define TL_NAMES_MAX_LEN   255u

typedef struct tl_object_names tl_object_names; /* one per tl_device: td->names */

/* NULL when out of memory. `alloc` (may be NULL: malloc) must outlive the
 * table. */
tl_object_names *tl_names_create(const gt_allocator *alloc);
void tl_names_destroy(tl_object_names *names);

/* Names (type, handle), or removes its name when `name` is NULL or empty.
 * `set_ns`: CLOCK_BOOTTIME of the call. False when the name was refused
 * (bounds, memory, a null handle): the object has no name then. Any
 * thread. */
bool tl_names_set(tl_object_names *names, VkObjectType type, uint64_t handle, const char *name,
                  uint64_t set_ns);

/* Copies the current name of (type, handle) into buf (NUL-terminated, truncated to
 * size). Returns false when the object has no name. Any thread. */
bool tl_names_get(tl_object_names *names, VkObjectType type, uint64_t handle, char *buf,
                  size_t size);

/* The VkObjectType of a VK_EXT_debug_marker object type;
 * VK_OBJECT_TYPE_UNKNOWN for one with no such counterpart. */
VkObjectType tl_names_from_debug_report(VkDebugReportObjectTypeEXT type);

/* Counts every change (a name set, changed or removed); 0 while nothing
 * was ever named. Lock-free: the collector tests it before collecting. */
uint64_t tl_names_version(const tl_object_names *names);

/* Names refused so far (see above). */
uint64_t tl_names_refused(const tl_object_names *names);

/* What tl_names_collect copies: big enough for the whole table, so a
 * caller allocates one (about 100 KiB) and reuses it. */
typedef struct tl_name_item tl_name_item;
struct tl_name_item {
    VkObjectType type;
    uint64_t handle;
    uint64_t set_ns;
    uint64_t seq;     /* the version that set it */
    const char *text; /* in the snapshot's own text */
};
typedef struct tl_names_snapshot tl_names_snapshot;
struct tl_names_snapshot {
    uint32_t count;
    tl_name_item items[TL_NAMES_MAX_COUNT];
    char text[TL_NAMES_MAX_BYTES];
};

/* Copies every name set or changed after version `since` (0: every name)
 * into `out`, oldest change first, and returns the version the copy is
 * current to: the `since` of the next call. Removed names are not listed. */
uint64_t tl_names_collect(tl_object_names *names, uint64_t since, tl_names_snapshot *out);

#endif
