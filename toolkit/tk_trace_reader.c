/* SPDX-License-Identifier: MIT */
/* Trace tokenizer (file, pushed chunks, memory) and the compressed_packets
 * inflater. See tk_trace_reader.h for the record rules. */
#include "toolkit/tk_trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "protos/pb/pb_reader.h"

/* The tag of `Trace.packet` (field 1, length-delimited). */
#define TRACE_PACKET_TAG 0x0a

__attribute__((format(printf, 2, 3))) static void set_err(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, 200, fmt, ap);
    va_end(ap);
}

void tk_reader_init(tk_reader *r, const tk_reader_config *cfg)
{
    memset(r, 0, sizeof *r);
    if (cfg)
        r->cfg = *cfg;
    if (!r->cfg.block_size)
        r->cfg.block_size = TK_READER_DEFAULT_BLOCK;
    if (r->cfg.block_size < 64)
        r->cfg.block_size = 64;
    if (!r->cfg.max_packet_size)
        r->cfg.max_packet_size = TK_READER_DEFAULT_MAX_PACKET;
}

void tk_reader_free(tk_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->len = r->cap = 0;
}

const char *tk_reader_error(const tk_reader *r)
{
    return r->err[0] ? r->err : "no error";
}

/* Delivers every complete record of [p, p+n), which starts at input offset
 * `base`. Returns the bytes consumed; an incomplete record at the end is left
 * for later (r->need tells its size once the header is readable). */
static size_t tokenize(tk_reader *r, const uint8_t *p, size_t n, uint64_t base, tk_packet_cb cb,
                       void *ctx, tk_read_status *st)
{
    size_t pos = 0;
    const uint8_t *end = p + n;
    *st = TK_READ_OK;
    r->need = 0;
    if (r->skip_remaining) {
        size_t k = r->skip_remaining < n ? (size_t)r->skip_remaining : n;
        pos = k;
        r->skip_remaining -= k;
        if (r->skip_remaining)
            return pos;
    }
    while (pos < n) {
        const uint8_t *q = p + pos;
        const uint8_t *t = q;
        uint64_t tag;
        pb_error e = PB_OK;
        if (!pb_read_varint(&t, end, &tag, &e)) {
            if (e == PB_ERR_TRUNCATED)
                return pos;
            set_err(r->err, "offset %" PRIu64 ": malformed field tag", base + pos);
            *st = TK_READ_ERR_FORMAT;
            return pos;
        }
        if (PB_LIKELY(tag == TRACE_PACKET_TAG)) {
            uint64_t size;
            if (!pb_read_varint(&t, end, &size, &e)) {
                if (e == PB_ERR_TRUNCATED)
                    return pos;
                set_err(r->err, "offset %" PRIu64 ": malformed packet length", base + pos);
                *st = TK_READ_ERR_FORMAT;
                return pos;
            }
            size_t hdr = (size_t)(t - q);
            if (PB_UNLIKELY(size == 0)) {
                /* Upstream drops empty packets silently. */
                r->empty_packets++;
                pos += hdr;
                continue;
            }
            if (PB_UNLIKELY(size > r->cfg.max_packet_size)) {
                set_err(r->err,
                        "offset %" PRIu64 ": packet of %" PRIu64
                        " bytes exceeds the limit of %zu bytes (--max-packet-size)",
                        base + pos, size, r->cfg.max_packet_size);
                *st = TK_READ_ERR_TOO_BIG;
                return pos;
            }
            if (size > (uint64_t)(end - t)) {
                r->need = hdr + (size_t)size;
                return pos;
            }
            r->packets++;
            pos += hdr + (size_t)size;
            if (PB_UNLIKELY(!cb(ctx, t, (size_t)size, base + (uint64_t)(q - p)))) {
                *st = TK_READ_ERR_ABORTED;
                return pos;
            }
            continue;
        }
        /* Any other field is skipped, as trace_processor does. */
        uint64_t v;
        switch (tag & 7) {
        case PB_WIRE_VARINT:
            if (!pb_read_varint(&t, end, &v, &e)) {
                if (e == PB_ERR_TRUNCATED)
                    return pos;
                set_err(r->err, "offset %" PRIu64 ": malformed varint", base + pos);
                *st = TK_READ_ERR_FORMAT;
                return pos;
            }
            pos = (size_t)(t - p);
            break;
        case PB_WIRE_LEN:
            if (!pb_read_varint(&t, end, &v, &e)) {
                if (e == PB_ERR_TRUNCATED)
                    return pos;
                set_err(r->err, "offset %" PRIu64 ": malformed field length", base + pos);
                *st = TK_READ_ERR_FORMAT;
                return pos;
            }
            if (v <= (uint64_t)(end - t)) {
                pos = (size_t)(t - p) + (size_t)v;
            } else {
                /* Skip it as it streams past; no need to buffer it. */
                r->skip_remaining = v - (uint64_t)(end - t);
                pos = n;
            }
            break;
        case PB_WIRE_FIXED64:
            if (end - t < 8)
                return pos;
            pos = (size_t)(t - p) + 8;
            break;
        case PB_WIRE_FIXED32:
            if (end - t < 4)
                return pos;
            pos = (size_t)(t - p) + 4;
            break;
        default:
            set_err(r->err, "offset %" PRIu64 ": field with unknown wire type %u; not a trace?",
                    base + pos, (unsigned)(tag & 7));
            *st = TK_READ_ERR_FORMAT;
            return pos;
        }
        r->skipped_fields++;
    }
    return pos;
}

