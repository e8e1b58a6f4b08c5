/* Packet import (trace_processor's order of steps), our correlation and
 * loss bookkeeping, and the translation of both into violations.
 *
 * The import mirrors ProtoTraceReader::ParsePacket of trace_processor v47:
 *   incremental_state_cleared / previous_packet_dropped -> sequence state,
 *   per-sequence loss count (first packet of a sequence excluded),
 *   trace_packet_defaults, interned_data, then clock_snapshot (stop),
 *   trace_stats, service/remote-sync/extension packets (stop),
 *   SEQ_NEEDS_INCREMENTAL_STATE on an invalid sequence (skip),
 *   timestamp conversion (a failure drops the packet), then the payload.
 * GPU payloads are judged when read rather than after sorting, with the
 * interned data known at that point (producers intern before use). */
#include "toolkit/tk_checks.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_arith.h"
#include "toolkit/tk_fields.h"
#include "toolkit/tk_map.h"
#include "toolkit/tk_schema.h"

#define SUBMIT_SLOTS         (1u << 14)
#define MAX_MACHINES         64
#define MAX_INTERNED_PER_SEQ (1u << 16)
#define MAX_FAILED_CLOCKS    4096

/* ---- names ------------------------------------------------------------------ */

static const struct {
    const char *name;
    tk_severity sev;
} violation_desc[TK_V_COUNT] = {
#define TK_VIOLATION_DESC(code, sev) { #code, sev },
    TK_VIOLATION_LIST(TK_VIOLATION_DESC)
#undef TK_VIOLATION_DESC
};

const char *tk_violation_name(tk_violation_code c)
{
    return violation_desc[c].name;
}
tk_severity tk_violation_severity(tk_violation_code c)
{
    return violation_desc[c].sev;
}

const char *tk_severity_name(tk_severity s)
{
    switch (s) {
    case TK_SEV_INFO:
        return "info";
    case TK_SEV_WARNING:
        return "warning";
    case TK_SEV_DATA_LOSS:
        return "data_loss";
    case TK_SEV_ERROR:
        return "error";
    }
    return "?";
}

void tk_check_options_default(tk_check_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_error_ns = 1000000;            /* 1 ms */
    o->max_drift_ppm = 500;               /* beyond any NTP slew */
    o->max_snapshot_gap_ns = 20000000000; /* twice traced's 10 s period */
    o->ooo_window_ns = 5000000000;        /* default file_write_period_ms */
    o->max_submit_latency_ns = 10000000000;
    o->submit_tolerance_ns = 0;
    o->expect_gpu_events = -1;
    o->max_packet_size = TK_READER_DEFAULT_MAX_PACKET;
    tk_inflate_limits_default(&o->inflate_limits);
    o->block_size = TK_READER_DEFAULT_BLOCK;
    o->max_sequences = 1u << 16;
    tk_clock_limits_default(&o->clock_limits);
}

/* ---- state -------------------------------------------------------------------- */

/* Interned ids of one kind on one sequence, with the two most recent hits
 * in front (GPU events look up the same few ids over and over). */
typedef struct iid_set {
    tk_map map;
    bool full; /* over MAX_INTERNED_PER_SEQ: lookups answer "known" */
    uint8_t n_recent;
    uint64_t recent[2];
} iid_set;

typedef struct seq_state {
    uint32_t id;
    /* trace_processor: incremental state is invalid until the first packet
     * that clears it, and again after every loss until the next clear. */
    bool incr_valid;
    bool ever_cleared;
    bool has_defaults;
    uint32_t default_clock;
    /* Key of trace_processor's packet_sequence_data_loss_ map exists. */
    bool loss_key;
    uint64_t data_loss;
    /* Interned ids of the current generation. */
    iid_set specs, contexts;
} seq_state;

typedef struct failed_clock {
    int64_t id;
    uint64_t count;
} failed_clock;

typedef struct machine {
    uint32_t id;
    tk_clock_graph *g;
    tk_map seq_index;
    seq_state *seqs;
    uint32_t n_seqs, cap_seqs;
    /* The few sequences being interleaved right now (index + 1; 0 = none). */
    uint32_t recent_id[4];
    uint32_t recent_idx[4];
    uint32_t recent_next;
    seq_state overflow;
    int64_t latest_ts;
    bool has_pushed;
    int64_t max_pushed_ts;
    /* Clocks of timestamps that could not be converted, in order of first
     * failure (reports must not depend on hash order), found by id through
     * failed_index. */
    failed_clock *failed;
    uint32_t n_failed, cap_failed;
    tk_map failed_index;
    tk_map ftrace_error_seqs;
} machine;

typedef struct submit_slot {
    uint32_t id;
    uint32_t gpu_count;
    int64_t submit_ts, submit_end;
    int64_t gpu_min, gpu_max;
    uint8_t state; /* bit 0: submit seen, bit 1: GPU stage(s) seen */
} submit_slot;

/* A global clock that describes itself in the trace: our layer writes
 * `clock_domain=NAME clock_id=0xID deviation_ns=N` into the description of
 * each interned hardware queue (docs/layer.md), so the checker can verify
 * the id against FNV-1a(NAME) | 0x80000000 and use the recorded deviation
 * in the error bound without being told. */
#define MAX_LEARNED_CLOCKS 64
typedef struct learned_clock {
    char *name;
    size_t name_len;
    uint64_t name_hash; /* compared before the name itself */
    uint32_t id;
    bool has_id;
    int64_t deviation_ns;
} learned_clock;

struct tk_checker {
    tk_check_options o;
    learned_clock learned[MAX_LEARNED_CLOCKS];
    size_t n_learned;
    tk_stats st;
    machine *m;
    uint32_t n_m;
    tk_map machine_index; /* machine id -> index in m */
    tk_inflater *z;
    bool inflating;

    bool stop;
    bool input_error;
    char stop_msg[256];

    uint64_t bytes;
    uint64_t packets;
    uint64_t gpu_events, vk_events, vk_submits;
    bool has_range;
    int64_t first_ts, last_ts;

    submit_slot *subs;

    /* details for messages */
    uint64_t gpu_dropped_no_event_id, gpu_dropped_unknown_queue;
    uint64_t worst_before_submit_ns, worst_after_window_ns, worst_ooo_ns;
    uint64_t raw_ts_overflows; /* packet timestamps >= 2^63 as written */
    uint32_t first_loss_seq, first_lost_state_seq, first_missing_state_seq;
    uint64_t first_loss_offset;
    const char *first_invalid_snapshot_reason;
    uint64_t first_invalid_snapshot_offset;
    const char *first_limit_reason;
    uint64_t sequence_limit_hits;
};

static seq_state *get_seq(tk_checker *c, machine *m, uint32_t id);

static void free_seq(seq_state *s)
{
    tk_map_free(&s->specs.map);
    tk_map_free(&s->contexts.map);
}

static void iid_set_clear(iid_set *set)
{
    tk_map_clear(&set->map);
    set->full = false;
    set->n_recent = 0;
}

static machine *get_machine(tk_checker *c, uint32_t id)
{
    const uint64_t *known = tk_map_find(&c->machine_index, id);
    if (known)
        return &c->m[*known];
    if (c->n_m >= MAX_MACHINES)
        return NULL;
    machine *m = &c->m[c->n_m];
    memset(m, 0, sizeof *m);
    m->id = id;
    m->g = tk_clock_graph_new(&c->o.clock_limits);
    if (!m->g)
        return NULL;
    bool inserted;
    if (!tk_map_insert(&c->machine_index, id, c->n_m, &inserted)) {
        tk_clock_graph_free(m->g);
        return NULL;
    }
    tk_map_init(&m->seq_index);
    tk_map_init(&m->failed_index);
    tk_map_init(&m->ftrace_error_seqs);
    c->n_m++;
    return m;
}

tk_checker *tk_checker_new(const tk_check_options *o)
{
    tk_checker *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (o)
        c->o = *o;
    else
        tk_check_options_default(&c->o);
    if (!c->o.max_packet_size)
        c->o.max_packet_size = TK_READER_DEFAULT_MAX_PACKET;
    if (!c->o.max_sequences)
        c->o.max_sequences = 1u << 16;
    if (!c->o.clock_limits.max_domains)
        tk_clock_limits_default(&c->o.clock_limits);
    tk_stats_init(&c->st);
    tk_map_init(&c->machine_index);
    c->m = calloc(MAX_MACHINES, sizeof *c->m);
    c->subs = calloc(SUBMIT_SLOTS, sizeof *c->subs);
    c->z = tk_inflater_new(c->o.max_packet_size);
    if (!c->m || !c->subs || !c->z || !get_machine(c, 0)) {
        tk_checker_free(c);
        return NULL;
    }
    tk_inflater_set_limits(c->z, &c->o.inflate_limits);
    return c;
}

void tk_checker_free(tk_checker *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_m; i++) {
        machine *m = &c->m[i];
        for (uint32_t s = 0; s < m->n_seqs; s++)
            free_seq(&m->seqs[s]);
        free_seq(&m->overflow);
        free(m->seqs);
        free(m->failed);
        tk_map_free(&m->seq_index);
        tk_map_free(&m->failed_index);
        tk_map_free(&m->ftrace_error_seqs);
        tk_clock_graph_free(m->g);
    }
    for (size_t i = 0; i < c->n_learned; i++)
        free(c->learned[i].name);
    free(c->m);
    tk_map_free(&c->machine_index);
    free(c->subs);
    tk_inflater_free(c->z);
    tk_stats_free(&c->st);
    free(c);
}

static seq_state *get_seq(tk_checker *c, machine *m, uint32_t id)
{
    for (int k = 0; k < 4; k++)
        if (m->recent_idx[k] && m->recent_id[k] == id)
            return &m->seqs[m->recent_idx[k] - 1];
    uint64_t *idx = tk_map_find(&m->seq_index, id);
    if (!idx) {
        if (m->n_seqs >= c->o.max_sequences) {
            c->sequence_limit_hits++;
            tk_stats_add(&c->st, TK_STAT_state_limit_hits, 1);
            if (!c->first_limit_reason)
                c->first_limit_reason = "too many packet sequences";
            return &m->overflow;
        }
        if (m->n_seqs == m->cap_seqs) {
            uint32_t ncap = m->cap_seqs ? m->cap_seqs * 2 : 16;
            seq_state *ns = realloc(m->seqs, ncap * sizeof *ns);
            if (!ns)
                return &m->overflow;
            m->seqs = ns;
            m->cap_seqs = ncap;
        }
        bool inserted;
        idx = tk_map_insert(&m->seq_index, id, m->n_seqs, &inserted);
        if (!idx)
            return &m->overflow;
        seq_state *s = &m->seqs[m->n_seqs++];
        memset(s, 0, sizeof *s);
        s->id = id;
        tk_map_init(&s->specs.map);
        tk_map_init(&s->contexts.map);
    }
    const uint32_t slot = m->recent_next++ & 3;
    m->recent_id[slot] = id;
    m->recent_idx[slot] = (uint32_t)*idx + 1;
    return &m->seqs[*idx];
}

