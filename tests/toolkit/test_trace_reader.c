/* SPDX-License-Identifier: MIT */
/* Streaming reader: record rules (trace_processor's tokenizer), the same
 * packets whatever the chunking (memory, byte-by-byte pushes, a pipe read
 * in tiny blocks), bounds and errors, and compressed packets (deflate and
 * zstd). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cmocka.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_inflate.h"
#include "toolkit/tk_trace_reader.h"

typedef struct seen {
    size_t n;
    size_t lens[64];
    uint64_t offsets[64];
    uint8_t first[64];
    size_t stop_after; /* 0: never */
} seen;

static bool on_packet(void *ctx, const uint8_t *data, size_t len, uint64_t offset)
{
    seen *s = ctx;
    if (s->n < 64) {
        s->lens[s->n] = len;
        s->offsets[s->n] = offset;
        s->first[s->n] = len ? data[0] : 0;
    }
    s->n++;
    return !(s->stop_after && s->n >= s->stop_after);
}

/* Trace body: packet(3 bytes) | varint field 2 | packet(0 bytes) | LEN field
 * 3 | fixed64 field 4 | fixed32 field 5 | packet(200 bytes). */
static size_t sample(uint8_t *b)
{
    size_t n = 0;
    b[n++] = 0x0a;
    b[n++] = 3;
    b[n++] = 0x08;
    b[n++] = 0x01;
    b[n++] = 0x50;
    b[n++] = 0x10;
    b[n++] = 0x96;
    b[n++] = 0x01;
    b[n++] = 0x0a;
    b[n++] = 0;
    b[n++] = 0x1a;
    b[n++] = 2;
    b[n++] = 'h';
    b[n++] = 'i';
    b[n++] = 0x21;
    memset(b + n, 0x11, 8);
    n += 8;
    b[n++] = 0x2d;
    memset(b + n, 0x22, 4);
    n += 4;
    b[n++] = 0x0a;
    b[n++] = 0xc8;
    b[n++] = 0x01;
    for (int i = 0; i < 200; i++)
        b[n++] = (uint8_t)(0x40 + (i & 7)); /* not necessarily a valid packet: irrelevant */
    return n;
}

static void check_sample(const seen *s, const tk_reader *r)
{
    assert_int_equal(s->n, 2);
    assert_int_equal(s->lens[0], 3);
    assert_int_equal(s->offsets[0], 0);
    assert_int_equal(s->first[0], 0x08);
    assert_int_equal(s->lens[1], 200);
    assert_int_equal(s->offsets[1], 28);
    assert_int_equal(r->skipped_fields, 4);
    assert_int_equal(r->empty_packets, 1);
}

static void test_memory(void **state)
{
    (void)state;
    uint8_t b[512];
    size_t n = sample(b);
    seen s = { 0 };
    tk_reader r;
    tk_reader_init(&r, NULL);
    assert_int_equal(tk_reader_parse_buffer(&r, b, n, on_packet, &s), TK_READ_OK);
    check_sample(&s, &r);
    tk_reader_free(&r);
}

static void test_byte_by_byte(void **state)
{
    (void)state;
    uint8_t b[512];
    size_t n = sample(b);
    seen s = { 0 };
    tk_reader r;
    tk_reader_init(&r, NULL);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(tk_reader_feed(&r, b + i, 1, on_packet, &s), TK_READ_OK);
    assert_int_equal(tk_reader_finish(&r), TK_READ_OK);
    check_sample(&s, &r);
    tk_reader_free(&r);
}

static void test_pipe_tiny_blocks(void **state)
{
    (void)state;
    uint8_t b[512];
    size_t n = sample(b);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], b, n), (ssize_t)n);
    close(fds[1]);
    seen s = { 0 };
    tk_reader r;
    tk_reader_config cfg = { .block_size = 64 }; /* smaller than the last packet */
    tk_reader_init(&r, &cfg);
    assert_int_equal(tk_reader_read_fd(&r, fds[0], on_packet, &s, NULL, NULL), TK_READ_OK);
    close(fds[0]);
    check_sample(&s, &r);
    tk_reader_free(&r);
}

static void test_truncated(void **state)
{
    (void)state;
    uint8_t b[512];
    size_t n = sample(b);
    for (size_t cut = 1; cut < n; cut++) {
        seen s = { 0 };
        tk_reader r;
        tk_reader_init(&r, NULL);
        tk_read_status st = tk_reader_parse_buffer(&r, b, cut, on_packet, &s);
        /* Every cut inside a record is an error; cuts between records are
         * clean ends. */
        bool boundary = cut == 5 || cut == 8 || cut == 10 || cut == 14 || cut == 23 || cut == 28;
        assert_int_equal(st, boundary ? TK_READ_OK : TK_READ_ERR_TRUNCATED);
        tk_reader_free(&r);
    }
}

