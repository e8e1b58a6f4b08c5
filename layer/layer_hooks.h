/* SPDX-License-Identifier: MIT */
/* layer_hooks.h — the device-level hooks of layer_hooks.c (loader
 * plumbing, prefix gt_), as vkGet*ProcAddr hand them out.
 */
#ifndef GPUTRACE_LAYER_HOOKS_H
#define GPUTRACE_LAYER_HOOKS_H

#include "layer/layer_dispatch.h"

/* The hook for a device-level name in GT_DEVICE_HOOKS, or NULL. */
const gt_hook *gt_device_hook_find(const char *name);

#endif
