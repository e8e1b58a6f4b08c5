/* SPDX-License-Identifier: MIT */
/* See pb_test_util.h. */
#include "tests/pb/pb_test_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- RNG ----------------------------------------------------------------- */

void pbt_rng_seed(pbt_rng *r, uint64_t seed)
{
    r->state = seed;
}

uint64_t pbt_rng_next(pbt_rng *r)
{
    /* splitmix64: full period, good enough mixing for test data. */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t pbt_rng_below(pbt_rng *r, uint64_t n)
{
    return n ? pbt_rng_next(r) % n : 0;
}

uint64_t pbt_rng_range(pbt_rng *r, uint64_t lo, uint64_t hi)
{
    if (hi - lo == UINT64_MAX)
        return pbt_rng_next(r);
    return lo + pbt_rng_below(r, hi - lo + 1);
}

uint64_t pbt_rng_bits(pbt_rng *r)
{
    unsigned bits = (unsigned)pbt_rng_below(r, 65);
    if (bits == 0)
        return 0;
    /* Top bit set so the length is exactly `bits`. */
    uint64_t v = pbt_rng_next(r) >> (64 - bits);
    return v | (1ull << (bits - 1));
}

/* ---- arena --------------------------------------------------------------- */

struct pbt_arena_block {
    pbt_arena_block *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

void *pbt_alloc(pbt_arena *a, size_t n)
{
    /* One block per allocation: simple, and ASan sees each one's bounds. */
    pbt_arena_block *b = calloc(1, sizeof *b + (n ? n : 1));
    if (!b) {
        fprintf(stderr, "pbt_alloc: out of memory\n");
        abort();
    }
    b->size = n;
    b->next = a->blocks;
    a->blocks = b;
    return b->data;
}

void pbt_arena_free(pbt_arena *a)
{
    while (a->blocks) {
        pbt_arena_block *next = a->blocks->next;
        free(a->blocks);
        a->blocks = next;
    }
}

uint8_t *pbt_exact_copy(const void *data, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    if (!p)
        abort();
    if (len)
        memcpy(p, data, len);
    return p;
}

/* ---- generator ------------------------------------------------------------- */

typedef struct gen_ctx {
    pbt_arena *a;
    pbt_rng *r;
    const pbt_gen_opts *o;
    unsigned total;
} gen_ctx;

static uint32_t gen_field_id(pbt_rng *r)
{
    switch (pbt_rng_below(r, 10)) {
    case 0:
    case 1:
    case 2:
    case 3: /* 1-byte tag */
        return (uint32_t)pbt_rng_range(r, 1, 15);
    case 4:
    case 5: /* 2-byte tag */
        return (uint32_t)pbt_rng_range(r, 16, 2047);
    case 6: /* 3- and 4-byte tags */
        return (uint32_t)pbt_rng_range(r, 2048, (1u << 25) - 1);
    case 7: /* 5-byte tags */
        return (uint32_t)pbt_rng_range(r, 1u << 25, PB_MAX_FIELD_ID);
    case 8: { /* boundaries */
        static const uint32_t edge[] = {
            1, 15, 16, 2047, 2048, 262143, 262144, (1u << 25) - 1, 1u << 25, PB_MAX_FIELD_ID
        };
        return edge[pbt_rng_below(r, sizeof edge / sizeof edge[0])];
    }
    default:
        return (uint32_t)pbt_rng_range(r, 1, 100);
    }
}

static uint64_t gen_varint_value(pbt_rng *r)
{
    if (pbt_rng_below(r, 8) == 0) {
        static const uint64_t edge[] = { 0,
                                         1,
                                         127,
                                         128,
                                         300,
                                         16383,
                                         16384,
                                         1ull << 32,
                                         (1ull << 56) - 1,
                                         1ull << 56,
                                         (1ull << 63) - 1,
                                         1ull << 63,
                                         UINT64_MAX,
                                         (uint64_t)(int64_t)-1,
                                         (uint64_t)(int64_t)INT32_MIN };
        return edge[pbt_rng_below(r, sizeof edge / sizeof edge[0])];
    }
    return pbt_rng_bits(r);
}

static size_t gen_len(gen_ctx *g, size_t max)
{
    switch (pbt_rng_below(g->r, 20)) {
    case 0:
        return 0;
    case 1:
        return pbt_rng_range(g->r, 0, max);
    case 2:
    case 3:
    case 4: {
        size_t n = (size_t)pbt_rng_range(g->r, 100, 300);
        return n < max ? n : max;
    }
    default: {
        size_t n = (size_t)pbt_rng_range(g->r, 0, 20);
        return n < max ? n : max;
    }
    }
}

static void gen_packed(gen_ctx *g, pbt_field *f)
{
    size_t max = g->o->max_packed;
    size_t n = pbt_rng_below(g->r, 4) == 0 ? pbt_rng_range(g->r, 0, max)
                                           : pbt_rng_range(g->r, 0, max < 8 ? max : 8);
    f->packed_kind = (uint8_t)pbt_rng_below(g->r, PBT_PACKED_KIND_COUNT);
    f->len = n;
    uint64_t *wire = pbt_alloc(g->a, n * sizeof *wire);
    void *in = NULL;
    switch (f->packed_kind) {
    case PBT_PACKED_U64: {
        uint64_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            wire[i] = v[i] = gen_varint_value(g->r);
        in = v;
        break;
    }
    case PBT_PACKED_U32: {
        uint32_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            wire[i] = v[i] = (uint32_t)gen_varint_value(g->r);
        in = v;
        break;
    }
    case PBT_PACKED_I64: {
        int64_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            v[i] = (int64_t)gen_varint_value(g->r);
            wire[i] = (uint64_t)v[i];
        }
        in = v;
        break;
    }
    case PBT_PACKED_I32: {
        int32_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            v[i] = (int32_t)(uint32_t)gen_varint_value(g->r);
            wire[i] = (uint64_t)(int64_t)v[i]; /* sign-extended on the wire */
        }
        in = v;
        break;
    }
    case PBT_PACKED_S64: {
        int64_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            v[i] = (int64_t)gen_varint_value(g->r);
            wire[i] = pb_zigzag_encode64(v[i]);
        }
        in = v;
        break;
    }
    case PBT_PACKED_S32: {
        int32_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            v[i] = (int32_t)(uint32_t)gen_varint_value(g->r);
            wire[i] = pb_zigzag_encode32(v[i]);
        }
        in = v;
        break;
    }
    case PBT_PACKED_F32: {
        uint32_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            wire[i] = v[i] = (uint32_t)pbt_rng_next(g->r);
        in = v;
        break;
    }
    default: {
        uint64_t *v = pbt_alloc(g->a, n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            wire[i] = v[i] = pbt_rng_next(g->r);
        in = v;
        break;
    }
    }
    f->packed_input = in;
    f->packed_wire = wire;
}