static void test_errors(void **state)
{
    (void)state;
    seen s = { 0 };
    tk_reader r;
    /* group wire type */
    static const uint8_t grp[] = { 0x0b, 0x00 };
    tk_reader_init(&r, NULL);
    assert_int_equal(tk_reader_parse_buffer(&r, grp, sizeof grp, on_packet, &s),
                     TK_READ_ERR_FORMAT);
    assert_non_null(strstr(tk_reader_error(&r), "wire type"));
    tk_reader_free(&r);
    /* over-long tag varint */
    static const uint8_t tag[] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
    };
    tk_reader_init(&r, NULL);
    assert_int_equal(tk_reader_parse_buffer(&r, tag, sizeof tag, on_packet, &s),
                     TK_READ_ERR_FORMAT);
    tk_reader_free(&r);
    /* a packet above the limit, reported before its bytes arrive */
    static const uint8_t big[] = { 0x0a, 0x80, 0x80, 0x80, 0x01 };
    tk_reader_config cfg = { .max_packet_size = 1000 };
    tk_reader_init(&r, &cfg);
    assert_int_equal(tk_reader_feed(&r, big, sizeof big, on_packet, &s), TK_READ_ERR_TOO_BIG);
    tk_reader_free(&r);
    /* the callback stops the reader */
    uint8_t b[512];
    size_t n = sample(b);
    seen stop = { .stop_after = 1 };
    tk_reader_init(&r, NULL);
    assert_int_equal(tk_reader_parse_buffer(&r, b, n, on_packet, &stop), TK_READ_ERR_ABORTED);
    assert_int_equal(stop.n, 1);
    tk_reader_free(&r);
}

/* A huge non-packet field streams past without being buffered. */
static void test_skip_large_field(void **state)
{
    (void)state;
    const size_t big = 1u << 20; /* a 3-byte length varint */
    uint8_t *b = malloc(big + 16);
    size_t n = 0;
    b[n++] = 0x12; /* field 2, LEN */
    b[n++] = (uint8_t)(0x80 | (big & 0x7f));
    b[n++] = (uint8_t)(0x80 | ((big >> 7) & 0x7f));
    b[n++] = (uint8_t)(big >> 14);
    memset(b + n, 0x55, big);
    n += big;
    b[n++] = 0x0a;
    b[n++] = 1;
    b[n++] = 0x08;
    seen s = { 0 };
    tk_reader r;
    tk_reader_init(&r, NULL);
    for (size_t off = 0; off < n; off += 4096) {
        size_t k = n - off < 4096 ? n - off : 4096;
        assert_int_equal(tk_reader_feed(&r, b + off, k, on_packet, &s), TK_READ_OK);
    }
    assert_int_equal(tk_reader_finish(&r), TK_READ_OK);
    assert_int_equal(s.n, 1);
    assert_true(r.cap < 64 * 1024);
    tk_reader_free(&r);
    free(b);
}

static size_t deflate_buf(const uint8_t *in, size_t len, uint8_t *out, size_t cap, bool gzip)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, gzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t n = cap - zs.avail_out;
    deflateEnd(&zs);
    return n;
}

