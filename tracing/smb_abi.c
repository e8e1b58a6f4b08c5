/* SPDX-License-Identifier: MIT */
/* SMB page and chunk state transitions. Every transition is one CAS on the
 * page header word; chunk headers are published around it with the orders
 * documented in smb_abi.h. Nothing here trusts the shared memory: a peer may
 * change any byte at any time, so failures are reported, never asserted. */
#include "tracing/smb_abi.h"

#include <string.h>

const uint8_t smb_num_chunks_for_layout[SMB_NUM_PAGE_LAYOUTS] = { 0, 1, 2, 4, 7, 14, 0, 0 };

bool smb_abi_init(smb_abi *abi, void *start, size_t size, size_t page_size)
{
    memset(abi, 0, sizeof *abi);
    if (!start || page_size < SMB_MIN_PAGE_SIZE || page_size > SMB_MAX_PAGE_SIZE ||
        page_size % SMB_MIN_PAGE_SIZE != 0 || size == 0 || size % page_size != 0 ||
        (uintptr_t)start % SMB_MIN_PAGE_SIZE != 0)
        return false;
    abi->start = start;
    abi->size = size;
    abi->page_size = page_size;
    abi->num_pages = size / page_size;
    for (size_t l = 0; l < SMB_NUM_PAGE_LAYOUTS; l++) {
        size_t n = smb_num_chunks_for_layout[l];
        /* Equal chunks after the page header, each a multiple of 4 bytes:
         * alignment applies to chunk starts, the tail of the page is slack. */
        abi->chunk_sizes[l] = n ? (uint16_t)(((page_size - SMB_PAGE_HEADER_SIZE) / n) & ~3u) : 0;
    }
    return true;
}

bool smb_chunk_at(const smb_abi *abi, size_t page_idx, uint32_t bitmap, size_t chunk_idx,
                  smb_chunk *out)
{
    uint32_t layout = smb_layout_of(bitmap);
    if (page_idx >= abi->num_pages || chunk_idx >= smb_num_chunks_for_layout[layout])
        return false;
    uint16_t csize = abi->chunk_sizes[layout];
    out->begin = abi->start + page_idx * abi->page_size + SMB_PAGE_HEADER_SIZE + chunk_idx * csize;
    out->size = csize;
    out->chunk_idx = (uint8_t)chunk_idx;
    out->page_idx = (uint32_t)page_idx;
    return true;
}

bool smb_try_partition_page(const smb_abi *abi, size_t page_idx, smb_page_layout layout)
{
    if (page_idx >= abi->num_pages || layout < SMB_PAGE_DIV1 || layout > SMB_PAGE_DIV14)
        return false;
    uint32_t expected = 0;
    uint32_t next = ((uint32_t)layout << SMB_LAYOUT_SHIFT) & SMB_LAYOUT_MASK;
    /* acq_rel: acquire pairs with the service's release when it freed the
     * last chunk of the page (so its reads are done); release is harmless. */
    return atomic_compare_exchange_strong_explicit(
        &smb_page_header_at(abi, page_idx)->header_bitmap, &expected, next, memory_order_acq_rel,
        memory_order_relaxed);
}

uint32_t smb_free_chunks(const smb_abi *abi, size_t page_idx)
{
    uint32_t bitmap = smb_page_bitmap(abi, page_idx);
    uint32_t n = smb_num_chunks_of(bitmap), res = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (smb_chunk_state_of(bitmap, i) == SMB_CHUNK_FREE)
            res |= 1u << i;
    }
    return res;
}

/* One CAS moving chunk_idx from `from` to `to`, retried while other chunks
 * of the same page change underneath. Returns the bitmap that was replaced,
 * or sets *ok = false when the chunk is not in `from` (or the page layout is
 * not what it was). */
