/* SPDX-License-Identifier: MIT */
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

#include "tracing/ipc/ipc_conn.h"
#include "tracing/ipc/ipc_frame.h"

typedef struct ipc_host ipc_host;

/* Why the host closed a client (the owner's own drops are IPC_DROP_OWNER). */
typedef enum ipc_drop_reason {
    IPC_DROP_NONE,
    IPC_DROP_OWNER,     /* ipc_host_drop() */
    IPC_DROP_BROKEN,    /* hung up, or broke the framing */
    IPC_DROP_STALLED,   /* did not read what we sent for tx_timeout_ms */
    IPC_DROP_HANDSHAKE, /* not established within handshake_timeout_ms */
    IPC_DROP_IDLE,      /* nothing exchanged for idle_timeout_ms while not active */
    IPC_DROP_EVICTED,   /* a pending handshake, replaced by a newer connection */
} ipc_drop_reason;

typedef struct ipc_host_client {
    ipc_conn conn;
    uint64_t id;
    pid_t pid;
    uid_t uid;
    bool bound;
    bool dropping; /* disconnect requested; removed after the poll round */
    ipc_drop_reason drop_reason;
    /* Set by the owner: the client completed its handshake (from then on
     * the handshake timeout no longer applies and it cannot be evicted). */
    bool established;
    /* Set by the owner: the client takes part in the owner's work, so
     * silence is normal (the idle timeout does not apply). */
    bool active;
    /* Set by the owner: nothing more is read from this client, so what it
     * sends stays in the socket (and, once that is full, in the client),
     * while what is queued for it still goes out. A paused client that
     * hangs up is dropped: nothing it sent would ever be read. */
    bool reading_paused;
    uint64_t connected_ms; /* util_now_ms() at accept */
    uint64_t last_rx_ms;   /* util_now_ms() when it last sent something */
    uint64_t last_tx_ms;   /* util_now_ms() when it last had some of ours to read */
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
    /* Admission: at most max_clients clients (default 64), at most
     * max_per_uid (default max_clients) with one SO_PEERCRED uid. A
     * connection beyond a limit replaces the oldest client of the same
     * limit that has not been established yet (its uid's for the uid
     * limit, anyone's for the total); with none to replace it is closed at
     * once. So connections that never speak cannot lock producers out. */
    size_t max_clients;
    size_t max_per_uid;
    size_t max_tx_bytes;    /* per-client send queue bound; 0: IPC_CONN_MAX_TX_BYTES */
    uint32_t tx_timeout_ms; /* a client that stops reading is dropped (default 10 s) */
    /* 0: no limit. */
    uint32_t handshake_timeout_ms; /* accept to established */
    /* An established client that is not `active` and has exchanged
     * nothing with us for this long: sent nothing (bytes it sent that wait
     * unread in the socket count as said), and had nothing of ours to read
     * (queued, or in the socket unread). */
    uint32_t idle_timeout_ms;
    ipc_host_ops ops;
    void *ctx;
} ipc_host_config;

typedef struct ipc_host_stats {
    uint64_t accepted;
    uint64_t refused;                       /* over a limit with nobody to replace */
    uint64_t dropped[IPC_DROP_EVICTED + 1]; /* by reason */
} ipc_host_stats;

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
const ipc_host_stats *ipc_host_get_stats(const ipc_host *h);
/* Calls fn for every connected client. */
void ipc_host_for_each(ipc_host *h, void (*fn)(void *ctx, ipc_host_client *cl), void *ctx);

#endif /* IPC_HOST_H */
