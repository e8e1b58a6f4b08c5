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
#include <time.h>
#include <unistd.h>

#include "clock_snapshot.h"
#include "service_output.h"
#include "smb_service.h"

struct gt_backend {
    gt_inproc_config cfg;
    smb_arbiter *arb;
    cb_buffer *cb;
    svc_out out; /* the file; written by the service thread only */
    bool out_open;
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
    int32_t uid, pid;
    uint64_t writer_loss_reported;
    uint64_t flushes_requested, flushes_succeeded;
    /* cb bytes_written at the last read-out: what came in since is an upper
     * bound on what the ring holds unread. */
    uint64_t written_at_last_read;
};

/* ---- output (service_output.h) ------------------------------------------ */

static void sync_writer_loss(gt_backend *be)
{
    uint64_t lost = smb_arbiter_packets_lost(be->arb);
    cb_add_trace_writer_packet_loss(be->cb, lost - be->writer_loss_reported);
    be->writer_loss_reported = lost;
}

static void emit_trace_stats(gt_backend *be)
{
    sync_writer_loss(be);
    svc_session_stats ss = {
        .producers_connected = 1,
        .producers_seen = 1,
        .flushes_requested = be->flushes_requested,
        .flushes_succeeded = be->flushes_succeeded,
    };
    svc_out_trace_stats(&be->out, be->cb, &ss);
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
        svc_out_writer_packet(&be->out, &p, be->uid, be->pid);
    svc_out_flush(&be->out);
    be->written_at_last_read = cb_get_stats(be->cb)->bytes_written;
}

/* Streaming mode writes every write_period_ms, but a burst can fill the
 * ring much sooner; reading out once half of it may be unread keeps the
 * ring from overwriting data the file never saw. */
static bool ring_half_full(const gt_backend *be)
{
    return cb_get_stats(be->cb)->bytes_written - be->written_at_last_read >
           be->cfg.buffer_size / 2;
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
    svc_out_trace_uuid(&be->out);
    svc_out_clock_snapshot(&be->out);
    svc_out_flush(&be->out);
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
            svc_out_clock_snapshot(&be->out);
            next_snapshot = now + be->cfg.clock_snapshot_period_ms;
        }
        if (req != be->flush_done) {
            be->flushes_requested++;
            flush_all(be, false);
            if (!be->out.io_error)
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
            if (be->cfg.write_period_ms && ring_half_full(be))
                read_out(be, false);
        }
    }

    flush_all(be, true);
    svc_out_clock_snapshot(&be->out);
    emit_trace_stats(be);
    svc_out_flush(&be->out);
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

    smb_arbiter_config ac = {
        .smb_size = be->cfg.smb_size,
        .page_size = be->cfg.smb_page_size,
        .layout = be->cfg.page_layout,
        .notify = notify_service,
        .notify_ctx = be,
    };
    be->arb = smb_arbiter_create(&ac);
    be->cb = cb_create(be->cfg.buffer_size, be->cfg.fill_policy, GT_SERVICE_SEQUENCE_ID + 1);
    be->scrape_buf = malloc(SMB_MAX_PAGE_SIZE);
    if (!be->arb || !be->cb || !be->scrape_buf) {
        errno = errno ? errno : ENOMEM;
        goto fail;
    }
    int fd = open(cfg->output_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto fail;
    svc_out_init(&be->out, fd);
    be->out_open = true;

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
    if (be->out_open)
        svc_out_close(&be->out);
    free(be->scrape_buf);
    cb_destroy(be->cb);
    smb_arbiter_destroy(be->arb);
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
    bool ok = svc_out_close(&be->out);
    free(be->scrape_buf);
    smb_commit_batch_free(&be->batch);
    cb_destroy(be->cb);
    smb_arbiter_destroy(be->arb);
    pthread_cond_destroy(&be->cv);
    pthread_cond_destroy(&be->done_cv);
    pthread_mutex_destroy(&be->mu);
    free(be);
    return ok;
}
