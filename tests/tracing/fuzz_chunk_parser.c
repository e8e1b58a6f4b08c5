/* SPDX-License-Identifier: MIT */
/* Fuzz target: hostile producers against the service side. The input is a
 * little program of operations on a central buffer (copy a chunk with
 * arbitrary header fields and bytes, patch, read, final read) plus, when it
 * asks for it, a raw SMB image handed to the scraper and the chunk mover.
 * Whatever happens, every packet read back must be a well-formed protobuf
 * message without service-only fields: corrupt input is counted and
 * skipped, never emitted (and never read out of bounds: ASan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tracing/fuzz_cb_check.h"
#include "tracing/smb_service.h"
#include "tracing/trace_buffer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct input {
    const uint8_t *p, *end;
} input;

static uint8_t byte(input *in)
{
    return in->p < in->end ? *in->p++ : 0;
}

static uint16_t u16(input *in)
{
    return (uint16_t)(byte(in) | byte(in) << 8);
}

static uint32_t producer_of(void *ctx, uint16_t writer_id)
{
    (void)ctx;
    return writer_id & 1;
}

static void smb_ops(cb_buffer *cb, input *in)
{
    /* Two 4 KiB pages taken verbatim from the input. */
    const size_t size = 8192;
    uint8_t *mem = aligned_alloc(4096, size);
    memset(mem, 0, size);
    size_t n = (size_t)(in->end - in->p) < size ? (size_t)(in->end - in->p) : size;
    memcpy(mem, in->p, n);
    in->p += n;
    smb_abi abi;
    uint8_t *scratch = malloc(SMB_MAX_PAGE_SIZE);
    if (smb_abi_init(&abi, mem, size, 4096)) {
        svc_scrape(&abi, cb, producer_of, NULL, scratch);
        for (uint32_t page = 0; page < 3; page++)
            for (uint32_t c = 0; c < 15; c++)
                svc_move_chunk(&abi, cb, 0, page, c);
    }
    free(scratch);
    free(mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = { data, data + size };
    uint8_t mode = byte(&in);
    cb_buffer *cb = cb_create(mode & 1 ? 4096 : 16384, mode & 2 ? CB_DISCARD : CB_RING_BUFFER, 2);
    if (!cb)
        return 0;
    uint8_t payload[1024];
    while (in.p < in.end) {
        switch (byte(&in) % 6) {
        case 0:
        case 1: {
            uint16_t writer = (uint16_t)(byte(&in) % 4);
            uint32_t chunk_id = (uint32_t)(int8_t)byte(&in); /* near 0 and near 2^32 */
            uint16_t nfrag = byte(&in);
            uint8_t flags = byte(&in);
            bool complete = flags & 0x80;
            size_t len = u16(&in) % sizeof payload;
            size_t avail = (size_t)(in.end - in.p);
            size_t take = len < avail ? len : avail;
            memcpy(payload, in.p, take);
            memset(payload + take, 0, len - take);
            in.p += take;
            cb_copy_chunk(cb, writer & 1, writer, chunk_id, nfrag, flags & 0x7F, complete, payload,
                          len);
            break;
        }
        case 2: {
            smb_patch patches[4];
            uint16_t writer = (uint16_t)(byte(&in) % 4);
            uint32_t chunk_id = (uint32_t)(int8_t)byte(&in);
            size_t np = 1 + byte(&in) % 4;
            for (size_t i = 0; i < np; i++) {
                patches[i].offset = u16(&in);
                for (int k = 0; k < 4; k++)
                    patches[i].data[k] = byte(&in);
            }
            cb_try_patch(cb, writer & 1, writer, chunk_id, patches, np, byte(&in) & 1);
            break;
        }
        case 3:
            fuzz_cb_read_all(cb, false);
            break;
        case 4:
            fuzz_cb_read_all(cb, true);
            break;
        default:
            if (byte(&in) == 0x5A)
                smb_ops(cb, &in);
            break;
        }
    }
    fuzz_cb_read_all(cb, true);
    cb_destroy(cb);
    return 0;
}
