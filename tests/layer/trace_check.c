/* SPDX-License-Identifier: MIT */
/* trace_check — reads a .pftrace written through VK_LAYER_GPUTRACE_timeline
 * with the generated decoders, rebuilds the clock conversion from the
 * trace's own snapshots (as trace_processor does: in file order, offset of
 * the latest snapshot at or before the timestamp, the first one before
 * that) and checks what the layer promises:
 *
 *   - the number of GPU render stage events (and per stage, on request);
 *   - every event's clock id is FNV-1a-32(clock_domain) | 0x80000000, the
 *     name taken from its hw queue's interned description, and all
 *     snapshots of that id come from one sequence, moving forward;
 *   - interned hw queues / stages are known on the sequence when used;
 *   - every event converts (no clock_sync_failure) and lies inside the
 *     CPU window of its submission: after the vk_queue_submit packet's
 *     start and before the collector noticed completion;
 *   - events on one hw queue nest (children inside parents, siblings
 *     apart);
 *   - no data loss (TraceStats, previous_packet_dropped);
 *   - on request, the number of events with a given name (label regions)
 *     and that every event matching A lies inside an event matching B in
 *     the same submission on the same hw queue (--expect-within A=B; A and
 *     B are event names or stage names, '_' standing for a space);
 *   - with --device-is-monotonic (lavapipe): each device snapshot's value
 *     equals its MONOTONIC within --snapshot-tolerance-ns, and converting
 *     an event to BOOTTIME with the device snapshots and back to MONOTONIC
 *     with the service's own snapshots reproduces the device value (which
 *     is CLOCK_MONOTONIC there) within --tolerance-ns.
 *
 * With --print-args it also prints one "stage_args stage=NAME KEY=VALUE..."
 * line per event: its extra_data arguments (the layer's stage arguments),
 * for a test to compare with what the program recorded.
 *
 * Prints one "trace_check: key=value ..." summary line; exit 0 pass,
 * 1 a check failed, 2 usage or unreadable input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/perfetto/trace.pbc.h"
#include "protos/perfetto/trace_packet.pbc.h"
#include "tests/layer/trace_file.h"

#define BOOTTIME    6u
#define MONOTONIC   3u
#define SEQ_CLEARED 1u
#define MAX_SEQ     4096u
#define MAX_SPECS   256u

/* ---- growable arrays ----------------------------------------------------------- */

#define VEC(T)         \
    struct {           \
        T *v;          \
        size_t n, cap; \
    }

#define PUSH(vec, item)                                              \
    do {                                                             \
        if ((vec).n == (vec).cap) {                                  \
            (vec).cap = (vec).cap ? 2 * (vec).cap : 64;              \
            (vec).v = realloc((vec).v, (vec).cap * sizeof *(vec).v); \
            if (!(vec).v) {                                          \
                perror("trace_check");                               \
                exit(2);                                             \
            }                                                        \
        }                                                            \
        (vec).v[(vec).n++] = (item);                                 \
    } while (0)

typedef struct snapshot snapshot;
struct snapshot {
    uint32_t seq;
    uint64_t dev, boot, mono;
    bool has_dev, has_boot, has_mono;
};

typedef struct event event;
struct event {
    uint32_t seq, clock_id, submission_id;
    uint64_t ts, dur, queue_iid, stage_iid, cb;
    uint64_t boot_start; /* converted */
    uint64_t collected;  /* collected_boottime_ns extra data, 0 if none */
    bool converted;
    char name[64];
};

typedef struct submit submit;
struct submit {
    uint32_t id;
    uint64_t ts, dur;
    uint64_t collected; /* latest collected_boottime_ns among its events */
};

typedef struct stage_spec stage_spec;
struct stage_spec {
    uint64_t iid;
    char name[64];
    char clock_domain[160];
};

typedef struct seqstate seqstate;
struct seqstate {
    bool seen;
    bool valid; /* incremental state usable */
    stage_spec specs[MAX_SPECS];
    uint32_t nspecs;
};

typedef struct clock_series clock_series;
struct clock_series {
    uint32_t id;
    uint32_t seq;
    VEC(snapshot) snaps;
};

