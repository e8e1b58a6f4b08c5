/* SPDX-License-Identifier: MIT */
/* Service side of an SMB: moving committed chunks into a central buffer,
 * applying patches, and scraping chunks still being written. Shared by the
 * in-process backend and (with chunks named by CommitDataRequest instead of
 * an smb_commit_batch) gputrace-service.
 *
 * The SMB is treated as hostile: a chunk header is read once, the payload
 * is only memcpy'd, and all parsing happens on the private copy. */
#ifndef SMB_SERVICE_H
#define SMB_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "tracing/smb_abi.h"
#include "tracing/smb_arbiter.h"
#include "tracing/trace_buffer.h"

/* COMPLETE -> BEING_READ, copy into `cb` under `producer_id`, -> FREE.
 * False (counted as an ABI violation) when the chunk was not complete. */
bool svc_move_chunk(const smb_abi *abi, cb_buffer *cb, uint32_t producer_id, uint32_t page,
                    uint32_t chunk);

/* Moves every chunk of `batch`, then applies its patches. In-process,
 * the writer generation stands in for the producer ID. Returns the number
 * of chunks freed. */
size_t svc_apply_commits(const smb_abi *abi, cb_buffer *cb, const smb_commit_batch *batch);

/* Copies the finished packets of every chunk in BEING_WRITTEN state. Only
 * fragments the writer published (packet count, acquire) are read, so this
 * does not race with the writer. `producer_of` maps a writer ID to the
 * producer ID used in `cb`; `scratch` holds SMB_MAX_PAGE_SIZE bytes. */
size_t svc_scrape(const smb_abi *abi, cb_buffer *cb,
                  uint32_t (*producer_of)(void *ctx, uint16_t writer_id), void *ctx,
                  uint8_t *scratch);

#endif /* SMB_SERVICE_H */
