/* SPDX-License-Identifier: MIT */
/* layer_info.h — what the layer says about itself to the loader: name,
 * description and versions (the negotiation in layer_interface.c, the
 * enumerate functions in layer_instance.c). Data only.
 */
#ifndef GPUTRACE_LAYER_INFO_H
#define GPUTRACE_LAYER_INFO_H

#define GT_LAYER_NAME                   "VK_LAYER_GPUTRACE_timeline"
#define GT_LAYER_DESCRIPTION            "gputrace: timestamps GPU work and writes Perfetto traces"
#define GT_LAYER_IMPLEMENTATION_VERSION 1
/* VkPhysicalDeviceToolProperties::name (VK_EXT_tooling_info). */
#define GT_LAYER_TOOL_NAME         "gputrace timeline"
#define GT_LAYER_INTERFACE_VERSION 2

#endif
