/* SPDX-License-Identifier: MIT */
/* The producer's data source instances: the service's commands
 * (SetupTracing, SetupDataSource, StartDataSource, StopDataSource, Flush,
 * ClearIncrementalState) on the producer thread, the instance table they
 * change under mu, and the callbacks they run outside it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/ipc/producer_cmd.h"
#include "tracing/ipc/producer_internal.h"

producer_instance *producer_ds_find_instance(ipc_producer *p, uint64_t id)
{
    for (size_t i = 0; i < IPC_PRODUCER_MAX_INSTANCES; i++)
        if (p->inst[i].used && p->inst[i].id == id)
            return &p->inst[i];
    return NULL;
}

static int find_ds(ipc_producer *p, const char *name)
{
    for (size_t i = 0; i < p->num_ds; i++)
        if (strcmp(p->ds_names[i], name) == 0)
            return (int)i;
    return -1;
}

void producer_ds_stop_all(ipc_producer *p)
{
    for (size_t i = 0; i < IPC_PRODUCER_MAX_INSTANCES; i++) {
        pthread_mutex_lock(&p->mu);
        producer_instance in = p->inst[i];
        if (in.used && in.started)
            atomic_fetch_sub_explicit(&p->enabled[in.ds], 1, memory_order_relaxed);
        p->inst[i].used = false;
        pthread_mutex_unlock(&p->mu);
        if (in.used && in.started && p->ds[in.ds].on_stop)
            p->ds[in.ds].on_stop(p->ds[in.ds].user, in.id);
    }
}

static void notify_instance(ipc_producer *p, const char *method, uint64_t id)
{
    pb_msg *m = ipc_client_begin_invoke(&p->cl, method, true);
    if (!m)
        return; /* an old service without it: nothing to tell */
    /* data_source_id is field 1 in both Notify requests. */
    perfetto_protos_NotifyDataSourceStartedRequest_set_data_source_id(
        (perfetto_protos_NotifyDataSourceStartedRequest *)m, id);
    if (!ipc_client_end_invoke(&p->cl, -1, NULL, NULL))
        p->fail = true;
}

static void handle_setup_tracing(ipc_producer *p, const producer_cmd *c)
{
    int fd = ipc_client_take_fd(&p->cl);
    if (p->smb) {
        /* Ours was adopted (or a repeated SetupTracing): nothing to map. */
        if (fd >= 0)
            close(fd);
        return;
    }
    if (fd < 0 || !producer_smb_attach_service(p, fd, c->page_size_kb))
        producer_core_fail_connection(p);
    if (fd >= 0)
        close(fd);
}

