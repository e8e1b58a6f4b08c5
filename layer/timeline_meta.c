/* SPDX-License-Identifier: MIT */
/* timeline_meta.c — see timeline_meta.h.
 *
 * Capture runs inside the application's vkCmd* calls, so it only stores
 * what the command already passed in (and, once per render pass instance,
 * reads the layer's render pass / image view tables under their lock);
 * sums over a command's regions are taken only for timed commands. The
 * collector formats each event's arguments into its scratch buffer, so
 * formatting allocates nothing either.
 */
#include "layer/timeline_meta.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layer/timeline_render_pass.h"
#include "layer/timeline_stage.h"
#include "layer/timeline_util.h"
#include "vk_format_names.h"

/* ---- capture: dispatches and transfers ------------------------------------------ */

static uint64_t extent_texels(VkExtent3D e, uint32_t layers)
{
    return (uint64_t)e.width * e.height * e.depth * (layers ? layers : 1);
}

/* Texels of a blit's destination box (offsets may be given in any order). */
static uint64_t box_texels(const VkOffset3D o[2], uint32_t layers)
{
    const int64_t w = (int64_t)o[1].x - o[0].x, h = (int64_t)o[1].y - o[0].y,
                  d = (int64_t)o[1].z - o[0].z;
    return (uint64_t)(w < 0 ? -w : w) * (uint64_t)(h < 0 ? -h : h) * (uint64_t)(d < 0 ? -d : d) *
           (layers ? layers : 1);
}

/* Bytes or texels and regions of a transfer command (its parameters are
 * valid during the call only, so they are summed here). */
static void transfer(tl_region_meta *m, const tl_cmd *cmd)
{
    const uint32_t n = cmd->u.transfer.count;
    const void *data = cmd->u.transfer.data;
    m->kind = TL_META_TRANSFER;
    m->form = (uint8_t)cmd->u.transfer.form;
    m->u.transfer.regions = n;
    uint64_t bytes = 0, texels = 0;
    switch (cmd->u.transfer.form) {
    case TL_XFER_NONE:
        break;
    case TL_XFER_BUFFER_COPY:
    case TL_XFER_BUFFER_COPY2: {
        const VkCopyBufferInfo2 *i = cmd->u.transfer.form == TL_XFER_BUFFER_COPY2 ? data : NULL;
        const uint32_t count = i ? i->regionCount : n;
        for (uint32_t k = 0; k < count; k++)
            bytes += i ? i->pRegions[k].size : ((const VkBufferCopy *)data)[k].size;
        m->u.transfer.regions = count;
        break;
    }
    case TL_XFER_IMAGE_COPY:
        for (uint32_t k = 0; k < n; k++) {
            const VkImageCopy *c = &((const VkImageCopy *)data)[k];
            texels += extent_texels(c->extent, c->dstSubresource.layerCount);
        }
        break;
    case TL_XFER_IMAGE_COPY2: {
        const VkCopyImageInfo2 *i = data;
        for (uint32_t k = 0; k < i->regionCount; k++)
            texels +=
                extent_texels(i->pRegions[k].extent, i->pRegions[k].dstSubresource.layerCount);
        m->u.transfer.regions = i->regionCount;
        break;
    }
    case TL_XFER_BUFFER_IMAGE:
        for (uint32_t k = 0; k < n; k++) {
            const VkBufferImageCopy *c = &((const VkBufferImageCopy *)data)[k];
            texels += extent_texels(c->imageExtent, c->imageSubresource.layerCount);
        }
        break;
    case TL_XFER_BUFFER_TO_IMAGE2:
    case TL_XFER_IMAGE_TO_BUFFER2: {
        const VkCopyBufferToImageInfo2 *b = data;
        const VkCopyImageToBufferInfo2 *c = data;
        const bool to_image = cmd->u.transfer.form == TL_XFER_BUFFER_TO_IMAGE2;
        const uint32_t count = to_image ? b->regionCount : c->regionCount;
        const VkBufferImageCopy2 *r = to_image ? b->pRegions : c->pRegions;
        for (uint32_t k = 0; k < count; k++)
            texels += extent_texels(r[k].imageExtent, r[k].imageSubresource.layerCount);
        m->u.transfer.regions = count;
        break;
    }
    case TL_XFER_BLIT:
        for (uint32_t k = 0; k < n; k++) {
            const VkImageBlit *b = &((const VkImageBlit *)data)[k];
            texels += box_texels(b->dstOffsets, b->dstSubresource.layerCount);
        }
        break;
    case TL_XFER_BLIT2: {
        const VkBlitImageInfo2 *i = data;
        for (uint32_t k = 0; k < i->regionCount; k++)
            texels +=
                box_texels(i->pRegions[k].dstOffsets, i->pRegions[k].dstSubresource.layerCount);
        m->u.transfer.regions = i->regionCount;
        break;
    }
    case TL_XFER_RESOLVE:
        for (uint32_t k = 0; k < n; k++) {
            const VkImageResolve *r = &((const VkImageResolve *)data)[k];
            texels += extent_texels(r->extent, r->dstSubresource.layerCount);
        }
        break;
    case TL_XFER_RESOLVE2: {
        const VkResolveImageInfo2 *i = data;
        for (uint32_t k = 0; k < i->regionCount; k++)
            texels +=
                extent_texels(i->pRegions[k].extent, i->pRegions[k].dstSubresource.layerCount);
        m->u.transfer.regions = i->regionCount;
        break;
    }
    case TL_XFER_CLEAR_IMAGE:
        break;
    case TL_XFER_CLEAR_ATTACHMENTS:
        m->u.transfer.rects = (uint32_t)cmd->u.transfer.size;
        break;
    case TL_XFER_FILL:
    case TL_XFER_UPDATE:
        bytes = cmd->u.transfer.size == VK_WHOLE_SIZE ? UINT64_MAX : cmd->u.transfer.size;
        break;
    }
    m->u.transfer.bytes = bytes;
    m->u.transfer.texels = texels;
}