static VEC(event) events;
static VEC(submit) submits;
static VEC(snapshot) service_snaps;
static VEC(clock_series) clocks;
static seqstate *seqs;
static uint64_t clock_sync_failure, needs_state_skipped, loss, dropped_markers;
static uint64_t stage_counts[64];
static char stage_names[64][64];

/* ---- options ------------------------------------------------------------------- */

static long long opt_expect = -1;
static bool opt_monotonic, opt_trace_stats, opt_print_args;
static uint64_t trace_stats_seen;
static uint64_t opt_tolerance = 1000, opt_snap_tolerance = 1000;
static struct {
    char name[64];
    long long count;
} opt_stage[16];
static int opt_nstage;
#define MAX_NAMED 64
static struct {
    char name[64];
    long long count;
} opt_name[MAX_NAMED];
static int opt_nname;
static struct {
    char child[64], parent[64];
} opt_within[MAX_NAMED];
static int opt_nwithin;

/* ---- helpers ------------------------------------------------------------------- */

static uint32_t fnv1a32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static clock_series *series_of(uint32_t id)
{
    for (size_t i = 0; i < clocks.n; i++) {
        if (clocks.v[i].id == id)
            return &clocks.v[i];
    }
    return NULL;
}

static seqstate *seq_state(uint32_t seq)
{
    return seq < MAX_SEQ ? &seqs[seq] : NULL;
}

static const stage_spec *find_spec(const seqstate *s, uint64_t iid)
{
    for (uint32_t i = 0; s && i < s->nspecs; i++) {
        if (s->specs[i].iid == iid)
            return &s->specs[i];
    }
    return NULL;
}

/* ---- packets ------------------------------------------------------------------- */

static void on_clock_snapshot(uint32_t seq, pb_bytes b)
{
    snapshot s = { .seq = seq };
    uint32_t custom = 0;
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_ClockSnapshot_FIELD_clocks || f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_ClockSnapshot_Clock_view c;
        if (!perfetto_protos_ClockSnapshot_Clock_decode(&c, f.data, (size_t)f.value))
            continue;
        if (c.clock_id == BOOTTIME) {
            s.boot = c.timestamp;
            s.has_boot = true;
        } else if (c.clock_id == MONOTONIC) {
            s.mono = c.timestamp;
            s.has_mono = true;
        } else if (c.clock_id >= 128) {
            custom = c.clock_id;
            s.dev = c.timestamp;
            s.has_dev = true;
        }
    }
    if (!custom) {
        if (s.has_boot && s.has_mono)
            PUSH(service_snaps, s);
        return;
    }
    if (custom < 0x80000000u)
        tf_fail("custom clock id %u is not a global FNV-1a id", custom);
    clock_series *cs = series_of(custom);
    if (!cs) {
        clock_series n = { .id = custom, .seq = seq };
        PUSH(clocks, n);
        cs = &clocks.v[clocks.n - 1];
    }
    if (cs->seq != seq)
        tf_fail("clock 0x%08x snapshotted on sequences %u and %u", custom, cs->seq, seq);
    if (cs->snaps.n) {
        const snapshot *p = &cs->snaps.v[cs->snaps.n - 1];
        if (s.dev < p->dev || s.boot < p->boot)
            tf_fail("clock 0x%08x goes backwards between snapshots", custom);
    }
    if (!s.has_boot)
        tf_fail("snapshot of clock 0x%08x without BOOTTIME", custom);
    PUSH(cs->snaps, s);
}

static void on_interned(uint32_t seq, bool cleared, pb_bytes b)
{
    seqstate *st = seq_state(seq);
    if (!st)
        return;
    if (cleared) {
        st->valid = true;
        st->nspecs = 0;
    }
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_InternedData_FIELD_gpu_specifications ||
            f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_InternedGpuRenderStageSpecification_view v;
        if (!perfetto_protos_InternedGpuRenderStageSpecification_decode(&v, f.data,
                                                                        (size_t)f.value))
            continue;
        if (st->nspecs >= MAX_SPECS)
            continue;
        stage_spec *sp = &st->specs[st->nspecs++];
        memset(sp, 0, sizeof *sp);
        sp->iid = v.iid;
        tf_copy_str(sp->name, sizeof sp->name, v.name);
        if (v.iid < 64)
            tf_copy_str(stage_names[v.iid], sizeof stage_names[v.iid], v.name);
        char desc[640];
        tf_copy_str(desc, sizeof desc, v.description);
        const char *cd = strstr(desc, "clock_domain=");
        if (cd) {
            cd += strlen("clock_domain=");
            size_t n = strcspn(cd, " ;");
            if (n >= sizeof sp->clock_domain)
                n = sizeof sp->clock_domain - 1;
            memcpy(sp->clock_domain, cd, n);
            sp->clock_domain[n] = '\0';
        }
    }
}