static void test_inflate(void **state)
{
    (void)state;
    /* records: 3-byte packet, empty packet, 300 KiB packet (wider than the
     * inflater's first window), then 2 trailing bytes that upstream ignores */
    const size_t big = 300 << 10;
    uint8_t *in = malloc(big + 64);
    size_t n = 0;
    in[n++] = 0x0a;
    in[n++] = 3;
    in[n++] = 0x08;
    in[n++] = 0x07;
    in[n++] = 0x50;
    in[n++] = 0x0a;
    in[n++] = 0x00;
    in[n++] = 0x0a;
    in[n++] = (uint8_t)(0x80 | (big & 0x7f));
    in[n++] = (uint8_t)(0x80 | ((big >> 7) & 0x7f));
    in[n++] = (uint8_t)(big >> 14);
    memset(in + n, 0x33, big);
    n += big;
    in[n++] = 0x0a;
    in[n++] = 0x05;
    size_t cap = big + 4096;
    uint8_t *z = malloc(cap);
    for (int gzip = 0; gzip < 2; gzip++) {
        size_t zn = deflate_buf(in, n, z, cap, gzip);
        tk_inflater *inf = tk_inflater_new(0);
        seen s = { 0 };
        uint64_t inflated = 0;
        assert_int_equal(tk_inflate_packets(inf, z, zn, 77, on_packet, &s, &inflated), TK_READ_OK);
        assert_int_equal(s.n, 3);
        assert_int_equal(s.lens[0], 3);
        assert_int_equal(s.lens[1], 0);
        assert_int_equal(s.lens[2], big);
        assert_int_equal(s.offsets[2], 77);
        assert_int_equal(inflated, n);
        /* reusable; a truncated stream fails */
        seen t = { 0 };
        assert_int_equal(tk_inflate_packets(inf, z, zn / 2, 0, on_packet, &t, NULL),
                         TK_READ_ERR_FORMAT);
        assert_non_null(strstr(tk_inflater_error(inf), "truncated"));
        /* the limit applies inside too */
        tk_inflater *small = tk_inflater_new(1000);
        seen u = { 0 };
        assert_int_equal(tk_inflate_packets(small, z, zn, 0, on_packet, &u, NULL),
                         TK_READ_ERR_TOO_BIG);
        tk_inflater_free(small);
        tk_inflater_free(inf);
    }
    /* not a packet tag, and not zlib at all */
    static const uint8_t junk[] = { 0x12, 0x01, 0x00, 0x0a, 0x00 };
    size_t zn = deflate_buf(junk, sizeof junk, z, cap, false);
    tk_inflater *inf = tk_inflater_new(0);
    seen s = { 0 };
    assert_int_equal(tk_inflate_packets(inf, z, zn, 0, on_packet, &s, NULL), TK_READ_ERR_FORMAT);
    assert_int_equal(
        tk_inflate_packets(inf, (const uint8_t *)"nonsense", 8, 0, on_packet, &s, NULL),
        TK_READ_ERR_FORMAT);
    tk_inflater_free(inf);
    free(z);
    free(in);
}

/* `n` bytes as one zstd frame, streamed without a pledged size (so the
 * frame header states the window, as traced's compressor writes it). */
static size_t zstd_buf(const uint8_t *in, size_t n, uint8_t *out, size_t cap, int window_log)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    assert_non_null(cc);
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3)));
    if (window_log)
        assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, window_log)));
    /* As traced does: the data with ZSTD_e_continue, then the end. */
    ZSTD_inBuffer ib = { in, n, 0 };
    ZSTD_outBuffer ob = { out, cap, 0 };
    while (ib.pos < ib.size)
        assert_false(ZSTD_isError(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_continue)));
    ZSTD_inBuffer none = { NULL, 0, 0 };
    size_t left;
    do {
        left = ZSTD_compressStream2(cc, &ob, &none, ZSTD_e_end);
        assert_false(ZSTD_isError(left));
    } while (left != 0);
    ZSTD_freeCCtx(cc);
    return ob.pos;
}

/* zstd_compressed_packets: the records of test_inflate through zstd, and
 * every way a frame can be bad. */