void tl_meta_command(tl_recording *rec, uint32_t index, const tl_cmd *cmd)
{
    if (cmd->kind == TL_CMD_DISPATCH)
        rec->dispatches++;
    if (index == TL_NO_SLOT || index >= rec->nregions)
        return;
    tl_region_meta *m = &rec->regions[index].meta;
    if (cmd->kind != TL_CMD_DISPATCH) {
        if (cmd->u.transfer.data || cmd->u.transfer.form == TL_XFER_FILL ||
            cmd->u.transfer.form == TL_XFER_UPDATE)
            transfer(m, cmd);
        return;
    }
    m->kind = TL_META_DISPATCH;
    m->form = cmd->u.dispatch.base_x | cmd->u.dispatch.base_y | cmd->u.dispatch.base_z ? 1 : 0;
    m->u.dispatch.count[0] = cmd->u.dispatch.x;
    m->u.dispatch.count[1] = cmd->u.dispatch.y;
    m->u.dispatch.count[2] = cmd->u.dispatch.z;
    m->u.dispatch.base[0] = cmd->u.dispatch.base_x;
    m->u.dispatch.base[1] = cmd->u.dispatch.base_y;
    m->u.dispatch.base[2] = cmd->u.dispatch.base_z;
    m->u.dispatch.pipeline = rec->compute_pipeline;
    m->u.dispatch.indirect_buffer = (uint64_t)cmd->u.dispatch.buffer;
    m->u.dispatch.indirect_offset = cmd->u.dispatch.offset;
}

/* ---- capture: render pass instances ---------------------------------------------- */

static void instance_begins(tl_recording *rec)
{
    rec->inst_draws = rec->draws;
    rec->inst_dispatches = rec->dispatches;
    rec->inst_pipeline = 0;
}

/* Room for n more attachments in rec->atts; NULL when out of memory. */
static tl_attachment *attachments(tl_device *td, tl_recording *rec, uint32_t n)
{
    if (!tl_grow(td, (void **)&rec->atts, &rec->atts_cap, rec->natts + n, sizeof *rec->atts))
        return NULL;
    return &rec->atts[rec->natts];
}

