/* SPDX-License-Identifier: MIT */
/* Fuzz target for the pb reader, with a differential check through the
 * writer.
 *
 * 1. The input is read recursively into a flat event list: every field,
 *    and for LEN fields whose payload validates cleanly as one message
 *    level, the fields inside (entered with pb_reader_enter, down to
 *    PB_MAX_DEPTH). Each LEN payload is also iterated as packed varints,
 *    fixed32s and fixed64s, whose element counts and errors must agree
 *    with the payload length.
 * 2. What was read (up to the first error of each message) is re-encoded
 *    with the writer, into small slices chosen from the input so the slow
 *    paths run too: varints and fixed values as such, entered LEN fields as
 *    nested messages, the others as bytes.
 * 3. The re-encoding is read the same way; it must read without error and
 *    give the same events (entered fields are compared by their contents,
 *    the re-encoded lengths differ). Any mismatch aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_reader.h"
#include "protos/pb/pb_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef enum ev_kind {
    EV_FIELD,
    EV_ENTER,
    EV_EXIT,
    EV_ERROR
} ev_kind;

typedef struct event {
    uint8_t kind;
    uint8_t wire_type;
    uint32_t id;
    uint32_t depth;
    uint64_t value;      /* VARINT/FIXED: value; LEN (not entered): length */
    const uint8_t *data; /* LEN (not entered) */
    pb_error err;        /* EV_ERROR */
} event;

typedef struct ev_list {
    event *v;
    size_t n, cap;
} ev_list;

static void push(ev_list *l, event e)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v)
            abort();
    }
    l->v[l->n++] = e;
}

static void check_packed(const pb_field *f)
{
    pb_packed_iter it;
    uint64_t v64;
    uint32_t v32;
    size_t n = 0;
    pb_packed_init(&it, f);
    while (pb_packed_next_varint(&it, &v64))
        n++;
    if (n > f->value || (it.err == PB_OK && it.p != it.end))
        abort();

    n = 0;
    pb_packed_init(&it, f);
    while (pb_packed_next_fixed32(&it, &v32))
        n++;
    if (n != f->value / 4 || (it.err == PB_OK) != (f->value % 4 == 0))
        abort();

    n = 0;
    pb_packed_init(&it, f);
    while (pb_packed_next_fixed64(&it, &v64))
        n++;
    if (n != f->value / 8 || (it.err == PB_OK) != (f->value % 8 == 0))
        abort();
}

static void walk(pb_reader *r, ev_list *out)
{
    pb_field f;
    while (pb_reader_next(r, &f)) {
        /* A payload ends where the reader resumes, inside its span. */
        if (f.wire_type == PB_WIRE_LEN && (f.data + f.value != r->p || r->p > r->end))
            abort();
        if (f.wire_type == PB_WIRE_LEN) {
            check_packed(&f);
            if (r->depth < PB_MAX_DEPTH && pb_validate(f.data, (size_t)f.value) == PB_OK) {
                pb_reader child;
                if (!pb_reader_enter(r, &f, &child))
                    abort();
                push(out, (event){ .kind = EV_ENTER, .id = f.id, .depth = r->depth });
                walk(&child, out);
                push(out, (event){ .kind = EV_EXIT, .depth = r->depth });
                continue;
            }
        }
        push(out, (event){ .kind = EV_FIELD,
                           .wire_type = f.wire_type,
                           .id = f.id,
                           .depth = r->depth,
                           .value = f.value,
                           .data = f.data });
    }
    if (r->err != PB_OK)
        push(out, (event){ .kind = EV_ERROR, .depth = r->depth, .err = r->err });
}

/* Re-encodes events [*i, ...) into `m` until the matching EV_EXIT. */
static void encode(const ev_list *l, size_t *i, pb_msg *m)
{
    while (*i < l->n) {
        const event *e = &l->v[(*i)++];
        switch (e->kind) {
        case EV_EXIT:
            return;
        case EV_ERROR:
            break;
        case EV_ENTER: {
            pb_msg child;
            pb_msg_begin_nested(m, e->id, &child);
            encode(l, i, &child);
            pb_msg_end(&child);
            break;
        }
        default:
            switch (e->wire_type) {
            case PB_WIRE_VARINT:
                pb_msg_append_varint(m, e->id, e->value);
                break;
            case PB_WIRE_FIXED32:
                pb_msg_append_fixed32(m, e->id, (uint32_t)e->value);
                break;
            case PB_WIRE_FIXED64:
                pb_msg_append_fixed64(m, e->id, e->value);
                break;
            default:
                pb_msg_append_bytes(m, e->id, e->data, (size_t)e->value);
                break;
            }
        }
    }
}

static bool same_event(const event *a, const event *b)
{
    if (a->kind != b->kind || a->depth != b->depth)
        return false;
    switch (a->kind) {
    case EV_ENTER:
        return a->id == b->id;
    case EV_EXIT:
        return true;
    case EV_FIELD:
        if (a->id != b->id || a->wire_type != b->wire_type || a->value != b->value)
            return false;
        return a->wire_type != PB_WIRE_LEN || a->value == 0 ||
               memcmp(a->data, b->data, (size_t)a->value) == 0;
    default:
        return false;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ev_list first = { 0 }, second = { 0 };
    pb_reader r;
    pb_reader_init(&r, data, size);
    walk(&r, &first);
    if (pb_validate(data, size) != r.err)
        abort();

    /* Slices of 16..79 bytes, or one big one, depending on the input. */
    size_t slice =
        size ? (data[0] & 0x40 ? (size_t)1 << 16 : 16 + (size_t)(data[size - 1] & 63)) : 64;
    pb_heap_buffer h;
    pb_heap_init(&h, slice);
    pb_msg root;
    pb_msg_init_root(&root, pb_heap_stream(&h));
    size_t i = 0;
    encode(&first, &i, &root);
    uint32_t root_size = pb_msg_end(&root);
    size_t n;
    uint8_t *re = pb_heap_dup(&h, &n);
    if (!re || h.out_of_memory || n != root_size)
        abort();
    pb_heap_free(&h);

    pb_reader_init(&r, re, n);
    walk(&r, &second);
    if (r.err != PB_OK)
        abort();
    /* Same events, minus the errors of the original. */
    size_t k = 0;
    for (size_t j = 0; j < first.n; j++) {
        if (first.v[j].kind == EV_ERROR)
            continue;
        if (k >= second.n || !same_event(&first.v[j], &second.v[k])) {
            fprintf(stderr, "fuzz_pb_reader: event %zu differs after re-encoding\n", j);
            abort();
        }
        k++;
    }
    if (k != second.n)
        abort();

    free(re);
    free(first.v);
    free(second.v);
    return 0;
}
