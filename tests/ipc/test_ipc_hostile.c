/* Hostile peers, both ways.
 *
 * 1. A fake service (a thread here) that misbehaves in one way per test:
 *    garbage frames, a huge length, closing mid-frame, never answering,
 *    failing the bind, lacking methods, failing InitializeConnection,
 *    SetupTracing without an fd / with a pipe / with an unsealed memfd /
 *    with a silly page size, several fds on one message, ending the command
 *    stream. The producer must drop the connection and come back (the fake
 *    sees a second connection), never crash or hang, and destroy promptly.
 *    A well-behaved fake with unusual method ids checks that ids are taken
 *    by name.
 * 2. Hostile producers against gputrace-service: garbage, huge lengths,
 *    requests before InitializeConnection, an unsealed SMB offer, CommitData
 *    with out-of-range pages/chunks/buffers and broken patches while the SMB
 *    is scribbled on, a frame cut short. The service must keep going and
 *    still trace a well-behaved producer completely.
 *
 * usage: test_ipc_hostile GPUTRACE_SERVICE GPUTRACE_STRESS */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "commit_data_request.pbc.h"
#include "data_source_descriptor.pbc.h"
#include "ipc_conn.h"
#include "ipc_frame.h"
#include "producer.h"
#include "producer_port.pbc.h"
#include "ti_util.h"

static const char *g_service;
static const char *g_stress;

static const char *const k_names[] = {
    "InitializeConnection", "RegisterDataSource",      "UnregisterDataSource",
    "CommitData",           "GetAsyncCommand",         "RegisterTraceWriter",
    "UnregisterTraceWriter", "NotifyDataSourceStarted", "NotifyDataSourceStopped",
    "ActivateTriggers",     "Sync",                    "UpdateDataSource",
};
#define NUM_NAMES (sizeof k_names / sizeof *k_names)
/* The fake numbers methods backwards from 40: nothing like Perfetto's 1..N,
 * so a client that hard-codes ids fails. */
#define FAKE_ID(i) (40u + (uint32_t)(NUM_NAMES - 1 - (i)))

typedef enum fake_mode {
    F_GARBAGE,
    F_HUGE_LENGTH,
    F_CLOSE_MID_FRAME,
    F_SILENT,
    F_BIND_FAIL,
    F_MISSING_METHODS,
    F_INIT_ERROR,
    F_SETUP_NO_FD,
    F_SETUP_PIPE_FD,
    F_SETUP_UNSEALED,
    F_SETUP_BAD_PAGE,
    F_MANY_FDS,
    F_STREAM_ENDS,
    F_GOOD,
} fake_mode;

typedef struct fake {
    fake_mode mode;
    int listen_fd;
    pthread_t thread;
    _Atomic bool stop;
    _Atomic int connections;
    _Atomic int inits, registers, commits;
    _Atomic bool adopted;
    _Atomic bool bad; /* a check failed on the fake's thread */
    ipc_frame_builder fb;
} fake;

/* cmocka's asserts may only run on the test's thread. */
#define FAKE_CHECK(f, cond)                 \
    do {                                    \
        if (!(cond))                        \
            atomic_store(&(f)->bad, true);  \
    } while (0)

static int fake_index_of(uint32_t id)
{
    for (size_t i = 0; i < NUM_NAMES; i++)
        if (FAKE_ID(i) == id)
            return (int)i;
    return -1;
}

static void send_built(fake *f, ipc_conn *c, int fd)
{
    ipc_conn_send_frame(c, &f->fb, fd);
}

static void send_bind_reply(fake *f, ipc_conn *c, uint64_t rid, bool success, bool only_sync)
{
    perfetto_protos_IPCFrame *fr = ipc_frame_begin(&f->fb, rid);
    perfetto_protos_IPCFrame_BindServiceReply r;
    perfetto_protos_IPCFrame_begin_msg_bind_service_reply(fr, &r);
    perfetto_protos_IPCFrame_BindServiceReply_set_success(&r, success);
    perfetto_protos_IPCFrame_BindServiceReply_set_service_id(&r, 5);
    for (size_t i = 0; success && i < NUM_NAMES; i++) {
        if (only_sync && strcmp(k_names[i], "Sync") != 0)
            continue;
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo mi;
        perfetto_protos_IPCFrame_BindServiceReply_begin_methods(&r, &mi);
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_set_id(&mi, FAKE_ID(i));
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_set_name(&mi, k_names[i]);
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_end(&mi);
    }
    perfetto_protos_IPCFrame_BindServiceReply_end(&r);
    send_built(f, c, -1);
}