static void test_zstd(void **state)
{
    (void)state;
    const size_t big = 300 << 10;
    uint8_t *in = malloc(big + 64);
    size_t n = 0;
    in[n++] = 0x0a;
    in[n++] = 3;
    in[n++] = 0x08;
    in[n++] = 0x07;
    in[n++] = 0x50;
    in[n++] = 0x0a;
    in[n++] = 0x00;
    in[n++] = 0x0a;
    in[n++] = (uint8_t)(0x80 | (big & 0x7f));
    in[n++] = (uint8_t)(0x80 | ((big >> 7) & 0x7f));
    in[n++] = (uint8_t)(big >> 14);
    for (size_t i = 0; i < big; i++)
        in[n + i] = (uint8_t)(i * 7 + (i >> 9)); /* compresses, but not to nothing */
    n += big;
    in[n++] = 0x0a;
    in[n++] = 0x05;
    const size_t cap = ZSTD_compressBound(n) + 64;
    uint8_t *z = malloc(cap + 8);
    const size_t zn = zstd_buf(in, n, z, cap, 0);

    tk_inflater *inf = tk_inflater_new(0);
    seen s = { 0 };
    uint64_t inflated = 0;
    assert_int_equal(tk_decompress_packets(inf, TK_CODEC_ZSTD, z, zn, 77, on_packet, &s, &inflated),
                     TK_READ_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.lens[0], 3);
    assert_int_equal(s.lens[1], 0);
    assert_int_equal(s.lens[2], big);
    assert_int_equal(s.offsets[2], 77);
    assert_int_equal(inflated, n);

    /* Reusable; every damaged frame is a clear format error. */
    seen t = { 0 };
    assert_int_equal(tk_decompress_packets(inf, TK_CODEC_ZSTD, z, zn / 2, 0, on_packet, &t, NULL),
                     TK_READ_ERR_FORMAT);
    assert_non_null(strstr(tk_inflater_error(inf), "truncated"));
    assert_int_equal(tk_decompress_packets(inf, TK_CODEC_ZSTD, z, 4, 0, on_packet, &t, NULL),
                     TK_READ_ERR_FORMAT); /* the magic alone */
    memcpy(z + zn, "\x0a\x00", 2);
    assert_int_equal(tk_decompress_packets(inf, TK_CODEC_ZSTD, z, zn + 2, 0, on_packet, &t, NULL),
                     TK_READ_ERR_FORMAT);
    assert_non_null(strstr(tk_inflater_error(inf), "after the zstd frame"));
    assert_int_equal(tk_decompress_packets(inf, TK_CODEC_ZSTD, (const uint8_t *)"nonsense!", 9, 0,
                                           on_packet, &t, NULL),
                     TK_READ_ERR_FORMAT);
    assert_non_null(strstr(tk_inflater_error(inf), "zstd_compressed_packets at offset 0"));
    uint8_t *bad = malloc(zn);
    memcpy(bad, z, zn);
    for (size_t i = zn / 3; i < zn / 3 + 16; i++)
        bad[i] ^= 0x5a;
    assert_int_not_equal(tk_decompress_packets(inf, TK_CODEC_ZSTD, bad, zn, 0, on_packet, &t, NULL),
                         TK_READ_OK);
    free(bad);
    /* One trace, one codec (v58 refuses a mix). */
    uint8_t dz[64];
    size_t dn = deflate_buf(in, 7, dz, sizeof dz, false);
    assert_int_equal(tk_decompress_packets(inf, TK_CODEC_DEFLATE, dz, dn, 5, on_packet, &t, NULL),
                     TK_READ_ERR_FORMAT);
    assert_non_null(strstr(tk_inflater_error(inf), "mixes"));
    tk_inflater_free(inf);

    /* The packet size limit applies inside. */
    tk_inflater *small = tk_inflater_new(1000);
    seen u = { 0 };
    assert_int_equal(tk_decompress_packets(small, TK_CODEC_ZSTD, z, zn, 0, on_packet, &u, NULL),
                     TK_READ_ERR_TOO_BIG);
    tk_inflater_free(small);

    /* Past the byte limit, and used again after it: each call says why it
     * stopped (fuzz_toolkit_inflate found a second call failing with "no
     * error"). */
    tk_inflater *lim = tk_inflater_new(0);
    tk_inflate_limits l;
    tk_inflate_limits_default(&l);
    l.max_bytes = 1000;
    tk_inflater_set_limits(lim, &l);
    for (int round = 0; round < 2; round++) {
        seen r = { 0 };
        assert_int_equal(tk_decompress_packets(lim, TK_CODEC_ZSTD, z, zn, 9, on_packet, &r, NULL),
                         TK_READ_ERR_INFLATE_LIMIT);
        assert_non_null(strstr(tk_inflater_error(lim), "--max-inflated-bytes"));
    }
    tk_inflater_free(lim);

    /* A frame asking for a window over 2^TK_ZSTD_WINDOW_LOG_MAX is refused
     * before any memory is taken for it. */
    const size_t wn = zstd_buf(in, n, z, cap, TK_ZSTD_WINDOW_LOG_MAX + 1);
    tk_inflater *w = tk_inflater_new(0);
    seen v = { 0 };
    assert_int_equal(tk_decompress_packets(w, TK_CODEC_ZSTD, z, wn, 0, on_packet, &v, NULL),
                     TK_READ_ERR_FORMAT);
    print_message("window over the limit: %s\n", tk_inflater_error(w));
    tk_inflater_free(w);
    free(z);
    free(in);
}

/* The plainest reading of the wire format, one byte at a time: what
 * pb_reader's word-at-a-time varints and short-tag paths must agree with. */
typedef struct ref_reader {
    const uint8_t *p, *end;
    pb_error err;
} ref_reader;

