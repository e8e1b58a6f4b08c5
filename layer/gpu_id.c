/* SPDX-License-Identifier: MIT */
/* gpu_id.c — see gpu_id.h. */
#include "layer/gpu_id.h"

#include <stdlib.h>
#include <string.h>

/* PCI devices first, by address; then other buses by name; the render
 * node as the last word, so the order never depends on readdir's. */
static int drm_cmp(const void *pa, const void *pb)
{
    const gid_drm_device *a = pa, *b = pb;
    if (a->pci != b->pci)
        return a->pci ? -1 : 1;
    if (a->pci) {
        uint64_t ka = (uint64_t)a->pci_domain << 24 | (uint64_t)a->pci_bus << 16 |
                      (uint64_t)a->pci_dev << 8 | a->pci_func;
        uint64_t kb = (uint64_t)b->pci_domain << 24 | (uint64_t)b->pci_bus << 16 |
                      (uint64_t)b->pci_dev << 8 | b->pci_func;
        if (ka != kb)
            return ka < kb ? -1 : 1;
    } else {
        int c = strncmp(a->bus_name, b->bus_name, sizeof a->bus_name);
        if (c)
            return c;
    }
    if (a->render_major != b->render_major)
        return a->render_major < b->render_major ? -1 : 1;
    if (a->render_minor != b->render_minor)
        return a->render_minor < b->render_minor ? -1 : 1;
    return 0;
}

uint32_t gid_order_drm(gid_drm_device *devs, uint32_t n)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (devs[i].has_render)
            devs[kept++] = devs[i];
    }
    if (kept > 1)
        qsort(devs, kept, sizeof *devs, drm_cmp);
    return kept;
}

int32_t gid_match_drm(const gid_drm_device *drm, uint32_t ndrm, const gid_vk_device *vk)
{
    if (vk->has_drm && (vk->has_render || vk->has_primary)) {
        for (uint32_t i = 0; i < ndrm; i++) {
            const gid_drm_device *d = &drm[i];
            if (vk->has_render && d->has_render && d->render_major == vk->render_major &&
                d->render_minor == vk->render_minor)
                return (int32_t)i;
            if (vk->has_primary && d->has_primary && d->primary_major == vk->primary_major &&
                d->primary_minor == vk->primary_minor)
                return (int32_t)i;
        }
    }
    if (vk->has_pci) {
        for (uint32_t i = 0; i < ndrm; i++) {
            const gid_drm_device *d = &drm[i];
            if (d->pci && d->pci_domain == vk->pci_domain && d->pci_bus == vk->pci_bus &&
                d->pci_dev == vk->pci_dev && d->pci_func == vk->pci_func)
                return (int32_t)i;
        }
    }
    return -1;
}

/* Whether all[i] is the first of `all` with its UUID. */
static bool first_of_uuid(const gid_vk_device *all, uint32_t i)
{
    for (uint32_t j = 0; j < i; j++) {
        if (!memcmp(all[j].uuid, all[i].uuid, GID_UUID_SIZE))
            return false;
    }
    return true;
}

uint32_t gid_assign(const gid_drm_device *drm, uint32_t ndrm, const gid_vk_device *self,
                    const gid_vk_device *all, uint32_t nall)
{
    int32_t m = gid_match_drm(drm, ndrm, self);
    if (m >= 0)
        return (uint32_t)m;
    uint32_t rank = 0;
    for (uint32_t i = 0; i < nall; i++) {
        if (gid_match_drm(drm, ndrm, &all[i]) >= 0 || !first_of_uuid(all, i))
            continue;
        if (memcmp(all[i].uuid, self->uuid, GID_UUID_SIZE) < 0)
            rank++;
    }
    return ndrm + rank;
}

int32_t gid_non_drm_at(const gid_drm_device *drm, uint32_t ndrm, const gid_vk_device *all,
                       uint32_t nall, uint32_t gpu_id)
{
    for (uint32_t i = 0; i < nall; i++) {
        if (gid_match_drm(drm, ndrm, &all[i]) >= 0 || !first_of_uuid(all, i))
            continue;
        if (gid_assign(drm, ndrm, &all[i], all, nall) == gpu_id)
            return (int32_t)i;
    }
    return -1;
}
