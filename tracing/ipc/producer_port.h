/* SPDX-License-Identifier: MIT */
/* ProducerPort, the service interface of Perfetto's producer protocol: its
 * methods in the order producer_port.proto declares them. A host binds them
 * by name and numbers them from 1 in this order (as Perfetto's host does);
 * gputrace-service, the test services and the hostile-peer tests all use
 * this one table. */
#ifndef GPUTRACE_TRACING_IPC_PRODUCER_PORT_H
#define GPUTRACE_TRACING_IPC_PRODUCER_PORT_H

typedef enum ipc_port_method {
    IPC_PORT_INITIALIZE_CONNECTION,
    IPC_PORT_REGISTER_DATA_SOURCE,
    IPC_PORT_UNREGISTER_DATA_SOURCE,
    IPC_PORT_COMMIT_DATA,
    IPC_PORT_GET_ASYNC_COMMAND,
    IPC_PORT_REGISTER_TRACE_WRITER,
    IPC_PORT_UNREGISTER_TRACE_WRITER,
    IPC_PORT_NOTIFY_DATA_SOURCE_STARTED,
    IPC_PORT_NOTIFY_DATA_SOURCE_STOPPED,
    IPC_PORT_ACTIVATE_TRIGGERS,
    IPC_PORT_SYNC,
    IPC_PORT_UPDATE_DATA_SOURCE,
    IPC_PORT_METHOD_COUNT,
} ipc_port_method;

/* The method names, indexed by ipc_port_method. */
extern const char *const ipc_port_method_names[IPC_PORT_METHOD_COUNT];

#endif
