/* SPDX-License-Identifier: MIT */
/* timeline_render_pass.c — see timeline_render_pass.h.
 *
 * Render passes are created long before a session may start, so the table
 * is kept whether tracing or not; a render pass unknown to it is not
 * timed inside (docs/layer.md, "Render pass instances").
 */
#include "layer/timeline_render_pass.h"

#include <string.h>

#include "layer/timeline_util.h"

/* What the layer keeps of a VkRenderPass: the view mask of each subpass,
 * and its first attachments (formats and operations, for the stage
 * arguments) in the same allocation after the masks. */
typedef struct tl_rp_info tl_rp_info;
struct tl_rp_info {
    uint32_t nsubpasses;
    uint32_t nattachments; /* all of them; the first TL_META_MAX_ATTACHMENTS kept */
    tl_attachment *attachments;
    uint32_t view_masks[];
};

static uint8_t load_op(VkAttachmentLoadOp op)
{
    switch (op) {
    case VK_ATTACHMENT_LOAD_OP_LOAD:
        return TL_LOAD_LOAD;
    case VK_ATTACHMENT_LOAD_OP_CLEAR:
        return TL_LOAD_CLEAR;
    case VK_ATTACHMENT_LOAD_OP_DONT_CARE:
        return TL_LOAD_DONT_CARE;
    case VK_ATTACHMENT_LOAD_OP_NONE_EXT:
        return TL_LOAD_NONE;
    default:
        return TL_LOAD_OTHER;
    }
}

static uint8_t store_op(VkAttachmentStoreOp op)
{
    switch (op) {
    case VK_ATTACHMENT_STORE_OP_STORE:
        return TL_STORE_STORE;
    case VK_ATTACHMENT_STORE_OP_DONT_CARE:
        return TL_STORE_DONT_CARE;
    case VK_ATTACHMENT_STORE_OP_NONE:
        return TL_STORE_NONE;
    default:
        return TL_STORE_OTHER;
    }
}

tl_attachment tl_attachment_of(VkFormat format, VkAttachmentLoadOp load, VkAttachmentStoreOp store,
                               enum tl_attachment_role role, uint32_t index)
{
    return (tl_attachment){ .format = (uint32_t)format,
                            .load_op = load_op(load),
                            .store_op = store_op(store),
                            .role = (uint8_t)role,
                            .index = (uint8_t)index };
}

void tl_render_passes_init(tl_device *td)
{
    pthread_mutex_init(&td->rp_lock, NULL);
    ht_init(&td->render_passes, &td->gt->alloc);
    ht_init(&td->image_views, &td->gt->alloc);
}

void tl_render_passes_finish(tl_device *td)
{
    /* Render passes the application did not destroy. */
    ht_table *t = &td->render_passes;
    for (uint32_t i = 0; i < t->capacity; i++) {
        if (t->slots[i].key)
            tl_free(td, t->slots[i].value);
    }
    ht_finish(t);
    ht_finish(&td->image_views);
    pthread_mutex_destroy(&td->rp_lock);
}

void tl_render_pass_add(tl_device *td, VkRenderPass rp, const VkRenderPassCreateInfo *info,
                        const VkRenderPassCreateInfo2 *info2)
{
    if (rp == VK_NULL_HANDLE)
        return;
    const uint32_t n = info ? info->subpassCount : info2 ? info2->subpassCount : 0;
    const uint32_t natt = info ? info->attachmentCount : info2 ? info2->attachmentCount : 0;
    const uint32_t kept = natt < TL_META_MAX_ATTACHMENTS ? natt : TL_META_MAX_ATTACHMENTS;
    tl_rp_info *ri = NULL;
    if (n) {
        ri = tl_alloc(td, sizeof *ri + (size_t)n * sizeof ri->view_masks[0] +
                              (size_t)kept * sizeof(tl_attachment));
        if (ri) {
            ri->nsubpasses = n;
            ri->nattachments = natt;
            ri->attachments = (tl_attachment *)(void *)&ri->view_masks[n];
            for (uint32_t i = 0; i < kept; i++) {
                ri->attachments[i] =
                    info2 ? tl_attachment_of(info2->pAttachments[i].format,
                                             info2->pAttachments[i].loadOp,
                                             info2->pAttachments[i].storeOp, TL_ATT_PLAIN, i)
                          : tl_attachment_of(info->pAttachments[i].format,
                                             info->pAttachments[i].loadOp,
                                             info->pAttachments[i].storeOp, TL_ATT_PLAIN, i);
            }
            if (info2) {
                for (uint32_t i = 0; i < n; i++)
                    ri->view_masks[i] = info2->pSubpasses[i].viewMask;
            } else {
                /* Without it, or with subpassCount 0 in it, every mask is 0. */
                const VkRenderPassMultiviewCreateInfo *mv = tl_find_in_chain(
                    info->pNext, VK_STRUCTURE_TYPE_RENDER_PASS_MULTIVIEW_CREATE_INFO);
                for (uint32_t i = 0; mv && mv->pViewMasks && i < n && i < mv->subpassCount; i++)
                    ri->view_masks[i] = mv->pViewMasks[i];
            }
        }
    }
    pthread_mutex_lock(&td->rp_lock);
    /* A handle the driver reuses replaces what we had; when the new entry
    * cannot be stored the render pass is simply unknown (not timed inside). */
    void *old = ht_remove(&td->render_passes, (uint64_t)rp);
    bool stored = ri && ht_put(&td->render_passes, (uint64_t)rp, ri);
    pthread_mutex_unlock(&td->rp_lock);
    tl_free(td, old);
    if (!stored) {
        tl_free(td, ri);
        if (n)
            tl_warn_once(td, TL_WARN_OOM, "out of memory; some render passes stay untimed inside");
    }
}

