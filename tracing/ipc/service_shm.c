/* SPDX-License-Identifier: MIT */
/* gputrace-service's side of the producers' shared memory buffers:
 * adopting a producer's SMB or creating one for it, and applying
 * CommitData (chunk moves and patches) to the central buffer. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "tracing/ipc/service_internal.h"
#include "tracing/smb_service.h"

/* ---- SMB ---------------------------------------------------------------- */

/* Perfetto's rule for SMB sizes: page a power-of-two number of 4 KiB pages
 * up to 32 KiB, SMB a multiple of it up to 32 MiB; anything else falls
 * back to 256 KiB / 4 KiB. Here the SMB is further capped at `max` (a
 * multiple of 32 KiB, so of every valid page size). */
static void valid_shm_sizes(size_t *shm, size_t *page, size_t max)
{
    size_t p = *page ? *page : DEFAULT_PAGE_SIZE;
    size_t m = *shm ? *shm : DEFAULT_SHM_SIZE;
    if (p > MAX_PAGE_SIZE)
        p = MAX_PAGE_SIZE;
    if (m > max)
        m = max;
    size_t pages4k = p / 4096;
    bool ok = p >= 4096 && p % 4096 == 0 && (pages4k & (pages4k - 1)) == 0 && m >= p && m % p == 0;
    *shm = ok ? m : (DEFAULT_SHM_SIZE < max ? DEFAULT_SHM_SIZE : max);
    *page = ok ? p : DEFAULT_PAGE_SIZE;
}

static bool map_smb(gts_producer *pr, int fd, size_t size, size_t page)
{
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED)
        return false;
    if (!smb_abi_init(&pr->abi, mem, size, page)) {
        munmap(mem, size);
        return false;
    }
    pr->smb_mem = mem;
    pr->has_smb = true;
    return true;
}

/* A producer's SMB is adopted only if it cannot shrink under us (a
 * shrunk mapping would SIGBUS the service) and has exactly the geometry
 * the producer announced, as Perfetto requires. */
bool gts_shm_adopt_producer_smb(gts_producer *pr, int fd, size_t max)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || seals < 0 || (seals & need) != need ||
        st.st_size <= 0 || (uint64_t)st.st_size > max)
        return false;
    size_t size = (size_t)st.st_size, page = pr->page_size_hint;
    valid_shm_sizes(&size, &page, max);
    if (size != (size_t)st.st_size || page != pr->page_size_hint)
        return false;
    if (!map_smb(pr, fd, size, page))
        return false;
    pr->smb_from_producer = true;
    return true;
}

bool gts_shm_create_service_smb(gts_producer *pr, size_t max)
{
    size_t size = pr->shm_size_hint, page = pr->page_size_hint;
    valid_shm_sizes(&size, &page, max);
    int fd = memfd_create("gputrace-service-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return false;
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        !map_smb(pr, fd, size, page)) {
        close(fd);
        return false;
    }
    pr->smb_fd = fd;
    return true;
}

static uint32_t producer_of(void *ctx, uint16_t writer_id)
{
    (void)writer_id;
    return ((gts_producer *)ctx)->id;
}

void gts_shm_scrape(gts_service *s, gts_producer *pr)
{
    if (pr->has_smb && pr->in_session)
        svc_scrape(&pr->abi, s->cb, producer_of, pr, s->scratch);
}

/* ---- CommitData --------------------------------------------------------- */

