/* SPDX-License-Identifier: MIT */
/* Writes the seed corpus of fuzz_pb_reader: a few small messages made by
 * our writer, covering every wire type, packed arrays, nesting (with the
 * writer's 4-byte redundant sizes), long tags and empty fields.
 *
 * usage: pb-make-corpus DIR   (e.g. tests/pb/corpus) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_writer.h"

static void seed_scalars(pb_msg *m)
{
    pb_msg_append_varint(m, 1, 150);
    pb_msg_append_varint(m, 2, (uint64_t)(int64_t)-7); /* int32 -7: 10 bytes */
    pb_msg_append_varint(m, 3, pb_zigzag_encode64(-300));
    pb_msg_append_fixed32(m, 4, pb_float_bits(1.5f));
    pb_msg_append_fixed64(m, 5, pb_double_bits(-0.25));
    pb_msg_append_string(m, 6, "gpu");
    pb_msg_append_varint(m, 7, 1);
}

static void seed_nested(pb_msg *m)
{
    pb_msg a, b, c;
    pb_msg_begin_nested(m, 1, &a);
    pb_msg_append_varint(&a, 1, 42);
    pb_msg_begin_nested(&a, 2, &b);
    pb_msg_append_string(&b, 1, "xy");
    pb_msg_begin_nested(&b, 3, &c);
    pb_msg_append_fixed32(&c, 1, 7);
    pb_msg_end(&c);
    pb_msg_end(&b);
    pb_msg_end(&a);
    pb_msg_append_varint(m, 2, 3);
}

static void seed_packed(pb_msg *m)
{
    pb_msg_append_packed_varint_u64(m, 1, (const uint64_t[]){ 1, 300, UINT64_MAX }, 3);
    pb_msg_append_packed_sint32(m, 2, (const int32_t[]){ -1, 64 }, 2);
    pb_msg_append_packed_fixed32(m, 3, (const uint32_t[]){ 1, 2 }, 2);
    pb_msg_append_packed_fixed64(m, 4, (const uint64_t[]){ 5 }, 1);
}

static void seed_long_tags(pb_msg *m)
{
    pb_msg c;
    pb_msg_append_varint(m, 16, 1);
    pb_msg_append_fixed32(m, 2048, 2);
    pb_msg_begin_nested(m, PB_MAX_FIELD_ID, &c);
    pb_msg_append_varint(&c, 262144, 3);
    pb_msg_end(&c);
}

static void seed_empty(pb_msg *m)
{
    pb_msg c;
    pb_msg_begin_nested(m, 1, &c);
    pb_msg_end(&c);
    pb_msg_append_bytes(m, 2, NULL, 0);
    pb_msg_append_packed_varint_u32(m, 3, NULL, 0);
}

static void seed_deep(pb_msg *m)
{
    pb_msg levels[12];
    pb_msg *parent = m;
    for (int i = 0; i < 12; i++) {
        pb_msg_begin_nested(parent, 1, &levels[i]);
        parent = &levels[i];
    }
    pb_msg_append_varint(parent, 2, 9);
    /* Ending the outermost finalizes all twelve (they live in this frame). */
    pb_msg_end(&levels[0]);
}

static void seed_packets(pb_msg *m)
{
    /* Trace-like: repeated packets with a timestamp and a payload. */
    for (int i = 0; i < 3; i++) {
        pb_msg p, ev;
        pb_msg_begin_nested(m, 1, &p);
        pb_msg_append_varint(&p, 8, 1000000u + (unsigned)i * 250u);
        pb_msg_begin_nested(&p, 11, &ev);
        pb_msg_append_varint(&ev, 1, (uint64_t)i);
        pb_msg_append_string(&ev, 2, "draw");
        pb_msg_end(&ev);
        pb_msg_end(&p);
    }
}

static const struct {
    const char *name;
    void (*fill)(pb_msg *m);
} seeds[] = {
    { "scalars", seed_scalars },     { "nested", seed_nested }, { "packed", seed_packed },
    { "long_tags", seed_long_tags }, { "empty", seed_empty },   { "deep", seed_deep },
    { "packets", seed_packets },
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        pb_heap_buffer h;
        pb_heap_init(&h, 256);
        pb_msg root;
        pb_msg_init_root(&root, pb_heap_stream(&h));
        seeds[i].fill(&root);
        pb_msg_end(&root);
        size_t n;
        uint8_t *bytes = pb_heap_dup(&h, &n);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.bin", argv[1], seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (!bytes || !f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
            perror(path);
            return 1;
        }
        printf("%s: %zu bytes\n", path, n);
        free(bytes);
        pb_heap_free(&h);
    }
    return 0;
}
