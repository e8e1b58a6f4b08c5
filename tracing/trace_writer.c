/* SPDX-License-Identifier: MIT */
/* Trace writer: the pb_stream delegate that feeds SMB chunks to the encoder.
 *
 * Inside a chunk the writer touches no lock and no shared state except the
 * chunk's own packet counter (a release store per packet, so a scraping
 * service reads only finished packets). The arbiter's lock is taken when a
 * chunk fills up: the next chunk is acquired first, so that if none can be
 * had the fragment already in the old chunk can still be stamped "drop this
 * packet" before the old chunk is handed over. */
#include "tracing/trace_writer.h"

#include <stdlib.h>
#include <string.h>

/* Room a new packet needs in the current chunk to be worth starting there:
 * its fragment header plus enough for any first field's fast path, so the
 * first fragment of a packet is never empty. */
#define TW_MIN_PACKET_ROOM (SMB_PACKET_HEADER_SIZE + 16u)
#define TW_GARBAGE_SIZE    1024u

struct tw_writer {
    pb_stream stream;
    smb_chunk chunk;          /* begin == NULL: none (dropping, or after a flush) */
    uint8_t *frag_size_field; /* size header of the open fragment, or NULL */
    uint8_t *frag_start;
    perfetto_protos_TracePacket *pkt;
    bool fragmenting;  /* a packet is open */
    bool drop_packets; /* writing into the garbage chunk */
    bool retry_after_packet;
    bool reached_max_packets;
    /* The next chunk, acquired early while size fields of the old one were
     * being redirected (see annotate_patch). */
    bool prefetched;
    bool prefetch_ok;
    bool cur_needs_patching;
    smb_chunk next_chunk;
    uint32_t next_chunk_id;
    /* A stall timed out and no chunk was had since: do not wait again
     * (one bounded wait per loss episode, however long the service stays
     * hung). */
    bool stall_spent;
    /* Free epoch seen by the last acquisition attempt, and by the one
     * that started dropping. */
    uint64_t try_epoch;
    uint64_t drop_epoch;

    smb_arbiter *arb;
    uint16_t id;
    uint32_t gen;
    uint16_t target_buffer;
    smb_exhausted_policy policy;
    uint32_t stall_timeout_ms;
    pb_stream_delegate delegate;
    smb_patch_list patches;
    tw_stats stats;
    /* tw_flush_when_quiet(): packets_begun when it last looked, and since when. */
    uint64_t quiet_packets;
    uint64_t quiet_since_ns;
    /* Where size fields go when their bytes are being thrown away. */
    uint8_t sink[SMB_PACKET_HEADER_SIZE];
    /* Per writer, so concurrent droppers never share (or race on) it. */
    uint8_t garbage[TW_GARBAGE_SIZE];
};

static pb_span garbage_span(tw_writer *tw)
{
    return (pb_span){ tw->garbage, tw->garbage + sizeof tw->garbage };
}

static bool acquire_next(tw_writer *tw, smb_chunk *out)
{
    if (tw->prefetched) {
        tw->prefetched = false;
        *out = tw->next_chunk;
        return tw->prefetch_ok;
    }
    tw->try_epoch = smb_arbiter_free_epoch(tw->arb);
    smb_chunk_header_value hdr = {
        .chunk_id = tw->next_chunk_id,
        .writer_id = tw->id,
        /* A chunk taken mid-packet starts with the rest of that packet. */
        .packets = tw->fragmenting ? smb_packets_make(1, SMB_CHUNK_FIRST_PACKET_CONTINUES) : 0,
    };
    /* The free epoch is no proof that the service frees anything (the
     * producer also bumps it on every drain period), so only a chunk
     * actually had ends the episode and allows waiting again. */
    smb_exhausted_policy policy = tw->stall_spent ? SMB_POLICY_DROP : tw->policy;
    bool ok = smb_arbiter_get_new_chunk(tw->arb, &hdr, policy, tw->stall_timeout_ms, out);
    if (ok)
        tw->stall_spent = false;
    else if (policy == SMB_POLICY_STALL)
        tw->stall_spent = true;
    return ok;
}

static void return_chunk(tw_writer *tw, bool urgent)
{
    smb_arbiter_commit(tw->arb, tw->chunk.begin ? &tw->chunk : NULL, tw->id, tw->gen,
                       tw->target_buffer, &tw->patches, urgent);
    tw->chunk.begin = NULL;
    tw->cur_needs_patching = false;
}

/* Switches to a new chunk (or to the garbage chunk). Mid-packet this closes
 * the current fragment and opens the next one. */
