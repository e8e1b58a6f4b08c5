/* SPDX-License-Identifier: MIT */
/* gputrace-service's commands to a producer: each goes out as one more
 * reply on the producer's GetAsyncCommand stream. */
#include <string.h>
#include <unistd.h>

#include "protos/perfetto/data_source_config.pbc.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/ipc/service_internal.h"

/* ---- commands to a producer --------------------------------------------- */

static perfetto_protos_GetAsyncCommandResponse *begin_cmd(gts_service *s, gts_producer *pr)
{
    return (perfetto_protos_GetAsyncCommandResponse *)ipc_host_begin_reply(
        s->host, pr->stream_request_id, true, true);
}

static void end_cmd(gts_service *s, gts_producer *pr, int fd)
{
    ipc_host_end_reply(s->host, pr->cl, fd);
}

static void write_ds_config(gts_service *s, perfetto_protos_DataSourceConfig *c, const char *name)
{
    perfetto_protos_DataSourceConfig_set_name(c, name);
    perfetto_protos_DataSourceConfig_set_target_buffer(c, BUFFER_ID);
    perfetto_protos_DataSourceConfig_set_trace_duration_ms(c, s->cfg.duration_ms);
    perfetto_protos_DataSourceConfig_set_stop_timeout_ms(c, s->cfg.stop_timeout_ms);
    perfetto_protos_DataSourceConfig_set_tracing_session_id(c, SESSION_ID);
}

void gts_cmd_send_setup_tracing(gts_service *s, gts_producer *pr)
{
    if (pr->setup_tracing_sent || !pr->has_stream || !pr->has_smb)
        return;
    perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
    perfetto_protos_GetAsyncCommandResponse_SetupTracing st;
    perfetto_protos_GetAsyncCommandResponse_begin_setup_tracing(cmd, &st);
    if (!pr->smb_from_producer)
        perfetto_protos_GetAsyncCommandResponse_SetupTracing_set_shared_buffer_page_size_kb(
            &st, (uint32_t)(pr->abi.page_size / 1024));
    perfetto_protos_GetAsyncCommandResponse_SetupTracing_end(&st);
    end_cmd(s, pr, pr->smb_from_producer ? -1 : pr->smb_fd);
    pr->setup_tracing_sent = true;
    if (pr->smb_fd >= 0) {
        close(pr->smb_fd); /* the producer has its own reference now */
        pr->smb_fd = -1;
    }
}

bool gts_cmd_wanted(const gts_service *s, const char *name)
{
    for (size_t i = 0; i < s->cfg.num_data_sources; i++)
        if (strcmp(s->cfg.data_sources[i], name) == 0)
            return true;
    return false;
}

void gts_cmd_start_data_source(gts_service *s, gts_producer *pr, size_t ds)
{
    if (!s->session_active || !pr->has_stream || pr->num_inst == MAX_INSTANCES_PER_PRODUCER)
        return;
    for (size_t i = 0; i < pr->num_inst; i++)
        if (strcmp(pr->inst[i].name, pr->ds[ds].name) == 0)
            return; /* already running in this session */
    if (!pr->has_smb && !gts_shm_create_service_smb(pr, s->cfg.max_smb_size)) {
        gts_core_protocol_error(s, pr, "cannot create an SMB");
        return;
    }
    gts_cmd_send_setup_tracing(s, pr);
    pr->in_session = true;
    pr->cl->active = true; /* waiting for work is normal from now on */
    gts_instance *in = &pr->inst[pr->num_inst++];
    memset(in, 0, sizeof *in);
    in->id = ++s->last_instance_id;
    in->will_notify_on_stop = pr->ds[ds].will_notify_on_stop;
    memcpy(in->name, pr->ds[ds].name, sizeof in->name);
    for (int step = 0; step < 2; step++) {
        perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
        perfetto_protos_DataSourceConfig c;
        if (step == 0) {
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource m;
            perfetto_protos_GetAsyncCommandResponse_begin_setup_data_source(cmd, &m);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_set_new_instance_id(&m, in->id);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_begin_config(&m, &c);
            write_ds_config(s, &c, in->name);
            perfetto_protos_DataSourceConfig_end(&c);
            perfetto_protos_GetAsyncCommandResponse_SetupDataSource_end(&m);
        } else {
            perfetto_protos_GetAsyncCommandResponse_StartDataSource m;
            perfetto_protos_GetAsyncCommandResponse_begin_start_data_source(cmd, &m);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_set_new_instance_id(&m, in->id);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_begin_config(&m, &c);
            write_ds_config(s, &c, in->name);
            perfetto_protos_DataSourceConfig_end(&c);
            perfetto_protos_GetAsyncCommandResponse_StartDataSource_end(&m);
        }
        end_cmd(s, pr, -1);
    }
    in->started = true;
    gts_core_log(s, pr, "started data source %s", in->name);
}

void gts_cmd_start_wanted(gts_service *s, gts_producer *pr)
{
    for (size_t i = 0; i < pr->num_ds; i++)
        if (gts_cmd_wanted(s, pr->ds[i].name))
            gts_cmd_start_data_source(s, pr, i);
}

bool gts_cmd_send_flush(gts_service *s, gts_producer *pr, uint64_t flush_id)
{
    if (!pr->has_stream || pr->num_inst == 0)
        return false;
    perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
    perfetto_protos_GetAsyncCommandResponse_Flush f;
    perfetto_protos_GetAsyncCommandResponse_begin_flush(cmd, &f);
    for (size_t i = 0; i < pr->num_inst; i++)
        perfetto_protos_GetAsyncCommandResponse_Flush_add_data_source_ids(&f, pr->inst[i].id);
    perfetto_protos_GetAsyncCommandResponse_Flush_set_request_id(&f, flush_id);
    perfetto_protos_GetAsyncCommandResponse_Flush_end(&f);
    end_cmd(s, pr, -1);
    pr->flush_pending = flush_id;
    return true;
}

void gts_cmd_send_stops(gts_service *s, gts_producer *pr)
{
    for (size_t i = 0; i < pr->num_inst; i++) {
        gts_instance *in = &pr->inst[i];
        if (in->stop_sent || !pr->has_stream)
            continue;
        perfetto_protos_GetAsyncCommandResponse *cmd = begin_cmd(s, pr);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource m;
        perfetto_protos_GetAsyncCommandResponse_begin_stop_data_source(cmd, &m);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_set_instance_id(&m, in->id);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_end(&m);
        end_cmd(s, pr, -1);
        in->stop_sent = true;
        if (!in->will_notify_on_stop)
            in->stopped = true;
    }
}
