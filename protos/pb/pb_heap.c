/* SPDX-License-Identifier: MIT */
/* Slice management for pb_heap_buffer. */
#include "protos/pb/pb_heap.h"

#include <stdlib.h>

struct pb_heap_slice {
    pb_heap_slice *next;
    size_t used; /* valid once the stream moved past this slice */
    uint8_t data[];
};

static pb_heap_slice *slice_new(size_t size)
{
    pb_heap_slice *s = malloc(sizeof *s + size);
    if (s) {
        s->next = NULL;
        s->used = 0;
    }
    return s;
}

static pb_span slice_span(const pb_heap_buffer *h, pb_heap_slice *s)
{
    pb_span span = { s->data, s->data + h->slice_size };
    return span;
}

static bool in_scratch(const pb_heap_buffer *h, const uint8_t *p)
{
    return p >= h->scratch && p <= h->scratch + sizeof h->scratch;
}

static pb_span heap_new_buffer(void *ctx, pb_stream *stream)
{
    pb_heap_buffer *h = ctx;
    if (h->cur && !in_scratch(h, stream->begin))
        h->cur->used = (size_t)(stream->write_ptr - stream->begin);
    if (!h->out_of_memory) {
        pb_heap_slice *next = h->cur ? h->cur->next : h->first;
        if (!next) {
            next = slice_new(h->slice_size);
            if (next) {
                if (h->cur)
                    h->cur->next = next;
                else
                    h->first = next;
            }
        }
        if (next) {
            next->used = 0;
            h->cur = next;
            return slice_span(h, next);
        }
        h->out_of_memory = true;
    }
    pb_span junk = { h->scratch, h->scratch + sizeof h->scratch };
    return junk;
}

static uint8_t *heap_annotate_patch(void *ctx, uint8_t *size_field)
{
    (void)ctx;
    return size_field; /* slices outlive the stream: patch in place */
}

void pb_heap_init(pb_heap_buffer *h, size_t slice_size)
{
    h->first = h->cur = NULL;
    h->slice_size = slice_size < PB_MIN_BUFFER_BYTES ? PB_MIN_BUFFER_BYTES : slice_size;
    h->out_of_memory = false;
    h->delegate.new_buffer = heap_new_buffer;
    h->delegate.annotate_patch = heap_annotate_patch;
    h->delegate.ctx = h;
    pb_stream_init(&h->stream, &h->delegate);
}

void pb_heap_reset(pb_heap_buffer *h)
{
    h->out_of_memory = false;
    h->cur = NULL;
    pb_stream_init(&h->stream, &h->delegate);
    if (h->first) {
        h->cur = h->first;
        h->first->used = 0;
        pb_stream_reset(&h->stream, slice_span(h, h->first));
    }
}

void pb_heap_free(pb_heap_buffer *h)
{
    pb_heap_slice *s = h->first;
    while (s) {
        pb_heap_slice *next = s->next;
        free(s);
        s = next;
    }
    h->first = h->cur = NULL;
    pb_stream_init(&h->stream, &h->delegate);
}

/* The slice the stream writes into has no `used` yet; read it live. */
static size_t slice_used(const pb_heap_buffer *h, const pb_heap_slice *s)
{
    if (s == h->cur && !h->out_of_memory && h->stream.begin == s->data)
        return (size_t)(h->stream.write_ptr - h->stream.begin);
    return s->used;
}

size_t pb_heap_size(const pb_heap_buffer *h)
{
    size_t total = 0;
    for (const pb_heap_slice *s = h->first; s; s = s->next) {
        total += slice_used(h, s);
        if (s == h->cur)
            break;
    }
    return total;
}

void pb_heap_copy(const pb_heap_buffer *h, uint8_t *dst)
{
    for (const pb_heap_slice *s = h->first; s; s = s->next) {
        size_t n = slice_used(h, s);
        memcpy(dst, s->data, n);
        dst += n;
        if (s == h->cur)
            break;
    }
}

uint8_t *pb_heap_dup(const pb_heap_buffer *h, size_t *size)
{
    size_t n = pb_heap_size(h);
    uint8_t *out = malloc(n ? n : 1);
    if (out)
        pb_heap_copy(h, out);
    if (size)
        *size = n;
    return out;
}

size_t pb_heap_slices_used(const pb_heap_buffer *h)
{
    size_t n = 0;
    for (const pb_heap_slice *s = h->first; s; s = s->next) {
        n++;
        if (s == h->cur)
            break;
    }
    return n;
}
