/* SPDX-License-Identifier: MIT */
/* Unit tests of the IPC layer: byte-exact frames, the deframer's limits,
 * BindServiceReply method tables, the producer socket rule, fd passing over
 * a socketpair, reading on after the peer stopped receiving, a host that
 * stops reading one client, and the decoding of service commands and
 * CommitData. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "tracing/ipc/ipc_client.h"
#include "tracing/ipc/ipc_conn.h"
#include "tracing/ipc/ipc_frame.h"
#include "tracing/ipc/ipc_host.h"
#include "tracing/ipc/producer_cmd.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/ipc/service_session.h"
#include "tracing/smb_abi.h"
#include "tracing/util/util_time.h"

/* Builds a frame with `b` and returns a malloc'd copy. */
static uint8_t *take_frame(ipc_frame_builder *b, size_t *n)
{
    *n = ipc_frame_size(b);
    assert_true(*n > 0);
    uint8_t *out = malloc(*n);
    ipc_frame_copy(b, out);
    return out;
}

/* BindService("ProducerPort") with request id 1, into `b`. */
static void begin_bind_producer_port(ipc_frame_builder *b)
{
    perfetto_protos_IPCFrame *f = ipc_frame_begin(b, 1);
    perfetto_protos_IPCFrame_BindService bs;
    perfetto_protos_IPCFrame_begin_msg_bind_service(f, &bs);
    perfetto_protos_IPCFrame_BindService_set_service_name(&bs, "ProducerPort");
    perfetto_protos_IPCFrame_BindService_end(&bs);
}

static void test_bind_service_bytes(void **state)
{
    (void)state;
    ipc_frame_builder b;
    ipc_frame_builder_init(&b);
    begin_bind_producer_port(&b);
    size_t n;
    uint8_t *got = take_frame(&b, &n);
    static const uint8_t want[] = {
        0x15, 0x00, 0x00, 0x00,       /* payload length 21, little-endian */
        0x10, 0x01,                   /* request_id (2) = 1 */
        0x1a, 0x8e, 0x80, 0x80, 0x00, /* msg_bind_service (3), length 14 as a
                                         redundant 4-byte varint */
        0x0a, 0x0c,                   /* service_name (1), 12 bytes */
        'P',  'r',  'o',  'd',  'u',  'c', 'e', 'r', 'P', 'o', 'r', 't',
    };
    assert_int_equal(n, sizeof want);
    assert_memory_equal(got, want, sizeof want);

    /* And it decodes back. */
    ipc_frame fr;
    assert_true(ipc_frame_decode(got + 4, n - 4, &fr));
    assert_int_equal(fr.request_id, 1);
    assert_int_equal(fr.kind, IPC_MSG_BIND_SERVICE);
    free(got);
    ipc_frame_builder_free(&b);
}

static void test_invoke_bytes(void **state)
{
    (void)state;
    ipc_frame_builder b;
    ipc_frame_builder_init(&b);
    ipc_invoke inv;
    ipc_frame_begin_invoke(&b, 7, 1, 4, true, &inv);
    /* args: CommitDataRequest{flush_request_id: 9} */
    perfetto_protos_CommitDataRequest_set_flush_request_id(
        (perfetto_protos_CommitDataRequest *)&inv.args, 9);
    ipc_frame_end_invoke(&inv);
    size_t n;
    uint8_t *got = take_frame(&b, &n);
    static const uint8_t want[] = {
        0x14, 0x00, 0x00, 0x00,       /* 20 bytes */
        0x10, 0x07,                   /* request_id 7 */
        0x2a, 0x8d, 0x80, 0x80, 0x00, /* msg_invoke_method (5), 13 bytes */
        0x08, 0x01,                   /* service_id 1 */
        0x10, 0x04,                   /* method_id 4 */
        0x20, 0x01,                   /* drop_reply true */
        0x1a, 0x82, 0x80, 0x80, 0x00, /* args_proto (3), 2 bytes */
        0x18, 0x09,                   /* flush_request_id (3) = 9 */
    };
    assert_int_equal(n, sizeof want);
    assert_memory_equal(got, want, sizeof want);
    free(got);
    ipc_frame_builder_free(&b);
}

