/* .pftrace output for the service side (in-process backend, gputrace-service). */
#include "service_output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock_snapshot.h"
#include "trace.pbc.h"
#include "trace_packet.pbc.h"

#define OUT_FLUSH_BYTES (1u << 20)

void svc_out_init(svc_out *o, int fd)
{
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->service_uid = (int32_t)geteuid();
    pb_heap_init(&o->heap, 4096);
}

void svc_out_flush(svc_out *o)
{
    size_t off = 0;
    while (off < o->len && !o->io_error) {
        ssize_t n = write(o->fd, o->buf + off, o->len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            o->io_error = true;
            break;
        }
        off += (size_t)n;
    }
    o->len = 0;
}

bool svc_out_close(svc_out *o)
{
    svc_out_flush(o);
    bool ok = !o->io_error;
    if (o->fd >= 0 && close(o->fd) != 0)
        ok = false;
    o->fd = -1;
    free(o->buf);
    o->buf = NULL;
    pb_heap_free(&o->heap);
    return ok;
}

static void append(svc_out *o, const void *data, size_t n)
{
    if (o->len + n > o->cap) {
        size_t ncap = o->cap ? o->cap : OUT_FLUSH_BYTES;
        while (ncap < o->len + n)
            ncap *= 2;
        uint8_t *p = realloc(o->buf, ncap);
        if (!p) {
            o->io_error = true;
            return;
        }
        o->buf = p;
        o->cap = ncap;
    }
    memcpy(o->buf + o->len, data, n);
    o->len += n;
}

/* Trace.packet (field 1) framing. */
static void record_header(svc_out *o, size_t len)
{
    uint8_t hdr[1 + PB_MAX_VARINT_BYTES];
    hdr[0] = (uint8_t)pb_make_tag(perfetto_protos_Trace_FIELD_packet, PB_WIRE_LEN);
    uint8_t *e = pb_write_varint(len, hdr + 1);
    append(o, hdr, (size_t)(e - hdr));
}

static uint8_t *put_varint_field(uint8_t *p, uint32_t field, uint64_t v)
{
    return pb_write_varint(v, pb_write_varint(pb_make_tag(field, PB_WIRE_VARINT), p));
}

/* Protobuf merges repeated occurrences of a field, so appending a trusted
 * field overrides anything the producer wrote there. */
void svc_out_writer_packet(svc_out *o, const cb_packet *p, int32_t uid, int32_t pid)
{
    uint8_t trailer[4 * PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e = trailer;
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_uid, (uint64_t)(int64_t)uid);
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_packet_sequence_id,
                         p->sequence_id);
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_pid, (uint64_t)(int64_t)pid);
    if (p->previous_packet_dropped)
        e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_previous_packet_dropped, 1);
    size_t tl = (size_t)(e - trailer);
    record_header(o, p->size + tl);
    for (size_t i = 0; i < p->num_slices; i++)
        append(o, p->slices[i].data, p->slices[i].size);
    append(o, trailer, tl);
    if (o->len >= OUT_FLUSH_BYTES)
        svc_out_flush(o);
}

static void begin_service_packet(svc_out *o, perfetto_protos_TracePacket *pkt)
{
    pb_heap_reset(&o->heap);
    perfetto_protos_TracePacket_init_root(pkt, pb_heap_stream(&o->heap));
}

static void end_service_packet(svc_out *o, perfetto_protos_TracePacket *pkt)
{
    perfetto_protos_TracePacket_set_trusted_uid(pkt, o->service_uid);
    perfetto_protos_TracePacket_set_trusted_packet_sequence_id(pkt, GT_SERVICE_SEQUENCE_ID);
    perfetto_protos_TracePacket_end(pkt);
    size_t n = pb_heap_size(&o->heap);
    uint8_t *tmp = malloc(n ? n : 1);
    if (!tmp || o->heap.out_of_memory) {
        free(tmp);
        o->io_error = true;
        return;
    }
    pb_heap_copy(&o->heap, tmp);
    record_header(o, n);
    append(o, tmp, n);
    free(tmp);
}

void svc_out_clock_snapshot(svc_out *o)
{
    clk_snapshot s;
    clk_take_snapshot(&s);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_ClockSnapshot cs;
    begin_service_packet(o, &pkt);
    perfetto_protos_TracePacket_begin_clock_snapshot(&pkt, &cs);
    clk_write_snapshot(&cs, &s);
    perfetto_protos_ClockSnapshot_end(&cs);
    end_service_packet(o, &pkt);
}

void svc_out_trace_uuid(svc_out *o)
{
    uint64_t r[2] = {0, 0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        r[0] = clk_boottime_ns() ^ ((uint64_t)getpid() << 32);
        r[1] = clk_monotonic_ns() * 0x9E3779B97F4A7C15ull;
    }
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TraceUuid u;
    begin_service_packet(o, &pkt);
    perfetto_protos_TracePacket_begin_trace_uuid(&pkt, &u);
    perfetto_protos_TraceUuid_set_msb(&u, (int64_t)r[0]);
    perfetto_protos_TraceUuid_set_lsb(&u, (int64_t)r[1]);
    perfetto_protos_TraceUuid_end(&u);
    end_service_packet(o, &pkt);
}

