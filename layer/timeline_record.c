/* SPDX-License-Identifier: MIT */
/* timeline_record.c — what one recording of a command buffer times.
 *
 * Every region is a pair of bottom-of-pipe timestamps: one recorded before
 * the command(s) and one after (on lavapipe, top-of-pipe inside render
 * pass instances and a barrier before each outside: see stamp()).
 * Bottom-of-pipe for both ends means a
 * timestamp is written only once all earlier work has completed, so a
 * region starts no earlier than the end of everything recorded before it:
 * siblings never overlap and children lie inside their parents, which is
 * what the trace's per-queue slice stacks need. (A top-of-pipe start would
 * measure a little more of a command's own overlap with its predecessor,
 * at the price of overlapping siblings.)
 *
 * Where timestamps go:
 * - the command buffer itself (primaries only): before its first action or
 *   synchronization command (see "Suspended rendering") and right before
 *   vkEndCommandBuffer;
 * - render pass / dynamic rendering instances: before the begin and after
 *   the end, i.e. outside the instance;
 * - dispatches and transfer commands: around the command, when the command
 *   is outside a render pass instance, or inside one where commands are
 *   recorded inline: a classic subpass begun with VK_SUBPASS_CONTENTS_INLINE
 *   of a render pass whose view masks the layer knows, a dynamic rendering
 *   instance without CONTENTS_SECONDARY_COMMAND_BUFFERS, or a secondary
 *   continuing either. Inside a multiview instance a timestamp takes one
 *   query per view of the current subpass's (or the rendering's) view mask,
 *   as vkCmdWriteTimestamp does there; the first holds the time;
 * - debug label regions: at begin and end, when both are allowed there and
 *   lie in the same scope: the same render pass instance (or both outside),
 *   and in a multiview render pass the same subpass (Vulkan defines the
 *   difference of multiview timestamps only within one subpass); otherwise
 *   the label is not timed.
 * Adjacent boundaries share one timestamp: the end of a command and the
 * start of the next region, a label's start and its first command's, a
 * command's end and its enclosing label's end. Sharing happens only outside
 * render pass instances (inside, draws do work the layer does not see) and
 * only when no hooked command that does work (dispatch, transfer, render
 * pass, vkCmdExecuteCommands) was recorded in between; barriers, binds and
 * the like do no work of their own. That halves the number of timestamps
 * (on lavapipe each one costs a flush of the rasterizer). Work from
 * commands the layer does not hook (ray tracing, acceleration structure
 * builds) recorded between two regions therefore counts towards the start
 * of the next one; enclosing regions are exact.
 *
 * Query chunks: without host query reset a new chunk needs a recorded
 * vkCmdResetQueryPool, which Vulkan allows only outside render pass
 * instances; inside one, a timestamp that would need a new chunk is not
 * written and its region is dropped (a secondary continuing a render pass
 * is inside one from its start, so without host query reset it times
 * nothing).
 *
 * Suspended rendering. Vulkan allows no action or synchronization command
 * (vkCmdWriteTimestamp is one) between a suspended dynamic rendering
 * instance and the instance resuming it, which may be the first command of
 * the next command buffer of the batch. So a recording starts "maybe
 * suspended" (and is again after a suspending vkCmdEndRendering, or after
 * executing a secondary that may end suspended): no timestamp is written
 * until the application records an action or synchronization command
 * (every hooked command but vkCmdBeginRendering with RESUMING_BIT and
 * vkCmdExecuteCommands is one, and so is the barrier a command buffer
 * usually starts with), which proves the point is not in such a gap. The
 * command buffer's start is written there, before that command. If the
 * recording instead begins by resuming, its start is written inside the
 * resumed instance right after its begin (legal there, and bottom-of-pipe
 * it still waits for all earlier work, the suspended part included); when
 * that is not possible (contents in secondaries, or a new query chunk
 * needed without host reset) the command-buffer region is dropped. A
 * command buffer that ends suspended ends at a timestamp written inside
 * its last instance just before the suspending vkCmdEndRendering (after
 * all of its work: nothing but state may follow), or is dropped. Suspended
 * and resumed instances get no region of their own; commands inside them
 * are timed like in any dynamic rendering instance.
 *
 * Nothing is written in subpasses whose contents are secondary command
 * buffers, in command buffers begun with SIMULTANEOUS_USE (they may be
 * pending twice; see timeline_submit.c), or in a recording that never
 * records an action command (it may lie entirely between a suspension and
 * its resumption).
 */