static pbt_msg *gen_msg(gen_ctx *g, unsigned depth)
{
    pbt_msg *m = pbt_alloc(g->a, sizeof *m);
    size_t n = (size_t)pbt_rng_range(g->r, 0, g->o->max_fields);
    if (g->total >= g->o->max_total)
        n = 0;
    m->fields = pbt_alloc(g->a, n * sizeof *m->fields);
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        pbt_field *f = &m->fields[i];
        g->total++;
        f->id = gen_field_id(g->r);
        unsigned k = (unsigned)pbt_rng_below(g->r, PBT_KIND_COUNT);
        if (g->o->nested_pct) {
            if (pbt_rng_below(g->r, 100) < g->o->nested_pct)
                k = PBT_NESTED;
            else if (k == PBT_NESTED)
                k = PBT_BYTES;
        }
        if (k == PBT_NESTED && (depth >= g->o->max_depth || g->total >= g->o->max_total))
            k = PBT_VARINT;
        f->kind = (uint8_t)k;
        switch (k) {
        case PBT_VARINT:
        case PBT_RAW:
            f->value = gen_varint_value(g->r);
            break;
        case PBT_FIXED32:
            f->value = (uint32_t)pbt_rng_next(g->r);
            break;
        case PBT_FIXED64:
            f->value = pbt_rng_next(g->r);
            break;
        case PBT_BYTES:
        case PBT_STRING: {
            size_t len = gen_len(g, g->o->max_bytes_len);
            uint8_t *d = pbt_alloc(g->a, len + 1);
            for (size_t j = 0; j < len; j++) {
                uint8_t c = (uint8_t)pbt_rng_next(g->r);
                d[j] = k == PBT_STRING ? (uint8_t)(' ' + c % 95) : c;
            }
            f->data = d;
            f->len = len;
            break;
        }
        case PBT_NESTED:
            f->child = gen_msg(g, depth + 1);
            break;
        default:
            gen_packed(g, f);
            break;
        }
    }
    /* Leave a child open only where the writer's auto-finalization is
     * defined: before a nested sibling or at the end of the parent. */
    for (size_t i = 0; i < n; i++) {
        pbt_field *f = &m->fields[i];
        if (f->kind != PBT_NESTED)
            continue;
        bool next_nested = i + 1 == n || m->fields[i + 1].kind == PBT_NESTED;
        f->leave_open = next_nested && pbt_rng_below(g->r, 2) == 0;
    }
    return m;
}