void svc_out_trace_stats(svc_out *o, const cb_buffer *cb, const svc_session_stats *s)
{
    const cb_stats *st = cb_get_stats(cb);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TraceStats ts;
    perfetto_protos_TraceStats_BufferStats bs;
    begin_service_packet(o, &pkt);
    perfetto_protos_TracePacket_begin_trace_stats(&pkt, &ts);

    perfetto_protos_TraceStats_begin_buffer_stats(&ts, &bs);
    perfetto_protos_TraceStats_BufferStats_set_buffer_size(&bs, st->buffer_size);
    perfetto_protos_TraceStats_BufferStats_set_bytes_written(&bs, st->bytes_written);
    perfetto_protos_TraceStats_BufferStats_set_bytes_overwritten(&bs, st->bytes_overwritten);
    perfetto_protos_TraceStats_BufferStats_set_bytes_read(&bs, st->bytes_read);
    perfetto_protos_TraceStats_BufferStats_set_padding_bytes_written(&bs, st->padding_bytes_written);
    perfetto_protos_TraceStats_BufferStats_set_padding_bytes_cleared(&bs, st->padding_bytes_cleared);
    perfetto_protos_TraceStats_BufferStats_set_chunks_written(&bs, st->chunks_written);
    perfetto_protos_TraceStats_BufferStats_set_chunks_rewritten(&bs, st->chunks_rewritten);
    perfetto_protos_TraceStats_BufferStats_set_chunks_overwritten(&bs, st->chunks_overwritten);
    perfetto_protos_TraceStats_BufferStats_set_chunks_discarded(&bs, st->chunks_discarded);
    perfetto_protos_TraceStats_BufferStats_set_chunks_read(&bs, st->chunks_read);
    perfetto_protos_TraceStats_BufferStats_set_chunks_committed_out_of_order(
        &bs, st->chunks_committed_out_of_order);
    perfetto_protos_TraceStats_BufferStats_set_write_wrap_count(&bs, st->write_wrap_count);
    perfetto_protos_TraceStats_BufferStats_set_patches_succeeded(&bs, st->patches_succeeded);
    perfetto_protos_TraceStats_BufferStats_set_patches_failed(&bs, st->patches_failed);
    perfetto_protos_TraceStats_BufferStats_set_readaheads_succeeded(&bs, st->readaheads_succeeded);
    perfetto_protos_TraceStats_BufferStats_set_readaheads_failed(&bs, st->readaheads_failed);
    perfetto_protos_TraceStats_BufferStats_set_abi_violations(&bs, st->abi_violations);
    perfetto_protos_TraceStats_BufferStats_set_trace_writer_packet_loss(
        &bs, st->trace_writer_packet_loss);
    perfetto_protos_TraceStats_BufferStats_end(&bs);

    for (int i = 0; i < CB_HIST_BUCKETS; i++)
        perfetto_protos_TraceStats_add_chunk_payload_histogram_def(&ts, cb_hist_thresholds[i]);
    for (size_t i = 0; i < cb_num_sequences(cb); i++) {
        cb_writer_stats w;
        perfetto_protos_TraceStats_WriterStats ws;
        cb_get_writer_stats(cb, i, &w);
        perfetto_protos_TraceStats_begin_writer_stats(&ts, &ws);
        perfetto_protos_TraceStats_WriterStats_set_sequence_id(&ws, w.sequence_id);
        perfetto_protos_TraceStats_WriterStats_set_buffer(&ws, 0);
        perfetto_protos_TraceStats_WriterStats_set_chunk_payload_histogram_counts(
            &ws, w.counts, CB_HIST_BUCKETS);
        perfetto_protos_TraceStats_WriterStats_set_chunk_payload_histogram_sum(&ws, w.sums,
                                                                            CB_HIST_BUCKETS);
        perfetto_protos_TraceStats_WriterStats_end(&ws);
    }
    perfetto_protos_TraceStats_set_producers_connected(&ts, s->producers_connected);
    perfetto_protos_TraceStats_set_producers_seen(&ts, s->producers_seen);
    perfetto_protos_TraceStats_set_data_sources_registered(&ts, s->data_sources_registered);
    perfetto_protos_TraceStats_set_data_sources_seen(&ts, s->data_sources_seen);
    perfetto_protos_TraceStats_set_tracing_sessions(&ts, 1);
    perfetto_protos_TraceStats_set_total_buffers(&ts, 1);
    perfetto_protos_TraceStats_set_chunks_discarded(&ts, s->chunks_discarded);
    perfetto_protos_TraceStats_set_patches_discarded(&ts, s->patches_discarded);
    perfetto_protos_TraceStats_set_invalid_packets(&ts, st->invalid_packets);
    perfetto_protos_TraceStats_set_flushes_requested(&ts, s->flushes_requested);
    perfetto_protos_TraceStats_set_flushes_succeeded(&ts, s->flushes_succeeded);
    perfetto_protos_TraceStats_set_flushes_failed(&ts, s->flushes_failed);
    perfetto_protos_TraceStats_set_final_flush_outcome(
        &ts, s->final_flush_failed ? perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_FAILED
                                   : perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_SUCCEEDED);
    perfetto_protos_TraceStats_end(&ts);
    end_service_packet(o, &pkt);
}
