/* SPDX-License-Identifier: MIT */
/* One end of a Perfetto IPC connection: a non-blocking Unix stream socket,
 * a bounded send queue, a deframer, and the file descriptors that travel as
 * SCM_RIGHTS next to frames (the SMB fd, in either direction).
 *
 * Never blocks and never raises SIGPIPE. A peer that misbehaves at this
 * level (frame over IPC_MAX_FRAME_SIZE, several fds on one message,
 * truncated control data, not reading what we send) turns the connection
 * `broken`; the owner then closes it. One thread owns a connection. */
#ifndef IPC_CONN_H
#define IPC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracing/ipc/ipc_frame.h"

/* Default bound on the bytes queued for sending, beyond which the peer
 * counts as not reading (ipc_conn.max_tx_bytes overrides it). */
#define IPC_CONN_MAX_TX_BYTES (8u << 20)
/* A drained send queue keeps at most this much buffer allocated, so a
 * burst does not pin memory for the life of the connection. */
#define IPC_CONN_TX_KEEP_BYTES (64u * 1024u)
/* The most one sendmsg() takes (ipc_conn_flush says why). */
#define IPC_CONN_SEND_PIECE (16u * 1024u)

typedef struct ipc_conn_txfd {
    size_t pos; /* offset in the send queue of the first byte of its frame */
    int fd;     /* our own dup, closed once sent */
} ipc_conn_txfd;

typedef struct ipc_conn {
    int fd;
    bool broken;
    ipc_deframer rx;
    int received_fd; /* last fd the peer sent, until taken (-1: none) */

    uint8_t *tx;
    size_t tx_off, tx_len, tx_cap;
    ipc_conn_txfd *tx_fds;
    size_t num_tx_fds, cap_tx_fds;
    size_t max_tx_bytes; /* 0: IPC_CONN_MAX_TX_BYTES */
    /* When the queue last went from moving to blocked (the socket took
     * nothing); 0 while it moves or is empty. Set only at that
     * transition, with the clock read there. */
    uint64_t tx_blocked_since_ms;
    /* While blocked: the bytes the peer had not read yet (SIOCOUTQ) at the
     * last look, -1 unknown (ipc_conn_note_peer_progress). */
    int tx_unread_seen;
    /* Set by the owner: a send that finds the peer gone (EPIPE,
     * ECONNRESET) closes only our sending side (tx_closed), so what the
     * peer sent before it closed is still read, up to its end of file.
     * gputrace-service needs it: a producer commits its last chunks and
     * exits, and a reply or command of ours that reaches it after the
     * close must not cost those commits. */
    bool read_after_send_error;
    /* The peer stopped receiving: whatever we queue is dropped (counted in
     * bytes_dropped); the connection stays readable. */
    bool tx_closed;
    uint64_t bytes_dropped;

    uint64_t bytes_in, bytes_out, fds_in, fds_out;
} ipc_conn;

/* Takes ownership of the connected socket `fd` (made non-blocking and
 * close-on-exec). False on OOM (fd closed). */
bool ipc_conn_init(ipc_conn *c, int fd);
/* Closes the socket and any fd still queued or received. */
void ipc_conn_close(ipc_conn *c);

/* Queues a complete frame (header included) and, when fd >= 0, a dup of
 * `fd` to travel with its first byte; then tries to send. False (and
 * broken) on error or when the queue would exceed its bound
 * (max_tx_bytes). After tx_closed the frame is dropped and counted. */
bool ipc_conn_send(ipc_conn *c, const uint8_t *frame, size_t n, int fd);
/* Same for the frame in `b` (see ipc_frame_builder). */
bool ipc_conn_send_frame(ipc_conn *c, ipc_frame_builder *b, int fd);
/* Sends what the socket takes now. False when broken. */
bool ipc_conn_flush(ipc_conn *c);
static inline bool ipc_conn_wants_write(const ipc_conn *c)
{
    return c->tx_len > c->tx_off;
}
/* True while the socket holds bytes we sent that the peer has not read
 * yet (SIOCOUTQ): it is still busy with us even when our queue is empty. */
