/* SPDX-License-Identifier: MIT */
/* Service side of an SMB: chunk moves, patches, scraping. */
#include "tracing/smb_service.h"

#include <string.h>

bool svc_move_chunk(const smb_abi *abi, cb_buffer *cb, uint32_t producer_id, uint32_t page,
                    uint32_t chunk)
{
    smb_chunk c;
    if (!smb_try_acquire_chunk_for_reading(abi, page, chunk, &c)) {
        cb_add_abi_violations(cb, 1);
        return false;
    }
    /* The acq_rel CAS above made the producer's writes visible; the header
     * is read once and passed along, never re-read from shared memory. */
    uint16_t packets = smb_chunk_load_packets(&c);
    uint16_t writer_id = atomic_load_explicit(&smb_chunk_hdr(&c)->writer_id, memory_order_relaxed);
    uint32_t chunk_id = atomic_load_explicit(&smb_chunk_hdr(&c)->chunk_id, memory_order_relaxed);
    cb_copy_chunk(cb, producer_id, writer_id, chunk_id, smb_packets_count(packets),
                  smb_packets_flags(packets), true, smb_chunk_payload(&c),
                  smb_chunk_payload_size(&c));
    smb_release_chunk_as_free(abi, &c);
    return true;
}

size_t svc_apply_commits(const smb_abi *abi, cb_buffer *cb, const smb_commit_batch *batch)
{
    size_t moved = 0;
    for (size_t i = 0; i < batch->num_moves; i++) {
        const smb_commit_move *mv = &batch->moves[i];
        moved += svc_move_chunk(abi, cb, mv->writer_gen, mv->page, mv->chunk);
    }
    /* After the moves: a patch may target a chunk of this very batch. */
    for (size_t i = 0; i < batch->num_groups; i++) {
        const smb_commit_patch_group *g = &batch->groups[i];
        cb_try_patch(cb, g->writer_gen, g->writer_id, g->chunk_id, &batch->patches[g->first],
                     g->count, g->has_more_patches);
    }
    return moved;
}

size_t svc_scrape(const smb_abi *abi, cb_buffer *cb,
                  uint32_t (*producer_of)(void *ctx, uint16_t writer_id), void *ctx,
                  uint8_t *scratch)
{
    size_t copied = 0;
    for (size_t page = 0; page < abi->num_pages; page++) {
        uint32_t bitmap = atomic_load_explicit(&smb_page_header_at(abi, page)->header_bitmap,
                                               memory_order_acquire);
        uint32_t n = smb_num_chunks_of(bitmap);
        for (uint32_t i = 0; i < n; i++) {
            smb_chunk c;
            if (smb_chunk_state_of(bitmap, i) != SMB_CHUNK_BEING_WRITTEN ||
                !smb_chunk_at(abi, page, bitmap, i, &c))
                continue;
            /* Count first (acquire): a count published by the current
             * owner makes its ids visible; a stale count of 0 or 1 means
             * nothing finished, and is skipped. */
            uint16_t packets = smb_chunk_load_packets(&c);
            uint16_t count = smb_packets_count(packets);
            uint16_t writer_id =
                atomic_load_explicit(&smb_chunk_hdr(&c)->writer_id, memory_order_relaxed);
            uint32_t chunk_id =
                atomic_load_explicit(&smb_chunk_hdr(&c)->chunk_id, memory_order_relaxed);
            if (count < 2 || writer_id == 0)
                continue;
            /* Copy only what the writer finished; the rest of the copy is
             * zero. The full size keeps the record rewritable in place when
             * the chunk is committed for real. */
            size_t psize = smb_chunk_payload_size(&c);
            size_t extent = smb_fragments_extent(smb_chunk_payload(&c), psize, count - 1u);
            memcpy(scratch, smb_chunk_payload(&c), extent);
            memset(scratch + extent, 0, psize - extent);
            cb_copy_chunk(cb, producer_of(ctx, writer_id), writer_id, chunk_id, count,
                          smb_packets_flags(packets), false, scratch, psize);
            copied++;
        }
    }
    return copied;
}
