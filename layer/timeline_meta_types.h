/* SPDX-License-Identifier: MIT */
/* timeline_meta_types.h — what a region ran, as captured while the
 * application records it: integers, handles and enums only, so capturing
 * costs a few stores on the application's thread and all formatting waits
 * for the collector (timeline_meta.c, docs/layer.md "Stage arguments").
 * Data only.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_META_TYPES_H
#define GPUTRACE_LAYER_TIMELINE_META_TYPES_H

#include <stdint.h>

/* Attachments described per render pass / rendering instance; more are
 * counted but not described (bounded per region). */
#define TL_META_MAX_ATTACHMENTS 10u

/* tl_attachment.role: how the argument keys name it. */
enum tl_attachment_role {
    TL_ATT_PLAIN,   /* a render pass attachment: attachment_<i>_* */
    TL_ATT_COLOR,   /* dynamic rendering: color_attachment_<i>_* */
    TL_ATT_DEPTH,   /* depth_attachment_* */
    TL_ATT_STENCIL, /* stencil_attachment_* */
};

/* Compact load / store operations (Vulkan's NONE values do not fit a byte). */
enum tl_load_op {
    TL_LOAD_LOAD,
    TL_LOAD_CLEAR,
    TL_LOAD_DONT_CARE,
    TL_LOAD_NONE,
    TL_LOAD_OTHER
};
enum tl_store_op {
    TL_STORE_STORE,
    TL_STORE_DONT_CARE,
    TL_STORE_NONE,
    TL_STORE_OTHER
};

typedef struct tl_attachment tl_attachment;
struct tl_attachment {
    uint32_t format;           /* VkFormat; 0 (UNDEFINED) when the view is unknown */
    uint8_t load_op, store_op; /* enum tl_load_op / tl_store_op */
    uint8_t role;              /* enum tl_attachment_role */
    uint8_t index;             /* attachment or color attachment number */
};

/* tl_region_meta.kind: which member of the union holds. */
enum tl_meta_kind {
    TL_META_NONE,
    TL_META_DISPATCH,
    TL_META_TRANSFER,
    TL_META_INSTANCE, /* render pass or dynamic rendering instance */
    TL_META_COMMAND_BUFFER,
};

typedef struct tl_region_meta tl_region_meta;
struct tl_region_meta {
    uint8_t kind;               /* enum tl_meta_kind */
    uint8_t form;               /* TRANSFER: enum tl_xfer_form; DISPATCH: 1 with base group */
    uint16_t natt;              /* INSTANCE: attachments described (rec->atts[att_first...]) */
    uint32_t draws, dispatches; /* INSTANCE, COMMAND_BUFFER */
    union {
        struct {
            uint32_t count[3], base[3];
            uint64_t pipeline;
            uint64_t indirect_buffer, indirect_offset; /* buffer 0: direct */
        } dispatch;
        struct {
            uint64_t bytes;   /* buffer copies, fills, updates (UINT64_MAX: whole buffer) */
            uint64_t texels;  /* image copies, blits, resolves */
            uint32_t regions; /* regions / ranges / attachments cleared */
            uint32_t rects;   /* vkCmdClearAttachments */
        } transfer;
        struct {
            int32_t x, y;
            uint32_t width, height;
            uint32_t view_mask;
            uint32_t subpasses;   /* classic render passes, 0 for dynamic rendering */
            uint32_t attachments; /* all of them, described or not */
            uint32_t att_first;   /* into tl_recording.atts */
            uint64_t pipeline;    /* graphics pipeline of its first draw */
        } instance;
    } u;
};

#endif
