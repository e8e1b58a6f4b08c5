/* SPDX-License-Identifier: MIT */
/* Fuzz target: the compressed-packet expander (toolkit/tk_inflate.c) on its
 * own, zstd frames and deflate streams as they sit in
 * zstd_compressed_packets and compressed_packets. Input: one byte of
 * options, then the payload. Option bit 0 picks deflate (1) or zstd (0),
 * bit 1 tight limits (64 KiB in all, 512-byte packets), bit 2 feeds the
 * payload twice through one inflater (reuse after success or failure).
 * Seeds: corpus/toolkit_inflate/ (make_traces --inflate-seeds DIR).
 * Any crash, sanitizer report, leak, a failure without a message or more
 * output than the limits allow is a bug. */
#include <stdint.h>
#include <stdlib.h>

#include "toolkit/tk_inflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct totals {
    uint64_t packets, bytes;
    size_t max_packet;
} totals;

static volatile uint8_t sink;

static bool on_packet(void *ctx, const uint8_t *data, size_t len, uint64_t offset)
{
    totals *t = ctx;
    (void)offset;
    if (len > t->max_packet || (len && !data))
        abort();
    /* Touch every byte (a sanitizer sees reads past the window). */
    uint8_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum ^= data[i];
    sink ^= sum;
    t->packets++;
    t->bytes += len;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t opts = data[0];
    const tk_codec codec = (opts & 1) ? TK_CODEC_DEFLATE : TK_CODEC_ZSTD;
    tk_inflate_limits lim;
    tk_inflate_limits_default(&lim);
    lim.max_bytes = (opts & 2) ? 65536 : 4u << 20;
    totals t = { .max_packet = (opts & 2) ? 512 : 65536 };
    tk_inflater *z = tk_inflater_new(t.max_packet);
    if (!z)
        return 0;
    tk_inflater_set_limits(z, &lim);
    for (int round = 0; round < ((opts & 4) ? 2 : 1); round++) {
        uint64_t expanded = 0;
        tk_read_status st =
            tk_decompress_packets(z, codec, data + 1, size - 1, 0, on_packet, &t, &expanded);
        if (st != TK_READ_OK && tk_inflater_error(z)[0] == 'n') /* "no error" */
            abort();
    }
    /* The limits hold over both rounds, one byte over at most. */
    if (t.bytes > lim.max_bytes + 1)
        abort();
    tk_inflater_free(z);
    return 0;
}
