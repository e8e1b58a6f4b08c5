/* In-process backend: the background thread that plays the tracing service
 * for one process. It alone touches the central buffer and the file:
 *
 *   writers --commit queue--> drain() --copy--> cb_buffer --read--> file
 *                  scrape() (chunks still being written) --^
 *
 * Writers wake it through the arbiter's notify hook when a quarter of the
 * SMB waits to be drained, or when they stall or flush; otherwise it polls
 * every drain period. */
#include "inproc_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock_snapshot.h"
#include "pb_heap.h"
#include "smb_service.h"
#include "trace.pbc.h"

#define OUT_FLUSH_BYTES (1u << 20)

struct gt_backend {
    gt_inproc_config cfg;
    smb_arbiter *arb;
    cb_buffer *cb;
    int fd;
    tw_config writer_cfg;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* wakes the service thread */
    pthread_cond_t done_cv; /* flush completions */
    bool wake;
    bool stop;
    uint64_t flush_req;
    uint64_t flush_done;

    /* Service thread only. */
    smb_commit_batch batch;
    uint8_t *scrape_buf;
    uint8_t *out;
    size_t out_len, out_cap;
    bool io_error;
    int32_t uid, pid;
    uint64_t writer_loss_reported;
    uint64_t flushes_requested, flushes_succeeded;
    pb_heap_buffer heap;
};

/* ---- output ------------------------------------------------------------- */

static void out_write_fd(gt_backend *be)
{
    size_t off = 0;
    while (off < be->out_len && !be->io_error) {
        ssize_t n = write(be->fd, be->out + off, be->out_len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            be->io_error = true;
            break;
        }
        off += (size_t)n;
    }
    be->out_len = 0;
}

static void out_append(gt_backend *be, const void *data, size_t n)
{
    if (be->out_len + n > be->out_cap) {
        size_t ncap = be->out_cap ? be->out_cap : OUT_FLUSH_BYTES;
        while (ncap < be->out_len + n)
            ncap *= 2;
        uint8_t *p = realloc(be->out, ncap);
        if (!p) {
            be->io_error = true;
            return;
        }
        be->out = p;
        be->out_cap = ncap;
    }
    memcpy(be->out + be->out_len, data, n);
    be->out_len += n;
}

/* Trace.packet (field 1) framing. */
static void out_record_header(gt_backend *be, size_t len)
{
    uint8_t hdr[1 + PB_MAX_VARINT_BYTES];
    hdr[0] = (uint8_t)pb_make_tag(perfetto_protos_Trace_FIELD_packet, PB_WIRE_LEN);
    uint8_t *e = pb_write_varint(len, hdr + 1);
    out_append(be, hdr, (size_t)(e - hdr));
}

static uint8_t *put_varint_field(uint8_t *p, uint32_t field, uint64_t v)
{
    return pb_write_varint(v, pb_write_varint(pb_make_tag(field, PB_WIRE_VARINT), p));
}

/* A writer's packet, with the fields only the service may set appended:
 * protobuf merges repeated occurrences, so appending is setting. */
static void out_writer_packet(gt_backend *be, const cb_packet *p)
{
    uint8_t trailer[4 * PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e = trailer;
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_uid,
                         (uint64_t)(int64_t)be->uid);
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_packet_sequence_id,
                         p->sequence_id);
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_pid,
                         (uint64_t)(int64_t)be->pid);
    if (p->previous_packet_dropped)
        e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_previous_packet_dropped, 1);
    size_t tl = (size_t)(e - trailer);
    out_record_header(be, p->size + tl);
    for (size_t i = 0; i < p->num_slices; i++)
        out_append(be, p->slices[i].data, p->slices[i].size);
    out_append(be, trailer, tl);
    if (be->out_len >= OUT_FLUSH_BYTES)
        out_write_fd(be);
}

/* Service packets are built on a heap stream, then framed. */
static void begin_service_packet(gt_backend *be, perfetto_protos_TracePacket *pkt)
{
    pb_heap_reset(&be->heap);
    perfetto_protos_TracePacket_init_root(pkt, pb_heap_stream(&be->heap));
}

