/* SPDX-License-Identifier: MIT */
/* The crafted traces of the toolkit tests, built with our pb writer; each
 * named by the outcome gputrace-check must report (see trace_cases.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_writer.h"
#include "tests/toolkit/trace_cases.h"

/* ---- field numbers (upstream Perfetto numbering) ---- */
enum {
    F_TRACE_PACKET = 1,
    P_FTRACE_EVENTS = 1,
    P_CLOCK_SNAPSHOT = 6,
    P_TIMESTAMP = 8,
    P_SEQ = 10,
    P_INTERNED = 12,
    P_FLAGS = 13,
    P_FTRACE_STATS = 34,
    P_TRACE_STATS = 35,
    P_PREV_DROPPED = 42,
    P_COMPRESSED = 50,
    P_GPU_STAGE = 53,
    P_CLOCK_ID = 58,
    P_DEFAULTS = 59,
    P_VK = 65,
    P_ZSTD = 133,
    P_FOR_TESTING = 900,
    SEQ_CLEARED = 1,
    SEQ_NEEDS = 2,
};

#define BOOT     6
#define MONO     3
#define MONO_RAW 5
#define REALTIME 1
#define S        1000000000ull
#define MS       1000000ull
#define US       1000ull

static uint32_t fnv_id(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h | 0x80000000u;
}

#define GPU_CLOCK_NAME "com.gputrace.test.gpu"

/* ---- trace builder ---- */

typedef struct tb {
    pb_heap_buffer h;
    pb_msg trace;
} tb;

static void tb_init(tb *t)
{
    pb_heap_init(&t->h, 1 << 16);
    pb_msg_init_root(&t->trace, pb_heap_stream(&t->h));
}

static uint8_t *tb_finish(tb *t, size_t *len)
{
    pb_msg_end(&t->trace);
    uint8_t *d = pb_heap_dup(&t->h, len);
    pb_heap_free(&t->h);
    if (!d) {
        fprintf(stderr, "make_traces: out of memory\n");
        exit(1);
    }
    return d;
}

static void pk_begin(tb *t, pb_msg *p, uint32_t seq)
{
    pb_msg_begin_nested(&t->trace, F_TRACE_PACKET, p);
    if (seq)
        pb_msg_append_varint(p, P_SEQ, seq);
}

typedef struct clk {
    uint32_t id;
    uint64_t ts;
    uint64_t unit;
    bool incremental;
} clk;

static void snapshot_ex(tb *t, uint32_t seq, const clk *c, size_t n, int32_t primary)
{
    pb_msg p, cs, k;
    pk_begin(t, &p, seq);
    pb_msg_begin_nested(&p, P_CLOCK_SNAPSHOT, &cs);
    for (size_t i = 0; i < n; i++) {
        pb_msg_begin_nested(&cs, 1, &k);
        pb_msg_append_varint(&k, 1, c[i].id);
        pb_msg_append_varint(&k, 2, c[i].ts);
        if (c[i].incremental)
            pb_msg_append_varint(&k, 3, 1);
        if (c[i].unit)
            pb_msg_append_varint(&k, 4, c[i].unit);
        pb_msg_end(&k);
    }
    if (primary)
        pb_msg_append_varint(&cs, 2, (uint64_t)primary);
    pb_msg_end(&cs);
    pb_msg_end(&p);
}

static void snapshot2(tb *t, uint32_t seq, uint32_t a, uint64_t ta, uint32_t b, uint64_t tbv)
{
    clk c[2] = { { a, ta, 0, false }, { b, tbv, 0, false } };
    snapshot_ex(t, seq, c, 2, 0);
}

/* What traced writes: BOOTTIME with MONOTONIC(_RAW) and REALTIME. */
static void traced_snapshot(tb *t, uint64_t boot)
{
    clk c[4] = {
        { BOOT, boot, 0, false },
        { MONO, boot - 5 * S, 0, false },
        { MONO_RAW, boot - 5 * S + 123, 0, false },
        { REALTIME, boot + 1700000000ull * S, 0, false },
    };
    snapshot_ex(t, 1, c, 4, 0);
}

/* A timestamped packet with a small test payload. */
static void ts_packet(tb *t, uint32_t seq, uint64_t ts, uint32_t clock, uint32_t flags,
                      bool prev_dropped)
{
    pb_msg p, te;
    pk_begin(t, &p, seq);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts);
    if (clock)
        pb_msg_append_varint(&p, P_CLOCK_ID, clock);
    if (flags)
        pb_msg_append_varint(&p, P_FLAGS, flags);
    if (prev_dropped)
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_begin_nested(&p, P_FOR_TESTING, &te);
    pb_msg_append_string(&te, 1, "payload");
    pb_msg_end(&te);
    pb_msg_end(&p);
}

static void intern_specs(tb *t, uint32_t seq, bool prev_dropped, const char *queue_description)
{
    pb_msg p, id, sp;
    pk_begin(t, &p, seq);
    pb_msg_append_varint(&p, P_FLAGS, SEQ_CLEARED);
    if (prev_dropped)
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_begin_nested(&p, P_INTERNED, &id);
    pb_msg_begin_nested(&id, 24, &sp);
    pb_msg_append_varint(&sp, 1, 1);
    pb_msg_append_string(&sp, 2, "queue 0");
    if (queue_description)
        pb_msg_append_string(&sp, 3, queue_description);
    pb_msg_end(&sp);
    pb_msg_begin_nested(&id, 24, &sp);
    pb_msg_append_varint(&sp, 1, 2);
    pb_msg_append_string(&sp, 2, "vertex");
    pb_msg_append_varint(&sp, 4, 1);
    pb_msg_end(&sp);
    pb_msg_end(&id);
    pb_msg_end(&p);
}

typedef struct stage {
    uint64_t ts;
    uint32_t clock;
    bool no_event_id;
    uint64_t queue_iid; /* 0: use legacy hw_queue_id */
    uint64_t legacy_queue_id;
    uint32_t submission_id;
    bool prev_dropped;
} stage;

static void gpu_stage(tb *t, uint32_t seq, const stage *st)
{
    static uint64_t next_event = 1;
    pb_msg p, e;
    pk_begin(t, &p, seq);
    pb_msg_append_varint(&p, P_TIMESTAMP, st->ts);
    pb_msg_append_varint(&p, P_CLOCK_ID, st->clock);
    pb_msg_append_varint(&p, P_FLAGS, SEQ_NEEDS);
    if (st->prev_dropped)
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_begin_nested(&p, P_GPU_STAGE, &e);
    if (!st->no_event_id)
        pb_msg_append_varint(&e, 1, next_event++);
    pb_msg_append_varint(&e, 2, 50 * US);
    if (st->queue_iid)
        pb_msg_append_varint(&e, 13, st->queue_iid);
    else
        pb_msg_append_varint(&e, 3, st->legacy_queue_id);
    pb_msg_append_varint(&e, 14, 2);
    if (st->submission_id)
        pb_msg_append_varint(&e, 10, st->submission_id);
    pb_msg_end(&e);
    pb_msg_end(&p);
}

