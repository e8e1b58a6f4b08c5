/* SPDX-License-Identifier: MIT */
/* flow_sync.c — see flow_sync.h. */
#include "layer/flows/flow_sync.h"

#include <pthread.h>
#include <string.h>

#include "layer/flows/event_ids.h"
#include "layer/handle_table.h"

/* Signalled values a timeline semaphore remembers: waits usually follow
 * their signal closely. */
#define FS_TIMELINE_KEEP 8u

typedef struct fs_signal fs_signal;
struct fs_signal {
    uint64_t value;
    fs_ids ids;
};

typedef struct fs_sem fs_sem;
struct fs_sem {
    bool timeline;
    fs_ids ids; /* binary: the pending signal's stages */
    uint32_t next, used;
    fs_signal recent[FS_TIMELINE_KEEP]; /* timeline: ring, newest at next - 1 */
};

struct fs_table {
    const gt_allocator *alloc;
    pthread_mutex_t lock;
    ht_table semaphores; /* VkSemaphore -> fs_sem */
    ht_table fences;     /* VkFence -> fs_ids */
    fs_ids queue_last[FS_MAX_QUEUES];
};

void fs_ids_add(fs_ids *set, uint64_t id)
{
    if (!id)
        return;
    for (uint32_t i = 0; i < set->n; i++)
        if (set->id[i] == id)
            return;
    if (set->n < FS_MAX_IDS)
        set->id[set->n++] = id;
}

static void ids_merge(fs_ids *set, const fs_ids *more)
{
    for (uint32_t i = 0; i < more->n; i++)
        fs_ids_add(set, more->id[i]);
}

static void list_add(uint64_t *out, uint32_t *n, uint32_t cap, const fs_ids *ids)
{
    for (uint32_t i = 0; i < ids->n; i++) {
        bool seen = false;
        for (uint32_t k = 0; k < *n && !seen; k++)
            seen = out[k] == ids->id[i];
        if (!seen && *n < cap)
            out[(*n)++] = ids->id[i];
    }
}

fs_table *fs_create(const gt_allocator *alloc)
{
    fs_table *t = gt_zalloc(alloc, sizeof *t, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!t)
        return NULL;
    t->alloc = alloc;
    pthread_mutex_init(&t->lock, NULL);
    ht_init(&t->semaphores, alloc);
    ht_init(&t->fences, alloc);
    return t;
}

static void free_values(fs_table *t, ht_table *h)
{
    for (uint32_t i = 0; i < h->capacity; i++)
        if (h->slots[i].key)
            gt_free(t->alloc, h->slots[i].value);
    ht_finish(h);
}

void fs_destroy(fs_table *t)
{
    if (!t)
        return;
    free_values(t, &t->semaphores);
    free_values(t, &t->fences);
    pthread_mutex_destroy(&t->lock);
    gt_free(t->alloc, t);
}

/* The semaphore's entry, made (binary unless told) when missing. Called
 * with the lock held; NULL when out of memory. */
