/* SPDX-License-Identifier: MIT */
/* gputrace-inproc-demo: writes a trace through the in-process backend from
 * several writer threads, each its own packet sequence: TestEvent packets
 * (with a few nested messages) timestamped on BOOTTIME, the trace's
 * default clock. Open the result in ui.perfetto.dev or trace_processor.
 *
 * usage: gputrace-inproc-demo --output FILE [--writers N] [--packets N]
 *        [--size BYTES] [--buffer-kb N] [--smb-kb N] [--discard] [--drop]
 * Writers stall (up to 10 s) when the SMB is full, so a burst larger than
 * the SMB is not lost; --drop uses the never-blocking policy instead.
 * Exit status: 0 written without loss, 1 written with loss or I/O error,
 * 2 usage error. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracing/clock_snapshot.h"
#include "tracing/inproc_backend.h"
#include "tracing/util/util_parse.h"

typedef struct demo {
    inproc_backend *be;
    unsigned packets;
    size_t size;
    tw_config wcfg;
} demo;

typedef struct worker {
    demo *d;
    unsigned index;
    tw_stats stats;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    demo *d = w->d;
    tw_writer *tw = inproc_backend_new_writer_with(d->be, &d->wcfg);
    if (!tw)
        return NULL;
    char *text = malloc(d->size + 1);
    for (size_t i = 0; i < d->size; i++)
        text[i] = (char)('a' + (w->index + i) % 26);
    for (unsigned i = 0; i < d->packets; i++) {
        perfetto_protos_TracePacket pkt;
        perfetto_protos_TestEvent ev;
        tw_begin_packet(tw, &pkt);
        perfetto_protos_TracePacket_set_timestamp(&pkt, clk_boottime_ns());
        if (i == 0) /* nothing incremental yet, but say where the state starts */
            perfetto_protos_TracePacket_set_sequence_flags(
                &pkt, perfetto_protos_TracePacket_SequenceFlags_SEQ_INCREMENTAL_STATE_CLEARED);
        perfetto_protos_TracePacket_begin_for_testing(&pkt, &ev);
        perfetto_protos_TestEvent_set_seq_value(&ev, w->index);
        perfetto_protos_TestEvent_set_counter(&ev, i);
        if (i % 8 == 0) {
            /* Nested messages, left open across chunk boundaries by large
             * sizes: their lengths travel as patches. */
            perfetto_protos_TestEvent_TestPayload outer, inner;
            perfetto_protos_TestEvent_begin_payload(&ev, &outer);
            perfetto_protos_TestEvent_TestPayload_set_single_int(&outer, (int32_t)i);
            perfetto_protos_TestEvent_TestPayload_begin_nested(&outer, &inner);
            perfetto_protos_TestEvent_TestPayload_set_single_string_len(&inner, text, d->size);
            perfetto_protos_TestEvent_TestPayload_add_repeated_ints(&inner, 1);
            perfetto_protos_TestEvent_TestPayload_end(&inner);
            perfetto_protos_TestEvent_TestPayload_end(&outer);
        } else {
            perfetto_protos_TestEvent_set_str_len(&ev, text, d->size);
        }
        perfetto_protos_TestEvent_set_is_last(&ev, i + 1 == d->packets);
        perfetto_protos_TestEvent_end(&ev);
        tw_end_packet(tw);
    }
    tw_get_stats(tw, &w->stats);
    tw_destroy(tw);
    free(text);
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gputrace-inproc-demo --output FILE [--writers N] [--packets N] "
               "[--size BYTES]\n"
               "       [--buffer-kb N] [--smb-kb N] [--discard] [--drop]\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' },
        { "writers", required_argument, NULL, 'w' },
        { "packets", required_argument, NULL, 'p' },
        { "size", required_argument, NULL, 's' },
        { "buffer-kb", required_argument, NULL, 'b' },
        { "smb-kb", required_argument, NULL, 'm' },
        { "discard", no_argument, NULL, 'd' },
        { "drop", no_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    inproc_backend_config cfg;
    inproc_backend_config_default(&cfg);
    size_t writers = 4, packets = 1000, size = 64, v;
    demo d = { .wcfg = { .policy = SMB_POLICY_STALL, .stall_timeout_ms = 10000 } };
    int c;
    while ((c = getopt_long(argc, argv, "o:w:p:s:b:m:drh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            cfg.output_path = optarg;
            break;
        case 'w':
            if (!util_parse_size(optarg, 10, 1, 64, &writers))
                goto bad;
            break;
        case 'p':
            if (!util_parse_size(optarg, 10, 0, 100000000u, &packets))
                goto bad;
            break;
        case 's':
            if (!util_parse_size(optarg, 10, 0, 16u << 20, &size))
                goto bad;
            break;
        case 'b':
            if (!util_parse_size(optarg, 10, 4, 4u << 20, &v))
                goto bad;
            cfg.buffer_size = v << 10;
            break;
        case 'm':
            if (!util_parse_size(optarg, 10, 4, 64u << 10, &v) || v % 4)
                goto bad;
            cfg.smb_size = v << 10;
            break;
        case 'd':
            cfg.fill_policy = CB_DISCARD;
            break;
        case 'r':
            d.wcfg.policy = SMB_POLICY_DROP;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            goto bad;
        }
    }
    if (!cfg.output_path || optind != argc)
        goto bad;

    d.be = inproc_backend_create(&cfg);
    if (!d.be) {
        fprintf(stderr, "gputrace-inproc-demo: %s: %s\n", cfg.output_path, strerror(errno));
        return 1;
    }
    d.packets = (unsigned)packets;
    d.size = size;
    worker *w = calloc(writers, sizeof *w);
    pthread_t *th = calloc(writers, sizeof *th);
    for (size_t i = 0; i < writers; i++) {
        w[i] = (worker){ &d, (unsigned)i, { 0 } };
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    uint64_t lost = 0;
    for (size_t i = 0; i < writers; i++) {
        pthread_join(th[i], NULL);
        lost += w[i].stats.packets_dropped + w[i].stats.packets_aborted;
    }
    bool ok = inproc_backend_destroy(d.be);
    printf("gputrace-inproc-demo: %s: %zu writers x %zu packets of %zu bytes, "
           "%llu lost in shared memory\n",
           cfg.output_path, writers, packets, size, (unsigned long long)lost);
    free(w);
    free(th);
    if (!ok) {
        fprintf(stderr, "gputrace-inproc-demo: %s: write failed\n", cfg.output_path);
        return 1;
    }
    return lost ? 1 : 0;

bad:
    usage(stderr);
    return 2;
}