static pb_msg *begin_reply(fake *f, uint64_t rid, bool has_more, ipc_reply *rep)
{
    ipc_frame_begin_reply(&f->fb, rid, true, has_more, rep);
    return &rep->reply;
}

static int sealed_memfd(size_t size, bool seal)
{
    int fd = memfd_create("fake-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
        return fd;
    if (seal)
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    return fd;
}

static void send_setup_tracing(fake *f, ipc_conn *c, uint64_t stream)
{
    ipc_reply rep;
    perfetto_protos_GetAsyncCommandResponse *cmd =
        (perfetto_protos_GetAsyncCommandResponse *)begin_reply(f, stream, true, &rep);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing st;
    perfetto_protos_GetAsyncCommandResponse_begin_setup_tracing(cmd, &st);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing_set_shared_buffer_page_size_kb(
        &st, f->mode == F_SETUP_BAD_PAGE ? 1000 : 4);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing_end(&st);
    ipc_frame_end_reply(&rep);
    int fd = -1, pfd[2] = {-1, -1};
    switch (f->mode) {
    case F_SETUP_PIPE_FD:
        FAKE_CHECK(f, pipe(pfd) == 0);
        fd = pfd[0];
        break;
    case F_SETUP_UNSEALED:
        fd = sealed_memfd(65536, false);
        break;
    case F_SETUP_BAD_PAGE:
        fd = sealed_memfd(65536, true);
        break;
    default:
        break;
    }
    send_built(f, c, fd);
    if (fd >= 0)
        close(fd);
    if (pfd[1] >= 0)
        close(pfd[1]);
}

static void send_start(fake *f, ipc_conn *c, uint64_t stream, const char *name)
{
    ipc_reply rep;
    perfetto_protos_GetAsyncCommandResponse *cmd =
        (perfetto_protos_GetAsyncCommandResponse *)begin_reply(f, stream, true, &rep);
    perfetto_protos_GetAsyncCommandResponse_StartDataSource m;
    perfetto_protos_DataSourceConfig cfg;
    perfetto_protos_GetAsyncCommandResponse_begin_start_data_source(cmd, &m);
    perfetto_protos_GetAsyncCommandResponse_StartDataSource_set_new_instance_id(&m, 77);
    perfetto_protos_GetAsyncCommandResponse_StartDataSource_begin_config(&m, &cfg);
    perfetto_protos_DataSourceConfig_set_name(&cfg, name);
    perfetto_protos_DataSourceConfig_set_target_buffer(&cfg, 3);
    perfetto_protos_DataSourceConfig_end(&cfg);
    perfetto_protos_GetAsyncCommandResponse_StartDataSource_end(&m);
    ipc_frame_end_reply(&rep);
    send_built(f, c, -1);
}

static void send_raw_fds(int sock, int nfds)
{
    static const uint8_t frame[] = {0x02, 0, 0, 0, 0x10, 0x63};
    int fds[4];
    for (int i = 0; i < nfds; i++)
        fds[i] = sealed_memfd(4096, true);
    char cbuf[CMSG_SPACE(sizeof fds)];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {(void *)frame, sizeof frame};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                         .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    sendmsg(sock, &msg, MSG_NOSIGNAL);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
}

/* Handles one frame from the producer; false ends the connection. */
static bool fake_frame(fake *f, ipc_conn *c, const ipc_frame *fr, uint64_t *stream)
{
    if (fr->kind == IPC_MSG_BIND_SERVICE) {
        switch (f->mode) {
        case F_GARBAGE: {
            static const uint8_t junk[] = {0x08, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff};
            ipc_conn_send(c, junk, sizeof junk, -1);
            return true;
        }
        case F_HUGE_LENGTH: {
            static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x10, 0x01};
            ipc_conn_send(c, huge, sizeof huge, -1);
            return true;
        }
        case F_CLOSE_MID_FRAME: {
            static const uint8_t half[] = {0x64, 0, 0, 0, 0x10, 0x01, 0x22};
            ipc_conn_send(c, half, sizeof half, -1);
            return false;
        }
        case F_SILENT:
            return true;
        case F_BIND_FAIL:
            send_bind_reply(f, c, fr->request_id, false, false);
            return true;
        case F_MISSING_METHODS:
            send_bind_reply(f, c, fr->request_id, true, true);
            return true;
        case F_MANY_FDS:
            send_bind_reply(f, c, fr->request_id, true, false);
            send_raw_fds(c->fd, 3);
            return true;
        default:
            send_bind_reply(f, c, fr->request_id, true, false);
            return true;
        }
    }
    if (fr->kind != IPC_MSG_INVOKE_METHOD)
        return true;
    perfetto_protos_IPCFrame_InvokeMethod_view im;
    FAKE_CHECK(f, perfetto_protos_IPCFrame_InvokeMethod_decode(&im, fr->body.data, fr->body.size));
    int idx = fake_index_of(im.method_id);
    FAKE_CHECK(f, idx >= 0); /* the producer used an id we handed out */
    if (idx < 0)
        return false;
    const char *name = k_names[idx];
    int fd = ipc_conn_take_fd(c);
    if (strcmp(name, "InitializeConnection") == 0) {
        atomic_fetch_add(&f->inits, 1);
        perfetto_protos_InitializeConnectionRequest_view req;
        FAKE_CHECK(f, perfetto_protos_InitializeConnectionRequest_decode(
                          &req, im.args_proto.data, im.args_proto.size));
        FAKE_CHECK(f, req.shared_memory_page_size_hint_bytes == 4096);
        FAKE_CHECK(f, req.producer_name.size > 0);
        if (f->mode == F_INIT_ERROR) {
            perfetto_protos_IPCFrame *e = ipc_frame_begin(&f->fb, fr->request_id);
            perfetto_protos_IPCFrame_RequestError re;
            perfetto_protos_IPCFrame_begin_msg_request_error(e, &re);
            perfetto_protos_IPCFrame_RequestError_set_error(&re, "nope");
            perfetto_protos_IPCFrame_RequestError_end(&re);
            send_built(f, c, -1);
        } else {
            bool adopt = f->mode == F_GOOD && fd >= 0 && req.producer_provided_shmem;
            atomic_store(&f->adopted, adopt);
            ipc_reply rep;
            perfetto_protos_InitializeConnectionResponse *r =
                (perfetto_protos_InitializeConnectionResponse *)begin_reply(f, fr->request_id,
                                                                            false, &rep);
            perfetto_protos_InitializeConnectionResponse_set_using_shmem_provided_by_producer(
                r, adopt);
            ipc_frame_end_reply(&rep);
            send_built(f, c, -1);
        }
    } else if (strcmp(name, "GetAsyncCommand") == 0) {
        *stream = fr->request_id;
        if (f->mode == F_STREAM_ENDS) {
            ipc_reply rep;
            begin_reply(f, fr->request_id, false, &rep);
            ipc_frame_end_reply(&rep);
            send_built(f, c, -1);
        } else if (f->mode != F_GOOD || !atomic_load(&f->adopted)) {
            send_setup_tracing(f, c, *stream);
        } else {
            send_setup_tracing(f, c, *stream); /* adopted: no fd */
        }
    } else if (strcmp(name, "RegisterDataSource") == 0) {
        atomic_fetch_add(&f->registers, 1);
        perfetto_protos_RegisterDataSourceRequest_view req;
        perfetto_protos_DataSourceDescriptor_view d;
        FAKE_CHECK(f, perfetto_protos_RegisterDataSourceRequest_decode(&req, im.args_proto.data,
                                                                       im.args_proto.size));
        FAKE_CHECK(f, perfetto_protos_DataSourceDescriptor_decode(
                          &d, req.data_source_descriptor.data, req.data_source_descriptor.size));
        char dsname[64];
        snprintf(dsname, sizeof dsname, "%.*s", (int)d.name.size, (const char *)d.name.data);
        if (f->mode == F_GOOD && *stream)
            send_start(f, c, *stream, dsname);
    } else if (strcmp(name, "CommitData") == 0) {
        atomic_fetch_add(&f->commits, 1);
    }
    if (fd >= 0)
        close(fd);
    return true;
}