static void test_deframer(void **state)
{
    (void)state;
    ipc_deframer d;
    assert_true(ipc_deframer_init(&d));
    /* Two frames and an empty one, fed one byte at a time. */
    static const uint8_t stream[] = {
        0x02, 0, 0, 0, 0x10, 0x05, /* {request_id: 5} */
        0x00, 0, 0, 0,             /* empty: skipped, as in Perfetto */
        0x02, 0, 0, 0, 0x10, 0x06, /* {request_id: 6} */
    };
    uint64_t ids[2];
    size_t got = 0;
    for (size_t i = 0; i < sizeof stream; i++) {
        size_t avail;
        uint8_t *dst = ipc_deframer_space(&d, &avail);
        assert_true(avail > 0);
        *dst = stream[i];
        ipc_deframer_commit(&d, 1);
        pb_bytes p;
        while (ipc_deframer_pop(&d, &p) == IPC_DEFRAME_FRAME) {
            ipc_frame fr;
            assert_true(ipc_frame_decode(p.data, p.size, &fr));
            ids[got++] = fr.request_id;
        }
    }
    assert_int_equal(got, 2);
    assert_int_equal(ids[0], 5);
    assert_int_equal(ids[1], 6);
    assert_int_equal(ipc_deframer_pending(&d), 0);

    /* The largest frame the cap allows, then one byte more. */
    size_t avail;
    uint8_t *dst = ipc_deframer_space(&d, &avail);
    assert_int_equal(avail, IPC_MAX_FRAME_SIZE);
    uint32_t max_payload = IPC_MAX_PAYLOAD_SIZE;
    memcpy(dst, &max_payload, 4);
    memset(dst + 4, 0, max_payload); /* field-less bytes are fine here */
    ipc_deframer_commit(&d, IPC_MAX_FRAME_SIZE);
    pb_bytes p;
    assert_int_equal(ipc_deframer_pop(&d, &p), IPC_DEFRAME_FRAME);
    assert_int_equal(p.size, max_payload);
    dst = ipc_deframer_space(&d, &avail);
    uint32_t too_big = IPC_MAX_PAYLOAD_SIZE + 1;
    memcpy(dst, &too_big, 4);
    ipc_deframer_commit(&d, 4);
    assert_int_equal(ipc_deframer_pop(&d, &p), IPC_DEFRAME_TOO_LARGE);
    ipc_deframer_free(&d);
}

static void test_bind_reply_table(void **state)
{
    (void)state;
    pb_heap_buffer h;
    pb_heap_init(&h, 256);
    perfetto_protos_IPCFrame_BindServiceReply r;
    perfetto_protos_IPCFrame_BindServiceReply_init_root(&r, pb_heap_stream(&h));
    perfetto_protos_IPCFrame_BindServiceReply_set_success(&r, true);
    perfetto_protos_IPCFrame_BindServiceReply_set_service_id(&r, 3);
    static const struct {
        uint32_t id;
        const char *name;
    } m[] = { { 42, "CommitData" },
              { 0, "Sync" },
              { 9, "" },
              { 7, "InitializeConnection" },
              { 8, "CommitData" } };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo mi;
        perfetto_protos_IPCFrame_BindServiceReply_begin_methods(&r, &mi);
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_set_id(&mi, m[i].id);
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_set_name(&mi, m[i].name);
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_end(&mi);
    }
    perfetto_protos_IPCFrame_BindServiceReply_end(&r);
    size_t n;
    uint8_t *bytes = pb_heap_dup(&h, &n);
    ipc_method_table t;
    assert_true(ipc_parse_bind_reply(bytes, n, &t));
    assert_int_equal(t.service_id, 3);
    assert_int_equal(t.count, 3);                         /* id 0 and "" dropped */
    assert_int_equal(ipc_method_id(&t, "CommitData"), 8); /* the later one wins */
    assert_int_equal(ipc_method_id(&t, "InitializeConnection"), 7);
    assert_int_equal(ipc_method_id(&t, "Sync"), 0);
    /* success = false: no table. */
    static const uint8_t fail[] = { 0x08, 0x00 };
    assert_false(ipc_parse_bind_reply(fail, sizeof fail, &t));
    free(bytes);
    pb_heap_free(&h);
}

static void test_socket_rule(void **state)
{
    (void)state;
    assert_string_equal(ipc_resolve_producer_socket("/x/y", true), "/x/y");
    assert_string_equal(ipc_resolve_producer_socket(NULL, true),
                        "/run/perfetto/traced-producer.sock");
    assert_string_equal(ipc_resolve_producer_socket(NULL, false), "/tmp/perfetto-producer");
    setenv("PERFETTO_PRODUCER_SOCK_NAME", "/tmp/some.sock", 1);
    assert_string_equal(ipc_producer_socket_path(), "/tmp/some.sock");
    unsetenv("PERFETTO_PRODUCER_SOCK_NAME");
}