pbt_msg *pbt_gen(pbt_arena *a, pbt_rng *r, const pbt_gen_opts *o)
{
    gen_ctx g = { a, r, o, 0 };
    return gen_msg(&g, 0);
}

/* ---- reference encoder -------------------------------------------------------- */

size_t pbt_ref_varint(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    for (;;) {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (!v) {
            if (out)
                out[n] = b;
            return n + 1;
        }
        if (out)
            out[n] = b | 0x80;
        n++;
    }
}

static size_t ref_tag(uint32_t id, unsigned wt, uint8_t *out)
{
    return pbt_ref_varint((uint64_t)id << 3 | wt, out);
}

static size_t ref_packed_payload(const pbt_field *f, uint8_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < f->len; i++) {
        uint64_t w = f->packed_wire[i];
        if (f->packed_kind == PBT_PACKED_F32) {
            for (int b = 0; b < 4; b++, n++)
                if (out)
                    out[n] = (uint8_t)(w >> (8 * b));
        } else if (f->packed_kind == PBT_PACKED_F64) {
            for (int b = 0; b < 8; b++, n++)
                if (out)
                    out[n] = (uint8_t)(w >> (8 * b));
        } else {
            n += pbt_ref_varint(w, out ? out + n : NULL);
        }
    }
    return n;
}

/* out == NULL: only measures. */
static size_t ref_msg(const pbt_msg *m, uint8_t *out)
{
    size_t n = 0;
#define REF_AT (out ? out + n : NULL)
    for (size_t i = 0; i < m->n; i++) {
        const pbt_field *f = &m->fields[i];
        switch (f->kind) {
        case PBT_VARINT:
        case PBT_RAW:
            n += ref_tag(f->id, 0, REF_AT);
            n += pbt_ref_varint(f->value, REF_AT);
            break;
        case PBT_FIXED32:
        case PBT_FIXED64: {
            int width = f->kind == PBT_FIXED32 ? 4 : 8;
            n += ref_tag(f->id, width == 4 ? 5 : 1, REF_AT);
            for (int b = 0; b < width; b++, n++)
                if (out)
                    out[n] = (uint8_t)(f->value >> (8 * b));
            break;
        }
        case PBT_BYTES:
        case PBT_STRING:
            n += ref_tag(f->id, 2, REF_AT);
            n += pbt_ref_varint(f->len, REF_AT);
            if (out && f->len)
                memcpy(out + n, f->data, f->len);
            n += f->len;
            break;
        case PBT_NESTED: {
            n += ref_tag(f->id, 2, REF_AT);
            size_t sz = ref_msg(f->child, NULL);
            if (out) {
                /* 4-byte redundant varint: continuation bit on the first
                 * three bytes whatever the value. */
                out[n] = (uint8_t)(0x80 | (sz & 0x7f));
                out[n + 1] = (uint8_t)(0x80 | ((sz >> 7) & 0x7f));
                out[n + 2] = (uint8_t)(0x80 | ((sz >> 14) & 0x7f));
                out[n + 3] = (uint8_t)((sz >> 21) & 0x7f);
                ref_msg(f->child, out + n + 4);
            }
            n += 4 + sz;
            break;
        }
        default: {
            n += ref_tag(f->id, 2, REF_AT);
            size_t sz = ref_packed_payload(f, NULL);
            n += pbt_ref_varint(sz, REF_AT);
            ref_packed_payload(f, REF_AT);
            n += sz;
            break;
        }
        }
    }
#undef REF_AT
    return n;
}

