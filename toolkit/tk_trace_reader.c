/* SPDX-License-Identifier: MIT */
/* Trace tokenizer (file, pushed chunks, memory). See tk_trace_reader.h
 * for the record rules; compressed packets: tk_inflate.c. */
#include "toolkit/tk_trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
