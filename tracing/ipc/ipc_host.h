/* Host side of Perfetto's IPC (src/ipc/host_impl.cc semantics) for one
 * exposed service: accepts clients on a listening Unix socket, answers
 * BindService with the service id and its method table (ids counted from 1
 * in table order, as Perfetto's host numbers them), dispatches InvokeMethod
 * to the owner, and sends replies (streams with has_more) and fds.
 * Unknown frames get a RequestError; unknown services or method ids get
 * InvokeMethodReply{success: false}, as in Perfetto.
 *
 * Single-threaded: one poll loop owns the host and all its clients. */
#ifndef IPC_HOST_H
#define IPC_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc_conn.h"
#include "ipc_frame.h"

typedef struct ipc_host ipc_host;

typedef struct ipc_host_client {
    ipc_conn conn;
    uint64_t id;
    pid_t pid;
    uid_t uid;
    bool bound;
    bool dropping; /* disconnect requested; removed after the poll round */
    void *user;
} ipc_host_client;

typedef struct ipc_host_ops {
    void (*on_connect)(void *ctx, ipc_host_client *cl);
    /* Called once per client, also for clients the owner dropped. */
    void (*on_disconnect)(void *ctx, ipc_host_client *cl);
    /* method_index is 0-based in the table given to ipc_host_create(). The
     * fd the client sent with this frame (if any) is in
     * ipc_host_take_fd(). Reply with ipc_host_begin_reply() unless
     * drop_reply. */
    void (*on_invoke)(void *ctx, ipc_host_client *cl, uint32_t method_index, uint64_t request_id,
                      bool drop_reply, pb_bytes args);
} ipc_host_ops;

typedef struct ipc_host_config {
    int listen_fd;
    const char *service_name;
    const char *const *methods;
    size_t num_methods;
    size_t max_clients;     /* further connections are closed at once */
    uint32_t tx_timeout_ms; /* a client that stops reading is dropped */
    ipc_host_ops ops;
    void *ctx;
} ipc_host_config;

/* Takes the listening socket. NULL on OOM. */
ipc_host *ipc_host_create(const ipc_host_config *cfg);
/* Disconnects every client (on_disconnect for each) and closes. */
void ipc_host_destroy(ipc_host *h);

/* Waits up to timeout_ms for socket activity or for `extra_fd` (>= 0) to
 * become readable, and handles what happened. Returns true when extra_fd
 * is readable. */
bool ipc_host_poll(ipc_host *h, int timeout_ms, int extra_fd);

/* Replies: fill the returned message (cast to the generated writer type)
 * when success, then end. has_more keeps a stream open. */
pb_msg *ipc_host_begin_reply(ipc_host *h, uint64_t request_id, bool success, bool has_more);
bool ipc_host_end_reply(ipc_host *h, ipc_host_client *cl, int fd);
void ipc_host_send_error(ipc_host *h, ipc_host_client *cl, uint64_t request_id, const char *msg);

int ipc_host_take_fd(ipc_host_client *cl);
/* Marks the client for disconnection (safe inside callbacks). */
void ipc_host_drop(ipc_host *h, ipc_host_client *cl);

size_t ipc_host_num_clients(const ipc_host *h);
/* Calls fn for every connected client. */
void ipc_host_for_each(ipc_host *h, void (*fn)(void *ctx, ipc_host_client *cl), void *ctx);

#endif /* IPC_HOST_H */
