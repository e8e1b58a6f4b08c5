/* SPDX-License-Identifier: MIT */
/* timeline_meta.h — stage arguments (prefix tl_meta_): what each region
 * ran, captured on the application's thread while it records (integers,
 * handles, enums into the region's tl_region_meta; no formatting, no
 * allocation but the recording's amortized attachment array), and turned
 * into the render stage's extra_data arguments on the collector thread.
 * docs/layer.md, "Stage arguments", lists the keys.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_META_H
#define GPUTRACE_LAYER_TIMELINE_META_H

#include <vulkan/vulkan.h>

#include "layer/emit.h"
#include "layer/object_names.h"
#include "layer/timeline.h"
#include "layer/timeline_device_types.h"
#include "layer/timeline_recording_types.h"

/* ---- application thread (the command buffer's recording thread) ---- */

/* A dispatch or transfer command; index is its region, or TL_NO_SLOT when
 * it is not timed (dispatches are counted either way). */
void tl_meta_command(tl_recording *rec, uint32_t index, const tl_cmd *cmd);
/* A render pass / dynamic rendering instance begins; index as above. */
void tl_meta_render_pass(tl_device *td, tl_recording *rec, uint32_t index,
                         const VkRenderPassBeginInfo *info);
void tl_meta_rendering(tl_device *td, tl_recording *rec, uint32_t index, const VkRenderingInfo *ri);
/* The instance whose region is index ends (its counts). */
void tl_meta_instance_end(tl_recording *rec, uint32_t index);
/* The primary's command-buffer region (region 0) is closed. */
void tl_meta_command_buffer_end(tl_recording *rec);
/* A secondary was executed here: its draws and dispatches count here too. */
void tl_meta_executed(tl_recording *rec, const tl_recording *sec);

static inline void tl_meta_draw(tl_recording *rec)
{
    rec->draws++;
    if (!rec->first_draw_pipeline)
        rec->first_draw_pipeline = rec->graphics_pipeline;
    if (!rec->inst_pipeline)
        rec->inst_pipeline = rec->graphics_pipeline;
}

static inline void tl_meta_bind_pipeline(tl_recording *rec, VkPipelineBindPoint point,
                                         VkPipeline pipeline)
{
    if (point == VK_PIPELINE_BIND_POINT_COMPUTE)
        rec->compute_pipeline = (uint64_t)pipeline;
    else if (point == VK_PIPELINE_BIND_POINT_GRAPHICS)
        rec->graphics_pipeline = (uint64_t)pipeline;
}

/* ---- collector thread ---- */

#define TL_META_MAX_ARGS 64u
#define TL_META_TEXT     4096u

/* Where one event's arguments are formatted: one per collector, reused for
 * every event. */
typedef struct tl_meta_scratch tl_meta_scratch;
struct tl_meta_scratch {
    em_arg args[TL_META_MAX_ARGS];
    uint32_t nargs;
    char text[TL_META_TEXT];
    uint32_t used;
};

/* Formats the region's arguments into s (s->args, s->nargs); pipeline
 * names from `names` (may be NULL). */
void tl_meta_args(const tl_recording *rec, const tl_region *r, tl_object_names *names,
                  tl_meta_scratch *s);

/* A VkFormat's name without the VK_FORMAT_ prefix, or NULL. */
const char *tl_meta_format_name(uint32_t format);

#endif
