/* SPDX-License-Identifier: MIT */
/* gputrace-stress: a load producer for measuring loss and throughput end
 * to end. It registers the data source "gputrace.stress" and, once a
 * tracing session starts it, writes from --writers threads --packets
 * TracePackets each, every one a TestEvent (for_testing) with
 *   seq_value = writer index, counter = 0, 1, 2 ... per writer,
 *   str = --size bytes (stress_payload.h),
 * at --rate packets/s per writer (0: as fast as possible), then flushes,
 * waits until the service has everything, and exits.
 *
 * With --output FILE it writes through the in-process backend instead
 * (no service needed).
 *
 * Prints one summary line on stdout. Exit: 0 ok, 1 failure (e.g. no
 * session within --wait-ms), 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracing/inproc_backend.h"
#include "tracing/ipc/producer.h"
#include "tests/stress/stress_payload.h"
#include "tracing/util/util_parse.h"
#include "tracing/util/util_time.h"
#include "protos/perfetto/test_event.pbc.h"

#define PROG        "gputrace-stress"
#define DATA_SOURCE "gputrace.stress"

typedef struct stress {
    uint32_t writers;
    uint64_t packets;
    uint32_t size;
    uint32_t rate;
    uint32_t wait_ms;
    uint64_t kill_after; /* testing: SIGKILL ourselves mid-packet */
    const char *output;
    const char *socket_path;
    smb_exhausted_policy policy;
    uint32_t smb_kb, page_kb;
    uint32_t stall_ms;
    bool no_producer_smb;
    bool quiet;

    uint8_t *cycle; /* the alphabet repeated: payloads are slices of it */
    ipc_producer *producer;
    inproc_backend *backend;
    const _Atomic uint32_t *enabled;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started;
    uint64_t instance;
} stress;

typedef struct worker {
    stress *st;
    uint32_t index;
    pthread_t thread;
    uint64_t written;
    tw_stats tws;
    bool failed;
} worker;

static void write_packet(stress *st, tw_writer *tw, uint32_t writer, uint64_t counter)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TestEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, util_now_ns());
    perfetto_protos_TracePacket_begin_for_testing(&pkt, &ev);
    perfetto_protos_TestEvent_set_seq_value(&ev, writer);
    perfetto_protos_TestEvent_set_counter(&ev, counter);
    /* stress_payload_byte() as a slice of the repeated alphabet. */
    size_t base = (writer * 31u + counter * 7u) % 26u;
    perfetto_protos_TestEvent_set_str_len(&ev, st->cycle + base, st->size);
    perfetto_protos_TestEvent_end(&ev);
    tw_end_packet(tw);
}

/* Testing aid: dies with half a packet in the SMB, as a crashing app would. */
static void die_mid_packet(stress *st, tw_writer *tw, uint32_t writer, uint64_t counter)
{
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TestEvent ev;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_begin_for_testing(&pkt, &ev);
    perfetto_protos_TestEvent_set_seq_value(&ev, writer);
    perfetto_protos_TestEvent_set_counter(&ev, counter);
    perfetto_protos_TestEvent_set_str_len(&ev, st->cycle, st->size / 2);
    fflush(stdout);
    raise(SIGKILL);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    stress *st = w->st;
    tw_writer *tw;
    if (st->backend) {
        tw_config tc = { .policy = st->policy, .stall_timeout_ms = st->stall_ms };
        tw = inproc_backend_new_writer_with(st->backend, &tc);
    } else {
        tw = ipc_producer_new_writer(st->producer, st->instance);
    }
    if (!tw) {
        w->failed = true;
        return NULL;
    }
    uint64_t start = util_now_ns();
    for (uint64_t i = 0; i < st->packets; i++) {
        if (st->enabled && !ipc_producer_enabled(st->enabled))
            break; /* the session stopped us */
        if (st->kill_after && i == st->kill_after && w->index == 0)
            die_mid_packet(st, tw, w->index, i);
        write_packet(st, tw, w->index, i);
        w->written++;
        if (st->rate) {
            uint64_t due = start + (i + 1) * 1000000000ull / st->rate;
            uint64_t t = util_now_ns();
            if (due > t) {
                struct timespec ts = { (time_t)((due - t) / 1000000000u),
                                       (long)((due - t) % 1000000000u) };
                nanosleep(&ts, NULL);
            }
        }
    }
    tw_flush(tw);
    tw_get_stats(tw, &w->tws);
    if (st->backend)
        tw_destroy(tw);
    else
        ipc_producer_release_writer(st->producer, tw);
    return NULL;
}

