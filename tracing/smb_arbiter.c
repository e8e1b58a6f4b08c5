/* SPDX-License-Identifier: MIT */
/* SMB arbiter: chunk search, writer IDs and the commit queue. One mutex
 * guards the queue and serializes chunk searches; the chunk states
 * themselves are atomic in the SMB (the service changes them without this
 * lock, possibly from another process). */
#include "tracing/smb_arbiter.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "tracing/util/util_mem.h"
#include "tracing/util/util_time.h"

struct smb_arbiter {
    smb_abi abi;
    void *mem;
    bool owns_mem;
    smb_page_layout layout;
    void (*notify)(void *ctx, bool urgent);
    void *notify_ctx;

    pthread_mutex_t mu;
    pthread_cond_t freed_cv;
    size_t page_cursor;
    _Atomic uint64_t free_epoch; /* written under mu; read lock-free by writers */
    uint32_t stallers;

    uint16_t next_writer_id;
    uint32_t gen_counter;
    bool writer_used[SMB_MAX_WRITER_ID + 1];
    _Atomic uint32_t writer_gen[SMB_MAX_WRITER_ID + 1];

    smb_commit_batch pending;
    size_t pending_chunks;
    size_t max_chunks;
    size_t notify_threshold;
    bool notified;

    _Atomic uint64_t packets_lost;
    smb_arbiter_stats stats;
};

/* ---- patch list --------------------------------------------------------- */

smb_patch_node *smb_patch_list_push(smb_patch_list *l, uint32_t chunk_id, uint32_t offset)
{
    smb_patch_node *n = l->free_nodes;
    if (n)
        l->free_nodes = n->next;
    else if (!(n = malloc(sizeof *n)))
        return NULL;
    n->next = NULL;
    n->chunk_id = chunk_id;
    n->offset = offset;
    memset(n->data, 0, sizeof n->data);
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
    return n;
}

static smb_patch_node *patch_list_pop(smb_patch_list *l)
{
    smb_patch_node *n = l->head;
    l->head = n->next;
    if (!l->head)
        l->tail = NULL;
    return n;
}

