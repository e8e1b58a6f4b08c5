/* SPDX-License-Identifier: MIT */
/* GetAsyncCommandResponse and DataSourceConfig decoding. */
#include "tracing/ipc/producer_cmd.h"

#include <string.h>

#include "protos/perfetto/data_source_config.pbc.h"
#include "protos/perfetto/producer_port.pbc.h"

bool producer_cmd_parse(const uint8_t *data, size_t len, producer_cmd *out)
{
    memset(out, 0, sizeof *out);
    /* The oneof: the member that comes last in the bytes wins. */
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    pb_field last = { 0 };
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_LEN)
            continue;
        switch (f.id) {
        case perfetto_protos_GetAsyncCommandResponse_FIELD_setup_tracing:
        case perfetto_protos_GetAsyncCommandResponse_FIELD_setup_data_source:
        case perfetto_protos_GetAsyncCommandResponse_FIELD_start_data_source:
        case perfetto_protos_GetAsyncCommandResponse_FIELD_stop_data_source:
        case perfetto_protos_GetAsyncCommandResponse_FIELD_flush:
        case perfetto_protos_GetAsyncCommandResponse_FIELD_clear_incremental_state:
            last = f;
            break;
        default:
            break;
        }
    }
    if (r.err != PB_OK)
        return false;
    pb_bytes b = pb_field_bytes(&last);
    out->body = b;
    switch (last.id) {
    case perfetto_protos_GetAsyncCommandResponse_FIELD_setup_tracing: {
        perfetto_protos_GetAsyncCommandResponse_SetupTracing_view v;
        if (!perfetto_protos_GetAsyncCommandResponse_SetupTracing_decode(&v, b.data, b.size))
            return false;
        out->kind = PRODUCER_CMD_SETUP_TRACING;
        out->page_size_kb = v.shared_buffer_page_size_kb;
        return true;
    }
    case perfetto_protos_GetAsyncCommandResponse_FIELD_setup_data_source: {
        perfetto_protos_GetAsyncCommandResponse_SetupDataSource_view v;
        if (!perfetto_protos_GetAsyncCommandResponse_SetupDataSource_decode(&v, b.data, b.size))
            return false;
        out->kind = PRODUCER_CMD_SETUP_DATA_SOURCE;
        out->instance_id = v.new_instance_id;
        out->config = v.config;
        return true;
    }
    case perfetto_protos_GetAsyncCommandResponse_FIELD_start_data_source: {
        perfetto_protos_GetAsyncCommandResponse_StartDataSource_view v;
        if (!perfetto_protos_GetAsyncCommandResponse_StartDataSource_decode(&v, b.data, b.size))
            return false;
        out->kind = PRODUCER_CMD_START_DATA_SOURCE;
        out->instance_id = v.new_instance_id;
        out->config = v.config;
        return true;
    }
    case perfetto_protos_GetAsyncCommandResponse_FIELD_stop_data_source: {
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_view v;
        if (!perfetto_protos_GetAsyncCommandResponse_StopDataSource_decode(&v, b.data, b.size))
            return false;
        out->kind = PRODUCER_CMD_STOP_DATA_SOURCE;
        out->instance_id = v.instance_id;
        return true;
    }
    case perfetto_protos_GetAsyncCommandResponse_FIELD_flush: {
        perfetto_protos_GetAsyncCommandResponse_Flush_view v;
        if (!perfetto_protos_GetAsyncCommandResponse_Flush_decode(&v, b.data, b.size))
            return false;
        out->kind = PRODUCER_CMD_FLUSH;
        out->flush_request_id = v.request_id;
        out->flush_flags = v.flags;
        return producer_cmd_for_each_id(out, NULL, NULL);
    }
    case perfetto_protos_GetAsyncCommandResponse_FIELD_clear_incremental_state:
        out->kind = PRODUCER_CMD_CLEAR_INCREMENTAL_STATE;
        return producer_cmd_for_each_id(out, NULL, NULL);
    default:
        out->kind = PRODUCER_CMD_NONE;
        return true;
    }
}

bool producer_cmd_for_each_id(const producer_cmd *c, void (*fn)(void *ctx, uint64_t id), void *ctx)
{
    /* data_source_ids is field 1 in both Flush and ClearIncrementalState. */
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, c->body.data, c->body.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != 1)
            continue;
        if (f.wire_type == PB_WIRE_VARINT) {
            if (fn)
                fn(ctx, f.value);
        } else if (f.wire_type == PB_WIRE_LEN) {
            pb_packed_iter it;
            uint64_t v;
            pb_packed_init(&it, &f);
            while (pb_packed_next_varint(&it, &v))
                if (fn)
                    fn(ctx, v);
            if (it.err != PB_OK)
                return false;
        }
    }
    return r.err == PB_OK;
}

bool producer_parse_ds_config(pb_bytes raw, ipc_producer_ds_config *out, char *name_buf,
                              size_t name_cap)
{
    perfetto_protos_DataSourceConfig_view v;
    memset(out, 0, sizeof *out);
    if (!perfetto_protos_DataSourceConfig_decode(&v, raw.data, raw.size) || !v.has_name ||
        v.name.size == 0 || name_cap == 0)
        return false;
    size_t n = v.name.size < name_cap - 1 ? v.name.size : name_cap - 1;
    memcpy(name_buf, v.name.data, n);
    name_buf[n] = '\0';
    out->name = name_buf;
    out->target_buffer = v.target_buffer;
    out->tracing_session_id = v.tracing_session_id;
    out->trace_duration_ms = v.trace_duration_ms;
    out->stop_timeout_ms = v.stop_timeout_ms;
    out->buffer_exhausted_policy = (uint32_t)v.buffer_exhausted_policy;
    out->raw = raw.data;
    out->raw_size = raw.size;
    return true;
}
