/* SPDX-License-Identifier: MIT */
/* Writes a trace of about SIZE MiB made of one kind of input with many
 * distinct ids, for the scaling benchmark (tk_scaling): the kinds that once
 * cost more than linear time, or could.
 *
 *   sequences  packets spread over up to 60000 sequences, each cleared and
 *              with its own interned data
 *   iids       one sequence interning up to 60000 GPU specifications, GPU
 *              stages looking up random ones
 *   buffers    TraceStats packets listing ever more BufferStats
 *   cpus       FtraceStats packets listing ever more cpus
 *   clocks     a dense clock graph (64512 edges), then timestamps on its
 *              clocks (no path to the trace clock) and on a four-hop chain
 *
 * usage: tk_scaling_gen KIND OUT.pftrace SIZE_MIB */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_writer.h"

#define S  1000000000ull
#define MS 1000000ull

enum {
    P_CLOCK_SNAPSHOT = 6,
    P_TIMESTAMP = 8,
    P_SEQ = 10,
    P_INTERNED = 12,
    P_FLAGS = 13,
    P_FTRACE_STATS = 34,
    P_TRACE_STATS = 35,
    P_PREV_DROPPED = 42,
    P_GPU = 53,
    P_CLOCK_ID = 58,
    P_FOR_TESTING = 900,
};

static const uint64_t boot0 = 5000 * S;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

typedef struct out {
    FILE *f;
    pb_heap_buffer h;
    pb_msg trace;
    uint64_t written;
} out;

static uint64_t size(const out *o)
{
    return o->written + pb_heap_size(&o->h);
}

static void flush(out *o)
{
    pb_msg_end(&o->trace);
    size_t n = pb_heap_size(&o->h);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fprintf(stderr, "tk_scaling_gen: out of memory\n");
        exit(1);
    }
    pb_heap_copy(&o->h, buf);
    if (fwrite(buf, 1, n, o->f) != n) {
        fprintf(stderr, "tk_scaling_gen: write: %s\n", strerror(errno));
        exit(1);
    }
    free(buf);
    o->written += n;
    pb_heap_reset(&o->h);
    pb_msg_init_root(&o->trace, pb_heap_stream(&o->h));
}

static void maybe_flush(out *o)
{
    if (pb_heap_size(&o->h) > (4u << 20))
        flush(o);
}

static void packet(out *o, pb_msg *p, uint32_t seq)
{
    pb_msg_begin_nested(&o->trace, 1, p);
    if (seq)
        pb_msg_append_varint(p, P_SEQ, seq);
}

static void snapshot(out *o, const uint32_t *ids, const uint64_t *ts, uint32_t n)
{
    pb_msg p, cs, c;
    packet(o, &p, 1);
    pb_msg_begin_nested(&p, P_CLOCK_SNAPSHOT, &cs);
    for (uint32_t i = 0; i < n; i++) {
        pb_msg_begin_nested(&cs, 1, &c);
        pb_msg_append_varint(&c, 1, ids[i]);
        pb_msg_append_varint(&c, 2, ts[i]);
        pb_msg_end(&c);
    }
    pb_msg_end(&cs);
    pb_msg_end(&p);
}

static void boot_snapshot(out *o, uint64_t boot)
{
    uint32_t ids[2] = { 6, 3 };
    uint64_t ts[2] = { boot, boot - 7 * S };
    snapshot(o, ids, ts, 2);
}

static void trace_stats(out *o)
{
    pb_msg p, st, b;
    packet(o, &p, 1);
    pb_msg_begin_nested(&p, P_TRACE_STATS, &st);
    pb_msg_begin_nested(&st, 1, &b);
    pb_msg_append_varint(&b, 12, 256u << 20);
    pb_msg_end(&b);
    pb_msg_end(&st);
    pb_msg_end(&p);
}

static void ts_packet(out *o, uint32_t seq, uint64_t ts, uint32_t clock, uint32_t flags)
{
    pb_msg p, te;
    packet(o, &p, seq);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts);
    if (clock)
        pb_msg_append_varint(&p, P_CLOCK_ID, clock);
    if (flags)
        pb_msg_append_varint(&p, P_FLAGS, flags);
    pb_msg_begin_nested(&p, P_FOR_TESTING, &te);
    pb_msg_append_varint(&te, 2, ts & 0xffff);
    pb_msg_end(&te);
    pb_msg_end(&p);
}

static void intern_spec(out *o, uint32_t seq, uint64_t iid, bool clear)
{
    pb_msg p, id, sp;
    packet(o, &p, seq);
    if (clear) {
        pb_msg_append_varint(&p, P_FLAGS, 1);
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    }
    pb_msg_begin_nested(&p, P_INTERNED, &id);
    pb_msg_begin_nested(&id, 24, &sp);
    pb_msg_append_varint(&sp, 1, iid);
    pb_msg_append_string(&sp, 2, "queue");
    pb_msg_end(&sp);
    pb_msg_end(&id);
    pb_msg_end(&p);
}

static void gpu_stage(out *o, uint32_t seq, uint64_t ts, uint64_t queue_iid, uint64_t event)
{
    pb_msg p, e;
    packet(o, &p, seq);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts);
    pb_msg_append_varint(&p, P_FLAGS, 2);
    pb_msg_begin_nested(&p, P_GPU, &e);
    pb_msg_append_varint(&e, 1, event);
    pb_msg_append_varint(&e, 2, 1000);
    pb_msg_append_varint(&e, 13, queue_iid);
    pb_msg_end(&e);
    pb_msg_end(&p);
}