void smb_patch_list_free(smb_patch_list *l)
{
    for (smb_patch_node *n = l->head, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    for (smb_patch_node *n = l->free_nodes, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    memset(l, 0, sizeof *l);
}

/* ---- commit batches ----------------------------------------------------- */

void smb_commit_batch_clear(smb_commit_batch *b)
{
    b->num_moves = b->num_groups = b->num_patches = 0;
}

void smb_commit_batch_free(smb_commit_batch *b)
{
    free(b->moves);
    free(b->groups);
    free(b->patches);
    memset(b, 0, sizeof *b);
}

/* ---- lifecycle ---------------------------------------------------------- */

smb_arbiter *smb_arbiter_create_on(void *mem, const smb_arbiter_config *cfg)
{
    if (cfg->layout < SMB_PAGE_DIV1 || cfg->layout > SMB_PAGE_DIV14)
        return NULL;
    smb_arbiter *arb = calloc(1, sizeof *arb);
    if (!arb)
        return NULL;
    if (!smb_abi_init(&arb->abi, mem, cfg->smb_size, cfg->page_size)) {
        free(arb);
        return NULL;
    }
    arb->mem = mem;
    arb->layout = cfg->layout;
    arb->notify = cfg->notify;
    arb->notify_ctx = cfg->notify_ctx;
    arb->next_writer_id = 1;
    arb->max_chunks = arb->abi.num_pages * smb_num_chunks_for_layout[cfg->layout];
    /* Wake the drainer when a quarter of the chunks wait: early enough that
     * writers rarely find the SMB full, late enough to batch. */
    arb->notify_threshold = arb->max_chunks / 4 ? arb->max_chunks / 4 : 1;
    /* Every queued chunk is one the writers cannot reuse yet, so the queue
     * never holds more moves than the SMB has chunks: reserve that now and
     * committing never fails for lack of memory. */
    if (!util_grow_array((void **)&arb->pending.moves, &arb->pending.cap_moves, arb->max_chunks,
                         sizeof *arb->pending.moves)) {
        free(arb);
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&arb->freed_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&arb->mu, NULL);
    return arb;
}

smb_arbiter *smb_arbiter_create(const smb_arbiter_config *cfg)
{
    if (cfg->smb_size == 0)
        return NULL;
    void *mem =
        mmap(NULL, cfg->smb_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    smb_arbiter *arb = smb_arbiter_create_on(mem, cfg);
    if (!arb) {
        munmap(mem, cfg->smb_size);
        return NULL;
    }
    arb->owns_mem = true;
    return arb;
}

void smb_arbiter_destroy(smb_arbiter *arb)
{
    if (!arb)
        return;
    if (arb->owns_mem)
        munmap(arb->mem, arb->abi.size);
    smb_commit_batch_free(&arb->pending);
    pthread_cond_destroy(&arb->freed_cv);
    pthread_mutex_destroy(&arb->mu);
    free(arb);
}

const smb_abi *smb_arbiter_abi(const smb_arbiter *arb)
{
    return &arb->abi;
}

/* ---- writer IDs --------------------------------------------------------- */

bool smb_arbiter_alloc_writer_id(smb_arbiter *arb, uint16_t *id, uint32_t *gen)
{
    bool ok = false;
    pthread_mutex_lock(&arb->mu);
    for (unsigned i = 0; i < SMB_MAX_WRITER_ID; i++) {
        uint16_t cand = arb->next_writer_id;
        arb->next_writer_id = (uint16_t)(cand % SMB_MAX_WRITER_ID + 1);
        if (!arb->writer_used[cand]) {
            arb->writer_used[cand] = true;
            *gen = ++arb->gen_counter;
            atomic_store_explicit(&arb->writer_gen[cand], *gen, memory_order_relaxed);
            *id = cand;
            ok = true;
            break;
        }
    }
    pthread_mutex_unlock(&arb->mu);
    return ok;
}

void smb_arbiter_free_writer_id(smb_arbiter *arb, uint16_t id)
{
    if (id == 0 || id > SMB_MAX_WRITER_ID)
        return;
    pthread_mutex_lock(&arb->mu);
    arb->writer_used[id] = false;
    pthread_mutex_unlock(&arb->mu);
}

uint32_t smb_arbiter_writer_gen(smb_arbiter *arb, uint16_t id)
{
    if (id == 0 || id > SMB_MAX_WRITER_ID)
        return 0;
    return atomic_load_explicit(&arb->writer_gen[id], memory_order_relaxed);
}

/* ---- chunks ------------------------------------------------------------- */

static bool find_chunk_locked(smb_arbiter *arb, const smb_chunk_header_value *hdr, smb_chunk *out)
{
    const smb_abi *abi = &arb->abi;
    for (size_t i = 0; i < abi->num_pages; i++) {
        size_t page = (arb->page_cursor + i) % abi->num_pages;
        if (smb_page_bitmap(abi, page) == 0)
            smb_try_partition_page(abi, page, arb->layout); /* lost races are fine */
        uint32_t free_bits = smb_free_chunks(abi, page);
        while (free_bits) {
            unsigned idx = (unsigned)__builtin_ctz(free_bits);
            free_bits &= free_bits - 1;
            if (smb_try_acquire_chunk_for_writing(abi, page, idx, hdr, out)) {
                arb->page_cursor = page;
                return true;
            }
        }
    }
    return false;
}

bool smb_arbiter_get_new_chunk(smb_arbiter *arb, const smb_chunk_header_value *hdr,
                               smb_exhausted_policy policy, uint32_t stall_timeout_ms,
                               smb_chunk *out)
{
    struct timespec deadline = { 0, 0 };
    bool stalled = false;
    pthread_mutex_lock(&arb->mu);
    for (;;) {
        if (find_chunk_locked(arb, hdr, out)) {
            arb->stats.chunks_acquired++;
            arb->stats.stalls += stalled;
            pthread_mutex_unlock(&arb->mu);
            return true;
        }
        if (policy != SMB_POLICY_STALL || stall_timeout_ms == 0)
            break;
        if (!stalled) {
            stalled = true;
            deadline = util_deadline_after_ms(stall_timeout_ms);
        } else if (util_remaining_ms(&deadline) == 0) {
            break;
        }
        /* The epoch tells whether the service freed anything while we were
         * unlocked to notify it, so no wake-up is missed. */
        uint64_t epoch = atomic_load_explicit(&arb->free_epoch, memory_order_relaxed);
        pthread_mutex_unlock(&arb->mu);
        if (arb->notify)
            arb->notify(arb->notify_ctx, true);
        pthread_mutex_lock(&arb->mu);
        if (atomic_load_explicit(&arb->free_epoch, memory_order_relaxed) == epoch) {
            struct timespec wake = util_deadline_after_ms(10);
            if (util_timespec_before(&deadline, &wake))
                wake = deadline;
            arb->stallers++;
            pthread_cond_timedwait(&arb->freed_cv, &arb->mu, &wake);
            arb->stallers--;
        }
    }
    arb->stats.acquire_failures++;
    arb->stats.stall_timeouts += stalled;
    pthread_mutex_unlock(&arb->mu);
    return false;
}

void smb_arbiter_commit(smb_arbiter *arb, const smb_chunk *chunk, uint16_t writer_id,
                        uint32_t writer_gen, uint16_t target_buffer, smb_patch_list *patches,
                        bool urgent)
{
    bool wake = false;
    pthread_mutex_lock(&arb->mu);
    smb_commit_batch *b = &arb->pending;
    if (chunk && chunk->begin) {
        /* Release: the service that sees COMPLETE sees the whole payload. */
        if (smb_release_chunk_as_complete(&arb->abi, chunk) && b->num_moves < b->cap_moves) {
            b->moves[b->num_moves++] = (smb_commit_move){
                .page = chunk->page_idx,
                .chunk = chunk->chunk_idx,
                .target_buffer = target_buffer,
                .writer_id = writer_id,
                .writer_gen = writer_gen,
            };
            arb->pending_chunks++;
            arb->stats.chunks_committed++;
        }
    }
    size_t group = SIZE_MAX;
    while (patches && smb_patch_list_front_ready(patches)) {
        smb_patch_node *n = patch_list_pop(patches);
        if (group == SIZE_MAX || b->groups[group].chunk_id != n->chunk_id) {
            if (util_grow_array((void **)&b->groups, &b->cap_groups, b->num_groups + 1,
                                sizeof *b->groups)) {
                group = b->num_groups++;
                b->groups[group] = (smb_commit_patch_group){
                    .writer_id = writer_id,
                    .writer_gen = writer_gen,
                    .target_buffer = target_buffer,
                    .chunk_id = n->chunk_id,
                    .first = (uint32_t)b->num_patches,
                };
            } else {
                group = SIZE_MAX;
            }
        }
        /* Out of memory: the patch is lost and its chunk stays unreadable
         * until the final read, which drops that packet (patches_failed). */
        if (group != SIZE_MAX && util_grow_array((void **)&b->patches, &b->cap_patches,
                                                 b->num_patches + 1, sizeof *b->patches)) {
            smb_patch *p = &b->patches[b->num_patches++];
            p->offset = n->offset;
            memcpy(p->data, n->data, sizeof p->data);
            b->groups[group].count++;
        }
        n->next = patches->free_nodes;
        patches->free_nodes = n;
    }
    /* Patches of one chunk are contiguous in the list: an unwritten one for
     * the same chunk at the front means this group is not the last. */
    if (group != SIZE_MAX && patches && patches->head &&
        patches->head->chunk_id == b->groups[group].chunk_id)
        b->groups[group].has_more_patches = true;
    if (urgent || (!arb->notified && arb->pending_chunks >= arb->notify_threshold)) {
        wake = true;
        arb->notified = true;
    }
    pthread_mutex_unlock(&arb->mu);
    if (wake && arb->notify)
        arb->notify(arb->notify_ctx, urgent);
}

void smb_arbiter_take_commits(smb_arbiter *arb, smb_commit_batch *out)
{
    smb_commit_batch_clear(out);
    /* Outside the lock: the batch swapped in must be able to take every
     * chunk of the SMB, like the one swapped out. */
    util_grow_array((void **)&out->moves, &out->cap_moves, arb->max_chunks, sizeof *out->moves);
    pthread_mutex_lock(&arb->mu);
    if (out->cap_moves >= arb->max_chunks) {
        smb_commit_batch tmp = arb->pending;
        arb->pending = *out;
        *out = tmp;
        arb->pending_chunks = 0;
        arb->notified = false;
    }
    pthread_mutex_unlock(&arb->mu);
}

void smb_arbiter_chunks_freed(smb_arbiter *arb)
{
    pthread_mutex_lock(&arb->mu);
    atomic_fetch_add_explicit(&arb->free_epoch, 1, memory_order_relaxed);
    if (arb->stallers)
        pthread_cond_broadcast(&arb->freed_cv);
    pthread_mutex_unlock(&arb->mu);
}

uint64_t smb_arbiter_free_epoch(const smb_arbiter *arb)
{
    return atomic_load_explicit(&arb->free_epoch, memory_order_relaxed);
}

void smb_arbiter_add_packets_lost(smb_arbiter *arb, uint64_t n)
{
    atomic_fetch_add_explicit(&arb->packets_lost, n, memory_order_relaxed);
}

uint64_t smb_arbiter_packets_lost(const smb_arbiter *arb)
{
    return atomic_load_explicit(&arb->packets_lost, memory_order_relaxed);
}

void smb_arbiter_get_stats(smb_arbiter *arb, smb_arbiter_stats *out)
{
    pthread_mutex_lock(&arb->mu);
    *out = arb->stats;
    pthread_mutex_unlock(&arb->mu);
}