/* ---- packet decoding ----------------------------------------------------------- */

enum {
    H_TS = 1u << 0,
    H_CLOCK = 1u << 1,
    H_SEQ = 1u << 2,
    H_FLAGS = 1u << 3,
    H_ISC = 1u << 4,
    H_PPD = 1u << 5,
    H_FIRST = 1u << 6,
    H_MACHINE = 1u << 7,
    H_SNAPSHOT = 1u << 8,
    H_STATS = 1u << 9,
    H_GPU = 1u << 10,
    H_VK = 1u << 11,
    H_INTERNED = 1u << 12,
    H_DEFAULTS = 1u << 13,
    H_COMPRESSED = 1u << 14,
    H_ZSTD = 1u << 15,
    H_FTRACE_STATS = 1u << 16,
    H_FTRACE_EVENTS = 1u << 17,
    H_SERVICE = 1u << 18,
    H_EXTENSION = 1u << 19,
    H_REMOTE_SYNC = 1u << 20,
    H_CHROME = 1u << 21,
};

typedef struct pkt {
    uint32_t has;
    uint32_t timestamp_clock_id;
    uint32_t seq_id;
    uint32_t sequence_flags;
    uint32_t machine_id;
    bool incremental_state_cleared;
    bool previous_packet_dropped;
    uint64_t timestamp;
    pb_bytes snapshot, stats, gpu, vk, interned, defaults, compressed, ftrace_stats, ftrace_events;
} pkt;

#define LEN_FIELD(bit, dst)           \
    if (f.wire_type == PB_WIRE_LEN) { \
        p->has |= (bit);              \
        p->dst = pb_field_bytes(&f);  \
    }                                 \
    break

#define VARINT_FIELD(bit, stmt)          \
    if (f.wire_type == PB_WIRE_VARINT) { \
        p->has |= (bit);                 \
        stmt;                            \
    }                                    \
    break

/* Top level of one TracePacket; nested payloads are only located here.
 * Like protozero's decoder, a repeated scalar keeps its last value. This is
 * perfetto_protos_TracePacket_decode plus the payloads outside our schema
 * (tk_fields.h), in one pass. */
static PB_ALWAYS_INLINE bool decode_packet(const uint8_t *data, size_t len, pkt *p)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    memset(p, 0, sizeof *p);
    while (pb_reader_next(&r, &f)) {
        switch (f.id) {
        case TK_TP_TIMESTAMP:
            VARINT_FIELD(H_TS, p->timestamp = f.value);
        case TK_TP_TIMESTAMP_CLOCK_ID:
            VARINT_FIELD(H_CLOCK, p->timestamp_clock_id = (uint32_t)f.value);
        case TK_TP_TRUSTED_PACKET_SEQUENCE_ID:
            VARINT_FIELD(H_SEQ, p->seq_id = (uint32_t)f.value);
        case TK_TP_SEQUENCE_FLAGS:
            VARINT_FIELD(H_FLAGS, p->sequence_flags = (uint32_t)f.value);
        case TK_TP_INCREMENTAL_STATE_CLEARED:
            VARINT_FIELD(H_ISC, p->incremental_state_cleared = f.value != 0);
        case TK_TP_PREVIOUS_PACKET_DROPPED:
            VARINT_FIELD(H_PPD, p->previous_packet_dropped = f.value != 0);
        case TK_TP_FIRST_PACKET_ON_SEQUENCE:
            VARINT_FIELD(H_FIRST, (void)0);
        case TK_TP_MACHINE_ID:
            VARINT_FIELD(H_MACHINE, p->machine_id = (uint32_t)f.value);
        case TK_TP_CLOCK_SNAPSHOT:
            LEN_FIELD(H_SNAPSHOT, snapshot);
        case TK_TP_TRACE_STATS:
            LEN_FIELD(H_STATS, stats);
        case TK_TP_GPU_RENDER_STAGE_EVENT:
            LEN_FIELD(H_GPU, gpu);
        case TK_TP_VULKAN_API_EVENT:
            LEN_FIELD(H_VK, vk);
        case TK_TP_INTERNED_DATA:
            LEN_FIELD(H_INTERNED, interned);
        case TK_TP_TRACE_PACKET_DEFAULTS:
            LEN_FIELD(H_DEFAULTS, defaults);
        case TK_TP_COMPRESSED_PACKETS:
            LEN_FIELD(H_COMPRESSED, compressed);
        case TK_PKT_FTRACE_STATS:
            LEN_FIELD(H_FTRACE_STATS, ftrace_stats);
        case TK_PKT_FTRACE_EVENTS:
            LEN_FIELD(H_FTRACE_EVENTS, ftrace_events);
        case TK_TP_ZSTD_COMPRESSED_PACKETS:
            p->has |= H_ZSTD;
            break;
        case TK_TP_SERVICE_EVENT:
            p->has |= H_SERVICE;
            break;
        case TK_PKT_EXTENSION_DESCRIPTOR:
            p->has |= H_EXTENSION;
            break;
        case TK_PKT_REMOTE_CLOCK_SYNC:
            p->has |= H_REMOTE_SYNC;
            break;
        case TK_PKT_CHROME_EVENTS:
        case TK_PKT_CHROME_METADATA:
            p->has |= H_CHROME;
            break;
        default:
            break;
        }
    }
    return r.err == PB_OK;
}

/* ---- helpers --------------------------------------------------------------------- */

static void stop_import(tk_checker *c, bool input_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void stop_import(tk_checker *c, bool input_error, const char *fmt, ...)
{
    if (c->stop)
        return;
    c->stop = true;
    c->input_error = input_error;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->stop_msg, sizeof c->stop_msg, fmt, ap);
    va_end(ap);
}

static int64_t double_ns(double seconds)
{
    double ns = seconds * 1e9;
    if (!(ns == ns))
        return 0;
    if (ns >= 9.2233720368547758e18)
        return INT64_MAX;
    if (ns <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)ns;
}

static void note_time(tk_checker *c, int64_t ts)
{
    if (!c->has_range) {
        c->has_range = true;
        c->first_ts = c->last_ts = ts;
        return;
    }
    if (ts < c->first_ts)
        c->first_ts = ts;
    if (ts > c->last_ts)
        c->last_ts = ts;
}

/* ---- sequence state ------------------------------------------------------------ */

static void clear_incremental_state(seq_state *s)
{
    /* A new generation: no defaults, no interned data. */
    s->incr_valid = true;
    s->ever_cleared = true;
    s->has_defaults = false;
    s->default_clock = 0;
    iid_set_clear(&s->specs);
    iid_set_clear(&s->contexts);
}

static void parse_defaults(seq_state *s, pb_bytes b)
{
    perfetto_protos_TracePacketDefaults_view v;
    (void)perfetto_protos_TracePacketDefaults_decode(&v, b.data, b.size);
    s->has_defaults = true;
    s->default_clock = v.timestamp_clock_id; /* 0 when absent, as upstream */
}

/* Value of `key` (e.g. "clock_domain=") in a space-separated key=value
 * text, as a span; false when absent or empty. */
static bool find_token(const uint8_t *text, size_t len, const char *key, const uint8_t **val,
                       size_t *val_len)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen <= len; i++) {
        if ((i == 0 || text[i - 1] == ' ') && memcmp(text + i, key, klen) == 0) {
            size_t j = i + klen;
            size_t e = j;
            while (e < len && text[e] != ' ' && text[e] != ';')
                e++;
            if (e == j)
                return false;
            *val = text + j;
            *val_len = e - j;
            return true;
        }
    }
    return false;
}

static void learn_clock(tk_checker *c, const uint8_t *text, size_t len)
{
    const uint8_t *v;
    size_t n;
    if (!find_token(text, len, "clock_domain=", &v, &n) || n > 512)
        return;
    /* Every interned queue may carry a name: comparing hashes first keeps
     * this cheap whatever names came before. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ v[i]) * 0x100000001b3ull;
    learned_clock *lc = NULL;
    for (size_t i = 0; i < c->n_learned; i++) {
        const learned_clock *k = &c->learned[i];
        if (k->name_hash == h && k->name_len == n && memcmp(k->name, v, n) == 0) {
            lc = &c->learned[i];
            break;
        }
    }
    if (!lc) {
        if (c->n_learned == MAX_LEARNED_CLOCKS)
            return;
        char *name = strndup((const char *)v, n);
        if (!name)
            return;
        lc = &c->learned[c->n_learned++];
        memset(lc, 0, sizeof *lc);
        lc->name = name;
        lc->name_len = n;
        lc->name_hash = h;
    }
    char num[32];
    if (find_token(text, len, "clock_id=", &v, &n) && n < sizeof num) {
        memcpy(num, v, n);
        num[n] = 0;
        char *end;
        unsigned long long id = strtoull(num, &end, 0);
        if (*end == 0 && id <= UINT32_MAX) {
            lc->id = (uint32_t)id;
            lc->has_id = true;
        }
    }
    if (find_token(text, len, "deviation_ns=", &v, &n) && n < sizeof num) {
        memcpy(num, v, n);
        num[n] = 0;
        char *end;
        long long d = strtoll(num, &end, 10);
        if (*end == 0 && d > lc->deviation_ns)
            lc->deviation_ns = d;
    }
}

static void intern(tk_checker *c, seq_state *s, pb_bytes b)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        bool found = false;
        uint64_t iid = 0;
        if (f.wire_type == PB_WIRE_LEN) {
            pb_reader sub;
            pb_field g;
            pb_reader_init(&sub, f.data, (size_t)f.value);
            while (pb_reader_next(&sub, &g)) {
                if (g.id == TK_INTERNED_IID) {
                    found = true;
                    iid = g.wire_type == PB_WIRE_LEN ? 0 : g.value;
                    break;
                }
            }
        }
        if (!found) {
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
            continue;
        }
        if (f.id == TK_ID_GPU_SPECIFICATIONS) {
            /* InternedGpuRenderStageSpecification.description (3). */
            pb_reader sub;
            pb_field g;
            pb_reader_init(&sub, f.data, (size_t)f.value);
            while (pb_reader_next(&sub, &g))
                if (g.id == 3 && g.wire_type == PB_WIRE_LEN)
                    learn_clock(c, g.data, (size_t)g.value);
        }
        iid_set *set = NULL;
        if (f.id == TK_ID_GPU_SPECIFICATIONS)
            set = &s->specs;
        else if (f.id == TK_ID_GRAPHICS_CONTEXTS)
            set = &s->contexts;
        if (!set)
            continue;
        if (set->map.len >= MAX_INTERNED_PER_SEQ) {
            if (!set->full) {
                set->full = true;
                tk_stats_add(&c->st, TK_STAT_state_limit_hits, 1);
                if (!c->first_limit_reason)
                    c->first_limit_reason = "too many interned GPU entries on one sequence";
            }
            continue;
        }
        bool ins;
        tk_map_insert(&set->map, iid, 1, &ins);
    }
}