static void test_fd_passing(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ipc_conn a, b;
    assert_true(ipc_conn_init(&a, sv[0]));
    assert_true(ipc_conn_init(&b, sv[1]));
    int memfd = memfd_create("t", MFD_CLOEXEC);
    assert_true(memfd >= 0);
    static const uint8_t frame[] = { 0x02, 0, 0, 0, 0x10, 0x05 };
    assert_true(ipc_conn_send(&a, frame, sizeof frame, memfd));
    assert_true(ipc_conn_read(&b) > 0);
    pb_bytes p;
    assert_true(ipc_conn_next_frame(&b, &p));
    int got = ipc_conn_take_fd(&b);
    assert_true(got >= 0 && got != memfd);
    assert_int_equal(ipc_conn_take_fd(&b), -1);
    close(got);

    /* Two fds on one message: a protocol violation. */
    int fds[2] = { memfd, memfd };
    char cbuf[CMSG_SPACE(sizeof fds)];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = { (void *)frame, sizeof frame };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf
    };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    assert_int_equal(sendmsg(sv[0], &msg, 0), (ssize_t)sizeof frame);
    assert_int_equal(ipc_conn_read(&b), -1);
    assert_true(b.broken);
    assert_int_equal(ipc_conn_take_fd(&b), -1);
    close(memfd);
    ipc_conn_close(&a);
    ipc_conn_close(&b);
}

/* Bytes the peer sent that we have not read yet show (the host's idle
 * check counts them as said), and stop showing once read. */
static void test_input_waiting(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ipc_conn a;
    assert_true(ipc_conn_init(&a, sv[0]));
    assert_false(ipc_conn_input_waiting(&a));
    static const uint8_t frame[] = { 0x02, 0, 0, 0, 0x10, 0x05 };
    assert_int_equal(write(sv[1], frame, sizeof frame), (ssize_t)sizeof frame);
    assert_true(ipc_conn_input_waiting(&a));
    assert_int_equal(ipc_conn_read(&a), (ssize_t)sizeof frame);
    assert_false(ipc_conn_input_waiting(&a));
    ipc_conn_close(&a);
    close(sv[1]);
    ipc_conn closed = { .fd = -1 };
    assert_false(ipc_conn_input_waiting(&closed));
}

/* The send-side clock: the blocked-since stamp is taken where the send
 * blocks, only at the transition, and a stamp newer than any "now" a
 * caller may hold can never read as an old stall (an unsigned
 * now - stamp wrapped around and dropped slow readers at once). */
/* Our end of a fresh socketpair in *a (the peer's fd in sv[1]), with room
 * for 4 MiB of queue, and a frame of STALL_FRAME_BYTES to fill it with. */
#define STALL_FRAME_BYTES 4096
static const uint8_t *stalling_conn(ipc_conn *a, int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_true(ipc_conn_init(a, sv[0]));
    a->max_tx_bytes = 4u << 20;
    static uint8_t frame[STALL_FRAME_BYTES];
    frame[0] = (uint8_t)(sizeof frame - 4);
    frame[1] = (uint8_t)((sizeof frame - 4) >> 8);
    return frame;
}

/* A peer that reads, however slowly, is not stalled: a Unix socket turns
 * writable again only once its unread bytes fall below a quarter of its
 * buffer, so a slow reader can keep our queue blocked for seconds while it
 * reads (test_ipc_stress's slow readers were dropped at load 10). Each
 * look that finds fewer unread bytes starts the wait again; with no
 * reading it runs on. */