static bool reserve(tk_reader *r, size_t want)
{
    if (want <= r->cap)
        return true;
    size_t ncap = r->cap ? r->cap : 256;
    while (ncap < want)
        ncap *= 2;
    uint8_t *nb = realloc(r->buf, ncap);
    if (!nb) {
        set_err(r->err, "out of memory (buffer of %zu bytes)", ncap);
        return false;
    }
    r->buf = nb;
    r->cap = ncap;
    return true;
}

tk_read_status tk_reader_feed(tk_reader *r, const void *data, size_t len, tk_packet_cb cb,
                              void *ctx)
{
    const uint8_t *d = data;
    tk_read_status st;
    while (len > 0) {
        if (r->len == 0) {
            size_t used = tokenize(r, d, len, r->offset, cb, ctx, &st);
            r->offset += used;
            if (st != TK_READ_OK)
                return st;
            if (used < len) {
                if (!reserve(r, len - used))
                    return TK_READ_ERR_NOMEM;
                memcpy(r->buf, d + used, len - used);
                r->len = len - used;
            }
            return TK_READ_OK;
        }
        /* Complete the pending record first, copying only what it needs. */
        size_t want = r->need > r->len ? r->need - r->len : 32;
        if (want > len)
            want = len;
        if (!reserve(r, r->len + want))
            return TK_READ_ERR_NOMEM;
        memcpy(r->buf + r->len, d, want);
        r->len += want;
        d += want;
        len -= want;
        size_t used = tokenize(r, r->buf, r->len, r->offset, cb, ctx, &st);
        r->offset += used;
        memmove(r->buf, r->buf + used, r->len - used);
        r->len -= used;
        if (st != TK_READ_OK)
            return st;
    }
    return TK_READ_OK;
}

tk_read_status tk_reader_finish(tk_reader *r)
{
    if (r->len || r->skip_remaining) {
        if (r->need)
            set_err(r->err,
                    "truncated: input ends inside the packet record at offset %" PRIu64
                    " (%zu of its %zu bytes present)",
                    r->offset, r->len, r->need);
        else
            set_err(r->err, "truncated: input ends inside a record at offset %" PRIu64, r->offset);
        return TK_READ_ERR_TRUNCATED;
    }
    return TK_READ_OK;
}

tk_read_status tk_reader_parse_buffer(tk_reader *r, const void *data, size_t len, tk_packet_cb cb,
                                      void *ctx)
{
    tk_read_status st;
    size_t used = tokenize(r, data, len, r->offset, cb, ctx, &st);
    r->offset += used;
    if (st != TK_READ_OK)
        return st;
    if (used < len) {
        r->len = len - used; /* for the message only */
        tk_read_status t = tk_reader_finish(r);
        r->len = 0;
        return t;
    }
    return tk_reader_finish(r);
}

