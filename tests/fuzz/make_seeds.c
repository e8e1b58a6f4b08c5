/* SPDX-License-Identifier: MIT */
/* Writes the seed corpora of the fuzz targets in this folder from our own
 * code, so the seeds have the shapes the real peers produce:
 *
 * fuzz/corpus/
 *   producer_cmd/    GetAsyncCommandResponse as gputrace-service sends them
 *   service_commit/  an SMB written by our trace writer (packets spanning
 *                    chunks, patches, chunks still being written) with the
 *                    CommitDataRequest our producer sends for it, encoded as
 *                    in producer.c, in fuzz_service_commit's input format
 *   layer_config/    accepted and refused GPUTRACE_ values
 * and, for fuzz_chunk_parser, tests/tracing/corpus/smb-writer-*: SMB images
 * written by our trace writer.
 *
 * usage: fuzz-make-seeds TESTS_DIR   (the source tree's tests/) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "protos/perfetto/commit_data_request.pbc.h"
#include "protos/perfetto/gpu_render_stage_event.pbc.h"
#include "protos/pb/pb_heap.h"
#include "protos/perfetto/producer_port.pbc.h"
#include "tracing/smb_arbiter.h"
#include "protos/perfetto/test_event.pbc.h"
#include "tracing/trace_writer.h"

static const char *out_dir;

static void write_file(const char *sub, const char *name, const void *a, size_t na, const void *b,
                       size_t nb)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, sub);
    /* Each level of sub in turn. */
    for (char *p = path + strlen(out_dir) + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            perror(path);
            exit(1);
        }
        *p = c;
        if (!c)
            break;
    }
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, sub, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) || fclose(f)) {
        perror(path);
        exit(1);
    }
}

/* Encodes with `fill` into a heap buffer and writes it as one seed. */
static void write_msg(const char *sub, const char *name, void (*fill)(pb_msg *root, int arg),
                      int arg)
{
    pb_heap_buffer h;
    pb_heap_init(&h, 4096);
    pb_msg root;
    pb_msg_init_root(&root, pb_heap_stream(&h));
    fill(&root, arg);
    pb_msg_end(&root);
    size_t n;
    uint8_t *bytes = pb_heap_dup(&h, &n);
    pb_heap_free(&h);
    write_file(sub, name, bytes, n, NULL, 0);
    free(bytes);
}

/* ---- producer commands --------------------------------------------------- */

static void ds_config(perfetto_protos_DataSourceConfig *c, int arg)
{
    static const char *const names[] = { "gputrace.timeline", "gpu.renderstages",
                                         "vulkan.memory_tracker" };
    perfetto_protos_DataSourceConfig_set_name(c, names[arg]);
    perfetto_protos_DataSourceConfig_set_target_buffer(c, 1);
    perfetto_protos_DataSourceConfig_set_tracing_session_id(c, 42);
    perfetto_protos_DataSourceConfig_set_trace_duration_ms(c, 10000);
    perfetto_protos_DataSourceConfig_set_stop_timeout_ms(c, 5000);
    perfetto_protos_DataSourceConfig_set_buffer_exhausted_policy(c, arg ? 2 : 1);
    if (arg == 1) {
        /* What the layer reads of a gpu.renderstages config. */
        perfetto_protos_GpuRenderStagesConfig gpu;
        perfetto_protos_DataSourceConfig_begin_gpu_renderstages_config(c, &gpu);
        perfetto_protos_GpuRenderStagesConfig_set_low_overhead(&gpu, true);
        perfetto_protos_GpuRenderStagesConfig_add_trace_metrics(&gpu, "gpu.busy");
        perfetto_protos_GpuRenderStagesConfig_end(&gpu);
    } else if (arg == 2) {
        /* And of a vulkan.memory_tracker config. */
        perfetto_protos_VulkanMemoryConfig mem;
        perfetto_protos_DataSourceConfig_begin_vulkan_memory_config(c, &mem);
        perfetto_protos_VulkanMemoryConfig_set_track_driver_memory_usage(&mem, true);
        perfetto_protos_VulkanMemoryConfig_set_track_device_memory_usage(&mem, true);
        perfetto_protos_VulkanMemoryConfig_end(&mem);
    }
    perfetto_protos_DataSourceConfig_end(c);
}

