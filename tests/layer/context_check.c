/* SPDX-License-Identifier: MIT */
/* context_check — prints, and checks, what a .pftrace written through
 * VK_LAYER_GPUTRACE_timeline says about whose its GPU work is (issue #16):
 *
 *   gpu index=I name=... vendor=... model=... uuid=HEX pci_bdf=... KEY=VALUE...
 *                               one line per GpuInfo entry (the last GpuInfo
 *                               packet's list)
 *   queue name=...              one line per distinct hw queue specification
 *   stage_gpu_id N              one line per distinct gpu_id of render stages
 *   process pid=P name=N cmdline=A|B|C   per process TrackDescriptor
 *   thread pid=P tid=T name=N   per thread TrackDescriptor
 *   context_check: gpu_info_packets=N submits=N slices=N wait_slices=N ...
 *
 * and fails (exit 1) when: a render stage's gpu_id has no GpuInfo entry;
 * a TrackEvent names a track no descriptor declared before it, or a thread
 * track of another process; a slice is named other than vkQueueSubmit or
 * a host wait (vkWaitForFences, vkWaitSemaphores(KHR), vkQueueWaitIdle,
 * vkDeviceWaitIdle: flows, written by another writer than the submits, so
 * paired apart); slices do not pair up (begin then end) per track; the
 * number of vkQueueSubmit slices differs from the number of
 * vk_queue_submit events; a vk_queue_submit's tid has no thread
 * descriptor. Exit 2: usage or unreadable input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/perfetto/trace.pbc.h"
#include "protos/perfetto/trace_packet.pbc.h"
#include "tests/layer/trace_file.h"

#define MAX_ITEMS 1024u

typedef struct track track;
struct track {
    uint64_t uuid;
    int32_t pid, tid; /* tid 0: a process track */
    int open;         /* submit slices begun and not ended */
    int open_waits;   /* host-wait slices begun and not ended */
};
static track tracks[MAX_ITEMS];
static size_t ntracks;
static char queues[MAX_ITEMS][256];
static size_t nqueues;
static int32_t stage_gpu_ids[MAX_ITEMS];
static size_t nstage_gpu_ids;
static int32_t submit_tids[MAX_ITEMS];
static size_t nsubmit_tids;
static uint64_t gpu_info_packets, ngpus, submits, slices, wait_slices, process_trees;
static char gpu_lines[64][2048];

static track *find_track(uint64_t uuid)
{
    for (size_t i = 0; i < ntracks; i++) {
        if (tracks[i].uuid == uuid)
            return &tracks[i];
    }
    return NULL;
}

static void on_gpu_info(pb_bytes b)
{
    gpu_info_packets++;
    ngpus = 0;
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_GpuInfo_FIELD_gpus || f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_GpuInfo_Gpu_view g;
        if (!perfetto_protos_GpuInfo_Gpu_decode(&g, f.data, (size_t)f.value) || ngpus >= 64) {
            tf_fail("bad GpuInfo entry");
            continue;
        }
        char name[256], vendor[64], model[64], bdf[64], uuid[40] = "";
        tf_copy_str(name, sizeof name, g.name);
        tf_copy_str(vendor, sizeof vendor, g.vendor);
        tf_copy_str(model, sizeof model, g.model);
        tf_copy_str(bdf, sizeof bdf, g.pci_bdf);
        for (size_t i = 0; i < g.uuid.size && i < 16; i++)
            snprintf(uuid + 2 * i, 3, "%02x", g.uuid.data[i]);
        char *line = gpu_lines[ngpus];
        int n = snprintf(line, sizeof gpu_lines[0],
                         "gpu index=%" PRIu64 " name=%s vendor=%s "
                         "model=%s uuid=%s pci_bdf=%s",
                         ngpus, name, vendor, model, uuid, bdf);
        pb_reader kr;
        pb_field kf;
        pb_reader_init(&kr, f.data, (size_t)f.value);
        while (pb_reader_next(&kr, &kf)) {
            if (kf.id != perfetto_protos_GpuInfo_Gpu_FIELD_extra_info)
                continue;
            perfetto_protos_GpuInfo_Gpu_KeyValue_view kv;
            if (!perfetto_protos_GpuInfo_Gpu_KeyValue_decode(&kv, kf.data, (size_t)kf.value))
                continue;
            char k[64], v[300];
            tf_copy_str(k, sizeof k, kv.key);
            tf_copy_str(v, sizeof v, kv.value);
            for (char *c = v; *c; c++)
                *c = *c == ' ' ? '_' : *c;
            if (n > 0 && (size_t)n < sizeof gpu_lines[0])
                n += snprintf(line + n, sizeof gpu_lines[0] - (size_t)n, " %s=%s", k, v);
        }
        ngpus++;
    }
}

