/* SPDX-License-Identifier: MIT */
/* Non-blocking Unix stream connection with SCM_RIGHTS fd passing. */
#include "tracing/ipc/ipc_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tracing/util/util_time.h"

/* Room for a few fds: a peer sending more than one on a message is
 * violating the protocol, and we want to see (and close) all of them
 * rather than let the kernel truncate silently. */
#define RX_MAX_FDS 8

static bool set_nonblock_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return false;
    int fdfl = fcntl(fd, F_GETFD);
    return fdfl >= 0 && fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) == 0;
}

bool ipc_conn_init(ipc_conn *c, int fd)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->received_fd = -1;
    if (!set_nonblock_cloexec(fd) || !ipc_deframer_init(&c->rx)) {
        close(fd);
        c->fd = -1;
        c->broken = true;
        return false;
    }
    return true;
}

void ipc_conn_close(ipc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    if (c->received_fd >= 0)
        close(c->received_fd);
    c->received_fd = -1;
    for (size_t i = 0; i < c->num_tx_fds; i++)
        close(c->tx_fds[i].fd);
    free(c->tx_fds);
    free(c->tx);
    ipc_deframer_free(&c->rx);
    c->tx = NULL;
    c->tx_fds = NULL;
    c->num_tx_fds = c->cap_tx_fds = 0;
    c->tx_len = c->tx_off = c->tx_cap = 0;
    c->broken = true;
}

/* ---- sending ------------------------------------------------------------ */

static bool tx_reserve(ipc_conn *c, size_t n)
{
    if (c->tx_off && c->tx_off == c->tx_len && c->num_tx_fds == 0)
        c->tx_off = c->tx_len = 0; /* drained: rewind */
    size_t max = c->max_tx_bytes ? c->max_tx_bytes : IPC_CONN_MAX_TX_BYTES;
    if (c->tx_len - c->tx_off + n > max)
        return false;
    if (c->tx_len + n <= c->tx_cap)
        return true;
    if (c->tx_off) {
        /* Compact; queued fd positions move with the bytes. */
        memmove(c->tx, c->tx + c->tx_off, c->tx_len - c->tx_off);
        for (size_t i = 0; i < c->num_tx_fds; i++)
            c->tx_fds[i].pos -= c->tx_off;
        c->tx_len -= c->tx_off;
        c->tx_off = 0;
        if (c->tx_len + n <= c->tx_cap)
            return true;
    }
    size_t ncap = c->tx_cap ? c->tx_cap : 64 * 1024;
    while (ncap < c->tx_len + n)
        ncap *= 2;
    uint8_t *p = realloc(c->tx, ncap);
    if (!p)
        return false;
    c->tx = p;
    c->tx_cap = ncap;
    return true;
}

/* Records a dup of `fd` to go out with the byte about to be queued at
 * tx_len (the first byte of its frame). */
static bool queue_fd(ipc_conn *c, int fd)
{
    if (c->num_tx_fds == c->cap_tx_fds) {
        size_t ncap = c->cap_tx_fds ? c->cap_tx_fds * 2 : 4;
        ipc_conn_txfd *p = realloc(c->tx_fds, ncap * sizeof *p);
        if (!p)
            return false;
        c->tx_fds = p;
        c->cap_tx_fds = ncap;
    }
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0)
        return false;
    c->tx_fds[c->num_tx_fds++] = (ipc_conn_txfd){ c->tx_len, dup_fd };
    return true;
}

/* Makes room for n bytes (and the fd), leaving the queue as it was on
 * failure. */
static bool begin_queue(ipc_conn *c, size_t n, int fd)
{
    if (c->broken || n == 0 || !tx_reserve(c, n) || (fd >= 0 && !queue_fd(c, fd))) {
        c->broken = true;
        return false;
    }
    if (c->tx_off == c->tx_len)
        c->tx_blocked_since_ms = 0;
    return true;
}

/* The peer stopped receiving (read_after_send_error): frames are dropped,
 * the connection stays readable. */
static bool drop_if_tx_closed(ipc_conn *c, size_t n)
{
    if (!c->tx_closed || c->broken)
        return false;
    c->bytes_dropped += n;
    return true;
}

bool ipc_conn_send(ipc_conn *c, const uint8_t *frame, size_t n, int fd)
{
    if (drop_if_tx_closed(c, n))
        return true;
    if (!begin_queue(c, n, fd))
        return false;
    memcpy(c->tx + c->tx_len, frame, n);
    c->tx_len += n;
    return ipc_conn_flush(c);
}

