/* SPDX-License-Identifier: MIT */
/* Writes a synthetic GPU trace of about SIZE MiB with the packet mix of a
 * Vulkan layer session: per frame a vkQueueSubmit, four GPU render stages
 * on a drifting global GPU clock, track-like test events with strings and
 * nested payloads; GPU clock snapshots every 10 ms, traced's builtin
 * snapshots every 10 s, interned GPU specifications re-emitted on every
 * incremental-state clear, TraceStats at both ends.
 *
 * usage: tk_bench_gen OUT.pftrace SIZE_MIB */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_writer.h"

#define S  1000000000ull
#define MS 1000000ull
#define US 1000ull

enum {
    P_CLOCK_SNAPSHOT = 6,
    P_TIMESTAMP = 8,
    P_SEQ = 10,
    P_INTERNED = 12,
    P_FLAGS = 13,
    P_TRACE_STATS = 35,
    P_PREV_DROPPED = 42,
    P_GPU = 53,
    P_CLOCK_ID = 58,
    P_VK = 65,
    P_FOR_TESTING = 900,
};

static uint32_t fnv_id(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h | 0x80000000u;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static const uint64_t boot0 = 5000 * S;
static const uint64_t gpu0 = 123 * S;
static uint32_t gpu_clock;

static uint64_t gpu_time(uint64_t boot)
{
    /* 15 ppm fast, in ns. */
    uint64_t d = boot - boot0;
    return gpu0 + d + d / 1000000 * 15;
}

static void packet(pb_msg *trace, pb_msg *p, uint32_t seq)
{
    pb_msg_begin_nested(trace, 1, p);
    pb_msg_append_varint(p, P_SEQ, seq);
}

static void snapshot(pb_msg *trace, uint32_t seq, const uint32_t *ids, const uint64_t *ts, int n)
{
    pb_msg p, cs, c;
    packet(trace, &p, seq);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts[n - 1]);
    pb_msg_begin_nested(&p, P_CLOCK_SNAPSHOT, &cs);
    for (int i = 0; i < n; i++) {
        pb_msg_begin_nested(&cs, 1, &c);
        pb_msg_append_varint(&c, 1, ids[i]);
        pb_msg_append_varint(&c, 2, ts[i]);
        pb_msg_end(&c);
    }
    pb_msg_end(&cs);
    pb_msg_end(&p);
}

static void traced_snapshot(pb_msg *trace, uint64_t boot)
{
    uint32_t ids[4] = { 1, 3, 5, 6 };
    uint64_t ts[4] = { boot + 1700000000ull * S, boot - 7 * S, boot - 7 * S + 321, boot };
    snapshot(trace, 1, ids, ts, 4);
}

static void trace_stats(pb_msg *trace, uint64_t boot, uint64_t written)
{
    pb_msg p, st, b, w;
    packet(trace, &p, 1);
    pb_msg_append_varint(&p, P_TIMESTAMP, boot);
    pb_msg_begin_nested(&p, P_TRACE_STATS, &st);
    pb_msg_begin_nested(&st, 1, &b);
    pb_msg_append_varint(&b, 12, 256u << 20);
    pb_msg_append_varint(&b, 1, written);
    pb_msg_append_varint(&b, 2, written / 4096);
    pb_msg_append_varint(&b, 5, written / 65536);
    pb_msg_end(&b);
    pb_msg_append_varint(&st, 2, 2);
    pb_msg_append_varint(&st, 7, 1);
    for (uint32_t s = 2; s <= 4; s++) {
        pb_msg_begin_nested(&st, 18, &w);
        pb_msg_append_varint(&w, 1, s);
        pb_msg_append_varint(&w, 4, 0);
        pb_msg_end(&w);
    }
    pb_msg_end(&st);
    pb_msg_end(&p);
}