/* InternedData lookup as trace_processor's LookupInternedMessage: a miss
 * counts interned_data_tokenizer_errors. A full set answers "known". */
static PB_ALWAYS_INLINE bool lookup_interned(tk_checker *c, iid_set *set, uint64_t iid)
{
    if (PB_LIKELY(set->n_recent &&
                  (set->recent[0] == iid || (set->n_recent > 1 && set->recent[1] == iid))))
        return true;
    if (tk_map_find(&set->map, iid) || set->full) {
        set->recent[1] = set->recent[0];
        set->recent[0] = iid;
        if (set->n_recent < 2)
            set->n_recent++;
        return true;
    }
    tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
    return false;
}

/* ---- ClockSnapshot ----------------------------------------------------------------- */

static void handle_clock_snapshot(tk_checker *c, machine *m, pb_bytes b, uint32_t seq_id,
                                  uint64_t offset)
{
    tk_snapshot_clock stack_clocks[16] = { { 0 } };
    tk_snapshot_clock *clocks = stack_clocks;
    size_t n = 0, cap = 16;
    pb_reader r;
    pb_field f;
    tk_stats_add(&c->st, TK_STAT_clock_snapshot_packets, 1);
    int32_t primary = 0;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.id == perfetto_protos_ClockSnapshot_FIELD_primary_trace_clock &&
            f.wire_type == PB_WIRE_VARINT)
            primary = pb_field_int32(&f);
        if (f.id != TK_CS_CLOCKS || f.wire_type != PB_WIRE_LEN)
            continue;
        if (n >= cap) {
            size_t ncap = cap * 2;
            if (ncap > (size_t)c->o.clock_limits.max_clocks_per_snapshot + 1)
                ncap = (size_t)c->o.clock_limits.max_clocks_per_snapshot + 1;
            if (ncap <= cap) {
                n++; /* over the limit; the graph rejects it */
                continue;
            }
            tk_snapshot_clock *nc = malloc(ncap * sizeof *nc);
            if (!nc)
                break;
            memcpy(nc, clocks, n * sizeof *nc);
            if (clocks != stack_clocks)
                free(clocks);
            clocks = nc;
            cap = ncap;
        }
        perfetto_protos_ClockSnapshot_Clock_view cv;
        (void)perfetto_protos_ClockSnapshot_Clock_decode(&cv, f.data, (size_t)f.value);
        tk_snapshot_clock *k = &clocks[n++];
        k->clock_id = cv.clock_id;
        k->timestamp = cv.timestamp;
        k->unit_multiplier_ns = cv.unit_multiplier_ns;
        k->is_incremental = cv.is_incremental;
    }
    /* Past our per-snapshot limit n exceeds what was stored; the graph
     * rejects such a snapshot before reading the array. */
    const char *reason = NULL;
    tk_snapshot_status st =
        tk_clock_graph_add_clock_snapshot(m->g, seq_id, primary, clocks, n, &reason);
    if (clocks != stack_clocks)
        free(clocks);
    switch (st) {
    case TK_SNAPSHOT_OK:
        break;
    case TK_SNAPSHOT_INVALID:
        if (!c->first_invalid_snapshot_reason) {
            c->first_invalid_snapshot_reason = reason;
            c->first_invalid_snapshot_offset = offset;
        }
        break;
    case TK_SNAPSHOT_FATAL:
        stop_import(c, false, "packet at offset %" PRIu64 ": %s (trace_processor stops here)",
                    offset, reason);
        break;
    case TK_SNAPSHOT_LIMIT:
        tk_stats_add(&c->st, TK_STAT_state_limit_hits, 1);
        if (!c->first_limit_reason)
            c->first_limit_reason = reason;
        break;
    }
}

/* ---- TraceStats --------------------------------------------------------------------- */

static void handle_trace_stats(tk_checker *c, machine *m, pb_bytes b)
{
    perfetto_protos_TraceStats_view v;
    pb_reader r;
    pb_field f;

    tk_stats_add(&c->st, TK_STAT_trace_stats_packets, 1);
    (void)perfetto_protos_TraceStats_decode(&v, b.data, b.size);
    /* Absent fields count as 0 and replace earlier values, as upstream. */
    tk_stats_set(&c->st, TK_STAT_traced_producers_connected, v.producers_connected);
    tk_stats_set(&c->st, TK_STAT_traced_producers_seen, (int64_t)v.producers_seen);
    tk_stats_set(&c->st, TK_STAT_traced_data_sources_registered, v.data_sources_registered);
    tk_stats_set(&c->st, TK_STAT_traced_data_sources_seen, (int64_t)v.data_sources_seen);
    tk_stats_set(&c->st, TK_STAT_traced_tracing_sessions, v.tracing_sessions);
    tk_stats_set(&c->st, TK_STAT_traced_total_buffers, v.total_buffers);
    tk_stats_set(&c->st, TK_STAT_traced_chunks_discarded, (int64_t)v.chunks_discarded);
    tk_stats_set(&c->st, TK_STAT_traced_patches_discarded, (int64_t)v.patches_discarded);
    tk_stats_set(&c->st, TK_STAT_traced_flushes_requested, (int64_t)v.flushes_requested);
    tk_stats_set(&c->st, TK_STAT_traced_flushes_succeeded, (int64_t)v.flushes_succeeded);
    tk_stats_set(&c->st, TK_STAT_traced_flushes_failed, (int64_t)v.flushes_failed);

    if (v.has_filter_stats) {
        perfetto_protos_TraceStats_FilterStats_view fs;
        (void)perfetto_protos_TraceStats_FilterStats_decode(&fs, v.filter_stats.data,
                                                            v.filter_stats.size);
        tk_stats_set(&c->st, TK_STAT_filter_errors, (int64_t)fs.errors);
        tk_stats_set(&c->st, TK_STAT_filter_input_bytes, (int64_t)fs.input_bytes);
        tk_stats_set(&c->st, TK_STAT_filter_input_packets, (int64_t)fs.input_packets);
        tk_stats_set(&c->st, TK_STAT_filter_output_bytes, (int64_t)fs.output_bytes);
        tk_stats_set(&c->st, TK_STAT_filter_time_taken_ns, (int64_t)fs.time_taken_ns);
        int32_t idx = 0;
        pb_reader fr;
        pb_reader_init(&fr, v.filter_stats.data, v.filter_stats.size);
        while (pb_reader_next(&fr, &f)) {
            if (f.id != TK_FS_BYTES_DISCARDED_PER_BUFFER)
                continue;
            if (f.wire_type == PB_WIRE_VARINT) {
                tk_stats_set_indexed(&c->st, TK_STAT_traced_buf_bytes_filtered_out, idx++,
                                     (int64_t)f.value);
            } else if (f.wire_type == PB_WIRE_LEN) {
                pb_packed_iter it;
                uint64_t x;
                pb_packed_init(&it, &f);
                while (pb_packed_next_varint(&it, &x))
                    tk_stats_set_indexed(&c->st, TK_STAT_traced_buf_bytes_filtered_out, idx++,
                                         (int64_t)x);
            }
        }
    }

    if (v.final_flush_outcome == TK_TS_FINAL_FLUSH_SUCCEEDED)
        tk_stats_add(&c->st, TK_STAT_traced_final_flush_succeeded, 1);
    else if (v.final_flush_outcome == TK_TS_FINAL_FLUSH_FAILED)
        tk_stats_add(&c->st, TK_STAT_traced_final_flush_failed, 1);

    /* Per-buffer stats (index = position), then the writers. */
    int32_t buf_num = 0;
    bool any_writer = false;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_LEN)
            continue;
        if (f.id == TK_TS_BUFFER_STATS) {
            perfetto_protos_TraceStats_BufferStats_view bs;
            (void)perfetto_protos_TraceStats_BufferStats_decode(&bs, f.data, (size_t)f.value);
            const struct {
                tk_stat_id stat;
                uint64_t value;
            } rows[] = {
                { TK_STAT_traced_buf_buffer_size, bs.buffer_size },
                { TK_STAT_traced_buf_bytes_written, bs.bytes_written },
                { TK_STAT_traced_buf_bytes_overwritten, bs.bytes_overwritten },
                { TK_STAT_traced_buf_bytes_read, bs.bytes_read },
                { TK_STAT_traced_buf_padding_bytes_written, bs.padding_bytes_written },
                { TK_STAT_traced_buf_padding_bytes_cleared, bs.padding_bytes_cleared },
                { TK_STAT_traced_buf_chunks_written, bs.chunks_written },
                { TK_STAT_traced_buf_chunks_rewritten, bs.chunks_rewritten },
                { TK_STAT_traced_buf_chunks_overwritten, bs.chunks_overwritten },
                { TK_STAT_traced_buf_chunks_discarded, bs.chunks_discarded },
                { TK_STAT_traced_buf_chunks_read, bs.chunks_read },
                { TK_STAT_traced_buf_chunks_committed_out_of_order,
                  bs.chunks_committed_out_of_order },
                { TK_STAT_traced_buf_write_wrap_count, bs.write_wrap_count },
                { TK_STAT_traced_buf_patches_succeeded, bs.patches_succeeded },
                { TK_STAT_traced_buf_patches_failed, bs.patches_failed },
                { TK_STAT_traced_buf_readaheads_succeeded, bs.readaheads_succeeded },
                { TK_STAT_traced_buf_readaheads_failed, bs.readaheads_failed },
                { TK_STAT_traced_buf_abi_violations, bs.abi_violations },
                { TK_STAT_traced_buf_trace_writer_packet_loss, bs.trace_writer_packet_loss },
            };
            for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
                tk_stats_set_indexed(&c->st, rows[i].stat, buf_num, (int64_t)rows[i].value);
            buf_num++;
        } else if (f.id == TK_TS_WRITER_STATS) {
            any_writer = true;
        }
    }
    if (!any_writer)
        return;
    /* traced_buf_sequence_packet_loss[buffer] = the losses of the writers
     * this packet lists for that buffer: reset the buffers named, then sum
     * (through the stats' own index, so a long list stays linear). */
    for (int pass = 0; pass < 2; pass++) {
        pb_reader_init(&r, b.data, b.size);
        while (pb_reader_next(&r, &f)) {
            if (f.wire_type != PB_WIRE_LEN || f.id != TK_TS_WRITER_STATS)
                continue;
            perfetto_protos_TraceStats_WriterStats_view ws;
            (void)perfetto_protos_TraceStats_WriterStats_decode(&ws, f.data, (size_t)f.value);
            uint64_t *idx = tk_map_find(&m->seq_index, (uint32_t)ws.sequence_id);
            if (!idx || !m->seqs[*idx].loss_key)
                continue;
            const int32_t buffer = (int32_t)ws.buffer;
            int64_t sum = 0;
            if (pass == 1)
                tk_stats_get_indexed(&c->st, TK_STAT_traced_buf_sequence_packet_loss, buffer, &sum);
            tk_stats_set_indexed(
                &c->st, TK_STAT_traced_buf_sequence_packet_loss, buffer,
                pass == 0 ? 0 : tk_sat_add(sum, tk_sat_from_u64(m->seqs[*idx].data_loss)));
        }
    }
}