static void test_tx_slow_reader_not_stalled(void **state)
{
    (void)state;
    int sv[2];
    ipc_conn a;
    const uint8_t *frame = stalling_conn(&a, sv);
    while (!ipc_conn_wants_write(&a))
        assert_true(ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1));
    a.tx_blocked_since_ms = util_now_ms() - 10000; /* blocked for 10 s */
    ipc_conn_note_peer_progress(&a);               /* first look: nothing to compare */
    assert_true(ipc_conn_tx_stalled(&a, 5000));
    /* The peer reads a little (two of our sends: the kernel frees what a
     * send queued only once all of it was read), not enough for the socket
     * to turn writable. */
    uint8_t buf[2 * STALL_FRAME_BYTES];
    assert_int_equal(recv(sv[1], buf, sizeof buf, MSG_WAITALL), (ssize_t)sizeof buf);
    ipc_conn_note_peer_progress(&a);
    assert_false(ipc_conn_tx_stalled(&a, 5000));
    /* It stops reading: blocked again, the wait runs on. */
    while (!ipc_conn_wants_write(&a))
        assert_true(ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1));
    a.tx_blocked_since_ms = util_now_ms() - 10000;
    ipc_conn_note_peer_progress(&a);
    ipc_conn_note_peer_progress(&a);
    assert_true(ipc_conn_tx_stalled(&a, 5000));
    ipc_conn_close(&a);
    close(sv[1]);
}

static void test_tx_stall_clock(void **state)
{
    (void)state;
    assert_int_equal(ipc_elapsed_ms(100, 250), 150);
    assert_int_equal(ipc_elapsed_ms(250, 100), 0); /* stamp after "now" */
    assert_int_equal(ipc_elapsed_ms(UINT64_MAX, 0), 0);
    assert_int_equal(ipc_deadline_ms(UINT64_MAX - 5, 10), UINT64_MAX);
    assert_int_equal(ipc_deadline_ms(1000, 10), 1010);
    assert_int_equal(ipc_ms_left(1000, 1200, 50), 0);
    assert_int_equal(ipc_ms_left(1200, 1000, 50), 50);
    assert_int_equal(ipc_ms_left(1020, 1000, 50), 20);
    assert_int_equal(ipc_ms_left(UINT64_MAX, 0, 1 << 30), 1 << 30);

    int sv[2];
    ipc_conn a;
    const uint8_t *frame = stalling_conn(&a, sv);
    assert_int_equal(a.tx_blocked_since_ms, 0);
    int sends = 0;
    while (!ipc_conn_wants_write(&a) && sends < 100000) {
        assert_true(ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1));
        sends++;
    }
    assert_true(ipc_conn_wants_write(&a)); /* the socket is full */
    uint64_t stamp = a.tx_blocked_since_ms;
    assert_true(stamp > 0 && stamp <= util_now_ms());
    /* Blocked again: the wait still started when it first blocked. */
    struct timespec ms5 = { 0, 5000000 };
    nanosleep(&ms5, NULL);
    assert_true(ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1));
    assert_true(ipc_conn_flush(&a));
    assert_int_equal(a.tx_blocked_since_ms, stamp);
    assert_false(ipc_conn_tx_stalled(&a, 60000));
    assert_true(ipc_conn_tx_stalled(&a, 1));
    /* A stamp from the future (taken after some caller read its clock)
     * is a wait that just began, not one as old as the clock. */
    a.tx_blocked_since_ms = util_now_ms() + 1000;
    assert_false(ipc_conn_tx_stalled(&a, 10000));

    /* The queue bound: beyond max_tx_bytes the peer counts as not
     * reading, and the connection breaks. */
    bool ok = true;
    for (int i = 0; i < 2000 && ok; i++)
        ok = ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1);
    assert_false(ok);
    assert_true(a.broken);
    ipc_conn_close(&a);
    close(sv[1]);

    /* A queue drained after a burst gives its memory back. */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_true(ipc_conn_init(&a, sv[0]));
    while (!ipc_conn_wants_write(&a))
        assert_true(ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1));
    for (int i = 0; i < 64; i++)
        assert_true(ipc_conn_send(&a, frame, STALL_FRAME_BYTES, -1));
    assert_true(a.tx_cap > IPC_CONN_TX_KEEP_BYTES);
    static uint8_t sink[65536];
    while (ipc_conn_wants_write(&a)) {
        assert_true(read(sv[1], sink, sizeof sink) > 0);
        assert_true(ipc_conn_flush(&a));
    }
    assert_true(a.tx_cap <= IPC_CONN_TX_KEEP_BYTES);
    assert_int_equal(a.tx_blocked_since_ms, 0);
    ipc_conn_close(&a);
    close(sv[1]);
}

/* A peer that sends its last frames and closes: with read_after_send_error
 * our answer that finds it gone drops only our sending side, and the
 * frames it sent before closing are still read (gputrace-service: a
 * producer's last commits). Without it the send breaks the connection. */