static void on_start(void *user, uint64_t instance_id, const ipc_producer_ds_config *cfg)
{
    (void)cfg;
    stress *st = user;
    pthread_mutex_lock(&st->mu);
    if (!st->started) {
        st->started = true;
        st->instance = instance_id;
        pthread_cond_broadcast(&st->cv);
    }
    pthread_mutex_unlock(&st->mu);
}

static bool wait_for_session(stress *st)
{
    struct timespec deadline = util_deadline_after_ms(st->wait_ms);
    pthread_mutex_lock(&st->mu);
    int rc = 0;
    while (!st->started && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&st->cv, &st->mu, &deadline);
    bool ok = st->started;
    pthread_mutex_unlock(&st->mu);
    return ok;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " [--writers N] [--packets N] [--size BYTES] [--rate PER_S]\n"
               "       [--wait-ms N] [--socket PATH] [--output FILE] [--policy drop|stall]\n"
               "       [--smb-kb N] [--page-kb N] [--stall-ms N] [--no-producer-smb] [--quiet]\n"
               "\n"
               "Registers data source '" DATA_SOURCE "' with the tracing service (or, with\n"
               "--output, traces in-process into FILE) and writes TestEvent packets:\n"
               "  --writers N    writer threads (default 4)\n"
               "  --packets N    packets per writer (default 10000)\n"
               "  --size BYTES   TestEvent.str bytes per packet (default 256)\n"
               "  --rate PER_S   packets per second per writer, 0 = unthrottled (default 0)\n"
               "  --wait-ms N    how long to wait for a session to start us (default 10000)\n"
               "  --policy P     when the SMB is full: drop (default) or stall\n"
               "  --stall-ms N   how long a stalled writer waits for a free chunk before\n"
               "                 dropping (default 100)\n");
}

/* Connects (or opens the in-process backend), writes, and reports. Every
 * path out releases what it set up: the caller frees the rest. */