static void fake_serve(fake *f, int sock)
{
    ipc_conn c;
    if (!ipc_conn_init(&c, sock))
        return;
    uint64_t stream = 0;
    uint64_t until = ipc_now_ms() + 3000;
    bool open = true;
    while (open && !atomic_load(&f->stop) && ipc_now_ms() < until) {
        struct pollfd pf = {.fd = c.fd, .events = POLLIN};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        ssize_t n = ipc_conn_read(&c);
        if (n < 0)
            break; /* the producer hung up: what we want */
        pb_bytes p;
        while (open && ipc_conn_next_frame(&c, &p)) {
            ipc_frame fr;
            FAKE_CHECK(f, ipc_frame_decode(p.data, p.size, &fr));
            open = fake_frame(f, &c, &fr, &stream);
        }
    }
    ipc_conn_close(&c);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd pf = {.fd = f->listen_fd, .events = POLLIN};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int s = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0)
            continue;
        atomic_fetch_add(&f->connections, 1);
        fake_serve(f, s);
    }
    return NULL;
}

static void fake_start(fake *f, fake_mode mode, const char *path)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    ipc_frame_builder_init(&f->fb);
    f->listen_fd = ipc_socket_listen(path);
    assert_true(f->listen_fd >= 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_stop(fake *f)
{
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
    ipc_frame_builder_free(&f->fb);
}

static _Atomic int g_starts;
static _Atomic bool g_start_bad;

static void count_start(void *user, uint64_t id, const gt_ds_config *cfg)
{
    (void)user;
    if (id != 77 || cfg->target_buffer != 3)
        atomic_store(&g_start_bad, true);
    atomic_fetch_add(&g_starts, 1);
}

static gt_producer *make_producer(const char *path)
{
    static const gt_data_source ds = {.name = "gputrace.hostile", .on_start = count_start};
    gt_producer_config pc = {
        .socket_path = path,
        .data_sources = &ds,
        .num_data_sources = 1,
        .io_timeout_ms = 300,
        .reconnect_min_ms = 50,
        .reconnect_max_ms = 100,
    };
    gt_producer *p = gt_producer_create(&pc);
    assert_non_null(p);
    return p;
}

/* The producer must give up on the fake and come back. */
static void run_hostile(fake_mode mode)
{
    char *path = ti_temp_path("fake", ".sock");
    fake f;
    fake_start(&f, mode, path);
    gt_producer *p = make_producer(path);
    uint64_t until = ipc_now_ms() + 5000;
    while (atomic_load(&f.connections) < 2 && ipc_now_ms() < until)
        ti_sleep_ms(10);
    assert_true(atomic_load(&f.connections) >= 2);
    assert_false(gt_producer_enabled(gt_producer_enabled_flag(p, 0)));
    gt_producer_stats st;
    gt_producer_get_stats(p, &st);
    assert_int_equal(st.connections, mode >= F_SETUP_NO_FD ? st.connections : 0);
    uint64_t t0 = ipc_now_ms();
    gt_producer_destroy(p);
    assert_true(ipc_now_ms() - t0 < 2000); /* never hangs the host */
    fake_stop(&f);
    assert_false(atomic_load(&f.bad));
    unlink(path);
    free(path);
}

static void test_garbage(void **s) { (void)s; run_hostile(F_GARBAGE); }
static void test_huge_length(void **s) { (void)s; run_hostile(F_HUGE_LENGTH); }
static void test_close_mid_frame(void **s) { (void)s; run_hostile(F_CLOSE_MID_FRAME); }
static void test_silent(void **s) { (void)s; run_hostile(F_SILENT); }
static void test_bind_fail(void **s) { (void)s; run_hostile(F_BIND_FAIL); }
static void test_missing_methods(void **s) { (void)s; run_hostile(F_MISSING_METHODS); }
static void test_init_error(void **s) { (void)s; run_hostile(F_INIT_ERROR); }
static void test_setup_no_fd(void **s) { (void)s; run_hostile(F_SETUP_NO_FD); }
static void test_setup_pipe_fd(void **s) { (void)s; run_hostile(F_SETUP_PIPE_FD); }
static void test_setup_unsealed(void **s) { (void)s; run_hostile(F_SETUP_UNSEALED); }
static void test_setup_bad_page(void **s) { (void)s; run_hostile(F_SETUP_BAD_PAGE); }
static void test_many_fds(void **s) { (void)s; run_hostile(F_MANY_FDS); }
static void test_stream_ends(void **s) { (void)s; run_hostile(F_STREAM_ENDS); }

/* A correct service with odd method ids: the producer connects once, its
 * SMB is adopted, its data source starts, and it stays. */
static void test_good_fake_ids_by_name(void **state)
{
    (void)state;
    char *path = ti_temp_path("fakegood", ".sock");
    fake f;
    fake_start(&f, F_GOOD, path);
    atomic_store(&g_starts, 0);
    gt_producer *p = make_producer(path);
    uint64_t until = ipc_now_ms() + 5000;
    while (atomic_load(&g_starts) < 1 && ipc_now_ms() < until)
        ti_sleep_ms(10);
    assert_int_equal(atomic_load(&g_starts), 1);
    assert_true(gt_producer_enabled(gt_producer_enabled_flag(p, 0)));
    tw_writer *tw = gt_producer_new_writer(p, 77);
    assert_non_null(tw);
    perfetto_protos_TracePacket pkt;
    tw_begin_packet(tw, &pkt);
    perfetto_protos_TracePacket_set_timestamp(&pkt, 1);
    tw_end_packet(tw);
    gt_producer_release_writer(p, tw);
    ti_sleep_ms(400); /* longer than io_timeout: a wrong id would show */
    gt_producer_stats st;
    gt_producer_get_stats(p, &st);
    assert_int_equal(atomic_load(&f.connections), 1);
    assert_int_equal(st.connections, 1);
    assert_int_equal(st.protocol_errors, 0);
    assert_true(st.using_producer_smb);
    assert_true(atomic_load(&f.commits) >= 1);
    assert_int_equal(atomic_load(&f.registers), 1);
    assert_false(atomic_load(&g_start_bad));
    gt_producer_destroy(p);
    fake_stop(&f);
    assert_false(atomic_load(&f.bad));
    unlink(path);
    free(path);
}

/* ---- hostile producers against gputrace-service ------------------------- */

typedef struct raw {
    ipc_conn c;
    ipc_frame_builder fb;
    ipc_method_table methods;
    uint64_t next_id;
} raw;

static bool raw_wait_frame(raw *r, ipc_frame *fr, uint8_t **copy, uint32_t ms)
{
    uint64_t until = ipc_now_ms() + ms;
    for (;;) {
        pb_bytes p;
        if (ipc_conn_next_frame(&r->c, &p)) {
            *copy = malloc(p.size);
            memcpy(*copy, p.data, p.size);
            return ipc_frame_decode(*copy, p.size, fr);
        }
        uint64_t now = ipc_now_ms();
        if (now >= until)
            return false;
        struct pollfd pf = {.fd = r->c.fd, .events = POLLIN};
        poll(&pf, 1, (int)(until - now));
        if (ipc_conn_read(&r->c) < 0)
            return false;
    }
}

/* True when the peer closed the connection within ms. */
static bool raw_closed(raw *r, uint32_t ms)
{
    uint64_t until = ipc_now_ms() + ms;
    while (ipc_now_ms() < until) {
        struct pollfd pf = {.fd = r->c.fd, .events = POLLIN};
        poll(&pf, 1, 50);
        if (ipc_conn_read(&r->c) < 0)
            return true;
        pb_bytes p;
        while (ipc_conn_next_frame(&r->c, &p)) {
        }
    }
    return false;
}

static void raw_connect(raw *r, const char *sock, bool bind)
{
    memset(r, 0, sizeof *r);
    int fd = ipc_socket_connect(sock);
    assert_true(fd >= 0);
    assert_true(ipc_conn_init(&r->c, fd));
    ipc_frame_builder_init(&r->fb);
    if (!bind)
        return;
    perfetto_protos_IPCFrame *f = ipc_frame_begin(&r->fb, ++r->next_id);
    perfetto_protos_IPCFrame_BindService bs;
    perfetto_protos_IPCFrame_begin_msg_bind_service(f, &bs);
    perfetto_protos_IPCFrame_BindService_set_service_name(&bs, "ProducerPort");
    perfetto_protos_IPCFrame_BindService_end(&bs);
    assert_true(ipc_conn_send_frame(&r->c, &r->fb, -1));
    ipc_frame fr;
    uint8_t *copy;
    assert_true(raw_wait_frame(r, &fr, &copy, 10000));
    assert_int_equal(fr.kind, IPC_MSG_BIND_SERVICE_REPLY);
    assert_true(ipc_parse_bind_reply(fr.body.data, fr.body.size, &r->methods));
    free(copy);
}

static void raw_close(raw *r)
{
    ipc_conn_close(&r->c);
    ipc_frame_builder_free(&r->fb);
}

static pb_msg *raw_invoke(raw *r, const char *method, bool drop, ipc_invoke *inv)
{
    uint32_t id = ipc_method_id(&r->methods, method);
    assert_true(id > 0);
    ipc_frame_begin_invoke(&r->fb, ++r->next_id, r->methods.service_id, id, drop, inv);
    return &inv->args;
}

static void raw_send(raw *r, ipc_invoke *inv, int fd)
{
    ipc_frame_end_invoke(inv);
    assert_true(ipc_conn_send_frame(&r->c, &r->fb, fd));
}

typedef struct scribbler {
    uint8_t *mem;
    size_t size;
    _Atomic bool stop;
} scribbler;

/* Keeps rewriting the SMB with garbage, headers included, while the
 * service reads it. */
static void *scribble_main(void *arg)
{
    scribbler *s = arg;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    while (!atomic_load(&s->stop)) {
        for (size_t i = 0; i + 8 <= s->size; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t v = x;
            /* Page headers: mostly "chunks complete" with random layouts. */
            if (i % 4096 == 0)
                v = (v & 0x70000000u) | 0x0FFFFFFFu;
            __atomic_store_n((uint64_t *)(s->mem + i), v, __ATOMIC_RELAXED);
        }
        ti_sleep_ms(1); /* leave the (possibly single) CPU to the service */
    }
    return NULL;
}

static void hostile_producers(const char *sock)
{
    raw r;
    ipc_frame fr;
    uint8_t *copy;
    ipc_invoke inv;

    /* Garbage instead of a frame. */
    raw_connect(&r, sock, false);
    static const uint8_t junk[] = {0x06, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_true(ipc_conn_send(&r.c, junk, sizeof junk, -1));
    assert_true(raw_closed(&r, 10000));
    raw_close(&r);

    /* A length no frame may have. */
    raw_connect(&r, sock, false);
    static const uint8_t huge[] = {0xff, 0xff, 0xff, 0x7f, 0x10, 0x01};
    assert_true(ipc_conn_send(&r.c, huge, sizeof huge, -1));
    assert_true(raw_closed(&r, 10000));
    raw_close(&r);

    /* CommitData before InitializeConnection: refused, connection kept. */
    raw_connect(&r, sock, true);
    raw_invoke(&r, "CommitData", false, &inv);
    raw_send(&r, &inv, -1);
    assert_true(raw_wait_frame(&r, &fr, &copy, 10000));
    perfetto_protos_IPCFrame_InvokeMethodReply_view rep;
    assert_true(perfetto_protos_IPCFrame_InvokeMethodReply_decode(&rep, fr.body.data, fr.body.size));
    assert_false(rep.success);
    free(copy);

    /* An unsealed SMB offer: refused (the service uses its own). */
    int memfd = sealed_memfd(64 * 1024, false);
    assert_true(memfd >= 0);
    perfetto_protos_InitializeConnectionRequest *ic =
        (perfetto_protos_InitializeConnectionRequest *)raw_invoke(&r, "InitializeConnection",
                                                                  false, &inv);
    perfetto_protos_InitializeConnectionRequest_set_shared_memory_page_size_hint_bytes(ic, 4096);
    perfetto_protos_InitializeConnectionRequest_set_shared_memory_size_hint_bytes(ic, 65536);
    perfetto_protos_InitializeConnectionRequest_set_producer_name(ic, "hostile");
    perfetto_protos_InitializeConnectionRequest_set_producer_provided_shmem(ic, true);
    raw_send(&r, &inv, memfd);
    close(memfd);
    assert_true(raw_wait_frame(&r, &fr, &copy, 10000));
    assert_true(perfetto_protos_IPCFrame_InvokeMethodReply_decode(&rep, fr.body.data, fr.body.size));
    assert_true(rep.success);
    perfetto_protos_InitializeConnectionResponse_view icr;
    assert_true(perfetto_protos_InitializeConnectionResponse_decode(&icr, rep.reply_proto.data,
                                                                    rep.reply_proto.size));
    assert_false(icr.using_shmem_provided_by_producer);
    free(copy);

    /* Get the service's SMB by registering the traced data source. */
    raw_invoke(&r, "GetAsyncCommand", false, &inv);
    raw_send(&r, &inv, -1);
    perfetto_protos_RegisterDataSourceRequest *rd =
        (perfetto_protos_RegisterDataSourceRequest *)raw_invoke(&r, "RegisterDataSource", true,
                                                                &inv);
    perfetto_protos_DataSourceDescriptor d;
    perfetto_protos_RegisterDataSourceRequest_begin_data_source_descriptor(rd, &d);
    perfetto_protos_DataSourceDescriptor_set_name(&d, "gputrace.stress");
    perfetto_protos_DataSourceDescriptor_end(&d);
    raw_send(&r, &inv, -1);
    assert_true(raw_wait_frame(&r, &fr, &copy, 10000)); /* SetupTracing */
    int smb_fd = ipc_conn_take_fd(&r.c);
    assert_true(smb_fd >= 0);
    free(copy);
    struct stat sst;
    assert_int_equal(fstat(smb_fd, &sst), 0);
    size_t smb_size = (size_t)sst.st_size; /* what the service chose from our hints */
    assert_int_equal(smb_size, 65536);
    uint8_t *mem = mmap(NULL, smb_size, PROT_READ | PROT_WRITE, MAP_SHARED, smb_fd, 0);
    assert_true(mem != MAP_FAILED);
    close(smb_fd);

    scribbler sc = {.mem = mem, .size = smb_size};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, scribble_main, &sc), 0);
    for (int round = 0; round < 20; round++) {
        perfetto_protos_CommitDataRequest *cd =
            (perfetto_protos_CommitDataRequest *)raw_invoke(&r, "CommitData", true, &inv);
        for (uint32_t page = 0; page < 70; page++) {
            for (uint32_t chunk = 0; chunk < 16; chunk += 3) {
                perfetto_protos_CommitDataRequest_ChunksToMove m;
                perfetto_protos_CommitDataRequest_begin_chunks_to_move(cd, &m);
                perfetto_protos_CommitDataRequest_ChunksToMove_set_page(
                    &m, page == 69 ? 1000000u : page);
                perfetto_protos_CommitDataRequest_ChunksToMove_set_chunk(&m, chunk);
                perfetto_protos_CommitDataRequest_ChunksToMove_set_target_buffer(
                    &m, chunk == 6 ? 7 : 1);
                perfetto_protos_CommitDataRequest_ChunksToMove_end(&m);
            }
        }
        for (uint32_t w = 0; w < 5; w++) {
            perfetto_protos_CommitDataRequest_ChunkToPatch cp;
            perfetto_protos_CommitDataRequest_begin_chunks_to_patch(cd, &cp);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_target_buffer(&cp, 1);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, w * 300);
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_chunk_id(&cp, (uint32_t)round);
            for (uint32_t k = 0; k < (w == 4 ? 1100u : 3u); k++) {
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch pp;
                perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &pp);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_offset(&pp, k * 999999u);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&pp, "\x81\x80\x80\x00",
                                                                             k % 2 ? 4 : 2);
                perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&pp);
            }
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_has_more_patches(&cp, w == 2);
            perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
        }
        perfetto_protos_CommitDataRequest_set_flush_request_id(cd, 12345);
        raw_send(&r, &inv, -1);
    }
    atomic_store(&sc.stop, true);
    pthread_join(th, NULL);
    /* Register more writers than exist, for a buffer that does not exist. */
    for (uint32_t w = 0; w < 4; w++) {
        perfetto_protos_RegisterTraceWriterRequest *rt =
            (perfetto_protos_RegisterTraceWriterRequest *)raw_invoke(&r, "RegisterTraceWriter",
                                                                     true, &inv);
        perfetto_protos_RegisterTraceWriterRequest_set_trace_writer_id(rt, w * 700);
        perfetto_protos_RegisterTraceWriterRequest_set_target_buffer(rt, w);
        raw_send(&r, &inv, -1);
    }
    /* Then hang up in the middle of a frame, leaving the SMB garbage. */
    static const uint8_t half[] = {0x40, 0, 0, 0, 0x10};
    ipc_conn_send(&r.c, half, sizeof half, -1);
    munmap(mem, smb_size);
    raw_close(&r);
}