bool ipc_conn_peer_reading(const ipc_conn *c);
/* True while the socket holds bytes the peer sent that we have not read
 * yet (SIOCINQ): a peer whose words wait for us has not been silent. */
bool ipc_conn_input_waiting(const ipc_conn *c);
/* True when queued data made no progress for `timeout_ms`. Reads the
 * clock itself: a "now" taken earlier in the caller's loop could be older
 * than the blocked-since stamp a send in between stored. */
bool ipc_conn_tx_stalled(const ipc_conn *c, uint32_t timeout_ms);
/* While our queue is blocked: if the peer read some of what the socket
 * holds since the last look (SIOCOUTQ went down), the wait starts again
 * from now. A peer that reads slowly keeps the socket below the level at
 * which it turns writable (a quarter of its buffer, for a Unix socket) for
 * seconds; it is slow, not stalled. Call before ipc_conn_tx_stalled. */
void ipc_conn_note_peer_progress(ipc_conn *c);

/* One recvmsg() into the deframer. Returns bytes read (> 0), 0 when
 * nothing is available (EAGAIN), -1 on EOF, error or protocol violation
 * (then broken). Call ipc_conn_next_frame() until it returns false before
 * reading again. */
ssize_t ipc_conn_read(ipc_conn *c);
/* The next buffered frame. False when none is complete; sets broken when
 * the peer announced an oversized frame. */
bool ipc_conn_next_frame(ipc_conn *c, pb_bytes *payload);
/* The fd the peer sent last, now owned by the caller; -1 when none. */
int ipc_conn_take_fd(ipc_conn *c);

/* SO_PEERCRED of the peer; false when unavailable. */
bool ipc_conn_peer_cred(const ipc_conn *c, pid_t *pid, uid_t *uid);

/* ---- sockets ------------------------------------------------------------ */

/* Connected non-blocking socket, or -1 (errno set). A name starting with
 * '@' is in the abstract namespace. */
int ipc_socket_connect(const char *path);
/* Listening non-blocking socket, or -1. A stale socket file at `path` (one
 * nobody accepts on) is replaced. The socket file gets exactly the
 * permission bits `mode` (e.g. 0600): bind() creates it under a umask
 * that clears every other bit, so it never exists with wider access, and
 * the caller's umask does not matter. The umask is process-wide: call this
 * while no other thread creates files. Abstract names ('@') have no
 * permissions; `mode` does not apply to them. */
int ipc_socket_listen_mode(const char *path, mode_t mode);
/* The same, owner-only (0600). */
int ipc_socket_listen(const char *path);

/* The producer socket as Perfetto resolves it (src/tracing/ipc/
 * default_socket.cc): $PERFETTO_PRODUCER_SOCK_NAME if set, else
 * /run/perfetto/traced-producer.sock when /run/perfetto/ is accessible,
 * else /tmp/perfetto-producer. */
const char *ipc_producer_socket_path(void);
/* The rule itself, for tests: env_value may be NULL. */
const char *ipc_resolve_producer_socket(const char *env_value, bool run_perfetto_usable);

/* ---- time --------------------------------------------------------------- */

/* Milliseconds from `since` to `now`, 0 when `since` is the later one (a
 * stamp taken after `now` was read): never wraps around to "forever". */
static inline uint64_t ipc_elapsed_ms(uint64_t since, uint64_t now)
{
    return now > since ? now - since : 0;
}

/* The deadline `ms` after `now`, saturating. */
static inline uint64_t ipc_deadline_ms(uint64_t now, uint64_t ms)
{
    return ms > UINT64_MAX - now ? UINT64_MAX : now + ms;
}

/* A poll() timeout: what is left until `deadline`, at most cap_ms (>= 0),
 * 0 once it passed. */
static inline int ipc_ms_left(uint64_t deadline, uint64_t now, int cap_ms)
{
    uint64_t left = deadline > now ? deadline - now : 0;
    return left < (uint64_t)cap_ms ? (int)left : cap_ms;
}

#endif /* IPC_CONN_H */