static producer_instance *setup_instance(ipc_producer *p, uint64_t id, pb_bytes config,
                                         bool *is_new)
{
    char name[256];
    ipc_producer_ds_config cfg;
    *is_new = false;
    if (!producer_parse_ds_config(config, &cfg, name, sizeof name))
        return NULL;
    int ds = find_ds(p, name);
    if (ds < 0)
        return NULL; /* not ours: ignore, as for any unknown name */
    pthread_mutex_lock(&p->mu);
    producer_instance *in = producer_ds_find_instance(p, id);
    if (!in) {
        for (size_t i = 0; i < IPC_PRODUCER_MAX_INSTANCES && !in; i++)
            if (!p->inst[i].used)
                in = &p->inst[i];
        if (in) {
            *in = (producer_instance){
                .used = true,
                .id = id,
                .ds = (size_t)ds,
                .target_buffer = cfg.target_buffer,
                .policy = cfg.buffer_exhausted_policy == 0   ? p->ds[ds].policy
                          : cfg.buffer_exhausted_policy >= 2 ? SMB_POLICY_STALL
                                                             : SMB_POLICY_DROP,
            };
            *is_new = true;
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (in && *is_new && p->ds[ds].on_setup)
        p->ds[ds].on_setup(p->ds[ds].user, id, &cfg);
    return in;
}

static void handle_start(ipc_producer *p, const producer_cmd *c)
{
    bool is_new;
    /* Without a SetupDataSource first (older services), set up now, as
     * Perfetto's producer does. */
    producer_instance *in = setup_instance(p, c->instance_id, c->config, &is_new);
    if (!in)
        return;
    char name[256];
    ipc_producer_ds_config cfg;
    producer_parse_ds_config(c->config, &cfg, name, sizeof name);
    pthread_mutex_lock(&p->mu);
    bool start = in->used && !in->started;
    size_t ds = in->ds;
    if (start) {
        in->started = true;
        in->target_buffer = cfg.target_buffer;
        atomic_fetch_add_explicit(&p->enabled[ds], 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&p->mu);
    if (!start)
        return;
    if (p->ds[ds].on_start)
        p->ds[ds].on_start(p->ds[ds].user, c->instance_id, &cfg);
    notify_instance(p, "NotifyDataSourceStarted", c->instance_id);
}

static void handle_stop(ipc_producer *p, uint64_t id)
{
    pthread_mutex_lock(&p->mu);
    producer_instance *in = producer_ds_find_instance(p, id);
    producer_instance copy = in ? *in : (producer_instance){ 0 };
    if (in) {
        if (in->started)
            atomic_fetch_sub_explicit(&p->enabled[in->ds], 1, memory_order_relaxed);
        in->used = false;
    }
    pthread_mutex_unlock(&p->mu);
    if (!copy.used)
        return;
    if (copy.started && p->ds[copy.ds].on_stop)
        p->ds[copy.ds].on_stop(p->ds[copy.ds].user, id);
    producer_commit_send_pending(p, 0, false);
    notify_instance(p, "NotifyDataSourceStopped", id);
}

typedef struct id_visit {
    ipc_producer *p;
    bool flush;
} id_visit;

static void visit_id(void *ctx, uint64_t id)
{
    id_visit *v = ctx;
    ipc_producer *p = v->p;
    pthread_mutex_lock(&p->mu);
    producer_instance *in = producer_ds_find_instance(p, id);
    producer_instance copy = in ? *in : (producer_instance){ 0 };
    pthread_mutex_unlock(&p->mu);
    if (!copy.used || !copy.started)
        return;
    const ipc_producer_data_source *d = &p->ds[copy.ds];
    if (v->flush && d->on_flush)
        d->on_flush(d->user, id);
    else if (!v->flush && d->on_clear_incremental_state)
        d->on_clear_incremental_state(d->user, id);
}

void producer_ds_on_command(void *ctx, bool success, bool has_more, pb_bytes reply)
{
    ipc_producer *p = ctx;
    producer_cmd c;
    /* The host is stopping us: commands still arriving are not worth
     * holding it up for. */
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
        return;
    if (!success || !has_more) {
        /* The command stream ended: the service will never talk to us
         * again on this connection. */
        producer_core_fail_connection(p);
        return;
    }
    if (!producer_cmd_parse(reply.data, reply.size, &c)) {
        producer_core_fail_connection(p);
        return;
    }
    switch (c.kind) {
    case PRODUCER_CMD_SETUP_TRACING:
        handle_setup_tracing(p, &c);
        break;
    case PRODUCER_CMD_SETUP_DATA_SOURCE: {
        bool is_new;
        setup_instance(p, c.instance_id, c.config, &is_new);
        break;
    }
    case PRODUCER_CMD_START_DATA_SOURCE:
        handle_start(p, &c);
        break;
    case PRODUCER_CMD_STOP_DATA_SOURCE:
        handle_stop(p, c.instance_id);
        break;
    case PRODUCER_CMD_FLUSH: {
        id_visit v = { p, true };
        producer_cmd_for_each_id(&c, visit_id, &v);
        /* Always answer, even with nothing to commit: the service waits
         * for every producer it asked. */
        producer_commit_send_pending(p, c.flush_request_id, false);
        break;
    }
    case PRODUCER_CMD_CLEAR_INCREMENTAL_STATE: {
        id_visit v = { p, false };
        producer_cmd_for_each_id(&c, visit_id, &v);
        break;
    }
    default:
        break; /* a command from a newer service: ignore */
    }
}
