/* SPDX-License-Identifier: MIT */
/* flight_recorder.c — see flight_recorder.h.
 *
 * The ring holds entries back to back, each a header and the record
 * padded to 8 bytes; an entry never wraps: where it would, the rest of the
 * buffer is skipped (marked, when a header fits there). Positions grow
 * without bound (bytes ever written); the buffer offset is position % size.
 */
#include "tracing/flight_recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"

/* TracePacket fields that start a sequence's incremental state afresh. */
#define TP_CLOCK_SNAPSHOT             6
#define TP_SEQUENCE_FLAGS             13
#define TP_INCREMENTAL_STATE_CLEARED  41
#define SEQ_INCREMENTAL_STATE_CLEARED 1u
#define FLR_MIN_BYTES                 (64u * 1024u)
#define FLR_SKIP                      UINT32_MAX /* header of the skipped rest */
/* Sequence ids looked at when writing a window; higher ones are left out. */
#define FLR_MAX_SEQ (1u << 20)

typedef struct entry {
    uint32_t len; /* of the record; FLR_SKIP: skip to the buffer's end */
    uint32_t seq;
    uint64_t at_ns;
    uint32_t kind; /* FLR_KIND_* */
    uint32_t reserved;
} entry;

struct flr_recorder {
    uint8_t *buf;
    size_t size;
    uint64_t head, tail; /* positions of the oldest entry and of the next */
    uint64_t count, bytes;
    uint64_t evicted, too_large, empty;
    uint32_t max_seq;
};

static size_t entry_size(uint32_t len)
{
    return sizeof(entry) + (((size_t)len + 7u) & ~(size_t)7u);
}

flr_recorder *flr_create(size_t bytes)
{
    flr_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->size = (bytes < FLR_MIN_BYTES ? FLR_MIN_BYTES : bytes) & ~(size_t)7u;
    r->buf = malloc(r->size);
    if (!r->buf) {
        free(r);
        return NULL;
    }
    return r;
}

void flr_destroy(flr_recorder *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

/* The entry at position `pos`, or NULL where the rest of the buffer is
 * skipped (then *skip is how far). */
static const entry *entry_at(const flr_recorder *r, uint64_t pos, size_t *skip)
{
    const size_t off = (size_t)(pos % r->size);
    const size_t left = r->size - off;
    if (left < sizeof(entry) || ((const entry *)(const void *)(r->buf + off))->len == FLR_SKIP) {
        *skip = left;
        return NULL;
    }
    return (const entry *)(const void *)(r->buf + off);
}

static void evict(flr_recorder *r)
{
    size_t skip = 0;
    const entry *e = entry_at(r, r->head, &skip);
    if (!e) {
        r->head += skip;
        e = entry_at(r, r->head, &skip);
    }
    r->head += entry_size(e->len);
    r->bytes -= e->len;
    r->count--;
    r->evicted++;
}

static void append_one(flr_recorder *r, const uint8_t *rec, size_t len, uint32_t seq,
                       uint64_t now_ns)
{
    const size_t need = entry_size((uint32_t)len);
    if (len >= FLR_SKIP || need > r->size) {
        r->too_large++;
        return;
    }
    if (!len) {
        r->empty++; /* not a record (an svc_out would not write it either) */
        return;
    }
    const size_t off = (size_t)(r->tail % r->size);
    const size_t pad = r->size - off < need ? r->size - off : 0;
    while (r->count && r->tail + pad + need - r->head > r->size)
        evict(r);
    if (!r->count)
        r->head = r->tail; /* nothing left to read before it */
    if (pad) {
        if (pad >= sizeof(entry))
            ((entry *)(void *)(r->buf + off))->len = FLR_SKIP;
        r->tail += pad;
        if (!r->count)
            r->head = r->tail;
    }
    entry *e = (entry *)(void *)(r->buf + (size_t)(r->tail % r->size));
    *e = (entry){
        .len = (uint32_t)len, .seq = seq, .at_ns = now_ns, .kind = flr_record_kind(rec, len)
    };
    memcpy(e + 1, rec, len);
    r->tail += need;
    r->count++;
    r->bytes += len;
    if (seq > r->max_seq && seq < FLR_MAX_SEQ)
        r->max_seq = seq;
}

void flr_append(flr_recorder *r, const uint8_t *data, const struct svc_out_record *records,
                size_t n, uint64_t now_ns)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        append_one(r, data + start, records[i].end - start, records[i].sequence_id, now_ns);
        start = records[i].end;
    }
}

/* Calls `fn` for every entry, oldest first, with its serial number. */
#define FOR_EACH_ENTRY(r, serial, e, body)                \
    do {                                                  \
        uint64_t pos_ = (r)->head, serial = 0;            \
        while (pos_ < (r)->tail) {                        \
            size_t skip_;                                 \
            const entry *e = entry_at((r), pos_, &skip_); \
            if (!e) {                                     \
                pos_ += skip_;                            \
                continue;                                 \
            }                                             \
            body;                                         \
            pos_ += entry_size(e->len);                   \
            serial++;                                     \
        }                                                 \
    } while (0)

typedef struct seq_pick {
    uint64_t before, after, first_in; /* serial + 1 of each candidate, 0: none */
    bool any_in;                      /* something at or after the window's start */
    /* The last distinct clock snapshots before the start: serial + 1 and
     * a hash of the record, newest at [n - 1]. */
    uint64_t snap[FLR_KEEP_SNAPSHOTS], snap_hash[FLR_KEEP_SNAPSHOTS];
    uint32_t nsnap;
} seq_pick;

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* A snapshot before the sequence's start, unless the newest kept is the
 * same (a re-emitted reading). */