static fs_sem *sem_get(fs_table *t, VkSemaphore semaphore, bool make)
{
    fs_sem *s = ht_get(&t->semaphores, (uint64_t)semaphore);
    if (s || !make || !semaphore)
        return s;
    s = gt_zalloc(t->alloc, sizeof *s, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
    if (s && !ht_put(&t->semaphores, (uint64_t)semaphore, s)) {
        gt_free(t->alloc, s);
        s = NULL;
    }
    return s;
}

void fs_semaphore_created(fs_table *t, VkSemaphore semaphore, const VkSemaphoreCreateInfo *info)
{
    if (!t || !info)
        return;
    bool timeline = false;
    for (const VkBaseInStructure *p = info->pNext; p; p = p->pNext)
        if (p->sType == VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO)
            timeline = ((const VkSemaphoreTypeCreateInfo *)(const void *)p)->semaphoreType ==
                       VK_SEMAPHORE_TYPE_TIMELINE;
    pthread_mutex_lock(&t->lock);
    /* A binary semaphore gets its entry at its first signal. */
    fs_sem *old = ht_remove(&t->semaphores, (uint64_t)semaphore);
    gt_free(t->alloc, old);
    fs_sem *s = timeline ? sem_get(t, semaphore, true) : NULL;
    if (s)
        s->timeline = true;
    pthread_mutex_unlock(&t->lock);
}

void fs_semaphore_destroyed(fs_table *t, VkSemaphore semaphore)
{
    if (!t || !semaphore)
        return;
    pthread_mutex_lock(&t->lock);
    fs_sem *s = ht_remove(&t->semaphores, (uint64_t)semaphore);
    pthread_mutex_unlock(&t->lock);
    gt_free(t->alloc, s);
}

void fs_fence_destroyed(fs_table *t, VkFence fence)
{
    if (!t || !fence)
        return;
    pthread_mutex_lock(&t->lock);
    fs_ids *f = ht_remove(&t->fences, (uint64_t)fence);
    pthread_mutex_unlock(&t->lock);
    gt_free(t->alloc, f);
}

static void timeline_signal(fs_sem *s, uint64_t value, const fs_ids *ids)
{
    fs_signal *slot = &s->recent[s->next];
    slot->value = value;
    slot->ids = *ids;
    s->next = (s->next + 1) % FS_TIMELINE_KEEP;
    if (s->used < FS_TIMELINE_KEEP)
        s->used++;
}

/* The signal that let a wait for `value` go: the smallest remembered value
 * that reaches it. NULL when none does (yet). */
static const fs_signal *timeline_find(const fs_sem *s, uint64_t value)
{
    const fs_signal *best = NULL;
    for (uint32_t i = 0; i < s->used; i++) {
        const fs_signal *x = &s->recent[i];
        if (x->value >= value && (!best || x->value < best->value))
            best = x;
    }
    return best;
}

void fs_semaphore_signaled(fs_table *t, VkSemaphore semaphore, uint64_t value)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    fs_sem *s = sem_get(t, semaphore, false);
    if (s && s->timeline) {
        const fs_ids none = { 0 };
        timeline_signal(s, value, &none);
    }
    pthread_mutex_unlock(&t->lock);
}

/* ---- submissions ------------------------------------------------------------------ */

void fs_submission_reset(fs_submission *s)
{
    s->first_id = s->span_id = 0;
    s->nids = s->nbatches = s->nwaits = 0;
}