static void on_interned(pb_bytes b)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_InternedData_FIELD_gpu_specifications)
            continue;
        perfetto_protos_InternedGpuRenderStageSpecification_view s;
        if (!perfetto_protos_InternedGpuRenderStageSpecification_decode(&s, f.data,
                                                                        (size_t)f.value))
            continue;
        char name[256];
        tf_copy_str(name, sizeof name, s.name);
        if (strncmp(name, "Vulkan queue", 12))
            continue;
        size_t i = 0;
        while (i < nqueues && strcmp(queues[i], name))
            i++;
        if (i == nqueues && nqueues < MAX_ITEMS)
            memcpy(queues[nqueues++], name, sizeof name);
    }
}

static void on_descriptor(pb_bytes b)
{
    perfetto_protos_TrackDescriptor_view d;
    if (!perfetto_protos_TrackDescriptor_decode(&d, b.data, b.size) || !d.has_uuid) {
        tf_fail("TrackDescriptor without uuid");
        return;
    }
    track t = { .uuid = d.uuid };
    if (d.has_process) {
        perfetto_protos_ProcessDescriptor_view p;
        perfetto_protos_ProcessDescriptor_decode(&p, d.process.data, d.process.size);
        char name[128], cmd[2048] = "";
        tf_copy_str(name, sizeof name, p.process_name);
        pb_reader r;
        pb_field f;
        size_t at = 0;
        pb_reader_init(&r, d.process.data, d.process.size);
        while (pb_reader_next(&r, &f)) {
            if (f.id == perfetto_protos_ProcessDescriptor_FIELD_cmdline && at < sizeof cmd - 2) {
                if (at)
                    cmd[at++] = '|';
                tf_copy_str(cmd + at, sizeof cmd - at, (pb_bytes){ f.data, (size_t)f.value });
                at = strlen(cmd);
            }
        }
        t.pid = p.pid;
        if (!find_track(t.uuid))
            printf("process pid=%d name=%s cmdline=%s\n", p.pid, name, cmd);
    } else if (d.has_thread) {
        perfetto_protos_ThreadDescriptor_view th;
        perfetto_protos_ThreadDescriptor_decode(&th, d.thread.data, d.thread.size);
        char name[64];
        tf_copy_str(name, sizeof name, th.thread_name);
        t.pid = th.pid;
        t.tid = th.tid;
        track *parent = find_track(d.parent_uuid);
        if (!parent || parent->tid || parent->pid != th.pid)
            tf_fail("thread %d's track has no process track of pid %d as parent", th.tid, th.pid);
        if (!find_track(t.uuid))
            printf("thread pid=%d tid=%d name=%s\n", th.pid, th.tid, name);
    }
    track *old = find_track(t.uuid);
    if (old) {
        if (old->pid != t.pid || old->tid != t.tid)
            tf_fail("track %" PRIu64 " described twice differently", t.uuid);
    } else if (ntracks < MAX_ITEMS) {
        tracks[ntracks++] = t;
    }
}

/* What the last slice begun on each sequence was (an end carries no
 * name; sequences interleave in the file). */
static struct {
    uint32_t seq;
    bool wait;
} last_begin[MAX_ITEMS];
static size_t nlast_begin;

static bool *begun_wait(uint32_t seq)
{
    for (size_t i = 0; i < nlast_begin; i++)
        if (last_begin[i].seq == seq)
            return &last_begin[i].wait;
    if (nlast_begin == MAX_ITEMS)
        return NULL;
    last_begin[nlast_begin].seq = seq;
    return &last_begin[nlast_begin++].wait;
}

static void on_track_event(pb_bytes b, uint32_t seq)
{
    perfetto_protos_TrackEvent_view e;
    if (!perfetto_protos_TrackEvent_decode(&e, b.data, b.size))
        return;
    track *t = find_track(e.track_uuid);
    if (!t || !t->tid) {
        tf_fail("TrackEvent on track %" PRIu64 " with no thread descriptor before it",
                e.track_uuid);
        return;
    }
    static const char *const waits[] = { "vkWaitForFences", "vkWaitSemaphores",
                                         "vkWaitSemaphoresKHR", "vkQueueWaitIdle",
                                         "vkDeviceWaitIdle" };
    if (e.type == perfetto_protos_TrackEvent_Type_TYPE_SLICE_BEGIN) {
        char name[64];
        tf_copy_str(name, sizeof name, e.name);
        bool wait = false;
        for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++)
            wait = wait || !strcmp(name, waits[i]);
        bool *kind = begun_wait(seq);
        if (kind)
            *kind = wait;
        if (wait) {
            if (t->open_waits++)
                tf_fail("wait slices overlap on thread %d", t->tid);
            wait_slices++;
            return;
        }
        if (strcmp(name, "vkQueueSubmit"))
            tf_fail("slice named \"%s\"", name);
        if (t->open++)
            tf_fail("slices overlap on thread %d", t->tid);
        slices++;
    } else if (e.type == perfetto_protos_TrackEvent_Type_TYPE_SLICE_END) {
        const bool *kind = begun_wait(seq);
        if (kind && *kind) {
            if (t->open_waits-- != 1)
                tf_fail("wait slice end without begin on thread %d", t->tid);
            return;
        }
        if (t->open-- != 1)
            tf_fail("slice end without begin on thread %d", t->tid);
    }
}