#include <string.h>

#include "layer/log.h"
#include "layer/timeline_lookup.h"
#include "layer/timeline_meta.h"
#include "layer/timeline_query.h"
#include "layer/timeline_record.h"
#include "layer/timeline_recording.h"
#include "layer/timeline_render_pass.h"
#include "layer/timeline_stage.h"
#include "layer/timeline_util.h"

/* From a command's pre hook to its post hook on the same thread. */
static _Thread_local tl_recording *pending_rec;
static _Thread_local uint32_t pending_region;

static uint32_t popcount32(uint32_t v)
{
    return (uint32_t)__builtin_popcount(v);
}

/* Whether commands of the current subpass are recorded here, and how many
 * queries a timestamp takes in it. */
static void enter_subpass(tl_recording *rec, VkSubpassContents contents)
{
    const bool known = rec->subpass < rec->rp_nmasks;
    const uint32_t mask = known ? rec->rp_masks[rec->subpass] : 0;
    rec->subpass_inline = known && contents == VK_SUBPASS_CONTENTS_INLINE;
    rec->views = (uint16_t)(mask ? popcount32(mask) : 1);
}

/* ---- the command buffer's recording ------------------------------------------ */

void tl_cb_drop_recording(tl_cb *tcb)
{
    tl_recording *rec = tcb->rec;
    tcb->rec = NULL;
    if (pending_rec == rec)
        pending_rec = NULL;
    tl_recording_unref(rec);
}

/* A recording for a new vkBeginCommandBuffer: the previous one reused in
 * place when nothing else refers to it (no submission waiting to be read,
 * no primary executing it), else a fresh one. */
static tl_recording *recording_for(tl_device *td, tl_cb *tcb)
{
    tl_recording *rec = tcb->rec;
    if (rec && atomic_load_explicit(&rec->refs, memory_order_acquire) == 1) {
        if (pending_rec == rec)
            pending_rec = NULL;
        tl_recording_clear(rec);
        return rec;
    }
    tl_cb_drop_recording(tcb);
    rec = tl_recording_new(td);
    if (!rec)
        return NULL;
    rec->cb = tcb->handle;
    tcb->rec = rec;
    return rec;
}

/* ---- slots and regions ------------------------------------------------------- */

static bool can_stamp(const tl_recording *rec)
{
    return rec->timing && !rec->maybe_suspended && (!rec->in_render_pass || rec->subpass_inline) &&
           (!rec->in_rendering || rec->rendering_inline);
}

static void record_full_barrier(tl_device *td, tl_recording *rec)
{
    tl_full_barrier(td, rec->cb);
    rec->full_barrier = true;
}

/* `n` consecutive slots (one timestamp of an n-view instance), never
 * straddling two chunks. */
static bool take_slots(tl_device *td, tl_recording *rec, uint32_t n, uint32_t *out)
{
    if (rec->exhausted)
        return false;
    uint32_t start = rec->nslots;
    if (start + n > rec->nchunks * TL_CHUNK_QUERIES) {
        if (rec->nchunks * TL_CHUNK_QUERIES + n > TL_MAX_SLOTS) {
            rec->exhausted = true;
            return false;
        }
        /* A fresh chunk needs a recorded reset without host reset, and that
       * is not allowed inside a render pass instance: wait for the end. */
        if (!td->host_reset && (rec->in_render_pass || rec->in_rendering))
            return false;
        if (!tl_grow(td, (void **)&rec->chunks, &rec->chunks_cap, rec->nchunks + 1,
                     sizeof *rec->chunks)) {
            rec->exhausted = true;
            return false;
        }
        tl_qchunk *chunk = tl_query_take(td);
        if (!chunk) {
            rec->exhausted = true;
            return false;
        }
        if (!td->host_reset) {
            /* This reset runs again with every execution of the recording,
          * right after the last one's timestamps were written. */
            if (td->llvmpipe)
                record_full_barrier(td, rec);
            td->gt->vk.CmdResetQueryPool(rec->cb, chunk->pool, chunk->first, TL_CHUNK_QUERIES);
        }
        rec->chunks[rec->nchunks++] = chunk;
        start = (rec->nchunks - 1) * TL_CHUNK_QUERIES;
    }
    rec->nslots = start + n;
    *out = start;
    return true;
}