static void instance_area(tl_region_meta *m, VkRect2D area)
{
    m->kind = TL_META_INSTANCE;
    m->u.instance.x = area.offset.x;
    m->u.instance.y = area.offset.y;
    m->u.instance.width = area.extent.width;
    m->u.instance.height = area.extent.height;
}

void tl_meta_render_pass(tl_device *td, tl_recording *rec, uint32_t index,
                         const VkRenderPassBeginInfo *info)
{
    instance_begins(rec);
    if (index == TL_NO_SLOT || index >= rec->nregions || !info)
        return;
    tl_region_meta *m = &rec->regions[index].meta;
    instance_area(m, info->renderArea);
    tl_attachment *out = attachments(td, rec, TL_META_MAX_ATTACHMENTS);
    uint32_t all, subpasses, mask;
    const uint32_t kept = tl_render_pass_describe(
        td, info->renderPass, out, out ? TL_META_MAX_ATTACHMENTS : 0, &all, &subpasses, &mask);
    m->u.instance.att_first = rec->natts;
    m->natt = (uint16_t)kept;
    rec->natts += kept;
    m->u.instance.attachments = all;
    m->u.instance.subpasses = subpasses;
    m->u.instance.view_mask = mask;
}

void tl_meta_rendering(tl_device *td, tl_recording *rec, uint32_t index, const VkRenderingInfo *ri)
{
    instance_begins(rec);
    if (index == TL_NO_SLOT || index >= rec->nregions || !ri)
        return;
    tl_region_meta *m = &rec->regions[index].meta;
    instance_area(m, ri->renderArea);
    m->u.instance.view_mask = ri->viewMask;
    tl_attachment *out = attachments(td, rec, TL_META_MAX_ATTACHMENTS);
    VkImageView views[TL_META_MAX_ATTACHMENTS];
    uint32_t all = 0, kept = 0;
    const VkRenderingAttachmentInfo *depth = ri->pDepthAttachment,
                                    *stencil = ri->pStencilAttachment;
    for (uint32_t i = 0; i < ri->colorAttachmentCount + 2; i++) {
        const bool color = i < ri->colorAttachmentCount;
        const VkRenderingAttachmentInfo *a = color ? &ri->pColorAttachments[i]
                                             : i == ri->colorAttachmentCount ? depth
                                                                             : stencil;
        if (!a || a->imageView == VK_NULL_HANDLE)
            continue;
        all++;
        if (!out || kept == TL_META_MAX_ATTACHMENTS)
            continue;
        const enum tl_attachment_role role = color                           ? TL_ATT_COLOR
                                             : i == ri->colorAttachmentCount ? TL_ATT_DEPTH
                                                                             : TL_ATT_STENCIL;
        out[kept] =
            tl_attachment_of(VK_FORMAT_UNDEFINED, a->loadOp, a->storeOp, role, color ? i : 0);
        views[kept++] = a->imageView;
    }
    if (kept)
        tl_image_view_formats(td, out, views, kept);
    m->u.instance.att_first = rec->natts;
    m->natt = (uint16_t)kept;
    rec->natts += kept;
    m->u.instance.attachments = all;
}

void tl_meta_instance_end(tl_recording *rec, uint32_t index)
{
    if (index == TL_NO_SLOT || index >= rec->nregions)
        return;
    tl_region_meta *m = &rec->regions[index].meta;
    if (m->kind != TL_META_INSTANCE)
        m->kind = TL_META_INSTANCE; /* counts even without a begin info */
    m->draws = rec->draws - rec->inst_draws;
    m->dispatches = rec->dispatches - rec->inst_dispatches;
    m->u.instance.pipeline = rec->inst_pipeline;
}

void tl_meta_command_buffer_end(tl_recording *rec)
{
    if (!rec->nregions || rec->regions[0].stage != TL_STAGE_COMMAND_BUFFER)
        return;
    tl_region_meta *m = &rec->regions[0].meta;
    m->kind = TL_META_COMMAND_BUFFER;
    m->draws = rec->draws;
    m->dispatches = rec->dispatches;
}