static void test_read_after_send_error(void **state)
{
    (void)state;
    static const uint8_t frame[] = { 0x02, 0, 0, 0, 0x10, 0x05 };
    for (int mode = 0; mode < 2; mode++) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        ipc_conn a;
        assert_true(ipc_conn_init(&a, sv[0]));
        a.read_after_send_error = mode == 1;
        /* Something of ours the peer never reads (its close then resets),
         * and its last frame, then the close. */
        assert_true(ipc_conn_send(&a, frame, sizeof frame, -1));
        assert_int_equal(write(sv[1], frame, sizeof frame), (ssize_t)sizeof frame);
        close(sv[1]);
        bool sent = ipc_conn_send(&a, frame, sizeof frame, -1);
        if (mode == 0) {
            assert_false(sent);
            assert_true(a.broken);
            ipc_conn_close(&a);
            continue;
        }
        assert_true(sent);
        assert_true(a.tx_closed);
        assert_false(a.broken);
        assert_false(ipc_conn_wants_write(&a));
        assert_int_equal(a.bytes_dropped, sizeof frame);
        /* Later frames are dropped and counted, not queued. */
        assert_true(ipc_conn_send(&a, frame, sizeof frame, -1));
        assert_int_equal(a.bytes_dropped, 2 * sizeof frame);
        assert_int_equal(a.tx_len, 0);
        /* The peer's frame is read, then its end of file breaks. */
        assert_int_equal(ipc_conn_read(&a), (ssize_t)sizeof frame);
        pb_bytes p;
        assert_true(ipc_conn_next_frame(&a, &p));
        assert_int_equal(p.size, 2);
        assert_int_equal(ipc_conn_read(&a), -1);
        assert_true(a.broken);
        assert_false(ipc_conn_send(&a, frame, sizeof frame, -1));
        ipc_conn_close(&a);
    }
}

/* GetAsyncCommandResponse{flush{ids 1 (unpacked), ids 2,3 (packed),
 * request_id 77}} */
static void count_id(void *ctx, uint64_t id)
{
    uint64_t *sum = ctx;
    *sum = *sum * 10 + id;
}

static void test_commands(void **state)
{
    (void)state;
    static const uint8_t flush[] = {
        0x2a, 0x08,             /* flush (5), 8 bytes */
        0x08, 0x01,             /* data_source_ids 1 */
        0x0a, 0x02, 0x02, 0x03, /* data_source_ids [2, 3], packed */
        0x10, 0x4d,             /* request_id 77 */
    };
    producer_cmd c;
    assert_true(producer_cmd_parse(flush, sizeof flush, &c));
    assert_int_equal(c.kind, PRODUCER_CMD_FLUSH);
    assert_int_equal(c.flush_request_id, 77);
    uint64_t ids = 0;
    assert_true(producer_cmd_for_each_id(&c, count_id, &ids));
    assert_int_equal(ids, 123);

    static const uint8_t setup[] = { 0x1a, 0x02, 0x08, 0x10 }; /* setup_tracing{16 KiB} */
    assert_true(producer_cmd_parse(setup, sizeof setup, &c));
    assert_int_equal(c.kind, PRODUCER_CMD_SETUP_TRACING);
    assert_int_equal(c.page_size_kb, 16);

    /* start_data_source{new_instance_id 4, config{name "a.b", target_buffer 2}} */
    static const uint8_t start[] = { 0x0a, 0x0b, 0x08, 0x04, 0x12, 0x07, 0x0a,
                                     0x03, 'a',  '.',  'b',  0x10, 0x02 };
    assert_true(producer_cmd_parse(start, sizeof start, &c));
    assert_int_equal(c.kind, PRODUCER_CMD_START_DATA_SOURCE);
    assert_int_equal(c.instance_id, 4);
    ipc_producer_ds_config cfg;
    char name[8];
    assert_true(producer_parse_ds_config(c.config, &cfg, name, sizeof name));
    assert_string_equal(cfg.name, "a.b");
    assert_int_equal(cfg.target_buffer, 2);

    static const uint8_t unknown[] = { 0x60, 0x01 }; /* field 12: from the future */
    assert_true(producer_cmd_parse(unknown, sizeof unknown, &c));
    assert_int_equal(c.kind, PRODUCER_CMD_NONE);
    static const uint8_t truncated[] = { 0x2a, 0x08, 0x08 };
    assert_false(producer_cmd_parse(truncated, sizeof truncated, &c));
}