static bool stamp(tl_device *td, tl_recording *rec, uint32_t views, uint32_t *slot)
{
    const bool inside = rec->in_render_pass || rec->in_rendering;
    if (!rec->work_since_stamp && !inside && views == 1 && rec->last_stamp != TL_NO_SLOT) {
        *slot = rec->last_stamp;
        return true;
    }
    /* lavapipe (Mesa 22.3) keeps a fence per rasterizer scene and frees it
    * with its last reference, checking the fence done without its lock:
    * the rasterizer's last thread counts itself done, then broadcasts and
    * unlocks. A reference dropped in between (the scene recycled, the
    * newest fence replaced when the next scene is queued) frees the fence
    * under that thread, which corrupts the heap or breaks the mutex of the
    * next fence at that address: a lost wakeup, and the queue never
    * finishes. Its scenes normally end at the application's barriers,
    * which wait for them under the lock; a bottom-of-pipe timestamp ends
    * the current scene without waiting and starts another. So here:
    * outside instances a barrier first (tl_full_barrier: the scenes before
    * it are waited for), inside instances a top-of-pipe timestamp, which
    * lavapipe puts into the current scene without ending it (measured
    * after the draws binned before it, like bottom-of-pipe); its query
    * holds the scene's fence until reset, which waits until later work is
    * known complete (tl_queries). */
    VkPipelineStageFlagBits where = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    if (td->llvmpipe && inside)
        where = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
    else if (td->llvmpipe)
        record_full_barrier(td, rec);
    if (!take_slots(td, rec, views, slot))
        return false;
    const tl_qchunk *chunk = rec->chunks[*slot / TL_CHUNK_QUERIES];
    td->gt->vk.CmdWriteTimestamp(rec->cb, where, chunk->pool,
                                 chunk->first + *slot % TL_CHUNK_QUERIES);
    rec->last_stamp = views == 1 ? *slot : TL_NO_SLOT;
    rec->work_since_stamp = false;
    rec->multiview_stamps |= views > 1;
    return true;
}

#define TL_REGIONS_START 32u

static tl_region *add_region(tl_device *td, tl_recording *rec, enum tl_stage stage, const char *api,
                             uint32_t *index)
{
    /* A fresh recording starts with room for a typical command buffer's
     * regions: one allocation instead of three growths (a recording is
     * fresh whenever the pool ran dry, e.g. many submissions in flight). */
    const uint32_t need =
        rec->nregions + 1 > TL_REGIONS_START ? rec->nregions + 1 : TL_REGIONS_START;
    if (!tl_grow(td, (void **)&rec->regions, &rec->regions_cap, need, sizeof *rec->regions)) {
        rec->exhausted = true;
        return NULL;
    }
    *index = rec->nregions++;
    tl_region *r = &rec->regions[*index];
    memset(r, 0, sizeof *r);
    r->begin = r->end = TL_NO_SLOT;
    r->stage = (uint8_t)stage;
    r->views = 1;
    r->api = api;
    r->rp_instance = rec->rp_instance;
    if (rec->in_render_pass || rec->in_rendering) {
        r->handle = rec->rp_handle;
        r->target = rec->rp_target;
    }
    return r;
}

/* Opens a region with its start timestamp; TL_NO_SLOT when not timed
 * (also when no running session wants its stage: low overhead). */