/* ---- ftrace ------------------------------------------------------------------------ */

static void handle_ftrace_stats(tk_checker *c, machine *m, pb_bytes b, uint32_t seq_id)
{
    pb_reader r;
    pb_field f;
    int32_t phase = 0;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f))
        if (f.id == TK_FTS_PHASE && f.wire_type == PB_WIRE_VARINT)
            phase = (int32_t)(uint32_t)f.value;
    bool is_start = phase == TK_FTS_PHASE_START, is_end = phase == TK_FTS_PHASE_END;
    if (!is_start && !is_end)
        return;
    const int ph = is_end ? 1 : 0;

    pb_reader_init(&r, b.data, b.size);
    uint64_t setup_errors = 0;
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_LEN)
            continue;
        if (f.id == TK_FTS_FAILED_FTRACE_EVENTS || f.id == TK_FTS_UNKNOWN_FTRACE_EVENTS) {
            setup_errors++;
            continue;
        }
        if (f.id == TK_FTS_ATRACE_ERRORS) {
            if (f.value > 0)
                setup_errors++;
            continue;
        }
        if (f.id != TK_FTS_CPU_STATS)
            continue;
        uint64_t cpu = 0, entries = 0, overrun = 0, commit = 0, bytes = 0, dropped = 0, read = 0;
        double now = 0, oldest = 0;
        pb_reader cr;
        pb_field g;
        pb_reader_init(&cr, f.data, (size_t)f.value);
        while (pb_reader_next(&cr, &g)) {
            switch (g.id) {
            case TK_FCS_CPU:
                cpu = g.value;
                break;
            case TK_FCS_ENTRIES:
                entries = g.value;
                break;
            case TK_FCS_OVERRUN:
                overrun = g.value;
                break;
            case TK_FCS_COMMIT_OVERRUN:
                commit = g.value;
                break;
            case TK_FCS_BYTES_READ:
                bytes = g.value;
                break;
            case TK_FCS_DROPPED_EVENTS:
                dropped = g.value;
                break;
            case TK_FCS_READ_EVENTS:
                read = g.value;
                break;
            case TK_FCS_NOW_TS:
                if (g.wire_type == PB_WIRE_FIXED64)
                    now = pb_field_double(&g);
                break;
            case TK_FCS_OLDEST_EVENT_TS:
                if (g.wire_type == PB_WIRE_FIXED64)
                    oldest = pb_field_double(&g);
                break;
            }
        }
        const int32_t cpu_i = (int32_t)(uint32_t)cpu;
        struct {
            tk_stat_id begin;
            tk_stat_id delta; /* TK_STAT_COUNT: none */
            int64_t v;
        } rows[] = {
            { TK_STAT_ftrace_cpu_entries_begin, TK_STAT_ftrace_cpu_entries_delta,
              (int64_t)entries },
            { TK_STAT_ftrace_cpu_overrun_begin, TK_STAT_ftrace_cpu_overrun_delta,
              (int64_t)overrun },
            { TK_STAT_ftrace_cpu_commit_overrun_begin, TK_STAT_ftrace_cpu_commit_overrun_delta,
              (int64_t)commit },
            { TK_STAT_ftrace_cpu_bytes_begin, TK_STAT_ftrace_cpu_bytes_delta, (int64_t)bytes },
            { TK_STAT_ftrace_cpu_dropped_events_begin, TK_STAT_ftrace_cpu_dropped_events_delta,
              (int64_t)dropped },
            { TK_STAT_ftrace_cpu_read_events_begin, TK_STAT_ftrace_cpu_read_events_delta,
              (int64_t)read },
            { TK_STAT_ftrace_cpu_now_ts_begin, TK_STAT_COUNT, double_ns(now) },
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            /* Each *_end stat directly follows its *_begin. */
            tk_stats_set_indexed(&c->st, (tk_stat_id)(rows[i].begin + ph), cpu_i, rows[i].v);
            int64_t begin;
            if (is_end && rows[i].delta != TK_STAT_COUNT &&
                tk_stats_get_indexed(&c->st, rows[i].begin, cpu_i, &begin))
                tk_stats_set_indexed(&c->st, rows[i].delta, cpu_i,
                                     (int64_t)((uint64_t)rows[i].v - (uint64_t)begin));
        }
        int64_t old_ns = oldest * 1e9 >= 9.2233720368547758e18 ? INT64_MAX : double_ns(oldest);
        tk_stats_set_indexed(&c->st, (tk_stat_id)(TK_STAT_ftrace_cpu_oldest_event_ts_begin + ph),
                             cpu_i, old_ns);
    }
    if (is_start && setup_errors && !tk_map_find(&m->ftrace_error_seqs, seq_id)) {
        bool ins;
        tk_stats_add(&c->st, TK_STAT_ftrace_setup_errors, (int64_t)setup_errors);
        tk_map_insert(&m->ftrace_error_seqs, seq_id, 1, &ins);
    }
}

static bool handle_ftrace_bundle(tk_checker *c, pb_bytes b, uint64_t offset)
{
    pb_reader r;
    pb_field f;
    bool has_cpu = false, lost = false;
    uint64_t cpu = 0;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_VARINT)
            continue;
        if (f.id == TK_FTB_CPU) {
            has_cpu = true;
            cpu = f.value;
        } else if (f.id == TK_FTB_LOST_EVENTS) {
            lost = f.value != 0;
        }
    }
    if (!has_cpu) {
        tk_stats_add(&c->st, TK_STAT_ftrace_bundle_tokenizer_errors, 1);
        return true;
    }
    if ((uint32_t)cpu >= 1024) {
        stop_import(c, false,
                    "packet at offset %" PRIu64 ": ftrace bundle for cpu %u (limit 1024); "
                    "trace_processor stops here",
                    offset, (uint32_t)cpu);
        return false;
    }
    if (lost)
        tk_stats_set_indexed(&c->st, TK_STAT_ftrace_cpu_has_data_loss, (int32_t)(uint32_t)cpu, 1);
    return true;
}

/* ---- GPU ------------------------------------------------------------------------------ */

static submit_slot *submit_slot_for(tk_checker *c, uint32_t id)
{
    /* Submission ids count up: consecutive ones share cache lines. */
    submit_slot *s = &c->subs[id & (SUBMIT_SLOTS - 1)];
    if (s->state && s->id != id) {
        /* Evict: GPU stages whose submission never showed up stay unmatched. */
        if (!(s->state & 1))
            tk_stats_add(&c->st, TK_STAT_gpu_stage_unmatched_submission, (int64_t)s->gpu_count);
        memset(s, 0, sizeof *s);
    }
    s->id = id;
    return s;
}

/* How far `later` is after `earlier` (0 when it is not): exact for any
 * pair of timestamps, however absurd. */
static inline uint64_t lead(int64_t earlier, int64_t later)
{
    return later > earlier ? tk_distance_u64(later, earlier) : 0;
}

/* submit_ts - gpu_ts > tolerance, without computing the difference in
 * int64_t (it may not fit). A negative tolerance asks for a gap. */
static bool starts_too_early(int64_t gpu_ts, int64_t submit_ts, int64_t tolerance)
{
    if (gpu_ts <= submit_ts)
        return tolerance < 0 || tk_distance_u64(submit_ts, gpu_ts) > (uint64_t)tolerance;
    return tolerance < 0 && tk_distance_u64(gpu_ts, submit_ts) < tk_abs_u64(tolerance);
}

static void judge_stage(tk_checker *c, const submit_slot *s, int64_t gpu_ts)
{
    const uint64_t early = lead(gpu_ts, s->submit_ts);
    const uint64_t late = lead(s->submit_end, gpu_ts);
    if (starts_too_early(gpu_ts, s->submit_ts, c->o.submit_tolerance_ns)) {
        tk_stats_add(&c->st, TK_STAT_gpu_stage_before_submit, 1);
        if (early > c->worst_before_submit_ns)
            c->worst_before_submit_ns = early;
    } else if (c->o.max_submit_latency_ns >= 0 && late > (uint64_t)c->o.max_submit_latency_ns) {
        tk_stats_add(&c->st, TK_STAT_gpu_stage_after_submit_window, 1);
        if (late > c->worst_after_window_ns)
            c->worst_after_window_ns = late;
    }
}

/* The fields of GpuRenderStageEvent the importer looks at, read tag by tag
 * so that values nobody needs are skipped unassembled (the hottest nested
 * message of a GPU trace). */
static void handle_gpu_stage(tk_checker *c, seq_state *s, pb_bytes b, int64_t ts)
{
    pb_reader r;
    bool has_event_id = false, has_queue_iid = false, has_stage_iid = false, has_context = false;
    uint64_t queue_iid = 0, stage_iid = 0, context = 0, hw_queue_id = 0;
    uint32_t submission_id = 0;
    uint32_t id;
    uint8_t wt;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_tag(&r, &id, &wt)) {
        uint64_t v;
        if (wt == PB_WIRE_VARINT) {
            switch (id) {
            case TK_GRS_EVENT_ID:
                has_event_id = true;
                break; /* present is all that matters */
            case TK_GRS_HW_QUEUE_IID:
            case TK_GRS_STAGE_IID:
            case TK_GRS_CONTEXT:
            case TK_GRS_HW_QUEUE_ID:
            case TK_GRS_SUBMISSION_ID:
                if (!pb_reader_varint(&r, &v))
                    goto done;
                if (id == TK_GRS_HW_QUEUE_IID) {
                    has_queue_iid = true;
                    queue_iid = v;
                } else if (id == TK_GRS_STAGE_IID) {
                    has_stage_iid = true;
                    stage_iid = v;
                } else if (id == TK_GRS_CONTEXT) {
                    has_context = true;
                    context = v;
                } else if (id == TK_GRS_HW_QUEUE_ID) {
                    hw_queue_id = v;
                } else {
                    submission_id = (uint32_t)v;
                }
                continue;
            default:
                break;
            }
        }
        if (!pb_reader_skip(&r, wt))
            break;
    }
done:
    /* The lookups trace_processor's GpuEventParser makes, in its order. */
    if (has_context)
        lookup_interned(c, &s->contexts, context);
    if (!has_event_id) {
        c->gpu_dropped_no_event_id++;
        tk_stats_add(&c->st, TK_STAT_gpu_render_stage_events_dropped, 1);
        return;
    }
    if (has_queue_iid) {
        if (!lookup_interned(c, &s->specs, queue_iid)) {
            c->gpu_dropped_unknown_queue++;
            tk_stats_add(&c->st, TK_STAT_gpu_render_stage_events_dropped, 1);
            return;
        }
    } else if ((uint32_t)(int32_t)hw_queue_id > 1024) {
        tk_stats_add(&c->st, TK_STAT_gpu_render_stage_parser_errors, 1);
    }
    if (has_stage_iid) {
        /* Once for the name, once for the args. */
        lookup_interned(c, &s->specs, stage_iid);
        lookup_interned(c, &s->specs, stage_iid);
    }
    c->gpu_events++;

    if (!submission_id)
        return;
    submit_slot *sl = submit_slot_for(c, submission_id);
    if (sl->state & 1)
        judge_stage(c, sl, ts);
    if (!(sl->state & 2) || ts < sl->gpu_min)
        sl->gpu_min = ts;
    if (!(sl->state & 2) || ts > sl->gpu_max)
        sl->gpu_max = ts;
    sl->gpu_count++;
    sl->state |= 2;
}