static void end_service_packet(gt_backend *be, perfetto_protos_TracePacket *pkt)
{
    perfetto_protos_TracePacket_set_trusted_uid(pkt, be->uid);
    perfetto_protos_TracePacket_set_trusted_packet_sequence_id(pkt, GT_SERVICE_SEQUENCE_ID);
    perfetto_protos_TracePacket_end(pkt);
    size_t n = pb_heap_size(&be->heap);
    uint8_t *tmp = malloc(n ? n : 1);
    if (!tmp) {
        be->io_error = true;
        return;
    }
    pb_heap_copy(&be->heap, tmp);
    out_record_header(be, n);
    out_append(be, tmp, n);
    free(tmp);
}

static void emit_clock_snapshot(gt_backend *be)
{
    clk_snapshot s;
    clk_take_snapshot(&s);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_ClockSnapshot cs;
    begin_service_packet(be, &pkt);
    perfetto_protos_TracePacket_begin_clock_snapshot(&pkt, &cs);
    clk_write_snapshot(&cs, &s);
    perfetto_protos_ClockSnapshot_end(&cs);
    end_service_packet(be, &pkt);
}

static void emit_trace_uuid(gt_backend *be)
{
    uint64_t r[2] = {0, 0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        r[0] = clk_boottime_ns() ^ ((uint64_t)getpid() << 32);
        r[1] = clk_monotonic_ns() * 0x9E3779B97F4A7C15ull;
    }
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TraceUuid u;
    begin_service_packet(be, &pkt);
    perfetto_protos_TracePacket_begin_trace_uuid(&pkt, &u);
    perfetto_protos_TraceUuid_set_msb(&u, (int64_t)r[0]);
    perfetto_protos_TraceUuid_set_lsb(&u, (int64_t)r[1]);
    perfetto_protos_TraceUuid_end(&u);
    end_service_packet(be, &pkt);
}

static void sync_writer_loss(gt_backend *be)
{
    uint64_t lost = smb_arbiter_packets_lost(be->arb);
    cb_add_trace_writer_packet_loss(be->cb, lost - be->writer_loss_reported);
    be->writer_loss_reported = lost;
}

static void emit_trace_stats(gt_backend *be)
{
    sync_writer_loss(be);
    const cb_stats *st = cb_get_stats(be->cb);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TraceStats ts;
    perfetto_protos_TraceStats_BufferStats bs;
    begin_service_packet(be, &pkt);
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
    for (size_t i = 0; i < cb_num_sequences(be->cb); i++) {
        cb_writer_stats w;
        perfetto_protos_TraceStats_WriterStats ws;
        cb_get_writer_stats(be->cb, i, &w);
        perfetto_protos_TraceStats_begin_writer_stats(&ts, &ws);
        perfetto_protos_TraceStats_WriterStats_set_sequence_id(&ws, w.sequence_id);
        perfetto_protos_TraceStats_WriterStats_set_buffer(&ws, 0);
        perfetto_protos_TraceStats_WriterStats_set_chunk_payload_histogram_counts(
            &ws, w.counts, CB_HIST_BUCKETS);
        perfetto_protos_TraceStats_WriterStats_set_chunk_payload_histogram_sum(&ws, w.sums,
                                                                            CB_HIST_BUCKETS);
        perfetto_protos_TraceStats_WriterStats_end(&ws);
    }
    perfetto_protos_TraceStats_set_producers_connected(&ts, 1);
    perfetto_protos_TraceStats_set_producers_seen(&ts, 1);
    perfetto_protos_TraceStats_set_tracing_sessions(&ts, 1);
    perfetto_protos_TraceStats_set_total_buffers(&ts, 1);
    perfetto_protos_TraceStats_set_chunks_discarded(&ts, 0);
    perfetto_protos_TraceStats_set_patches_discarded(&ts, 0);
    perfetto_protos_TraceStats_set_invalid_packets(&ts, st->invalid_packets);
    perfetto_protos_TraceStats_set_flushes_requested(&ts, be->flushes_requested);
    perfetto_protos_TraceStats_set_flushes_succeeded(&ts, be->flushes_succeeded);
    perfetto_protos_TraceStats_set_flushes_failed(&ts, 0);
    perfetto_protos_TraceStats_set_final_flush_outcome(
        &ts, perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_SUCCEEDED);
    perfetto_protos_TraceStats_end(&ts);
    end_service_packet(be, &pkt);
}

/* ---- moving chunks ------------------------------------------------------ */

static void drain(gt_backend *be)
{
    smb_arbiter_take_commits(be->arb, &be->batch);
    if (svc_apply_commits(smb_arbiter_abi(be->arb), be->cb, &be->batch))
        smb_arbiter_chunks_freed(be->arb);
}