static void gen_sequences(out *o, uint64_t target)
{
    /* Sequences first appear in order, then packets revisit them at random:
     * each packet is a lookup among all of them. */
    const uint32_t distinct = 60000;
    uint32_t seen = 0;
    uint64_t ts = boot0 + MS;
    while (size(o) < target) {
        if (seen < distinct && rnd(4) == 0) {
            seen++;
            intern_spec(o, seen, 1 + rnd(1000), true);
        } else if (seen) {
            ts_packet(o, 1 + rnd(seen), ts++, 0, 2);
        }
        maybe_flush(o);
    }
}

static void gen_iids(out *o, uint64_t target)
{
    const uint32_t distinct = 60000;
    uint32_t interned = 0;
    uint64_t ts = boot0 + MS, event = 1;
    intern_spec(o, 2, ++interned, true);
    while (size(o) < target) {
        if (interned < distinct && rnd(3) == 0)
            intern_spec(o, 2, ++interned, false);
        else
            gpu_stage(o, 2, ts++, 1 + rnd(interned), event++);
        maybe_flush(o);
    }
}

/* One TraceStats or FtraceStats packet per 64 KiB, each listing more
 * entries than the last. */
static void gen_indexed(out *o, uint64_t target, bool cpus)
{
    uint32_t entries = 1000;
    uint8_t *buf = malloc(1u << 20);
    if (!buf)
        exit(1);
    while (size(o) < target) {
        size_t len = 0;
        if (cpus) {
            buf[len++] = 0x08; /* phase: end of trace */
            buf[len++] = 0x02;
        }
        for (uint32_t i = 0; i < entries && len < (1u << 20) - 16; i++) {
            if (!cpus) {
                buf[len++] = 0x0a; /* an empty BufferStats */
                buf[len++] = 0x00;
                continue;
            }
            uint8_t cpu[8];
            size_t cl = 0;
            cpu[cl++] = 0x08;
            for (uint32_t v = i;; v >>= 7) {
                cpu[cl++] = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
                if (v < 0x80)
                    break;
            }
            buf[len++] = 0x12;
            buf[len++] = (uint8_t)cl;
            memcpy(buf + len, cpu, cl);
            len += cl;
        }
        pb_msg p;
        packet(o, &p, cpus ? 6 : 1);
        pb_msg_append_bytes(&p, cpus ? P_FTRACE_STATS : P_TRACE_STATS, buf, len);
        pb_msg_end(&p);
        entries += 1000;
        maybe_flush(o);
    }
    free(buf);
}

static void gen_clocks(out *o, uint64_t target)
{
    const uint32_t dense0 = 0x80001000u, chain0 = 0x80002000u;
    uint32_t ids[64];
    uint64_t ts[64];
    ids[0] = 6;
    ids[1] = chain0 + 1;
    ts[0] = boot0 + MS;
    ts[1] = 100 * S;
    snapshot(o, ids, ts, 2);
    for (uint32_t k = 1; k < 4; k++) {
        ids[0] = chain0 + k;
        ids[1] = chain0 + k + 1;
        ts[0] = 100 * S + k;
        ts[1] = 200 * S;
        snapshot(o, ids, ts, 2);
    }
    for (uint32_t k = 0; k < 16; k++) {
        for (uint32_t j = 0; j < 64; j++) {
            ids[j] = dense0 + k * 32 + j;
            ts[j] = 5 * S + j;
        }
        snapshot(o, ids, ts, 64);
    }
    ts_packet(o, 2, boot0 + 2 * MS, 0, 1);
    for (uint64_t i = 0; size(o) < target; i++) {
        ts_packet(o, 2, 5 * S + i, dense0 + rnd(544), 0);
        ts_packet(o, 2, 200 * S + i, chain0 + 4, 0);
        maybe_flush(o);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tk_scaling_gen sequences|iids|buffers|cpus|clocks OUT SIZE_MIB\n");
        return 2;
    }
    const char *kind = argv[1];
    const uint64_t target = strtoull(argv[3], NULL, 10) << 20;
    out o = { .f = fopen(argv[2], "wb") };
    if (!o.f) {
        fprintf(stderr, "tk_scaling_gen: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    pb_heap_init(&o.h, 1 << 20);
    pb_msg_init_root(&o.trace, pb_heap_stream(&o.h));
    boot_snapshot(&o, boot0);
    if (strcmp(kind, "sequences") == 0)
        gen_sequences(&o, target);
    else if (strcmp(kind, "iids") == 0)
        gen_iids(&o, target);
    else if (strcmp(kind, "buffers") == 0)
        gen_indexed(&o, target, false);
    else if (strcmp(kind, "cpus") == 0)
        gen_indexed(&o, target, true);
    else if (strcmp(kind, "clocks") == 0)
        gen_clocks(&o, target);
    else {
        fprintf(stderr, "tk_scaling_gen: unknown kind %s\n", kind);
        return 2;
    }
    boot_snapshot(&o, boot0 + 10 * S);
    trace_stats(&o);
    flush(&o);
    pb_heap_free(&o.h);
    if (fclose(o.f) != 0) {
        fprintf(stderr, "tk_scaling_gen: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    return 0;
}
