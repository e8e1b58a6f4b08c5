/* SPDX-License-Identifier: MIT */
/* Perfetto IPC framing: deframer, envelope decoding, frame building. */
#include "tracing/ipc/ipc_frame.h"

#include <stdlib.h>
#include <string.h>

bool ipc_frame_decode(const uint8_t *data, size_t len, ipc_frame *out)
{
    perfetto_protos_IPCFrame_view v;
    memset(out, 0, sizeof *out);
    if (!perfetto_protos_IPCFrame_decode(&v, data, len))
        return false;
    out->request_id = v.request_id;
    /* The generated view keeps the last occurrence of each member; among
     * members, the one that came last in the bytes wins (oneof rule). */
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_LEN)
            continue;
        switch (f.id) {
        case IPC_MSG_BIND_SERVICE:
        case IPC_MSG_BIND_SERVICE_REPLY:
        case IPC_MSG_INVOKE_METHOD:
        case IPC_MSG_INVOKE_METHOD_REPLY:
        case IPC_MSG_REQUEST_ERROR:
        case IPC_MSG_SET_PEER_IDENTITY:
            out->kind = (ipc_msg_kind)f.id;
            out->body = pb_field_bytes(&f);
            break;
        default:
            break;
        }
    }
    return r.err == PB_OK;
}

/* ---- deframer ----------------------------------------------------------- */

bool ipc_deframer_init(ipc_deframer *d)
{
    d->start = d->len = 0;
    d->buf = malloc(IPC_MAX_FRAME_SIZE);
    return d->buf != NULL;
}

void ipc_deframer_free(ipc_deframer *d)
{
    free(d->buf);
    d->buf = NULL;
    d->start = d->len = 0;
}

uint8_t *ipc_deframer_space(ipc_deframer *d, size_t *avail)
{
    if (d->start) {
        memmove(d->buf, d->buf + d->start, d->len);
        d->start = 0;
    }
    *avail = IPC_MAX_FRAME_SIZE - d->len;
    return d->buf + d->len;
}

void ipc_deframer_commit(ipc_deframer *d, size_t n)
{
    d->len += n;
}

static uint32_t read_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

ipc_deframe_status ipc_deframer_pop(ipc_deframer *d, pb_bytes *payload)
{
    for (;;) {
        if (d->len < IPC_FRAME_HEADER_SIZE)
            return IPC_DEFRAME_NEED_MORE;
        const uint8_t *p = d->buf + d->start;
        uint32_t size = read_le32(p);
        if (size > IPC_MAX_PAYLOAD_SIZE)
            return IPC_DEFRAME_TOO_LARGE;
        if (d->len < IPC_FRAME_HEADER_SIZE + (size_t)size)
            return IPC_DEFRAME_NEED_MORE;
        d->start += IPC_FRAME_HEADER_SIZE + (size_t)size;
        d->len -= IPC_FRAME_HEADER_SIZE + (size_t)size;
        if (size == 0)
            continue;
        payload->data = p + IPC_FRAME_HEADER_SIZE;
        payload->size = size;
        return IPC_DEFRAME_FRAME;
    }
}

/* ---- builder ------------------------------------------------------------ */

void ipc_frame_builder_init(ipc_frame_builder *b)
{
    pb_heap_init(&b->heap, 4096);
}

void ipc_frame_builder_free(ipc_frame_builder *b)
{
    pb_heap_free(&b->heap);
}

perfetto_protos_IPCFrame *ipc_frame_begin(ipc_frame_builder *b, uint64_t request_id)
{
    pb_heap_reset(&b->heap);
    perfetto_protos_IPCFrame_init_root(&b->frame, pb_heap_stream(&b->heap));
    perfetto_protos_IPCFrame_set_request_id(&b->frame, request_id);
    return &b->frame;
}

size_t ipc_frame_size(ipc_frame_builder *b)
{
    perfetto_protos_IPCFrame_end(&b->frame);
    size_t n = pb_heap_size(&b->heap);
    if (b->heap.out_of_memory || n > IPC_MAX_PAYLOAD_SIZE)
        return 0;
    return IPC_FRAME_HEADER_SIZE + n;
}