static void handle_vulkan_api_event(tk_checker *c, pb_bytes b, int64_t ts)
{
    perfetto_protos_VulkanApiEvent_view v;
    c->vk_events++;
    (void)perfetto_protos_VulkanApiEvent_decode(&v, b.data, b.size);
    if (!v.has_vk_queue_submit)
        return;
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_view q;
    (void)perfetto_protos_VulkanApiEvent_VkQueueSubmit_decode(&q, v.vk_queue_submit.data,
                                                              v.vk_queue_submit.size);
    c->vk_submits++;
    if (!q.submission_id)
        return;
    submit_slot *sl = submit_slot_for(c, q.submission_id);
    bool had_gpu = (sl->state & 2) != 0;
    sl->submit_ts = ts;
    /* An absurd duration ends the submission at the end of time, not at a
     * wrapped-around negative instant. */
    sl->submit_end = tk_sat_add(ts, tk_sat_from_u64(q.duration_ns));
    sl->state |= 1;
    if (had_gpu) {
        /* Stages that arrived first: judge the extremes. */
        judge_stage(c, sl, sl->gpu_min);
        if (sl->gpu_max != sl->gpu_min)
            judge_stage(c, sl, sl->gpu_max);
    }
}

/* ---- the packet ------------------------------------------------------------------------ */

static void count_failed_clock(machine *m, int64_t id)
{
    const uint64_t *v = tk_map_find(&m->failed_index, (uint64_t)id);
    if (v) {
        m->failed[*v].count++;
        return;
    }
    if (m->n_failed >= MAX_FAILED_CLOCKS)
        return;
    if (m->n_failed == m->cap_failed) {
        uint32_t ncap = m->cap_failed ? m->cap_failed * 2 : 8;
        failed_clock *nf = realloc(m->failed, ncap * sizeof *nf);
        if (!nf)
            return;
        m->failed = nf;
        m->cap_failed = ncap;
    }
    bool ins;
    if (!tk_map_insert(&m->failed_index, (uint64_t)id, m->n_failed, &ins))
        return;
    m->failed[m->n_failed++] = (failed_clock){ id, 1 };
}

static bool process_packet(tk_checker *c, const uint8_t *data, size_t len, uint64_t offset);

static bool inflate_cb(void *ctx, const uint8_t *data, size_t len, uint64_t offset)
{
    return process_packet(ctx, data, len, offset);
}

static bool process_packet(tk_checker *c, const uint8_t *data, size_t len, uint64_t offset)
{
    if (PB_UNLIKELY(len == 0)) {
        /* An empty packet (compressed_packets deliver them; the tokenizer
         * drops top-level ones) changes nothing but the count. */
        c->packets++;
        return true;
    }
    pkt p;
    if (PB_UNLIKELY(!decode_packet(data, len, &p))) {
        stop_import(c, true, "packet at offset %" PRIu64 " is malformed; the trace is corrupt",
                    offset);
        return false;
    }

    if (PB_UNLIKELY(p.has & H_COMPRESSED)) {
        if (c->inflating) {
            stop_import(c, true,
                        "offset %" PRIu64 ": compressed_packets nested inside "
                        "compressed_packets",
                        offset);
            return false;
        }
        tk_stats_add(&c->st, TK_STAT_compressed_packets, 1);
        uint64_t inflated = 0;
        c->inflating = true;
        tk_read_status st = tk_inflate_packets(c->z, p.compressed.data, p.compressed.size, offset,
                                               inflate_cb, c, &inflated);
        c->inflating = false;
        tk_stats_add(&c->st, TK_STAT_compressed_bytes_inflated, (int64_t)inflated);
        if (st == TK_READ_ERR_ABORTED)
            return false;
        if (st != TK_READ_OK) {
            stop_import(c, true, "%s", tk_inflater_error(c->z));
            return false;
        }
        return true;
    }

    machine *m = &c->m[0];
    if (PB_UNLIKELY(p.has & H_MACHINE)) {
        /* Remote machines get their own sequences and clocks upstream. */
        m = get_machine(c, p.machine_id);
        if (!m) {
            tk_stats_add(&c->st, TK_STAT_state_limit_hits, 1);
            if (!c->first_limit_reason)
                c->first_limit_reason = "too many machines";
            return true;
        }
    }
    c->packets++;
    if (PB_UNLIKELY(p.has & H_ZSTD))
        tk_stats_add(&c->st, TK_STAT_zstd_compressed_packets, 1);

    const uint32_t seq_id = (p.has & H_SEQ) ? p.seq_id : 0;
    const bool has_seq = (p.has & H_SEQ) != 0;
    seq_state *s = get_seq(c, m, seq_id);

    const uint32_t flags = (p.has & H_FLAGS) ? p.sequence_flags : 0;
    const bool cleared = ((p.has & H_ISC) && p.incremental_state_cleared) ||
                         (flags & TK_SEQ_INCREMENTAL_STATE_CLEARED);
    const bool dropped = (p.has & H_PPD) && p.previous_packet_dropped;

    if (cleared) {
        if (!has_seq)
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
        else
            clear_incremental_state(s);
    } else if (dropped) {
        if (!has_seq)
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
        else
            s->incr_valid = false;
    }
    if (dropped)
        tk_stats_add(&c->st, TK_STAT_previous_packet_dropped, 1);
    if (seq_id) {
        if (!s->loss_key) {
            /* The service marks a writer's first packet as "dropped" too; it
             * cannot tell a first packet from one after a loss. */
            s->loss_key = true;
        } else if (dropped) {
            s->data_loss++;
            tk_stats_add(&c->st, TK_STAT_sequence_packet_loss, 1);
            if (!c->first_loss_seq) {
                c->first_loss_seq = seq_id;
                c->first_loss_offset = offset;
            }
        }
    }

    if (p.has & H_DEFAULTS) {
        if (!has_seq)
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
        else
            parse_defaults(s, p.defaults);
    }
    if (p.has & H_INTERNED) {
        if (!has_seq)
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
        else if (!s->incr_valid)
            tk_stats_add(&c->st, TK_STAT_tokenizer_skipped_packets, 1);
        else
            intern(c, s, p.interned);
    }

    if (p.has & H_SNAPSHOT) {
        handle_clock_snapshot(c, m, p.snapshot, seq_id, offset);
        return !c->stop;
    }
    if (p.has & H_STATS)
        handle_trace_stats(c, m, p.stats);
    if (p.has & H_REMOTE_SYNC) {
        tk_stats_add(&c->st, TK_STAT_remote_clock_sync_packets, 1);
        return true;
    }
    if (p.has & (H_SERVICE | H_EXTENSION))
        return true;

    if (flags & TK_SEQ_NEEDS_INCREMENTAL_STATE) {
        if (!seq_id) {
            stop_import(c, false,
                        "packet at offset %" PRIu64 " needs incremental state but has "
                        "no trusted_packet_sequence_id; trace_processor stops here",
                        offset);
            return false;
        }
        if (!s->incr_valid) {
            tk_stats_add(&c->st, TK_STAT_tokenizer_skipped_packets, 1);
            if (s->ever_cleared) {
                tk_stats_add(&c->st, TK_STAT_incremental_state_skipped_after_loss, 1);
                if (!c->first_lost_state_seq)
                    c->first_lost_state_seq = seq_id;
            } else {
                tk_stats_add(&c->st, TK_STAT_incremental_state_skipped_never_cleared, 1);
                if (!c->first_missing_state_seq)
                    c->first_missing_state_seq = seq_id;
            }
            return true;
        }
    }

    int64_t ts;
    if (p.has & H_TS) {
        /* trace_processor reads the unsigned field as int64_t: 2^63 and
         * more become negative times. */
        if (PB_UNLIKELY(p.timestamp > INT64_MAX))
            c->raw_ts_overflows++;
        ts = (int64_t)p.timestamp;
        uint32_t clock_id = (p.has & H_CLOCK) ? p.timestamp_clock_id
                            : s->has_defaults ? s->default_clock
                                              : 0;
        if (PB_UNLIKELY((p.has & H_CHROME) && (!clock_id || clock_id == TK_CLOCK_MONOTONIC))) {
            /* Chrome's timestamps are MONOTONIC; a failure keeps the raw value. */
            int64_t v;
            if (tk_clock_graph_to_trace_time(m->g, TK_CLOCK_MONOTONIC, ts, &v))
                ts = v;
            else
                count_failed_clock(m, TK_CLOCK_MONOTONIC);
        } else if (clock_id) {
            int64_t gid = clock_id;
            if (tk_clock_is_sequence_scoped(clock_id)) {
                if (!seq_id) {
                    stop_import(c, false,
                                "packet at offset %" PRIu64 " uses sequence-scoped "
                                "clock %u without trusted_packet_sequence_id; trace_processor "
                                "stops here",
                                offset, clock_id);
                    return false;
                }
                gid = tk_clock_sequence_to_global(seq_id, clock_id);
            }
            int64_t v;
            if (!tk_clock_graph_to_trace_time(m->g, gid, ts, &v)) {
                /* Dropped by trace_processor; counted in clock_sync_failure. */
                count_failed_clock(m, gid);
                return true;
            }
            if (gid != tk_clock_graph_trace_clock(m->g))
                tk_stats_add(&c->st, TK_STAT_timestamps_converted, 1);
            ts = v;
        }
        /* Out of order beyond the window: what a bounded sorting window
         * could not put right. The lag is exact even across a wrapped
         * clock (which is reported as timestamp_overflow). */
        if (c->o.ooo_window_ns >= 0 && m->has_pushed) {
            const uint64_t lag = lead(ts, m->max_pushed_ts);
            if (lag > (uint64_t)c->o.ooo_window_ns) {
                tk_stats_add(&c->st, TK_STAT_packets_out_of_order, 1);
                if (lag > c->worst_ooo_ns)
                    c->worst_ooo_ns = lag;
            }
        }
        if (!m->has_pushed || ts > m->max_pushed_ts)
            m->max_pushed_ts = ts;
        m->has_pushed = true;
        note_time(c, ts);
    } else {
        ts = m->latest_ts;
    }
    if (ts > m->latest_ts)
        m->latest_ts = ts;

    if (p.has & H_FTRACE_EVENTS) {
        if (!handle_ftrace_bundle(c, p.ftrace_events, offset))
            return false;
    }
    if (p.has & H_FTRACE_STATS)
        handle_ftrace_stats(c, m, p.ftrace_stats, seq_id);
    if (p.has & H_GPU)
        handle_gpu_stage(c, s, p.gpu, ts);
    if (p.has & H_VK)
        handle_vulkan_api_event(c, p.vk, ts);
    return true;
}