static uint32_t open_region(tl_device *td, tl_recording *rec, enum tl_stage stage, const char *api)
{
    if (!can_stamp(rec) || rec->exhausted || !tl_session_times_stage(stage))
        return TL_NO_SLOT;
    const uint32_t views = rec->views;
    uint32_t slot, index;
    if (!stamp(td, rec, views, &slot))
        return TL_NO_SLOT;
    tl_region *r = add_region(td, rec, stage, api, &index);
    if (!r)
        return TL_NO_SLOT;
    r->begin = slot;
    r->views = (uint16_t)views;
    return index;
}

static void close_region(tl_device *td, tl_recording *rec, uint32_t index)
{
    if (index == TL_NO_SLOT || index >= rec->nregions)
        return;
    tl_region *r = &rec->regions[index];
    const uint32_t views = rec->views;
    uint32_t slot;
    if (!can_stamp(rec) || r->rp_instance != rec->rp_instance || views != r->views ||
        !stamp(td, rec, views, &slot)) {
        r->dropped = true;
        return;
    }
    r->end = slot;
}

static uint32_t copy_name(tl_device *td, tl_recording *rec, const char *name)
{
    if (!name)
        return 0;
    size_t len = strnlen(name, 255);
    if (!tl_grow(td, (void **)&rec->names, &rec->names_cap, rec->names_len + (uint32_t)len + 1, 1))
        return 0;
    uint32_t offset = rec->names_len;
    memcpy(rec->names + offset, name, len);
    rec->names[offset + len] = '\0';
    rec->names_len += (uint32_t)len + 1;
    return offset + 1;
}

/* ---- suspended rendering ---------------------------------------------------- */

/* Region 0 of a primary, while its start is written and its end is not. */
static tl_region *open_command_buffer_region(tl_recording *rec)
{
    if (!rec->primary || !rec->nregions)
        return NULL;
    tl_region *r = &rec->regions[0];
    if (r->stage != TL_STAGE_COMMAND_BUFFER || r->dropped || r->begin == TL_NO_SLOT ||
        r->end != TL_NO_SLOT)
        return NULL;
    return r;
}

/* The deferred command-buffer start, here or never. */
static void write_start(tl_device *td, tl_recording *rec)
{
    rec->start_pending = false;
    tl_region *r = &rec->regions[0];
    uint32_t slot;
    if (can_stamp(rec) && stamp(td, rec, rec->views, &slot))
        r->begin = slot;
    else
        r->dropped = true;
}

/* The application records an action or synchronization command here. As
 * Vulkan allows none between a suspended rendering instance and its
 * resumption, this point is not in such a gap: timestamps may go here, the
 * deferred command-buffer start first. */
static void not_suspended(tl_device *td, tl_recording *rec)
{
    if (!rec->maybe_suspended)
        return;
    rec->maybe_suspended = false;
    rec->suspend_slot = TL_NO_SLOT;
    if (rec->starts == TL_STARTS_NONE)
        rec->starts = TL_STARTS_ACTION;
    if (rec->start_pending)
        write_start(td, rec);
}

/* Just after a resuming vkCmdBeginRendering, inside the instance: the gap
 * is over, and the first timestamp may be written here. */
static void resumed(tl_device *td, tl_recording *rec)
{
    rec->maybe_suspended = false;
    rec->suspend_slot = TL_NO_SLOT;
    if (rec->starts == TL_STARTS_NONE)
        rec->starts = TL_STARTS_RESUME;
    if (rec->start_pending)
        write_start(td, rec);
}

/* Before a suspending vkCmdEndRendering: the last point where a command
 * buffer that ends suspended can still write its end (inside the instance,
 * after all of its work). Only used if it does end suspended. */
static void before_suspension(tl_device *td, tl_recording *rec)
{
    rec->suspend_slot = TL_NO_SLOT;
    uint32_t slot;
    if (open_command_buffer_region(rec) && can_stamp(rec) && stamp(td, rec, rec->views, &slot))
        rec->suspend_slot = slot;
}

