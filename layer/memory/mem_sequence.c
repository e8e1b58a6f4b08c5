/* SPDX-License-Identifier: MIT */
/* mem_sequence.c — see mem_sequence.h. */
#include "layer/memory/mem_sequence.h"

#include <stdio.h>
#include <string.h>

#include "layer/emit_context.h"
#include "layer/gpu_clock.h"
#include "layer/memory/mem_emit.h"
#include "layer/process_info.h"
#include "layer/timeline_meta.h"

/* How often the driver's budget is sampled while events come. */
#define MSQ_BUDGET_PERIOD_NS (250ull * 1000 * 1000)
/* Annotations one event carries at most. */
#define MSQ_MAX_ANNOTATIONS 16u

/* The counter tracks of one heap. */
enum msq_counter {
    MSQ_ALLOCATED,
    MSQ_BOUND,
    MSQ_SIZE,
    MSQ_BUDGET,
    MSQ_USAGE,
    MSQ_COUNTERS
};
static const char *const counter_names[MSQ_COUNTERS] = { "allocated", "bound", "size", "budget",
                                                         "usage" };

void msq_attach(mem_device *md, void (*wake)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&md->lock);
    md->wake = wake;
    md->wake_ctx = ctx;
    pthread_mutex_unlock(&md->lock);
}

void msq_detach(mem_device *md)
{
    pthread_mutex_lock(&md->lock);
    md->wake = NULL;
    md->wake_ctx = NULL;
    pthread_mutex_unlock(&md->lock);
}

void msq_clear_incremental_state(mem_device *md, unsigned slot)
{
    if (md && slot < TL_SESSION_SLOTS)
        atomic_fetch_or(&md->clear_req, 1u << slot);
}

/* A track of this process, device and heap: stable for the whole run. */
static uint64_t counter_uuid(const mem_device *md, uint32_t heap, enum msq_counter what)
{
    uint64_t x = pi_process_get()->uuid ^ UINT64_C(0x6d656d6f72790000) ^
                 ((uint64_t)md->ordinal << 40) ^ ((uint64_t)heap << 8) ^ (uint64_t)what;
    /* splitmix64's finaliser: nearby inputs, far-apart uuids. */
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static void counter_name(const mem_device *md, uint32_t heap, enum msq_counter what, char *out,
                         size_t size)
{
    if (md->ordinal)
        snprintf(out, size, "Vulkan heap %u %s (device %u)", heap, counter_names[what],
                 md->ordinal + 1);
    else
        snprintf(out, size, "Vulkan heap %u %s", heap, counter_names[what]);
}

static void check_loss(mem_device *md, msq_slot *s)
{
    tw_stats st;
    tw_get_stats(s->writer, &st);
    const uint64_t lost = st.packets_dropped + st.packets_aborted;
    const uint64_t queue_lost = md->queue.lost; /* read without the lock: a hint */
    if (lost != s->lost_seen || queue_lost != s->queue_lost_seen) {
        s->lost_seen = lost;
        s->queue_lost_seen = queue_lost;
        s->need_interned = true;
        s->after_loss = true;
    }
}

static void sample_budget(mem_device *md, msq_slot *s, uint64_t ts)
{
    const gt_instance *inst = md->gt->instance;
    PFN_vkGetPhysicalDeviceMemoryProperties2 get2 =
        inst->vk.GetPhysicalDeviceMemoryProperties2
            ? inst->vk.GetPhysicalDeviceMemoryProperties2
            : inst->vk.GetPhysicalDeviceMemoryProperties2KHR;
    if (!md->budget || !get2)
        return;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
    };
    VkPhysicalDeviceMemoryProperties2 p = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
        .pNext = &b,
    };
    get2(md->gt->physical_device, &p);
    for (uint32_t h = 0; h < md->props.memoryHeapCount; h++) {
        me_counter(s->writer, ts, counter_uuid(md, h, MSQ_BUDGET), (int64_t)b.heapBudget[h]);
        me_counter(s->writer, ts, counter_uuid(md, h, MSQ_USAGE), (int64_t)b.heapUsage[h]);
    }
    s->budget_at = gc_monotonic_ns();
}

/* The sequence's incremental state when it needs it (start, loss, a
 * session's request, a full string table): interned data, the process and
 * counter tracks, the heaps' sizes and current totals. */
