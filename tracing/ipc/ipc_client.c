/* SPDX-License-Identifier: MIT */
/* Perfetto IPC client: bind, invoke, reply routing. */
#include "tracing/ipc/ipc_client.h"

#include <stdlib.h>
#include <string.h>

/* More outstanding requests than this means the service stopped replying
 * while we kept asking: treat the connection as dead. */
#define MAX_PENDING 4096

bool ipc_client_start(ipc_client *c, int fd, const char *service_name)
{
    memset(c, 0, sizeof *c);
    ipc_frame_builder_init(&c->fb);
    if (!ipc_conn_init(&c->conn, fd))
        return false;
    c->bind_request_id = ++c->last_request_id;
    perfetto_protos_IPCFrame *f = ipc_frame_begin(&c->fb, c->bind_request_id);
    perfetto_protos_IPCFrame_BindService bs;
    perfetto_protos_IPCFrame_begin_msg_bind_service(f, &bs);
    perfetto_protos_IPCFrame_BindService_set_service_name(&bs, service_name);
    perfetto_protos_IPCFrame_BindService_end(&bs);
    return ipc_conn_send_frame(&c->conn, &c->fb, -1);
}

void ipc_client_close(ipc_client *c)
{
    ipc_conn_close(&c->conn);
    ipc_frame_builder_free(&c->fb);
    free(c->pending);
    c->pending = NULL;
    c->num_pending = c->cap_pending = 0;
    c->bound = false;
}

pb_msg *ipc_client_begin_invoke(ipc_client *c, const char *method, bool drop_reply)
{
    if (!c->bound || c->conn.broken)
        return NULL;
    uint32_t id = ipc_method_id(&c->methods, method);
    if (!id)
        return NULL;
    c->inv_method = id;
    c->inv_drop_reply = drop_reply;
    ipc_frame_begin_invoke(&c->fb, c->last_request_id + 1, c->methods.service_id, id, drop_reply,
                           &c->inv);
    return &c->inv.args;
}

uint64_t ipc_client_end_invoke(ipc_client *c, int fd, ipc_reply_fn fn, void *ctx)
{
    ipc_frame_end_invoke(&c->inv);
    uint64_t id = ++c->last_request_id;
    if (!c->inv_drop_reply && fn) {
        if (c->num_pending >= MAX_PENDING) {
            c->conn.broken = true;
            return 0;
        }
        if (c->num_pending == c->cap_pending) {
            size_t ncap = c->cap_pending ? c->cap_pending * 2 : 16;
            ipc_pending *p = realloc(c->pending, ncap * sizeof *p);
            if (!p) {
                c->conn.broken = true;
                return 0;
            }
            c->pending = p;
            c->cap_pending = ncap;
        }
    }
    if (!ipc_conn_send_frame(&c->conn, &c->fb, fd))
        return 0;
    if (!c->inv_drop_reply && fn)
        c->pending[c->num_pending++] = (ipc_pending){ id, fn, ctx };
    return id;
}

static ipc_pending *find_pending(ipc_client *c, uint64_t id)
{
    for (size_t i = 0; i < c->num_pending; i++)
        if (c->pending[i].request_id == id)
            return &c->pending[i];
    return NULL;
}

static void remove_pending(ipc_client *c, uint64_t id)
{
    for (size_t i = 0; i < c->num_pending; i++) {
        if (c->pending[i].request_id == id) {
            memmove(&c->pending[i], &c->pending[i + 1],
                    (c->num_pending - i - 1) * sizeof *c->pending);
            c->num_pending--;
            return;
        }
    }
}

/* False when the frame makes the connection unusable. */
static bool handle_frame(ipc_client *c, pb_bytes payload)
{
    ipc_frame fr;
    if (!ipc_frame_decode(payload.data, payload.size, &fr)) {
        c->bad_frames++;
        return false; /* stricter than Perfetto, which skips it silently */
    }
    if (!c->bind_done && fr.request_id == c->bind_request_id) {
        if (fr.kind != IPC_MSG_BIND_SERVICE_REPLY && fr.kind != IPC_MSG_REQUEST_ERROR) {
            c->bad_frames++;
            return true;
        }
        c->bind_done = true;
        c->bound = fr.kind == IPC_MSG_BIND_SERVICE_REPLY &&
                   ipc_parse_bind_reply(fr.body.data, fr.body.size, &c->methods);
        return c->bound;
    }
    ipc_pending *p = find_pending(c, fr.request_id);
    if (!p) {
        c->bad_frames++; /* unknown request id: ignored, as Perfetto does */
        return true;
    }
    ipc_pending req = *p;
    if (fr.kind == IPC_MSG_REQUEST_ERROR) {
        remove_pending(c, req.request_id);
        req.fn(req.ctx, false, false, (pb_bytes){ NULL, 0 });
        return true;
    }
    if (fr.kind != IPC_MSG_INVOKE_METHOD_REPLY) {
        c->bad_frames++;
        return true;
    }
    perfetto_protos_IPCFrame_InvokeMethodReply_view r;
    if (!perfetto_protos_IPCFrame_InvokeMethodReply_decode(&r, fr.body.data, fr.body.size)) {
        c->bad_frames++;
        return false;
    }
    if (!r.has_more)
        remove_pending(c, req.request_id);
    req.fn(req.ctx, r.success, r.has_more, r.reply_proto);
    return true;
}

bool ipc_client_on_readable(ipc_client *c)
{
    /* Bounded so one chatty peer cannot keep the thread here forever. */
    for (int round = 0; round < 64; round++) {
        ssize_t n = ipc_conn_read(&c->conn);
        if (n < 0)
            return false;
        pb_bytes payload;
        while (ipc_conn_next_frame(&c->conn, &payload)) {
            if (!handle_frame(c, payload)) {
                c->conn.broken = true;
                return false;
            }
            if (c->conn.broken)
                return false;
        }
        if (c->conn.broken)
            return false;
        if (n == 0)
            break;
    }
    return true;
}