static void vk_submit(tb *t, uint32_t seq, uint64_t ts, uint32_t submission_id, bool prev_dropped)
{
    pb_msg p, v, q;
    pk_begin(t, &p, seq);
    pb_msg_append_varint(&p, P_TIMESTAMP, ts);
    if (prev_dropped)
        pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_begin_nested(&p, P_VK, &v);
    pb_msg_begin_nested(&v, 2, &q);
    pb_msg_append_varint(&q, 1, 20 * US);
    pb_msg_append_varint(&q, 2, 4242);
    pb_msg_append_varint(&q, 3, 4243);
    pb_msg_append_varint(&q, 6, submission_id);
    pb_msg_end(&q);
    pb_msg_end(&v);
    pb_msg_end(&p);
}

typedef struct kv {
    uint32_t field;
    uint64_t value;
} kv;

/* TraceStats with one buffer (fields in `buf`), service-wide fields in
 * `top`, and writer stats for sequences 2..4 on buffer 0. */
static void trace_stats(tb *t, uint64_t boot, const kv *buf, size_t nbuf, const kv *top,
                        size_t ntop)
{
    pb_msg p, ts, b, w;
    pk_begin(t, &p, 1);
    pb_msg_append_varint(&p, P_TIMESTAMP, boot);
    pb_msg_begin_nested(&p, P_TRACE_STATS, &ts);
    pb_msg_begin_nested(&ts, 1, &b);
    pb_msg_append_varint(&b, 12, 1 << 20);
    pb_msg_append_varint(&b, 1, 600000);
    pb_msg_append_varint(&b, 2, 40);
    pb_msg_append_varint(&b, 5, 12);
    for (size_t i = 0; i < nbuf; i++)
        pb_msg_append_varint(&b, buf[i].field, buf[i].value);
    pb_msg_end(&b);
    pb_msg_append_varint(&ts, 2, 2);
    pb_msg_append_varint(&ts, 7, 1);
    pb_msg_append_varint(&ts, 12, 1);
    pb_msg_append_varint(&ts, 13, 1);
    for (size_t i = 0; i < ntop; i++)
        pb_msg_append_varint(&ts, top[i].field, top[i].value);
    for (uint32_t s = 2; s <= 4; s++) {
        pb_msg_begin_nested(&ts, 18, &w);
        pb_msg_append_varint(&w, 1, s);
        pb_msg_append_varint(&w, 4, 0);
        pb_msg_end(&w);
    }
    pb_msg_end(&ts);
    pb_msg_end(&p);
}

/* ---- the base GPU scenario and its knobs ---- */

typedef struct gpu_opts {
    uint32_t gpu_clock;
    double drift_ppm;
    uint64_t period;
    int n_snaps;
    int64_t stage_delay_ns; /* true GPU start relative to the submit */
    bool no_stats;
    bool no_clear; /* producer never sets SEQ_INCREMENTAL_STATE_CLEARED */
    bool snap_from_second_seq;
    bool stage_before_first_snapshot;
    bool no_event_id;
    uint64_t queue_iid;
    uint64_t legacy_queue_id;
    bool loss_midway; /* a loss on the GPU sequence, re-cleared later */
    bool submit_loss; /* a gap on the Vulkan sequence */
    bool out_of_order;
    /* The hw queue's interned description, where our layer names its clock. */
    const char *queue_description;
    const kv *buf;
    size_t nbuf;
    const kv *top;
    size_t ntop;
} gpu_opts;

static void gpu_defaults(gpu_opts *o)
{
    memset(o, 0, sizeof *o);
    o->gpu_clock = fnv_id(GPU_CLOCK_NAME);
    o->drift_ppm = 20;
    o->period = 100 * MS;
    o->n_snaps = 20;
    o->stage_delay_ns = 100 * US;
    o->queue_iid = 1;
}

static const uint64_t boot0 = 1000 * S;
static const uint64_t gpu0 = 77 * S;

static uint64_t gpu_time(const gpu_opts *o, uint64_t boot)
{
    double d = (double)(int64_t)(boot - boot0) * (1.0 + o->drift_ppm / 1e6);
    return (uint64_t)((int64_t)gpu0 + (int64_t)d);
}

static void build_gpu(tb *t, const gpu_opts *o)
{
    traced_snapshot(t, boot0);
    if (!o->no_clear)
        intern_specs(t, 2, true, o->queue_description);
    bool first_vk = true;
    uint32_t sid = 1;
    for (int i = 0; i < o->n_snaps; i++) {
        uint64_t b = boot0 + (uint64_t)i * o->period + 1 * MS;
        snapshot2(t, 2, o->gpu_clock, gpu_time(o, b), BOOT, b);
        if (o->snap_from_second_seq)
            snapshot2(t, 4, o->gpu_clock, gpu_time(o, b) + 7, BOOT, b + 7);
        if (i == 0 && o->stage_before_first_snapshot) {
            stage st = { .ts = gpu_time(o, b - 10 * MS), .clock = o->gpu_clock, .queue_iid = 1 };
            gpu_stage(t, 2, &st);
        }
        if (o->loss_midway && i == o->n_snaps / 2) {
            /* A gap on sequence 2: its interned data is gone until re-cleared. */
            stage st = { .ts = gpu_time(o, b + 1 * US),
                         .clock = o->gpu_clock,
                         .queue_iid = o->queue_iid,
                         .prev_dropped = true };
            gpu_stage(t, 2, &st);
        }
        if (o->loss_midway && i == o->n_snaps / 2 + 2)
            intern_specs(t, 2, false, o->queue_description);
        for (int j = 0; j < 3; j++) {
            uint64_t sub = b + (uint64_t)(j + 1) * o->period / 4;
            vk_submit(t, 3, sub, sid, first_vk || (o->submit_loss && i == 3 && j == 0));
            first_vk = false;
            stage st = {
                .ts = gpu_time(o, (uint64_t)((int64_t)sub + o->stage_delay_ns)),
                .clock = o->gpu_clock,
                .no_event_id = o->no_event_id,
                .queue_iid = o->queue_iid,
                .legacy_queue_id = o->legacy_queue_id,
                .submission_id = sid,
            };
            gpu_stage(t, 2, &st);
            sid++;
        }
        if (o->out_of_order && i == o->n_snaps - 1)
            ts_packet(t, 3, b - 10 * S, 0, 0, false);
    }
    uint64_t end = boot0 + (uint64_t)o->n_snaps * o->period + 5 * MS;
    traced_snapshot(t, end);
    if (!o->no_stats)
        trace_stats(t, end, o->buf, o->nbuf, o->top, o->ntop);
}

/* ---- cases ---- */

typedef tk_case_out out;

static void finish_into(tb *t, out *o)
{
    o->data = tb_finish(t, &o->len);
}

static void base_case(out *r, const gpu_opts *o)
{
    tb t;
    tb_init(&t);
    build_gpu(&t, o);
    finish_into(&t, r);
}

#define GPU_CASE(fn, body) \
    static void fn(out *r) \
    {                      \
        gpu_opts o;        \
        gpu_defaults(&o);  \
        body;              \
        base_case(r, &o);  \
    }