static void ensure_interned(mem_device *md, msq_slot *s, uint64_t ts)
{
    if (!s->need_interned)
        return;
    const char *functions[MEM_API_COUNT];
    for (unsigned i = 0; i < MEM_API_COUNT; i++)
        functions[i] = mem_api_name((enum mem_api)i);
    me_interned(s->writer, s->after_loss, functions, MEM_API_COUNT);
    const pi_process *p = pi_process_get();
    /* Not a restart point of its own: the interned data just before is. */
    emc_process_track(s->writer, ts, p->uuid, p->pid, p->name, p->cmdline, p->cmdline_len, false);
    char name[96];
    for (uint32_t h = 0; h < md->props.memoryHeapCount; h++) {
        for (unsigned c = 0; c < MSQ_COUNTERS; c++) {
            if ((c == MSQ_BUDGET || c == MSQ_USAGE) && !md->budget)
                continue;
            counter_name(md, h, (enum msq_counter)c, name, sizeof name);
            me_counter_track(s->writer, ts, counter_uuid(md, h, (enum msq_counter)c), p->uuid,
                             name);
        }
        me_counter(s->writer, ts, counter_uuid(md, h, MSQ_SIZE),
                   (int64_t)md->props.memoryHeaps[h].size);
        if (s->in_snapshot)
            continue; /* written once the snapshot is done */
        me_counter(s->writer, ts, counter_uuid(md, h, MSQ_ALLOCATED), (int64_t)s->allocated[h]);
        me_counter(s->writer, ts, counter_uuid(md, h, MSQ_BOUND), (int64_t)s->bound[h]);
    }
    if (s->strings)
        ls_reset(s->strings);
    s->need_interned = false;
    s->after_loss = false;
    check_loss(md, s);
}