static void test_hostile_producers(void **state)
{
    (void)state;
    char *sock = ti_temp_path("hostile", ".sock");
    char *out = ti_temp_path("hostile", ".pftrace");
    pid_t svc = ti_start_service(g_service, sock, out, NULL);
    assert_true(svc > 0);
    hostile_producers(sock);
    /* The service is still there for a well-behaved producer. */
    const char *argv[] = {g_stress,   "--socket", sock,       "--writers", "1",
                          "--packets", "1000",    "--policy", "stall",     "--stall-ms",
                          "10000",     "--quiet", NULL};
    int fd;
    pid_t p = ti_spawn((char *const *)argv, NULL, &fd);
    assert_true(p > 0);
    char *o = ti_read_all(fd, 30000);
    close(fd);
    int st;
    assert_true(ti_wait(p, 30000, &st));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(o);
    assert_true(ti_stop_service(svc));
    ti_report r;
    assert_true(ti_check_trace(out, 0, &r));
    bool found = false;
    for (size_t i = 0; i < r.num_seqs; i++) {
        const ti_seq *s = &r.seqs[i];
        if (s->pid != p)
            continue; /* whatever the scribbler's garbage amounted to */
        found = true;
        assert_int_equal(s->packets, 1000);
        assert_int_equal(s->missing, 0);
        assert_false(s->out_of_order);
        assert_false(s->bad_payload);
    }
    if (!found)
        ti_report_print(&r);
    assert_true(found);
    assert_true(r.has_stats);
    assert_true(r.stats.producers_seen >= 2);
    /* The bogus target buffer and the broken patches were counted. */
    assert_true(r.stats.chunks_discarded > 0);
    assert_true(r.stats.patches_discarded > 0);
    ti_report_free(&r);
    unlink(out);
    free(sock);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GPUTRACE_SERVICE GPUTRACE_STRESS\n", argv[0]);
        return 2;
    }
    g_service = argv[1];
    g_stress = argv[2];
    signal(SIGPIPE, SIG_IGN);
    /* Unbuffered, so a log cut short by a crash still shows where. */
    setvbuf(stdout, NULL, _IONBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_garbage),          cmocka_unit_test(test_huge_length),
        cmocka_unit_test(test_close_mid_frame),  cmocka_unit_test(test_silent),
        cmocka_unit_test(test_bind_fail),        cmocka_unit_test(test_missing_methods),
        cmocka_unit_test(test_init_error),       cmocka_unit_test(test_setup_no_fd),
        cmocka_unit_test(test_setup_pipe_fd),    cmocka_unit_test(test_setup_unsealed),
        cmocka_unit_test(test_setup_bad_page),   cmocka_unit_test(test_many_fds),
        cmocka_unit_test(test_stream_ends),      cmocka_unit_test(test_good_fake_ids_by_name),
        cmocka_unit_test(test_hostile_producers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