static pb_span switch_chunk(tw_writer *tw)
{
    if (tw->fragmenting && tw->drop_packets) {
        /* Part of this packet is already gone: keep cycling through the
         * garbage chunk until it ends, then try the SMB again. */
        tw->retry_after_packet = true;
        return garbage_span(tw);
    }
    smb_chunk next;
    if (!acquire_next(tw, &next)) {
        if (tw->fragmenting && tw->frag_size_field) {
            /* The head of this packet is in the chunk about to be handed
             * over: tell the service to throw it away. Size fields of open
             * messages in that chunk were sent to the sink already. */
            pb_write_redundant_varint(SMB_PACKET_SIZE_DROP_PACKET, tw->frag_size_field);
            tw->frag_size_field = NULL;
            tw->stats.packets_aborted++;
        }
        if (tw->chunk.begin)
            return_chunk(tw, false);
        tw->drop_packets = true;
        tw->drop_epoch = tw->try_epoch;
        tw->reached_max_packets = false;
        tw->retry_after_packet = false;
        return garbage_span(tw);
    }

    if (tw->fragmenting && tw->chunk.begin) {
        uint32_t partial = (uint32_t)(tw->stream.write_ptr - tw->frag_start);
        pb_write_redundant_varint(partial, tw->frag_size_field);
        uint8_t flags = SMB_CHUNK_LAST_PACKET_CONTINUES;
        if (tw->cur_needs_patching)
            flags |= SMB_CHUNK_NEEDS_PATCHING;
        smb_chunk_set_flags(&tw->chunk, flags);
    }
    if (tw->chunk.begin)
        return_chunk(tw, false);

    tw->drop_packets = false;
    tw->reached_max_packets = false;
    tw->retry_after_packet = false;
    tw->next_chunk_id++;
    tw->chunk = next;
    tw->stats.chunks_used++;
    uint8_t *payload = smb_chunk_payload(&tw->chunk);
    if (tw->fragmenting) {
        tw->frag_size_field = payload;
        memset(payload, 0, SMB_PACKET_HEADER_SIZE);
        payload += SMB_PACKET_HEADER_SIZE;
        tw->frag_start = payload;
    }
    return (pb_span){ payload, tw->chunk.begin + tw->chunk.size };
}

static pb_span new_buffer(void *ctx, pb_stream *stream)
{
    (void)stream;
    return switch_chunk((tw_writer *)ctx);
}

/* A message still open has its size field in the chunk we are about to
 * give away: from now on its size goes into a patch. */
static uint8_t *annotate_patch(void *ctx, uint8_t *size_field)
{
    tw_writer *tw = ctx;
    uint8_t *payload = tw->chunk.begin ? smb_chunk_payload(&tw->chunk) : NULL;
    if (!payload || size_field < payload ||
        size_field + SMB_PACKET_HEADER_SIZE > tw->chunk.begin + tw->chunk.size)
        return tw->sink; /* in the garbage chunk: nobody will read it */
    if (!tw->prefetched) {
        /* Decide now whether the packet survives: if no next chunk can be
         * had it is dropped, and patching it would be pointless. */
        tw->prefetch_ok = acquire_next(tw, &tw->next_chunk);
        tw->prefetched = true;
    }
    if (!tw->prefetch_ok)
        return tw->sink;
    smb_patch_node *n = smb_patch_list_push(&tw->patches, smb_chunk_hdr(&tw->chunk)->chunk_id,
                                            (uint32_t)(size_field - payload));
    /* Without a node the size never arrives; the chunk stays unpatched and
     * the service drops the packet at the end (patches_failed). */
    tw->cur_needs_patching = true;
    if (!n)
        return tw->sink;
    tw->stats.patches_recorded++;
    return n->data;
}

tw_writer *tw_create(smb_arbiter *arb, const tw_config *cfg)
{
    tw_writer *tw = calloc(1, sizeof *tw);
    if (!tw)
        return NULL;
    if (!smb_arbiter_alloc_writer_id(arb, &tw->id, &tw->gen)) {
        free(tw);
        return NULL;
    }
    tw->arb = arb;
    if (cfg) {
        tw->policy = cfg->policy;
        tw->stall_timeout_ms = cfg->stall_timeout_ms;
        tw->target_buffer = cfg->target_buffer;
    }
    tw->delegate = (pb_stream_delegate){
        .new_buffer = new_buffer,
        .annotate_patch = annotate_patch,
        .ctx = tw,
    };
    pb_stream_init(&tw->stream, &tw->delegate);
    return tw;
}

void tw_cap_stall(tw_writer *tw, uint32_t max_ms)
{
    if (max_ms < tw->stall_timeout_ms)
        tw->stall_timeout_ms = max_ms;
    if (tw->stall_timeout_ms == 0)
        tw->policy = SMB_POLICY_DROP;
}