static uint32_t producer_of(void *ctx, uint16_t writer_id)
{
    return smb_arbiter_writer_gen(ctx, writer_id);
}

static void scrape(gt_backend *be)
{
    svc_scrape(smb_arbiter_abi(be->arb), be->cb, producer_of, be->arb, be->scrape_buf);
}

static void read_out(gt_backend *be, bool final_read)
{
    cb_packet p;
    cb_begin_read(be->cb, final_read);
    while (cb_read_next(be->cb, &p))
        out_writer_packet(be, &p);
    out_write_fd(be);
}

/* Everything committed or finished so far, into the file. Draining twice
 * around the scrape: a writer queues chunk N before it can start chunk
 * N + 2, so a scrape that saw N + 2 is followed by a drain that has N + 1,
 * and a sequence never looks like it started late. */
static void flush_all(gt_backend *be, bool final_read)
{
    drain(be);
    scrape(be);
    drain(be);
    read_out(be, final_read);
}

/* ---- the thread --------------------------------------------------------- */

static uint64_t mono_ms(void)
{
    return clk_monotonic_ns() / 1000000u;
}

static void *service_main(void *arg)
{
    gt_backend *be = arg;
    emit_trace_uuid(be);
    emit_clock_snapshot(be);
    out_write_fd(be);
    uint64_t now = mono_ms();
    uint64_t next_write = now + be->cfg.write_period_ms;
    uint64_t next_snapshot = now + be->cfg.clock_snapshot_period_ms;

    for (;;) {
        now = mono_ms();
        uint64_t wake_at = now + be->cfg.drain_period_ms;
        if (be->cfg.write_period_ms && next_write < wake_at)
            wake_at = next_write;
        if (next_snapshot < wake_at)
            wake_at = next_snapshot;
        struct timespec ts = {(time_t)(wake_at / 1000), (long)(wake_at % 1000) * 1000000L};

        pthread_mutex_lock(&be->mu);
        while (!be->wake && !be->stop && be->flush_req == be->flush_done) {
            if (pthread_cond_timedwait(&be->cv, &be->mu, &ts) == ETIMEDOUT)
                break;
        }
        bool stopping = be->stop;
        uint64_t req = be->flush_req;
        be->wake = false;
        pthread_mutex_unlock(&be->mu);

        if (stopping)
            break;
        now = mono_ms();
        if (now >= next_snapshot) {
            emit_clock_snapshot(be);
            next_snapshot = now + be->cfg.clock_snapshot_period_ms;
        }
        if (req != be->flush_done) {
            be->flushes_requested++;
            flush_all(be, false);
            if (!be->io_error)
                be->flushes_succeeded++;
            pthread_mutex_lock(&be->mu);
            be->flush_done = req;
            pthread_cond_broadcast(&be->done_cv);
            pthread_mutex_unlock(&be->mu);
        } else if (be->cfg.write_period_ms && now >= next_write) {
            flush_all(be, false);
            next_write = now + be->cfg.write_period_ms;
        } else {
            drain(be);
        }
    }

    flush_all(be, true);
    emit_clock_snapshot(be);
    emit_trace_stats(be);
    out_write_fd(be);
    /* Let any late flush waiter go. */
    pthread_mutex_lock(&be->mu);
    be->flush_done = be->flush_req;
    pthread_cond_broadcast(&be->done_cv);
    pthread_mutex_unlock(&be->mu);
    return NULL;
}

static void notify_service(void *ctx, bool urgent)
{
    (void)urgent;
    gt_backend *be = ctx;
    pthread_mutex_lock(&be->mu);
    be->wake = true;
    pthread_cond_signal(&be->cv);
    pthread_mutex_unlock(&be->mu);
}

/* ---- public API --------------------------------------------------------- */

void gt_inproc_config_default(gt_inproc_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->buffer_size = 8u << 20;
    cfg->fill_policy = CB_RING_BUFFER;
    cfg->smb_size = 1u << 20;
    cfg->smb_page_size = 4096;
    cfg->page_layout = SMB_PAGE_DIV1;
    cfg->write_period_ms = 2000;
    cfg->drain_period_ms = 100;
    cfg->clock_snapshot_period_ms = 10000;
    cfg->writer_policy = SMB_POLICY_DROP;
    cfg->stall_timeout_ms = 100;
}