static void intern(pb_msg *trace, bool first)
{
    static const char *const names[] = { "graphics queue", "vertex", "fragment", "compute",
                                         "transfer" };
    pb_msg p, id, sp;
    packet(trace, &p, 2);
    pb_msg_append_varint(&p, P_FLAGS, 1);
    if (first)
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_begin_nested(&p, P_INTERNED, &id);
    for (uint64_t i = 0; i < 5; i++) {
        pb_msg_begin_nested(&id, 24, &sp);
        pb_msg_append_varint(&sp, 1, i + 1);
        pb_msg_append_string(&sp, 2, names[i]);
        pb_msg_append_string(&sp, 3, "render stage of the benchmark GPU");
        pb_msg_append_varint(&sp, 4, i ? 1 : 0);
        pb_msg_end(&sp);
    }
    pb_msg_begin_nested(&id, 23, &sp);
    pb_msg_append_varint(&sp, 1, 0xabcdef01ull);
    pb_msg_append_varint(&sp, 2, 31337);
    pb_msg_append_varint(&sp, 3, 2);
    pb_msg_end(&sp);
    pb_msg_end(&id);
    pb_msg_end(&p);
}

static void vk_submit(pb_msg *trace, uint64_t ts, uint32_t sid, bool first)
{
    pb_msg p, v, q;
    packet(trace, &p, 3);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts);
    if (first)
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_begin_nested(&p, P_VK, &v);
    pb_msg_begin_nested(&v, 2, &q);
    pb_msg_append_varint(&q, 1, 15 * US + rnd() % 5000);
    pb_msg_append_varint(&q, 2, 31337);
    pb_msg_append_varint(&q, 3, 31338);
    pb_msg_append_varint(&q, 4, 0x5566000011110000ull);
    pb_msg_append_varint(&q, 5, 0x7788000022220000ull + sid % 3);
    pb_msg_append_varint(&q, 6, sid);
    pb_msg_end(&q);
    pb_msg_end(&v);
    pb_msg_end(&p);
}

static void gpu_stage(pb_msg *trace, uint64_t boot, uint64_t event_id, uint64_t stage, uint64_t dur,
                      uint32_t sid)
{
    pb_msg p, e, x;
    packet(trace, &p, 2);
    pb_msg_append_varint(&p, P_TIMESTAMP, gpu_time(boot));
    pb_msg_append_varint(&p, P_CLOCK_ID, gpu_clock);
    pb_msg_append_varint(&p, P_FLAGS, 2);
    pb_msg_begin_nested(&p, P_GPU, &e);
    pb_msg_append_varint(&e, 1, event_id);
    pb_msg_append_varint(&e, 2, dur);
    pb_msg_append_varint(&e, 13, 1);
    pb_msg_append_varint(&e, 14, stage);
    pb_msg_append_varint(&e, 5, 0xabcdef01ull);
    pb_msg_append_varint(&e, 8, 0x1000 + sid % 7);
    pb_msg_append_varint(&e, 10, sid);
    pb_msg_append_varint(&e, 9, 0x2000 + sid % 5);
    pb_msg_append_varint(&e, 12, 0x7788000022220000ull + sid % 3);
    if (stage == 3) {
        pb_msg_begin_nested(&e, 6, &x);
        pb_msg_append_string(&x, 1, "draw_calls");
        pb_msg_append_string(&x, 2, "1287");
        pb_msg_end(&x);
    }
    pb_msg_end(&e);
    pb_msg_end(&p);
}

/* Track-event-like payloads: a name, a category, a few annotations. */
static void test_event(pb_msg *trace, uint64_t ts, uint32_t i)
{
    static const char *const words[] = { "vkQueuePresentKHR",
                                         "vkAcquireNextImageKHR",
                                         "RenderPass::begin",
                                         "upload_textures",
                                         "cull",
                                         "shadow_map",
                                         "postprocess",
                                         "ui" };
    pb_msg p, te, pl, nested;
    packet(trace, &p, 4);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts);
    if (i == 0) {
        pb_msg_append_varint(&p, P_FLAGS, 1);
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    }
    pb_msg_begin_nested(&p, P_FOR_TESTING, &te);
    pb_msg_append_string(&te, 1, words[i & 7]);
    pb_msg_append_varint(&te, 2, i);
    pb_msg_append_varint(&te, 3, ts / 1000);
    if ((i & 3) == 0) {
        pb_msg_begin_nested(&te, 5, &pl);
        pb_msg_append_string(&pl, 1, "frame");
        pb_msg_append_string(&pl, 1, words[(i >> 3) & 7]);
        pb_msg_append_varint(&pl, 5, rnd());
        pb_msg_begin_nested(&pl, 2, &nested);
        pb_msg_append_string(&nested, 4, "gpu_memory_budget_bytes");
        pb_msg_append_varint(&nested, 5, 1 << 30);
        pb_msg_end(&nested);
        pb_msg_end(&pl);
    }
    pb_msg_end(&te);
    pb_msg_end(&p);
}