/* The first executed secondary that starts with anything decides: an
 * action proves there is no gap before it; a resumption (or a secondary we
 * know nothing about) means nothing of ours may be written before it, and
 * the primary cannot write inside the secondary, so its start is lost. */
static void before_execute(tl_device *td, tl_recording *rec, uint32_t count,
                           const VkCommandBuffer *buffers)
{
    if (!rec->maybe_suspended)
        return;
    for (uint32_t i = 0; i < count; i++) {
        const tl_cb *sec = tl_cb_find(td, buffers[i]);
        const tl_recording *s = sec ? sec->rec : NULL;
        if (s ? s->starts == TL_STARTS_NONE : sec && !sec->untracked_suspend)
            continue; /* says nothing (a secondary recorded while not tracing
                    * without suspended rendering in it neither) */
        if (s && s->starts == TL_STARTS_ACTION) {
            not_suspended(td, rec);
            return;
        }
        if (rec->start_pending) {
            rec->start_pending = false;
            rec->regions[0].dropped = true;
        }
        return;
    }
}

/* After vkCmdExecuteCommands outside render pass instances: the primary is
 * where the last secondary that did anything left it (suspended or not). */
static void after_execute(tl_device *td, tl_recording *rec, uint32_t count,
                          const VkCommandBuffer *buffers)
{
    bool suspended = rec->maybe_suspended;
    for (uint32_t i = 0; i < count; i++) {
        const tl_cb *sec = tl_cb_find(td, buffers[i]);
        const tl_recording *s = sec ? sec->rec : NULL;
        if (!s) {
            if (!sec || sec->untracked_suspend)
                suspended = true; /* unknown: assume the worst */
        } else if (s->starts != TL_STARTS_NONE) {
            suspended = s->maybe_suspended;
        }
    }
    if (suspended && !rec->maybe_suspended)
        rec->suspend_slot = TL_NO_SLOT;
    rec->maybe_suspended = suspended;
}

/* ---- hooks -------------------------------------------------------------------- */

void tl_record_begin(tl_device *td, tl_cb *tcb, const VkCommandBufferBeginInfo *info)
{
    tl_recording *rec = recording_for(td, tcb);
    if (!rec)
        return;
    tcb->untracked_suspend = false;
    const VkCommandBufferUsageFlags flags = info ? info->flags : 0;
    rec->primary = tcb->primary;
    rec->family = tcb->pool ? tcb->pool->family : 0;
    rec->simultaneous = (flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT) != 0;
    rec->one_time = (flags & VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT) != 0;
    bool family_times =
        rec->family < td->nfamilies && td->families[rec->family].timestampValidBits != 0;
    rec->timing = family_times && !rec->simultaneous;
    const bool continues =
        !tcb->primary && (flags & VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT);
    if (continues) {
        /* Inside a render pass instance from the start, with the views of the
       * subpass (or rendering) it continues; untimed when that is unknown. */
        const VkCommandBufferInheritanceInfo *inherit = info->pInheritanceInfo;
        rec->rp_instance = ++rec->rp_counter;
        if (inherit && inherit->renderPass != VK_NULL_HANDLE) {
            rec->in_render_pass = true;
            rec->rp_handle = (uint64_t)inherit->renderPass;
            rec->rp_target = (uint64_t)inherit->framebuffer;
            tl_render_pass_copy_masks(td, rec, inherit->renderPass);
            rec->subpass = inherit->subpass;
            enter_subpass(rec, VK_SUBPASS_CONTENTS_INLINE);
        } else {
            const VkCommandBufferInheritanceRenderingInfo *ri =
                inherit
                    ? tl_find_in_chain(inherit->pNext,
                                       VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_RENDERING_INFO)
                    : NULL;
            rec->in_rendering = true;
            rec->rendering_inline = ri != NULL;
            rec->views = (uint16_t)(ri && ri->viewMask ? popcount32(ri->viewMask) : 1);
        }
        return;
    }
    /* It may be executed right after a suspended rendering instance: the
    * start timestamp waits (see "Suspended rendering" above). */
    rec->maybe_suspended = true;
    uint32_t index;
    if (rec->primary && rec->timing &&
        add_region(td, rec, TL_STAGE_COMMAND_BUFFER, "vkBeginCommandBuffer", &index))
        rec->start_pending = true;
}

