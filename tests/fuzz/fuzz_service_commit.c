/* SPDX-License-Identifier: MIT */
/* Fuzz target: gputrace-service's handling of a producer's CommitData, from
 * the request bytes to the packets read out of the central buffer.
 *
 * Input: one mode byte, a 16-bit little-endian length L, L bytes of
 * CommitDataRequest, and the rest: the producer's shared memory (two 4 KiB
 * pages, zero past the end of the input). The request is decoded with
 * gts_parse_commit() and carried out as the service does (service_shm.c,
 * commit_move / commit_patch): moves of complete chunks into the central
 * buffer, patches of chunks already there; then the SMB is scraped as at the
 * end of a session and the buffer read out.
 *
 * Whatever the producer wrote, every packet read back must be a well-formed
 * protobuf message without the fields only the service may set, the
 * visitor gets only validated patches, and nothing reads out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tracing/fuzz_cb_check.h"
#include "tracing/ipc/service_session.h"
#include "tracing/smb_abi.h"
#include "tracing/smb_service.h"
#include "tracing/trace_buffer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SMB_SIZE  8192u
#define PAGE_SIZE 4096u
/* The one buffer of gputrace-service's session (service_internal.h). */
#define SESSION_BUFFER 1u
#define MAX_PATCHES    1024u
#define PRODUCER_ID    7u

typedef struct commit_ctx {
    smb_abi abi;
    cb_buffer *cb;
    uint64_t moved, discarded;
} commit_ctx;

static void on_move(void *vctx, uint32_t page, uint32_t chunk, uint32_t target_buffer)
{
    commit_ctx *c = vctx;
    if (page >= c->abi.num_pages || chunk >= SMB_MAX_CHUNKS_PER_PAGE)
        return;
    if (target_buffer != SESSION_BUFFER) {
        smb_chunk ch;
        if (smb_try_acquire_chunk_for_reading(&c->abi, page, chunk, &ch))
            smb_release_chunk_as_free(&c->abi, &ch);
        c->discarded++;
        return;
    }
    c->moved += svc_move_chunk(&c->abi, c->cb, PRODUCER_ID, page, chunk);
}

static void on_patch(void *vctx, uint32_t target_buffer, uint32_t writer_id, uint32_t chunk_id,
                     const void *patches, size_t n, bool has_more)
{
    commit_ctx *c = vctx;
    /* gts_parse_commit() promises validated entries only. */
    if (n > MAX_PATCHES || writer_id == 0 || writer_id > SMB_MAX_WRITER_ID)
        abort();
    if (target_buffer != SESSION_BUFFER) {
        c->discarded += n;
        return;
    }
    cb_try_patch(c->cb, PRODUCER_ID, (uint16_t)writer_id, chunk_id, patches, n, has_more);
}

static uint32_t producer_of(void *ctx, uint16_t writer_id)
{
    (void)ctx;
    (void)writer_id;
    return PRODUCER_ID;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t mode = data[0];
    size_t len = (size_t)(data[1] | data[2] << 8);
    data += 3;
    size -= 3;
    if (len > size)
        len = size;
    /* Exact-size copy of the request so a read past it is caught. */
    uint8_t *req = malloc(len ? len : 1);
    uint8_t *smb = aligned_alloc(PAGE_SIZE, SMB_SIZE);
    uint8_t *scratch = malloc(SMB_MAX_PAGE_SIZE);
    commit_ctx c = { 0 };
    c.cb = cb_create(mode & 1 ? 4096 : 65536, mode & 2 ? CB_DISCARD : CB_RING_BUFFER, 1);
    if (!req || !smb || !scratch || !c.cb)
        abort();
    memcpy(req, data, len);
    size_t image = size - len < SMB_SIZE ? size - len : SMB_SIZE;
    memset(smb, 0, SMB_SIZE);
    memcpy(smb, data + len, image);
    if (!smb_abi_init(&c.abi, smb, SMB_SIZE, PAGE_SIZE))
        abort();

    gts_commit_visitor v = { on_move, on_patch, &c };
    uint64_t flush_id = 0, discarded = 0;
    bool ok = gts_parse_commit(req, len, &v, &flush_id, &discarded);
    /* The same request twice: chunks moved by the first are free now, so
     * the second must count ABI violations, not copy stale bytes. */
    if (ok && mode & 4)
        gts_parse_commit(req, len, &v, &flush_id, &discarded);

    fuzz_cb_read_all(c.cb, false);
    svc_scrape(&c.abi, c.cb, producer_of, NULL, scratch);
    fuzz_cb_read_all(c.cb, true);

    cb_destroy(c.cb);
    free(scratch);
    free(smb);
    free(req);
    return 0;
}