static void flush_heap(pb_heap_buffer *h, pb_msg *trace, FILE *f, uint64_t *written)
{
    pb_msg_end(trace);
    size_t n = pb_heap_size(h);
    uint8_t *buf = malloc(n);
    if (!buf) {
        fprintf(stderr, "tk_bench_gen: out of memory\n");
        exit(1);
    }
    pb_heap_copy(h, buf);
    if (fwrite(buf, 1, n, f) != n) {
        fprintf(stderr, "tk_bench_gen: write: %s\n", strerror(errno));
        exit(1);
    }
    free(buf);
    *written += n;
    pb_heap_reset(h);
    pb_msg_init_root(trace, pb_heap_stream(h));
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tk_bench_gen OUT.pftrace SIZE_MIB\n");
        return 2;
    }
    const uint64_t target = strtoull(argv[2], NULL, 10) << 20;
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        fprintf(stderr, "tk_bench_gen: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    gpu_clock = fnv_id("com.gputrace.bench.gpu");
    pb_heap_buffer h;
    pb_heap_init(&h, 1 << 20);
    pb_msg trace;
    pb_msg_init_root(&trace, pb_heap_stream(&h));

    uint64_t written = 0, event_id = 1, packets = 0;
    uint32_t sid = 1, te = 0;
    uint64_t boot = boot0;
    uint64_t next_gpu_snapshot = boot0, next_traced = boot0 + 10 * S;
    traced_snapshot(&trace, boot);
    trace_stats(&trace, boot, 0);
    intern(&trace, true);
    bool first_vk = true;
    /* 60 frames a second; each frame about 1.2 KiB of packets. */
    while (written + pb_heap_size(&h) < target) {
        if (boot >= next_gpu_snapshot) {
            uint32_t ids[2] = { gpu_clock, 6 };
            uint64_t ts[2] = { gpu_time(boot), boot };
            snapshot(&trace, 2, ids, ts, 2);
            next_gpu_snapshot += 10 * MS;
            packets++;
        }
        if (boot >= next_traced) {
            traced_snapshot(&trace, boot);
            next_traced += 10 * S;
            packets++;
        }
        if ((sid & 1023) == 0) {
            intern(&trace, false);
            packets++;
        }
        vk_submit(&trace, boot, sid, first_vk);
        first_vk = false;
        uint64_t g = boot + 40 * US;
        for (uint64_t stage = 1; stage <= 4; stage++) {
            uint64_t dur = 200 * US + rnd() % (300 * US);
            gpu_stage(&trace, g, event_id++, stage, dur, sid);
            g += dur + 5 * US;
        }
        for (int k = 0; k < 6; k++)
            test_event(&trace, boot + (uint64_t)k * 2 * MS, te++);
        packets += 11;
        sid++;
        boot += 16666 * US;
        if (pb_heap_size(&h) > (4u << 20))
            flush_heap(&h, &trace, f, &written);
    }
    traced_snapshot(&trace, boot);
    trace_stats(&trace, boot, written);
    flush_heap(&h, &trace, f, &written);
    pb_heap_free(&h);
    if (fclose(f) != 0) {
        fprintf(stderr, "tk_bench_gen: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    fprintf(stderr, "tk_bench_gen: %s: %llu bytes, ~%llu packets, %u frames\n", argv[1],
            (unsigned long long)written, (unsigned long long)packets, sid - 1);
    return 0;
}
