/* SPDX-License-Identifier: MIT */
/* Perfetto IPC framing (protos/perfetto/ipc/wire_protocol.proto): every
 * message on the socket is a 32-bit little-endian payload length followed by
 * one serialized IPCFrame. This file owns the byte level only: splitting a
 * received byte stream into frames (with Perfetto's size cap), decoding the
 * envelope, and building outgoing frames. Sockets and fds live in ipc_conn.
 *
 * Everything here takes untrusted input: failures are return values. */
#ifndef IPC_FRAME_H
#define IPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_reader.h"
#include "protos/perfetto/wire_protocol.pbc.h"

#define IPC_FRAME_HEADER_SIZE 4u
/* Largest frame, header included, either side accepts: Perfetto's
 * kIPCBufferSize (include/perfetto/ext/ipc/basic_types.h). A peer that
 * announces more is cut off, as Perfetto's BufferedFrameDeserializer does. */
#define IPC_MAX_FRAME_SIZE   (128u * 1024u)
#define IPC_MAX_PAYLOAD_SIZE (IPC_MAX_FRAME_SIZE - IPC_FRAME_HEADER_SIZE)

/* Which member of the IPCFrame `msg` oneof a frame carries (its field
 * number), IPC_MSG_NONE when none. */
typedef enum ipc_msg_kind {
    IPC_MSG_NONE = 0,
    IPC_MSG_BIND_SERVICE = perfetto_protos_IPCFrame_FIELD_msg_bind_service,
    IPC_MSG_BIND_SERVICE_REPLY = perfetto_protos_IPCFrame_FIELD_msg_bind_service_reply,
    IPC_MSG_INVOKE_METHOD = perfetto_protos_IPCFrame_FIELD_msg_invoke_method,
    IPC_MSG_INVOKE_METHOD_REPLY = perfetto_protos_IPCFrame_FIELD_msg_invoke_method_reply,
    IPC_MSG_REQUEST_ERROR = perfetto_protos_IPCFrame_FIELD_msg_request_error,
    IPC_MSG_SET_PEER_IDENTITY = perfetto_protos_IPCFrame_FIELD_set_peer_identity,
} ipc_msg_kind;

/* A decoded envelope; `body` points into the frame bytes. */
typedef struct ipc_frame {
    uint64_t request_id;
    ipc_msg_kind kind;
    pb_bytes body;
} ipc_frame;

/* Decodes one IPCFrame payload (without the length header). When several
 * oneof members are present the last one wins, as in protobuf. False on
 * malformed protobuf. */
bool ipc_frame_decode(const uint8_t *data, size_t len, ipc_frame *out);

/* ---- receiving: a byte stream in, frames out ---------------------------- */

typedef enum ipc_deframe_status {
    IPC_DEFRAME_NEED_MORE = 0, /* no complete frame buffered */
    IPC_DEFRAME_FRAME = 1,     /* *frame is the next payload */
    IPC_DEFRAME_TOO_LARGE = 2, /* the peer announced a frame over the cap */
} ipc_deframe_status;

/* One fixed IPC_MAX_FRAME_SIZE buffer: a complete frame always fits. */
typedef struct ipc_deframer {
    uint8_t *buf;
    size_t start; /* first unconsumed byte */
    size_t len;   /* bytes buffered after start */
} ipc_deframer;

bool ipc_deframer_init(ipc_deframer *d);
void ipc_deframer_free(ipc_deframer *d);
/* Free room to receive into (compacts first); never 0 while no frame is
 * pending extraction. */
uint8_t *ipc_deframer_space(ipc_deframer *d, size_t *avail);
void ipc_deframer_commit(ipc_deframer *d, size_t n);
/* The next complete frame's payload, valid until the next call to
 * ipc_deframer_space(). Zero-length frames are skipped, as Perfetto does. */
ipc_deframe_status ipc_deframer_pop(ipc_deframer *d, pb_bytes *payload);
/* Bytes of an unfinished frame still buffered (a peer that closed
 * mid-frame leaves some). */
static inline size_t ipc_deframer_pending(const ipc_deframer *d)
{
    return d->len;
}

/* ---- sending: building frames ------------------------------------------- */

/* Builds one frame on a heap stream: ipc_frame_begin(), fill the member
 * (e.g. perfetto_protos_IPCFrame_begin_msg_invoke_method()), then
 * ipc_frame_finish() writes header + payload into `out`. */
typedef struct ipc_frame_builder {
    pb_heap_buffer heap;
    perfetto_protos_IPCFrame frame;
} ipc_frame_builder;

void ipc_frame_builder_init(ipc_frame_builder *b);
void ipc_frame_builder_free(ipc_frame_builder *b);
perfetto_protos_IPCFrame *ipc_frame_begin(ipc_frame_builder *b, uint64_t request_id);
/* Size of the finished frame, header included; 0 when it would exceed
 * IPC_MAX_FRAME_SIZE or memory ran out (nothing is written then). */
size_t ipc_frame_size(ipc_frame_builder *b);
/* Writes the frame (ipc_frame_size() bytes) to dst. */
void ipc_frame_copy(ipc_frame_builder *b, uint8_t *dst);

/* InvokeMethod frames carry the method's request as `args_proto` (bytes);
 * a nested message has the same wire form, so the request is encoded in
 * place: begin, fill `args`, then ipc_frame_end_invoke(). */
typedef struct ipc_invoke {
    perfetto_protos_IPCFrame_InvokeMethod im;
    pb_msg args;
} ipc_invoke;
void ipc_frame_begin_invoke(ipc_frame_builder *b, uint64_t request_id, uint32_t service_id,
                            uint32_t method_id, bool drop_reply, ipc_invoke *inv);
void ipc_frame_end_invoke(ipc_invoke *inv);

/* InvokeMethodReply frames, the reply encoded in place like the args. */
typedef struct ipc_reply {
    perfetto_protos_IPCFrame_InvokeMethodReply r;
    pb_msg reply;
    bool success;
} ipc_reply;
void ipc_frame_begin_reply(ipc_frame_builder *b, uint64_t request_id, bool success, bool has_more,
                           ipc_reply *rep);
void ipc_frame_end_reply(ipc_reply *rep);

/* ---- method tables (BindServiceReply) ----------------------------------- */

#define IPC_MAX_METHODS     32
#define IPC_MAX_METHOD_NAME 64

typedef struct ipc_method_table {
    uint32_t service_id;
    size_t count;
    struct {
        uint32_t id;
        char name[IPC_MAX_METHOD_NAME];
    } methods[IPC_MAX_METHODS];
} ipc_method_table;

/* Parses a BindServiceReply. Entries with an empty or over-long name or an
 * id of 0 are skipped (as Perfetto's client does); entries past
 * IPC_MAX_METHODS are ignored. False on malformed input or success=false. */
bool ipc_parse_bind_reply(const uint8_t *data, size_t len, ipc_method_table *out);
/* Remote id of the method called `name`, 0 when the service has none. */
uint32_t ipc_method_id(const ipc_method_table *t, const char *name);

#endif /* IPC_FRAME_H */