bool gts_parse_commit(const uint8_t *data, size_t len, const gts_commit_visitor *v,
                      uint64_t *flush_request_id, uint64_t *discarded_patches)
{
    perfetto_protos_CommitDataRequest_view req;
    *flush_request_id = 0;
    if (!perfetto_protos_CommitDataRequest_decode(&req, data, len))
        return false;
    *flush_request_id = req.flush_request_id;
    /* Moves first, then patches: a patch may be for a chunk moved by this
     * very request. */
    for (int pass = 0; pass < 2; pass++) {
        pb_reader r;
        pb_field f;
        pb_reader_init(&r, data, len);
        while (pb_reader_next(&r, &f)) {
            if (f.wire_type != PB_WIRE_LEN)
                continue;
            if (pass == 0 && f.id == perfetto_protos_CommitDataRequest_FIELD_chunks_to_move) {
                perfetto_protos_CommitDataRequest_ChunksToMove_view m;
                if (!perfetto_protos_CommitDataRequest_ChunksToMove_decode(&m, f.data,
                                                                           (size_t)f.value))
                    return false;
                /* Inline chunk data is for shmem emulation, which we never
                 * offer: ignore such entries. */
                if (!m.has_data && v->move)
                    v->move(v->ctx, m.page, m.chunk, m.target_buffer);
            } else if (pass == 1 &&
                       f.id == perfetto_protos_CommitDataRequest_FIELD_chunks_to_patch) {
                perfetto_protos_CommitDataRequest_ChunkToPatch_view cp;
                if (!perfetto_protos_CommitDataRequest_ChunkToPatch_decode(&cp, f.data,
                                                                           (size_t)f.value))
                    return false;
                smb_patch patches[MAX_PATCHES_PER_CHUNK];
                size_t n = 0;
                uint64_t bad = 0;
                if (cp.patches_count > MAX_PATCHES_PER_CHUNK) {
                    *discarded_patches += cp.patches_count;
                    continue;
                }
                pb_reader pr;
                pb_field pf;
                pb_reader_init(&pr, f.data, (size_t)f.value);
                while (pb_reader_next(&pr, &pf)) {
                    if (pf.id != perfetto_protos_CommitDataRequest_ChunkToPatch_FIELD_patches ||
                        pf.wire_type != PB_WIRE_LEN)
                        continue;
                    perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_view pv;
                    if (!perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_decode(
                            &pv, pf.data, (size_t)pf.value))
                        return false;
                    if (pv.data.size != SMB_PACKET_HEADER_SIZE || n == MAX_PATCHES_PER_CHUNK) {
                        bad++;
                        continue;
                    }
                    patches[n].offset = pv.offset;
                    memcpy(patches[n].data, pv.data.data, SMB_PACKET_HEADER_SIZE);
                    n++;
                }
                if (pr.err != PB_OK)
                    return false;
                *discarded_patches += bad;
                if (cp.writer_id == 0 || cp.writer_id > SMB_MAX_WRITER_ID) {
                    *discarded_patches += n;
                    continue;
                }
                if (v->patch)
                    v->patch(v->ctx, cp.target_buffer, cp.writer_id, cp.chunk_id, patches, n,
                             cp.has_more_patches);
            }
        }
        if (r.err != PB_OK)
            return false;
    }
    return true;
}

typedef struct commit_ctx {
    gts_service *s;
    gts_producer *pr;
} commit_ctx;

static void commit_move(void *ctx, uint32_t page, uint32_t chunk, uint32_t target_buffer)
{
    commit_ctx *c = ctx;
    gts_producer *pr = c->pr;
    if (!pr->has_smb || page >= pr->abi.num_pages || chunk >= SMB_MAX_CHUNKS_PER_PAGE)
        return; /* a buggy or hostile producer: nothing to read */
    if (target_buffer != BUFFER_ID || !pr->in_session) {
        /* Not a buffer this producer may write to: free the chunk without
         * looking at it, and count it. */
        smb_chunk ch;
        if (smb_try_acquire_chunk_for_reading(&pr->abi, page, chunk, &ch))
            smb_release_chunk_as_free(&pr->abi, &ch);
        c->s->sess.chunks_discarded++;
        return;
    }
    if (svc_move_chunk(&pr->abi, c->s->cb, pr->id, page, chunk))
        c->s->stats.chunks_moved++;
}

static void commit_patch(void *ctx, uint32_t target_buffer, uint32_t writer_id, uint32_t chunk_id,
                         const void *patches, size_t n, bool has_more)
{
    commit_ctx *c = ctx;
    if (target_buffer != BUFFER_ID || !c->pr->in_session) {
        c->s->sess.patches_discarded += n;
        return;
    }
    /* The producer id is ours, not the producer's word: it can only patch
     * its own chunks. */
    cb_try_patch(c->s->cb, c->pr->id, (uint16_t)writer_id, chunk_id, patches, n, has_more);
}

void gts_shm_on_commit(gts_service *s, gts_producer *pr, pb_bytes args)
{
    if (s->cfg.slow_ms) {
        struct timespec ts = { (time_t)(s->cfg.slow_ms / 1000),
                               (long)(s->cfg.slow_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    s->stats.commits++;
    commit_ctx ctx = { s, pr };
    gts_commit_visitor v = { commit_move, commit_patch, &ctx };
    uint64_t flush_id = 0;
    if (!gts_parse_commit(args.data, args.size, &v, &flush_id, &s->sess.patches_discarded)) {
        gts_core_protocol_error(s, pr, "malformed CommitData");
        return;
    }
    if (flush_id && pr->flush_pending && flush_id >= pr->flush_pending)
        pr->flush_pending = 0;
}