static void on_api_event(pb_bytes b)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_VulkanApiEvent_FIELD_vk_queue_submit)
            continue;
        perfetto_protos_VulkanApiEvent_VkQueueSubmit_view v;
        if (!perfetto_protos_VulkanApiEvent_VkQueueSubmit_decode(&v, f.data, (size_t)f.value))
            continue;
        submits++;
        size_t i = 0;
        while (i < nsubmit_tids && submit_tids[i] != (int32_t)v.tid)
            i++;
        if (i == nsubmit_tids && nsubmit_tids < MAX_ITEMS)
            submit_tids[nsubmit_tids++] = (int32_t)v.tid;
    }
}

static void on_packet(const uint8_t *data, size_t len)
{
    perfetto_protos_TracePacket_view p;
    if (!perfetto_protos_TracePacket_decode(&p, data, len)) {
        tf_fail("undecodable packet");
        return;
    }
    if (p.has_gpu_info)
        on_gpu_info(p.gpu_info);
    if (p.has_interned_data)
        on_interned(p.interned_data);
    if (p.has_track_descriptor)
        on_descriptor(p.track_descriptor);
    if (p.has_track_event)
        on_track_event(p.track_event, p.trusted_packet_sequence_id);
    if (p.has_vulkan_api_event)
        on_api_event(p.vulkan_api_event);
    if (p.has_process_tree)
        process_trees++;
    if (p.has_gpu_render_stage_event) {
        perfetto_protos_GpuRenderStageEvent_view v;
        if (perfetto_protos_GpuRenderStageEvent_decode(&v, p.gpu_render_stage_event.data,
                                                       p.gpu_render_stage_event.size)) {
            size_t i = 0;
            while (i < nstage_gpu_ids && stage_gpu_ids[i] != v.gpu_id)
                i++;
            if (i == nstage_gpu_ids && nstage_gpu_ids < MAX_ITEMS)
                stage_gpu_ids[nstage_gpu_ids++] = v.gpu_id;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: context_check TRACE\n");
        return 2;
    }
    tf_prog = "context_check";
    uint8_t *buf = tf_read_packets(argv[1], on_packet);
    if (!buf)
        return 2;
    for (uint64_t i = 0; i < ngpus; i++)
        printf("%s\n", gpu_lines[i]);
    for (size_t i = 0; i < nqueues; i++)
        printf("queue name=%s\n", queues[i]);
    for (size_t i = 0; i < nstage_gpu_ids; i++) {
        printf("stage_gpu_id %d\n", stage_gpu_ids[i]);
        if (stage_gpu_ids[i] < 0 || (uint64_t)stage_gpu_ids[i] >= ngpus)
            tf_fail("render stages on gpu %d, which GpuInfo (%" PRIu64 " entries) does not list",
                    stage_gpu_ids[i], ngpus);
    }
    for (size_t i = 0; i < nsubmit_tids; i++) {
        bool found = false;
        for (size_t t = 0; t < ntracks; t++)
            found |= tracks[t].tid == submit_tids[i];
        if (!found)
            tf_fail("thread %d submits but has no thread descriptor", submit_tids[i]);
    }
    for (size_t t = 0; t < ntracks; t++) {
        if (tracks[t].open || tracks[t].open_waits)
            tf_fail("thread %d: a slice never ends", tracks[t].tid);
    }
    if (slices != submits)
        tf_fail("%" PRIu64 " vkQueueSubmit slices for %" PRIu64 " vk_queue_submit events", slices,
                submits);
    printf("context_check: gpu_info_packets=%" PRIu64 " gpus=%" PRIu64 " queues=%zu "
           "tracks=%zu process_trees=%" PRIu64 " submits=%" PRIu64 " slices=%" PRIu64
           " wait_slices=%" PRIu64 " tf_failures=%d\n",
           gpu_info_packets, ngpus, nqueues, ntracks, process_trees, submits, slices, wait_slices,
           tf_failures);
    free(buf);
    return tf_failures ? 1 : 0;
}