static void cmd(pb_msg *root, int which)
{
    perfetto_protos_GetAsyncCommandResponse *r = (perfetto_protos_GetAsyncCommandResponse *)root;
    switch (which) {
    case 0: {
        perfetto_protos_GetAsyncCommandResponse_SetupTracing m;
        perfetto_protos_GetAsyncCommandResponse_begin_setup_tracing(r, &m);
        perfetto_protos_GetAsyncCommandResponse_SetupTracing_set_shared_buffer_page_size_kb(&m, 4);
        perfetto_protos_GetAsyncCommandResponse_SetupTracing_end(&m);
        break;
    }
    case 1: {
        perfetto_protos_GetAsyncCommandResponse_SetupDataSource m;
        perfetto_protos_DataSourceConfig c;
        perfetto_protos_GetAsyncCommandResponse_begin_setup_data_source(r, &m);
        perfetto_protos_GetAsyncCommandResponse_SetupDataSource_set_new_instance_id(&m, 3);
        perfetto_protos_GetAsyncCommandResponse_SetupDataSource_begin_config(&m, &c);
        ds_config(&c, 0);
        perfetto_protos_GetAsyncCommandResponse_SetupDataSource_end(&m);
        break;
    }
    case 2:
    case 7: {
        perfetto_protos_GetAsyncCommandResponse_StartDataSource m;
        perfetto_protos_DataSourceConfig c;
        perfetto_protos_GetAsyncCommandResponse_begin_start_data_source(r, &m);
        perfetto_protos_GetAsyncCommandResponse_StartDataSource_set_new_instance_id(&m, 3);
        perfetto_protos_GetAsyncCommandResponse_StartDataSource_begin_config(&m, &c);
        ds_config(&c, which == 2 ? 1 : 2);
        perfetto_protos_GetAsyncCommandResponse_StartDataSource_end(&m);
        break;
    }
    case 3: {
        perfetto_protos_GetAsyncCommandResponse_StopDataSource m;
        perfetto_protos_GetAsyncCommandResponse_begin_stop_data_source(r, &m);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_set_instance_id(&m, 3);
        perfetto_protos_GetAsyncCommandResponse_StopDataSource_end(&m);
        break;
    }
    case 4: {
        perfetto_protos_GetAsyncCommandResponse_Flush m;
        perfetto_protos_GetAsyncCommandResponse_begin_flush(r, &m);
        perfetto_protos_GetAsyncCommandResponse_Flush_add_data_source_ids(&m, 3);
        perfetto_protos_GetAsyncCommandResponse_Flush_add_data_source_ids(&m, 4);
        perfetto_protos_GetAsyncCommandResponse_Flush_set_request_id(&m, 17);
        perfetto_protos_GetAsyncCommandResponse_Flush_set_flags(&m, 1);
        perfetto_protos_GetAsyncCommandResponse_Flush_end(&m);
        break;
    }
    case 5: {
        /* data_source_ids packed, as other encoders write repeated ints. */
        perfetto_protos_GetAsyncCommandResponse_Flush m;
        perfetto_protos_GetAsyncCommandResponse_begin_flush(r, &m);
        static const uint64_t ids[] = { 3, 300, 70000 };
        pb_msg_append_packed_varint_u64((pb_msg *)&m, 1, ids, 3);
        perfetto_protos_GetAsyncCommandResponse_Flush_set_request_id(&m, 18);
        perfetto_protos_GetAsyncCommandResponse_Flush_end(&m);
        break;
    }
    default: {
        perfetto_protos_GetAsyncCommandResponse_ClearIncrementalState m;
        perfetto_protos_GetAsyncCommandResponse_begin_clear_incremental_state(r, &m);
        perfetto_protos_GetAsyncCommandResponse_ClearIncrementalState_add_data_source_ids(&m, 3);
        perfetto_protos_GetAsyncCommandResponse_ClearIncrementalState_end(&m);
        break;
    }
    }
}

/* ---- CommitData on an SMB ------------------------------------------------ */

#define SMB_SIZE  8192u
#define PAGE_SIZE 4096u

static smb_commit_batch batch;

