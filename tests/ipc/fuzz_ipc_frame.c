/* SPDX-License-Identifier: MIT */
/* Fuzz target: a byte stream as it could arrive on the producer socket,
 * from either side. The input is cut into reads of varying size (first
 * byte = seed), deframed with the real size cap, and every frame is
 * decoded the way the producer and gputrace-service decode it: envelope,
 * BindServiceReply method table, InvokeMethod(Reply) bodies,
 * GetAsyncCommandResponse commands with their ids and DataSourceConfig,
 * and CommitDataRequest with its patches. Nothing may read out of bounds,
 * crash or hang. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tracing/ipc/ipc_frame.h"
#include "tracing/ipc/producer_cmd.h"
#include "tracing/ipc/service_session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sink_id(void *ctx, uint64_t id)
{
    *(uint64_t *)ctx ^= id;
}

static void sink_move(void *ctx, uint32_t page, uint32_t chunk, uint32_t tb)
{
    *(uint64_t *)ctx += page + chunk + tb;
}

static void sink_patch(void *ctx, uint32_t tb, uint32_t writer, uint32_t chunk_id,
                       const void *patches, size_t n, bool more)
{
    const smb_patch *p = patches;
    uint64_t acc = tb + writer + chunk_id + more;
    for (size_t i = 0; i < n; i++)
        acc += p[i].offset + p[i].data[0] + p[i].data[3];
    *(uint64_t *)ctx += acc;
}

static void decode_body(pb_bytes body)
{
    uint64_t acc = 0;
    /* As a command the service pushes to a producer. */
    producer_cmd c;
    if (producer_cmd_parse(body.data, body.size, &c)) {
        producer_cmd_for_each_id(&c, sink_id, &acc);
        ipc_producer_ds_config cfg;
        char name[64];
        producer_parse_ds_config(c.config, &cfg, name, sizeof name);
    }
    /* As a CommitData a producer sends to the service. */
    gts_commit_visitor v = { sink_move, sink_patch, &acc };
    uint64_t flush, discarded = 0;
    gts_parse_commit(body.data, body.size, &v, &flush, &discarded);
    ipc_method_table t;
    if (ipc_parse_bind_reply(body.data, body.size, &t)) {
        for (size_t i = 0; i < t.count; i++)
            acc += ipc_method_id(&t, t.methods[i].name);
    }
    (void)acc;
}

static void handle_frame(pb_bytes payload)
{
    ipc_frame fr;
    if (!ipc_frame_decode(payload.data, payload.size, &fr))
        return;
    switch (fr.kind) {
    case IPC_MSG_INVOKE_METHOD: {
        perfetto_protos_IPCFrame_InvokeMethod_view v;
        if (perfetto_protos_IPCFrame_InvokeMethod_decode(&v, fr.body.data, fr.body.size))
            decode_body(v.args_proto);
        break;
    }
    case IPC_MSG_INVOKE_METHOD_REPLY: {
        perfetto_protos_IPCFrame_InvokeMethodReply_view v;
        if (perfetto_protos_IPCFrame_InvokeMethodReply_decode(&v, fr.body.data, fr.body.size))
            decode_body(v.reply_proto);
        break;
    }
    default:
        decode_body(fr.body);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ipc_deframer d;
    if (!d.buf && !ipc_deframer_init(&d))
        return 0;
    d.start = d.len = 0;
    if (size == 0)
        return 0;
    uint32_t seed = data[0];
    data++;
    size--;
    size_t off = 0;
    while (off < size) {
        /* Reads of 1..256 bytes, pseudo-random per input. */
        seed = seed * 1103515245u + 12345u;
        size_t want = 1 + (seed >> 16) % 256;
        size_t avail;
        uint8_t *dst = ipc_deframer_space(&d, &avail);
        if (avail == 0)
            return 0;
        size_t n = size - off < want ? size - off : want;
        if (n > avail)
            n = avail;
        memcpy(dst, data + off, n);
        ipc_deframer_commit(&d, n);
        off += n;
        pb_bytes p;
        ipc_deframe_status st;
        while ((st = ipc_deframer_pop(&d, &p)) == IPC_DEFRAME_FRAME)
            handle_frame(p);
        if (st == IPC_DEFRAME_TOO_LARGE)
            return 0; /* the real peers disconnect here */
    }
    return 0;
}