static uint64_t collected_of(pb_bytes ev)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, ev.data, ev.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_GpuRenderStageEvent_FIELD_extra_data ||
            f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_GpuRenderStageEvent_ExtraData_view x;
        if (!perfetto_protos_GpuRenderStageEvent_ExtraData_decode(&x, f.data, (size_t)f.value))
            continue;
        char name[64], value[32];
        tf_copy_str(name, sizeof name, x.name);
        tf_copy_str(value, sizeof value, x.value);
        if (strcmp(name, "collected_boottime_ns") == 0)
            return strtoull(value, NULL, 10);
    }
    return 0;
}

/* --print-args: the event's extra_data as one line ("KEY=VALUE" words; a
 * space in a value is written as '_'). */
static void print_args(const char *stage, pb_bytes ev)
{
    char line[4096];
    size_t len = (size_t)snprintf(line, sizeof line, "stage_args stage=%s", stage);
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, ev.data, ev.size);
    while (pb_reader_next(&r, &f) && len < sizeof line) {
        if (f.id != perfetto_protos_GpuRenderStageEvent_FIELD_extra_data ||
            f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_GpuRenderStageEvent_ExtraData_view x;
        if (!perfetto_protos_GpuRenderStageEvent_ExtraData_decode(&x, f.data, (size_t)f.value))
            continue;
        char name[128], value[256];
        tf_copy_str(name, sizeof name, x.name);
        tf_copy_str(value, sizeof value, x.value);
        for (char *c = value; *c; c++)
            *c = *c == ' ' ? '_' : *c;
        len += (size_t)snprintf(line + len, sizeof line - len, " %s=%s", name, value);
    }
    puts(line);
}

/* trace_processor's rule: latest snapshot at or before ts, else the first. */
static bool convert(uint32_t clock_id, uint64_t ts, uint64_t *boot)
{
    const clock_series *cs = series_of(clock_id);
    if (!cs || !cs->snaps.n)
        return false;
    const snapshot *use = &cs->snaps.v[0];
    for (size_t i = 0; i < cs->snaps.n; i++) {
        if (cs->snaps.v[i].dev <= ts)
            use = &cs->snaps.v[i];
    }
    *boot = (uint64_t)((int64_t)ts - (int64_t)use->dev + (int64_t)use->boot);
    return true;
}

static void on_gpu_event(const perfetto_protos_TracePacket_view *p)
{
    perfetto_protos_GpuRenderStageEvent_view v;
    if (!perfetto_protos_GpuRenderStageEvent_decode(&v, p->gpu_render_stage_event.data,
                                                    p->gpu_render_stage_event.size)) {
        tf_fail("undecodable render stage event");
        return;
    }
    const uint32_t seq = p->trusted_packet_sequence_id;
    seqstate *st = seq_state(seq);
    if (!st || !st->valid) {
        needs_state_skipped++;
        return;
    }
    const stage_spec *q = find_spec(st, v.hw_queue_iid);
    const stage_spec *s = find_spec(st, v.stage_iid);
    if (!v.has_event_id)
        tf_fail("render stage event without event_id");
    if (!q || !s) {
        /* trace_processor drops an event whose hw queue is unknown. */
        tf_fail("event %" PRIu64 ": hw_queue_iid %" PRIu64 " / stage_iid %" PRIu64
                " not interned on sequence %u",
                v.event_id, v.hw_queue_iid, v.stage_iid, seq);
        return;
    }
    if (!p->has_timestamp_clock_id || p->timestamp_clock_id < 128) {
        tf_fail("event %" PRIu64 " is not on a global clock", v.event_id);
        return;
    }
    if (!q->clock_domain[0])
        tf_fail("hw queue %" PRIu64 " has no clock_domain= in its description", v.hw_queue_iid);
    else if ((fnv1a32(q->clock_domain) | 0x80000000u) != p->timestamp_clock_id)
        tf_fail("clock id 0x%08x != FNV-1a(\"%s\") | 0x80000000", p->timestamp_clock_id,
                q->clock_domain);

    event e = {
        .seq = seq,
        .clock_id = p->timestamp_clock_id,
        .submission_id = v.submission_id,
        .ts = p->timestamp,
        .dur = v.duration,
        .queue_iid = v.hw_queue_iid,
        .stage_iid = v.stage_iid,
        .cb = v.command_buffer_handle,
        .collected = collected_of(p->gpu_render_stage_event),
    };
    if (v.has_name)
        tf_copy_str(e.name, sizeof e.name, v.name);
    if (opt_print_args) {
        char stage[64];
        snprintf(stage, sizeof stage, "%s", s->name);
        for (char *c = stage; *c; c++)
            *c = *c == ' ' ? '_' : *c;
        print_args(stage, p->gpu_render_stage_event);
    }
    e.converted = convert(e.clock_id, e.ts, &e.boot_start);
    if (!e.converted)
        clock_sync_failure++;
    if (v.stage_iid < 64)
        stage_counts[v.stage_iid]++;
    PUSH(events, e);
}