static void commit_request(pb_msg *root, int flush_id)
{
    perfetto_protos_CommitDataRequest *req = (perfetto_protos_CommitDataRequest *)root;
    for (size_t i = 0; i < batch.num_moves; i++) {
        perfetto_protos_CommitDataRequest_ChunksToMove mv;
        perfetto_protos_CommitDataRequest_begin_chunks_to_move(req, &mv);
        perfetto_protos_CommitDataRequest_ChunksToMove_set_page(&mv, batch.moves[i].page);
        perfetto_protos_CommitDataRequest_ChunksToMove_set_chunk(&mv, batch.moves[i].chunk);
        perfetto_protos_CommitDataRequest_ChunksToMove_set_target_buffer(
            &mv, batch.moves[i].target_buffer);
        perfetto_protos_CommitDataRequest_ChunksToMove_end(&mv);
    }
    for (size_t i = 0; i < batch.num_groups; i++) {
        const smb_commit_patch_group *g = &batch.groups[i];
        perfetto_protos_CommitDataRequest_ChunkToPatch cp;
        perfetto_protos_CommitDataRequest_begin_chunks_to_patch(req, &cp);
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_target_buffer(&cp, g->target_buffer);
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_writer_id(&cp, g->writer_id);
        perfetto_protos_CommitDataRequest_ChunkToPatch_set_chunk_id(&cp, g->chunk_id);
        for (uint32_t k = 0; k < g->count; k++) {
            const smb_patch *pt = &batch.patches[g->first + k];
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch pp;
            perfetto_protos_CommitDataRequest_ChunkToPatch_begin_patches(&cp, &pp);
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_offset(&pp, pt->offset);
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_set_data(&pp, pt->data,
                                                                          sizeof pt->data);
            perfetto_protos_CommitDataRequest_ChunkToPatch_Patch_end(&pp);
        }
        if (g->has_more_patches)
            perfetto_protos_CommitDataRequest_ChunkToPatch_set_has_more_patches(&cp, true);
        perfetto_protos_CommitDataRequest_ChunkToPatch_end(&cp);
    }
    if (flush_id)
        perfetto_protos_CommitDataRequest_set_flush_request_id(req, (uint64_t)flush_id);
}

static void write_packets(tw_writer *tw, int count, size_t big)
{
    static char text[4096];
    memset(text, 'x', sizeof text - 1);
    for (int i = 0; i < count; i++) {
        perfetto_protos_TracePacket pkt;
        tw_begin_packet(tw, &pkt);
        perfetto_protos_TracePacket_set_timestamp(&pkt, 1000000u + (uint64_t)i * 1000u);
        if (i % 3 == 2 && big) {
            /* Longer than a chunk: continues in the next one and leaves its
             * size fields to patches. */
            perfetto_protos_TestEvent t;
            perfetto_protos_TracePacket_begin_for_testing(&pkt, &t);
            text[big] = '\0';
            perfetto_protos_TestEvent_set_str(&t, text);
            text[big] = 'x';
            perfetto_protos_TestEvent_end(&t);
        } else {
            perfetto_protos_GpuRenderStageEvent ev;
            perfetto_protos_TracePacket_begin_gpu_render_stage_event(&pkt, &ev);
            perfetto_protos_GpuRenderStageEvent_set_event_id(&ev, (uint64_t)i);
            perfetto_protos_GpuRenderStageEvent_set_duration(&ev, 5000);
            perfetto_protos_GpuRenderStageEvent_set_hw_queue_iid(&ev, 1);
            perfetto_protos_GpuRenderStageEvent_set_stage_iid(&ev, 2);
            perfetto_protos_GpuRenderStageEvent_set_context(&ev, 0x1234);
            perfetto_protos_GpuRenderStageEvent_set_submission_id(&ev, (uint32_t)i / 2);
            perfetto_protos_GpuRenderStageEvent_end(&ev);
        }
        tw_end_packet(tw);
    }
}

/* An SMB written by our trace writer: `packets` packets, every third one
 * `big` bytes long (0: none), flushed or left in chunks being written. */
typedef struct smb_state {
    uint8_t *mem;
    smb_arbiter *arb;
    tw_writer *tw;
} smb_state;

static smb_state fill_smb(smb_page_layout layout, int packets, size_t big, bool flush)
{
    smb_state st = { aligned_alloc(PAGE_SIZE, SMB_SIZE), NULL, NULL };
    memset(st.mem, 0, SMB_SIZE);
    smb_arbiter_config cfg = { .smb_size = SMB_SIZE, .page_size = PAGE_SIZE, .layout = layout };
    st.arb = smb_arbiter_create_on(st.mem, &cfg);
    tw_config tcfg = { .policy = SMB_POLICY_DROP, .target_buffer = 1 };
    st.tw = st.arb ? tw_create(st.arb, &tcfg) : NULL;
    if (!st.tw) {
        fprintf(stderr, "make_seeds: no SMB writer\n");
        exit(1);
    }
    write_packets(st.tw, packets, big);
    if (flush)
        tw_flush(st.tw);
    return st;
}

static void free_smb(smb_state *st)
{
    /* The writer may still hold a chunk: destroy it before the arbiter. */
    tw_destroy(st->tw);
    smb_arbiter_destroy(st->arb);
    free(st->mem);
}