size_t pbt_ref_size(const pbt_msg *m)
{
    return ref_msg(m, NULL);
}

size_t pbt_ref_encode(const pbt_msg *m, uint8_t *out)
{
    return ref_msg(m, out);
}

/* ---- writer ----------------------------------------------------------------------- */

size_t pbt_count_nested(const pbt_msg *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->fields[i].kind == PBT_NESTED)
            n += 1 + pbt_count_nested(m->fields[i].child);
    return n;
}

typedef struct write_ctx {
    pb_msg *pool;
    unsigned mismatches;
    /* Write runs of scalar and bytes fields with pb_msg_reserve() and the
     * pb_put_*_field() encoders where the buffer has room. */
    bool runs;
} write_ctx;

static bool run_field(const pbt_field *f)
{
    return f->kind == PBT_VARINT || f->kind == PBT_FIXED32 || f->kind == PBT_FIXED64 ||
           f->kind == PBT_BYTES || f->kind == PBT_STRING;
}

/* Writes the run of run_field()s starting at t->fields[i] under one bounds
 * check; returns how many it wrote, 0 when the buffer lacks the room (the
 * caller then writes field i alone through the per-field appenders, so
 * the next run starts one field later, on a different offset). */
static void write_msg(write_ctx *w, pb_msg *m, const pbt_msg *t);
static void write_child(write_ctx *w, pb_msg *c, const pbt_field *f);

/* A NESTED field right after the run has its header written in the run
 * too (pb_msg_put_nested_begin()); its child is then written normally. */
static size_t write_run(write_ctx *w, pb_msg *m, const pbt_msg *t, size_t i)
{
    size_t j = i, bound = 0;
    for (; j < t->n && run_field(&t->fields[j]); j++) {
        const pbt_field *f = &t->fields[j];
        bool bytes = f->kind == PBT_BYTES || f->kind == PBT_STRING;
        bound += bytes ? PB_MAX_BYTES_FIELD_BYTES(f->len) : PB_MAX_SCALAR_FIELD_BYTES;
    }
    bool nested = j < t->n && t->fields[j].kind == PBT_NESTED;
    uint8_t *p = pb_msg_reserve(m, bound + (nested ? PB_NESTED_HEADER_BYTES : 0));
    if (!p)
        return 0;
    for (size_t k = i; k < j; k++) {
        const pbt_field *f = &t->fields[k];
        if (f->kind == PBT_VARINT)
            p = pb_put_varint_field(p, f->id, f->value);
        else if (f->kind == PBT_FIXED32)
            p = pb_put_fixed32_field(p, f->id, (uint32_t)f->value);
        else if (f->kind == PBT_FIXED64)
            p = pb_put_fixed64_field(p, f->id, f->value);
        else if (f->kind == PBT_STRING)
            p = pb_put_bytes_field(p, f->id, f->data, pb_strlen((const char *)f->data));
        else
            p = pb_put_bytes_field(p, f->id, f->data, f->len);
    }
    if (!nested) {
        pb_msg_commit(m, p);
        return j - i;
    }
    pb_msg *c = w->pool++;
    p = pb_msg_put_nested_begin(m, p, t->fields[j].id, c);
    pb_msg_commit(c, p);
    write_child(w, c, &t->fields[j]);
    return j - i + 1;
}