GPU_CASE(c_pass_gpu, (void)0)
/* The clock names itself (as the layer does, docs/layer.md): the checker
 * learns the name from the queue description, checks the id in use against
 * it, and adds the recorded deviation to the error bound. */
static char learned_desc[160];
static const char *describe_clock(const char *name, uint32_t id)
{
    snprintf(learned_desc, sizeof learned_desc,
             "Vulkan queue; clock_domain=%s clock_id=0x%08x deviation_ns=40", name, id);
    return learned_desc;
}
GPU_CASE(c_learned, o.queue_description = describe_clock(GPU_CLOCK_NAME, o.gpu_clock))
GPU_CASE(c_learned_mismatch, o.queue_description = describe_clock("some/other/clock", o.gpu_clock))
GPU_CASE(c_drift, o.drift_ppm = 1000)
GPU_CASE(c_error, (o.drift_ppm = 200, o.period = 10 * S, o.n_snaps = 3))
GPU_CASE(c_gap, (o.drift_ppm = 1, o.period = 25 * S, o.n_snaps = 3))
GPU_CASE(c_single, o.n_snaps = 1)
GPU_CASE(c_before_first, o.stage_before_first_snapshot = true)
GPU_CASE(c_not_hashed, o.gpu_clock = 200)
GPU_CASE(c_mismatch, o.gpu_clock = 0x80000001u)
GPU_CASE(c_multi_seq, o.snap_from_second_seq = true)
GPU_CASE(c_before_submit, o.stage_delay_ns = -1 * (int64_t)MS)
GPU_CASE(c_no_event_id, o.no_event_id = true)
GPU_CASE(c_unknown_queue, o.queue_iid = 9)
GPU_CASE(c_parser_errors, (o.queue_iid = 0, o.legacy_queue_id = 5000))
GPU_CASE(c_state_missing, o.no_clear = true)
GPU_CASE(c_state_lost, o.loss_midway = true)
GPU_CASE(c_seq_loss, o.submit_loss = true)
GPU_CASE(c_ooo, o.out_of_order = true)
GPU_CASE(c_no_stats, o.no_stats = true)

static const kv k_overwritten[] = { { 3, 17 }, { 13, 557056 }, { 4, 9 } };
static const kv k_discarded[] = { { 18, 3 } };
static const kv k_patches[] = { { 6, 2 } };
static const kv k_abi[] = { { 9, 1 } };
static const kv k_writer_loss[] = { { 19, 5 } };
static const kv k_flush_failed[] = { { 14, 1 } };
static const kv k_final_flush[] = { { 15, 2 } };
GPU_CASE(c_overwritten, (o.buf = k_overwritten, o.nbuf = 3))
GPU_CASE(c_discarded, (o.buf = k_discarded, o.nbuf = 1))
GPU_CASE(c_patches, (o.buf = k_patches, o.nbuf = 1))
GPU_CASE(c_abi, (o.buf = k_abi, o.nbuf = 1))
GPU_CASE(c_writer_loss, (o.buf = k_writer_loss, o.nbuf = 1))
GPU_CASE(c_flushes_failed, (o.top = k_flush_failed, o.ntop = 1))
GPU_CASE(c_final_flush, (o.top = k_final_flush, o.ntop = 1))
/* A ring-buffer wrap (or lost packets) accounts for what is missing. */
GPU_CASE(c_wrap_lost_clear, (o.no_clear = true, o.buf = k_overwritten, o.nbuf = 3))
GPU_CASE(c_wrap_lost_queue, (o.queue_iid = 9, o.buf = k_overwritten, o.nbuf = 3))
/* Discard counts of 2^63 - 1 in the buffer and in the service: their sum
 * does not fit (it is clamped, not overflowed). */
static const kv k_discarded_max[] = { { 18, (uint64_t)INT64_MAX } };
static const kv k_top_discarded_max[] = { { 8, (uint64_t)INT64_MAX } };
GPU_CASE(c_discarded_saturated,
         (o.buf = k_discarded_max, o.nbuf = 1, o.top = k_top_discarded_max, o.ntop = 1))