static bool ref_varint(ref_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (r->p >= r->end) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        const uint8_t b = *r->p++;
        if (i == 9 && b > 1) {
            r->err = PB_ERR_VARINT_TOO_LONG;
            return false;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *out = v;
            return true;
        }
    }
    r->err = PB_ERR_VARINT_TOO_LONG;
    return false;
}

static bool ref_next(ref_reader *r, pb_field *f)
{
    uint64_t tag;
    if (r->p >= r->end || !ref_varint(r, &tag))
        return false;
    if ((tag >> 3) == 0 || (tag >> 3) > PB_MAX_FIELD_ID) {
        r->err = PB_ERR_BAD_FIELD_ID;
        return false;
    }
    f->id = (uint32_t)(tag >> 3);
    f->wire_type = (uint8_t)(tag & 7);
    f->data = NULL;
    size_t fixed = 0;
    switch (f->wire_type) {
    case PB_WIRE_VARINT:
        return ref_varint(r, &f->value);
    case PB_WIRE_LEN:
        if (!ref_varint(r, &f->value))
            return false;
        if (f->value > (uint64_t)(r->end - r->p)) {
            r->err = PB_ERR_TRUNCATED;
            return false;
        }
        f->data = r->p;
        r->p += f->value;
        return true;
    case PB_WIRE_FIXED64:
        fixed = 8;
        break;
    case PB_WIRE_FIXED32:
        fixed = 4;
        break;
    default:
        r->err = PB_ERR_BAD_WIRE_TYPE;
        return false;
    }
    if ((size_t)(r->end - r->p) < fixed) {
        r->err = PB_ERR_TRUNCATED;
        return false;
    }
    f->value = 0;
    for (size_t i = 0; i < fixed; i++)
        f->value |= (uint64_t)r->p[i] << (8 * i);
    r->p += fixed;
    return true;
}

/* pb_reader (and its tag/skip stepping) must agree with the byte-at-a-time
 * reading on every input: same fields, same values, same error, for random
 * bytes and for well-formed-ish messages with varints of every length. */
static void test_pb_reader_matches_reference(void **state)
{
    (void)state;
    uint64_t x = 0x243f6a8885a308d3ull;
    uint8_t buf[96];
    for (int round = 0; round < 200000; round++) {
        size_t len = 0;
        if (round & 1) {
            /* well-formed-ish: tags and varints of every length */
            while (len < sizeof buf - 16) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                uint32_t id = 1 + (uint32_t)(x % 1000);
                uint8_t wt = (uint8_t)((x >> 20) % 6);
                uint64_t tag = (uint64_t)id << 3 | wt;
                while (tag >= 0x80) {
                    buf[len++] = (uint8_t)(tag | 0x80);
                    tag >>= 7;
                }
                buf[len++] = (uint8_t)tag;
                uint64_t v = x >> ((x >> 40) & 63);
                if (wt == 2)
                    v &= 7;
                while (v >= 0x80 && len < sizeof buf - 1) {
                    buf[len++] = (uint8_t)(v | 0x80);
                    v >>= 7;
                }
                buf[len++] = (uint8_t)v;
                if (wt == 2)
                    len += (size_t)(x & 7) < sizeof buf - len ? (size_t)(x & 7) : 0;
            }
        } else {
            len = (size_t)(x % sizeof buf);
            for (size_t i = 0; i < len; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf[i] = (uint8_t)(x >> 24) | ((x & 3) ? 0x80 : 0);
            }
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t cut = len ? (size_t)(x % (len + 1)) : 0;
        pb_reader a;
        ref_reader b = { buf, buf + cut, PB_OK };
        pb_field fa, fb;
        pb_reader_init(&a, buf, cut);
        for (;;) {
            bool ra = pb_reader_next(&a, &fa);
            bool rb = ref_next(&b, &fb);
            assert_int_equal(ra, rb);
            if (!ra)
                break;
            assert_int_equal(fa.id, fb.id);
            assert_int_equal(fa.wire_type, fb.wire_type);
            assert_int_equal(fa.value, fb.value);
            assert_ptr_equal(fa.data, fb.data);
        }
        assert_int_equal(a.err, b.err);
        /* Tag/skip stepping ends where the reader ends. */
        pb_reader c;
        pb_reader_init(&c, buf, cut);
        uint32_t id;
        uint8_t wt;
        while (pb_reader_tag(&c, &id, &wt) && pb_reader_skip(&c, wt)) {
        }
        assert_int_equal(c.err, a.err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_byte_by_byte),
        cmocka_unit_test(test_pipe_tiny_blocks),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_skip_large_field),
        cmocka_unit_test(test_inflate),
        cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_pb_reader_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
