/* SPDX-License-Identifier: MIT */
/* The compressed-packet expander (tk_inflate.h): deflate through zlib,
 * zstd through libzstd, one bounded output window and one set of limits
 * for both. */
#include "toolkit/tk_inflate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "protos/pb/pb_reader.h"

/* The tag of `Trace.packet` (field 1, length-delimited). */
#define TRACE_PACKET_TAG 0x0a

struct tk_inflater {
    z_stream zs;
    bool zs_ready;
    ZSTD_DStream *zd;
    bool codec_seen; /* `codec` is the codec of the first field */
    tk_codec codec;
    uint8_t *out;
    size_t cap, len;
    size_t max_packet;
    tk_inflate_limits lim;
    uint64_t total_in, total_out; /* over every field expanded */
    char err[200];
};

__attribute__((format(printf, 2, 3))) static void set_err(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, 200, fmt, ap);
    va_end(ap);
}

void tk_inflate_limits_default(tk_inflate_limits *l)
{
    l->max_bytes = TK_INFLATE_DEFAULT_MAX_BYTES;
    l->max_ratio = TK_INFLATE_DEFAULT_MAX_RATIO;
    l->ratio_floor = TK_INFLATE_DEFAULT_RATIO_FLOOR;
}

const char *tk_codec_field(tk_codec codec)
{
    return codec == TK_CODEC_ZSTD ? "zstd_compressed_packets" : "compressed_packets";
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

/* Expanded bytes allowed in total now, given the compressed bytes seen. */
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

static void set_limit_err(tk_inflater *z, tk_codec codec, uint64_t offset)
{
    if (z->lim.max_bytes && z->total_out > z->lim.max_bytes)
        set_err(z->err,
                "%s at offset %" PRIu64 ": the expanded data exceeds "
                "%" PRIu64 " bytes (--max-inflated-bytes); not checked further",
                tk_codec_field(codec), offset, z->lim.max_bytes);
    else
        set_err(z->err,
                "%s at offset %" PRIu64 ": expands to more than %u "
                "times its compressed size (over %" PRIu64 " bytes from %" PRIu64
                " compressed; --max-inflate-ratio): a decompression bomb? not checked further",
                tk_codec_field(codec), offset, z->lim.max_ratio, z->total_out - 1, z->total_in);
}

void tk_inflater_free(tk_inflater *z)
{
    if (!z)
        return;
    if (z->zs_ready)
        inflateEnd(&z->zs);
    ZSTD_freeDStream(z->zd);
    free(z->out);
    free(z);
}

const char *tk_inflater_error(const tk_inflater *z)
{
    return z->err[0] ? z->err : "no error";
}

/* Delivers the complete records in z->out; keeps the rest. With `done`,
 * anything but up to two trailing bytes must be complete. */
static tk_read_status drain_records(tk_inflater *z, tk_codec codec, bool done, uint64_t offset,
                                    tk_packet_cb cb, void *ctx)
{
    size_t pos = 0;
    const uint8_t *end = z->out + z->len;
    const char *field = tk_codec_field(codec);
    tk_read_status st = TK_READ_OK;
    while (z->len - pos > 2) {
        const uint8_t *q = z->out + pos;
        if (*q != TRACE_PACKET_TAG) {
            set_err(z->err, "%s at offset %" PRIu64 ": expected a packet tag in the expanded data",
                    field, offset);
            st = TK_READ_ERR_FORMAT;
            break;
        }
        const uint8_t *t = q + 1;
        uint64_t size;
        pb_error e = PB_OK;
        if (!pb_read_varint(&t, end, &size, &e)) {
            if (e == PB_ERR_TRUNCATED && !done)
                break;
            set_err(z->err, "%s at offset %" PRIu64 ": invalid packet size", field, offset);
            st = TK_READ_ERR_FORMAT;
            break;
        }
        if (size > z->max_packet) {
            set_err(z->err,
                    "%s at offset %" PRIu64 ": packet of %" PRIu64
                    " bytes exceeds the limit of %zu bytes",
                    field, offset, size, z->max_packet);
            st = TK_READ_ERR_TOO_BIG;
            break;
        }
        if (size > (uint64_t)(end - t)) {
            if (!done)
                break;
            set_err(z->err, "%s at offset %" PRIu64 ": invalid packet size", field, offset);
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

/* Room for the next step of output: the window widened when one record
 * fills it (up to the packet limit), and never more than one byte past
 * the allowance (enough to tell that the stream goes on beyond it). 0 with
 * the error set when the window cannot grow or the allowance is spent
 * (room_status says which). */
static size_t output_room(tk_inflater *z, tk_codec codec, uint64_t allowed, uint64_t offset)
{
    if (z->len == z->cap) {
        size_t ncap = z->cap * 2;
        if (ncap > z->max_packet + 16)
            ncap = z->max_packet + 16;
        uint8_t *no = ncap > z->cap ? realloc(z->out, ncap) : NULL;
        if (!no) {
            set_err(z->err, "%s at offset %" PRIu64 ": expanded packet too large",
                    tk_codec_field(codec), offset);
            return 0;
        }
        z->out = no;
        z->cap = ncap;
    }
    if (z->total_out > allowed) {
        /* Past the allowance already: a call before this one stopped
         * there, and the inflater is being used again. */
        set_limit_err(z, codec, offset);
        return 0;
    }
    size_t room = z->cap - z->len;
    if (room > UINT32_MAX)
        room = UINT32_MAX;
    if (allowed != UINT64_MAX && room > allowed - z->total_out + 1)
        room = (size_t)(allowed - z->total_out + 1);
    return room;
}

/* Why output_room gave no room. */
static tk_read_status room_status(const tk_inflater *z, uint64_t allowed)
{
    return z->total_out > allowed ? TK_READ_ERR_INFLATE_LIMIT : TK_READ_ERR_TOO_BIG;
}

/* Counts `produced` bytes; false (error set) once beyond the allowance. */
static bool account(tk_inflater *z, tk_codec codec, size_t produced, uint64_t allowed,
                    uint64_t offset, uint64_t *inflated)
{
    z->len += produced;
    z->total_out += produced;
    if (inflated)
        *inflated += produced;
    if (z->total_out > allowed) {
        set_limit_err(z, codec, offset);
        return false;
    }
    return true;
}

static tk_read_status inflate_deflate(tk_inflater *z, const uint8_t *data, size_t len,
                                      uint64_t offset, tk_packet_cb cb, void *ctx,
                                      uint64_t *inflated)
{
    int zr;
    if (!z->zs_ready) {
        memset(&z->zs, 0, sizeof z->zs);
        /* 32 + 15: accept a zlib or a gzip header, like upstream. */
        zr = inflateInit2(&z->zs, 32 + 15);
        if (zr != Z_OK) {
            set_err(z->err, "zlib initialisation failed");
            return TK_READ_ERR_NOMEM;
        }
        z->zs_ready = true;
    } else {
        inflateReset(&z->zs);
    }
    if (len > UINT32_MAX) {
        set_err(z->err, "compressed_packets at offset %" PRIu64 ": field too large", offset);
        return TK_READ_ERR_TOO_BIG;
    }
    z->zs.next_in = (Bytef *)(uintptr_t)data;
    z->zs.avail_in = (uInt)len;
    const uint64_t allowed = inflate_allowance(z);
    for (;;) {
        size_t room = output_room(z, TK_CODEC_DEFLATE, allowed, offset);
        if (!room)
            return room_status(z, allowed);
        z->zs.next_out = z->out + z->len;
        z->zs.avail_out = (uInt)room;
        zr = inflate(&z->zs, Z_NO_FLUSH);
        if (!account(z, TK_CODEC_DEFLATE, room - z->zs.avail_out, allowed, offset, inflated))
            return TK_READ_ERR_INFLATE_LIMIT;
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
        tk_read_status st = drain_records(z, TK_CODEC_DEFLATE, done, offset, cb, ctx);
        if (st != TK_READ_OK)
            return st;
        if (done)
            return TK_READ_OK;
    }
}

static tk_read_status inflate_zstd(tk_inflater *z, const uint8_t *data, size_t len, uint64_t offset,
                                   tk_packet_cb cb, void *ctx, uint64_t *inflated)
{
    if (!z->zd) {
        z->zd = ZSTD_createDStream();
        if (!z->zd || ZSTD_isError(ZSTD_DCtx_setParameter(z->zd, ZSTD_d_windowLogMax,
                                                          TK_ZSTD_WINDOW_LOG_MAX))) {
            set_err(z->err, "zstd initialisation failed");
            return TK_READ_ERR_NOMEM;
        }
    } else {
        ZSTD_DCtx_reset(z->zd, ZSTD_reset_session_only);
    }
    ZSTD_inBuffer in = { data, len, 0 };
    const uint64_t allowed = inflate_allowance(z);
    for (;;) {
        size_t room = output_room(z, TK_CODEC_ZSTD, allowed, offset);
        if (!room)
            return room_status(z, allowed);
        ZSTD_outBuffer out = { z->out + z->len, room, 0 };
        size_t zr = ZSTD_decompressStream(z->zd, &out, &in);
        if (!account(z, TK_CODEC_ZSTD, out.pos, allowed, offset, inflated))
            return TK_READ_ERR_INFLATE_LIMIT;
        if (ZSTD_isError(zr)) {
            set_err(z->err, "zstd_compressed_packets at offset %" PRIu64 ": %s", offset,
                    ZSTD_getErrorName(zr));
            return TK_READ_ERR_FORMAT;
        }
        /* 0: the frame is decoded and all of it delivered. */
        const bool done = zr == 0;
        if (done && in.pos < in.size) {
            set_err(z->err,
                    "zstd_compressed_packets at offset %" PRIu64
                    ": %zu byte(s) after the zstd frame (a field holds one frame)",
                    offset, in.size - in.pos);
            return TK_READ_ERR_FORMAT;
        }
        if (!done && in.pos == in.size && out.pos < out.size) {
            /* All input taken, room left, and the frame is not finished. */
            set_err(z->err,
                    "zstd_compressed_packets at offset %" PRIu64 ": compressed stream is truncated",
                    offset);
            return TK_READ_ERR_FORMAT;
        }
        tk_read_status st = drain_records(z, TK_CODEC_ZSTD, done, offset, cb, ctx);
        if (st != TK_READ_OK)
            return st;
        if (done)
            return TK_READ_OK;
    }
}

tk_read_status tk_decompress_packets(tk_inflater *z, tk_codec codec, const uint8_t *data,
                                     size_t len, uint64_t offset, tk_packet_cb cb, void *ctx,
                                     uint64_t *inflated)
{
    z->err[0] = 0;
    if (z->codec_seen && z->codec != codec) {
        set_err(z->err,
                "%s at offset %" PRIu64 ": the trace mixes compressed_packets and "
                "zstd_compressed_packets (trace_processor refuses that too)",
                tk_codec_field(codec), offset);
        return TK_READ_ERR_FORMAT;
    }
    z->codec_seen = true;
    z->codec = codec;
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
    z->total_in += len;
    if (codec == TK_CODEC_ZSTD)
        return inflate_zstd(z, data, len, offset, cb, ctx, inflated);
    return inflate_deflate(z, data, len, offset, cb, ctx, inflated);
}

tk_read_status tk_inflate_packets(tk_inflater *z, const uint8_t *data, size_t len, uint64_t offset,
                                  tk_packet_cb cb, void *ctx, uint64_t *inflated)
{
    return tk_decompress_packets(z, TK_CODEC_DEFLATE, data, len, offset, cb, ctx, inflated);
}
