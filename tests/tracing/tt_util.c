/* SPDX-License-Identifier: MIT */
/* Helpers shared by the tracing tests. */
#include "tests/tracing/tt_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protos/pb/pb_reader.h"

uint64_t tt_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

uint64_t tt_hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ a;
    h = (h ^ (b + 0x632BE59BD9B4E019ull)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (c + 0x85EBCA77C2B2AE63ull)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

size_t tt_payload_len(uint64_t seed, uint32_t writer, uint64_t counter, size_t max)
{
    uint64_t h = tt_hash3(seed, writer, counter);
    size_t cap;
    switch (h % 20) {
    case 0:
        return 0;
    case 1:
        cap = max;
        break;
    case 2:
    case 3:
    case 4:
        cap = max < 4096 ? max : 4096;
        break;
    case 5:
    case 6:
    case 7:
    case 8:
    case 9:
    case 10:
        cap = 512;
        break;
    default:
        cap = 32;
        break;
    }
    if (cap > max)
        cap = max;
    return (size_t)((h >> 8) % (cap + 1));
}

void tt_payload_fill(uint32_t writer, uint64_t counter, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)('a' + (writer * 7u + counter * 13u + i) % 26u);
}

bool tt_payload_check(uint32_t writer, uint64_t counter, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != (uint8_t)('a' + (writer * 7u + counter * 13u + i) % 26u))
            return false;
    }
    return true;
}

void tt_write_test_packet(tw_writer *tw, uint32_t writer, uint64_t counter, const uint8_t *str,
                          size_t len, bool nested)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TestEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, 1000000 + counter);
    perfetto_protos_TracePacket_begin_for_testing(&pkt, &ev);
    perfetto_protos_TestEvent_set_seq_value(&ev, writer);
    perfetto_protos_TestEvent_set_counter(&ev, counter);
    if (nested) {
        perfetto_protos_TestEvent_TestPayload outer, inner;
        perfetto_protos_TestEvent_begin_payload(&ev, &outer);
        perfetto_protos_TestEvent_TestPayload_begin_nested(&outer, &inner);
        perfetto_protos_TestEvent_TestPayload_set_single_string_len(&inner, str, len);
        perfetto_protos_TestEvent_TestPayload_end(&inner);
        perfetto_protos_TestEvent_TestPayload_end(&outer);
    } else {
        perfetto_protos_TestEvent_set_str_len(&ev, str, len);
    }
    perfetto_protos_TestEvent_end(&ev);
    tw_end_packet(tw);
}

static bool find_nested_string(const pb_bytes *payload, pb_bytes *out)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, payload->data, payload->size);
    while (pb_reader_next(&r, &f)) {
        if (f.id == perfetto_protos_TestEvent_TestPayload_FIELD_nested &&
            f.wire_type == PB_WIRE_LEN) {
            perfetto_protos_TestEvent_TestPayload_view in;
            if (!perfetto_protos_TestEvent_TestPayload_decode(&in, f.data, (size_t)f.value))
                return false;
            *out = in.single_string;
            return true;
        }
    }
    return false;
}

bool tt_decode_test_event(const uint8_t *data, size_t size, tt_event *ev)
{
    perfetto_protos_TracePacket_view v;
    perfetto_protos_TestEvent_view te;
    if (!perfetto_protos_TracePacket_decode(&v, data, size) || !v.has_for_testing ||
        !perfetto_protos_TestEvent_decode(&te, v.for_testing.data, v.for_testing.size))
        return false;
    ev->writer = te.seq_value;
    ev->counter = te.counter;
    if (te.has_payload) {
        perfetto_protos_TestEvent_TestPayload_view outer;
        if (!perfetto_protos_TestEvent_TestPayload_decode(&outer, te.payload.data, te.payload.size))
            return false;
        (void)outer;
        return find_nested_string(&te.payload, &ev->str);
    }
    ev->str = te.str;
    return true;
}

void tt_service_drain(smb_arbiter *arb, cb_buffer *cb, smb_commit_batch *batch)
{
    smb_arbiter_take_commits(arb, batch);
    if (svc_apply_commits(smb_arbiter_abi(arb), cb, batch))
        smb_arbiter_chunks_freed(arb);
}

size_t tt_cb_read_all(cb_buffer *cb, bool final_read, tt_cbpkt **out)
{
    size_t n = 0, cap = 64;
    tt_cbpkt *v = malloc(cap * sizeof *v);
    cb_packet p;
    cb_begin_read(cb, final_read);
    while (cb_read_next(cb, &p)) {
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
        }
        tt_cbpkt *o = &v[n++];
        o->data = malloc(p.size ? p.size : 1);
        o->size = 0;
        for (size_t i = 0; i < p.num_slices; i++) {
            memcpy(o->data + o->size, p.slices[i].data, p.slices[i].size);
            o->size += p.slices[i].size;
        }
        o->sequence_id = p.sequence_id;
        o->writer_id = p.writer_id;
        o->dropped = p.previous_packet_dropped;
    }
    *out = v;
    return n;
}

void tt_cbpkts_free(tt_cbpkt *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i].data);
    free(p);
}

bool tt_load_trace(const char *path, tt_trace *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    t->buf = malloc(sz > 0 ? (size_t)sz : 1);
    t->len = fread(t->buf, 1, (size_t)(sz > 0 ? sz : 0), f);
    fclose(f);
    size_t cap = 256;
    t->pkts = malloc(cap * sizeof *t->pkts);
    pb_reader r;
    pb_field fl;
    pb_reader_init(&r, t->buf, t->len);
    while (pb_reader_next(&r, &fl)) {
        if (fl.id != perfetto_protos_Trace_FIELD_packet || fl.wire_type != PB_WIRE_LEN)
            return false;
        if (t->n == cap) {
            cap *= 2;
            t->pkts = realloc(t->pkts, cap * sizeof *t->pkts);
        }
        tt_packet *p = &t->pkts[t->n++];
        p->data = fl.data;
        p->size = (size_t)fl.value;
        if (!perfetto_protos_TracePacket_decode(&p->v, p->data, p->size) ||
            pb_validate(p->data, p->size) != PB_OK)
            return false;
    }
    return r.err == PB_OK;
}

void tt_free_trace(tt_trace *t)
{
    free(t->buf);
    free(t->pkts);
    memset(t, 0, sizeof *t);
}

bool tt_trace_stats(const tt_trace *t, perfetto_protos_TraceStats_view *ts,
                    perfetto_protos_TraceStats_BufferStats_view *bs)
{
    for (size_t i = t->n; i > 0; i--) {
        const tt_packet *p = &t->pkts[i - 1];
        if (!p->v.has_trace_stats)
            continue;
        if (!perfetto_protos_TraceStats_decode(ts, p->v.trace_stats.data, p->v.trace_stats.size))
            return false;
        pb_reader r;
        pb_field f;
        pb_reader_init(&r, p->v.trace_stats.data, p->v.trace_stats.size);
        while (pb_reader_next(&r, &f)) {
            if (f.id == perfetto_protos_TraceStats_FIELD_buffer_stats && f.wire_type == PB_WIRE_LEN)
                return perfetto_protos_TraceStats_BufferStats_decode(bs, f.data, (size_t)f.value);
        }
        return false;
    }
    return false;
}

char *tt_temp_path(const char *tag)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    static unsigned counter;
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/gputrace-%s-%d-%u.pftrace", dir, tag, (int)getpid(), counter++);
    return p;
}