static void on_api_event(const perfetto_protos_TracePacket_view *p)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, p->vulkan_api_event.data, p->vulkan_api_event.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_VulkanApiEvent_FIELD_vk_queue_submit ||
            f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_VulkanApiEvent_VkQueueSubmit_view v;
        if (!perfetto_protos_VulkanApiEvent_VkQueueSubmit_decode(&v, f.data, (size_t)f.value))
            continue;
        submit s = { .id = v.submission_id, .ts = p->timestamp, .dur = v.duration_ns };
        PUSH(submits, s);
    }
}

static void on_trace_stats(pb_bytes b)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id != perfetto_protos_TraceStats_FIELD_buffer_stats || f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_TraceStats_BufferStats_view s;
        if (!perfetto_protos_TraceStats_BufferStats_decode(&s, f.data, (size_t)f.value))
            continue;
        loss += s.chunks_overwritten + s.chunks_discarded + s.trace_writer_packet_loss +
                s.abi_violations + s.patches_failed;
    }
}

static void on_packet(const uint8_t *data, size_t len)
{
    perfetto_protos_TracePacket_view p;
    if (!perfetto_protos_TracePacket_decode(&p, data, len)) {
        tf_fail("undecodable packet");
        return;
    }
    const uint32_t seq = p.trusted_packet_sequence_id;
    seqstate *st = seq_state(seq);
    /* A sequence's first packet says "dropped" by construction. */
    bool first = p.first_packet_on_sequence || (st && !st->seen);
    if (st)
        st->seen = true;
    if (p.previous_packet_dropped && !first) {
        dropped_markers++;
        if (st)
            st->valid = false;
    }
    bool cleared = (p.sequence_flags & SEQ_CLEARED) || p.incremental_state_cleared;
    if (cleared && st && !p.has_interned_data) {
        st->valid = true;
        st->nspecs = 0;
    }
    if (p.has_clock_snapshot)
        on_clock_snapshot(seq, p.clock_snapshot);
    if (p.has_interned_data)
        on_interned(seq, cleared, p.interned_data);
    if (p.has_gpu_render_stage_event)
        on_gpu_event(&p);
    if (p.has_vulkan_api_event)
        on_api_event(&p);
    if (p.has_trace_stats) {
        trace_stats_seen++;
        on_trace_stats(p.trace_stats);
    }
}

/* ---- checks ------------------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
    const submit *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* submits.v sorted by id (done once before the checks). */
static submit *submit_of(uint32_t id)
{
    size_t lo = 0, hi = submits.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (submits.v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < submits.n && submits.v[lo].id == id ? &submits.v[lo] : NULL;
}

static int by_start(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->queue_iid != y->queue_iid)
        return x->queue_iid < y->queue_iid ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    /* Same start: the longer one is the parent. */
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    return 0;
}

