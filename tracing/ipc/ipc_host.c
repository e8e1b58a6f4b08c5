/* SPDX-License-Identifier: MIT */
/* Perfetto IPC host: accept, bind, dispatch, reply. */
#include "tracing/ipc/ipc_host.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tracing/util/util_time.h"

#define SERVICE_ID 1u /* Perfetto's host numbers exposed services from 1 */
/* Connections taken from the backlog per poll round: a flood of them
 * cannot keep the loop from serving the clients it has. */
#define MAX_ACCEPTS_PER_ROUND 64

struct ipc_host {
    ipc_host_config cfg;
    ipc_host_client **clients;
    size_t num_clients, cap_clients;
    uint64_t last_client_id;
    ipc_frame_builder fb;
    ipc_reply rep;
    struct pollfd *pfds;
    size_t cap_pfds;
    ipc_host_stats stats;
};

ipc_host *ipc_host_create(const ipc_host_config *cfg)
{
    ipc_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->cfg = *cfg;
    if (!h->cfg.max_clients)
        h->cfg.max_clients = 64;
    if (!h->cfg.max_per_uid || h->cfg.max_per_uid > h->cfg.max_clients)
        h->cfg.max_per_uid = h->cfg.max_clients;
    if (!h->cfg.tx_timeout_ms)
        h->cfg.tx_timeout_ms = 10000;
    ipc_frame_builder_init(&h->fb);
    return h;
}