typedef struct commit_log {
    int moves, patch_groups;
    size_t last_n;
    uint32_t last_writer;
} commit_log;

static void log_move(void *ctx, uint32_t page, uint32_t chunk, uint32_t tb)
{
    (void)page;
    (void)chunk;
    (void)tb;
    ((commit_log *)ctx)->moves++;
}

static void log_patch(void *ctx, uint32_t tb, uint32_t writer, uint32_t chunk_id,
                      const void *patches, size_t n, bool more)
{
    (void)tb;
    (void)chunk_id;
    (void)patches;
    (void)more;
    commit_log *l = ctx;
    l->patch_groups++;
    l->last_n = n;
    l->last_writer = writer;
}

static void test_commit_parse(void **state)
{
    (void)state;
    pb_heap_buffer h;
    pb_heap_init(&h, 4096);
    perfetto_protos_CommitDataRequest r;
    perfetto_protos_CommitDataRequest_init_root(&r, pb_heap_stream(&h));
    for (int i = 0; i < 3; i++) {
        perfetto_protos_CommitDataRequest_ChunksToMove m;
        perfetto_protos_CommitDataRequest_begin_chunks_to_move(&r, &m);
        perfetto_protos_CommitDataRequest_ChunksToMove_set_page(&m, (uint32_t)i);
        perfetto_protos_CommitDataRequest_ChunksToMove_end(&m);
    }
    /* Group 1: writer 5, two good patches and one of 3 bytes. */
    perfetto_protos_CommitDataRequest_ChunkToPatch cp;
    perfetto_protos_CommitDataRequest_begin_chunks_to_patch(&r, &cp);
    perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, 5);
    for (int i = 0; i < 3; i++) {
        perfetto_protos_CommitDataRequest_ChunkToPatch_Patch p;
        perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &p);
        perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_offset(&p, 4);
        perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&p, "abcd", i == 2 ? 3 : 4);
        perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&p);
    }
    perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
    /* Group 2: writer 0 is no writer: all discarded. */
    perfetto_protos_CommitDataRequest_begin_chunks_to_patch(&r, &cp);
    perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, 0);
    perfetto_protos_CommitDataRequest_ChunkToPatch_Patch p;
    perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &p);
    perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&p, "abcd", 4);
    perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&p);
    perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
    /* Group 3: more than 1024 patches: all discarded, as Perfetto does. */
    perfetto_protos_CommitDataRequest_begin_chunks_to_patch(&r, &cp);
    perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, 6);
    for (int i = 0; i < 1025; i++) {
        perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &p);
        perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&p, "abcd", 4);
        perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&p);
    }
    perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
    perfetto_protos_CommitDataRequest_set_flush_request_id(&r, 12);
    perfetto_protos_CommitDataRequest_end(&r);
    size_t n;
    uint8_t *bytes = pb_heap_dup(&h, &n);
    commit_log log = { 0 };
    gts_commit_visitor v = { log_move, log_patch, &log };
    uint64_t flush = 0, discarded = 0;
    assert_true(gts_parse_commit(bytes, n, &v, &flush, &discarded));
    assert_int_equal(log.moves, 3);
    assert_int_equal(log.patch_groups, 1);
    assert_int_equal(log.last_n, 2);
    assert_int_equal(log.last_writer, 5);
    assert_int_equal(flush, 12);
    assert_int_equal(discarded, 1 + 1 + 1025);
    assert_false(gts_parse_commit(bytes, n - 1, &v, &flush, &discarded));
    free(bytes);
    pb_heap_free(&h);
}

/* ---- a host that pauses reading a client ------------------------------- */

typedef struct paused_host_log {
    int invokes;
    uint64_t last_request;
} paused_host_log;

static void pause_after_first(void *ctx, ipc_host_client *cl, uint32_t method, uint64_t rid,
                              bool drop, pb_bytes args)
{
    (void)method, (void)drop, (void)args;
    paused_host_log *log = ctx;
    log->invokes++;
    log->last_request = rid;
    if (log->invokes == 1)
        cl->reading_paused = true; /* within the round that read the rest */
}

static void set_paused(void *ctx, ipc_host_client *cl)
{
    cl->reading_paused = *(bool *)ctx;
}

