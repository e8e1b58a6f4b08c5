/* SPDX-License-Identifier: MIT */
/* Shared memory buffer (SMB) ABI: the bytes and the state machine of the
 * memory a producer shares with a tracing service. Both sides use this file:
 * the trace writer and arbiter (producer) and the in-process backend or
 * gputrace-service (service).
 *
 * The layout is Perfetto's, bit for bit, because Perfetto's traced reads
 * chunks we write and our service reads chunks written by Perfetto's SDK
 * (reference: include/perfetto/ext/tracing/core/shared_memory_abi.h and
 * src/tracing/core/shared_memory_abi.cc in google/perfetto):
 *
 *   SMB   = N pages of page_size bytes (4 KiB multiple, 4..64 KiB).
 *   page  = 8-byte page header, then 1, 2, 4, 7 or 14 equal chunks, each
 *           ((page_size - 8) / n) rounded down to a multiple of 4 bytes.
 *   page header word (32 bits, little-endian):
 *           bits  0..27  two state bits per chunk, chunk i at bit 2*i
 *           bits 28..30  layout (0 = not partitioned, 1..5 = 1/2/4/7/14
 *                        chunks, 6 and 7 reserved)
 *           bit  31      reserved
 *           followed by 4 reserved bytes.
 *   chunk = 8-byte chunk header, then packet fragments.
 *   chunk header: u32 chunk_id @0, u16 writer_id @4, u16 packets @6 where
 *           packets = count (bits 0..9) | flags (bits 10..15).
 *   fragment = size as a varint of at most 4 bytes (writers use the
 *           redundant 4-byte form so it can be back-filled), then payload.
 *
 * Chunk states: FREE(0) -> BEING_WRITTEN(1) by the producer, -> COMPLETE(3)
 * by the producer, -> BEING_READ(2) by the service, -> FREE by the service.
 * Zeroed memory is a valid, empty SMB.
 *
 * Everything here is safe to call on memory a hostile peer scribbles on:
 * failures are return values, never asserts. */
#ifndef SMB_ABI_H
#define SMB_ABI_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SMB_MIN_PAGE_SIZE       4096u
#define SMB_MAX_PAGE_SIZE       65536u /* chunk sizes must fit the u16 they travel in */
#define SMB_MAX_CHUNKS_PER_PAGE 14u
#define SMB_PAGE_HEADER_SIZE    8u
#define SMB_CHUNK_HEADER_SIZE   8u
#define SMB_CHUNK_ALIGNMENT     4u
#define SMB_PACKET_HEADER_SIZE  4u
/* Ten bits of packet count in the chunk header. */
#define SMB_MAX_PACKETS_PER_CHUNK 1023u
/* A fragment size no chunk can hold (the largest 4-byte varint): a writer
 * that runs out of chunks mid-packet stamps it on the fragment it already
 * committed, telling the service to drop the packet without suspecting an
 * ABI violation. */
#define SMB_PACKET_SIZE_DROP_PACKET 0x0FFFFFFFu
/* Writer IDs are 1..1023 per producer; 0 means "header not initialized". */
#define SMB_MAX_WRITER_ID 1023u

typedef enum smb_chunk_state {
    SMB_CHUNK_FREE = 0,
    SMB_CHUNK_BEING_WRITTEN = 1,
    SMB_CHUNK_BEING_READ = 2,
    SMB_CHUNK_COMPLETE = 3,
} smb_chunk_state;

typedef enum smb_page_layout {
    SMB_PAGE_NOT_PARTITIONED = 0,
    SMB_PAGE_DIV1 = 1,
    SMB_PAGE_DIV2 = 2,
    SMB_PAGE_DIV4 = 3,
    SMB_PAGE_DIV7 = 4,
    SMB_PAGE_DIV14 = 5,
    SMB_PAGE_DIV_RESERVED1 = 6,
    SMB_PAGE_DIV_RESERVED2 = 7,
    SMB_NUM_PAGE_LAYOUTS = 8,
} smb_page_layout;

#define SMB_CHUNK_STATE_BITS 2u
#define SMB_CHUNK_STATE_MASK 0x3u
#define SMB_LAYOUT_SHIFT     28u
#define SMB_LAYOUT_MASK      0x70000000u
#define SMB_ALL_CHUNKS_MASK  0x0FFFFFFFu

/* Chunk header flags (the 6-bit field above the packet count). */
enum {
    /* The first fragment continues a packet from chunk_id - 1. */
    SMB_CHUNK_FIRST_PACKET_CONTINUES = 1u << 0,
    /* The last fragment continues on chunk_id + 1. */
    SMB_CHUNK_LAST_PACKET_CONTINUES = 1u << 1,
    /* The last packet has size fields still to be patched out of band. */
    SMB_CHUNK_NEEDS_PATCHING = 1u << 2,
    SMB_CHUNK_FLAGS_MASK = 0x7u,
};
#define SMB_PACKETS_COUNT_MASK  0x3FFu
#define SMB_PACKETS_FLAGS_SHIFT 10u