/* The iid of a string value on sequence `s` (0: none to be had). */
static uint64_t string_iid(mem_device *md, msq_slot *s, const char *text, uint64_t ts)
{
    if (!s->strings) {
        s->strings = gt_zalloc(md->alloc, sizeof *s->strings, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
        if (!s->strings)
            return 0;
        ls_reset(s->strings);
    }
    bool fresh;
    uint64_t iid = ls_intern(s->strings, text, &fresh);
    if (!iid && strlen(text) < LS_MAX_BYTES / 4) {
        /* Full: a new incremental generation, as for label stages. */
        s->need_interned = true;
        ensure_interned(md, s, ts);
        iid = ls_intern(s->strings, text, &fresh);
    }
    if (iid && fresh)
        me_string(s->writer, iid, text);
    return iid;
}

typedef struct annotations annotations;
struct annotations {
    me_annotation a[MSQ_MAX_ANNOTATIONS];
    uint32_t n;
};

static void add_int(annotations *x, enum me_key key, int64_t value)
{
    if (x->n < MSQ_MAX_ANNOTATIONS)
        x->a[x->n++] = (me_annotation){ .key = key, .int_value = value };
}

static void add_string(mem_device *md, msq_slot *s, annotations *x, enum me_key key,
                       const char *text, uint64_t ts)
{
    const uint64_t iid = text && *text ? string_iid(md, s, text, ts) : 0;
    if (iid && x->n < MSQ_MAX_ANNOTATIONS)
        x->a[x->n++] = (me_annotation){ .key = key, .is_string = true, .string_iid = iid };
}

static VkObjectType object_type(enum mt_kind kind)
{
    return kind == MT_MEMORY   ? VK_OBJECT_TYPE_DEVICE_MEMORY
           : kind == MT_BUFFER ? VK_OBJECT_TYPE_BUFFER
                               : VK_OBJECT_TYPE_IMAGE;
}

/* What an object's every event says about it: its name (when it has one),
 * and on its creation what it was created with. */
static void describe(mem_device *md, msq_slot *s, annotations *x, enum mt_kind kind,
                     const mt_object *o, bool created, uint64_t ts)
{
    char name[TL_NAMES_MAX_LEN + 1];
    if (md->names && tl_names_version(md->names) &&
        tl_names_get(md->names, object_type(kind), o->handle, name, sizeof name))
        add_string(md, s, x, ME_KEY_NAME, name, ts);
    if (!created)
        return;
    if (kind == MT_MEMORY) {
        static const char *const imports[] = { NULL, "fd", "host pointer", "other" };
        if (o->type < md->props.memoryTypeCount)
            add_int(x, ME_KEY_PROPERTY_FLAGS, md->props.memoryTypes[o->type].propertyFlags);
        if (o->u.memory.dedicated)
            add_int(x,
                    o->u.memory.dedicated_image ? ME_KEY_DEDICATED_IMAGE : ME_KEY_DEDICATED_BUFFER,
                    (int64_t)o->u.memory.dedicated);
        if (o->u.memory.export_types)
            add_int(x, ME_KEY_EXPORT_HANDLE_TYPES, o->u.memory.export_types);
        if (o->u.memory.allocate_flags)
            add_int(x, ME_KEY_ALLOCATE_FLAGS, o->u.memory.allocate_flags);
        if (o->u.memory.import && o->u.memory.import <= MT_IMPORT_OTHER)
            add_string(md, s, x, ME_KEY_IMPORT, imports[o->u.memory.import], ts);
        return;
    }
    add_int(x, ME_KEY_USAGE, o->usage);
    if (o->flags)
        add_int(x, ME_KEY_CREATE_FLAGS, o->flags);
    if (kind != MT_IMAGE)
        return;
    add_string(md, s, x, ME_KEY_FORMAT, tl_meta_format_name(o->u.image.format), ts);
    add_int(x, ME_KEY_WIDTH, o->u.image.width);
    add_int(x, ME_KEY_HEIGHT, o->u.image.height);
    add_int(x, ME_KEY_DEPTH, o->u.image.depth);
    add_int(x, ME_KEY_MIP_LEVELS, o->u.image.mip_levels);
    add_int(x, ME_KEY_ARRAY_LAYERS, o->u.image.array_layers);
    add_int(x, ME_KEY_SAMPLES, o->u.image.samples);
    add_int(x, ME_KEY_TILING, o->u.image.tiling);
}

static void set_total(mem_device *md, msq_slot *s, uint64_t ts, uint32_t heap, bool bound,
                      uint64_t value)
{
    if (heap >= VK_MAX_MEMORY_HEAPS)
        return;
    (bound ? s->bound : s->allocated)[heap] = value;
    if (!s->in_snapshot)
        me_counter(s->writer, ts, counter_uuid(md, heap, bound ? MSQ_BOUND : MSQ_ALLOCATED),
                   (int64_t)value);
}

static void add_total(mem_device *md, msq_slot *s, uint64_t ts, uint32_t heap, bool bound,
                      int64_t delta)
{
    if (heap >= VK_MAX_MEMORY_HEAPS)
        return;
    const uint64_t now = (bound ? s->bound : s->allocated)[heap];
    const uint64_t next = delta < 0 && (uint64_t)-delta > now ? 0 : now + (uint64_t)delta;
    set_total(md, s, ts, heap, bound, next);
}

/* One binding's event: BIND, or DESTROY_BOUND when its object goes. */
static void binding_event(mem_device *md, msq_slot *s, const me_event *base, const mt_binding *b,
                          enum me_op op, const annotations *named)
{
    annotations x = *named;
    if (op == ME_OP_BIND) {
        add_int(&x, ME_KEY_OFFSET, (int64_t)b->offset);
        if (b->plane)
            add_int(&x, ME_KEY_PLANE, b->plane);
    }
    me_event e = *base;
    e.op = op;
    e.device_memory = b->memory;
    e.has_type = true;
    e.memory_type = b->type;
    e.heap = b->heap;
    e.has_size = true;
    e.size = b->size;
    e.annotations = x.a;
    e.nannotations = x.n;
    me_event_packet(s->writer, &e);
    add_total(md, s, base->timestamp, b->heap, true,
              op == ME_OP_BIND ? (int64_t)b->size : -(int64_t)b->size);
}

/* The events of one record (or of a snapshot's object: kind MQ_CREATE
 * with `snapshot`). */
static void write_record(mem_device *md, msq_slot *s, const mq_record *r, bool snapshot)
{
    const mt_object *o = &r->obj;
    const enum mt_kind kind = (enum mt_kind)r->object_kind;
    ensure_interned(md, s, r->ts);
    const bool created = r->kind == MQ_CREATE || r->kind == MQ_ALLOCATE;
    annotations x = { .n = 0 };
    if (snapshot)
        add_int(&x, ME_KEY_SNAPSHOT, 1);
    describe(md, s, &x, kind, o, created, r->ts);
    me_event e = {
        .timestamp = r->ts,
        .pid = md->pid,
        .source = kind == MT_MEMORY   ? ME_SOURCE_DEVICE_MEMORY
                  : kind == MT_BUFFER ? ME_SOURCE_BUFFER
                                      : ME_SOURCE_IMAGE,
        .device = (uint64_t)(uintptr_t)md->gt->handle,
        .caller_iid = r->api,
    };
    if (kind == MT_MEMORY) {
        e.device_memory = o->handle;
        e.has_type = true;
        e.memory_type = o->type;
        e.heap = o->heap;
        e.has_size = true;
        e.size = o->size;
    } else {
        e.object = o->handle;
        e.has_size = o->size != 0;
        e.size = o->size;
    }
    switch ((enum mq_kind)r->kind) {
    case MQ_ALLOCATE:
    case MQ_FREE:
        e.op = r->kind == MQ_ALLOCATE ? ME_OP_CREATE : ME_OP_DESTROY;
        break;
    case MQ_CREATE:
        e.op = ME_OP_CREATE;
        break;
    case MQ_DESTROY:
        if (o->nbindings) {
            for (uint32_t b = 0; b < o->nbindings; b++)
                binding_event(md, s, &e, &o->bindings[b], ME_OP_DESTROY_BOUND, &x);
            return;
        }
        e.op = ME_OP_DESTROY;
        break;
    case MQ_BIND:
        if (r->binding < o->nbindings)
            binding_event(md, s, &e, &o->bindings[r->binding], ME_OP_BIND, &x);
        return;
    case MQ_MAP:
    case MQ_UNMAP:
        e.op = ME_OP_ANNOTATIONS;
        add_int(&x, ME_KEY_MAPPED, r->kind == MQ_MAP);
        if (r->kind == MQ_MAP) {
            add_int(&x, ME_KEY_MAP_OFFSET, (int64_t)r->offset);
            add_int(&x, ME_KEY_MAP_SIZE, (int64_t)r->size);
        }
        break;
    case MQ_NAMED:
        e.op = ME_OP_ANNOTATIONS;
        break;
    }
    e.annotations = x.a;
    e.nannotations = x.n;
    me_event_packet(s->writer, &e);
    if (kind == MT_MEMORY && (r->kind == MQ_ALLOCATE || r->kind == MQ_FREE))
        add_total(md, s, r->ts, o->heap, false,
                  r->kind == MQ_ALLOCATE ? (int64_t)o->size : -(int64_t)o->size);
    check_loss(md, s);
}

/* ---- snapshot ------------------------------------------------------------------------ */

/* A new sequence for slot `i`: the snapshot taken when the slot started
 * (mem_slot_started; taken now if the device has none for it), from which
 * on the records are its own. */
static void start(mem_device *md, unsigned i, uint32_t gen)
{
    msq_slot *s = &md->slots[i];
    s->writer = tl_session_new_collector_writer(i, gen);
    s->gen = gen;
    if (!s->writer)
        return;
    tw_stats st;
    tw_get_stats(s->writer, &st);
    s->lost_seen = st.packets_dropped + st.packets_aborted;
    mem_slot_started(md, i); /* nothing when it is there */
    pthread_mutex_lock(&md->lock);
    /* Ours now: a later period of the slot takes a new one. */
    mem_snapshot sn = md->snapshots[i];
    md->snapshots[i].objects = NULL;
    md->snapshots[i].cap = 0;
    pthread_mutex_unlock(&md->lock);
    s->since = sn.since;
    s->queue_lost_seen = sn.queue_lost;

    memset(s->allocated, 0, sizeof s->allocated);
    memset(s->bound, 0, sizeof s->bound);
    s->need_interned = true;
    s->after_loss = false;
    s->in_snapshot = true;
    ensure_interned(md, s, sn.ts);
    if (sn.incomplete)
        s->after_loss = s->need_interned = true; /* the snapshot is missing */
    /* Memory first (a bind names it), then buffers and images, each with
     * its bindings; all at one time, so the totals are written once, after
     * them (several values at one time would leave the reader to pick). */
    for (uint32_t j = 0; j < sn.count; j++) {
        const enum mt_kind kind = j < sn.memory_end   ? MT_MEMORY
                                  : j < sn.buffer_end ? MT_BUFFER
                                                      : MT_IMAGE;
        mq_record r = {
            .ts = sn.ts,
            .kind = kind == MT_MEMORY ? MQ_ALLOCATE : MQ_CREATE,
            .api = kind == MT_MEMORY   ? MEM_API_ALLOCATE_MEMORY
                   : kind == MT_BUFFER ? MEM_API_CREATE_BUFFER
                                       : MEM_API_CREATE_IMAGE,
            .object_kind = (uint8_t)kind,
            .obj = sn.objects[j],
        };
        write_record(md, s, &r, true);
        r.kind = MQ_BIND;
        r.api = kind == MT_BUFFER ? MEM_API_BIND_BUFFER_MEMORY : MEM_API_BIND_IMAGE_MEMORY;
        for (uint32_t b = 0; kind != MT_MEMORY && b < sn.objects[j].nbindings; b++) {
            r.binding = (uint8_t)b;
            write_record(md, s, &r, true);
        }
    }
    gt_free(md->alloc, sn.objects);
    s->in_snapshot = false;
    for (uint32_t h = 0; h < md->props.memoryHeapCount && h < VK_MAX_MEMORY_HEAPS; h++) {
        set_total(md, s, sn.ts, h, false, s->allocated[h]);
        set_total(md, s, sn.ts, h, true, s->bound[h]);
    }
    sample_budget(md, s, sn.ts);
}

/* ---- serving ------------------------------------------------------------------------- */

static void release(msq_slot *s, unsigned slot)
{
    if (!s->writer)
        return;
    tl_session_release_writer(slot, s->writer);
    s->writer = NULL;
}

/* Every queued record, to every sequence whose snapshot came before it;
 * with no sequence left, the records are dropped. */
static void drain(mem_device *md)
{
    bool any = false;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        any = any || md->slots[i].writer;
    for (;;) {
        pthread_mutex_lock(&md->lock);
        mq_block *b = mq_take(&md->queue);
        pthread_mutex_unlock(&md->lock);
        if (!b)
            return;
        for (uint32_t k = 0; any && k < b->count; k++) {
            for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
                msq_slot *s = &md->slots[i];
                if (s->writer && b->first_seq + k >= s->since)
                    write_record(md, s, &b->rec[k], false);
            }
        }
        pthread_mutex_lock(&md->lock);
        mq_give_back(&md->queue, b);
        pthread_mutex_unlock(&md->lock);
    }
}