static void remove_client(ipc_host *h, size_t i)
{
    ipc_host_client *cl = h->clients[i];
    h->stats.dropped[cl->drop_reason ? cl->drop_reason : IPC_DROP_BROKEN]++;
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

const ipc_host_stats *ipc_host_get_stats(const ipc_host *h)
{
    return &h->stats;
}

/* Marks the client for removal after the poll round; the first reason
 * given is the one that counts. */
static void drop_for(ipc_host_client *cl, ipc_drop_reason why)
{
    if (!cl->dropping)
        cl->drop_reason = why;
    cl->dropping = true;
}

void ipc_host_for_each(ipc_host *h, void (*fn)(void *ctx, ipc_host_client *cl), void *ctx)
{
    for (size_t i = 0; i < h->num_clients; i++)
        fn(ctx, h->clients[i]);
}

void ipc_host_drop(ipc_host *h, ipc_host_client *cl)
{
    (void)h;
    drop_for(cl, IPC_DROP_OWNER);
}

int ipc_host_take_fd(ipc_host_client *cl)
{
    return ipc_conn_take_fd(&cl->conn);
}

/* The oldest client still in its handshake (of `uid` unless any_uid); -1
 * when there is none. */
static ssize_t oldest_pending(const ipc_host *h, bool any_uid, uid_t uid)
{
    ssize_t best = -1;
    for (size_t i = 0; i < h->num_clients; i++) {
        const ipc_host_client *cl = h->clients[i];
        if (cl->established || cl->dropping || (!any_uid && cl->uid != uid))
            continue;
        if (best < 0 || cl->connected_ms < h->clients[best]->connected_ms ||
            (cl->connected_ms == h->clients[best]->connected_ms && cl->id < h->clients[best]->id))
            best = (ssize_t)i;
    }
    return best;
}

/* Room for one more client with `uid`: true when there is, possibly after
 * evicting a pending handshake (removed here). */
static bool make_room(ipc_host *h, uid_t uid)
{
    size_t of_uid = 0;
    for (size_t i = 0; i < h->num_clients; i++)
        of_uid += h->clients[i]->uid == uid;
    ssize_t victim;
    if (of_uid >= h->cfg.max_per_uid)
        victim = oldest_pending(h, false, uid); /* a uid only evicts its own */
    else if (h->num_clients >= h->cfg.max_clients)
        victim = oldest_pending(h, true, 0);
    else
        return true;
    if (victim < 0)
        return false;
    drop_for(h->clients[victim], IPC_DROP_EVICTED);
    remove_client(h, (size_t)victim);
    return true;
}

static void accept_clients(ipc_host *h)
{
    for (int n = 0; n < MAX_ACCEPTS_PER_ROUND; n++) {
        int fd = accept4(h->cfg.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: try on the next round */
        ipc_host_client *cl = calloc(1, sizeof *cl);
        if (!cl) {
            close(fd);
            continue;
        }
        if (!ipc_conn_init(&cl->conn, fd)) {
            free(cl);
            continue;
        }
        /* A producer may close right after its last requests: those are
         * read and served even when our answer finds it gone. */
        cl->conn.read_after_send_error = true;
        cl->pid = -1;
        cl->uid = (uid_t)-1;
        ipc_conn_peer_cred(&cl->conn, &cl->pid, &cl->uid);
        if (!make_room(h, cl->uid)) {
            h->stats.refused++;
            ipc_conn_close(&cl->conn);
            free(cl);
            continue;
        }
        if (h->num_clients == h->cap_clients) {
            size_t ncap = h->cap_clients ? h->cap_clients * 2 : 8;
            ipc_host_client **p = realloc(h->clients, ncap * sizeof *p);
            if (!p) {
                ipc_conn_close(&cl->conn);
                free(cl);
                return;
            }
            h->clients = p;
            h->cap_clients = ncap;
        }
        cl->id = ++h->last_client_id;
        cl->conn.max_tx_bytes = h->cfg.max_tx_bytes;
        cl->connected_ms = cl->last_rx_ms = cl->last_tx_ms = util_now_ms();
        h->clients[h->num_clients++] = cl;
        h->stats.accepted++;
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
        drop_for(cl, IPC_DROP_BROKEN);
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
        drop_for(cl, IPC_DROP_BROKEN);
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
        drop_for(cl, IPC_DROP_BROKEN);
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
    for (int round = 0; round < 16 && !cl->dropping && !cl->reading_paused; round++) {
        ssize_t n = ipc_conn_read(&cl->conn);
        if (n < 0) {
            drop_for(cl, IPC_DROP_BROKEN);
            return;
        }
        if (n > 0)
            cl->last_rx_ms = util_now_ms();
        pb_bytes payload;
        while (!cl->dropping && !cl->reading_paused && ipc_conn_next_frame(&cl->conn, &payload)) {
            ipc_frame fr;
            if (!ipc_frame_decode(payload.data, payload.size, &fr)) {
                drop_for(cl, IPC_DROP_BROKEN); /* garbage on the socket */
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
            drop_for(cl, IPC_DROP_BROKEN);
        if (n == 0)
            return;
    }
}

/* Idle: nothing received, nothing queued, and nothing of ours left unread
 * in the socket, for idle_timeout_ms. A peer still reading what we sent
 * (slowly, perhaps) is busy: its idle time starts when it has read all.
 * A peer whose words sit unread in the socket spoke: they came after this
 * round's reads, and a service kept from running (a loaded machine) would
 * otherwise judge its own lateness as the peer's silence. */
static void check_idle(ipc_host *h, ipc_host_client *cl, uint64_t now)
{
    if (ipc_conn_wants_write(&cl->conn) || ipc_conn_peer_reading(&cl->conn)) {
        cl->last_tx_ms = now;
        return;
    }
    if (!cl->reading_paused && ipc_conn_input_waiting(&cl->conn))
        return; /* read, and stamped, next round */
    uint64_t last = cl->last_rx_ms > cl->last_tx_ms ? cl->last_rx_ms : cl->last_tx_ms;
    if (ipc_elapsed_ms(last, now) >= h->cfg.idle_timeout_ms)
        drop_for(cl, IPC_DROP_IDLE);
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
    pf[0] = (struct pollfd){ .fd = h->cfg.listen_fd, .events = POLLIN };
    pf[1] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
    size_t nc = h->num_clients;
    for (size_t i = 0; i < nc; i++) {
        ipc_host_client *cl = h->clients[i];
        pf[2 + i] = (struct pollfd){
            .fd = cl->conn.fd,
            .events = (short)((cl->reading_paused ? 0 : POLLIN) |
                              (ipc_conn_wants_write(&cl->conn) ? POLLOUT : 0)),
        };
    }
    int rc = poll(pf, 2 + nc, timeout_ms);
    if (rc < 0 && errno != EINTR)
        return false;
    bool extra = rc > 0 && extra_fd >= 0 && (pf[1].revents & POLLIN);
    for (size_t i = 0; rc > 0 && i < nc; i++) {
        ipc_host_client *cl = h->clients[i];
        short re = pf[2 + i].revents;
        if (re & POLLOUT)
            ipc_conn_flush(&cl->conn);
        if (cl->reading_paused && (re & (POLLHUP | POLLERR)))
            drop_for(cl, IPC_DROP_BROKEN); /* else every poll would wake for it */
        else if (re & (POLLIN | POLLHUP | POLLERR))
            read_client(h, cl);
    }
    /* Read after the round's I/O: every stamp the round took is older. */
    uint64_t now = util_now_ms();
    for (size_t i = 0; i < h->num_clients; i++) {
        ipc_host_client *cl = h->clients[i];
        ipc_conn_note_peer_progress(&cl->conn);
        if (cl->conn.broken)
            drop_for(cl, IPC_DROP_BROKEN);
        else if (ipc_conn_tx_stalled(&cl->conn, h->cfg.tx_timeout_ms))
            drop_for(cl, IPC_DROP_STALLED);
        else if (!cl->established && h->cfg.handshake_timeout_ms &&
                 ipc_elapsed_ms(cl->connected_ms, now) >= h->cfg.handshake_timeout_ms)
            drop_for(cl, IPC_DROP_HANDSHAKE);
        else if (cl->established && !cl->active && h->cfg.idle_timeout_ms)
            check_idle(h, cl, now);
    }
    /* Removal last: callbacks above may still refer to any client. */
    for (size_t i = h->num_clients; i-- > 0;)
        if (h->clients[i]->dropping)
            remove_client(h, i);
    if (rc > 0 && (pf[0].revents & POLLIN))
        accept_clients(h);
    return extra;
}
