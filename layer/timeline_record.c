/* timeline_record.c — what one recording of a command buffer times.
 *
 * Every region is a pair of bottom-of-pipe timestamps: one recorded before
 * the command(s) and one after. Bottom-of-pipe for both ends means a
 * timestamp is written only once all earlier work has completed, so a
 * region starts no earlier than the end of everything recorded before it:
 * siblings never overlap and children lie inside their parents, which is
 * what the trace's per-queue slice stacks need. (A top-of-pipe start would
 * measure a little more of a command's own overlap with its predecessor,
 * at the price of overlapping siblings.)
 *
 * Where timestamps go:
 * - the command buffer itself (primaries only): right after
 *   vkBeginCommandBuffer and right before vkEndCommandBuffer;
 * - render pass / dynamic rendering instances: before the begin and after
 *   the end, i.e. outside the instance;
 * - dispatches and transfer commands: around the command, when the command
 *   is outside a render pass or inside a dynamic rendering instance whose
 *   contents are recorded inline (there a timestamp takes one query per
 *   view of the instance's viewMask);
 * - debug label regions: at begin and end, when both are allowed there and
 *   lie in the same render pass instance (or both outside), else the label
 *   is not timed.
 * Adjacent boundaries share one timestamp: the end of a command and the
 * start of the next region, a label's start and its first command's, a
 * command's end and its enclosing label's end. Sharing happens only outside
 * render pass instances and only when no hooked command that does work
 * (dispatch, transfer, render pass, vkCmdExecuteCommands) was recorded in
 * between; barriers, binds and the like do no work of their own. That
 * halves the number of timestamps (on lavapipe each one costs a flush of
 * the rasterizer). Work from commands the layer does not hook (ray tracing,
 * acceleration structure builds) recorded between two regions therefore
 * counts towards the start of the next one; enclosing regions are exact.
 *
 * Nothing is written inside classic render pass instances (their multiview
 * mask is not known to the layer, and secondary-contents subpasses allow
 * no commands), in secondaries continuing a render pass, in suspended or
 * resumed dynamic rendering instances, or in command buffers begun with
 * SIMULTANEOUS_USE (they may be pending twice; see timeline_submit.c).
 */
#include <string.h>

#include "log.h"
#include "timeline_internal.h"

/* From a command's pre hook to its post hook on the same thread. */
static _Thread_local struct tl_recording *pending_rec;
static _Thread_local uint32_t pending_region;

/* ---- lifetime ---------------------------------------------------------------- */

static void
recording_clear(struct tl_recording *rec)
{
   struct tl_device *td = rec->td;
   for (uint32_t i = 0; i < rec->nchunks; i++)
      tl_query_give(td, rec->chunks[i]);
   for (uint32_t i = 0; i < rec->nexecuted; i++)
      tl_recording_unref(rec->executed[i]);
   rec->nchunks = rec->nslots = rec->nregions = rec->names_len = rec->nexecuted = 0;
   rec->nlabels = 0;
   rec->rp_region = TL_NO_SLOT;
   rec->rp_instance = rec->rp_counter = 0;
   rec->in_render_pass = rec->in_rendering = rec->rendering_inline = false;
   rec->views = 1;
   rec->last_stamp = TL_NO_SLOT;
   rec->work_since_stamp = true;
   rec->exhausted = false;
   rec->pending = NULL;
   rec->used = false;
}

static void
recording_destroy(struct tl_recording *rec)
{
   struct tl_device *td = rec->td;
   recording_clear(rec);
   atomic_fetch_sub_explicit(&td->live_recordings, 1, memory_order_relaxed);
   pthread_mutex_lock(&td->pool_lock);
   if (td->nfree_recordings < TL_POOL_KEEP) {
      /* Kept with its arrays for the next recording. */
      rec->next_free = td->free_recordings;
      td->free_recordings = rec;
      td->nfree_recordings++;
      rec = NULL;
   }
   pthread_mutex_unlock(&td->pool_lock);
   if (!rec)
      return;
   tl_free(td, rec->chunks);
   tl_free(td, rec->regions);
   tl_free(td, rec->names);
   tl_free(td, rec->executed);
   pthread_mutex_destroy(&rec->lock);
   tl_free(td, rec);
}

