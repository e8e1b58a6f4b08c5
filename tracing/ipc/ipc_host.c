/* Perfetto IPC host: accept, bind, dispatch, reply. */
#include "ipc_host.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SERVICE_ID 1u /* Perfetto's host numbers exposed services from 1 */

struct ipc_host {
    ipc_host_config cfg;
    ipc_host_client **clients;
    size_t num_clients, cap_clients;
    uint64_t last_client_id;
    ipc_frame_builder fb;
    ipc_reply rep;
    struct pollfd *pfds;
    size_t cap_pfds;
};

ipc_host *ipc_host_create(const ipc_host_config *cfg)
{
    ipc_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->cfg = *cfg;
    if (!h->cfg.max_clients)
        h->cfg.max_clients = 64;
    if (!h->cfg.tx_timeout_ms)
        h->cfg.tx_timeout_ms = 10000;
    ipc_frame_builder_init(&h->fb);
    return h;
}

static void remove_client(ipc_host *h, size_t i)
{
    ipc_host_client *cl = h->clients[i];
    if (h->cfg.ops.on_disconnect)
        h->cfg.ops.on_disconnect(h->cfg.ctx, cl);
    ipc_conn_close(&cl->conn);
    free(cl);
    h->clients[i] = h->clients[--h->num_clients];
}

void ipc_host_destroy(ipc_host *h)
{
    if (!h)
        return;
    while (h->num_clients)
        remove_client(h, h->num_clients - 1);
    if (h->cfg.listen_fd >= 0)
        close(h->cfg.listen_fd);
    ipc_frame_builder_free(&h->fb);
    free(h->clients);
    free(h->pfds);
    free(h);
}

size_t ipc_host_num_clients(const ipc_host *h)
{
    return h->num_clients;
}

void ipc_host_for_each(ipc_host *h, void (*fn)(void *ctx, ipc_host_client *cl), void *ctx)
{
    for (size_t i = 0; i < h->num_clients; i++)
        fn(ctx, h->clients[i]);
}

void ipc_host_drop(ipc_host *h, ipc_host_client *cl)
{
    (void)h;
    cl->dropping = true;
}

int ipc_host_take_fd(ipc_host_client *cl)
{
    return ipc_conn_take_fd(&cl->conn);
}