gt_backend *gt_inproc_create(const gt_inproc_config *cfg)
{
    if (!cfg || !cfg->output_path) {
        errno = EINVAL;
        return NULL;
    }
    gt_inproc_config d;
    gt_inproc_config_default(&d);
    gt_backend *be = calloc(1, sizeof *be);
    if (!be)
        return NULL;
    be->cfg = *cfg;
    if (!be->cfg.buffer_size)
        be->cfg.buffer_size = d.buffer_size;
    if (!be->cfg.smb_size)
        be->cfg.smb_size = d.smb_size;
    if (!be->cfg.smb_page_size)
        be->cfg.smb_page_size = d.smb_page_size;
    if (!be->cfg.page_layout)
        be->cfg.page_layout = d.page_layout;
    if (!be->cfg.drain_period_ms)
        be->cfg.drain_period_ms = d.drain_period_ms;
    if (!be->cfg.clock_snapshot_period_ms)
        be->cfg.clock_snapshot_period_ms = d.clock_snapshot_period_ms;
    be->writer_cfg = (tw_config){
        .policy = cfg->writer_policy,
        .stall_timeout_ms = cfg->stall_timeout_ms ? cfg->stall_timeout_ms : d.stall_timeout_ms,
        .target_buffer = 0,
    };
    be->uid = (int32_t)geteuid();
    be->pid = (int32_t)getpid();
    pb_heap_init(&be->heap, 4096);

    smb_arbiter_config ac = {
        .smb_size = be->cfg.smb_size,
        .page_size = be->cfg.smb_page_size,
        .layout = be->cfg.page_layout,
        .notify = notify_service,
        .notify_ctx = be,
    };
    be->fd = -1;
    be->arb = smb_arbiter_create(&ac);
    be->cb = cb_create(be->cfg.buffer_size, be->cfg.fill_policy, GT_SERVICE_SEQUENCE_ID + 1);
    be->scrape_buf = malloc(SMB_MAX_PAGE_SIZE);
    if (!be->arb || !be->cb || !be->scrape_buf) {
        errno = errno ? errno : ENOMEM;
        goto fail;
    }
    be->fd = open(cfg->output_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (be->fd < 0)
        goto fail;

    pthread_mutex_init(&be->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&be->cv, &ca);
    pthread_cond_init(&be->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&be->thread, NULL, service_main, be) != 0) {
        pthread_cond_destroy(&be->cv);
        pthread_cond_destroy(&be->done_cv);
        pthread_mutex_destroy(&be->mu);
        goto fail;
    }
    return be;

fail:
    if (be->fd >= 0)
        close(be->fd);
    free(be->scrape_buf);
    cb_destroy(be->cb);
    smb_arbiter_destroy(be->arb);
    pb_heap_free(&be->heap);
    free(be);
    return NULL;
}

tw_writer *gt_inproc_new_writer(gt_backend *be)
{
    return tw_create(be->arb, &be->writer_cfg);
}

tw_writer *gt_inproc_new_writer_with(gt_backend *be, const tw_config *cfg)
{
    return tw_create(be->arb, cfg ? cfg : &be->writer_cfg);
}

smb_arbiter *gt_inproc_arbiter(gt_backend *be)
{
    return be->arb;
}

bool gt_inproc_flush(gt_backend *be, uint32_t timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&be->mu);
    uint64_t req = ++be->flush_req;
    pthread_cond_signal(&be->cv);
    int rc = 0;
    while (be->flush_done < req && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&be->done_cv, &be->mu, &deadline);
    bool ok = be->flush_done >= req;
    pthread_mutex_unlock(&be->mu);
    return ok;
}

bool gt_inproc_destroy(gt_backend *be)
{
    if (!be)
        return true;
    pthread_mutex_lock(&be->mu);
    be->stop = true;
    pthread_cond_signal(&be->cv);
    pthread_mutex_unlock(&be->mu);
    pthread_join(be->thread, NULL);
    bool ok = !be->io_error;
    if (close(be->fd) != 0)
        ok = false;
    free(be->out);
    free(be->scrape_buf);
    smb_commit_batch_free(&be->batch);
    cb_destroy(be->cb);
    smb_arbiter_destroy(be->arb);
    pb_heap_free(&be->heap);
    pthread_cond_destroy(&be->cv);
    pthread_cond_destroy(&be->done_cv);
    pthread_mutex_destroy(&be->mu);
    free(be);
    return ok;
}