typedef struct smb_page_header {
    _Atomic uint32_t header_bitmap;
    uint32_t reserved;
} smb_page_header;

typedef struct smb_chunk_header {
    /* Set once when the producer takes the chunk (before any fragment). */
    _Atomic uint32_t chunk_id;
    _Atomic uint16_t writer_id;
    /* count | flags << 10, stored with release by the producer. */
    _Atomic uint16_t packets;
} smb_chunk_header;

/* The overlay is only sound if atomics are plain, lock-free words (they are
 * shared across processes, where a lock would mean nothing). */
static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_SHORT_LOCK_FREE == 2,
              "SMB atomics must be lock-free");
static_assert(sizeof(_Atomic uint32_t) == 4 && sizeof(_Atomic uint16_t) == 2,
              "SMB atomics must have the size of the plain type");
static_assert(sizeof(smb_page_header) == SMB_PAGE_HEADER_SIZE, "page header is 8 bytes");
static_assert(offsetof(smb_page_header, header_bitmap) == 0, "bitmap first");
static_assert(sizeof(smb_chunk_header) == SMB_CHUNK_HEADER_SIZE, "chunk header is 8 bytes");
static_assert(offsetof(smb_chunk_header, chunk_id) == 0, "chunk_id @0");
static_assert(offsetof(smb_chunk_header, writer_id) == 4, "writer_id @4");
static_assert(offsetof(smb_chunk_header, packets) == 6, "packets @6");
static_assert(_Alignof(smb_chunk_header) == SMB_CHUNK_ALIGNMENT, "chunk alignment");

/* One out-of-band patch (CommitDataRequest.ChunkToPatch.Patch): the 4
 * bytes of a nested size field, at `offset` from the chunk payload start. */
typedef struct smb_patch {
    uint32_t offset;
    uint8_t data[SMB_PACKET_HEADER_SIZE];
} smb_patch;

/* A chunk header as plain values, for building one before publishing it. */
typedef struct smb_chunk_header_value {
    uint32_t chunk_id;
    uint16_t writer_id;
    uint16_t packets;
} smb_chunk_header_value;

static inline uint16_t smb_packets_make(uint16_t count, uint8_t flags)
{
    return (uint16_t)((count & SMB_PACKETS_COUNT_MASK) |
                      ((uint16_t)(flags & 0x3F) << SMB_PACKETS_FLAGS_SHIFT));
}
static inline uint16_t smb_packets_count(uint16_t packets)
{
    return packets & SMB_PACKETS_COUNT_MASK;
}
static inline uint8_t smb_packets_flags(uint16_t packets)
{
    return (uint8_t)(packets >> SMB_PACKETS_FLAGS_SHIFT);
}

/* Static description of one mapped SMB. Holds no state of its own: all state
 * lives in the shared pages. */
typedef struct smb_abi {
    uint8_t *start;
    size_t size;
    size_t page_size;
    size_t num_pages;
    uint16_t chunk_sizes[SMB_NUM_PAGE_LAYOUTS];
} smb_abi;

/* A chunk located in the SMB. Invalid when begin == NULL. */
typedef struct smb_chunk {
    uint8_t *begin;
    uint16_t size; /* header included */
    uint8_t chunk_idx;
    uint32_t page_idx;
} smb_chunk;

extern const uint8_t smb_num_chunks_for_layout[SMB_NUM_PAGE_LAYOUTS];

/* Validates the geometry (page size a 4 KiB multiple in [4, 64] KiB, size a
 * multiple of it, start 4 KiB aligned). */
bool smb_abi_init(smb_abi *abi, void *start, size_t size, size_t page_size);

static inline smb_page_header *smb_page_header_at(const smb_abi *abi, size_t page_idx)
{
    return (smb_page_header *)(abi->start + page_idx * abi->page_size);
}

static inline uint32_t smb_layout_of(uint32_t bitmap)
{
    return (bitmap & SMB_LAYOUT_MASK) >> SMB_LAYOUT_SHIFT;
}

static inline uint32_t smb_num_chunks_of(uint32_t bitmap)
{
    return smb_num_chunks_for_layout[smb_layout_of(bitmap)];
}

static inline smb_chunk_state smb_chunk_state_of(uint32_t bitmap, uint32_t chunk_idx)
{
    return (smb_chunk_state)((bitmap >> (chunk_idx * SMB_CHUNK_STATE_BITS)) & SMB_CHUNK_STATE_MASK);
}