static void accept_clients(ipc_host *h)
{
    for (;;) {
        int fd = accept4(h->cfg.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: try on the next round */
        if (h->num_clients >= h->cfg.max_clients) {
            close(fd);
            continue;
        }
        if (h->num_clients == h->cap_clients) {
            size_t ncap = h->cap_clients ? h->cap_clients * 2 : 8;
            ipc_host_client **p = realloc(h->clients, ncap * sizeof *p);
            if (!p) {
                close(fd);
                return;
            }
            h->clients = p;
            h->cap_clients = ncap;
        }
        ipc_host_client *cl = calloc(1, sizeof *cl);
        if (!cl || !ipc_conn_init(&cl->conn, fd)) {
            if (!cl)
                close(fd);
            free(cl);
            continue;
        }
        cl->id = ++h->last_client_id;
        cl->pid = -1;
        cl->uid = (uid_t)-1;
        ipc_conn_peer_cred(&cl->conn, &cl->pid, &cl->uid);
        h->clients[h->num_clients++] = cl;
        if (h->cfg.ops.on_connect)
            h->cfg.ops.on_connect(h->cfg.ctx, cl);
    }
}

pb_msg *ipc_host_begin_reply(ipc_host *h, uint64_t request_id, bool success, bool has_more)
{
    ipc_frame_begin_reply(&h->fb, request_id, success, has_more, &h->rep);
    return &h->rep.reply;
}

bool ipc_host_end_reply(ipc_host *h, ipc_host_client *cl, int fd)
{
    ipc_frame_end_reply(&h->rep);
    if (!ipc_conn_send_frame(&cl->conn, &h->fb, fd)) {
        cl->dropping = true;
        return false;
    }
    return true;
}

void ipc_host_send_error(ipc_host *h, ipc_host_client *cl, uint64_t request_id, const char *msg)
{
    perfetto_protos_IPCFrame *f = ipc_frame_begin(&h->fb, request_id);
    perfetto_protos_IPCFrame_RequestError e;
    perfetto_protos_IPCFrame_begin_msg_request_error(f, &e);
    perfetto_protos_IPCFrame_RequestError_set_error(&e, msg);
    perfetto_protos_IPCFrame_RequestError_end(&e);
    if (!ipc_conn_send_frame(&cl->conn, &h->fb, -1))
        cl->dropping = true;
}

static void on_bind(ipc_host *h, ipc_host_client *cl, const ipc_frame *fr)
{
    perfetto_protos_IPCFrame_BindService_view v;
    bool known = perfetto_protos_IPCFrame_BindService_decode(&v, fr->body.data, fr->body.size) &&
                 v.service_name.size == strlen(h->cfg.service_name) &&
                 memcmp(v.service_name.data, h->cfg.service_name, v.service_name.size) == 0;
    perfetto_protos_IPCFrame *f = ipc_frame_begin(&h->fb, fr->request_id);
    perfetto_protos_IPCFrame_BindServiceReply r;
    perfetto_protos_IPCFrame_begin_msg_bind_service_reply(f, &r);
    if (known) {
        perfetto_protos_IPCFrame_BindServiceReply_set_success(&r, true);
        perfetto_protos_IPCFrame_BindServiceReply_set_service_id(&r, SERVICE_ID);
        for (size_t i = 0; i < h->cfg.num_methods; i++) {
            perfetto_protos_IPCFrame_BindServiceReply_MethodInfo mi;
            perfetto_protos_IPCFrame_BindServiceReply_begin_methods(&r, &mi);
            perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_set_name(&mi, h->cfg.methods[i]);
            perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_set_id(&mi, (uint32_t)i + 1);
            perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_end(&mi);
        }
        cl->bound = true;
    }
    perfetto_protos_IPCFrame_BindServiceReply_end(&r);
    if (!ipc_conn_send_frame(&cl->conn, &h->fb, -1))
        cl->dropping = true;
}

static void on_invoke(ipc_host *h, ipc_host_client *cl, const ipc_frame *fr)
{
    perfetto_protos_IPCFrame_InvokeMethod_view v;
    if (!perfetto_protos_IPCFrame_InvokeMethod_decode(&v, fr->body.data, fr->body.size)) {
        ipc_host_send_error(h, cl, fr->request_id, "malformed InvokeMethod");
        return;
    }
    if (v.service_id != SERVICE_ID || !cl->bound || v.method_id == 0 ||
        v.method_id > h->cfg.num_methods) {
        if (!v.drop_reply) {
            ipc_host_begin_reply(h, fr->request_id, false, false);
            ipc_host_end_reply(h, cl, -1);
        }
        return;
    }
    h->cfg.ops.on_invoke(h->cfg.ctx, cl, v.method_id - 1, fr->request_id, v.drop_reply,
                         v.args_proto);
}

static void read_client(ipc_host *h, ipc_host_client *cl)
{
    for (int round = 0; round < 16 && !cl->dropping; round++) {
        ssize_t n = ipc_conn_read(&cl->conn);
        if (n < 0) {
            cl->dropping = true;
            return;
        }
        pb_bytes payload;
        while (!cl->dropping && ipc_conn_next_frame(&cl->conn, &payload)) {
            ipc_frame fr;
            if (!ipc_frame_decode(payload.data, payload.size, &fr)) {
                cl->dropping = true; /* garbage on the socket */
                return;
            }
            switch (fr.kind) {
            case IPC_MSG_BIND_SERVICE:
                on_bind(h, cl, &fr);
                break;
            case IPC_MSG_INVOKE_METHOD:
                on_invoke(h, cl, &fr);
                break;
            case IPC_MSG_SET_PEER_IDENTITY:
                break; /* ignored on Unix sockets, as Perfetto does */
            default:
                ipc_host_send_error(h, cl, fr.request_id, "unknown request");
                break;
            }
        }
        if (cl->conn.broken)
            cl->dropping = true;
        if (n == 0)
            return;
    }
}

bool ipc_host_poll(ipc_host *h, int timeout_ms, int extra_fd)
{
    size_t n = h->num_clients + 2;
    if (n > h->cap_pfds) {
        struct pollfd *p = realloc(h->pfds, n * sizeof *p);
        if (!p)
            return false;
        h->pfds = p;
        h->cap_pfds = n;
    }
    struct pollfd *pf = h->pfds;
    pf[0] = (struct pollfd){.fd = h->cfg.listen_fd, .events = POLLIN};
    pf[1] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
    size_t nc = h->num_clients;
    for (size_t i = 0; i < nc; i++) {
        ipc_host_client *cl = h->clients[i];
        pf[2 + i] = (struct pollfd){
            .fd = cl->conn.fd,
            .events = (short)(POLLIN | (ipc_conn_wants_write(&cl->conn) ? POLLOUT : 0)),
        };
    }
    int rc = poll(pf, 2 + nc, timeout_ms);
    if (rc < 0 && errno != EINTR)
        return false;
    bool extra = rc > 0 && extra_fd >= 0 && (pf[1].revents & POLLIN);
    uint64_t now = ipc_now_ms();
    for (size_t i = 0; rc > 0 && i < nc; i++) {
        ipc_host_client *cl = h->clients[i];
        short re = pf[2 + i].revents;
        if (re & POLLOUT)
            ipc_conn_flush(&cl->conn);
        if (re & (POLLIN | POLLHUP | POLLERR))
            read_client(h, cl);
    }
    for (size_t i = 0; i < h->num_clients; i++) {
        ipc_host_client *cl = h->clients[i];
        if (cl->conn.broken || ipc_conn_tx_stalled(&cl->conn, now, h->cfg.tx_timeout_ms))
            cl->dropping = true;
    }
    /* Removal last: callbacks above may still refer to any client. */
    for (size_t i = h->num_clients; i-- > 0;)
        if (h->clients[i]->dropping)
            remove_client(h, i);
    if (rc > 0 && (pf[0].revents & POLLIN))
        accept_clients(h);
    return extra;
}