/* InvokeMethod(service 1, method 1) with request id `rid`, sent whole. */
static void send_invoke(int fd, ipc_frame_builder *b, uint64_t rid)
{
    ipc_invoke inv;
    ipc_frame_begin_invoke(b, rid, 1, 1, true, &inv);
    ipc_frame_end_invoke(&inv);
    size_t n;
    uint8_t *bytes = take_frame(b, &n);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    free(bytes);
}

/* stall_service --deaf's premise (tests/faults): once the owner pauses a
 * client, no request of it is dispatched any more, not even one the same
 * read brought in, until the owner resumes; what the host queued for it
 * still goes out; and a paused client that hangs up is dropped instead of
 * waking every poll. */
static void test_host_reading_paused(void **state)
{
    (void)state;
    char dir[] = "/tmp/gputrace-ipc-unit.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/host.sock", dir);
    int lfd = ipc_socket_listen(path);
    assert_true(lfd >= 0);
    static const char *const methods[] = { "M" };
    paused_host_log log = { 0 };
    ipc_host_config hc = {
        .listen_fd = lfd,
        .service_name = "ProducerPort",
        .methods = methods,
        .num_methods = 1,
        .max_clients = 4,
        .tx_timeout_ms = 60000,
        .ops = { .on_invoke = pause_after_first },
        .ctx = &log,
    };
    ipc_host *h = ipc_host_create(&hc);
    assert_non_null(h);
    int fd = ipc_socket_connect(path);
    assert_true(fd >= 0);
    for (int i = 0; i < 100 && ipc_host_num_clients(h) == 0; i++)
        ipc_host_poll(h, 10, -1);
    assert_int_equal(ipc_host_num_clients(h), 1);

    /* BindService and two invokes in one write: one read takes them all. */
    ipc_frame_builder b;
    ipc_frame_builder_init(&b);
    begin_bind_producer_port(&b);
    size_t n_bind;
    uint8_t *bind = take_frame(&b, &n_bind);
    assert_int_equal(write(fd, bind, n_bind), (ssize_t)n_bind);
    free(bind);
    send_invoke(fd, &b, 2);
    send_invoke(fd, &b, 3);
    for (int i = 0; i < 100 && log.invokes == 0; i++)
        ipc_host_poll(h, 10, -1);
    assert_int_equal(log.invokes, 1);
    assert_int_equal(log.last_request, 2);
    /* The bind's reply was sent all the same. */
    uint8_t reply[512];
    ssize_t got = -1;
    for (int i = 0; i < 100 && got <= 0; i++) {
        got = read(fd, reply, sizeof reply);
        if (got <= 0)
            ipc_host_poll(h, 10, -1);
    }
    assert_true(got > 4);

    /* More requests while paused: none is dispatched. */
    send_invoke(fd, &b, 4);
    for (int i = 0; i < 5; i++)
        ipc_host_poll(h, 10, -1);
    assert_int_equal(log.invokes, 1);

    /* Resumed: the one already read and the one in the socket, in order. */
    bool paused = false;
    ipc_host_for_each(h, set_paused, &paused);
    for (int i = 0; i < 100 && log.invokes < 3; i++)
        ipc_host_poll(h, 10, -1);
    assert_int_equal(log.invokes, 3);
    assert_int_equal(log.last_request, 4);

    /* Paused again, then the client hangs up: dropped as broken. */
    paused = true;
    ipc_host_for_each(h, set_paused, &paused);
    close(fd);
    for (int i = 0; i < 100 && ipc_host_num_clients(h) == 1; i++)
        ipc_host_poll(h, 10, -1);
    assert_int_equal(ipc_host_num_clients(h), 0);
    assert_int_equal(ipc_host_get_stats(h)->dropped[IPC_DROP_BROKEN], 1);
    assert_int_equal(log.invokes, 3);

    ipc_frame_builder_free(&b);
    ipc_host_destroy(h);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_service_bytes),
        cmocka_unit_test(test_invoke_bytes),
        cmocka_unit_test(test_deframer),
        cmocka_unit_test(test_bind_reply_table),
        cmocka_unit_test(test_socket_rule),
        cmocka_unit_test(test_fd_passing),
        cmocka_unit_test(test_tx_stall_clock),
        cmocka_unit_test(test_tx_slow_reader_not_stalled),
        cmocka_unit_test(test_input_waiting),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_commit_parse),
        cmocka_unit_test(test_read_after_send_error),
        cmocka_unit_test(test_host_reading_paused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