/* Relaxed read: a hint only, the page may change right after. */
static inline uint32_t smb_page_bitmap(const smb_abi *abi, size_t page_idx)
{
    return atomic_load_explicit(&smb_page_header_at(abi, page_idx)->header_bitmap,
                                memory_order_relaxed);
}

static inline smb_chunk_header *smb_chunk_hdr(const smb_chunk *c)
{
    return (smb_chunk_header *)c->begin;
}
static inline uint8_t *smb_chunk_payload(const smb_chunk *c)
{
    return c->begin + SMB_CHUNK_HEADER_SIZE;
}
static inline size_t smb_chunk_payload_size(const smb_chunk *c)
{
    return (size_t)c->size - SMB_CHUNK_HEADER_SIZE;
}

/* Packet count and flags with acquire: a consumer that sees count N also
 * sees every byte the producer wrote before bumping it to N. */
static inline uint16_t smb_chunk_load_packets(const smb_chunk *c)
{
    return atomic_load_explicit(&smb_chunk_hdr(c)->packets, memory_order_acquire);
}

/* Producer only (single writer per chunk): count + 1, published with
 * release so everything written for earlier packets is visible to a
 * scraping service that reads the new count. Returns the new count. */
static inline uint16_t smb_chunk_inc_packet_count(smb_chunk *c)
{
    smb_chunk_header *h = smb_chunk_hdr(c);
    uint16_t p = atomic_load_explicit(&h->packets, memory_order_relaxed);
    uint16_t count = (uint16_t)(smb_packets_count(p) + 1);
    atomic_store_explicit(&h->packets, smb_packets_make(count, smb_packets_flags(p)),
                          memory_order_release);
    return count;
}

/* Producer only, while it still owns the chunk. */
static inline void smb_chunk_set_flags(smb_chunk *c, uint8_t flags)
{
    smb_chunk_header *h = smb_chunk_hdr(c);
    uint16_t p = atomic_load_explicit(&h->packets, memory_order_relaxed);
    p = (uint16_t)(p | ((uint16_t)flags << SMB_PACKETS_FLAGS_SHIFT));
    atomic_store_explicit(&h->packets, p, memory_order_release);
}

/* Producer: claims a free page for `layout` (0 -> layout, CAS acq_rel). */
bool smb_try_partition_page(const smb_abi *abi, size_t page_idx, smb_page_layout layout);

/* Bit i set when chunk i exists and is FREE (0 for an unpartitioned page). */
uint32_t smb_free_chunks(const smb_abi *abi, size_t page_idx);

/* Producer: FREE -> BEING_WRITTEN, then publishes `hdr` into the chunk
 * header (ids relaxed, packets release: a scraper that reads the packets
 * word with acquire sees the ids). */
bool smb_try_acquire_chunk_for_writing(const smb_abi *abi, size_t page_idx, size_t chunk_idx,
                                       const smb_chunk_header_value *hdr, smb_chunk *out);

/* Service: COMPLETE -> BEING_READ. The acq_rel CAS makes every byte the
 * producer wrote before releasing the chunk visible here. */
bool smb_try_acquire_chunk_for_reading(const smb_abi *abi, size_t page_idx, size_t chunk_idx,
                                       smb_chunk *out);

/* Producer: BEING_WRITTEN -> COMPLETE (release publishes the payload). */
bool smb_release_chunk_as_complete(const smb_abi *abi, const smb_chunk *c);

/* Service: clears the chunk header, then BEING_READ -> FREE (release, so our
 * reads of the payload happen before the producer's next writes). When
 * every chunk of the page is free the page goes back to unpartitioned. */
bool smb_release_chunk_as_free(const smb_abi *abi, const smb_chunk *c);

/* The chunk at (page, idx) for the layout in `bitmap`, without any state
 * check (for a chunk the caller already owns, or for scraping). */
bool smb_chunk_at(const smb_abi *abi, size_t page_idx, uint32_t bitmap, size_t chunk_idx,
                  smb_chunk *out);

/* Parses a fragment header at p (at most 4 varint bytes, never past end).
 * Returns the header length, or 0 when it is not a terminated varint. */
static inline size_t smb_read_fragment_header(const uint8_t *p, const uint8_t *end, uint32_t *size)
{
    uint32_t v = 0;
    for (size_t i = 0; i < SMB_PACKET_HEADER_SIZE && p + i < end; i++) {
        v |= (uint32_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *size = v;
            return i + 1;
        }
    }
    return 0;
}

/* Bytes from `payload` covered by the first `nfrag` well-formed fragments
 * (stops early at the first malformed one). Used to copy only the finished
 * part of a chunk that is still being written. */
size_t smb_fragments_extent(const uint8_t *payload, size_t payload_size, uint32_t nfrag);

#endif /* SMB_ABI_H */