tk_read_status tk_reader_read_fd(tk_reader *r, int fd, tk_packet_cb cb, void *ctx,
                                 tk_progress_cb progress, void *progress_ctx)
{
    const size_t block = r->cfg.block_size;
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    if (!reserve(r, block))
        return TK_READ_ERR_NOMEM;
    for (;;) {
        /* Room for a whole block, or for the pending record if larger. */
        size_t want = r->len + block;
        if (r->need > want)
            want = r->need;
        if (!reserve(r, want))
            return TK_READ_ERR_NOMEM;
        ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_err(r->err, "read error: %s", strerror(errno));
            return TK_READ_ERR_IO;
        }
        if (n == 0)
            return tk_reader_finish(r);
        r->len += (size_t)n;
        tk_read_status st;
        size_t used = tokenize(r, r->buf, r->len, r->offset, cb, ctx, &st);
        r->offset += used;
        if (used) {
            memmove(r->buf, r->buf + used, r->len - used);
            r->len -= used;
        }
        if (st != TK_READ_OK)
            return st; /* offset + len: the bytes read so far, each once */
        if (progress)
            progress(progress_ctx, r->offset + r->len);
    }
}

/* ---- compressed_packets -------------------------------------------------------- */

struct tk_inflater {
    z_stream zs;
    bool ready;
    uint8_t *out;
    size_t cap, len;
    size_t max_packet;
    tk_inflate_limits lim;
    uint64_t total_in, total_out; /* over every field inflated */
    char err[200];
};

void tk_inflate_limits_default(tk_inflate_limits *l)
{
    l->max_bytes = TK_INFLATE_DEFAULT_MAX_BYTES;
    l->max_ratio = TK_INFLATE_DEFAULT_MAX_RATIO;
    l->ratio_floor = TK_INFLATE_DEFAULT_RATIO_FLOOR;
}

tk_inflater *tk_inflater_new(size_t max_packet_size)
{
    tk_inflater *z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    z->max_packet = max_packet_size ? max_packet_size : TK_READER_DEFAULT_MAX_PACKET;
    tk_inflate_limits_default(&z->lim);
    return z;
}

void tk_inflater_set_limits(tk_inflater *z, const tk_inflate_limits *l)
{
    z->lim = *l;
}

/* Inflated bytes allowed in total now, given the compressed bytes seen. */
static uint64_t inflate_allowance(const tk_inflater *z)
{
    uint64_t allowed = UINT64_MAX;
    if (z->lim.max_ratio) {
        uint64_t by_ratio;
        if (__builtin_mul_overflow(z->total_in, (uint64_t)z->lim.max_ratio, &by_ratio))
            by_ratio = UINT64_MAX;
        if (by_ratio < z->lim.ratio_floor)
            by_ratio = z->lim.ratio_floor;
        allowed = by_ratio;
    }
    if (z->lim.max_bytes && z->lim.max_bytes < allowed)
        allowed = z->lim.max_bytes;
    return allowed;
}

static void set_limit_err(tk_inflater *z, uint64_t offset)
{
    if (z->lim.max_bytes && z->total_out > z->lim.max_bytes)
        set_err(z->err,
                "compressed_packets at offset %" PRIu64 ": the inflated data exceeds "
                "%" PRIu64 " bytes (--max-inflated-bytes); not checked further",
                offset, z->lim.max_bytes);
    else
        set_err(z->err,
                "compressed_packets at offset %" PRIu64 ": inflates to more than %u "
                "times its compressed size (over %" PRIu64 " bytes from %" PRIu64
                " compressed; --max-inflate-ratio): a decompression bomb? not checked further",
                offset, z->lim.max_ratio, z->total_out - 1, z->total_in);
}

void tk_inflater_free(tk_inflater *z)
{
    if (!z)
        return;
    if (z->ready)
        inflateEnd(&z->zs);
    free(z->out);
    free(z);
}

const char *tk_inflater_error(const tk_inflater *z)
{
    return z->err[0] ? z->err : "no error";
}

/* Delivers the complete records in z->out; keeps the rest. With `done`,
 * anything but up to two trailing bytes must be complete. */