static void close_command_buffer(tl_device *td, tl_recording *rec);

void tl_record_end(tl_device *td, tl_cb *tcb)
{
    tl_recording *rec = tcb->rec;
    if (!rec)
        return;
    rec->copied = false;
    if (!rec->primary || !rec->nregions)
        return;
    /* Nothing may follow a suspension, and a recording without any action
    * command may lie wholly between a suspension and its resumption. */
    const bool may_append = !rec->maybe_suspended && !rec->start_pending;
    tl_meta_command_buffer_end(rec);
    close_command_buffer(td, rec);
    if (may_append)
        tl_recording_copy_results(td, rec);
}

static void close_command_buffer(tl_device *td, tl_recording *rec)
{
    tl_region *r = &rec->regions[0];
    if (r->stage != TL_STAGE_COMMAND_BUFFER || r->end != TL_NO_SLOT || r->dropped)
        return;
    if (rec->start_pending || r->begin == TL_NO_SLOT) {
        /* No action command at all: all of it may lie between a suspension
       * and its resumption, where nothing of ours may be written. */
        rec->start_pending = false;
        r->dropped = true;
    } else if (rec->maybe_suspended) {
        /* Ends suspended: the end can only be the timestamp written before
       * the suspension. */
        if (rec->suspend_slot != TL_NO_SLOT)
            r->end = rec->suspend_slot;
        else
            r->dropped = true;
    } else {
        close_region(td, rec, 0);
    }
}

static void note_executed(tl_device *td, tl_recording *rec, uint32_t count,
                          const VkCommandBuffer *buffers)
{
    for (uint32_t i = 0; i < count; i++) {
        tl_cb *sec = tl_cb_find(td, buffers[i]);
        if (!sec || !sec->rec)
            continue;
        tl_meta_executed(rec, sec->rec);
        uint32_t index;
        if (!tl_grow(td, (void **)&rec->executed, &rec->executed_cap, rec->nexecuted + 1,
                     sizeof *rec->executed))
            return;
        tl_region *r = add_region(td, rec, TL_STAGE_EXECUTE, "vkCmdExecuteCommands", &index);
        if (!r)
            return;
        tl_recording_ref(sec->rec);
        r->name = rec->nexecuted;
        rec->executed[rec->nexecuted++] = sec->rec;
    }
}

static enum tl_stage stage_of(enum tl_cmd_kind kind)
{
    switch (kind) {
    case TL_CMD_DISPATCH:
        return TL_STAGE_DISPATCH;
    case TL_CMD_COPY:
        return TL_STAGE_COPY;
    case TL_CMD_BLIT:
        return TL_STAGE_BLIT;
    case TL_CMD_RESOLVE:
        return TL_STAGE_RESOLVE;
    case TL_CMD_CLEAR:
        return TL_STAGE_CLEAR;
    case TL_CMD_FILL:
        return TL_STAGE_FILL;
    case TL_CMD_UPDATE:
        return TL_STAGE_UPDATE;
    default:
        return TL_STAGE_EXECUTE;
    }
}

static bool resumes(const tl_cmd *cmd)
{
    return cmd->kind == TL_CMD_BEGIN_RENDERING && cmd->u.rendering &&
           (cmd->u.rendering->flags & VK_RENDERING_RESUMING_BIT);
}