void tl_meta_executed(tl_recording *rec, const tl_recording *sec)
{
    rec->draws += sec->draws;
    rec->dispatches += sec->dispatches;
    if (!rec->inst_pipeline)
        rec->inst_pipeline = sec->first_draw_pipeline;
    if (!rec->first_draw_pipeline)
        rec->first_draw_pipeline = sec->first_draw_pipeline;
}

/* ---- collector: arguments ------------------------------------------------------- */

const char *tl_meta_format_name(uint32_t format)
{
    size_t lo = 0, hi = sizeof tl_format_names / sizeof tl_format_names[0];
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (tl_format_names[mid].value == format)
            return tl_format_names[mid].name;
        if (tl_format_names[mid].value < format)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Copies printf output into the scratch text; NULL when it is full. */
__attribute__((format(printf, 2, 3))) static const char *text(tl_meta_scratch *s, const char *fmt,
                                                              ...)
{
    const uint32_t room = TL_META_TEXT - s->used;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(s->text + s->used, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (uint32_t)n >= room)
        return NULL;
    const char *t = s->text + s->used;
    s->used += (uint32_t)n + 1;
    return t;
}

static void arg(tl_meta_scratch *s, const char *name, const char *value)
{
    if (name && value && s->nargs < TL_META_MAX_ARGS)
        s->args[s->nargs++] = (em_arg){ name, value };
}

/* Writes v in base 10 or 16 (with "0x") into the scratch text: the
 * collector formats a dozen numbers per event, and vsnprintf's generality
 * cost more than the rest of an event's arguments together (bench_layer_hooks'
 * collector figure). NULL when the text is full. */
static const char *text_number(tl_meta_scratch *s, uint64_t v, unsigned base)
{
    static const char digits[] = "0123456789abcdef";
    char rev[20];
    unsigned n = 0;
    do {
        rev[n++] = digits[v % base];
        v /= base;
    } while (v);
    const unsigned prefix = base == 16 ? 2u : 0u;
    if (TL_META_TEXT - s->used < prefix + n + 1)
        return NULL;
    char *t = s->text + s->used;
    char *p = t;
    if (prefix) {
        *p++ = '0';
        *p++ = 'x';
    }
    while (n)
        *p++ = rev[--n];
    *p++ = '\0';
    s->used += (uint32_t)(p - t);
    return t;
}

static void arg_u64(tl_meta_scratch *s, const char *name, uint64_t v)
{
    arg(s, name, text_number(s, v, 10));
}

static void arg_handle(tl_meta_scratch *s, const char *name, uint64_t v)
{
    if (v)
        arg(s, name, text_number(s, v, 16));
}

/* A pipeline: its handle, and its name when the application gave it one
 * (looked up only once anything was named). */
static void arg_pipeline(tl_meta_scratch *s, tl_object_names *names, const char *key,
                         const char *name_key, uint64_t pipeline)
{
    if (!pipeline)
        return;
    arg_handle(s, key, pipeline);
    const uint32_t room = TL_META_TEXT - s->used;
    char *buf = s->text + s->used;
    if (names && room > 1 && tl_names_version(names) &&
        tl_names_get(names, VK_OBJECT_TYPE_PIPELINE, pipeline, buf, room)) {
        s->used += (uint32_t)strlen(buf) + 1;
        arg(s, name_key, buf);
    }
}

static const char *const load_names[] = { "LOAD", "CLEAR", "DONT_CARE", "NONE", "OTHER" };
static const char *const store_names[] = { "STORE", "DONT_CARE", "NONE", "OTHER" };

static void attachment_args(tl_meta_scratch *s, const tl_attachment *a)
{
    char prefix[32];
    if (a->role == TL_ATT_DEPTH || a->role == TL_ATT_STENCIL)
        snprintf(prefix, sizeof prefix, "%s_attachment",
                 a->role == TL_ATT_DEPTH ? "depth" : "stencil");
    else
        snprintf(prefix, sizeof prefix, "%sattachment_%u", a->role == TL_ATT_COLOR ? "color_" : "",
                 a->index);
    const char *format = tl_meta_format_name(a->format);
    arg(s, text(s, "%s_format", prefix), format ? format : text(s, "%" PRIu32, a->format));
    arg(s, text(s, "%s_load_op", prefix), load_names[a->load_op < 5 ? a->load_op : 4]);
    arg(s, text(s, "%s_store_op", prefix), store_names[a->store_op < 4 ? a->store_op : 3]);
}

static void transfer_args(tl_meta_scratch *s, const tl_region_meta *m)
{
    switch (m->form) {
    case TL_XFER_BUFFER_COPY:
    case TL_XFER_BUFFER_COPY2:
        arg_u64(s, "regions", m->u.transfer.regions);
        arg_u64(s, "bytes", m->u.transfer.bytes);
        break;
    case TL_XFER_FILL:
    case TL_XFER_UPDATE:
        if (m->u.transfer.bytes == UINT64_MAX)
            arg(s, "bytes", "whole_size");
        else
            arg_u64(s, "bytes", m->u.transfer.bytes);
        break;
    case TL_XFER_CLEAR_IMAGE:
        arg_u64(s, "range_count", m->u.transfer.regions);
        break;
    case TL_XFER_CLEAR_ATTACHMENTS:
        arg_u64(s, "attachment_count", m->u.transfer.regions);
        arg_u64(s, "rect_count", m->u.transfer.rects);
        break;
    default: /* image copies, blits, resolves */
        arg_u64(s, "regions", m->u.transfer.regions);
        arg_u64(s, "texels", m->u.transfer.texels);
        break;
    }
}

void tl_meta_args(const tl_recording *rec, const tl_region *r, tl_object_names *names,
                  tl_meta_scratch *s)
{
    static const char *const count_keys[3] = { "group_count_x", "group_count_y", "group_count_z" };
    static const char *const base_keys[3] = { "base_group_x", "base_group_y", "base_group_z" };
    const tl_region_meta *m = &r->meta;
    s->nargs = s->used = 0;
    switch (m->kind) {
    case TL_META_DISPATCH:
        if (m->u.dispatch.indirect_buffer) {
            arg_handle(s, "indirect_buffer", m->u.dispatch.indirect_buffer);
            arg_u64(s, "indirect_offset", m->u.dispatch.indirect_offset);
        } else {
            for (int i = 0; i < 3; i++)
                arg_u64(s, count_keys[i], m->u.dispatch.count[i]);
        }
        for (int i = 0; m->form && i < 3; i++)
            arg_u64(s, base_keys[i], m->u.dispatch.base[i]);
        arg_pipeline(s, names, "compute_pipeline", "compute_pipeline_name", m->u.dispatch.pipeline);
        break;
    case TL_META_TRANSFER:
        transfer_args(s, m);
        break;
    case TL_META_INSTANCE:
        if (m->u.instance.width || m->u.instance.height) {
            arg(s, "render_area_x", text(s, "%" PRId32, m->u.instance.x));
            arg(s, "render_area_y", text(s, "%" PRId32, m->u.instance.y));
            arg_u64(s, "render_area_width", m->u.instance.width);
            arg_u64(s, "render_area_height", m->u.instance.height);
            arg_u64(s, "attachment_count", m->u.instance.attachments);
            for (uint32_t i = 0; i < m->natt && m->u.instance.att_first + i < rec->natts; i++)
                attachment_args(s, &rec->atts[m->u.instance.att_first + i]);
            arg_u64(s, "view_mask", m->u.instance.view_mask);
            if (r->stage == TL_STAGE_RENDER_PASS)
                arg_u64(s, "subpass_count", m->u.instance.subpasses);
        }
        arg_u64(s, "draw_count", m->draws);
        arg_u64(s, "dispatch_count", m->dispatches);
        arg_pipeline(s, names, "graphics_pipeline", "graphics_pipeline_name",
                     m->u.instance.pipeline);
        break;
    case TL_META_COMMAND_BUFFER:
        arg_u64(s, "draw_count", m->draws);
        arg_u64(s, "dispatch_count", m->dispatches);
        break;
    default:
        break;
    }
}