static void c_minimal(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, boot0 + 1 * MS, 0, SEQ_CLEARED, true);
    ts_packet(&t, 2, boot0 + 2 * MS, 0, 0, false);
    ts_packet(&t, 2, boot0 - 5 * S + 3 * MS, MONO, 0, false);
    traced_snapshot(&t, boot0 + 10 * S);
    trace_stats(&t, boot0 + 10 * S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static void c_empty(out *r)
{
    r->data = malloc(1);
    r->len = 0;
}

/* Sequence-scoped clocks: 64 counts microseconds, 65 is incremental. */
static void c_sequence_clock(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 5, boot0, 0, SEQ_CLEARED, true);
    for (int i = 0; i < 5; i++) {
        uint64_t b = boot0 + (uint64_t)i * 100 * MS;
        clk c[3] = { { 64, (b - boot0) / US + 5000, 1000, false },
                     { 65, b / 10, 10, true },
                     { BOOT, b, 0, false } };
        snapshot_ex(&t, 5, c, 3, 0);
        ts_packet(&t, 5, (b - boot0 + 20 * MS) / US + 5000, 64, 0, false);
        /* Incremental: deltas of 10 ns ticks from the snapshot. */
        ts_packet(&t, 5, 30 * MS / 10, 65, 0, false);
        ts_packet(&t, 5, 10 * MS / 10, 65, 0, false);
    }
    traced_snapshot(&t, boot0 + 1 * S);
    trace_stats(&t, boot0 + 1 * S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

/* The offset of the first record boundary at or past the middle of a run
 * of packet records (to split it into two compressed packets). */
static size_t record_half(const uint8_t *idata, size_t ilen)
{
    size_t pos = 0;
    while (pos < ilen && pos < ilen / 2) {
        uint64_t v = 0;
        unsigned shift = 0;
        size_t p = pos + 1;
        while (idata[p] & 0x80) {
            v |= (uint64_t)(idata[p] & 0x7f) << shift;
            shift += 7;
            p++;
        }
        v |= (uint64_t)idata[p] << shift;
        pos = p + 1 + v;
    }
    return pos;
}

/* The whole GPU scenario, but inside compressed_packets. */
static void c_compressed(out *r)
{
    gpu_opts o;
    gpu_defaults(&o);
    tb inner;
    tb_init(&inner);
    build_gpu(&inner, &o);
    size_t ilen;
    uint8_t *idata = tb_finish(&inner, &ilen);
    tb t;
    tb_init(&t);
    /* Two compressed packets: the split must fall on a record boundary,
     * so compress the halves separately with zlib and gzip framing. */
    size_t half = record_half(idata, ilen);
    for (int part = 0; part < 2; part++) {
        const uint8_t *src = part ? idata + half : idata;
        size_t slen = part ? ilen - half : half;
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        deflateInit2(&zs, 6, Z_DEFLATED, part ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY);
        size_t cap = deflateBound(&zs, slen) + 64;
        uint8_t *cbuf = malloc(cap);
        zs.next_in = (Bytef *)(uintptr_t)src;
        zs.avail_in = (uInt)slen;
        zs.next_out = cbuf;
        zs.avail_out = (uInt)cap;
        deflate(&zs, Z_FINISH);
        size_t clen = cap - zs.avail_out;
        deflateEnd(&zs);
        pb_msg p;
        pk_begin(&t, &p, 1);
        pb_msg_append_bytes(&p, P_COMPRESSED, cbuf, clen);
        pb_msg_end(&p);
        free(cbuf);
    }
    free(idata);
    finish_into(&t, r);
}

static void compressed_raw(out *r, const uint8_t *payload, size_t len)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    uLongf clen = compressBound(len) + 16;
    uint8_t *cbuf = malloc(clen);
    compress2(cbuf, &clen, payload, len, 6);
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_bytes(&p, P_COMPRESSED, cbuf, clen);
    pb_msg_end(&p);
    free(cbuf);
    finish_into(&t, r);
}

static void c_compressed_bad_inner(out *r)
{
    static const uint8_t junk[] = { 0x12, 0x03, 'a', 'b', 'c', 0x0a, 0x01, 0x00 };
    compressed_raw(r, junk, sizeof junk);
}

static void c_nested_compressed(out *r)
{
    /* inner = one packet that itself holds compressed_packets */
    uint8_t inner_payload[] = { 0x0a, 0x01, 0x00 }; /* an empty packet record */
    uLongf clen = compressBound(sizeof inner_payload);
    uint8_t c1[64];
    clen = sizeof c1;
    compress2(c1, &clen, inner_payload, sizeof inner_payload, 6);
    tb t;
    tb_init(&t);
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_bytes(&p, P_COMPRESSED, c1, clen);
    pb_msg_end(&p);
    size_t ilen;
    uint8_t *inner = tb_finish(&t, &ilen);
    compressed_raw(r, inner, ilen);
    free(inner);
}

static void c_bad_compressed(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_bytes(&p, P_COMPRESSED, "this is not zlib data", 21);
    pb_msg_end(&p);
    finish_into(&t, r);
}

static void c_compressed_truncated(out *r)
{
    uint8_t payload[4096];
    for (size_t i = 0; i < sizeof payload; i += 8) {
        memcpy(payload + i, "\x0a\x06\x08\x01\x50\x01\x08\x02", 8);
    }
    uLongf clen = compressBound(sizeof payload);
    uint8_t *cbuf = malloc(clen);
    compress2(cbuf, &clen, payload, sizeof payload, 1);
    tb t;
    tb_init(&t);
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_bytes(&p, P_COMPRESSED, cbuf, clen / 2);
    pb_msg_end(&p);
    free(cbuf);
    finish_into(&t, r);
}

static void c_truncated(out *r)
{
    c_minimal(r);
    r->len -= 7;
}

static void c_corrupt_packet(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    /* A packet whose body holds a varint of 11 bytes. */
    static const uint8_t bad[] = { 0x40, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    pb_msg_append_bytes(&t.trace, F_TRACE_PACKET, bad, sizeof bad);
    finish_into(&t, r);
}

static void c_bad_wire_type(out *r)
{
    c_minimal(r);
    r->data = realloc(r->data, r->len + 2);
    r->data[r->len++] = 0x0b; /* field 1, group start */
    r->data[r->len++] = 0x00;
}

static void c_huge_length(out *r)
{
    static const uint8_t hdr[] = { 0x0a, 0x80, 0x80, 0x80, 0x80, 0x20 }; /* 8 GiB packet */
    r->data = malloc(sizeof hdr + 16);
    memcpy(r->data, hdr, sizeof hdr);
    memset(r->data + sizeof hdr, 0, 16);
    r->len = sizeof hdr + 16;
}

static void c_clock_sync_failure(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, 5 * S, 0x80000042u, SEQ_CLEARED, true);
    ts_packet(&t, 2, 6 * S, 0x80000042u, 0, false);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static void c_invalid_snapshot(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    clk c[3] = { { 0x80000100u, 5, 0, false },
                 { BOOT, boot0 + 5, 0, false },
                 { 0x80000100u, 6, 0, false } };
    snapshot_ex(&t, 2, c, 3, 0);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static void c_import_error(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    clk c[2] = { { 64, 5, 0, false }, { BOOT, boot0 + 5, 0, false } };
    snapshot_ex(&t, 0, c, 2, 0); /* sequence-scoped clock, no sequence id */
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static void c_trace_clock_change(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, boot0 - 5 * S + MS, MONO, SEQ_CLEARED, true);
    clk c[2] = { { BOOT, boot0 + S, 0, false }, { MONO, boot0 - 4 * S, 0, false } };
    snapshot_ex(&t, 1, c, 2, MONO);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static void c_primary_clock(out *r)
{
    tb t;
    tb_init(&t);
    clk c[2] = { { BOOT, boot0, 0, false }, { MONO, boot0 - 5 * S, 0, false } };
    snapshot_ex(&t, 1, c, 2, MONO);
    ts_packet(&t, 2, boot0 + MS, BOOT, SEQ_CLEARED, true);
    ts_packet(&t, 2, boot0 - 5 * S + 2 * MS, 0, 0, false);
    clk d[2] = { { BOOT, boot0 + S, 0, false }, { MONO, boot0 - 4 * S, 0, false } };
    snapshot_ex(&t, 1, d, 2, MONO);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

/* A custom clock tied only to REALTIME, which later jumps back: no path to
 * BOOTTIME remains. trace_processor converts every clock of a snapshot as it
 * reads it, so the REALTIME reading of the jump itself already counts in
 * clock_sync_failure: an unresolvable clock never comes alone. */
static void c_unresolvable(out *r)
{
    const uint32_t id = fnv_id("com.gputrace.test.wallclock");
    tb t;
    tb_init(&t);
    snapshot2(&t, 1, BOOT, boot0, REALTIME, 10000 * S);
    snapshot2(&t, 2, id, 5 * S, REALTIME, 10000 * S + MS);
    ts_packet(&t, 2, 5 * S + 10 * MS, id, SEQ_CLEARED, false);
    snapshot2(&t, 2, id, 5 * S + 100 * MS, REALTIME, 10000 * S + 101 * MS);
    snapshot2(&t, 1, BOOT, boot0 + S, REALTIME, 6400 * S);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

/* A custom clock going backwards. Reading that snapshot, trace_processor
 * converts the clock and fails (it lost its outgoing edges), so this too
 * comes with clock_sync_failure. */
static void c_non_monotonic(out *r)
{
    const uint32_t id = fnv_id("com.gputrace.test.jumpy");
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    snapshot2(&t, 2, id, 10 * S, BOOT, boot0 + MS);
    ts_packet(&t, 2, 10 * S + 5 * MS, id, SEQ_CLEARED, false);
    snapshot2(&t, 2, id, 10 * S + 100 * MS, BOOT, boot0 + 101 * MS);
    snapshot2(&t, 2, id, 9 * S, BOOT, boot0 + 201 * MS); /* backwards */
    traced_snapshot(&t, boot0 + S);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static void c_ftrace(out *r, int kind)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, boot0 + MS, 0, SEQ_CLEARED, true);
    for (int phase = 1; phase <= 2; phase++) {
        pb_msg p, fs, cpu;
        pk_begin(&t, &p, 6);
        pb_msg_append_varint(&p, P_TIMESTAMP, boot0 + (uint64_t)phase * MS);
        pb_msg_begin_nested(&p, P_FTRACE_STATS, &fs);
        pb_msg_append_varint(&fs, 1, (uint64_t)phase);
        for (uint32_t c = 0; c < 2; c++) {
            pb_msg_begin_nested(&fs, 2, &cpu);
            pb_msg_append_varint(&cpu, 1, c);
            pb_msg_append_varint(&cpu, 2, 100 * (uint64_t)phase);
            pb_msg_append_varint(&cpu, 3, (kind == 0 && phase == 2 && c == 1) ? 42 : 0);
            pb_msg_append_varint(&cpu, 8, (kind == 1 && phase == 2) ? 7 : 0);
            pb_msg_append_fixed64(&cpu, 7, pb_double_bits(1000.5 + phase));
            pb_msg_end(&cpu);
        }
        pb_msg_end(&fs);
        pb_msg_end(&p);
    }
    {
        pb_msg p, b;
        pk_begin(&t, &p, 6);
        pb_msg_begin_nested(&p, P_FTRACE_EVENTS, &b);
        pb_msg_append_varint(&b, 1, 1);
        if (kind == 2)
            pb_msg_append_varint(&b, 3, 1);
        pb_msg_end(&b);
        pb_msg_end(&p);
    }
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}
static void c_ftrace_overrun(out *r)
{
    c_ftrace(r, 0);
}
static void c_ftrace_dropped(out *r)
{
    c_ftrace(r, 1);
}
static void c_ftrace_lost(out *r)
{
    c_ftrace(r, 2);
}

/* ---- zstd_compressed_packets (Perfetto v58's traced) ---- */

/* `len` bytes of `src` as one zstd frame (malloc'd, size in *zlen). */
static uint8_t *zstd_frame(const uint8_t *src, size_t len, size_t *zlen)
{
    size_t cap = ZSTD_compressBound(len);
    uint8_t *z = malloc(cap);
    size_t n = z ? ZSTD_compress(z, cap, src, len, 3) : 0;
    if (!z || ZSTD_isError(n)) {
        fprintf(stderr, "make_traces: zstd compression failed\n");
        exit(1);
    }
    *zlen = n;
    return z;
}

/* A trace whose packets (the GPU scenario) sit in zstd_compressed_packets,
 * as v58's traced writes them: each field one frame of whole records.
 * `damage`: 0 none, 1 the second frame cut in half, 2 bytes after the
 * second frame, 3 the second field deflate instead (codecs mixed), 4 the
 * second field not zstd at all. */
static void zstd_gpu(out *r, int damage)
{
    gpu_opts o;
    gpu_defaults(&o);
    tb inner;
    tb_init(&inner);
    build_gpu(&inner, &o);
    size_t ilen;
    uint8_t *idata = tb_finish(&inner, &ilen);
    size_t half = record_half(idata, ilen);
    tb t;
    tb_init(&t);
    for (int part = 0; part < 2; part++) {
        const uint8_t *src = part ? idata + half : idata;
        size_t slen = part ? ilen - half : half, zlen;
        uint8_t *z = zstd_frame(src, slen, &zlen);
        uint32_t field = P_ZSTD;
        if (part == 1 && damage == 1)
            zlen /= 2;
        if (part == 1 && damage == 2) {
            z = realloc(z, zlen + 5);
            memcpy(z + zlen,
                   "\x0a\x03"
                   "abc",
                   5);
            zlen += 5;
        }
        if (part == 1 && damage == 3) {
            uLongf clen = compressBound(slen);
            free(z);
            z = malloc(clen);
            compress2(z, &clen, src, slen, 6);
            zlen = clen;
            field = P_COMPRESSED;
        }
        if (part == 1 && damage == 4) {
            zlen = 20;
            memcpy(z, "this is not zstd dat", 20);
        }
        pb_msg p;
        pk_begin(&t, &p, 1);
        pb_msg_append_bytes(&p, field, z, zlen);
        pb_msg_end(&p);
        free(z);
    }
    free(idata);
    finish_into(&t, r);
}
static void c_zstd(out *r)
{
    zstd_gpu(r, 0);
}
static void c_zstd_truncated(out *r)
{
    zstd_gpu(r, 1);
}
static void c_zstd_trailing(out *r)
{
    zstd_gpu(r, 2);
}
static void c_zstd_mixed(out *r)
{
    zstd_gpu(r, 3);
}
static void c_zstd_corrupt(out *r)
{
    zstd_gpu(r, 4);
}

static void c_state_limit(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    clk c[70];
    for (uint32_t i = 0; i < 70; i++)
        c[i] = (clk){ 0x80000300u + i, 1000 + i, 0, false };
    snapshot_ex(&t, 2, c, 70, 0);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

/* ---- hostile inputs -------------------------------------------------------
 * Regression cases for attacks on the checker itself: arithmetic on absurd
 * timestamps (undefined behaviour before it was made explicit) and inputs
 * whose cost used to grow faster than their size. The large ones also have
 * a small variant with the same outcome, the seed make_traces --corpus
 * writes into tests/toolkit/corpus for the fuzzer. */

/* An incremental sequence clock whose deltas wrap its sum past INT64_MAX,
 * after a packet written at 2^63 on the trace clock. Each used to overflow
 * the out-of-order window arithmetic. */
static void c_ts_overflow(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, 1ull << 63, 0, SEQ_CLEARED, true);
    ts_packet(&t, 2, boot0 + MS, 0, 0, false);
    clk c[2] = { { 64, 1000, 0, true }, { BOOT, boot0 + 2 * MS, 0, false } };
    snapshot_ex(&t, 2, c, 2, 0);
    for (int i = 0; i < 3; i++)
        ts_packet(&t, 2, 1ull << 62, 64, 0, false);
    traced_snapshot(&t, boot0 + S);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

/* A submission at the end of time and stages at both ends of it: the
 * before-submit and latency arithmetic used to overflow. */
static void c_ts_overflow_gpu(out *r)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    intern_specs(&t, 2, true, NULL);
    vk_submit(&t, 3, (uint64_t)INT64_MAX - 30000, 77, true);
    stage early = { .ts = (1ull << 63) + 5, .clock = BOOT, .queue_iid = 1, .submission_id = 77 };
    gpu_stage(&t, 2, &early);
    stage late = {
        .ts = (uint64_t)INT64_MAX - 5, .clock = BOOT, .queue_iid = 1, .submission_id = 77
    };
    gpu_stage(&t, 2, &late);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

/* Trace clock readings from 2^63 up (negative as int64_t, yet increasing)
 * against a custom clock: the second interval's offset change is exactly
 * INT64_MIN, whose absolute value used to be taken with llabs. */
static void c_ts_overflow_drift(out *r)
{
    const uint32_t id = fnv_id("com.gputrace.test.absurd");
    const uint64_t r0 = (1ull << 63) + 10;
    tb t;
    tb_init(&t);
    snapshot2(&t, 2, id, 5 * S, BOOT, r0);
    ts_packet(&t, 2, 5 * S + MS, id, SEQ_CLEARED, false);
    snapshot2(&t, 2, id, 6 * S, BOOT, r0 + S);
    snapshot2(&t, 2, id, 7 * S, BOOT, 2 * S + 10);
    trace_stats(&t, 3 * S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static uint8_t *xmalloc(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "make_traces: out of memory\n");
        exit(1);
    }
    return p;
}

/* One TraceStats holding `n` empty BufferStats (2 bytes each): 800000 make
 * 1.6 MB, which took 35 s when every value searched the buffers linearly. */
static void stats_buffers(out *r, uint32_t n)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, boot0 + MS, 0, SEQ_CLEARED, true);
    uint8_t *buf = xmalloc(2 * (size_t)n);
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = 0x0a; /* buffer_stats (1), length 0 */
        buf[2 * i + 1] = 0x00;
    }
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_varint(&p, P_TIMESTAMP, boot0 + S);
    pb_msg_append_bytes(&p, P_TRACE_STATS, buf, 2 * (size_t)n);
    pb_msg_end(&p);
    free(buf);
    finish_into(&t, r);
}
static void c_stats_buffers(out *r)
{
    stats_buffers(r, 800000);
}
static void c_stats_buffers_seed(out *r)
{
    stats_buffers(r, 5000);
}

/* FtraceStats (end phase) for `n` distinct cpus. */
static void stats_cpus(out *r, uint32_t n)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    ts_packet(&t, 2, boot0 + MS, 0, SEQ_CLEARED, true);
    uint8_t *buf = xmalloc(2 + 14 * (size_t)n);
    size_t len = 0;
    buf[len++] = 0x08; /* phase (1) = END_OF_TRACE */
    buf[len++] = 0x02;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t cpu[12];
        size_t cl = 0;
        cpu[cl++] = 0x08; /* cpu (1) */
        cl += put_varint(cpu + cl, i);
        buf[len++] = 0x12; /* cpu_stats (2) */
        len += put_varint(buf + len, cl);
        memcpy(buf + len, cpu, cl);
        len += cl;
    }
    pb_msg p;
    pk_begin(&t, &p, 6);
    pb_msg_append_varint(&p, P_TIMESTAMP, boot0 + 2 * MS);
    pb_msg_append_bytes(&p, P_FTRACE_STATS, buf, len);
    pb_msg_end(&p);
    free(buf);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}
static void c_stats_cpus(out *r)
{
    stats_cpus(r, 300000);
}
static void c_stats_cpus_seed(out *r)
{
    stats_cpus(r, 5000);
}

/* The inverse of the splitmix64 finalizer the toolkit's hash tables use
 * (tk_map.h): keys whose unkeyed hash is k << 20 all share one bucket of
 * any table up to 2^20 slots. */
static uint64_t inverse_odd(uint64_t a)
{
    uint64_t x = a; /* Newton's iteration doubles the correct low bits */
    for (int i = 0; i < 6; i++)
        x *= 2 - a * x;
    return x;
}
static uint64_t unshift(uint64_t y, unsigned k)
{
    uint64_t x = y;
    for (unsigned s = k; s < 64; s += k)
        x ^= y >> s;
    return x;
}
static uint64_t unsplitmix(uint64_t h)
{
    h = unshift(h, 31);
    h *= inverse_odd(0x94d049bb133111ebull);
    h = unshift(h, 27);
    h *= inverse_odd(0xbf58476d1ce4e5b9ull);
    return unshift(h, 30);
}
uint64_t tk_case_colliding_key(uint32_t k)
{
    return unsplitmix((uint64_t)k << 20);
}

/* `n` interned GPU specifications whose iids collide in an unkeyed table,
 * then GPU stages naming one more such iid that was never interned (each
 * lookup walks the whole cluster): dropped stages, in linear time. */
static void colliding_iids(out *r, uint32_t n, uint32_t stages)
{
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    uint8_t *buf = xmalloc(16 * (size_t)n);
    size_t len = 0;
    for (uint32_t i = 1; i <= n; i++) {
        uint8_t spec[12];
        size_t sl = 0;
        spec[sl++] = 0x08; /* iid (1) */
        sl += put_varint(spec + sl, tk_case_colliding_key(i));
        buf[len++] = 0xc2; /* gpu_specifications (24) */
        buf[len++] = 0x01;
        len += put_varint(buf + len, sl);
        memcpy(buf + len, spec, sl);
        len += sl;
    }
    pb_msg p;
    pk_begin(&t, &p, 2);
    pb_msg_append_varint(&p, P_FLAGS, SEQ_CLEARED);
    pb_msg_append_varint(&p, P_PREV_DROPPED, 1);
    pb_msg_append_bytes(&p, P_INTERNED, buf, len);
    pb_msg_end(&p);
    free(buf);
    for (uint32_t i = 0; i < stages; i++) {
        stage st = { .ts = boot0 + MS + i * US,
                     .clock = BOOT,
                     .queue_iid = tk_case_colliding_key(n + 1) };
        gpu_stage(&t, 2, &st);
    }
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}
static void c_colliding_iids(out *r)
{
    colliding_iids(r, 65000, 20000);
}
static void c_colliding_iids_seed(out *r)
{
    colliding_iids(r, 2000, 50);
}

/* compressed_packets whose inflated content is `mib` MiB of empty packet
 * records (0x0a 0x00), built by repeating one deflate block that ends on a
 * full flush (so it does not depend on what came before): 1024 MiB come
 * from about 1 MB, without compressing a GiB at test time. */
static void inflate_bomb(out *r, uint32_t mib)
{
    const size_t chunk = 1u << 20;
    uint8_t *plain = xmalloc(chunk);
    for (size_t i = 0; i < chunk; i += 2) {
        plain[i] = 0x0a;
        plain[i + 1] = 0x00;
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit(&zs, 9) != Z_OK)
        exit(1);
    const size_t cap = deflateBound(&zs, chunk) + 64;
    uint8_t *first = xmalloc(cap), *again = xmalloc(cap);
    size_t n_first = 0, n_again = 0;
    for (int round = 0; round < 2; round++) {
        uint8_t *dst = round ? again : first;
        zs.next_in = plain;
        zs.avail_in = (uInt)chunk;
        zs.next_out = dst;
        zs.avail_out = (uInt)cap;
        if (deflate(&zs, Z_FULL_FLUSH) != Z_OK)
            exit(1);
        *(round ? &n_again : &n_first) = cap - zs.avail_out;
    }
    deflateEnd(&zs);
    /* first = 2-byte zlib header + block; again = the same block alone. */
    if (n_first != n_again + 2 || memcmp(first + 2, again, n_again) != 0) {
        fprintf(stderr, "make_traces: deflate blocks differ; cannot build the bomb\n");
        exit(1);
    }
    uLong adler = adler32(0, Z_NULL, 0), one = adler32(adler, plain, (uInt)chunk);
    for (uint32_t i = 0; i < mib; i++)
        adler = adler32_combine(adler, one, (z_off_t)chunk);
    const size_t zlen = 2 + (size_t)mib * n_again + 2 + 4;
    uint8_t *z = xmalloc(zlen);
    size_t pos = 0;
    memcpy(z, first, 2);
    pos = 2;
    for (uint32_t i = 0; i < mib; i++) {
        memcpy(z + pos, again, n_again);
        pos += n_again;
    }
    z[pos++] = 0x03; /* final, fixed-Huffman block holding only its end code */
    z[pos++] = 0x00;
    for (int b = 3; b >= 0; b--)
        z[pos++] = (uint8_t)(adler >> (8 * b));
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_bytes(&p, P_COMPRESSED, z, pos);
    pb_msg_end(&p);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    free(plain);
    free(first);
    free(again);
    free(z);
    finish_into(&t, r);
}
static void c_inflate_bomb(out *r)
{
    inflate_bomb(r, 1024);
}
/* Past the 16 MiB always allowed, at a ratio of about 1000. */
static void c_inflate_bomb_seed(out *r)
{
    inflate_bomb(r, 17);
}

/* zstd_compressed_packets holding one frame that expands to `mib` MiB of
 * empty packet records (0x0a 0x00): zstd turns each block of the repeated
 * pattern into a few bytes. */
static void zstd_bomb(out *r, uint32_t mib)
{
    const size_t chunk = 1u << 20;
    uint8_t *plain = xmalloc(chunk);
    for (size_t i = 0; i < chunk; i += 2) {
        plain[i] = 0x0a;
        plain[i + 1] = 0x00;
    }
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t cap = 1u << 20, zlen = 0;
    uint8_t *z = xmalloc(cap);
    size_t rc = cc ? ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1) : 1;
    for (uint32_t i = 0; cc && !ZSTD_isError(rc) && i < mib; i++) {
        ZSTD_inBuffer in = { plain, chunk, 0 };
        const ZSTD_EndDirective end = i + 1 == mib ? ZSTD_e_end : ZSTD_e_continue;
        do {
            ZSTD_outBuffer ob = { z + zlen, cap - zlen, 0 };
            rc = ZSTD_compressStream2(cc, &ob, &in, end);
            zlen += ob.pos;
            if (zlen == cap)
                z = realloc(z, cap *= 2);
        } while (!ZSTD_isError(rc) && (in.pos < in.size || (end == ZSTD_e_end && rc != 0)));
    }
    if (!cc || !z || ZSTD_isError(rc)) {
        fprintf(stderr, "make_traces: cannot build the zstd bomb\n");
        exit(1);
    }
    ZSTD_freeCCtx(cc);
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    pb_msg p;
    pk_begin(&t, &p, 1);
    pb_msg_append_bytes(&p, P_ZSTD, z, zlen);
    pb_msg_end(&p);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    free(plain);
    free(z);
    finish_into(&t, r);
}
static void c_zstd_bomb(out *r)
{
    zstd_bomb(r, 256);
}
/* Past the 16 MiB always allowed. */
static void c_zstd_bomb_seed(out *r)
{
    zstd_bomb(r, 17);
}

