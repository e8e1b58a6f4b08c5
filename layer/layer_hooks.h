/* SPDX-License-Identifier: MIT */
/* layer_hooks.h — the device-level hooks of layer_hooks.c and
 * layer_hooks_objects.c (loader plumbing, prefix gt_), as vkGet*ProcAddr
 * hand them out, and what every hook begins with.
 */
#ifndef GPUTRACE_LAYER_HOOKS_H
#define GPUTRACE_LAYER_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

#include "layer/layer_dispatch.h"
#include "layer/layer_lookup.h"
#include "layer/log.h"

/* The hook for a device-level name in GT_DEVICE_HOOKS, or NULL. */
const gt_hook *gt_device_hook_find(const char *name);
/* The same for GT_OBJECT_HOOKS only (layer_hooks_objects.c). */
const gt_hook *gt_object_hook_find(const char *name);
/* Whether `hook` (from the finds above) is one of GT_MEMORY_HOOKS: handed
 * out only where memory is tracked (layer_interface.c). */
bool gt_hook_is_memory(const gt_hook *hook);

/* One intercepted entry point's table entry. */
#define GT_HOOK_ENTRY(name) \
    { "vk" #name, (PFN_vkVoidFunction)gt_##name, offsetof(gt_device_dispatch, name) },

/* What a VkResult hook returns when the next entity has no such command on
 * this device (see GT_HOOK_ENTER). No result code means "not enabled"; this
 * one names the cause, is an error every caller treats as failure, and
 * cannot be mistaken for a lost device. */
#define GT_RESULT_ABSENT VK_ERROR_EXTENSION_NOT_PRESENT

/* The handle came from a device we never saw created: only possible with a
 * broken application or loader. Log it and fail the call rather than
 * crash in the application's process. */
static inline gt_device *device_of(const void *handle, const char *api)
{
    gt_device *dev = gt_device_get(handle);
    if (!dev)
        gt_error("%s: handle %p belongs to no device known to the layer", api, handle);
    return dev;
}

/* Opens a hook for vk<name> on `handle`: declares `dev` and `next` (the
 * next entity's vk<name> for this device), or returns `unknown` for a
 * handle of no known device and `absent` when `next` is NULL. The latter
 * happens when the application calls what vkGetInstanceProcAddr gave it for
 * a command its device (or instance) did not enable: that answer holds for
 * the instance, not for a device; then the hook does nothing, no timeline
 * callback either, since nothing happened. Not logged: it may happen for
 * every command an application records. (The debug-utils commands are the
 * exception: the loader answers them for every instance, and the layer
 * takes them from the next vkGetInstanceProcAddr as the loader does, see
 * fill_device_dispatch in layer_device.c; so the labels libplacebo (mpv)
 * records without enabling VK_EXT_debug_utils are timed and passed on,
 * to a layer below that takes them or to the loader's terminator, which
 * does nothing.)
 * For void hooks both return values are empty. */
#define GT_HOOK_ENTER(handle, name, unknown, absent) \
    gt_device *dev = device_of(handle, "vk" #name);  \
    if (!dev)                                        \
        return unknown;                              \
    const PFN_vk##name next = dev->vk.name;          \
    if (!next)                                       \
        return absent;

#endif
