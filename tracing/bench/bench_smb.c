/* SPDX-License-Identifier: MIT */
/* bench_smb: one writer thread -> SMB -> central buffer, with zero loss.
 *
 * The writer encodes TracePackets (timestamp + a bytes payload) through
 * tw_begin_packet/tw_end_packet; a service thread drains commits into the
 * central buffer and reads every packet back out, the in-process backend's
 * path minus the file. The clock runs from the first packet until the
 * service has read the last one. The stall policy (bounded) keeps the run
 * loss-free, and that is checked: any loss fails the benchmark.
 *
 * Prints, medians over repeated runs:
 *   BENCH smb_packets_per_s_32 <v> packets/s
 *   BENCH smb_mb_per_s_256 <v> MB/s
 *   BENCH smb_mb_per_s_4096 <v> MB/s
 *   BENCH memcpy_mb_per_s <v> MB/s      (4 KiB memcpy into a ring, same run)
 * MB = 10^6 bytes of packet payload. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracing/smb_service.h"
#include "tracing/trace_buffer.h"
#include "tracing/trace_writer.h"
#include "tracing/util/util_time.h"

#define REPEATS   5
#define SMB_SIZE  (1u << 20)
#define PAGE_SIZE 16384u
#define CB_SIZE   (16u << 20)

typedef struct service {
    smb_arbiter *arb;
    cb_buffer *cb;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool wake, stop;
    uint64_t packets_read;
    uint64_t bytes_read;
} service;

static void notify(void *ctx, bool urgent)
{
    (void)urgent;
    service *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->wake = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void drain_and_read(service *s, smb_commit_batch *b)
{
    smb_arbiter_take_commits(s->arb, b);
    if (svc_apply_commits(smb_arbiter_abi(s->arb), s->cb, b))
        smb_arbiter_chunks_freed(s->arb);
    cb_packet p;
    cb_begin_read(s->cb, false);
    while (cb_read_next(s->cb, &p)) {
        s->packets_read++;
        s->bytes_read += p.size;
    }
}

static void *service_main(void *arg)
{
    service *s = arg;
    smb_commit_batch b = { 0 };
    for (;;) {
        pthread_mutex_lock(&s->mu);
        if (!s->wake && !s->stop) {
            struct timespec ts = util_deadline_after_ms(1);
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        }
        bool stop = s->stop;
        s->wake = false;
        pthread_mutex_unlock(&s->mu);
        drain_and_read(s, &b);
        if (stop)
            break;
    }
    drain_and_read(s, &b);
    smb_commit_batch_free(&b);
    return NULL;
}

/* One run: `n` packets with `payload` bytes each. Returns packets/s. */
static double run_once(size_t payload, uint64_t n)
{
    service s = { 0 };
    pthread_mutex_init(&s.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    smb_arbiter_config ac = { .smb_size = SMB_SIZE,
                              .page_size = PAGE_SIZE,
                              .layout = SMB_PAGE_DIV1,
                              .notify = notify,
                              .notify_ctx = &s };
    s.arb = smb_arbiter_create(&ac);
    s.cb = cb_create(CB_SIZE, CB_RING_BUFFER, 2);
    if (!s.arb || !s.cb) {
        fprintf(stderr, "bench_smb: out of memory\n");
        exit(1);
    }
    pthread_t th;
    pthread_create(&th, NULL, service_main, &s);

    tw_config cfg = { .policy = SMB_POLICY_STALL, .stall_timeout_ms = 10000 };
    tw_writer *tw = tw_create(s.arb, &cfg);
    uint8_t *data = malloc(payload);
    memset(data, 'x', payload);
    double t0 = util_now_s();
    for (uint64_t i = 0; i < n; i++) {
        perfetto_protos_TracePacket pkt;
        tw_begin_packet(tw, &pkt);
        perfetto_protos_TracePacket_set_timestamp(&pkt, i);
        /* timestamp (2-4 bytes) + tag/length: payload sized so the packet
         * is `payload` bytes in total. */
        size_t body = payload > 8 ? payload - 8 : 0;
        perfetto_protos_TracePacket_set_synchronization_marker(&pkt, data, body);
        tw_end_packet(tw);
    }
    tw_flush(tw);
    pthread_mutex_lock(&s.mu);
    s.stop = true;
    pthread_cond_signal(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(th, NULL);
    double dt = util_now_s() - t0;

    tw_stats ts;
    tw_get_stats(tw, &ts);
    const cb_stats *st = cb_get_stats(s.cb);
    if (ts.packets_dropped || ts.packets_aborted || s.packets_read != n || st->chunks_overwritten ||
        st->abi_violations || st->patches_failed) {
        fprintf(stderr, "bench_smb: loss: read %llu of %llu packets\n",
                (unsigned long long)s.packets_read, (unsigned long long)n);
        exit(1);
    }
    tw_destroy(tw);
    free(data);
    cb_destroy(s.cb);
    smb_arbiter_destroy(s.arb);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    return (double)n / dt;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_packets_per_s(size_t payload, uint64_t n)
{
    double v[REPEATS];
    for (int i = 0; i < REPEATS; i++)
        v[i] = run_once(payload, n);
    qsort(v, REPEATS, sizeof v[0], cmp_double);
    return v[REPEATS / 2];
}

static double median_memcpy_mb_per_s(void)
{
    const size_t block = 4096, ring = CB_SIZE;
    uint8_t *src = malloc(block), *dst = malloc(ring);
    memset(src, 'y', block);
    memset(dst, 0, ring);
    double v[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        const uint64_t n = 100000;
        double t0 = util_now_s();
        for (uint64_t i = 0; i < n; i++) {
            memcpy(dst + (i * block) % ring, src, block);
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        v[r] = (double)(n * block) / 1e6 / (util_now_s() - t0);
    }
    free(src);
    free(dst);
    qsort(v, REPEATS, sizeof v[0], cmp_double);
    return v[REPEATS / 2];
}

int main(void)
{
    double p32 = median_packets_per_s(32, 2000000);
    double p256 = median_packets_per_s(256, 500000);
    double p4096 = median_packets_per_s(4096, 60000);
    double mc = median_memcpy_mb_per_s();
    printf("BENCH smb_packets_per_s_32 %.0f packets/s\n", p32);
    printf("BENCH smb_mb_per_s_256 %.1f MB/s\n", p256 * 256 / 1e6);
    printf("BENCH smb_mb_per_s_4096 %.1f MB/s\n", p4096 * 4096 / 1e6);
    printf("BENCH memcpy_mb_per_s %.1f MB/s\n", mc);
    return 0;
}