void tw_destroy(tw_writer *tw)
{
    if (!tw)
        return;
    if (tw->pkt)
        tw_end_packet(tw);
    tw_flush(tw);
    smb_arbiter_free_writer_id(tw->arb, tw->id);
    smb_patch_list_free(&tw->patches);
    free(tw);
}

void tw_begin_packet(tw_writer *tw, perfetto_protos_TracePacket *pkt)
{
    assert(!tw->pkt);
    tw->fragmenting = false;
    bool was_dropping = tw->drop_packets;
    size_t room = (size_t)(tw->stream.end - tw->stream.write_ptr);
    /* While dropping, try the SMB again as soon as the service freed
     * anything (one relaxed load), rather than after the scratch chunk
     * wrapped: a quiet writer must not keep losing packets. */
    if (!tw->stream.begin || room < TW_MIN_PACKET_ROOM || tw->reached_max_packets ||
        tw->retry_after_packet ||
        (tw->drop_packets && smb_arbiter_free_epoch(tw->arb) != tw->drop_epoch))
        pb_stream_reset(&tw->stream, switch_chunk(tw));

    /* Patches finished by the previous packet go out with the next commit
     * at the latest; ship them now so the service can read that chunk. */
    if (smb_patch_list_front_ready(&tw->patches))
        smb_arbiter_commit(tw->arb, NULL, tw->id, tw->gen, tw->target_buffer, &tw->patches, false);

    uint8_t *hdr = tw->stream.write_ptr;
    memset(hdr, 0, SMB_PACKET_HEADER_SIZE);
    tw->stream.write_ptr += SMB_PACKET_HEADER_SIZE;
    tw->frag_size_field = hdr;
    tw->frag_start = tw->stream.write_ptr;
    tw->fragmenting = true;
    tw->pkt = pkt;
    tw->stats.packets_begun++;
    perfetto_protos_TracePacket_init_root(pkt, &tw->stream);

    if (!tw->drop_packets) {
        uint16_t count = smb_chunk_inc_packet_count(&tw->chunk);
        tw->reached_max_packets = count >= SMB_MAX_PACKETS_PER_CHUNK;
        if (was_dropping)
            perfetto_protos_TracePacket_set_previous_packet_dropped(pkt, 1);
    } else {
        tw->stats.packets_dropped++;
        smb_arbiter_add_packets_lost(tw->arb, 1);
    }
}

void tw_end_packet(tw_writer *tw)
{
    assert(tw->pkt);
    perfetto_protos_TracePacket_end(tw->pkt);
    if (tw->frag_size_field) {
        uint32_t size = (uint32_t)(tw->stream.write_ptr - tw->frag_start);
        pb_write_redundant_varint(size, tw->frag_size_field);
    }
    tw->frag_size_field = NULL;
    tw->fragmenting = false;
    tw->pkt = NULL;
}

void tw_flush(tw_writer *tw)
{
    assert(!tw->pkt);
    if (tw->prefetched) {
        /* Only possible if a packet was abandoned mid-switch; give it back
         * as an empty chunk rather than leak it. */
        tw->prefetched = false;
        if (tw->prefetch_ok) {
            /* It carries an ID, so it must reach the service (or the next
             * chunk would look like a gap), but nothing in it is valid. */
            atomic_store_explicit(&smb_chunk_hdr(&tw->next_chunk)->packets, 0,
                                  memory_order_release);
            smb_arbiter_commit(tw->arb, &tw->next_chunk, tw->id, tw->gen, tw->target_buffer, NULL,
                               false);
            tw->next_chunk_id++;
        }
    }
    return_chunk(tw, true);
    pb_stream_reset(&tw->stream, (pb_span){ NULL, NULL });
}

void tw_flush_when_quiet(tw_writer *tw, uint64_t now_ns, uint64_t quiet_ns)
{
    if (tw->pkt)
        return;
    if (tw->stats.packets_begun != tw->quiet_packets) {
        tw->quiet_packets = tw->stats.packets_begun;
        tw->quiet_since_ns = now_ns;
        return;
    }
    /* After a flush there is no current chunk until the next packet. */
    if (tw->chunk.begin && now_ns - tw->quiet_since_ns >= quiet_ns)
        tw_flush(tw);
}

uint16_t tw_writer_id(const tw_writer *tw)
{
    return tw->id;
}

uint32_t tw_writer_gen(const tw_writer *tw)
{
    return tw->gen;
}

void tw_get_stats(const tw_writer *tw, tw_stats *out)
{
    *out = tw->stats;
}