bool tk_checker_packet(tk_checker *c, const uint8_t *data, size_t len, uint64_t offset)
{
    if (c->stop)
        return false;
    return process_packet(c, data, len, offset);
}

bool tk_checker_packet_cb(void *ctx, const uint8_t *data, size_t len, uint64_t offset)
{
    return tk_checker_packet(ctx, data, len, offset);
}

void tk_checker_input_error(tk_checker *c, const char *msg)
{
    if (c->stop && c->input_error)
        return;
    c->stop = true;
    c->input_error = true;
    snprintf(c->stop_msg, sizeof c->stop_msg, "%s", msg);
}

void tk_checker_set_bytes(tk_checker *c, uint64_t bytes)
{
    c->bytes = bytes;
}

/* ---- verdict ------------------------------------------------------------------------------ */

typedef struct vlist {
    tk_violation *v;
    size_t n, cap;
} vlist;

static void add_violation(vlist *l, tk_violation_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_violation(vlist *l, tk_violation_code code, const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 8;
        tk_violation *nv = realloc(l->v, ncap * sizeof *nv);
        if (!nv)
            return;
        l->v = nv;
        l->cap = ncap;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tk_violation *v = &l->v[l->n];
    v->code = code;
    v->severity = tk_violation_severity(code);
    v->message = strdup(buf);
    if (v->message)
        l->n++;
}

static const char *declared_name(const tk_check_options *o, uint32_t id)
{
    for (size_t i = 0; i < o->n_names; i++) {
        const tk_clock_name *n = &o->names[i];
        if (n->has_id ? n->id == id : tk_clock_global_id_for_name(n->name) == id)
            return n->name;
    }
    return NULL;
}

static int64_t deviation_for(const tk_check_options *o, uint32_t raw_id)
{
    for (size_t i = 0; i < o->n_deviations; i++)
        if (o->deviations[i].clock_id == raw_id)
            return o->deviations[i].ns;
    return 0;
}

static void clock_label(const tk_clock_report *r, char *buf, size_t len)
{
    if (r->info.scope == TK_SCOPE_SEQUENCE)
        snprintf(buf, len, "clock %u (sequence %u)", r->info.raw_id, r->info.seq_id);
    else if (r->name)
        snprintf(buf, len, "clock %u (%s)", r->info.raw_id, r->name);
    else
        snprintf(buf, len, "clock %u", r->info.raw_id);
}

static void make_plot_points(const tk_clock_graph *g, size_t i, tk_clock_report *rep)
{
    size_t n = tk_clock_graph_observation_count(g, i);
    if (n == 0)
        return;
    const size_t max_points = 4096;
    size_t step = n > max_points ? (n + max_points - 1) / max_points : 1;
    rep->points = calloc((n + step - 1) / step + 1, sizeof *rep->points);
    if (!rep->points)
        return;
    tk_clock_obs prev, cur;
    for (size_t k = 0; k < n; k++) {
        tk_clock_graph_observation(g, i, k, &cur);
        int64_t off = (int64_t)((uint64_t)cur.ref_ns - (uint64_t)cur.clock_ns);
        int64_t resid = 0;
        if (k > 0) {
            int64_t poff = (int64_t)((uint64_t)prev.ref_ns - (uint64_t)prev.clock_ns);
            resid = (int64_t)((uint64_t)off - (uint64_t)poff);
        }
        if (k % step == 0 || k + 1 == n) {
            tk_plot_point *pt = &rep->points[rep->n_points++];
            pt->t_ns = cur.ref_ns;
            pt->offset_ns = off;
            pt->residual_ns = resid;
        }
        prev = cur;
    }
}

static void judge_clocks(tk_checker *c, machine *m, vlist *vl, tk_result *res)
{
    const tk_check_options *o = &c->o;
    size_t n = tk_clock_graph_clock_count(m->g);
    /* Clocks that only appear in packets (never in a snapshot) too. */
    size_t extra = 0, ignored;
    for (uint32_t k = 0; k < m->n_failed; k++)
        if (!tk_clock_graph_index_of(m->g, m->failed[k].id, &ignored))
            extra++;
    tk_clock_report *reps = realloc(res->clocks, (res->n_clocks + n + extra) * sizeof *reps);
    if (!reps)
        return;
    res->clocks = reps;

    for (size_t i = 0; i < n; i++) {
        tk_clock_report *r = &res->clocks[res->n_clocks++];
        memset(r, 0, sizeof *r);
        tk_clock_graph_clock_info(m->g, i, &r->info);
        r->resolvable = tk_clock_graph_resolvable(m->g, r->info.id);
        const uint64_t *failed = tk_map_find(&m->failed_index, (uint64_t)r->info.id);
        r->failed_conversions = failed ? m->failed[*failed].count : 0;
        if (r->info.scope == TK_SCOPE_BUILTIN)
            r->name = tk_clock_builtin_name(r->info.id);
        else if (r->info.scope == TK_SCOPE_GLOBAL)
            r->name = declared_name(o, r->info.raw_id);
        const bool is_trace_clock = r->info.id == tk_clock_graph_trace_clock(m->g);
        int64_t err = 0;
        bool bounded = tk_clock_graph_max_error(m->g, i, deviation_for(o, r->info.raw_id), &err);
        r->error_known = bounded && r->info.conversions > 0;
        r->max_error_ns = r->error_known ? err : 0;
        if (o->keep_plot_points && !is_trace_clock)
            make_plot_points(m->g, i, r);

        if (r->info.scope == TK_SCOPE_BUILTIN || is_trace_clock)
            continue;
        /* Custom clocks: our correlation checks. */
        char label[96];
        clock_label(r, label, sizeof label);
        if (!r->resolvable)
            add_violation(vl, TK_V_clock_unresolvable,
                          "%s has %" PRIu64 " snapshot(s) but no path to the trace clock", label,
                          r->info.snapshots);
        if (!r->info.monotonic)
            add_violation(vl, TK_V_clock_non_monotonic,
                          "%s went backwards between snapshots; it can only be a conversion "
                          "target from then on",
                          label);
        if (r->info.conversions > 0 && r->info.intervals == 0)
            add_violation(vl, TK_V_clock_single_snapshot,
                          "%s converted %" PRIu64 " timestamp(s) with a single usable snapshot; "
                          "drift cannot be measured",
                          label, r->info.conversions);
        if (o->max_snapshot_gap_ns >= 0 && r->info.max_gap_ns > o->max_snapshot_gap_ns)
            add_violation(vl, TK_V_clock_snapshot_gap,
                          "%s: %.3f s between two snapshots (limit %.3f s)", label,
                          (double)r->info.max_gap_ns / 1e9, (double)o->max_snapshot_gap_ns / 1e9);
        if (o->max_drift_ppm >= 0 && fabs(r->info.max_drift_ppm) > o->max_drift_ppm)
            add_violation(vl, TK_V_clock_drift_exceeded,
                          "%s drifts %.3f ppm against the trace clock between two snapshots "
                          "(limit %.3f ppm)",
                          label, r->info.max_drift_ppm, o->max_drift_ppm);
        if (r->info.conversions > 0) {
            if (bounded && o->max_error_ns >= 0 && err > o->max_error_ns)
                add_violation(vl, TK_V_clock_error_exceeded,
                              "%s: converted timestamps may be off by up to %" PRId64
                              " ns (limit %" PRId64 " ns)",
                              label, err, o->max_error_ns);
        }
        if (r->info.conversions_before_first > 0)
            add_violation(vl, TK_V_clock_used_before_first_snapshot,
                          "%s: %" PRIu64 " timestamp(s) precede its first snapshot and were "
                          "extrapolated backwards",
                          label, r->info.conversions_before_first);
        if (r->info.scope == TK_SCOPE_GLOBAL) {
            const uint32_t id = r->info.raw_id;
            if (!(id & 0x80000000u))
                add_violation(vl, TK_V_global_clock_id_not_hashed,
                              "%s is global but lacks the top bit: use FNV-1a(name) | 0x80000000",
                              label);
            for (size_t k = 0; k < o->n_names; k++) {
                const tk_clock_name *nm = &o->names[k];
                uint32_t want = tk_clock_global_id_for_name(nm->name);
                if (nm->has_id && nm->id == id && want != id)
                    add_violation(vl, TK_V_global_clock_id_mismatch,
                                  "%s is declared as \"%s\", whose id is %u (0x%08x)", label,
                                  nm->name, want, want);
            }
            if (o->n_names > o->n_learned_names && !r->name)
                add_violation(vl, TK_V_global_clock_id_unknown, "%s matches no declared clock name",
                              label);
            if (r->info.multi_sequence)
                add_violation(vl, TK_V_global_clock_multiple_sequences,
                              "%s is snapshotted from more than one sequence; its readings may "
                              "look non-monotonic in file order",
                              label);
        }
    }

    for (uint32_t k = 0; k < m->n_failed; k++) {
        const int64_t id = m->failed[k].id;
        if (tk_clock_graph_index_of(m->g, id, &ignored))
            continue;
        tk_clock_report *r = &res->clocks[res->n_clocks++];
        memset(r, 0, sizeof *r);
        r->info.id = id;
        r->info.monotonic = true;
        r->info.unit_multiplier_ns = 1;
        if (tk_clock_is_converted_sequence(id)) {
            r->info.scope = TK_SCOPE_SEQUENCE;
            r->info.raw_id = (uint32_t)(id & 0xffffffff);
            r->info.seq_id = (uint32_t)((uint64_t)id >> 32);
        } else {
            r->info.raw_id = (uint32_t)id;
            r->info.scope = id <= TK_CLOCK_BUILTIN_MAX ? TK_SCOPE_BUILTIN : TK_SCOPE_GLOBAL;
            r->name = r->info.scope == TK_SCOPE_BUILTIN ? tk_clock_builtin_name(id)
                                                        : declared_name(o, (uint32_t)id);
        }
        r->failed_conversions = m->failed[k].count;
    }
}

static int64_t stat_total(const tk_checker *c, tk_stat_id id)
{
    return tk_stats_total(&c->st, id);
}

/* For counts read from TraceStats: a value of 2^63 or more reads as
 * negative, and is no less a loss. */
static bool stat_nonzero(const tk_checker *c, tk_stat_id id)
{
    return tk_stats_nonzero(&c->st, id);
}

/* The trace itself records that packets of the producers' sequences were
 * lost: buffer chunks overwritten (ring wrap), discarded, unpatched or
 * rejected, writer or sequence packet loss, failed flushes. Kernel
 * (ftrace) losses do not count: they cannot remove GPU or Vulkan packets. */
static bool trace_recorded_loss(const tk_checker *c)
{
    static const tk_stat_id loss_stats[] = {
        TK_STAT_traced_buf_chunks_overwritten,
        TK_STAT_traced_buf_chunks_discarded,
        TK_STAT_traced_chunks_discarded,
        TK_STAT_traced_buf_patches_failed,
        TK_STAT_traced_buf_abi_violations,
        TK_STAT_traced_buf_trace_writer_packet_loss,
        TK_STAT_sequence_packet_loss,
        TK_STAT_traced_buf_sequence_packet_loss,
        TK_STAT_incremental_state_skipped_after_loss,
        TK_STAT_traced_flushes_failed,
        TK_STAT_traced_final_flush_failed,
    };
    for (size_t i = 0; i < sizeof loss_stats / sizeof loss_stats[0]; i++)
        if (stat_nonzero(c, loss_stats[i]))
            return true;
    return false;
}

/* Violations that are a consequence of lost packets when the trace records
 * a loss: a sequence whose SEQ_INCREMENTAL_STATE_CLEARED packet was lost
 * looks never cleared, GPU stages whose interned queue was lost are dropped,
 * and lost stages are missing. Stages without event_id are a producer bug
 * whatever was lost. */
static bool loss_explains(const tk_checker *c, tk_violation_code code)
{
    switch (code) {
    case TK_V_incremental_state_missing:
    case TK_V_gpu_events_missing:
        return true;
    case TK_V_gpu_stage_dropped:
        return c->gpu_dropped_no_event_id == 0;
    default:
        return false;
    }
}

static bool any_indexed_positive(const tk_stats *st, tk_stat_id id)
{
    for (uint32_t i = 0; i < st->n_slots[id]; i++)
        if (st->slots[id][i].value > 0)
            return true;
    return false;
}

tk_result *tk_checker_finish(tk_checker *c)
{
    tk_result *res = calloc(1, sizeof *res);
    if (!res) {
        tk_checker_free(c);
        return NULL;
    }
    vlist vl = { 0 };
    /* Clocks that named themselves in the trace join the declared names
     * and deviations (the user's first: they win where both say something). */
    tk_clock_name *merged_names = NULL;
    tk_clock_deviation *merged_devs = NULL;
    if (c->n_learned) {
        merged_names = calloc(c->o.n_names + c->n_learned, sizeof *merged_names);
        merged_devs = calloc(c->o.n_deviations + c->n_learned, sizeof *merged_devs);
        res->learned_names = calloc(c->n_learned, sizeof *res->learned_names);
    }
    if (merged_names && merged_devs && res->learned_names) {
        if (c->o.n_names)
            memcpy(merged_names, c->o.names, c->o.n_names * sizeof *merged_names);
        if (c->o.n_deviations)
            memcpy(merged_devs, c->o.deviations, c->o.n_deviations * sizeof *merged_devs);
        size_t nn = c->o.n_names, nd = c->o.n_deviations;
        for (size_t k = 0; k < c->n_learned; k++) {
            learned_clock *lc = &c->learned[k];
            merged_names[nn++] = (tk_clock_name){ lc->has_id, lc->id, lc->name };
            if (lc->has_id && lc->deviation_ns > 0)
                merged_devs[nd++] = (tk_clock_deviation){ lc->id, lc->deviation_ns };
            /* Ownership moves to the result, which the reports point into. */
            res->learned_names[res->n_learned_names++] = lc->name;
            lc->name = NULL;
        }
        c->n_learned = 0;
        c->o.names = merged_names;
        c->o.n_learned_names = nn - c->o.n_names;
        c->o.n_names = nn;
        c->o.deviations = merged_devs;
        c->o.n_deviations = nd;
    }
    const tk_check_options *o = &c->o;

    /* Stop accounting: unmatched GPU stages still waiting for a submit. */
    for (uint32_t i = 0; i < SUBMIT_SLOTS; i++)
        if (c->subs[i].state == 2)
            tk_stats_add(&c->st, TK_STAT_gpu_stage_unmatched_submission,
                         (int64_t)c->subs[i].gpu_count);

    tk_stats_add(&c->st, TK_STAT_timestamp_overflow, tk_sat_from_u64(c->raw_ts_overflows));
    if (c->st.dropped_indices) {
        tk_stats_add(&c->st, TK_STAT_state_limit_hits, tk_sat_from_u64(c->st.dropped_indices));
        if (!c->first_limit_reason)
            c->first_limit_reason = "more than 4096 buffers or cpus in one indexed stat";
    }
    if (c->o.self_check)
        for (uint32_t i = 0; i < c->n_m; i++)
            if (tk_clock_graph_verify_paths(c->m[i].g))
                abort();
    uint64_t sequences = 0;
    for (uint32_t i = 0; i < c->n_m; i++) {
        machine *m = &c->m[i];
        const tk_clock_graph_counters *gc = tk_clock_graph_counters_get(m->g);
        tk_stats_add(&c->st, TK_STAT_clock_sync_failure, (int64_t)gc->clock_sync_failure);
        tk_stats_add(&c->st, TK_STAT_clock_sync_cache_miss, (int64_t)gc->clock_sync_cache_miss);
        tk_stats_add(&c->st, TK_STAT_invalid_clock_snapshots, (int64_t)gc->invalid_clock_snapshots);
        tk_stats_add(&c->st, TK_STAT_timestamp_overflow, tk_sat_from_u64(gc->timestamp_overflows));
        if (gc->history_misses) {
            tk_stats_add(&c->st, TK_STAT_state_limit_hits, (int64_t)gc->history_misses);
            if (!c->first_limit_reason)
                c->first_limit_reason = "a conversion needed a clock snapshot evicted from the "
                                        "bounded history";
        }
        if (gc->trace_clock_change_ignored)
            add_violation(&vl, TK_V_trace_clock_change_ignored,
                          "%" PRIu64 " ClockSnapshot(s) asked for another trace clock after "
                          "timestamps had been converted; ignored as trace_processor does",
                          gc->trace_clock_change_ignored);
        for (uint32_t s = 0; s < m->n_seqs; s++)
            if (m->seqs[s].id)
                sequences++;
    }
    res->trace_clock = tk_clock_graph_trace_clock(c->m[0].g);

    if (c->stop)
        add_violation(&vl, c->input_error ? TK_V_input_error : TK_V_import_error, "%s",
                      c->stop_msg);

    const int64_t sync_fail = stat_total(c, TK_STAT_clock_sync_failure);
    if (sync_fail > 0) {
        char detail[256] = "";
        size_t used = 0;
        int shown = 0;
        for (uint32_t i = 0; i < c->n_m && shown < 4; i++) {
            const machine *fm = &c->m[i];
            for (uint32_t k = 0; k < fm->n_failed && shown < 4; k++) {
                const int64_t id = fm->failed[k].id;
                int w;
                if (tk_clock_is_converted_sequence(id))
                    w = snprintf(detail + used, sizeof detail - used,
                                 "%sclock %u of sequence %u: %" PRIu64, shown ? ", " : "; ",
                                 (uint32_t)(id & 0xffffffff), (uint32_t)((uint64_t)id >> 32),
                                 fm->failed[k].count);
                else
                    w = snprintf(detail + used, sizeof detail - used,
                                 "%sclock %" PRId64 ": %" PRIu64, shown ? ", " : "; ", id,
                                 fm->failed[k].count);
                if (w > 0 && (size_t)w < sizeof detail - used)
                    used += (size_t)w;
                shown++;
            }
        }
        add_violation(
            &vl, TK_V_clock_sync_failure,
            "%" PRId64 " timestamp conversion(s) found no path to the trace clock %s%s", sync_fail,
            tk_clock_builtin_name(res->trace_clock) ? tk_clock_builtin_name(res->trace_clock)
                                                    : "(custom)",
            detail);
    }
    if (stat_total(c, TK_STAT_invalid_clock_snapshots) > 0)
        add_violation(&vl, TK_V_invalid_clock_snapshots,
                      "%" PRId64 " invalid ClockSnapshot(s); first at offset %" PRIu64 ": %s",
                      stat_total(c, TK_STAT_invalid_clock_snapshots),
                      c->first_invalid_snapshot_offset,
                      c->first_invalid_snapshot_reason ? c->first_invalid_snapshot_reason : "?");

    for (uint32_t i = 0; i < c->n_m; i++)
        judge_clocks(c, &c->m[i], &vl, res);

    /* ---- data loss ---- */
    if (stat_nonzero(c, TK_STAT_traced_buf_chunks_overwritten))
        add_violation(&vl, TK_V_buffer_chunks_overwritten,
                      "%" PRId64 " chunk(s) (%" PRId64 " bytes) overwritten in the ring buffer "
                      "before being read (%" PRId64 " wrap(s))",
                      stat_total(c, TK_STAT_traced_buf_chunks_overwritten),
                      stat_total(c, TK_STAT_traced_buf_bytes_overwritten),
                      stat_total(c, TK_STAT_traced_buf_write_wrap_count));
    const int64_t discarded = tk_sat_add(stat_total(c, TK_STAT_traced_buf_chunks_discarded),
                                         stat_total(c, TK_STAT_traced_chunks_discarded));
    if (stat_nonzero(c, TK_STAT_traced_buf_chunks_discarded) ||
        stat_nonzero(c, TK_STAT_traced_chunks_discarded))
        add_violation(&vl, TK_V_buffer_chunks_discarded,
                      "%" PRId64 " chunk(s) discarded (buffer full, or no buffer)", discarded);
    if (stat_nonzero(c, TK_STAT_traced_buf_patches_failed))
        add_violation(&vl, TK_V_buffer_patches_failed, "%" PRId64 " chunk patch(es) failed",
                      stat_total(c, TK_STAT_traced_buf_patches_failed));
    if (stat_nonzero(c, TK_STAT_traced_buf_abi_violations))
        add_violation(&vl, TK_V_buffer_abi_violations,
                      "%" PRId64 " shared-memory ABI violation(s) by producers",
                      stat_total(c, TK_STAT_traced_buf_abi_violations));
    if (stat_nonzero(c, TK_STAT_traced_buf_trace_writer_packet_loss))
        add_violation(&vl, TK_V_writer_packet_loss,
                      "writers reported %" PRId64 " lost packet(s) (shared memory full)",
                      stat_total(c, TK_STAT_traced_buf_trace_writer_packet_loss));
    if (stat_nonzero(c, TK_STAT_sequence_packet_loss) ||
        stat_nonzero(c, TK_STAT_traced_buf_sequence_packet_loss))
        add_violation(&vl, TK_V_sequence_packet_loss,
                      "%" PRId64 " packet(s) after a gap (previous_packet_dropped, first packet "
                      "of each sequence excluded); first on sequence %u at offset %" PRIu64,
                      stat_total(c, TK_STAT_sequence_packet_loss), c->first_loss_seq,
                      c->first_loss_offset);
    if (stat_total(c, TK_STAT_incremental_state_skipped_after_loss) > 0)
        add_violation(&vl, TK_V_incremental_state_lost,
                      "%" PRId64 " packet(s) needing incremental state skipped after a loss and "
                      "before SEQ_INCREMENTAL_STATE_CLEARED (first on sequence %u)",
                      stat_total(c, TK_STAT_incremental_state_skipped_after_loss),
                      c->first_lost_state_seq);
    if (stat_total(c, TK_STAT_incremental_state_skipped_never_cleared) > 0)
        add_violation(&vl, TK_V_incremental_state_missing,
                      "%" PRId64 " packet(s) needing incremental state on a sequence that never "
                      "set SEQ_INCREMENTAL_STATE_CLEARED (first on sequence %u)",
                      stat_total(c, TK_STAT_incremental_state_skipped_never_cleared),
                      c->first_missing_state_seq);
    if (stat_total(c, TK_STAT_interned_data_tokenizer_errors) > 0)
        add_violation(&vl, TK_V_interned_data_missing,
                      "%" PRId64 " interned-data problem(s) (lookup of an unknown iid, entry "
                      "without iid, or sequence state without sequence id)",
                      stat_total(c, TK_STAT_interned_data_tokenizer_errors));
    if (stat_nonzero(c, TK_STAT_traced_flushes_failed))
        add_violation(&vl, TK_V_flushes_failed, "%" PRId64 " flush(es) failed",
                      stat_total(c, TK_STAT_traced_flushes_failed));
    if (stat_nonzero(c, TK_STAT_traced_final_flush_failed))
        add_violation(&vl, TK_V_final_flush_failed,
                      "the final flush failed: data still in producers was lost");
    bool ftrace_overrun = any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_overrun_delta);
    for (uint32_t i = 0; i < c->st.n_slots[TK_STAT_ftrace_cpu_overrun_end]; i++) {
        const tk_stat_slot *sl = &c->st.slots[TK_STAT_ftrace_cpu_overrun_end][i];
        int64_t begin;
        if (sl->value > 0 &&
            !tk_stats_get_indexed(&c->st, TK_STAT_ftrace_cpu_overrun_begin, sl->idx, &begin))
            ftrace_overrun = true;
    }
    if (ftrace_overrun)
        add_violation(&vl, TK_V_ftrace_overrun,
                      "the kernel overwrote ftrace events before traced_probes read them "
                      "(overrun %" PRId64 ")",
                      stat_total(c, TK_STAT_ftrace_cpu_overrun_delta));
    if (any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_commit_overrun_delta) ||
        any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_dropped_events_delta))
        add_violation(&vl, TK_V_ftrace_dropped_events,
                      "ftrace dropped %" PRId64 " event(s) and had %" PRId64 " commit overrun(s)",
                      stat_total(c, TK_STAT_ftrace_cpu_dropped_events_delta),
                      stat_total(c, TK_STAT_ftrace_cpu_commit_overrun_delta));
    if (any_indexed_positive(&c->st, TK_STAT_ftrace_cpu_has_data_loss))
        add_violation(&vl, TK_V_ftrace_lost_events,
                      "ftrace bundles report lost events on %" PRId64 " cpu(s)",
                      stat_total(c, TK_STAT_ftrace_cpu_has_data_loss));
    if (stat_total(c, TK_STAT_packets_out_of_order) > 0)
        add_violation(&vl, TK_V_packets_out_of_order,
                      "%" PRId64 " packet(s) more than %.3f s older than a packet before them "
                      "(worst %.3f s)",
                      stat_total(c, TK_STAT_packets_out_of_order), (double)o->ooo_window_ns / 1e9,
                      (double)c->worst_ooo_ns / 1e9);
    if (stat_total(c, TK_STAT_timestamp_overflow) > 0)
        add_violation(&vl, TK_V_timestamp_overflow,
                      "%" PRId64 " timestamp(s) do not fit in 64 signed bits: written as 2^63 or "
                      "more, or overflowing when scaled by unit_multiplier_ns, summed as "
                      "incremental deltas or shifted by a clock offset; trace_processor wraps them "
                      "into meaningless times",
                      stat_total(c, TK_STAT_timestamp_overflow));
    /* traced and our backends write TraceStats when a session ends: a trace
     * without one was cut short (the application or the service crashed or
     * was killed), and whatever was still buffered is lost. */
    const bool unfinished = !c->stop && stat_total(c, TK_STAT_trace_stats_packets) == 0;
    if (unfinished && c->packets > 0)
        add_violation(&vl, TK_V_no_trace_stats,
                      "no TraceStats packet: the trace was not finished (its writer crashed, was "
                      "killed or never stopped the session), so data still buffered was lost and "
                      "losses before that cannot be assessed");
    else if (unfinished)
        add_violation(&vl, TK_V_no_trace_stats,
                      "the trace holds no packets: nothing was written before it ended");

    /* ---- GPU ---- */
    if (stat_total(c, TK_STAT_gpu_render_stage_parser_errors) > 0)
        add_violation(&vl, TK_V_gpu_render_stage_parser_errors,
                      "%" PRId64 " GPU render stage event(s) with an invalid hw_queue_id",
                      stat_total(c, TK_STAT_gpu_render_stage_parser_errors));
    if (c->gpu_dropped_no_event_id || c->gpu_dropped_unknown_queue)
        add_violation(&vl, TK_V_gpu_stage_dropped,
                      "%" PRIu64 " GPU render stage event(s) would not be imported (%" PRIu64
                      " without event_id, %" PRIu64 " with an hw_queue_iid not interned)",
                      c->gpu_dropped_no_event_id + c->gpu_dropped_unknown_queue,
                      c->gpu_dropped_no_event_id, c->gpu_dropped_unknown_queue);
    if (stat_total(c, TK_STAT_gpu_stage_before_submit) > 0)
        add_violation(&vl, TK_V_gpu_stage_before_submit,
                      "%" PRId64 " GPU stage(s) start before the vkQueueSubmit that carries "
                      "them (worst by %" PRIu64 " ns): the clocks are not correlated",
                      stat_total(c, TK_STAT_gpu_stage_before_submit), c->worst_before_submit_ns);
    if (stat_total(c, TK_STAT_gpu_stage_after_submit_window) > 0)
        add_violation(&vl, TK_V_gpu_stage_after_submit_window,
                      "%" PRId64 " GPU stage(s) start more than %.3f s after their submission "
                      "ended (worst %.3f s)",
                      stat_total(c, TK_STAT_gpu_stage_after_submit_window),
                      (double)o->max_submit_latency_ns / 1e9,
                      (double)c->worst_after_window_ns / 1e9);
    if (o->expect_gpu_events >= 0 && c->gpu_events < (uint64_t)o->expect_gpu_events)
        add_violation(&vl, TK_V_gpu_events_missing,
                      "%" PRIu64 " GPU render stage event(s) imported, expected at least %" PRId64,
                      c->gpu_events, o->expect_gpu_events);

    /* Symptoms the recorded loss accounts for are loss, not errors. A trace
     * cut short lost its end: missing GPU events, nothing else. */
    const bool recorded_loss = trace_recorded_loss(c);
    for (size_t i = 0; i < vl.n; i++)
        if ((recorded_loss && loss_explains(c, vl.v[i].code)) ||
            (unfinished && vl.v[i].code == TK_V_gpu_events_missing))
            vl.v[i].severity = TK_SEV_DATA_LOSS;

    if (stat_total(c, TK_STAT_zstd_compressed_packets) > 0)
        add_violation(&vl, TK_V_zstd_unsupported,
                      "%" PRId64 " zstd_compressed_packets field(s) not expanded (trace_processor "
                      "v47 does not either)",
                      stat_total(c, TK_STAT_zstd_compressed_packets));
    if (stat_total(c, TK_STAT_state_limit_hits) > 0)
        add_violation(&vl, TK_V_state_limit_reached,
                      "memory bounds reached %" PRId64 " time(s) (%s); results may be incomplete",
                      stat_total(c, TK_STAT_state_limit_hits),
                      c->first_limit_reason ? c->first_limit_reason : "limit");

    res->input_error = c->stop && c->input_error;
    res->aborted = c->stop && !c->input_error;
    res->bytes = c->bytes;
    res->packets = c->packets;
    res->sequences = sequences;
    res->gpu_render_stage_events = c->gpu_events;
    res->vulkan_api_events = c->vk_events;
    res->vk_queue_submits = c->vk_submits;
    res->has_time_range = c->has_range;
    res->first_ts = c->first_ts;
    res->last_ts = c->last_ts;
    res->stats = c->st;
    tk_stats_init(&c->st); /* moved into the result */
    res->violations = vl.v;
    res->n_violations = vl.n;
    free(merged_names);
    free(merged_devs);
    tk_checker_free(c);
    return res;
}