static uint64_t check_nesting(void)
{
    uint64_t violations = 0;
    event *sorted = malloc((events.n ? events.n : 1) * sizeof *sorted);
    const event **stack = malloc((events.n ? events.n : 1) * sizeof *stack);
    if (!sorted || !stack)
        exit(2);
    memcpy(sorted, events.v, events.n * sizeof *sorted);
    qsort(sorted, events.n, sizeof *sorted, by_start);
    size_t depth = 0;
    for (size_t i = 0; i < events.n; i++) {
        const event *e = &sorted[i];
        if (i && (e->queue_iid != sorted[i - 1].queue_iid || e->seq != sorted[i - 1].seq))
            depth = 0;
        while (depth && stack[depth - 1]->ts + stack[depth - 1]->dur <= e->ts)
            depth--;
        if (depth && e->ts + e->dur > stack[depth - 1]->ts + stack[depth - 1]->dur) {
            if (violations++ < 5)
                tf_fail("event at %" PRIu64 " (+%" PRIu64 ", stage %" PRIu64
                        ") overlaps its parent at %" PRIu64 " (+%" PRIu64 ", stage %" PRIu64 ")",
                        e->ts, e->dur, e->stage_iid, stack[depth - 1]->ts, stack[depth - 1]->dur,
                        stack[depth - 1]->stage_iid);
            continue;
        }
        stack[depth++] = e;
    }
    free(sorted);
    free(stack);
    return violations;
}