void tl_record_cmd_pre(tl_device *td, tl_cb *tcb, const tl_cmd *cmd)
{
    tl_recording *rec = tcb->rec;
    pending_rec = NULL;
    if (!rec) {
        if (cmd->kind == TL_CMD_BEGIN_RENDERING && cmd->u.rendering &&
            (cmd->u.rendering->flags & (VK_RENDERING_SUSPENDING_BIT | VK_RENDERING_RESUMING_BIT)))
            tcb->untracked_suspend = true;
        return;
    }
    if (cmd->kind == TL_CMD_EXECUTE_COMMANDS) {
        before_execute(td, rec, cmd->u.execute.count, cmd->u.execute.buffers);
        return;
    }
    /* Every other hooked command but a resumption is an action or
    * synchronization command. */
    if (!resumes(cmd))
        not_suspended(td, rec);
    uint32_t index = TL_NO_SLOT;
    switch (cmd->kind) {
    case TL_CMD_BEGIN_RENDER_PASS: {
        const VkRenderPassBeginInfo *info = cmd->u.render_pass.info;
        index = open_region(td, rec, TL_STAGE_RENDER_PASS, cmd->api);
        if (index != TL_NO_SLOT && info) {
            rec->regions[index].handle = (uint64_t)info->renderPass;
            rec->regions[index].target = (uint64_t)info->framebuffer;
        }
        tl_meta_render_pass(td, rec, index, info);
        break;
    }
    case TL_CMD_BEGIN_RENDERING: {
        const VkRenderingInfo *ri = cmd->u.rendering;
        const VkRenderingFlags susp = VK_RENDERING_SUSPENDING_BIT | VK_RENDERING_RESUMING_BIT;
        /* A suspended or resumed instance cannot be bracketed: its begin or
       * its end lies next to a gap. */
        if (ri && !(ri->flags & susp)) {
            index = open_region(td, rec, TL_STAGE_RENDERING, cmd->api);
            if (index != TL_NO_SLOT && ri->colorAttachmentCount && ri->pColorAttachments)
                rec->regions[index].target = (uint64_t)ri->pColorAttachments[0].imageView;
            tl_meta_rendering(td, rec, index, ri);
        }
        break;
    }
    case TL_CMD_BEGIN_LABEL: {
        index = open_region(td, rec, TL_STAGE_LABEL, cmd->api);
        if (index != TL_NO_SLOT && cmd->u.label)
            rec->regions[index].name = copy_name(td, rec, cmd->u.label->pLabelName);
        if (rec->nlabels < TL_LABEL_DEPTH)
            rec->labels[rec->nlabels] = index;
        rec->nlabels++;
        return;
    }
    case TL_CMD_DISPATCH:
    case TL_CMD_COPY:
    case TL_CMD_BLIT:
    case TL_CMD_RESOLVE:
    case TL_CMD_CLEAR:
    case TL_CMD_FILL:
    case TL_CMD_UPDATE:
        index = open_region(td, rec, stage_of(cmd->kind), cmd->api);
        tl_meta_command(rec, index, cmd);
        break;
    case TL_CMD_END_RENDERING:
        if (rec->in_rendering && (rec->rendering_flags & VK_RENDERING_SUSPENDING_BIT))
            before_suspension(td, rec);
        return;
    case TL_CMD_NEXT_SUBPASS:
    case TL_CMD_END_RENDER_PASS:
    case TL_CMD_END_LABEL:
    case TL_CMD_INSERT_LABEL:
    case TL_CMD_EXECUTE_COMMANDS:
    case TL_CMD_BARRIER:
        return;
    }
    pending_rec = rec;
    pending_region = index;
}

/* Leaves a render pass or rendering instance; its region (begun outside)
 * is closed outside too. */
static void leave_instance(tl_device *td, tl_recording *rec)
{
    uint32_t open = rec->rp_region;
    rec->in_render_pass = rec->subpass_inline = false;
    rec->in_rendering = rec->rendering_inline = false;
    rec->views = 1;
    rec->rp_region = TL_NO_SLOT;
    rec->rp_instance = 0;
    rec->rp_nmasks = rec->subpass = 0;
    rec->rp_handle = rec->rp_target = 0;
    rec->rendering_flags = 0;
    if (open != TL_NO_SLOT) {
        tl_meta_instance_end(rec, open);
        rec->regions[open].rp_instance = 0;
        close_region(td, rec, open);
    }
}