static void write_packed(pb_msg *m, const pbt_field *f)
{
    switch (f->packed_kind) {
    case PBT_PACKED_U64:
        pb_msg_append_packed_varint_u64(m, f->id, f->packed_input, f->len);
        break;
    case PBT_PACKED_U32:
        pb_msg_append_packed_varint_u32(m, f->id, f->packed_input, f->len);
        break;
    case PBT_PACKED_I64:
        pb_msg_append_packed_varint_i64(m, f->id, f->packed_input, f->len);
        break;
    case PBT_PACKED_I32:
        pb_msg_append_packed_varint_i32(m, f->id, f->packed_input, f->len);
        break;
    case PBT_PACKED_S64:
        pb_msg_append_packed_sint64(m, f->id, f->packed_input, f->len);
        break;
    case PBT_PACKED_S32:
        pb_msg_append_packed_sint32(m, f->id, f->packed_input, f->len);
        break;
    case PBT_PACKED_F32:
        pb_msg_append_packed_fixed32(m, f->id, f->packed_input, f->len);
        break;
    default:
        pb_msg_append_packed_fixed64(m, f->id, f->packed_input, f->len);
        break;
    }
}

/* The fields of the just opened child `c`, and its end unless left open. */
static void write_child(write_ctx *w, pb_msg *c, const pbt_field *f)
{
    write_msg(w, c, f->child);
    if (!f->leave_open) {
        uint32_t sz = pb_msg_end(c);
        if (sz != pbt_ref_size(f->child))
            w->mismatches++;
        /* Idempotent. */
        if (pb_msg_end(c) != sz)
            w->mismatches++;
    }
}

static void write_msg(write_ctx *w, pb_msg *m, const pbt_msg *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const pbt_field *f = &t->fields[i];
        if (w->runs && run_field(f)) {
            size_t done = write_run(w, m, t, i);
            if (done) {
                i += done - 1;
                continue;
            }
        }
        switch (f->kind) {
        case PBT_VARINT:
            pb_msg_append_varint(m, f->id, f->value);
            break;
        case PBT_FIXED32:
            pb_msg_append_fixed32(m, f->id, (uint32_t)f->value);
            break;
        case PBT_FIXED64:
            pb_msg_append_fixed64(m, f->id, f->value);
            break;
        case PBT_BYTES:
            pb_msg_append_bytes(m, f->id, f->data, f->len);
            break;
        case PBT_STRING:
            pb_msg_append_string(m, f->id, (const char *)f->data);
            break;
        case PBT_RAW: {
            uint8_t tmp[PB_MAX_SCALAR_FIELD_BYTES];
            size_t n = ref_tag(f->id, 0, tmp);
            n += pbt_ref_varint(f->value, tmp + n);
            pb_msg_append_raw(m, tmp, n);
            break;
        }
        case PBT_NESTED: {
            pb_msg *c = w->pool++;
            pb_msg_begin_nested(m, f->id, c);
            write_child(w, c, f);
            break;
        }
        default:
            write_packed(m, f);
            break;
        }
    }
}

/* After the root is finalized every child must be too, with the right size. */
static void check_sizes(write_ctx *w, pb_msg **pool, const pbt_msg *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const pbt_field *f = &t->fields[i];
        if (f->kind != PBT_NESTED)
            continue;
        pb_msg *c = (*pool)++;
        if (!c->finalized || c->size != pbt_ref_size(f->child))
            w->mismatches++;
        check_sizes(w, pool, f->child);
    }
}

static unsigned write_root(pb_stream *s, const pbt_msg *m, pb_msg *pool, bool runs)
{
    write_ctx w = { pool, 0, runs };
    pb_msg root;
    uint64_t before = pb_stream_bytes_written(s);
    pb_msg_init_root(&root, s);
    write_msg(&w, &root, m);
    uint32_t size = pb_msg_end(&root);
    size_t want = pbt_ref_size(m);
    if (size != want || pb_stream_bytes_written(s) - before != want)
        w.mismatches++;
    if (s->innermost != NULL)
        w.mismatches++;
    pb_msg *p = pool;
    check_sizes(&w, &p, m);
    return w.mismatches;
}

unsigned pbt_write(pb_stream *s, const pbt_msg *m, pb_msg *pool)
{
    return write_root(s, m, pool, false);
}

unsigned pbt_write_runs(pb_stream *s, const pbt_msg *m, pb_msg *pool)
{
    return write_root(s, m, pool, true);
}

/* ---- reader check ------------------------------------------------------------------ */

typedef struct check_ctx {
    char *why;
    size_t why_len;
    char path[512];
} check_ctx;