/* The service's offset BOOTTIME - MONOTONIC at `boot` (latest snapshot). */
static bool service_offset(uint64_t boot, int64_t *offset)
{
    if (!service_snaps.n)
        return false;
    const snapshot *use = &service_snaps.v[0];
    for (size_t i = 0; i < service_snaps.n; i++) {
        if (service_snaps.v[i].boot <= boot)
            use = &service_snaps.v[i];
    }
    *offset = (int64_t)use->boot - (int64_t)use->mono;
    return true;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* Splits "A=B" at the last '='. */
static bool split_pair(const char *spec, char *a, size_t asize, char *b, size_t bsize)
{
    const char *eq = strrchr(spec, '=');
    if (!eq || eq == spec)
        return false;
    size_t n = (size_t)(eq - spec) < asize - 1 ? (size_t)(eq - spec) : asize - 1;
    memcpy(a, spec, n);
    a[n] = '\0';
    snprintf(b, bsize, "%s", eq + 1);
    return true;
}

/* An event's name (labels), or its stage's name with '_' for ' '. */
static bool matches(const event *e, const char *key)
{
    if (e->name[0] && !strcmp(e->name, key))
        return true;
    const char *stage = stage_names[e->stage_iid < 64 ? e->stage_iid : 0];
    size_t i = 0;
    for (; stage[i] && key[i]; i++) {
        if (stage[i] != key[i] && !(stage[i] == ' ' && key[i] == '_'))
            return false;
    }
    return stage[i] == '\0' && key[i] == '\0' && i > 0;
}

static void check_named(void)
{
    for (int k = 0; k < opt_nname; k++) {
        long long got = 0;
        for (size_t i = 0; i < events.n; i++)
            got += !strcmp(events.v[i].name, opt_name[k].name);
        if (got != opt_name[k].count)
            tf_fail("%lld events named \"%s\", expected %lld", got, opt_name[k].name,
                    opt_name[k].count);
    }
    for (int k = 0; k < opt_nwithin; k++) {
        const char *child = opt_within[k].child, *parent = opt_within[k].parent;
        size_t children = 0, outside = 0;
        for (size_t i = 0; i < events.n; i++) {
            const event *c = &events.v[i];
            if (!matches(c, child))
                continue;
            children++;
            bool inside = false;
            for (size_t j = 0; j < events.n && !inside; j++) {
                const event *p = &events.v[j];
                inside = j != i && p->submission_id == c->submission_id &&
                         p->queue_iid == c->queue_iid && p->seq == c->seq && matches(p, parent) &&
                         p->ts <= c->ts && c->ts + c->dur <= p->ts + p->dur;
            }
            outside += !inside;
        }
        if (!children)
            tf_fail("no event matches \"%s\" (expected inside \"%s\")", child, parent);
        else if (outside)
            tf_fail("%zu of %zu events \"%s\" are not inside an event \"%s\"", outside, children,
                    child, parent);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: trace_check [--expect-events N] [--expect-stage NAME=N]... "
                    "[--device-is-monotonic] [--expect-trace-stats]\n"
                    "                   [--expect-name NAME=N]... [--expect-within A=B]...\n"
                    "                   [--tolerance-ns N] [--snapshot-tolerance-ns N] "
                    "                   [--print-args] FILE\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    tf_prog = "trace_check";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--expect-events") && i + 1 < argc) {
            opt_expect = atoll(argv[++i]);
        } else if (!strcmp(a, "--expect-stage") && i + 1 < argc && opt_nstage < 16) {
            const char *spec = argv[++i];
            const char *eq = strrchr(spec, '=');
            if (!eq)
                return usage();
            size_t n = (size_t)(eq - spec) < 63 ? (size_t)(eq - spec) : 63;
            memcpy(opt_stage[opt_nstage].name, spec, n);
            opt_stage[opt_nstage].name[n] = '\0';
            opt_stage[opt_nstage++].count = atoll(eq + 1);
        } else if (!strcmp(a, "--expect-name") && i + 1 < argc && opt_nname < MAX_NAMED) {
            char count[32];
            if (!split_pair(argv[++i], opt_name[opt_nname].name, sizeof opt_name[0].name, count,
                            sizeof count))
                return usage();
            opt_name[opt_nname++].count = atoll(count);
        } else if (!strcmp(a, "--expect-within") && i + 1 < argc && opt_nwithin < MAX_NAMED) {
            if (!split_pair(argv[++i], opt_within[opt_nwithin].child, sizeof opt_within[0].child,
                            opt_within[opt_nwithin].parent, sizeof opt_within[0].parent))
                return usage();
            opt_nwithin++;
        } else if (!strcmp(a, "--expect-trace-stats")) {
            opt_trace_stats = true;
        } else if (!strcmp(a, "--print-args")) {
            opt_print_args = true;
        } else if (!strcmp(a, "--device-is-monotonic")) {
            opt_monotonic = true;
        } else if (!strcmp(a, "--tolerance-ns") && i + 1 < argc) {
            opt_tolerance = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--snapshot-tolerance-ns") && i + 1 < argc) {
            opt_snap_tolerance = strtoull(argv[++i], NULL, 10);
        } else if (a[0] == '-') {
            return usage();
        } else {
            path = a;
        }
    }
    if (!path)
        return usage();

    seqs = calloc(MAX_SEQ, sizeof *seqs);
    if (!seqs)
        return 2;

    uint8_t *buf = tf_read_packets(path, on_packet);
    if (!buf)
        return 2;

    /* Counts. */
    if (opt_expect >= 0 && (long long)events.n != opt_expect)
        tf_fail("%zu render stage events, expected %lld", events.n, opt_expect);
    for (int i = 0; i < opt_nstage; i++) {
        long long got = 0;
        for (int s = 0; s < 64; s++) {
            if (!strcmp(stage_names[s], opt_stage[i].name))
                got = (long long)stage_counts[s];
        }
        if (got != opt_stage[i].count)
            tf_fail("%lld events of stage \"%s\", expected %lld", got, opt_stage[i].name,
                    opt_stage[i].count);
    }
    if (opt_trace_stats && !trace_stats_seen)
        tf_fail("no TraceStats packet: the trace was not finished");
    if (clock_sync_failure)
        tf_fail("%" PRIu64 " events could not be converted (clock_sync_failure)",
                clock_sync_failure);
    if (needs_state_skipped)
        tf_fail("%" PRIu64 " events without valid incremental state", needs_state_skipped);
    if (loss || dropped_markers)
        tf_fail("data loss: %" PRIu64 " in TraceStats, %" PRIu64 " previous_packet_dropped", loss,
                dropped_markers);

    /* CPU windows and labels. */
    qsort(submits.v, submits.n, sizeof *submits.v, by_id);
    for (size_t i = 0; i < events.n; i++) {
        submit *s = submit_of(events.v[i].submission_id);
        if (s && events.v[i].collected > s->collected)
            s->collected = events.v[i].collected;
    }
    uint64_t window_violation = 0, window_misses = 0, unnamed_labels = 0;
    uint64_t min_after_submit = UINT64_MAX, min_before_collect = UINT64_MAX;
    for (size_t i = 0; i < events.n; i++) {
        const event *e = &events.v[i];
        if (!strcmp(stage_names[e->stage_iid < 64 ? e->stage_iid : 0], "Debug label") &&
            !e->name[0])
            unnamed_labels++;
        const submit *s = submit_of(e->submission_id);
        if (!s) {
            window_misses++;
            continue;
        }
        const uint64_t collected = s->collected;
        if (!e->converted)
            continue;
        uint64_t start = e->boot_start, end = e->boot_start + e->dur;
        if (start + opt_tolerance < s->ts) {
            window_violation = window_violation > s->ts - start ? window_violation : s->ts - start;
        } else if (start >= s->ts && start - s->ts < min_after_submit) {
            min_after_submit = start - s->ts;
        }
        if (collected) {
            if (end > collected + opt_tolerance)
                window_violation =
                    window_violation > end - collected ? window_violation : end - collected;
            else if (collected >= end && collected - end < min_before_collect)
                min_before_collect = collected - end;
        } else {
            window_misses++;
        }
    }
    if (window_violation)
        tf_fail("events outside their submission's CPU window by up to %" PRIu64 " ns",
                window_violation);
    if (window_misses)
        tf_fail("%" PRIu64 " events without a vk_queue_submit / completion time", window_misses);
    if (unnamed_labels)
        tf_fail("%" PRIu64 " label events without a name", unnamed_labels);

    uint64_t nesting = check_nesting();
    check_named();

    /* Truth on lavapipe: the device clock is CLOCK_MONOTONIC. */
    uint64_t max_snap_dev = 0, max_conv_err = 0, snapshots = 0;
    if (opt_monotonic) {
        for (size_t c = 0; c < clocks.n; c++) {
            for (size_t i = 0; i < clocks.v[c].snaps.n; i++) {
                const snapshot *s = &clocks.v[c].snaps.v[i];
                snapshots++;
                if (!s->has_mono) {
                    tf_fail("device snapshot without MONOTONIC");
                    continue;
                }
                uint64_t d = absdiff(s->dev, s->mono);
                if (d > max_snap_dev)
                    max_snap_dev = d;
            }
        }
        if (max_snap_dev > opt_snap_tolerance)
            tf_fail("device snapshot differs from MONOTONIC by %" PRIu64 " ns (> %" PRIu64 ")",
                    max_snap_dev, opt_snap_tolerance);
        for (size_t i = 0; i < events.n; i++) {
            const event *e = &events.v[i];
            int64_t off;
            if (!e->converted || !service_offset(e->boot_start, &off))
                continue;
            uint64_t mono = (uint64_t)((int64_t)e->boot_start - off);
            uint64_t err = absdiff(mono, e->ts);
            if (err > max_conv_err)
                max_conv_err = err;
        }
        if (max_conv_err > opt_tolerance)
            tf_fail("conversion error vs MONOTONIC truth %" PRIu64 " ns (> %" PRIu64 ")",
                    max_conv_err, opt_tolerance);
    } else {
        for (size_t c = 0; c < clocks.n; c++)
            snapshots += clocks.v[c].snaps.n;
    }

    printf("trace_check: events=%zu api_events=%zu clocks=%zu device_snapshots=%" PRIu64
           " clock_sync_failure=%" PRIu64 " nesting_violations=%" PRIu64
           " window_violation_ns=%" PRIu64 " min_start_after_submit_ns=%" PRIu64
           " min_end_before_collect_ns=%" PRIu64 " max_snapshot_vs_monotonic_ns=%" PRIu64
           " max_conversion_error_ns=%" PRIu64 " loss=%" PRIu64 "\n",
           events.n, submits.n, clocks.n, snapshots, clock_sync_failure, nesting, window_violation,
           min_after_submit == UINT64_MAX ? 0 : min_after_submit,
           min_before_collect == UINT64_MAX ? 0 : min_before_collect, max_snap_dev, max_conv_err,
           loss + dropped_markers);
    for (int s = 1; s < 64; s++) {
        if (stage_counts[s])
            printf("trace_check: stage \"%s\": %" PRIu64 "\n", stage_names[s], stage_counts[s]);
    }
    if (clocks.n)
        printf("trace_check: clock 0x%08x\n", clocks.v[0].id);
    free(buf);
    return tf_failures ? 1 : 0;
}
