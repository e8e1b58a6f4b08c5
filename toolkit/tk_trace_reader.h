/* SPDX-License-Identifier: MIT */
/* Streaming Perfetto trace reader: splits a trace (a `Trace` message, i.e.
 * a run of `packet = 1` records) into TracePackets without ever holding more
 * than one block plus the largest packet in memory. Input comes from a file
 * descriptor (read in blocks; pipes are fine), from pushed chunks, or from
 * one in-memory buffer (zero copy).
 *
 * Top-level records follow trace_processor's tokenizer (proto_trace_tokenizer.h,
 * v47): fields other than `packet` are skipped whatever their number, empty
 * packets are dropped, group/reserved wire types are an error. Unlike
 * trace_processor, a file that ends inside a record is reported as truncated.
 *
 * Compressed packets (compressed_packets, zstd_compressed_packets) are
 * expanded by tk_inflate.h.
 *
 * No glib, libc only. */
#ifndef TK_TRACE_READER_H
#define TK_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TK_READER_DEFAULT_BLOCK      (4u << 20)
#define TK_READER_DEFAULT_MAX_PACKET (32u << 20)

typedef enum tk_read_status {
    TK_READ_OK = 0,
    TK_READ_ERR_IO,        /* read() failed */
    TK_READ_ERR_FORMAT,    /* not a well-formed Trace */
    TK_READ_ERR_TRUNCATED, /* input ended inside a record */
    TK_READ_ERR_TOO_BIG,   /* a packet above max_packet_size */
    TK_READ_ERR_NOMEM,
    TK_READ_ERR_ABORTED,       /* the packet callback asked to stop */
    TK_READ_ERR_INFLATE_LIMIT, /* compressed_packets expand beyond tk_inflate_limits */
} tk_read_status;

/* Called for every packet, in file order. `offset` is the position of the
 * packet's record in the input (for packets from compressed_packets: of the
 * compressed packet). Return false to stop reading (TK_READ_ERR_ABORTED). */
typedef bool (*tk_packet_cb)(void *ctx, const uint8_t *data, size_t len, uint64_t offset);

/* Progress for long inputs: total bytes consumed so far. */
typedef void (*tk_progress_cb)(void *ctx, uint64_t bytes);

typedef struct tk_reader_config {
    size_t block_size;      /* read() size; 0 = default */
    size_t max_packet_size; /* 0 = default */
} tk_reader_config;

typedef struct tk_reader {
    tk_reader_config cfg;
    uint8_t *buf; /* pending bytes of an incomplete record (push mode, fd mode) */
    size_t len;
    size_t cap;
    uint64_t offset;         /* input offset of buf[0] / of the next byte */
    uint64_t skip_remaining; /* bytes of a skipped non-packet field still to come */
    size_t need;             /* size of the incomplete record at the front, if known */
    uint64_t packets;        /* records delivered */
    uint64_t skipped_fields; /* non-packet top-level fields */
    uint64_t empty_packets;
    char err[200];
} tk_reader;

void tk_reader_init(tk_reader *r, const tk_reader_config *cfg);
void tk_reader_free(tk_reader *r);
const char *tk_reader_error(const tk_reader *r);

/* Pushes the next chunk of input; complete packets are delivered at once. */
tk_read_status tk_reader_feed(tk_reader *r, const void *data, size_t len, tk_packet_cb cb,
                              void *ctx);
/* End of input: fails with TK_READ_ERR_TRUNCATED if a record is incomplete. */
tk_read_status tk_reader_finish(tk_reader *r);

/* Whole input in memory: feed + finish without copying. */
tk_read_status tk_reader_parse_buffer(tk_reader *r, const void *data, size_t len, tk_packet_cb cb,
                                      void *ctx);

/* Reads `fd` to the end in blocks. `progress` may be NULL. */
tk_read_status tk_reader_read_fd(tk_reader *r, int fd, tk_packet_cb cb, void *ctx,
                                 tk_progress_cb progress, void *progress_ctx);

#endif /* TK_TRACE_READER_H */