/* A dense clock graph with no path to the trace clock (16 snapshots of 64
 * clocks, overlapping by half: 64512 edges), a chain of four hops that
 * does reach it, and `n` packets on each: every failed or multi-hop
 * conversion used to search the graph again. */
static void dense_clocks(out *r, uint32_t n)
{
    const uint32_t dense0 = 0x80001000u, chain0 = 0x80002000u;
    tb t;
    tb_init(&t);
    traced_snapshot(&t, boot0);
    snapshot2(&t, 1, BOOT, boot0 + MS, chain0 + 1, 100 * S);
    for (uint32_t k = 1; k < 4; k++)
        snapshot2(&t, 1, chain0 + k, 100 * S + k * MS, chain0 + k + 1, 100 * S);
    for (uint32_t k = 0; k < 16; k++) {
        clk c[64];
        for (uint32_t j = 0; j < 64; j++)
            c[j] = (clk){ dense0 + k * 32 + j, 5 * S + j, 0, false };
        snapshot_ex(&t, 1, c, 64, 0);
    }
    ts_packet(&t, 2, boot0 + 2 * MS, 0, SEQ_CLEARED, true);
    for (uint32_t i = 0; i < n; i++) {
        ts_packet(&t, 2, 5 * S + i, dense0 + (i * 7) % 544, 0, false);
        ts_packet(&t, 2, 100 * S + 10 * MS + i, chain0 + 4, 0, false);
    }
    traced_snapshot(&t, boot0 + S);
    trace_stats(&t, boot0 + S, NULL, 0, NULL, 0);
    finish_into(&t, r);
}
static void c_dense_clocks(out *r)
{
    dense_clocks(r, 30000);
}
static void c_dense_clocks_seed(out *r)
{
    dense_clocks(r, 100);
}

