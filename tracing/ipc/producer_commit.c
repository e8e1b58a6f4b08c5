/* SPDX-License-Identifier: MIT */
/* The producer's write side: writer records (the writers application
 * threads create on the current SMB), the queue of writer
 * (un)registrations, and the CommitData requests that hand the arbiter's
 * committed chunks and patches to the service. */
#include <stdlib.h>
#include <string.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/ipc/producer_internal.h"
#include "tracing/util/util_mem.h"

/* Keep each CommitData well under IPC_MAX_FRAME_SIZE. */
#define COMMIT_SPLIT_BYTES (96u * 1024u)

/* ---- the op queue and writer records ------------------------------------ */

bool producer_commit_push_op(ipc_producer *p, producer_op op)
{
    if (!util_grow_array((void **)&p->ops, &p->cap_ops, p->num_ops + 1, sizeof *p->ops))
        return false;
    p->ops[p->num_ops++] = op;
    return true;
}

tw_writer *ipc_producer_new_writer(ipc_producer *p, uint64_t instance_id)
{
    tw_writer *tw = NULL;
    pthread_mutex_lock(&p->mu);
    producer_instance *in = producer_ds_find_instance(p, instance_id);
    producer_smb *s = p->smb;
    if (!in || !in->started || !s)
        goto out;
    if (!util_grow_array((void **)&p->writers, &p->cap_writers, p->num_writers + 1,
                         sizeof *p->writers))
        goto out;
    tw_config tc = {
        .policy = in->policy,
        .stall_timeout_ms = p->stall_timeout,
        .target_buffer = (uint16_t)in->target_buffer,
    };
    tw = tw_create(s->arb, &tc);
    if (!tw)
        goto out;
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    p->writers[p->num_writers++] = (producer_writer_rec){ tw, s };
    producer_commit_push_op(
        p, (producer_op){ OP_REGISTER_WRITER, tw_writer_id(tw), in->target_buffer, s->conn_gen });
out:
    pthread_mutex_unlock(&p->mu);
    if (tw)
        producer_core_wake(p);
    return tw;
}

void ipc_producer_release_writer(ipc_producer *p, tw_writer *tw)
{
    if (!tw)
        return;
    pthread_mutex_lock(&p->mu);
    producer_smb *s = NULL;
    for (size_t i = 0; i < p->num_writers; i++) {
        if (p->writers[i].tw == tw) {
            s = p->writers[i].smb;
            p->writers[i] = p->writers[--p->num_writers];
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    uint16_t id = tw_writer_id(tw);
    tw_destroy(tw); /* commits its last chunk first, and wakes us */
    if (s) {
        pthread_mutex_lock(&p->mu);
        producer_commit_push_op(p, (producer_op){ OP_UNREGISTER_WRITER, id, 0, s->conn_gen });
        pthread_mutex_unlock(&p->mu);
    }
    producer_smb_unref(s);
}

/* ---- to the service ---------------------------------------------------- */

static void send_writer_ops(ipc_producer *p, const producer_op *ops, size_t n, uint64_t gen,
                            bool reg)
{
    for (size_t i = 0; i < n && !p->fail && !producer_core_past_stop_deadline(p); i++) {
        if (ops[i].conn_gen != gen || (ops[i].kind == OP_REGISTER_WRITER) != reg)
            continue;
        pb_msg *m = ipc_client_begin_invoke(
            &p->cl, reg ? "RegisterTraceWriter" : "UnregisterTraceWriter", true);
        if (!m)
            continue;
        /* trace_writer_id is field 1 in both requests. */
        perfetto_protos_RegisterTraceWriterRequest *r =
            (perfetto_protos_RegisterTraceWriterRequest *)m;
        perfetto_protos_RegisterTraceWriterRequest_set_trace_writer_id(r, ops[i].writer_id);
        if (reg)
            perfetto_protos_RegisterTraceWriterRequest_set_target_buffer(r, ops[i].target_buffer);
        if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL))
            p->fail = true;
    }
}

static void on_sync_reply(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    (void)success;
    (void)has_more;
    (void)reply;
    ipc_producer *p = ctx;
    pthread_mutex_lock(&p->mu);
    /* Replies come in request order: everything sent so far is acked. */
    if (p->sync_sent > p->sync_done)
        p->sync_done = p->sync_sent;
    pthread_cond_broadcast(&p->sync_cv);
    pthread_mutex_unlock(&p->mu);
}

/* Drains the arbiter and sends CommitData request(s), the last carrying
 * flush_request_id when non-zero. With `sync`, an empty CommitData that
 * wants a reply follows: the service handles a connection's requests in
 * order, so its reply acknowledges everything before it. */
