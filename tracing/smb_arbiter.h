/* SPDX-License-Identifier: MIT */
/* SMB arbiter (producer side): owns one shared memory buffer and everything
 * the trace writers of a process share about it: the search for free
 * chunks, writer ID allocation, and the commit queue that tells the service
 * which chunks are ready and which patches to apply (the in-memory form of
 * CommitDataRequest).
 *
 * Writers are lock-free while they write inside a chunk; they take the
 * arbiter's mutex only to swap chunks or to queue a commit, briefly. A
 * stalling writer waits on a condition variable, which releases the mutex
 * (and it notifies the drainer without holding it): one writer's stall
 * never holds up another writer's chunk swap or commit. The
 * arbiter never does I/O: it calls `notify` (outside its lock) when the
 * queue is worth draining, and the owner (in-process backend, later the IPC
 * client) drains it with smb_arbiter_take_commits(). */
#ifndef SMB_ARBITER_H
#define SMB_ARBITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracing/smb_abi.h"

typedef enum smb_exhausted_policy {
    /* Never block: the packet is lost, counted, and the next packet that
     * makes it says previous_packet_dropped. */
    SMB_POLICY_DROP = 0,
    /* Wait (bounded by the caller's timeout) for the service to free a
     * chunk, then drop. trace_writer.h bounds it further: one wait per
     * loss episode. */
    SMB_POLICY_STALL = 1,
} smb_exhausted_policy;

/* ---- patch list (owned by one writer) ----------------------------------- */

/* A size field of an open message whose chunk has already been handed to
 * the service: the message writes its final size into `data` and the
 * arbiter ships it once written (first byte non-zero: a redundant varint
 * always has its top bit set there). Nodes never move while listed. */
typedef struct smb_patch_node {
    struct smb_patch_node *next;
    uint32_t chunk_id;
    uint32_t offset;
    uint8_t data[SMB_PACKET_HEADER_SIZE];
} smb_patch_node;

typedef struct smb_patch_list {
    smb_patch_node *head, *tail;
    smb_patch_node *free_nodes;
} smb_patch_list;

/* Appends a zeroed entry; NULL when out of memory. */
smb_patch_node *smb_patch_list_push(smb_patch_list *l, uint32_t chunk_id, uint32_t offset);
void smb_patch_list_free(smb_patch_list *l);
static inline bool smb_patch_list_front_ready(const smb_patch_list *l)
{
    return l->head && l->head->data[0] != 0;
}

/* ---- commit batches ----------------------------------------------------- */

typedef struct smb_commit_move {
    uint32_t page;
    uint8_t chunk;
    uint16_t target_buffer;
    uint16_t writer_id;
    /* Incremented each time the writer ID is handed out, so a reused ID
     * still names a distinct sequence. */
    uint32_t writer_gen;
} smb_commit_move;

typedef struct smb_commit_patch_group {
    uint16_t writer_id;
    uint32_t writer_gen;
    uint16_t target_buffer;
    uint32_t chunk_id;
    bool has_more_patches;
    uint32_t first; /* index into smb_commit_batch.patches */
    uint32_t count;
} smb_commit_patch_group;

typedef struct smb_commit_batch {
    smb_commit_move *moves;
    size_t num_moves, cap_moves;
    smb_commit_patch_group *groups;
    size_t num_groups, cap_groups;
    smb_patch *patches;
    size_t num_patches, cap_patches;
} smb_commit_batch;

void smb_commit_batch_clear(smb_commit_batch *b);
void smb_commit_batch_free(smb_commit_batch *b);

/* ---- the arbiter -------------------------------------------------------- */

typedef struct smb_arbiter smb_arbiter;

typedef struct smb_arbiter_config {
    size_t smb_size;        /* bytes, a multiple of page_size */
    size_t page_size;       /* 4 KiB multiple, 4..64 KiB */
    smb_page_layout layout; /* how free pages are partitioned */
    /* Called without the arbiter lock held, from writer threads, when the
     * commit queue should be drained: `urgent` when a writer is stalled or
     * flushing. May be NULL (the owner polls). */
    void (*notify)(void *ctx, bool urgent);
    void *notify_ctx;
} smb_arbiter_config;

/* Allocates the SMB itself (page aligned, zeroed). NULL on bad geometry or
 * OOM. */
smb_arbiter *smb_arbiter_create(const smb_arbiter_config *cfg);
/* Same over caller-provided memory (e.g. a memfd mapping), not freed. */
smb_arbiter *smb_arbiter_create_on(void *mem, const smb_arbiter_config *cfg);
void smb_arbiter_destroy(smb_arbiter *arb);

const smb_abi *smb_arbiter_abi(const smb_arbiter *arb);

/* Writer IDs 1..1023, handed out round-robin so a freed ID is not reused
 * soon. False when all are in use. */
bool smb_arbiter_alloc_writer_id(smb_arbiter *arb, uint16_t *id, uint32_t *gen);
void smb_arbiter_free_writer_id(smb_arbiter *arb, uint16_t id);
/* Generation of the live writer holding `id` (for chunks found by scraping). */
uint32_t smb_arbiter_writer_gen(smb_arbiter *arb, uint16_t id);

/* Finds a free chunk, marks it BEING_WRITTEN with header `hdr`. With
 * SMB_POLICY_STALL waits up to stall_timeout_ms for the service to free
 * one. False when none could be had. */
bool smb_arbiter_get_new_chunk(smb_arbiter *arb, const smb_chunk_header_value *hdr,
                               smb_exhausted_policy policy, uint32_t stall_timeout_ms,
                               smb_chunk *out);

/* Marks `chunk` COMPLETE (if non-NULL) and queues it, plus every patch at
 * the front of `patches` that has been written (those nodes are recycled).
 * `urgent` asks for an immediate drain (flush). */
void smb_arbiter_commit(smb_arbiter *arb, const smb_chunk *chunk, uint16_t writer_id,
                        uint32_t writer_gen, uint16_t target_buffer, smb_patch_list *patches,
                        bool urgent);

/* Service side: swaps the queued commits into `out` (whose old contents are
 * cleared; its arrays are recycled, so steady state never allocates). */
void smb_arbiter_take_commits(smb_arbiter *arb, smb_commit_batch *out);
/* Service side: chunks were freed; wakes stalled writers. */
void smb_arbiter_chunks_freed(smb_arbiter *arb);

/* Counts smb_arbiter_chunks_freed() calls: a writer dropping packets
 * retries the SMB as soon as this moves, instead of waiting until its
 * scratch chunk is full. */
uint64_t smb_arbiter_free_epoch(const smb_arbiter *arb);

/* Packets writers lost without ever putting them in a chunk (written into
 * the garbage chunk while the SMB was full). The service adds these to
 * TraceStats.BufferStats.trace_writer_packet_loss: it cannot see them. */
void smb_arbiter_add_packets_lost(smb_arbiter *arb, uint64_t n);
uint64_t smb_arbiter_packets_lost(const smb_arbiter *arb);

typedef struct smb_arbiter_stats {
    uint64_t chunks_acquired;
    uint64_t chunks_committed;
    uint64_t acquire_failures; /* SMB exhausted (after stalling, if asked) */
    uint64_t stalls;           /* acquisitions that had to wait */
    uint64_t stall_timeouts;   /* waits that ended without a chunk */
} smb_arbiter_stats;
void smb_arbiter_get_stats(smb_arbiter *arb, smb_arbiter_stats *out);

#endif /* SMB_ARBITER_H */