void
tl_pools_finish(struct tl_device *td)
{
   while (td->free_recordings) {
      struct tl_recording *rec = td->free_recordings;
      td->free_recordings = rec->next_free;
      tl_free(td, rec->chunks);
      tl_free(td, rec->regions);
      tl_free(td, rec->names);
      tl_free(td, rec->executed);
      pthread_mutex_destroy(&rec->lock);
      tl_free(td, rec);
   }
   td->nfree_recordings = 0;
   while (td->free_submissions) {
      struct tl_submission *sub = td->free_submissions;
      td->free_submissions = sub->next;
      tl_free(td, sub->results);
      tl_free(td, sub->entries);
      tl_free(td, sub->values);
      tl_free(td, sub);
   }
   td->nfree_submissions = 0;
}

void
tl_recording_ref(struct tl_recording *rec)
{
   atomic_fetch_add_explicit(&rec->refs, 1, memory_order_relaxed);
}

void
tl_recording_unref(struct tl_recording *rec)
{
   if (rec && atomic_fetch_sub_explicit(&rec->refs, 1, memory_order_acq_rel) == 1)
      recording_destroy(rec);
}

void
tl_cb_drop_recording(struct tl_cb *tcb)
{
   struct tl_recording *rec = tcb->rec;
   tcb->rec = NULL;
   if (pending_rec == rec)
      pending_rec = NULL;
   tl_recording_unref(rec);
}

/* A recording for a new vkBeginCommandBuffer: the previous one reused in
 * place when nothing else refers to it (no submission waiting to be read,
 * no primary executing it), else a fresh one. */
static struct tl_recording *
recording_for(struct tl_device *td, struct tl_cb *tcb)
{
   struct tl_recording *rec = tcb->rec;
   if (rec && atomic_load_explicit(&rec->refs, memory_order_acquire) == 1) {
      if (pending_rec == rec)
         pending_rec = NULL;
      recording_clear(rec);
      return rec;
   }
   tl_cb_drop_recording(tcb);
   pthread_mutex_lock(&td->pool_lock);
   rec = td->free_recordings;
   if (rec) {
      td->free_recordings = rec->next_free;
      td->nfree_recordings--;
   }
   pthread_mutex_unlock(&td->pool_lock);
   if (!rec) {
      rec = tl_alloc(td, sizeof *rec);
      if (!rec) {
         tl_warn_once(td, TL_WARN_OOM, "out of memory; some command buffers stay untimed");
         return NULL;
      }
      pthread_mutex_init(&rec->lock, NULL);
   }
   atomic_init(&rec->refs, 1);
   rec->td = td;
   rec->cb = tcb->handle;
   rec->next_free = NULL;
   recording_clear(rec);
   atomic_fetch_add_explicit(&td->live_recordings, 1, memory_order_relaxed);
   tcb->rec = rec;
   return rec;
}

/* ---- slots and regions ------------------------------------------------------- */

static bool
can_stamp(const struct tl_recording *rec)
{
   return rec->timing && !rec->in_render_pass && (!rec->in_rendering || rec->rendering_inline);
}

/* `n` consecutive slots (one timestamp of an n-view instance), never
 * straddling two chunks. */
static bool
take_slots(struct tl_device *td, struct tl_recording *rec, uint32_t n, uint32_t *out)
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
      struct tl_qchunk *chunk = tl_query_take(td);
      if (!chunk) {
         rec->exhausted = true;
         return false;
      }
      if (!td->host_reset)
         td->gt->vk.CmdResetQueryPool(rec->cb, chunk->pool, chunk->first, TL_CHUNK_QUERIES);
      rec->chunks[rec->nchunks++] = chunk;
      start = (rec->nchunks - 1) * TL_CHUNK_QUERIES;
   }
   rec->nslots = start + n;
   *out = start;
   return true;
}

static bool
stamp(struct tl_device *td, struct tl_recording *rec, uint32_t views, uint32_t *slot)
{
   const bool inside = rec->in_render_pass || rec->in_rendering;
   if (!rec->work_since_stamp && !inside && views == 1 && rec->last_stamp != TL_NO_SLOT) {
      *slot = rec->last_stamp;
      return true;
   }
   if (!take_slots(td, rec, views, slot))
      return false;
   const struct tl_qchunk *chunk = rec->chunks[*slot / TL_CHUNK_QUERIES];
   td->gt->vk.CmdWriteTimestamp(rec->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, chunk->pool,
                                chunk->first + *slot % TL_CHUNK_QUERIES);
   rec->last_stamp = views == 1 ? *slot : TL_NO_SLOT;
   rec->work_since_stamp = false;
   return true;
}