/* ---- registry ---- */

static const char *const a_named[] = { "--clock-name", GPU_CLOCK_NAME, NULL };
static const char *const a_other_name[] = { "--clock-name", "com.example.other", NULL };
static const char *const a_mismatch[] = { "--clock-name", "2147483649=" GPU_CLOCK_NAME, NULL };
static const char *const a_expect_60[] = { "--expect-gpu-events", "60", NULL };
static const char *const a_expect_1000[] = { "--expect-gpu-events", "1000", NULL };
static const char *const a_latency[] = { "--max-submit-latency-ns", "50000", NULL };

/* ---- seeds of fuzz_toolkit_inflate: options byte + payload ---- */

static void raw_seed(out *r, uint8_t opts, const uint8_t *payload, size_t len)
{
    r->data = xmalloc(len + 1);
    r->data[0] = opts;
    memcpy(r->data + 1, payload, len);
    r->len = len + 1;
}

/* The GPU scenario's packet records, compressed with `codec_deflate` or
 * zstd. */
static void gpu_payload_seed(out *r, bool codec_deflate, uint8_t opts)
{
    gpu_opts o;
    gpu_defaults(&o);
    tb inner;
    tb_init(&inner);
    build_gpu(&inner, &o);
    size_t ilen, zlen;
    uint8_t *idata = tb_finish(&inner, &ilen), *z;
    if (codec_deflate) {
        uLongf clen = compressBound(ilen);
        z = xmalloc(clen);
        compress2(z, &clen, idata, ilen, 6);
        zlen = clen;
    } else {
        z = zstd_frame(idata, ilen, &zlen);
    }
    raw_seed(r, (uint8_t)(opts | (codec_deflate ? 1 : 0)), z, zlen);
    free(z);
    free(idata);
}
static void s_zstd_gpu(out *r)
{
    gpu_payload_seed(r, false, 0);
}
static void s_zstd_gpu_tight_twice(out *r)
{
    gpu_payload_seed(r, false, 2 | 4);
}
static void s_deflate_gpu(out *r)
{
    gpu_payload_seed(r, true, 0);
}
/* 2 MiB of empty packet records in one zstd frame. */
static void s_zstd_bomb(out *r)
{
    out t = { 0 };
    zstd_bomb(&t, 2);
    /* The trace's last zstd_compressed_packets field is the frame: find the
     * frame's magic and take it to the end of its field. */
    const uint8_t magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
    size_t at = 0;
    while (at + 4 <= t.len && memcmp(t.data + at, magic, 4) != 0)
        at++;
    /* The field is the last in its packet; the TraceStats packet follows
     * the frame, so cut the frame at its own end: decompress to find it. */
    size_t frame = ZSTD_findFrameCompressedSize(t.data + at, t.len - at);
    if (at + 4 > t.len || ZSTD_isError(frame)) {
        fprintf(stderr, "make_traces: no zstd frame in the bomb\n");
        exit(1);
    }
    raw_seed(r, 0, t.data + at, frame);
    free(t.data);
}