static bool fail(check_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(check_ctx *c, const char *fmt, ...)
{
    if (!c->why || !c->why_len)
        return false;
    int n = snprintf(c->why, c->why_len, "at %s: ", c->path[0] ? c->path : "root");
    if (n < 0 || (size_t)n >= c->why_len)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why + n, c->why_len - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

static bool check_packed(check_ctx *c, const pb_field *pf, const pbt_field *f)
{
    pb_packed_iter it;
    pb_packed_init(&it, pf);
    for (size_t i = 0; i < f->len; i++) {
        uint64_t got = 0;
        bool ok;
        if (f->packed_kind == PBT_PACKED_F32) {
            uint32_t v32 = 0;
            ok = pb_packed_next_fixed32(&it, &v32);
            got = v32;
        } else if (f->packed_kind == PBT_PACKED_F64) {
            ok = pb_packed_next_fixed64(&it, &got);
        } else {
            ok = pb_packed_next_varint(&it, &got);
        }
        if (!ok)
            return fail(c, "packed element %zu missing (%s)", i, pb_error_str(it.err));
        if (got != f->packed_wire[i])
            return fail(c, "packed element %zu: got %#llx want %#llx", i, (unsigned long long)got,
                        (unsigned long long)f->packed_wire[i]);
    }
    uint64_t extra;
    if (pb_packed_next_varint(&it, &extra) || it.err != PB_OK)
        return fail(c, "packed: trailing data or error (%s)", pb_error_str(it.err));
    return true;
}

static bool check_msg(check_ctx *c, pb_reader *r, const pbt_msg *t)
{
    size_t path_len = strlen(c->path);
    for (size_t i = 0; i < t->n; i++) {
        const pbt_field *f = &t->fields[i];
        snprintf(c->path + path_len, sizeof c->path - path_len, "%sf[%zu](id %u)",
                 path_len ? "." : "", i, f->id);
        pb_field pf;
        if (!pb_reader_next(r, &pf))
            return fail(c, "field missing (%s)", pb_error_str(r->err));
        if (pf.id != f->id)
            return fail(c, "id %u", pf.id);
        unsigned want_wt;
        switch (f->kind) {
        case PBT_VARINT:
        case PBT_RAW:
            want_wt = PB_WIRE_VARINT;
            break;
        case PBT_FIXED32:
            want_wt = PB_WIRE_FIXED32;
            break;
        case PBT_FIXED64:
            want_wt = PB_WIRE_FIXED64;
            break;
        default:
            want_wt = PB_WIRE_LEN;
            break;
        }
        if (pf.wire_type != want_wt)
            return fail(c, "wire type %u, want %u", pf.wire_type, want_wt);
        switch (f->kind) {
        case PBT_VARINT:
        case PBT_RAW:
        case PBT_FIXED32:
        case PBT_FIXED64:
            if (pf.value != f->value)
                return fail(c, "value %#llx, want %#llx", (unsigned long long)pf.value,
                            (unsigned long long)f->value);
            break;
        case PBT_BYTES:
        case PBT_STRING: {
            pb_bytes b = pb_field_bytes(&pf);
            if (b.size != f->len || (f->len && memcmp(b.data, f->data, f->len) != 0))
                return fail(c, "payload differs (%zu bytes, want %zu)", b.size, f->len);
            break;
        }
        case PBT_NESTED: {
            pb_reader child;
            if (!pb_reader_enter(r, &pf, &child))
                return fail(c, "cannot enter (%s)", pb_error_str(r->err));
            if (!check_msg(c, &child, f->child))
                return false;
            break;
        }
        default:
            if (!check_packed(c, &pf, f))
                return false;
            break;
        }
    }
    c->path[path_len] = '\0';
    pb_field extra;
    if (pb_reader_next(r, &extra))
        return fail(c, "unexpected extra field id %u", extra.id);
    if (r->err != PB_OK)
        return fail(c, "reader error %s", pb_error_str(r->err));
    return true;
}

bool pbt_check(const uint8_t *data, size_t len, const pbt_msg *m, char *why, size_t why_len)
{
    check_ctx c = { why, why_len, { 0 } };
    if (why && why_len)
        why[0] = '\0';
    pb_reader r;
    pb_reader_init(&r, data, len);
    return check_msg(&c, &r, m);
}