static struct tl_region *
add_region(struct tl_device *td, struct tl_recording *rec, enum tl_stage stage, const char *api,
           uint32_t *index)
{
   if (!tl_grow(td, (void **)&rec->regions, &rec->regions_cap, rec->nregions + 1,
                sizeof *rec->regions)) {
      rec->exhausted = true;
      return NULL;
   }
   *index = rec->nregions++;
   struct tl_region *r = &rec->regions[*index];
   memset(r, 0, sizeof *r);
   r->begin = r->end = TL_NO_SLOT;
   r->stage = (uint8_t)stage;
   r->views = 1;
   r->api = api;
   r->rp_instance = rec->rp_instance;
   return r;
}

/* Opens a region with its start timestamp; TL_NO_SLOT when not timed. */
static uint32_t
open_region(struct tl_device *td, struct tl_recording *rec, enum tl_stage stage, const char *api)
{
   if (!can_stamp(rec) || rec->exhausted)
      return TL_NO_SLOT;
   uint32_t views = rec->in_rendering ? rec->views : 1;
   uint32_t slot, index;
   if (!stamp(td, rec, views, &slot))
      return TL_NO_SLOT;
   struct tl_region *r = add_region(td, rec, stage, api, &index);
   if (!r)
      return TL_NO_SLOT;
   r->begin = slot;
   r->views = (uint16_t)views;
   return index;
}

static void
close_region(struct tl_device *td, struct tl_recording *rec, uint32_t index)
{
   if (index == TL_NO_SLOT || index >= rec->nregions)
      return;
   struct tl_region *r = &rec->regions[index];
   uint32_t views = rec->in_rendering ? rec->views : 1;
   uint32_t slot;
   if (!can_stamp(rec) || r->rp_instance != rec->rp_instance || views != r->views ||
       !stamp(td, rec, views, &slot)) {
      r->dropped = true;
      return;
   }
   r->end = slot;
}

static uint32_t
copy_name(struct tl_device *td, struct tl_recording *rec, const char *name)
{
   if (!name)
      return 0;
   size_t len = strnlen(name, 255);
   if (!tl_grow(td, (void **)&rec->names, &rec->names_cap, rec->names_len + (uint32_t)len + 1,
                1))
      return 0;
   uint32_t offset = rec->names_len;
   memcpy(rec->names + offset, name, len);
   rec->names[offset + len] = '\0';
   rec->names_len += (uint32_t)len + 1;
   return offset + 1;
}

/* ---- hooks -------------------------------------------------------------------- */

void
tl_record_begin(struct tl_device *td, struct tl_cb *tcb, const VkCommandBufferBeginInfo *info)
{
   struct tl_recording *rec = recording_for(td, tcb);
   if (!rec)
      return;
   const VkCommandBufferUsageFlags flags = info ? info->flags : 0;
   rec->primary = tcb->primary;
   rec->family = tcb->pool ? tcb->pool->family : 0;
   rec->simultaneous = (flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT) != 0;
   bool family_times = rec->family < td->nfamilies &&
                       td->families[rec->family].timestampValidBits != 0;
   bool continues = !tcb->primary && (flags & VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT);
   rec->timing = family_times && !rec->simultaneous && !continues;
   rec->in_render_pass = continues;
   if (rec->primary)
      open_region(td, rec, TL_STAGE_COMMAND_BUFFER, "vkBeginCommandBuffer");
}

void
tl_record_end(struct tl_device *td, struct tl_cb *tcb)
{
   struct tl_recording *rec = tcb->rec;
   if (!rec)
      return;
   if (rec->primary && rec->nregions && rec->regions[0].stage == TL_STAGE_COMMAND_BUFFER &&
       rec->regions[0].end == TL_NO_SLOT)
      close_region(td, rec, 0);
}

static void
note_executed(struct tl_device *td, struct tl_recording *rec, uint32_t count,
              const VkCommandBuffer *buffers)
{
   for (uint32_t i = 0; i < count; i++) {
      struct tl_cb *sec = tl_cb_find(td, buffers[i]);
      if (!sec || !sec->rec)
         continue;
      uint32_t index;
      if (!tl_grow(td, (void **)&rec->executed, &rec->executed_cap, rec->nexecuted + 1,
                   sizeof *rec->executed))
         return;
      struct tl_region *r = add_region(td, rec, TL_STAGE_EXECUTE, "vkCmdExecuteCommands", &index);
      if (!r)
         return;
      tl_recording_ref(sec->rec);
      r->name = rec->nexecuted;
      rec->executed[rec->nexecuted++] = sec->rec;
   }
}