/* The fuzzers zero-fill the SMB past the input: trailing zeros go. */
static size_t image_size(const uint8_t *mem)
{
    size_t image = SMB_SIZE;
    while (image && mem[image - 1] == 0)
        image--;
    return image;
}

static void commit_seed(const char *name, smb_page_layout layout, int packets, size_t big,
                        bool flush, int flush_id, uint8_t mode)
{
    smb_state st = fill_smb(layout, packets, big, flush);
    smb_commit_batch_clear(&batch);
    smb_arbiter_take_commits(st.arb, &batch);

    pb_heap_buffer h;
    pb_heap_init(&h, 4096);
    pb_msg root;
    pb_msg_init_root(&root, pb_heap_stream(&h));
    commit_request(&root, flush_id);
    pb_msg_end(&root);
    size_t n;
    uint8_t *req = pb_heap_dup(&h, &n);
    pb_heap_free(&h);

    size_t image = image_size(st.mem);
    uint8_t head[3] = { mode, (uint8_t)n, (uint8_t)(n >> 8) };
    uint8_t *rest = malloc(n + image + 1);
    memcpy(rest, req, n);
    memcpy(rest + n, st.mem, image);
    write_file("fuzz/corpus/service_commit", name, head, sizeof head, rest, n + image);
    free(rest);
    free(req);
    free_smb(&st);
}

/* fuzz_chunk_parser's program: mode byte, then its "SMB image" operation
 * (5, 0x5A, two 4 KiB pages): the image is scraped and its complete chunks
 * moved, then the buffer is read out. */
static void chunk_seed(const char *name, smb_page_layout layout, int packets, size_t big,
                       bool flush, uint8_t mode)
{
    smb_state st = fill_smb(layout, packets, big, flush);
    uint8_t head[3] = { mode, 5, 0x5A };
    write_file("tracing/corpus", name, head, sizeof head, st.mem, image_size(st.mem));
    free_smb(&st);
}

/* ---- layer settings ------------------------------------------------------ */

static void config_seed(const char *name, const char *const *values, size_t n)
{
    char buf[1024];
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(values[i]);
        memcpy(buf + off, values[i], len);
        off += len;
        if (i + 1 < n)
            buf[off++] = '\0';
    }
    write_file("fuzz/corpus/layer_config", name, buf, off, NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    out_dir = argv[1];

    static const char *const cmd_names[] = {
        "setup_tracing", "setup_data_source", "start_data_source",       "stop_data_source",
        "flush",         "flush_packed_ids",  "clear_incremental_state", "start_memory_data_source",
    };
    for (int i = 0; i < 8; i++)
        write_msg("fuzz/corpus/producer_cmd", cmd_names[i], cmd, i);

    chunk_seed("smb-writer-div14", SMB_PAGE_DIV14, 12, 0, false, 0);
    chunk_seed("smb-writer-div4-spanning", SMB_PAGE_DIV4, 9, 1500, true, 1);
    chunk_seed("smb-writer-div1-discard", SMB_PAGE_DIV1, 10, 800, false, 2);

    commit_seed("div14_small", SMB_PAGE_DIV14, 12, 0, true, 0, 0);
    commit_seed("div4_spanning", SMB_PAGE_DIV4, 9, 1500, true, 5, 0);
    commit_seed("div14_patches", SMB_PAGE_DIV14, 9, 600, true, 0, 4);
    commit_seed("div1_unflushed", SMB_PAGE_DIV1, 10, 800, false, 0, 1);
    commit_seed("div2_discard", SMB_PAGE_DIV2, 20, 300, true, 9, 2);

    static const char *const defaults[] = { "" };
    static const char *const all_set[] = {
        "0", "/tmp/trace.pftrace", "inprocess", "2000", "1", "4096", "copy", "250", "1024",
        "0", "calibrated",
    };
    static const char *const upper_words[] = {
        "TRUE",   "",      "System",  "1000000000", "off",     "1000000",
        "DRIVER", "60000", "1048576", "60000",      "Bracket",
    };
    static const char *const refused[] = {
        "maybe", "", "gpu", "0", "2", "-1", "sometimes", "60001", "63", "1e3", "auto ",
    };
    static const char *const numbers_edge[] = {
        "", "", "", "18446744073709551616", "", "0x10", "", " 5", "+64", "00000000001", "",
    };
    config_seed("defaults", defaults, 1);
    config_seed("all_set", all_set, 11);
    config_seed("upper_words", upper_words, 11);
    config_seed("refused", refused, 11);
    config_seed("numbers_edge", numbers_edge, 11);
    smb_commit_batch_free(&batch);
    return 0;
}