void tk_result_free(tk_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_clocks; i++)
        free(r->clocks[i].points);
    free(r->clocks);
    for (size_t i = 0; i < r->n_violations; i++)
        free(r->violations[i].message);
    free(r->violations);
    for (size_t i = 0; i < r->n_learned_names; i++)
        free(r->learned_names[i]);
    free(r->learned_names);
    tk_stats_free(&r->stats);
    free(r);
}

bool tk_result_failed(const tk_result *r, const tk_check_options *o)
{
    for (size_t i = 0; i < r->n_violations; i++) {
        switch (r->violations[i].severity) {
        case TK_SEV_ERROR:
            return true;
        case TK_SEV_DATA_LOSS:
            if (!o->allow_loss)
                return true;
            break;
        case TK_SEV_WARNING:
            if (o->fatal_warnings)
                return true;
            break;
        case TK_SEV_INFO:
            break;
        }
    }
    return false;
}

/* ---- drivers -------------------------------------------------------------------------- */

static tk_result *finish_with_reader(tk_checker *c, tk_reader *rd, tk_read_status st)
{
    if (st != TK_READ_OK && st != TK_READ_ERR_ABORTED)
        tk_checker_input_error(c, tk_reader_error(rd));
    tk_checker_set_bytes(c, rd->offset + rd->len);
    tk_reader_free(rd);
    return tk_checker_finish(c);
}

tk_result *tk_check_buffer(const void *data, size_t len, const tk_check_options *o)
{
    tk_checker *c = tk_checker_new(o);
    if (!c)
        return NULL;
    tk_reader rd;
    tk_reader_config cfg = { .block_size = c->o.block_size,
                             .max_packet_size = c->o.max_packet_size };
    tk_reader_init(&rd, &cfg);
    tk_read_status st = tk_reader_parse_buffer(&rd, data, len, tk_checker_packet_cb, c);
    return finish_with_reader(c, &rd, st);
}

tk_result *tk_check_fd(int fd, const tk_check_options *o, tk_progress_cb progress, void *pctx)
{
    tk_checker *c = tk_checker_new(o);
    if (!c)
        return NULL;
    tk_reader rd;
    tk_reader_config cfg = { .block_size = c->o.block_size,
                             .max_packet_size = c->o.max_packet_size };
    tk_reader_init(&rd, &cfg);
    tk_read_status st = tk_reader_read_fd(&rd, fd, tk_checker_packet_cb, c, progress, pctx);
    return finish_with_reader(c, &rd, st);
}
