/* SPDX-License-Identifier: MIT */
/* Expanding compressed packets, as trace_processor does:
 *  - compressed_packets (TracePacket field 50): a zlib or gzip stream
 *    (deflate; Perfetto v47 and v58);
 *  - zstd_compressed_packets (field 133): one zstd frame (v58's traced
 *    writes them when TraceConfig.compression asks for zstd; v47's
 *    trace_processor skips the field, v58's expands it).
 * Either expands to a run of `packet` records: each must start with the
 * single tag byte 0x0a, and the last at most two bytes are ignored, as
 * upstream. Like v58, one trace may use one of the two codecs only, and a
 * zstd field holds exactly one frame (input after it is an error).
 *
 * The expansion is incremental, through a bounded window, and bounded in
 * total (tk_inflate_limits), the same bounds for both codecs.
 * No glib; zlib and libzstd. */
#ifndef TK_INFLATE_H
#define TK_INFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "toolkit/tk_trace_reader.h"

/* What compressed packets may expand to, over all the fields one inflater
 * sees (one input file), whatever their codec. A few hundred bytes of
 * deflate or zstd can expand a thousandfold, into millions of tiny packets:
 * without a bound a small file keeps the checker busy for minutes. With the
 * ratio bound the expanded total, and so the work, stays proportional to
 * the input's size. */
typedef struct tk_inflate_limits {
    uint64_t max_bytes;   /* expanded bytes in total; 0 = no limit */
    uint32_t max_ratio;   /* expanded total <= max_ratio x compressed total; 0 = no limit */
    uint64_t ratio_floor; /* expanded bytes allowed whatever the ratio */
} tk_inflate_limits;

#define TK_INFLATE_DEFAULT_MAX_BYTES   (1ull << 30)
#define TK_INFLATE_DEFAULT_MAX_RATIO   100u
#define TK_INFLATE_DEFAULT_RATIO_FLOOR (16ull << 20)

/* The largest zstd window a frame may ask for, as a power of two: 2^27 =
 * 128 MiB, zstd's own default limit and what traced's highest level (22)
 * uses. A frame that asks for more is refused (memory stays bounded). */
#define TK_ZSTD_WINDOW_LOG_MAX 27

void tk_inflate_limits_default(tk_inflate_limits *l);

typedef enum tk_codec {
    TK_CODEC_DEFLATE, /* compressed_packets */
    TK_CODEC_ZSTD,    /* zstd_compressed_packets */
} tk_codec;

/* The TracePacket field a codec's payloads come in, for messages. */
const char *tk_codec_field(tk_codec codec);

typedef struct tk_inflater tk_inflater;

/* The new inflater has the default limits. */
tk_inflater *tk_inflater_new(size_t max_packet_size);
void tk_inflater_free(tk_inflater *z);
void tk_inflater_set_limits(tk_inflater *z, const tk_inflate_limits *l);

/* Expands one compressed payload of `codec` and delivers each packet
 * inside. On failure returns the status and leaves a message in
 * tk_inflater_error(): TK_READ_ERR_INFLATE_LIMIT once the limits are
 * exceeded (packets of the window that crossed them are not delivered),
 * TK_READ_ERR_FORMAT for a damaged or truncated stream, or for a codec
 * other than the one this inflater saw first. Bytes expanded so far are
 * added to *inflated (may be NULL). */
tk_read_status tk_decompress_packets(tk_inflater *z, tk_codec codec, const uint8_t *data,
                                     size_t len, uint64_t offset, tk_packet_cb cb, void *ctx,
                                     uint64_t *inflated);
/* tk_decompress_packets with TK_CODEC_DEFLATE (compressed_packets). */
tk_read_status tk_inflate_packets(tk_inflater *z, const uint8_t *data, size_t len, uint64_t offset,
                                  tk_packet_cb cb, void *ctx, uint64_t *inflated);
const char *tk_inflater_error(const tk_inflater *z);

#endif /* TK_INFLATE_H */