static enum tl_stage
stage_of(enum tl_cmd_kind kind)
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

static uint32_t
popcount32(uint32_t v)
{
   return (uint32_t)__builtin_popcount(v);
}

void
tl_record_cmd_pre(struct tl_device *td, struct tl_cb *tcb, const struct tl_cmd *cmd)
{
   struct tl_recording *rec = tcb->rec;
   pending_rec = NULL;
   if (!rec)
      return;
   uint32_t index = TL_NO_SLOT;
   switch (cmd->kind) {
   case TL_CMD_BEGIN_RENDER_PASS: {
      index = open_region(td, rec, TL_STAGE_RENDER_PASS, cmd->api);
      if (index != TL_NO_SLOT && cmd->u.render_pass) {
         rec->regions[index].handle = (uint64_t)cmd->u.render_pass->renderPass;
         rec->regions[index].target = (uint64_t)cmd->u.render_pass->framebuffer;
      }
      break;
   }
   case TL_CMD_BEGIN_RENDERING: {
      const VkRenderingInfo *ri = cmd->u.rendering;
      const VkRenderingFlags susp =
         VK_RENDERING_SUSPENDING_BIT | VK_RENDERING_RESUMING_BIT;
      if (ri && !(ri->flags & susp)) {
         index = open_region(td, rec, TL_STAGE_RENDERING, cmd->api);
         if (index != TL_NO_SLOT && ri->colorAttachmentCount && ri->pColorAttachments)
            rec->regions[index].target = (uint64_t)ri->pColorAttachments[0].imageView;
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
      break;
   case TL_CMD_END_RENDER_PASS:
   case TL_CMD_END_RENDERING:
   case TL_CMD_END_LABEL:
   case TL_CMD_INSERT_LABEL:
   case TL_CMD_EXECUTE_COMMANDS:
      return;
   }
   pending_rec = rec;
   pending_region = index;
}

void
tl_record_cmd_post(struct tl_device *td, struct tl_cb *tcb, const struct tl_cmd *cmd)
{
   struct tl_recording *rec = tcb->rec;
   if (!rec)
      return;
   const bool mine = pending_rec == rec;
   const uint32_t index = mine ? pending_region : TL_NO_SLOT;
   pending_rec = NULL;
   switch (cmd->kind) {
   case TL_CMD_END_LABEL:
   case TL_CMD_INSERT_LABEL:
   case TL_CMD_BEGIN_LABEL:
      break;
   default:
      /* Everything else did work the next timestamp must come after. */
      rec->work_since_stamp = true;
      break;
   }
   switch (cmd->kind) {
   case TL_CMD_BEGIN_RENDER_PASS:
      rec->in_render_pass = true;
      rec->rp_instance = ++rec->rp_counter;
      rec->rp_region = index;
      break;
   case TL_CMD_BEGIN_RENDERING: {
      const VkRenderingInfo *ri = cmd->u.rendering;
      const VkRenderingFlags flags = ri ? ri->flags : 0;
      rec->in_rendering = true;
      rec->rendering_inline =
         !(flags & (VK_RENDERING_CONTENTS_SECONDARY_COMMAND_BUFFERS_BIT |
                    VK_RENDERING_SUSPENDING_BIT | VK_RENDERING_RESUMING_BIT));
      rec->views = (uint16_t)(ri && ri->viewMask ? popcount32(ri->viewMask) : 1);
      rec->rp_instance = ++rec->rp_counter;
      rec->rp_region = index;
      break;
   }
   case TL_CMD_END_RENDER_PASS:
   case TL_CMD_END_RENDERING: {
      uint32_t open = rec->rp_region;
      uint32_t instance = rec->rp_instance;
      rec->in_render_pass = rec->in_rendering = rec->rendering_inline = false;
      rec->views = 1;
      rec->rp_region = TL_NO_SLOT;
      rec->rp_instance = 0;
      if (open != TL_NO_SLOT) {
         /* The region began outside the instance: close it there too. */
         rec->regions[open].rp_instance = 0;
         close_region(td, rec, open);
      }
      (void)instance;
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
      break;
   }
}