static bool transition(const smb_abi *abi, size_t page_idx, size_t chunk_idx, smb_chunk_state from,
                       smb_chunk_state to, uint32_t *old_bitmap)
{
    _Atomic uint32_t *word = &smb_page_header_at(abi, page_idx)->header_bitmap;
    uint32_t cur = atomic_load_explicit(word, memory_order_acquire);
    /* Bounded: each failed CAS means another chunk of the page moved, which
     * cannot go on forever in a sane system; a hostile peer only gets a
     * failed transition. */
    for (int attempt = 0; attempt < 1024; attempt++) {
        if (chunk_idx >= smb_num_chunks_of(cur) ||
            smb_chunk_state_of(cur, (uint32_t)chunk_idx) != from)
            return false;
        uint32_t shift = (uint32_t)chunk_idx * SMB_CHUNK_STATE_BITS;
        uint32_t next = (cur & ~(SMB_CHUNK_STATE_MASK << shift)) | ((uint32_t)to << shift);
        if (to == SMB_CHUNK_FREE && (next & SMB_ALL_CHUNKS_MASK) == 0)
            next = 0; /* all free: back to unpartitioned */
        if (atomic_compare_exchange_weak_explicit(word, &cur, next, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *old_bitmap = cur;
            return true;
        }
    }
    return false;
}

bool smb_try_acquire_chunk_for_writing(const smb_abi *abi, size_t page_idx, size_t chunk_idx,
                                       const smb_chunk_header_value *hdr, smb_chunk *out)
{
    uint32_t old;
    if (page_idx >= abi->num_pages ||
        !transition(abi, page_idx, chunk_idx, SMB_CHUNK_FREE, SMB_CHUNK_BEING_WRITTEN, &old))
        return false;
    smb_chunk_at(abi, page_idx, old, chunk_idx, out);
    smb_chunk_header *h = smb_chunk_hdr(out);
    atomic_store_explicit(&h->writer_id, hdr->writer_id, memory_order_relaxed);
    atomic_store_explicit(&h->chunk_id, hdr->chunk_id, memory_order_relaxed);
    atomic_store_explicit(&h->packets, hdr->packets, memory_order_release);
    return true;
}

bool smb_try_acquire_chunk_for_reading(const smb_abi *abi, size_t page_idx, size_t chunk_idx,
                                       smb_chunk *out)
{
    uint32_t old;
    if (page_idx >= abi->num_pages ||
        !transition(abi, page_idx, chunk_idx, SMB_CHUNK_COMPLETE, SMB_CHUNK_BEING_READ, &old))
        return false;
    return smb_chunk_at(abi, page_idx, old, chunk_idx, out);
}

bool smb_release_chunk_as_complete(const smb_abi *abi, const smb_chunk *c)
{
    uint32_t old;
    return c->begin && transition(abi, c->page_idx, c->chunk_idx, SMB_CHUNK_BEING_WRITTEN,
                                  SMB_CHUNK_COMPLETE, &old);
}

bool smb_release_chunk_as_free(const smb_abi *abi, const smb_chunk *c)
{
    if (!c->begin)
        return false;
    /* Cleared before the state changes, so a producer (or a scraper) never
     * sees a stale header on a chunk that is being written again. */
    smb_chunk_header *h = smb_chunk_hdr(c);
    atomic_store_explicit(&h->writer_id, 0, memory_order_relaxed);
    atomic_store_explicit(&h->chunk_id, 0, memory_order_relaxed);
    atomic_store_explicit(&h->packets, 0, memory_order_release);
    uint32_t old;
    return transition(abi, c->page_idx, c->chunk_idx, SMB_CHUNK_BEING_READ, SMB_CHUNK_FREE, &old);
}

size_t smb_fragments_extent(const uint8_t *payload, size_t payload_size, uint32_t nfrag)
{
    const uint8_t *p = payload, *end = payload + payload_size;
    for (uint32_t i = 0; i < nfrag && p < end; i++) {
        uint32_t size;
        size_t hl = smb_read_fragment_header(p, end, &size);
        if (!hl || size > (size_t)(end - p) - hl)
            break;
        p += hl + size;
    }
    return (size_t)(p - payload);
}
