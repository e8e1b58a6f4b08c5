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

/* What the layer keeps of a VkRenderPass: the view mask of each subpass. */
typedef struct tl_rp_info tl_rp_info;
struct tl_rp_info {
    uint32_t nsubpasses;
    uint32_t view_masks[];
};

void tl_render_passes_init(tl_device *td)
{
    pthread_mutex_init(&td->rp_lock, NULL);
    ht_init(&td->render_passes, &td->gt->alloc);
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
    pthread_mutex_destroy(&td->rp_lock);
}

void tl_render_pass_add(tl_device *td, VkRenderPass rp, const VkRenderPassCreateInfo *info,
                        const VkRenderPassCreateInfo2 *info2)
{
    if (rp == VK_NULL_HANDLE)
        return;
    const uint32_t n = info ? info->subpassCount : info2 ? info2->subpassCount : 0;
    tl_rp_info *ri = NULL;
    if (n) {
        ri = tl_alloc(td, sizeof *ri + (size_t)n * sizeof ri->view_masks[0]);
        if (ri) {
            ri->nsubpasses = n;
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
