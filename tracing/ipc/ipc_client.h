/* SPDX-License-Identifier: MIT */
/* Client side of Perfetto's IPC (src/ipc/client_impl.cc semantics):
 * BindService by name, remote method ids looked up by name in the
 * BindServiceReply, InvokeMethod with request ids, replies routed back by
 * request id, streaming replies (has_more) kept until the last one,
 * RequestError failing the request it names. Replies to unknown request ids
 * are ignored, as Perfetto does.
 *
 * Single-threaded: the owner's I/O thread calls everything. */
#ifndef IPC_CLIENT_H
#define IPC_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "tracing/ipc/ipc_conn.h"
#include "tracing/ipc/ipc_frame.h"

/* success false: the service failed the call (InvokeMethodReply.success
 * false, or RequestError). `reply` is the reply message bytes. */
typedef void (*ipc_reply_fn)(void *ctx, bool success, bool has_more, pb_bytes reply);

typedef struct ipc_pending {
    uint64_t request_id;
    ipc_reply_fn fn;
    void *ctx;
} ipc_pending;

typedef struct ipc_client {
    ipc_conn conn;
    ipc_frame_builder fb;
    uint64_t last_request_id;
    uint64_t bind_request_id;
    bool bind_done;
    bool bound;
    ipc_method_table methods;
    ipc_pending *pending;
    size_t num_pending, cap_pending;
    ipc_invoke inv;
    uint32_t inv_method;
    bool inv_drop_reply;
    /* Protocol errors seen (frames we could not decode, unexpected
     * replies); the owner decides what is fatal. */
    uint64_t bad_frames;
} ipc_client;

/* Takes the connected socket and sends BindService(service_name). */
bool ipc_client_start(ipc_client *c, int fd, const char *service_name);
/* Closes the connection; pending requests are dropped without callbacks. */
void ipc_client_close(ipc_client *c);

/* Starts an InvokeMethod of `method` (looked up by name). Returns the
 * request message to fill (cast to the generated writer type, whose only
 * member is the pb_msg), or NULL when the method is unknown. */
pb_msg *ipc_client_begin_invoke(ipc_client *c, const char *method, bool drop_reply);
/* Sends it, with `fd` (or -1) as SCM_RIGHTS. `fn` gets the reply(s) unless
 * drop_reply. Returns the request id, 0 on failure (connection broken). */
uint64_t ipc_client_end_invoke(ipc_client *c, int fd, ipc_reply_fn fn, void *ctx);

/* Reads what is available and dispatches frames. Returns false when the
 * connection is gone or the peer broke the framing; the owner closes it. */
bool ipc_client_on_readable(ipc_client *c);
static inline bool ipc_client_on_writable(ipc_client *c)
{
    return ipc_conn_flush(&c->conn);
}

/* For a reply callback that gives up on the connection: frames already
 * read are not dispatched any more (ipc_client_on_readable() returns
 * false), and the owner closes the connection. */
static inline void ipc_client_abandon(ipc_client *c)
{
    c->conn.broken = true;
}

/* The fd that came with the frame being handled (for reply callbacks). */
static inline int ipc_client_take_fd(ipc_client *c)
{
    return ipc_conn_take_fd(&c->conn);
}

#endif /* IPC_CLIENT_H */