void msq_serve(mem_device *md)
{
    if (!md)
        return;
    const uint32_t cleared = atomic_exchange(&md->clear_req, 0u);
    const uint32_t wanted = tl_session_memory_slots();
    /* New sessions first: what is queued may be theirs (after their
     * snapshot) as well as the stopped ones' (before they stopped). */
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        msq_slot *s = &md->slots[i];
        const uint32_t gen = tl_session_slot_generation(i);
        if (!s->writer && (wanted & (1u << i)) && s->gen != gen)
            start(md, i, gen);
        if (s->writer && (cleared & (1u << i)))
            s->need_interned = true;
    }
    drain(md);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (md->slots[i].writer && md->slots[i].gen != tl_session_slot_generation(i))
            release(&md->slots[i], i);
    const uint64_t now = gc_monotonic_ns();
    for (unsigned i = 0; md->budget && i < TL_SESSION_SLOTS; i++) {
        msq_slot *s = &md->slots[i];
        if (s->writer && now - s->budget_at >= MSQ_BUDGET_PERIOD_NS)
            sample_budget(md, s, gc_boottime_ns());
    }
}

void msq_flush_quiet(mem_device *md, uint64_t now_ns, uint64_t quiet_ns)
{
    if (!md)
        return;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (md->slots[i].writer)
            tw_flush_when_quiet(md->slots[i].writer, now_ns, quiet_ns);
}

void msq_release_stale(mem_device *md)
{
    if (!md)
        return;
    drain(md);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        if (md->slots[i].writer && md->slots[i].gen != tl_session_slot_generation(i))
            release(&md->slots[i], i);
}

void msq_release_all(mem_device *md)
{
    if (!md)
        return;
    drain(md);
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++)
        release(&md->slots[i], i);
}

void msq_finish(mem_device *md)
{
    if (!md)
        return;
    for (unsigned i = 0; i < TL_SESSION_SLOTS; i++) {
        gt_free(md->alloc, md->slots[i].strings);
        md->slots[i].strings = NULL;
    }
}