bool ipc_conn_send_frame(ipc_conn *c, ipc_frame_builder *b, int fd)
{
    size_t n = ipc_frame_size(b);
    if (drop_if_tx_closed(c, n))
        return true;
    if (!begin_queue(c, n, fd))
        return false;
    ipc_frame_copy(b, c->tx + c->tx_len);
    c->tx_len += n;
    return ipc_conn_flush(c);
}

/* The peer is gone for what we send: drop the queue (and its fds). */
static void close_tx(ipc_conn *c)
{
    c->tx_closed = true;
    c->bytes_dropped += c->tx_len - c->tx_off;
    for (size_t i = 0; i < c->num_tx_fds; i++)
        close(c->tx_fds[i].fd);
    c->num_tx_fds = 0;
    c->tx_off = c->tx_len = 0;
    c->tx_blocked_since_ms = 0;
}

bool ipc_conn_flush(ipc_conn *c)
{
    if (c->broken)
        return false;
    while (c->tx_off < c->tx_len) {
        size_t end = c->tx_len;
        int fd = -1;
        if (c->num_tx_fds) {
            /* Stop before the next fd's frame; send that fd with its
             * frame's first byte. */
            if (c->tx_fds[0].pos == c->tx_off)
                fd = c->tx_fds[0].fd;
            else
                end = c->tx_fds[0].pos;
        }
        /* In pieces: the kernel frees a piece once the peer has read all
         * of it, and that is the only sign of a peer that reads slowly
         * (ipc_conn_note_peer_progress). One sendmsg of 200 KB would stay
         * in the socket, unchanged, for as long as it takes to read. */
        if (end - c->tx_off > IPC_CONN_SEND_PIECE)
            end = c->tx_off + IPC_CONN_SEND_PIECE;
        struct iovec iov = { c->tx + c->tx_off, end - c->tx_off };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        if (fd >= 0) {
            memset(&ctl, 0, sizeof ctl);
            msg.msg_control = ctl.buf;
            msg.msg_controllen = sizeof ctl.buf;
            struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &fd, sizeof fd);
        }
        ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* Stamped at the transition only: a later blocked send
                 * must not move the start of the wait. */
                if (!c->tx_blocked_since_ms) {
                    c->tx_blocked_since_ms = util_now_ms();
                    c->tx_unread_seen = -1;
                }
                return true;
            }
            if (c->read_after_send_error && (errno == EPIPE || errno == ECONNRESET)) {
                close_tx(c);
                return true;
            }
            c->broken = true;
            return false;
        }
        if (fd >= 0 && n > 0) {
            close(fd);
            c->fds_out++;
            memmove(c->tx_fds, c->tx_fds + 1, (c->num_tx_fds - 1) * sizeof *c->tx_fds);
            c->num_tx_fds--;
        }
        c->tx_off += (size_t)n;
        c->bytes_out += (uint64_t)n;
        c->tx_blocked_since_ms = 0;
    }
    if (c->num_tx_fds == 0) {
        c->tx_off = c->tx_len = 0;
        if (c->tx_cap > IPC_CONN_TX_KEEP_BYTES) {
            free(c->tx);
            c->tx = NULL;
            c->tx_cap = 0;
        }
    }
    return true;
}

bool ipc_conn_peer_reading(const ipc_conn *c)
{
    int unread = 0;
    return c->fd >= 0 && ioctl(c->fd, SIOCOUTQ, &unread) == 0 && unread > 0;
}

bool ipc_conn_input_waiting(const ipc_conn *c)
{
    int unread = 0;
    return c->fd >= 0 && ioctl(c->fd, SIOCINQ, &unread) == 0 && unread > 0;
}

void ipc_conn_note_peer_progress(ipc_conn *c)
{
    int unread;
    if (!c->tx_blocked_since_ms || c->fd < 0 || ioctl(c->fd, SIOCOUTQ, &unread) != 0)
        return;
    if (c->tx_unread_seen >= 0 && unread < c->tx_unread_seen)
        c->tx_blocked_since_ms = util_now_ms();
    c->tx_unread_seen = unread;
}

bool ipc_conn_tx_stalled(const ipc_conn *c, uint32_t timeout_ms)
{
    return ipc_conn_wants_write(c) && c->tx_blocked_since_ms &&
           ipc_elapsed_ms(c->tx_blocked_since_ms, util_now_ms()) >= timeout_ms;
}

/* ---- receiving ---------------------------------------------------------- */

