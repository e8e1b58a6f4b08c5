/* SPDX-License-Identifier: MIT */
/* reuse_check.c — see reuse_check.h. */
#include "tests/faultlayer/reuse_check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/faultlayer/fault_layer.h"

/* What one command buffer recorded that matters here. */
typedef struct rc_cb rc_cb;
struct rc_cb {
    VkCommandBuffer cb;
    struct rc_write {
        VkQueryPool pool;
        uint32_t query;
    } * writes;
    size_t nwrites, writes_cap;
    struct rc_reset {
        VkQueryPool pool;
        uint32_t first, count;
        bool guarded; /* after a timestamp and then a barrier of this recording */
    } * resets;
    size_t nresets, resets_cap;
    VkCommandBuffer *executed;
    size_t nexecuted, executed_cap;
    const uint64_t *last_avail;
    bool stamped, guard;
    bool after_barrier; /* the last command seen was a barrier */
};

typedef struct rc_pool rc_pool;
struct rc_pool {
    VkQueryPool pool;
    uint32_t count;
    uint32_t *writer; /* submission number of the last write, 0: none since reset */
};

/* A submission not yet known complete by its fence. */
typedef struct rc_sub rc_sub;
struct rc_sub {
    uint32_t seq;
    VkFence fence;       /* ours, behind the batch */
    VkFence batch_fence; /* the submission's own (VK_NULL_HANDLE: none) */
    bool wrote;
    const uint64_t *avail;
};

typedef struct rc_state rc_state;
struct rc_state {
    pthread_mutex_t lock;
    VkDevice device;
    PFN_vkCreateFence CreateFence;
    PFN_vkDestroyFence DestroyFence;
    PFN_vkGetFenceStatus GetFenceStatus;
    PFN_vkResetFences ResetFences;
    PFN_vkQueueSubmit QueueSubmit;

    rc_cb *cbs;
    size_t ncbs, cbs_cap;
    rc_pool *pools;
    size_t npools, pools_cap;
    rc_sub *subs; /* oldest first */
    size_t nsubs, subs_cap;
    VkFence *spare;
    size_t nspare, spare_cap;

    uint32_t seq;
    /* Newest complete submission that wrote timestamps (0: none). */
    uint32_t proven;
    /* Newest submission whose own fence was found signalled above (0: none). */
    uint32_t fenced_done;
    uint64_t checked, unsafe;
    uint64_t stamps, unwaited;
    char first[256];
};