static tk_read_status drain_records(tk_inflater *z, bool done, uint64_t offset, tk_packet_cb cb,
                                    void *ctx)
{
    size_t pos = 0;
    const uint8_t *end = z->out + z->len;
    tk_read_status st = TK_READ_OK;
    while (z->len - pos > 2) {
        const uint8_t *q = z->out + pos;
        if (*q != TRACE_PACKET_TAG) {
            set_err(z->err,
                    "compressed_packets at offset %" PRIu64
                    ": expected a packet tag in the inflated data",
                    offset);
            st = TK_READ_ERR_FORMAT;
            break;
        }
        const uint8_t *t = q + 1;
        uint64_t size;
        pb_error e = PB_OK;
        if (!pb_read_varint(&t, end, &size, &e)) {
            if (e == PB_ERR_TRUNCATED && !done)
                break;
            set_err(z->err, "compressed_packets at offset %" PRIu64 ": invalid packet size",
                    offset);
            st = TK_READ_ERR_FORMAT;
            break;
        }
        if (size > z->max_packet) {
            set_err(z->err,
                    "compressed_packets at offset %" PRIu64 ": packet of %" PRIu64
                    " bytes exceeds the limit of %zu bytes",
                    offset, size, z->max_packet);
            st = TK_READ_ERR_TOO_BIG;
            break;
        }
        if (size > (uint64_t)(end - t)) {
            if (!done)
                break;
            set_err(z->err, "compressed_packets at offset %" PRIu64 ": invalid packet size",
                    offset);
            st = TK_READ_ERR_FORMAT;
            break;
        }
        pos = (size_t)(t - z->out) + (size_t)size;
        if (!cb(ctx, t, (size_t)size, offset)) {
            st = TK_READ_ERR_ABORTED;
            break;
        }
    }
    memmove(z->out, z->out + pos, z->len - pos);
    z->len -= pos;
    return st;
}

tk_read_status tk_inflate_packets(tk_inflater *z, const uint8_t *data, size_t len, uint64_t offset,
                                  tk_packet_cb cb, void *ctx, uint64_t *inflated)
{
    z->err[0] = 0;
    int zr;
    if (!z->ready) {
        memset(&z->zs, 0, sizeof z->zs);
        /* 32 + 15: accept a zlib or a gzip header, like upstream. */
        zr = inflateInit2(&z->zs, 32 + 15);
        if (zr != Z_OK) {
            set_err(z->err, "zlib initialisation failed");
            return TK_READ_ERR_NOMEM;
        }
        z->ready = true;
    } else {
        inflateReset(&z->zs);
    }
    if (!z->out) {
        z->cap = 256 << 10;
        z->out = malloc(z->cap);
        if (!z->out) {
            z->cap = 0;
            set_err(z->err, "out of memory");
            return TK_READ_ERR_NOMEM;
        }
    }
    z->len = 0;
    if (len > UINT32_MAX) {
        set_err(z->err, "compressed_packets at offset %" PRIu64 ": field too large", offset);
        return TK_READ_ERR_TOO_BIG;
    }
    z->zs.next_in = (Bytef *)(uintptr_t)data;
    z->zs.avail_in = (uInt)len;
    z->total_in += len;
    const uint64_t allowed = inflate_allowance(z);
    for (;;) {
        if (z->len == z->cap) {
            /* One record fills the window: widen it up to the packet limit. */
            size_t ncap = z->cap * 2;
            if (ncap > z->max_packet + 16)
                ncap = z->max_packet + 16;
            uint8_t *no = ncap > z->cap ? realloc(z->out, ncap) : NULL;
            if (!no) {
                set_err(z->err,
                        "compressed_packets at offset %" PRIu64 ": inflated packet too large",
                        offset);
                return TK_READ_ERR_TOO_BIG;
            }
            z->out = no;
            z->cap = ncap;
        }
        size_t room = z->cap - z->len;
        if (room > UINT32_MAX)
            room = UINT32_MAX;
        /* Never more than one byte past the allowance: enough to tell that
         * the stream goes on beyond it. */
        if (allowed != UINT64_MAX && room > allowed - z->total_out + 1)
            room = (size_t)(allowed - z->total_out + 1);
        z->zs.next_out = z->out + z->len;
        z->zs.avail_out = (uInt)room;
        zr = inflate(&z->zs, Z_NO_FLUSH);
        size_t produced = room - z->zs.avail_out;
        z->len += produced;
        z->total_out += produced;
        if (inflated)
            *inflated += produced;
        if (z->total_out > allowed) {
            set_limit_err(z, offset);
            return TK_READ_ERR_INFLATE_LIMIT;
        }
        bool done = zr == Z_STREAM_END;
        if (zr != Z_OK && zr != Z_STREAM_END) {
            if (zr == Z_BUF_ERROR)
                set_err(z->err,
                        "compressed_packets at offset %" PRIu64 ": compressed stream is truncated",
                        offset);
            else
                set_err(z->err, "compressed_packets at offset %" PRIu64 ": %s", offset,
                        z->zs.msg ? z->zs.msg : "inflate failed");
            return TK_READ_ERR_FORMAT;
        }
        tk_read_status st = drain_records(z, done, offset, cb, ctx);
        if (st != TK_READ_OK)
            return st;
        if (done)
            return TK_READ_OK;
    }
}