static void keep_snapshot(seq_pick *p, uint64_t serial, const entry *e)
{
    const uint64_t h = fnv1a((const uint8_t *)(e + 1), e->len);
    if (p->nsnap && p->snap_hash[p->nsnap - 1] == h)
        return;
    if (p->nsnap == FLR_KEEP_SNAPSHOTS) {
        memmove(p->snap, p->snap + 1, (FLR_KEEP_SNAPSHOTS - 1) * sizeof p->snap[0]);
        memmove(p->snap_hash, p->snap_hash + 1, (FLR_KEEP_SNAPSHOTS - 1) * sizeof p->snap[0]);
        p->nsnap--;
    }
    p->snap[p->nsnap] = serial + 1;
    p->snap_hash[p->nsnap++] = h;
}

static uint64_t start_of(const seq_pick *p)
{
    return p->before ? p->before : p->after ? p->after : p->first_in;
}

static bool kept_snapshot(const seq_pick *p, uint64_t serial)
{
    for (uint32_t i = 0; i < p->nsnap; i++)
        if (p->snap[i] == serial + 1)
            return true;
    return false;
}

size_t flr_write_window(flr_recorder *r, svc_out *out, uint64_t from_ns, uint32_t skip_seq)
{
    if (!r->count)
        return 0;
    seq_pick *pick = calloc((size_t)r->max_seq + 1, sizeof *pick);
    if (!pick)
        return 0;
    FOR_EACH_ENTRY(r, serial, e, {
        if (e->seq <= r->max_seq && e->seq != skip_seq) {
            seq_pick *p = &pick[e->seq];
            const bool in = e->at_ns >= from_ns;
            const bool restart = e->kind & FLR_KIND_RESTART;
            if (restart && !in)
                p->before = serial + 1;
            if (restart && in && !p->after)
                p->after = serial + 1;
            if (in && !p->first_in)
                p->first_in = serial + 1;
            p->any_in = p->any_in || in;
        }
    });
    FOR_EACH_ENTRY(r, serial, e, {
        if (e->seq <= r->max_seq && e->seq != skip_seq && (e->kind & FLR_KIND_CLOCK_SNAPSHOT) &&
            serial + 1 < start_of(&pick[e->seq]))
            keep_snapshot(&pick[e->seq], serial, e);
    });
    size_t written = 0;
    FOR_EACH_ENTRY(r, serial, e, {
        if (e->seq <= r->max_seq && e->seq != skip_seq && pick[e->seq].any_in) {
            const seq_pick *p = &pick[e->seq];
            if (serial + 1 >= start_of(p) || kept_snapshot(p, serial)) {
                svc_out_raw_record(out, (const uint8_t *)(e + 1), e->len, e->seq);
                written++;
            }
        }
    });
    free(pick);
    return written;
}

void flr_get_stats(const flr_recorder *r, flr_stats *out)
{
    memset(out, 0, sizeof *out);
    out->records = r->count;
    out->bytes = r->bytes;
    out->evicted = r->evicted;
    out->too_large = r->too_large;
    out->empty = r->empty;
    if (r->count) {
        size_t skip = 0;
        const entry *e = entry_at(r, r->head, &skip);
        if (!e)
            e = entry_at(r, r->head + skip, &skip);
        out->oldest_ns = e ? e->at_ns : 0;
    }
}

unsigned flr_record_kind(const uint8_t *record, size_t len)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, record, len);
    if (!pb_reader_next(&r, &f) || f.id != 1 || f.wire_type != PB_WIRE_LEN)
        return 0;
    pb_bytes packet = pb_field_bytes(&f);
    pb_reader_init(&r, packet.data, packet.size);
    unsigned kind = 0;
    while (pb_reader_next(&r, &f)) {
        if (f.id == TP_CLOCK_SNAPSHOT && f.wire_type == PB_WIRE_LEN)
            kind |= FLR_KIND_CLOCK_SNAPSHOT;
        if (f.wire_type != PB_WIRE_VARINT)
            continue;
        if (f.id == TP_SEQUENCE_FLAGS && (f.value & SEQ_INCREMENTAL_STATE_CLEARED))
            kind |= FLR_KIND_RESTART;
        else if (f.id == TP_INCREMENTAL_STATE_CLEARED && f.value)
            kind |= FLR_KIND_RESTART;
    }
    return r.err == PB_OK ? kind : 0;
}

bool flr_window_path(const char *pattern, unsigned n, char *out, size_t cap)
{
    char num[16];
    const int nlen = snprintf(num, sizeof num, "%u", n);
    size_t o = 0;
    bool numbered = false;
    for (const char *p = pattern; *p; p++) {
        const char *add = p;
        size_t len = 1;
        if (p[0] == '%' && p[1] == '%') {
            len = 2; /* kept for svc_out_expand_path */
            p++;
        } else if (p[0] == '%' && p[1] == 'n') {
            add = num;
            len = (size_t)nlen;
            numbered = true;
            p++;
        }
        if (o + len >= cap)
            return false;
        memcpy(out + o, add, len);
        o += len;
    }
    out[o] = '\0';
    if (numbered)
        return true;
    /* "-n" before the last component's extension (or at the end). */
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    const char *dot = strrchr(base, '.');
    const size_t at = dot && dot != base ? (size_t)(dot - out) : o;
    if (o + (size_t)nlen + 1 >= cap)
        return false;
    memmove(out + at + nlen + 1, out + at, o - at + 1);
    out[at] = '-';
    memcpy(out + at + 1, num, (size_t)nlen);
    return true;
}