static bool grow(const gt_allocator *alloc, void **array, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = gt_zalloc(alloc, (size_t)ncap * elem, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
    if (!p)
        return false;
    if (*array)
        memcpy(p, *array, (size_t)*cap * elem);
    gt_free(alloc, *array);
    *array = p;
    *cap = ncap;
    return true;
}

bool fs_batch_end(const gt_allocator *alloc, fs_submission *s, uint32_t nentries)
{
    if (!grow(alloc, (void **)&s->batch_end, &s->batches_cap, s->nbatches + 1,
              sizeof *s->batch_end))
        return false;
    s->batch_end[s->nbatches++] = nentries;
    return true;
}

void fs_submission_free(const gt_allocator *alloc, fs_submission *s)
{
    gt_free(alloc, s->batch_end);
    gt_free(alloc, s->waits);
    memset(s, 0, sizeof *s);
}

static void add_wait(const gt_allocator *alloc, fs_submission *s, const fs_wait *w)
{
    if (grow(alloc, (void **)&s->waits, &s->waits_cap, s->nwaits + 1, sizeof *s->waits))
        s->waits[s->nwaits++] = *w;
}

/* One semaphore operation of a batch, whichever submit form. */
typedef struct sem_op sem_op;
struct sem_op {
    VkSemaphore semaphore;
    uint64_t value;
};

/* The timeline values of a VkSubmitInfo's semaphores, if it has them. */
static const VkTimelineSemaphoreSubmitInfo *timeline_values(const VkSubmitInfo *si)
{
    const VkTimelineSemaphoreSubmitInfo *tv = NULL;
    for (const VkBaseInStructure *p = si->pNext; p; p = p->pNext)
        if (p->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
            tv = (const VkTimelineSemaphoreSubmitInfo *)(const void *)p;
    return tv;
}

static uint32_t batch_waits(const tl_submit *submit, uint32_t b, sem_op *ops, uint32_t cap)
{
    uint32_t n = 0;
    if (submit->submits) {
        const VkSubmitInfo *si = &submit->submits[b];
        const VkTimelineSemaphoreSubmitInfo *tv = timeline_values(si);
        for (uint32_t k = 0; k < si->waitSemaphoreCount && n < cap; k++)
            ops[n++] = (sem_op){ si->pWaitSemaphores[k],
                                 tv && tv->pWaitSemaphoreValues && k < tv->waitSemaphoreValueCount
                                     ? tv->pWaitSemaphoreValues[k]
                                     : 0 };
    } else {
        const VkSubmitInfo2 *si = &submit->submits2[b];
        for (uint32_t k = 0; k < si->waitSemaphoreInfoCount && n < cap; k++)
            ops[n++] =
                (sem_op){ si->pWaitSemaphoreInfos[k].semaphore, si->pWaitSemaphoreInfos[k].value };
    }
    return n;
}

static uint32_t batch_signals(const tl_submit *submit, uint32_t b, sem_op *ops, uint32_t cap)
{
    uint32_t n = 0;
    if (submit->submits) {
        const VkSubmitInfo *si = &submit->submits[b];
        const VkTimelineSemaphoreSubmitInfo *tv = timeline_values(si);
        for (uint32_t k = 0; k < si->signalSemaphoreCount && n < cap; k++)
            ops[n++] = (sem_op){ si->pSignalSemaphores[k], tv && tv->pSignalSemaphoreValues &&
                                                                   k < tv->signalSemaphoreValueCount
                                                               ? tv->pSignalSemaphoreValues[k]
                                                               : 0 };
    } else {
        const VkSubmitInfo2 *si = &submit->submits2[b];
        for (uint32_t k = 0; k < si->signalSemaphoreInfoCount && n < cap; k++)
            ops[n++] = (sem_op){ si->pSignalSemaphoreInfos[k].semaphore,
                                 si->pSignalSemaphoreInfos[k].value };
    }
    return n;
}

/* Semaphore operations looked at per batch: more are rare enough to go
 * without flows. */
#define FS_BATCH_OPS 32u

/* One batch's waits: what they resolve to now goes to `entry`'s stage (if
 * the batch has one) and into `waited`. Called with the lock held. */
static void resolve_waits(fs_table *t, const gt_allocator *alloc, fs_submission *s,
                          const tl_submit *submit, uint32_t b, uint32_t entry, bool has_stage,
                          fs_ids *waited)
{
    sem_op ops[FS_BATCH_OPS];
    const uint32_t n = batch_waits(submit, b, ops, FS_BATCH_OPS);
    for (uint32_t k = 0; k < n; k++) {
        fs_sem *sem = sem_get(t, ops[k].semaphore, false);
        if (!sem)
            continue;
        fs_ids got = { 0 };
        if (sem->timeline) {
            const fs_signal *sig = timeline_find(sem, ops[k].value);
            if (!sig) {
                /* Its signal is still to come: resolved by the collector. */
                if (has_stage)
                    add_wait(alloc, s, &(fs_wait){ entry, 0, ops[k].semaphore, ops[k].value });
                continue;
            }
            got = sig->ids;
        } else {
            got = sem->ids;
            sem->ids.n = 0; /* the wait consumed the signal */
        }
        ids_merge(waited, &got);
        for (uint32_t i = 0; has_stage && i < got.n; i++)
            add_wait(alloc, s, &(fs_wait){ entry, got.id[i], VK_NULL_HANDLE, 0 });
    }
}

static void record_signals(fs_table *t, const tl_submit *submit, uint32_t b, const fs_ids *ids)
{
    sem_op ops[FS_BATCH_OPS];
    const uint32_t n = batch_signals(submit, b, ops, FS_BATCH_OPS);
    for (uint32_t k = 0; k < n; k++) {
        fs_sem *sem = sem_get(t, ops[k].semaphore, true);
        if (!sem)
            continue;
        if (sem->timeline)
            timeline_signal(sem, ops[k].value, ids);
        else
            sem->ids = *ids;
    }
}

static void record_fence(fs_table *t, VkFence fence, const fs_ids *ids)
{
    fs_ids *f = ht_get(&t->fences, (uint64_t)fence);
    if (!f) {
        f = gt_zalloc(t->alloc, sizeof *f, VK_SYSTEM_ALLOCATION_SCOPE_OBJECT);
        if (!f)
            return;
        if (!ht_put(&t->fences, (uint64_t)fence, f)) {
            gt_free(t->alloc, f);
            return;
        }
    }
    *f = *ids;
}

void fs_submitted(fs_table *t, const gt_allocator *alloc, fs_submission *s, uint32_t queue_slot,
                  const tl_submit *submit, uint32_t nentries, bool span)
{
    if (!t || queue_slot >= FS_MAX_QUEUES)
        return;
    const uint32_t nids = nentries + (span ? 1u : 0u);
    if (nids) {
        s->first_id = eid_take(nids);
        s->nids = nentries;
        s->span_id = span ? s->first_id + nentries : 0;
    }
    /* A batch count that does not add up (out of memory while building):
     * no batch boundaries, every batch without stages. */
    const bool batches_known = s->nbatches == submit->count;
    fs_ids last_of_submit = { 0 };
    pthread_mutex_lock(&t->lock);
    fs_ids *queue_last = &t->queue_last[queue_slot];
    for (uint32_t b = 0; b < submit->count; b++) {
        const uint32_t first = batches_known && b ? s->batch_end[b - 1] : 0;
        const uint32_t end = batches_known ? s->batch_end[b] : 0;
        const bool has_stage = s->span_id || (s->first_id && end > first);
        const uint32_t entry = s->span_id ? FS_SPAN : first;
        fs_ids waited = { 0 };
        resolve_waits(t, alloc, s, submit, b, entry, has_stage, &waited);
        fs_ids signals = { 0 };
        if (has_stage) {
            fs_ids_add(&signals, s->span_id ? s->span_id : s->first_id + end - 1);
            *queue_last = signals;
            last_of_submit = signals;
        } else {
            /* Signals after what it waited for and the queue's earlier work. */
            signals = waited;
            ids_merge(&signals, queue_last);
        }
        record_signals(t, submit, b, &signals);
    }
    if (submit->fence)
        record_fence(t, submit->fence, last_of_submit.n ? &last_of_submit : queue_last);
    pthread_mutex_unlock(&t->lock);
}

uint32_t fs_entry_waits(fs_table *t, const fs_submission *s, uint32_t entry, uint64_t *out,
                        uint32_t cap)
{
    uint32_t n = 0;
    bool pending = false;
    for (uint32_t i = 0; i < s->nwaits; i++) {
        const fs_wait *w = &s->waits[i];
        if (w->entry != entry)
            continue;
        if (!w->id) {
            pending = true;
            continue;
        }
        const fs_ids one = { 1, { w->id } };
        list_add(out, &n, cap, &one);
    }
    if (!pending || !t)
        return n;
    pthread_mutex_lock(&t->lock);
    for (uint32_t i = 0; i < s->nwaits; i++) {
        const fs_wait *w = &s->waits[i];
        if (w->entry != entry || w->id)
            continue;
        const fs_sem *sem = sem_get(t, w->semaphore, false);
        const fs_signal *sig = sem && sem->timeline ? timeline_find(sem, w->value) : NULL;
        if (sig)
            list_add(out, &n, cap, &sig->ids);
    }
    pthread_mutex_unlock(&t->lock);
    return n;
}

/* ---- host waits ------------------------------------------------------------------ */

void fs_fence_ids(fs_table *t, VkFence fence, uint64_t *out, uint32_t *n, uint32_t cap)
{
    if (!t || !fence)
        return;
    pthread_mutex_lock(&t->lock);
    const fs_ids *f = ht_get(&t->fences, (uint64_t)fence);
    if (f)
        list_add(out, n, cap, f);
    pthread_mutex_unlock(&t->lock);
}

void fs_value_ids(fs_table *t, VkSemaphore semaphore, uint64_t value, uint64_t *out, uint32_t *n,
                  uint32_t cap)
{
    if (!t || !semaphore)
        return;
    pthread_mutex_lock(&t->lock);
    const fs_sem *sem = sem_get(t, semaphore, false);
    const fs_signal *sig = sem && sem->timeline ? timeline_find(sem, value) : NULL;
    if (sig)
        list_add(out, n, cap, &sig->ids);
    pthread_mutex_unlock(&t->lock);
}

void fs_queue_ids(fs_table *t, uint32_t queue_slot, uint64_t *out, uint32_t *n, uint32_t cap)
{
    if (!t || queue_slot >= FS_MAX_QUEUES)
        return;
    pthread_mutex_lock(&t->lock);
    list_add(out, n, cap, &t->queue_last[queue_slot]);
    pthread_mutex_unlock(&t->lock);
}

void fs_device_ids(fs_table *t, uint64_t *out, uint32_t *n, uint32_t cap)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    for (uint32_t q = 0; q < FS_MAX_QUEUES; q++)
        list_add(out, n, cap, &t->queue_last[q]);
    pthread_mutex_unlock(&t->lock);
}