rc_state *rc_create(VkDevice device, PFN_vkGetDeviceProcAddr gdpa)
{
    const char *e = getenv("GPUTRACE_FAULT_CHECK_QUERY_REUSE");
    if (!e || !*e || strcmp(e, "0") == 0)
        return NULL;
    rc_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->device = device;
    s->CreateFence = (PFN_vkCreateFence)gdpa(device, "vkCreateFence");
    s->DestroyFence = (PFN_vkDestroyFence)gdpa(device, "vkDestroyFence");
    s->GetFenceStatus = (PFN_vkGetFenceStatus)gdpa(device, "vkGetFenceStatus");
    s->ResetFences = (PFN_vkResetFences)gdpa(device, "vkResetFences");
    s->QueueSubmit = (PFN_vkQueueSubmit)gdpa(device, "vkQueueSubmit");
    if (!s->CreateFence || !s->DestroyFence || !s->GetFenceStatus || !s->ResetFences ||
        !s->QueueSubmit) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void rc_destroy(rc_state *s)
{
    if (!s)
        return;
    fprintf(stderr,
            "clockfault: query reuse: checked=%" PRIu64 " unsafe=%" PRIu64 " stamps=%" PRIu64
            " unwaited=%" PRIu64 "%s%s\n",
            s->checked, s->unsafe, s->stamps, s->unwaited, s->unsafe ? " first: " : "",
            s->unsafe ? s->first : "");
    for (size_t i = 0; i < s->nsubs; i++) {
        if (s->subs[i].fence)
            s->DestroyFence(s->device, s->subs[i].fence, NULL);
    }
    for (size_t i = 0; i < s->nspare; i++)
        s->DestroyFence(s->device, s->spare[i], NULL);
    for (size_t i = 0; i < s->ncbs; i++) {
        free(s->cbs[i].writes);
        free(s->cbs[i].resets);
        free(s->cbs[i].executed);
    }
    for (size_t i = 0; i < s->npools; i++)
        free(s->pools[i].writer);
    free(s->cbs);
    free(s->pools);
    free(s->subs);
    free(s->spare);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- lookups (under the lock) ---------------------------------------------------- */

static rc_pool *pool_of(rc_state *s, VkQueryPool pool)
{
    for (size_t i = 0; i < s->npools; i++) {
        if (s->pools[i].pool == pool)
            return &s->pools[i];
    }
    return NULL;
}

static rc_cb *cb_of(rc_state *s, VkCommandBuffer cb, bool create)
{
    for (size_t i = 0; i < s->ncbs; i++) {
        if (s->cbs[i].cb == cb)
            return &s->cbs[i];
    }
    if (!create || !fl_grow((void **)&s->cbs, &s->cbs_cap, s->ncbs, sizeof *s->cbs))
        return NULL;
    rc_cb *c = &s->cbs[s->ncbs++];
    memset(c, 0, sizeof *c);
    c->cb = cb;
    return c;
}

static void note_unsafe(rc_state *s, const char *how, VkQueryPool pool, uint32_t query,
                        uint32_t writer)
{
    if (!s->unsafe++)
        snprintf(s->first, sizeof s->first,
                 "%s of query %" PRIu32 " of pool 0x%" PRIx64 " written by submission %" PRIu32
                 ", newest complete submission with timestamps %" PRIu32 " (of %" PRIu32
                 "; newest seen complete by its own fence %" PRIu32 ")",
                 how, query, (uint64_t)pool, writer, s->proven, s->seq, s->fenced_done);
}

/* Brings `proven` up to date. Completion is monotonic in submission order
 * (one queue on lavapipe): a complete submission completes all before it. */
static void update_proven(rc_state *s)
{
    size_t done = 0;
    while (done < s->nsubs && s->subs[done].fence &&
           s->GetFenceStatus(s->device, s->subs[done].fence) == VK_SUCCESS)
        done++;
    /* A landed copy completes its submission before the fence behind it
    * signals: look from the newest for one. */
    size_t landed = done;
    for (size_t i = s->nsubs; i > done; i--) {
        const uint64_t *a = s->subs[i - 1].avail;
        if (a && __atomic_load_n(a, __ATOMIC_ACQUIRE)) {
            landed = i;
            break;
        }
    }
    /* So does a batch fence found signalled above (the check's own fences
     * of those are left to signal: resetting a pending fence is invalid). */
    for (size_t i = s->nsubs; s->fenced_done && i > landed; i--) {
        if ((int32_t)(s->fenced_done - s->subs[i - 1].seq) >= 0) {
            landed = i;
            break;
        }
    }
    for (size_t i = 0; i < landed; i++) {
        if (s->subs[i].wrote && (int32_t)(s->subs[i].seq - s->proven) > 0)
            s->proven = s->subs[i].seq;
    }
    /* Fences of the ones complete by fence are free again. */
    for (size_t i = 0; i < done; i++) {
        if (s->ResetFences(s->device, 1, &s->subs[i].fence) == VK_SUCCESS &&
            fl_grow((void **)&s->spare, &s->spare_cap, s->nspare, sizeof *s->spare))
            s->spare[s->nspare++] = s->subs[i].fence;
        else
            s->DestroyFence(s->device, s->subs[i].fence, NULL);
    }
    /* Nothing to move (and no array yet) before the first submission. */
    if (done)
        memmove(s->subs, s->subs + done, (s->nsubs - done) * sizeof *s->subs);
    s->nsubs -= done;
}

static bool proven_after(const rc_state *s, uint32_t writer)
{
    return s->proven && (int32_t)(s->proven - writer) > 0;
}

/* ---- pools and recording ---------------------------------------------------------- */

void rc_pool_created(rc_state *s, VkQueryPool pool, uint32_t count)
{
    if (!s)
        return;
    uint32_t *writer = calloc(count ? count : 1, sizeof *writer);
    pthread_mutex_lock(&s->lock);
    if (writer && fl_grow((void **)&s->pools, &s->pools_cap, s->npools, sizeof *s->pools)) {
        s->pools[s->npools++] = (rc_pool){ pool, count, writer };
        writer = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    free(writer);
}

void rc_pool_destroyed(rc_state *s, VkQueryPool pool)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_pool *p = pool_of(s, pool);
    if (p) {
        free(p->writer);
        *p = s->pools[--s->npools];
    }
    pthread_mutex_unlock(&s->lock);
}

void rc_cb_begin(rc_state *s, VkCommandBuffer cb)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_cb *c = cb_of(s, cb, false);
    if (c) {
        c->nwrites = c->nresets = c->nexecuted = 0;
        c->last_avail = NULL;
        c->stamped = c->guard = c->after_barrier = false;
    }
    pthread_mutex_unlock(&s->lock);
}

void rc_timestamp(rc_state *s, VkCommandBuffer cb, VkQueryPool pool, uint32_t query,
                  bool top_of_pipe)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_cb *c = pool_of(s, pool) ? cb_of(s, cb, true) : NULL;
    if (c) {
        s->stamps++;
        if (!top_of_pipe && !c->after_barrier)
            s->unwaited++;
        c->after_barrier = false;
    }
    if (c && fl_grow((void **)&c->writes, &c->writes_cap, c->nwrites, sizeof *c->writes)) {
        c->writes[c->nwrites++] = (struct rc_write){ pool, query };
        c->stamped = true;
    }
    pthread_mutex_unlock(&s->lock);
}

void rc_cmd_reset(rc_state *s, VkCommandBuffer cb, VkQueryPool pool, uint32_t first, uint32_t count)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_cb *c = pool_of(s, pool) ? cb_of(s, cb, true) : NULL;
    if (c)
        c->after_barrier = false;
    if (c && fl_grow((void **)&c->resets, &c->resets_cap, c->nresets, sizeof *c->resets))
        c->resets[c->nresets++] = (struct rc_reset){ pool, first, count, c->guard };
    pthread_mutex_unlock(&s->lock);
}