void ipc_frame_copy(ipc_frame_builder *b, uint8_t *dst)
{
    uint32_t n = (uint32_t)pb_heap_size(&b->heap);
    dst[0] = (uint8_t)n;
    dst[1] = (uint8_t)(n >> 8);
    dst[2] = (uint8_t)(n >> 16);
    dst[3] = (uint8_t)(n >> 24);
    pb_heap_copy(&b->heap, dst + IPC_FRAME_HEADER_SIZE);
}

void ipc_frame_begin_invoke(ipc_frame_builder *b, uint64_t request_id, uint32_t service_id,
                            uint32_t method_id, bool drop_reply, ipc_invoke *inv)
{
    perfetto_protos_IPCFrame *f = ipc_frame_begin(b, request_id);
    perfetto_protos_IPCFrame_begin_msg_invoke_method(f, &inv->im);
    perfetto_protos_IPCFrame_InvokeMethod_set_service_id(&inv->im, service_id);
    perfetto_protos_IPCFrame_InvokeMethod_set_method_id(&inv->im, method_id);
    if (drop_reply)
        perfetto_protos_IPCFrame_InvokeMethod_set_drop_reply(&inv->im, true);
    pb_msg_begin_nested(&inv->im.msg, perfetto_protos_IPCFrame_InvokeMethod_FIELD_args_proto,
                        &inv->args);
}

void ipc_frame_end_invoke(ipc_invoke *inv)
{
    pb_msg_end(&inv->args);
    perfetto_protos_IPCFrame_InvokeMethod_end(&inv->im);
}

void ipc_frame_begin_reply(ipc_frame_builder *b, uint64_t request_id, bool success, bool has_more,
                           ipc_reply *rep)
{
    perfetto_protos_IPCFrame *f = ipc_frame_begin(b, request_id);
    perfetto_protos_IPCFrame_begin_msg_invoke_method_reply(f, &rep->r);
    rep->success = success;
    if (success)
        perfetto_protos_IPCFrame_InvokeMethodReply_set_success(&rep->r, true);
    if (has_more)
        perfetto_protos_IPCFrame_InvokeMethodReply_set_has_more(&rep->r, true);
    if (success)
        pb_msg_begin_nested(
            &rep->r.msg, perfetto_protos_IPCFrame_InvokeMethodReply_FIELD_reply_proto, &rep->reply);
}

void ipc_frame_end_reply(ipc_reply *rep)
{
    if (rep->success)
        pb_msg_end(&rep->reply);
    perfetto_protos_IPCFrame_InvokeMethodReply_end(&rep->r);
}

/* ---- method tables ------------------------------------------------------ */

bool ipc_parse_bind_reply(const uint8_t *data, size_t len, ipc_method_table *out)
{
    perfetto_protos_IPCFrame_BindServiceReply_view v;
    memset(out, 0, sizeof *out);
    if (!perfetto_protos_IPCFrame_BindServiceReply_decode(&v, data, len) || !v.success)
        return false;
    out->service_id = v.service_id;
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_IPCFrame_BindServiceReply_FIELD_methods ||
            f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_view mi;
        if (!perfetto_protos_IPCFrame_BindServiceReply_MethodInfo_decode(&mi, f.data,
                                                                         (size_t)f.value))
            return false;
        if (mi.id == 0 || mi.name.size == 0 || mi.name.size >= IPC_MAX_METHOD_NAME ||
            memchr(mi.name.data, 0, mi.name.size) || out->count == IPC_MAX_METHODS)
            continue;
        out->methods[out->count].id = mi.id;
        memcpy(out->methods[out->count].name, mi.name.data, mi.name.size);
        out->methods[out->count].name[mi.name.size] = '\0';
        out->count++;
    }
    return r.err == PB_OK;
}

uint32_t ipc_method_id(const ipc_method_table *t, const char *name)
{
    /* A later duplicate overrides an earlier one, like a map insert. */
    uint32_t id = 0;
    for (size_t i = 0; i < t->count; i++)
        if (strcmp(t->methods[i].name, name) == 0)
            id = t->methods[i].id;
    return id;
}