static void send_commits(ipc_producer *p, uint64_t flush_request_id, bool sync)
{
    if (p->state != ST_CONNECTED || p->fail)
        return;
    producer_smb *s = p->smb; /* only this thread replaces p->smb */
    smb_commit_batch *b = &p->batch;
    smb_commit_batch_clear(b);
    if (s)
        smb_arbiter_take_commits(s->arb, b);
    size_t mi = 0, gi = 0;
    uint64_t moved = 0, patched = 0, commits = 0;
    bool work = b->num_moves || b->num_groups || flush_request_id;
    while (work) {
        if (producer_core_past_stop_deadline(p)) {
            p->chunks_not_sent += b->num_moves - mi;
            break;
        }
        pb_msg *m = ipc_client_begin_invoke(&p->cl, "CommitData", true);
        if (!m) {
            p->fail = true;
            return;
        }
        perfetto_protos_CommitDataRequest *req = (perfetto_protos_CommitDataRequest *)m;
        size_t est = 0;
        for (; mi < b->num_moves && est < COMMIT_SPLIT_BYTES; mi++, est += 24) {
            perfetto_protos_CommitDataRequest_ChunksToMove mv;
            perfetto_protos_CommitDataRequest_begin_chunks_to_move(req, &mv);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_page(&mv, b->moves[mi].page);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_chunk(&mv, b->moves[mi].chunk);
            perfetto_protos_CommitDataRequest_ChunksToMove_set_target_buffer(
                &mv, b->moves[mi].target_buffer);
            perfetto_protos_CommitDataRequest_ChunksToMove_end(&mv);
            moved++;
        }
        /* Patches after every move: a patch may target a chunk moved in
         * this very batch. */
        for (; mi == b->num_moves && gi < b->num_groups && est < COMMIT_SPLIT_BYTES; gi++) {
            const smb_commit_patch_group *g = &b->groups[gi];
            perfetto_protos_CommitDataRequest_ChunkToPatch cp;
            perfetto_protos_CommitDataRequest_begin_chunks_to_patch(req, &cp);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_target_buffer(&cp, g->target_buffer);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, g->writer_id);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_chunk_id(&cp, g->chunk_id);
            for (uint32_t k = 0; k < g->count; k++) {
                const smb_patch *pt = &b->patches[g->first + k];
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch pp;
                perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &pp);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_offset(&pp, pt->offset);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&pp, pt->data,
                                                                              sizeof pt->data);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&pp);
            }
            if (g->has_more_patches)
                perfetto_protos_CommitDataRequest_ChunkToPatch_set_has_more_patches(&cp, true);
            perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
            est += 32 + 16 * (size_t)g->count;
            patched += g->count;
        }
        work = mi < b->num_moves || gi < b->num_groups;
        if (!work && flush_request_id)
            perfetto_protos_CommitDataRequest_set_flush_request_id(req, flush_request_id);
        commits++;
        if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL)) {
            p->fail = true;
            return;
        }
    }
    if (sync && !p->out_of_time) {
        if (!ipc_client_begin_invoke(&p->cl, "CommitData", false) ||
            !ipc_client_end_invoke(&p->cl, -1, on_sync_reply, p)) {
            p->fail = true;
            return;
        }
        commits++;
    }
    /* The service frees the moved chunks as it copies them; let writers
     * that are dropping or stalling look again (there is no other signal
     * from another process). */
    if (moved && s)
        smb_arbiter_chunks_freed(s->arb);
    pthread_mutex_lock(&p->mu);
    p->stats.commits_sent += commits;
    p->stats.chunks_moved += moved;
    p->stats.patches_sent += patched;
    if (flush_request_id)
        p->stats.flushes_acked++;
    pthread_mutex_unlock(&p->mu);
}

/* Writer registrations, then commits, then unregistrations: a writer is
 * known before its chunks arrive, and stays known until its last chunk
 * (released writers commit before they queue their unregistration). */
void producer_commit_send_pending(ipc_producer *p, uint64_t flush_request_id, bool sync)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->num_ops;
    producer_op *ops = NULL;
    if (n && (ops = malloc(n * sizeof *ops)) != NULL)
        memcpy(ops, p->ops, n * sizeof *ops);
    p->num_ops = 0;
    uint64_t gen = p->conn_gen;
    pthread_mutex_unlock(&p->mu);
    if (ops)
        send_writer_ops(p, ops, n, gen, true);
    send_commits(p, flush_request_id, sync);
    if (ops)
        send_writer_ops(p, ops, n, gen, false);
    free(ops);
}