void rc_barrier(rc_state *s, VkCommandBuffer cb)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_cb *c = cb_of(s, cb, true);
    if (c && c->stamped)
        c->guard = true;
    if (c)
        c->after_barrier = true;
    pthread_mutex_unlock(&s->lock);
}

void rc_copy(rc_state *s, VkCommandBuffer cb, const uint64_t *avail)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_cb *c = cb_of(s, cb, true);
    if (c) {
        c->last_avail = avail;
        c->after_barrier = false;
    }
    pthread_mutex_unlock(&s->lock);
}

void rc_execute(rc_state *s, VkCommandBuffer cb, uint32_t count, const VkCommandBuffer *secondaries)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_cb *c = cb_of(s, cb, true);
    if (c)
        c->after_barrier = false;
    for (uint32_t i = 0; c && i < count; i++) {
        if (fl_grow((void **)&c->executed, &c->executed_cap, c->nexecuted, sizeof *c->executed))
            c->executed[c->nexecuted++] = secondaries[i];
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- submissions and resets ----------------------------------------------------- */

/* Applies one command buffer's resets and writes, in recorded order per
 * kind (resets come before the writes they prepare); depth 1 for
 * secondaries. */
static bool apply_cb(rc_state *s, rc_cb *c, uint32_t seq, int depth)
{
    bool wrote = false;
    for (size_t i = 0; i < c->nresets; i++) {
        const struct rc_reset *r = &c->resets[i];
        rc_pool *p = pool_of(s, r->pool);
        for (uint32_t q = r->first; p && q < r->first + r->count && q < p->count; q++) {
            s->checked++;
            if (p->writer[q] && !r->guarded && !proven_after(s, p->writer[q]))
                note_unsafe(s, "recorded reset", r->pool, q, p->writer[q]);
            p->writer[q] = 0;
        }
    }
    for (size_t i = 0; i < c->nwrites; i++) {
        rc_pool *p = pool_of(s, c->writes[i].pool);
        if (p && c->writes[i].query < p->count) {
            p->writer[c->writes[i].query] = seq;
            wrote = true;
        }
    }
    for (size_t i = 0; depth < 1 && i < c->nexecuted; i++) {
        rc_cb *sec = cb_of(s, c->executed[i], false);
        if (sec)
            wrote |= apply_cb(s, sec, seq, depth + 1);
    }
    return wrote;
}

void rc_submitted(rc_state *s, VkQueue queue, uint32_t count, const VkCommandBuffer *cbs,
                  VkFence fence)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    update_proven(s);
    const uint32_t seq = ++s->seq ? s->seq : ++s->seq;
    rc_sub sub = { .seq = seq, .batch_fence = fence };
    for (uint32_t i = 0; i < count; i++) {
        rc_cb *c = cb_of(s, cbs[i], false);
        if (!c)
            continue;
        sub.wrote |= apply_cb(s, c, seq, 0);
        if (c->last_avail)
            sub.avail = c->last_avail;
    }
    if (s->nspare) {
        sub.fence = s->spare[--s->nspare];
    } else {
        const VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
        if (s->CreateFence(s->device, &info, NULL, &sub.fence) != VK_SUCCESS)
            sub.fence = VK_NULL_HANDLE;
    }
    /* Behind the batch, under the caller's synchronisation of the queue. */
    if (sub.fence && s->QueueSubmit(queue, 0, NULL, sub.fence) != VK_SUCCESS) {
        s->DestroyFence(s->device, sub.fence, NULL);
        sub.fence = VK_NULL_HANDLE;
    }
    if (fl_grow((void **)&s->subs, &s->subs_cap, s->nsubs, sizeof *s->subs))
        s->subs[s->nsubs++] = sub;
    else if (sub.fence)
        s->DestroyFence(s->device, sub.fence, NULL);
    pthread_mutex_unlock(&s->lock);
}

void rc_fences_signalled(rc_state *s, uint32_t count, const VkFence *fences)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    for (uint32_t k = 0; k < count; k++) {
        /* The newest submission with it: a fence is reset before it is
         * submitted again, so "signalled" is about that one. */
        for (size_t i = s->nsubs; fences[k] && i > 0; i--) {
            if (s->subs[i - 1].batch_fence == fences[k]) {
                if (!s->fenced_done || (int32_t)(s->subs[i - 1].seq - s->fenced_done) > 0)
                    s->fenced_done = s->subs[i - 1].seq;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
}

void rc_host_reset(rc_state *s, VkQueryPool pool, uint32_t first, uint32_t count)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    rc_pool *p = pool_of(s, pool);
    if (p) {
        update_proven(s);
        for (uint32_t q = first; q < first + count && q < p->count; q++) {
            s->checked++;
            if (p->writer[q] && !proven_after(s, p->writer[q]))
                note_unsafe(s, "host reset", pool, q, p->writer[q]);
            p->writer[q] = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
}