void tl_record_cmd_post(tl_device *td, tl_cb *tcb, const tl_cmd *cmd)
{
    tl_recording *rec = tcb->rec;
    if (!rec)
        return;
    const bool mine = pending_rec == rec;
    const uint32_t index = mine ? pending_region : TL_NO_SLOT;
    pending_rec = NULL;
    switch (cmd->kind) {
    case TL_CMD_END_LABEL:
    case TL_CMD_INSERT_LABEL:
    case TL_CMD_BEGIN_LABEL:
    case TL_CMD_BARRIER:
        break;
    default:
        /* Everything else did work the next timestamp must come after. */
        rec->work_since_stamp = true;
        break;
    }
    switch (cmd->kind) {
    case TL_CMD_BEGIN_RENDER_PASS: {
        const VkRenderPassBeginInfo *info = cmd->u.render_pass.info;
        rec->in_render_pass = true;
        rec->rp_instance = ++rec->rp_counter;
        rec->rp_region = index;
        rec->rp_handle = info ? (uint64_t)info->renderPass : 0;
        rec->rp_target = info ? (uint64_t)info->framebuffer : 0;
        rec->subpass = 0;
        tl_render_pass_copy_masks(td, rec, info ? info->renderPass : VK_NULL_HANDLE);
        enter_subpass(rec, cmd->u.render_pass.contents);
        break;
    }
    case TL_CMD_NEXT_SUBPASS:
        if (!rec->in_render_pass)
            break;
        rec->subpass++;
        /* Multiview timestamps compare only within one subpass: a new scope,
       * so no region spans two. */
        if (rec->subpass < rec->rp_nmasks && rec->rp_masks[rec->subpass])
            rec->rp_instance = ++rec->rp_counter;
        enter_subpass(rec, cmd->u.contents);
        break;
    case TL_CMD_BEGIN_RENDERING: {
        const VkRenderingInfo *ri = cmd->u.rendering;
        const VkRenderingFlags flags = ri ? ri->flags : 0;
        rec->in_rendering = true;
        rec->rendering_flags = flags;
        rec->rendering_inline =
            ri && !(flags & VK_RENDERING_CONTENTS_SECONDARY_COMMAND_BUFFERS_BIT);
        rec->views = (uint16_t)(ri && ri->viewMask ? popcount32(ri->viewMask) : 1);
        rec->rp_instance = ++rec->rp_counter;
        rec->rp_region = index;
        rec->rp_handle = 0;
        rec->rp_target = ri && ri->colorAttachmentCount && ri->pColorAttachments
                             ? (uint64_t)ri->pColorAttachments[0].imageView
                             : 0;
        if (flags & VK_RENDERING_RESUMING_BIT)
            resumed(td, rec);
        break;
    }
    case TL_CMD_END_RENDER_PASS:
        leave_instance(td, rec);
        break;
    case TL_CMD_END_RENDERING: {
        const bool suspends =
            rec->in_rendering && (rec->rendering_flags & VK_RENDERING_SUSPENDING_BIT);
        leave_instance(td, rec);
        if (suspends)
            rec->maybe_suspended = true; /* until the resumption */
        break;
    }
    case TL_CMD_END_LABEL:
        /* An end without a begin in this command buffer closes a label
       * opened elsewhere: not a region here. */
        if (rec->nlabels == 0)
            break;
        rec->nlabels--;
        if (rec->nlabels < TL_LABEL_DEPTH)
            close_region(td, rec, rec->labels[rec->nlabels]);
        break;
    case TL_CMD_EXECUTE_COMMANDS:
        if (!rec->in_render_pass && !rec->in_rendering)
            after_execute(td, rec, cmd->u.execute.count, cmd->u.execute.buffers);
        note_executed(td, rec, cmd->u.execute.count, cmd->u.execute.buffers);
        break;
    case TL_CMD_DISPATCH:
    case TL_CMD_COPY:
    case TL_CMD_BLIT:
    case TL_CMD_RESOLVE:
    case TL_CMD_CLEAR:
    case TL_CMD_FILL:
    case TL_CMD_UPDATE:
        close_region(td, rec, index);
        break;
    case TL_CMD_BEGIN_LABEL:
    case TL_CMD_INSERT_LABEL:
    case TL_CMD_BARRIER:
        break;
    }
}