ssize_t ipc_conn_read(ipc_conn *c)
{
    if (c->broken)
        return -1;
    size_t avail;
    uint8_t *dst = ipc_deframer_space(&c->rx, &avail);
    if (avail == 0) {
        /* A full buffer that is not a frame can only be an oversized
         * announcement, which ipc_conn_next_frame() reports. */
        c->broken = true;
        return -1;
    }
    struct iovec iov = { dst, avail };
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(RX_MAX_FDS * sizeof(int))];
    } ctl;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf
    };
    ssize_t n;
    do {
        n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        c->broken = true;
        return -1;
    }
    int fds[RX_MAX_FDS * 2];
    size_t nfds = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && nfds < RX_MAX_FDS * 2; i++)
            memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
    }
    /* One fd per message, as Perfetto's UnixSocket receives; more, or
     * control data cut short, is a protocol violation. */
    bool violation = (msg.msg_flags & MSG_CTRUNC) || nfds > 1;
    for (size_t i = 0; i < nfds; i++) {
        if (violation) {
            close(fds[i]);
            continue;
        }
        if (c->received_fd >= 0)
            close(c->received_fd); /* an fd nobody asked for: keep the newest */
        c->received_fd = fds[i];
        c->fds_in++;
    }
    if (violation) {
        c->broken = true;
        return -1;
    }
    if (n == 0) {
        c->broken = true;
        return -1;
    }
    ipc_deframer_commit(&c->rx, (size_t)n);
    c->bytes_in += (uint64_t)n;
    return n;
}

bool ipc_conn_next_frame(ipc_conn *c, pb_bytes *payload)
{
    if (c->fd < 0)
        return false;
    switch (ipc_deframer_pop(&c->rx, payload)) {
    case IPC_DEFRAME_FRAME:
        return true;
    case IPC_DEFRAME_TOO_LARGE:
        c->broken = true;
        return false;
    default:
        return false;
    }
}

int ipc_conn_take_fd(ipc_conn *c)
{
    int fd = c->received_fd;
    c->received_fd = -1;
    return fd;
}

bool ipc_conn_peer_cred(const ipc_conn *c, pid_t *pid, uid_t *uid)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (c->fd < 0 || getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
        return false;
    *pid = cr.pid;
    *uid = cr.uid;
    return true;
}

/* ---- sockets ------------------------------------------------------------ */

static bool make_addr(const char *path, struct sockaddr_un *a, socklen_t *len)
{
    size_t n = strlen(path);
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (n == 0 || n >= sizeof a->sun_path) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(a->sun_path, path, n);
    if (path[0] == '@')
        a->sun_path[0] = '\0'; /* abstract namespace */
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '@' ? 0 : 1));
    return true;
}

int ipc_socket_connect(const char *path)
{
    struct sockaddr_un a;
    socklen_t len;
    if (!make_addr(path, &a, &len))
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int rc;
    do {
        rc = connect(fd, (struct sockaddr *)&a, len);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int ipc_socket_listen(const char *path)
{
    return ipc_socket_listen_mode(path, 0600);
}

int ipc_socket_listen_mode(const char *path, mode_t mode)
{
    if (mode & ~(mode_t)0777) {
        errno = EINVAL;
        return -1;
    }
    struct sockaddr_un a;
    socklen_t len;
    if (!make_addr(path, &a, &len))
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (path[0] != '@') {
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
            /* Replace it only if nobody is listening on it. */
            int probe = ipc_socket_connect(path);
            if (probe >= 0) {
                close(probe);
                close(fd);
                errno = EADDRINUSE;
                return -1;
            }
            unlink(path);
        }
    }
    /* bind() creates the file with 0777 minus the umask: with this umask
     * it has exactly `mode` from the start. */
    mode_t old_mask = umask(0777 & ~mode);
    int rc = bind(fd, (struct sockaddr *)&a, len);
    int e = errno;
    umask(old_mask);
    if (rc != 0 || listen(fd, SOMAXCONN) != 0) {
        e = rc != 0 ? e : errno;
        if (rc == 0 && path[0] != '@')
            unlink(path);
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

const char *ipc_resolve_producer_socket(const char *env_value, bool run_perfetto_usable)
{
    if (env_value)
        return env_value;
    return run_perfetto_usable ? "/run/perfetto/traced-producer.sock" : "/tmp/perfetto-producer";
}

const char *ipc_producer_socket_path(void)
{
    /* The trailing slash makes access() test for a directory. */
    return ipc_resolve_producer_socket(getenv("PERFETTO_PRODUCER_SOCK_NAME"),
                                       access("/run/perfetto/", X_OK) == 0);
}