static int run(stress *st)
{
    const char *mode;
    if (st->output) {
        mode = "inproc";
        inproc_backend_config ic;
        inproc_backend_config_default(&ic);
        ic.output_path = st->output;
        ic.smb_size = (size_t)st->smb_kb * 1024u;
        ic.smb_page_size = (size_t)st->page_kb * 1024u;
        ic.writer_policy = st->policy;
        ic.stall_timeout_ms = st->stall_ms;
        st->backend = inproc_backend_create(&ic);
        if (!st->backend) {
            fprintf(stderr, PROG ": %s: %s\n", st->output, strerror(errno));
            return 1;
        }
    } else {
        mode = "system";
        ipc_producer_data_source ds = {
            .name = DATA_SOURCE,
            .user = st,
            .policy = st->policy,
            .on_start = on_start,
        };
        ipc_producer_config pc = {
            .name = "gputrace-stress",
            .socket_path = st->socket_path,
            .data_sources = &ds,
            .num_data_sources = 1,
            .smb_size_hint = st->smb_kb * 1024u,
            .smb_page_size_hint = st->page_kb * 1024u,
            .no_producer_smb = st->no_producer_smb,
            .reconnect_min_ms = 100,
            .reconnect_max_ms = 1000,
            .stall_timeout_ms = st->stall_ms,
        };
        st->producer = ipc_producer_create(&pc);
        if (!st->producer) {
            fprintf(stderr, PROG ": cannot create the producer\n");
            return 1;
        }
        st->enabled = ipc_producer_enabled_flag(st->producer, 0);
        if (!wait_for_session(st)) {
            fprintf(stderr, PROG ": no tracing session enabled " DATA_SOURCE " within %u ms\n",
                    st->wait_ms);
            ipc_producer_destroy(st->producer);
            return 1;
        }
        if (!st->quiet)
            fprintf(stderr, PROG ": session started, writing\n");
    }

    worker *w = calloc(st->writers, sizeof *w);
    uint32_t started = 0;
    bool failed = !w;
    uint64_t t0 = util_now_ns();
    for (uint32_t i = 0; w && i < st->writers; i++) {
        w[i] = (worker){ .st = st, .index = i };
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, PROG ": cannot start writer threads\n");
            failed = true;
            break;
        }
        started++;
    }
    uint64_t written = 0, dropped = 0, aborted = 0;
    bool writer_failed = false;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(w[i].thread, NULL);
        written += w[i].written;
        dropped += w[i].tws.packets_dropped;
        aborted += w[i].tws.packets_aborted;
        writer_failed |= w[i].failed;
    }
    free(w);
    double secs = (double)(util_now_ns() - t0) / 1e9;
    bool delivered = true;
    if (st->producer) {
        delivered = ipc_producer_sync(st->producer, 10000);
        ipc_producer_destroy(st->producer);
    } else {
        delivered = inproc_backend_destroy(st->backend);
    }
    if (failed)
        return 1;
    printf(PROG ": mode=%s writers=%u size=%u written=%llu dropped=%llu aborted=%llu "
                "seconds=%.3f packets_per_s=%.0f delivered=%s\n",
           mode, st->writers, st->size, (unsigned long long)written, (unsigned long long)dropped,
           (unsigned long long)aborted, secs, secs > 0 ? (double)written / secs : 0.0,
           delivered ? "yes" : "no");
    if (writer_failed)
        fprintf(stderr, PROG ": a writer could not be created (session gone?)\n");
    return writer_failed || !delivered ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "writers", required_argument, NULL, 'n' },
        { "packets", required_argument, NULL, 'p' },
        { "size", required_argument, NULL, 'z' },
        { "rate", required_argument, NULL, 'r' },
        { "wait-ms", required_argument, NULL, 'w' },
        { "socket", required_argument, NULL, 's' },
        { "output", required_argument, NULL, 'o' },
        { "policy", required_argument, NULL, 'P' },
        { "smb-kb", required_argument, NULL, 'S' },
        { "page-kb", required_argument, NULL, 'G' },
        { "no-producer-smb", no_argument, NULL, 'N' },
        { "kill-after", required_argument, NULL, 'K' },
        { "stall-ms", required_argument, NULL, 'T' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    stress st = { .writers = 4,
                  .packets = 10000,
                  .size = 256,
                  .wait_ms = 10000,
                  .smb_kb = 256,
                  .page_kb = 4,
                  .stall_ms = 100 };
    uint64_t v;
    int c;
    while ((c = getopt_long(argc, argv, "n:p:z:r:w:s:o:P:S:G:NK:T:qh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            st.socket_path = optarg;
            continue;
        case 'o':
            st.output = optarg;
            continue;
        case 'N':
            st.no_producer_smb = true;
            continue;
        case 'q':
            st.quiet = true;
            continue;
        case 'h':
            usage(stdout);
            return 0;
        case 'P':
            if (strcmp(optarg, "drop") == 0) {
                st.policy = SMB_POLICY_DROP;
            } else if (strcmp(optarg, "stall") == 0) {
                st.policy = SMB_POLICY_STALL;
            } else {
                fprintf(stderr, PROG ": --policy: expected drop or stall\n");
                return 2;
            }
            continue;
        case '?':
            usage(stderr);
            return 2;
        default:
            break;
        }
        if (!util_parse_u64(optarg, 10, 0, UINT64_MAX, &v)) {
            fprintf(stderr, PROG ": %s: not a number: '%s'\n", argv[optind - 1], optarg);
            return 2;
        }
        bool ok = true;
        switch (c) {
        case 'n':
            ok = v >= 1 && v <= 512;
            st.writers = (uint32_t)v;
            break;
        case 'p':
            st.packets = v;
            break;
        case 'z':
            ok = v <= (16u << 20);
            st.size = (uint32_t)v;
            break;
        case 'r':
            ok = v <= UINT32_MAX;
            st.rate = (uint32_t)v;
            break;
        case 'w':
            ok = v <= UINT32_MAX;
            st.wait_ms = (uint32_t)v;
            break;
        case 'S':
            ok = v >= 4 && v <= 32768;
            st.smb_kb = (uint32_t)v;
            break;
        case 'G':
            ok = v == 4 || v == 8 || v == 16 || v == 32;
            st.page_kb = (uint32_t)v;
            break;
        case 'K':
            st.kill_after = v;
            break;
        case 'T':
            ok = v >= 1 && v <= 600000;
            st.stall_ms = (uint32_t)v;
            break;
        default:
            break;
        }
        if (!ok) {
            fprintf(stderr, PROG ": %s: out of range: '%s'\n", argv[optind - 1], optarg);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (st.smb_kb % st.page_kb) {
        fprintf(stderr, PROG ": --smb-kb must be a multiple of --page-kb\n");
        return 2;
    }
    st.cycle = malloc((size_t)st.size + 26);
    if (!st.cycle) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < (size_t)st.size + 26; i++)
        st.cycle[i] = (uint8_t)('a' + i % 26);
    pthread_mutex_init(&st.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&st.cv, &ca);
    pthread_condattr_destroy(&ca);
    signal(SIGPIPE, SIG_IGN);
    int rc = run(&st);
    pthread_cond_destroy(&st.cv);
    pthread_mutex_destroy(&st.mu);
    free(st.cycle);
    return rc;
}