void tl_render_pass_remove(tl_device *td, VkRenderPass rp)
{
    pthread_mutex_lock(&td->rp_lock);
    void *old = ht_remove(&td->render_passes, (uint64_t)rp);
    pthread_mutex_unlock(&td->rp_lock);
    tl_free(td, old);
}

void tl_render_pass_copy_masks(tl_device *td, tl_recording *rec, VkRenderPass rp)
{
    rec->rp_nmasks = 0;
    if (!rec->timing || rp == VK_NULL_HANDLE)
        return;
    pthread_mutex_lock(&td->rp_lock);
    const tl_rp_info *ri = ht_get(&td->render_passes, (uint64_t)rp);
    if (ri && tl_grow(td, (void **)&rec->rp_masks, &rec->rp_masks_cap, ri->nsubpasses,
                      sizeof *rec->rp_masks)) {
        memcpy(rec->rp_masks, ri->view_masks, ri->nsubpasses * sizeof *rec->rp_masks);
        rec->rp_nmasks = ri->nsubpasses;
    }
    pthread_mutex_unlock(&td->rp_lock);
}

/* ---- stage arguments ------------------------------------------------------------ */

uint32_t tl_render_pass_describe(tl_device *td, VkRenderPass rp, tl_attachment *out, uint32_t max,
                                 uint32_t *nattachments, uint32_t *nsubpasses, uint32_t *view_mask)
{
    uint32_t kept = 0;
    *nattachments = *nsubpasses = *view_mask = 0;
    pthread_mutex_lock(&td->rp_lock);
    const tl_rp_info *ri = ht_get(&td->render_passes, (uint64_t)rp);
    if (ri) {
        *nattachments = ri->nattachments;
        *nsubpasses = ri->nsubpasses;
        *view_mask = ri->view_masks[0];
        kept =
            ri->nattachments < TL_META_MAX_ATTACHMENTS ? ri->nattachments : TL_META_MAX_ATTACHMENTS;
        if (kept > max)
            kept = max;
        if (kept)
            memcpy(out, ri->attachments, kept * sizeof *out);
    }
    pthread_mutex_unlock(&td->rp_lock);
    return kept;
}

/* The value is the format plus one: a stored VK_FORMAT_UNDEFINED must not
 * read as "absent". */
void tl_image_view_add(tl_device *td, VkImageView view, VkFormat format)
{
    if (view == VK_NULL_HANDLE)
        return;
    pthread_mutex_lock(&td->rp_lock);
    bool stored = ht_put(&td->image_views, (uint64_t)view, (void *)((uintptr_t)format + 1));
    pthread_mutex_unlock(&td->rp_lock);
    if (!stored)
        tl_warn_once(td, TL_WARN_OOM, "out of memory; some attachment formats stay unknown");
}

void tl_image_view_remove(tl_device *td, VkImageView view)
{
    pthread_mutex_lock(&td->rp_lock);
    ht_remove(&td->image_views, (uint64_t)view);
    pthread_mutex_unlock(&td->rp_lock);
}

void tl_image_view_formats(tl_device *td, tl_attachment *atts, const VkImageView *views, uint32_t n)
{
    pthread_mutex_lock(&td->rp_lock);
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t v = (uintptr_t)ht_get(&td->image_views, (uint64_t)views[i]);
        atts[i].format = v ? (uint32_t)(v - 1) : 0;
    }
    pthread_mutex_unlock(&td->rp_lock);
}
