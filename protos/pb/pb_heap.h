/* SPDX-License-Identifier: MIT */
/* A heap-backed stream delegate for tools and tests: the stream writes into a
 * chain of malloc'd slices that stay alive, so size fields never need patching
 * (annotate_patch answers with the same address). Slices are reused after
 * pb_heap_reset(), so a warmed-up buffer stops allocating. */
#ifndef PB_HEAP_H
#define PB_HEAP_H

#include "protos/pb/pb_writer.h"

typedef struct pb_heap_slice pb_heap_slice;

typedef struct pb_heap_buffer {
    pb_stream stream;
    pb_stream_delegate delegate;
    pb_heap_slice *first;
    pb_heap_slice *cur;
    size_t slice_size;
    /* Set when malloc failed; the bytes written since went to `scratch` and
     * the contents are incomplete. */
    bool out_of_memory;
    uint8_t scratch[256];
} pb_heap_buffer;

/* slice_size is clamped to at least PB_MIN_BUFFER_BYTES. */
void pb_heap_init(pb_heap_buffer *h, size_t slice_size);
void pb_heap_free(pb_heap_buffer *h);
/* Forgets the contents and rewinds to the first slice. */
void pb_heap_reset(pb_heap_buffer *h);

static inline pb_stream *pb_heap_stream(pb_heap_buffer *h)
{
    return &h->stream;
}

/* Bytes written so far (all slices). */
size_t pb_heap_size(const pb_heap_buffer *h);
/* Copies the contents into dst (pb_heap_size() bytes). */
void pb_heap_copy(const pb_heap_buffer *h, uint8_t *dst);
/* Contents as one malloc'd block (caller frees); NULL on OOM. */
uint8_t *pb_heap_dup(const pb_heap_buffer *h, size_t *size);
/* Number of slices in use: > 1 means the slow path ran. */
size_t pb_heap_slices_used(const pb_heap_buffer *h);

#endif /* PB_HEAP_H */
