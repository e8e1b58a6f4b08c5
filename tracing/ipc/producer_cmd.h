/* SPDX-License-Identifier: MIT */
/* Decoding what the service pushes on the GetAsyncCommand stream
 * (GetAsyncCommandResponse) and the DataSourceConfig it carries. Pure
 * functions over untrusted bytes, kept apart from the producer thread so
 * they can be fuzzed alone. */
#ifndef PRODUCER_CMD_H
#define PRODUCER_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_reader.h"
#include "tracing/ipc/producer.h"

typedef enum producer_cmd_kind {
    PRODUCER_CMD_NONE = 0,
    PRODUCER_CMD_SETUP_TRACING,
    PRODUCER_CMD_SETUP_DATA_SOURCE,
    PRODUCER_CMD_START_DATA_SOURCE,
    PRODUCER_CMD_STOP_DATA_SOURCE,
    PRODUCER_CMD_FLUSH,
    PRODUCER_CMD_CLEAR_INCREMENTAL_STATE,
} producer_cmd_kind;

typedef struct producer_cmd {
    producer_cmd_kind kind;
    uint64_t instance_id;  /* setup/start: new_instance_id; stop: instance_id */
    pb_bytes config;       /* setup/start: DataSourceConfig */
    uint32_t page_size_kb; /* setup_tracing */
    uint64_t flush_request_id;
    uint64_t flush_flags;
    pb_bytes body; /* flush / clear: the sub-message, for the ids */
} producer_cmd;

/* False on malformed input. An unknown command decodes as NONE. */
bool producer_cmd_parse(const uint8_t *data, size_t len, producer_cmd *out);

/* Calls fn for every data_source_ids entry of a flush or clear command
 * (packed or not). False on malformed input. */
bool producer_cmd_for_each_id(const producer_cmd *c, void (*fn)(void *ctx, uint64_t id), void *ctx);

/* DataSourceConfig -> ipc_producer_ds_config; the name is copied (truncated) into
 * name_buf. False on malformed input or a missing name. */
bool producer_parse_ds_config(pb_bytes raw, ipc_producer_ds_config *out, char *name_buf,
                              size_t name_cap);

#endif /* PRODUCER_CMD_H */