const tk_case tk_inflate_seeds[] = {
    { "zstd-gpu", s_zstd_gpu },
    { "zstd-gpu-tight-twice", s_zstd_gpu_tight_twice },
    { "deflate-gpu", s_deflate_gpu },
    { "zstd-bomb", s_zstd_bomb },
};
const size_t tk_n_inflate_seeds = sizeof tk_inflate_seeds / sizeof tk_inflate_seeds[0];

const tk_case tk_cases[] = {
    { "pass-minimal", c_minimal },

    { "pass-gpu", c_pass_gpu },
    { "pass-compressed", c_compressed },
    { "pass-sequence-clock", c_sequence_clock },
    { "pass-primary-trace-clock", c_primary_clock },
    { "pass-global-clock-named", c_pass_gpu, a_named },
    { "pass-expect-gpu-events", c_pass_gpu, a_expect_60 },
    { "fail-clock_sync_failure", c_clock_sync_failure },
    { "fail-invalid_clock_snapshots", c_invalid_snapshot },
    { "fail-import_error", c_import_error },
    { "warn-trace_clock_change_ignored", c_trace_clock_change },
    { "fail-clock_unresolvable", c_unresolvable },
    { "fail-clock_non_monotonic", c_non_monotonic },
    { "warn-clock_single_snapshot", c_single },
    { "warn-clock_snapshot_gap", c_gap },
    { "fail-clock_drift_exceeded", c_drift },
    { "fail-clock_error_exceeded", c_error },
    { "warn-clock_used_before_first_snapshot", c_before_first },
    { "warn-global_clock_id_not_hashed", c_not_hashed },
    { "warn-global_clock_id_unknown", c_pass_gpu, a_other_name },
    { "fail-global_clock_id_mismatch", c_mismatch, a_mismatch },
    { "pass-global-clock-learned", c_learned },
    { "fail-global_clock_id_mismatch-learned", c_learned_mismatch },
    { "warn-global_clock_multiple_sequences", c_multi_seq },
    { "fail-buffer_chunks_overwritten", c_overwritten },
    { "fail-buffer_chunks_discarded", c_discarded },
    { "fail-buffer_patches_failed", c_patches },
    { "fail-buffer_abi_violations", c_abi },
    { "fail-writer_packet_loss", c_writer_loss },
    { "fail-sequence_packet_loss", c_seq_loss },
    { "fail-incremental_state_lost", c_state_lost },
    { "fail-incremental_state_missing", c_state_missing },
    { "warn-interned_data_missing", c_unknown_queue },
    { "fail-flushes_failed", c_flushes_failed },
    { "fail-final_flush_failed", c_final_flush },
    { "fail-ftrace_overrun", c_ftrace_overrun },
    { "fail-ftrace_dropped_events", c_ftrace_dropped },
    { "fail-ftrace_lost_events", c_ftrace_lost },
    { "warn-packets_out_of_order", c_ooo },
    { "fail-no_trace_stats", c_no_stats },
    { "fail-gpu_render_stage_parser_errors", c_parser_errors },
    { "warn-gpu_stage_dropped", c_no_event_id },
    { "fail-gpu_stage_before_submit", c_before_submit },
    { "warn-gpu_stage_after_submit_window", c_pass_gpu, a_latency },
    { "fail-gpu_events_missing", c_pass_gpu, a_expect_1000 },
    { "pass-zstd", c_zstd },
    { "warn-state_limit_reached", c_state_limit },
    { "loss-incremental_state_missing", c_wrap_lost_clear, a_expect_60 },
    { "loss-gpu_stage_dropped", c_wrap_lost_queue },
    { "loss-gpu_events_missing", c_writer_loss, a_expect_1000 },
    { "loss-gpu_events_missing-sequence", c_seq_loss, a_expect_1000 },
    /* Cut short: no TraceStats (the writer was killed), or nothing at all. */
    { "loss-gpu_events_missing-unfinished", c_no_stats, a_expect_1000 },
    { "loss-no_trace_stats-empty", c_empty },
    { "error-truncated", c_truncated },
    { "error-corrupt-packet", c_corrupt_packet },
    { "error-bad-wire-type", c_bad_wire_type },
    { "error-huge-length", c_huge_length },
    { "error-bad-compressed", c_bad_compressed },
    { "error-compressed-truncated", c_compressed_truncated },
    { "error-compressed-bad-inner", c_compressed_bad_inner },
    { "error-nested-compressed", c_nested_compressed },
    { "error-zstd-truncated", c_zstd_truncated },
    { "error-zstd-trailing", c_zstd_trailing },
    { "error-zstd-mixed", c_zstd_mixed },
    { "error-zstd-corrupt", c_zstd_corrupt },
    /* Hostile inputs: also fuzzer seeds (make_traces --corpus). */
    { "fail-timestamp_overflow", c_ts_overflow, NULL, c_ts_overflow },
    { "fail-timestamp_overflow-gpu", c_ts_overflow_gpu, NULL, c_ts_overflow_gpu },
    { "fail-timestamp_overflow-drift", c_ts_overflow_drift, NULL, c_ts_overflow_drift },
    { "fail-buffer_chunks_discarded-saturated", c_discarded_saturated, NULL,
      c_discarded_saturated },
    { "warn-state_limit_reached-buffers", c_stats_buffers, NULL, c_stats_buffers_seed },
    { "warn-state_limit_reached-cpus", c_stats_cpus, NULL, c_stats_cpus_seed },
    { "warn-gpu_stage_dropped-colliding-iids", c_colliding_iids, NULL, c_colliding_iids_seed },
    { "error-inflate-bomb", c_inflate_bomb, NULL, c_inflate_bomb_seed },
    { "error-zstd-bomb", c_zstd_bomb, NULL, c_zstd_bomb_seed },
    { "fail-clock_sync_failure-dense", c_dense_clocks, NULL, c_dense_clocks_seed },
};
const size_t tk_n_cases = sizeof tk_cases / sizeof tk_cases[0];
