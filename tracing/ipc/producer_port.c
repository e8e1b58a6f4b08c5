/* SPDX-License-Identifier: MIT */
/* The ProducerPort method table (producer_port.h). */
#include "tracing/ipc/producer_port.h"

const char *const ipc_port_method_names[IPC_PORT_METHOD_COUNT] = {
    [IPC_PORT_INITIALIZE_CONNECTION] = "InitializeConnection",
    [IPC_PORT_REGISTER_DATA_SOURCE] = "RegisterDataSource",
    [IPC_PORT_UNREGISTER_DATA_SOURCE] = "UnregisterDataSource",
    [IPC_PORT_COMMIT_DATA] = "CommitData",
    [IPC_PORT_GET_ASYNC_COMMAND] = "GetAsyncCommand",
    [IPC_PORT_REGISTER_TRACE_WRITER] = "RegisterTraceWriter",
    [IPC_PORT_UNREGISTER_TRACE_WRITER] = "UnregisterTraceWriter",
    [IPC_PORT_NOTIFY_DATA_SOURCE_STARTED] = "NotifyDataSourceStarted",
    [IPC_PORT_NOTIFY_DATA_SOURCE_STOPPED] = "NotifyDataSourceStopped",
    [IPC_PORT_ACTIVATE_TRIGGERS] = "ActivateTriggers",
    [IPC_PORT_SYNC] = "Sync",
    [IPC_PORT_UPDATE_DATA_SOURCE] = "UpdateDataSource",
};
