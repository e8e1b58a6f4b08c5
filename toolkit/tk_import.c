/* SPDX-License-Identifier: MIT */
/* The import: what trace_processor does with each packet. It mirrors ProtoTraceReader::ParsePacket of trace_processor v47:
 *   incremental_state_cleared / previous_packet_dropped -> sequence state,
 *   per-sequence loss count (first packet of a sequence excluded),
 *   trace_packet_defaults, interned_data, then clock_snapshot (stop),
 *   trace_stats, service/remote-sync/extension packets (stop),
 *   SEQ_NEEDS_INCREMENTAL_STATE on an invalid sequence (skip),
 *   timestamp conversion (a failure drops the packet), then the payload.
 * GPU payloads are judged when read rather than after sorting, with the
 * interned data known at that point (producers intern before use). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_arith.h"
#include "toolkit/tk_checks_internal.h"
#include "toolkit/tk_fields.h"
#include "toolkit/tk_map.h"
#include "toolkit/tk_schema.h"

static tk_seq_state *get_seq(tk_checker *c, tk_machine *m, uint32_t id);

static void free_seq(tk_seq_state *s)
{
    tk_map_free(&s->specs.map);
    tk_map_free(&s->contexts.map);
}

static void iid_set_clear(tk_iid_set *set)
{
    tk_map_clear(&set->map);
    set->full = false;
    set->n_recent = 0;
}

static tk_machine *get_machine(tk_checker *c, uint32_t id)
{
    const uint64_t *known = tk_map_find(&c->machine_index, id);
    if (known)
        return &c->m[*known];
    if (c->n_m >= TK_MAX_MACHINES)
        return NULL;
    tk_machine *m = &c->m[c->n_m];
    memset(m, 0, sizeof *m);
    m->id = id;
    tk_clock_limits lim = c->o.clock_limits;
    lim.drift_limit_ppm = c->o.max_drift_ppm;
    m->g = tk_clock_graph_new(&lim);
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
    c->m = calloc(TK_MAX_MACHINES, sizeof *c->m);
    c->subs = calloc(TK_SUBMIT_SLOTS, sizeof *c->subs);
    c->z = tk_inflater_new(c->o.max_packet_size);
    if (!c->m || !c->subs || !c->z || !get_machine(c, 0)) {
        tk_checker_free(c);
        return NULL;
    }
    tk_inflater_set_limits(c->z, &c->o.inflate_limits);
    if (tk_check_options_want_frames(&c->o) &&
        !(c->frames = tk_frames_new(c->o.frame_budget_ms, c->o.keep_plot_points))) {
        tk_checker_free(c);
        return NULL;
    }
    return c;
}

void tk_checker_free(tk_checker *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_m; i++) {
        tk_machine *m = &c->m[i];
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
    tk_frames_free(c->frames);
    free(c);
}

static tk_seq_state *get_seq(tk_checker *c, tk_machine *m, uint32_t id)
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
            tk_seq_state *ns = realloc(m->seqs, ncap * sizeof *ns);
            if (!ns)
                return &m->overflow;
            m->seqs = ns;
            m->cap_seqs = ncap;
        }
        bool inserted;
        idx = tk_map_insert(&m->seq_index, id, m->n_seqs, &inserted);
        if (!idx)
            return &m->overflow;
        tk_seq_state *s = &m->seqs[m->n_seqs++];
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
    H_TRACK_EVENT = 1u << 22,
    H_TRACK_DESCRIPTOR = 1u << 23,
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
    pb_bytes snapshot, stats, gpu, vk, interned, defaults, compressed, zstd, ftrace_stats,
        ftrace_events;
    pb_bytes track_event, track_descriptor;
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
        case TK_TP_TRACK_EVENT:
            LEN_FIELD(H_TRACK_EVENT, track_event);
        case TK_TP_TRACK_DESCRIPTOR:
            LEN_FIELD(H_TRACK_DESCRIPTOR, track_descriptor);
        case TK_TP_ZSTD_COMPRESSED_PACKETS:
            LEN_FIELD(H_ZSTD, zstd);
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

void tk_import_stop(tk_checker *c, bool input_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tk_import_stop(tk_checker *c, bool input_error, const char *fmt, ...)
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

static void clear_incremental_state(tk_seq_state *s)
{
    /* A new generation: no defaults, no interned data. */
    s->incr_valid = true;
    s->ever_cleared = true;
    s->has_defaults = false;
    s->default_clock = 0;
    iid_set_clear(&s->specs);
    iid_set_clear(&s->contexts);
}

/* ---- the packet ------------------------------------------------------------------------ */

static void count_failed_clock(tk_machine *m, int64_t id)
{
    const uint64_t *v = tk_map_find(&m->failed_index, (uint64_t)id);
    if (v) {
        m->failed[*v].count++;
        return;
    }
    if (m->n_failed >= TK_MAX_FAILED_CLOCKS) {
        m->failed_unlisted++;
        return;
    }
    if (m->n_failed == m->cap_failed) {
        uint32_t ncap = m->cap_failed ? m->cap_failed * 2 : 8;
        tk_failed_clock *nf = realloc(m->failed, ncap * sizeof *nf);
        if (!nf) {
            m->failed_unlisted++;
            return;
        }
        m->failed = nf;
        m->cap_failed = ncap;
    }
    bool ins;
    if (!tk_map_insert(&m->failed_index, (uint64_t)id, m->n_failed, &ins)) {
        m->failed_unlisted++;
        return;
    }
    m->failed[m->n_failed++] = (tk_failed_clock){ id, 1 };
}

static bool process_packet(tk_checker *c, const uint8_t *data, size_t len, uint64_t offset);

static bool inflate_cb(void *ctx, const uint8_t *data, size_t len, uint64_t offset)
{
    return process_packet(ctx, data, len, offset);
}

/* compressed_packets / zstd_compressed_packets: the packets inside are
 * imported in place, each through process_packet (one level deep only). */
static bool import_compressed(tk_checker *c, tk_codec codec, pb_bytes data, uint64_t offset)
{
    if (c->inflating) {
        tk_import_stop(c, true, "offset %" PRIu64 ": %s nested inside compressed packets", offset,
                       tk_codec_field(codec));
        return false;
    }
    tk_stats_add(
        &c->st,
        codec == TK_CODEC_ZSTD ? TK_STAT_zstd_compressed_packets : TK_STAT_compressed_packets, 1);
    uint64_t inflated = 0;
    c->inflating = true;
    tk_read_status st =
        tk_decompress_packets(c->z, codec, data.data, data.size, offset, inflate_cb, c, &inflated);
    c->inflating = false;
    tk_stats_add(&c->st, TK_STAT_compressed_bytes_inflated, (int64_t)inflated);
    if (st == TK_READ_ERR_ABORTED)
        return false;
    if (st != TK_READ_OK) {
        tk_import_stop(c, true, "%s", tk_inflater_error(c->z));
        return false;
    }
    return true;
}

/* Sequence flags, loss accounting, defaults and interned data: what
 * trace_processor's tokenizer does with a packet before its payload. */
static void import_sequence_state(tk_checker *c, tk_seq_state *s, const pkt *p, uint32_t seq_id,
                                  uint32_t flags, uint64_t offset)
{
    const bool has_seq = (p->has & H_SEQ) != 0;
    const bool cleared = ((p->has & H_ISC) && p->incremental_state_cleared) ||
                         (flags & TK_SEQ_INCREMENTAL_STATE_CLEARED);
    const bool dropped = (p->has & H_PPD) && p->previous_packet_dropped;

    /* Without a sequence id: one tokenizer error in v47, a stat of its own
     * for each case in v58. */
    if (cleared) {
        if (!has_seq) {
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
            tk_stats_add(&c->st, TK_STAT_incremental_state_cleared_missing_sequence_id, 1);
        } else {
            clear_incremental_state(s);
        }
    } else if (dropped) {
        if (!has_seq) {
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
            tk_stats_add(&c->st, TK_STAT_previous_packet_dropped_missing_sequence_id, 1);
        } else {
            s->incr_valid = false;
        }
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

    if (p->has & H_DEFAULTS) {
        if (!has_seq) {
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
            tk_stats_add(&c->st, TK_STAT_trace_packet_defaults_missing_sequence_id, 1);
        } else {
            tk_import_defaults(s, p->defaults);
        }
    }
    if (p->has & H_INTERNED) {
        if (!has_seq) {
            tk_stats_add(&c->st, TK_STAT_interned_data_tokenizer_errors, 1);
            tk_stats_add(&c->st, TK_STAT_interned_data_missing_sequence_id, 1);
        } else if (!s->incr_valid) {
            tk_stats_add(&c->st, TK_STAT_tokenizer_skipped_packets, 1);
            tk_stats_add(&c->st, TK_STAT_interned_data_skipped_incremental_state_invalid, 1);
        } else {
            tk_import_interned(c, s, p->interned);
        }
    }
}

/* A packet with SEQ_NEEDS_INCREMENTAL_STATE goes on only while its
 * sequence's state is valid; otherwise it is skipped, and without a
 * sequence id trace_processor stops importing (c->stop). */
static bool has_needed_state(tk_checker *c, tk_seq_state *s, uint32_t seq_id, uint64_t offset)
{
    if (!seq_id) {
        tk_import_stop(c, false,
                       "packet at offset %" PRIu64 " needs incremental state but has "
                       "no trusted_packet_sequence_id; trace_processor stops here",
                       offset);
        return false; /* c->stop is set */
    }
    s->needs_state++;
    if (!s->incr_valid) {
        s->needs_state_skipped++;
        tk_stats_add(&c->st, TK_STAT_tokenizer_skipped_packets, 1);
        tk_stats_add(&c->st, TK_STAT_packet_skipped_seq_needs_incremental_state_invalid, 1);
        if (s->ever_cleared) {
            tk_stats_add(&c->st, TK_STAT_incremental_state_skipped_after_loss, 1);
            if (!c->first_lost_state_seq)
                c->first_lost_state_seq = seq_id;
        } else {
            tk_stats_add(&c->st, TK_STAT_incremental_state_skipped_never_cleared, 1);
            if (!c->first_missing_state_seq)
                c->first_missing_state_seq = seq_id;
        }
        return false;
    }
    return true;
}

typedef enum ts_outcome {
    TS_OK,
    TS_DROP, /* no conversion: trace_processor drops the packet */
    TS_STOP, /* trace_processor stops importing here */
} ts_outcome;

/* The packet's time on the trace clock, converted as trace_processor
 * does, with the out-of-order window check; packets without a timestamp
 * take the machine's latest time. */
static ts_outcome packet_trace_time(tk_checker *c, tk_machine *m, const tk_seq_state *s,
                                    const pkt *p, uint32_t seq_id, uint64_t offset, int64_t *out)
{
    int64_t ts;
    if (p->has & H_TS) {
        /* trace_processor reads the unsigned field as int64_t: 2^63 and
         * more become negative times. */
        if (PB_UNLIKELY(p->timestamp > INT64_MAX))
            c->raw_ts_overflows++;
        ts = (int64_t)p->timestamp;
        uint32_t clock_id = (p->has & H_CLOCK) ? p->timestamp_clock_id
                            : s->has_defaults  ? s->default_clock
                                               : 0;
        if (PB_UNLIKELY((p->has & H_CHROME) && (!clock_id || clock_id == TK_CLOCK_MONOTONIC))) {
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
                    tk_import_stop(c, false,
                                   "packet at offset %" PRIu64 " uses sequence-scoped "
                                   "clock %u without trusted_packet_sequence_id; trace_processor "
                                   "stops here",
                                   offset, clock_id);
                    return TS_STOP;
                }
                gid = tk_clock_sequence_to_global(seq_id, clock_id);
            }
            int64_t v;
            if (!tk_clock_graph_to_trace_time(m->g, gid, ts, &v)) {
                /* Dropped by trace_processor; counted in clock_sync_failure. */
                count_failed_clock(m, gid);
                return TS_DROP;
            }
            if (gid != tk_clock_graph_trace_clock(m->g))
                tk_stats_add(&c->st, TK_STAT_timestamps_converted, 1);
            ts = v;
        }
        /* Out of order beyond the window: what a bounded sorting window
         * could not put right. The lag is exact even across a wrapped
         * clock (which is reported as timestamp_overflow). */
        if (c->o.ooo_window_ns >= 0 && m->has_pushed) {
            const uint64_t lag = tk_lead(ts, m->max_pushed_ts);
            if (lag > (uint64_t)c->o.ooo_window_ns) {
                tk_stats_add(&c->st, TK_STAT_packets_out_of_order, 1);
                if (lag > c->worst_ooo_ns)
                    c->worst_ooo_ns = lag;
            }
        }
        /* v58's sorter drops a packet whose trace time is negative (v47
         * keeps it). */
        if (PB_UNLIKELY(ts < 0))
            tk_stats_add(&c->st, TK_STAT_trace_sorter_negative_timestamp_dropped, 1);
        if (!m->has_pushed || ts > m->max_pushed_ts)
            m->max_pushed_ts = ts;
        m->has_pushed = true;
        note_time(c, ts);
    } else {
        ts = m->latest_ts;
    }
    if (ts > m->latest_ts)
        m->latest_ts = ts;
    *out = ts;
    return TS_OK;
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
        tk_import_stop(c, true, "packet at offset %" PRIu64 " is malformed; the trace is corrupt",
                       offset);
        return false;
    }

    /* As upstream: deflate when a packet has both. */
    if (PB_UNLIKELY(p.has & H_COMPRESSED))
        return import_compressed(c, TK_CODEC_DEFLATE, p.compressed, offset);
    if (PB_UNLIKELY(p.has & H_ZSTD))
        return import_compressed(c, TK_CODEC_ZSTD, p.zstd, offset);

    tk_machine *m = &c->m[0];
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

    const uint32_t seq_id = (p.has & H_SEQ) ? p.seq_id : 0;
    tk_seq_state *s = get_seq(c, m, seq_id);

    const uint32_t flags = (p.has & H_FLAGS) ? p.sequence_flags : 0;
    import_sequence_state(c, s, &p, seq_id, flags, offset);

    if (p.has & H_SNAPSHOT) {
        tk_import_clock_snapshot(c, m, p.snapshot, seq_id, offset);
        return !c->stop;
    }
    if (p.has & H_STATS)
        tk_import_trace_stats(c, m, p.stats);
    if (p.has & H_REMOTE_SYNC) {
        tk_stats_add(&c->st, TK_STAT_remote_clock_sync_packets, 1);
        return true;
    }
    if (p.has & (H_SERVICE | H_EXTENSION))
        return true;
    /* Descriptors are global to the trace and need no time. */
    if ((p.has & H_TRACK_DESCRIPTOR) && c->frames)
        tk_frames_descriptor(c->frames, p.track_descriptor.data, p.track_descriptor.size);

    if ((flags & TK_SEQ_NEEDS_INCREMENTAL_STATE) && !has_needed_state(c, s, seq_id, offset))
        return !c->stop;

    int64_t ts;
    const ts_outcome when = packet_trace_time(c, m, s, &p, seq_id, offset, &ts);
    if (when != TS_OK)
        return when == TS_DROP;

    if (p.has & H_FTRACE_EVENTS) {
        if (!tk_import_ftrace_bundle(c, p.ftrace_events, offset))
            return false;
    }
    if (p.has & H_FTRACE_STATS)
        tk_import_ftrace_stats(c, m, p.ftrace_stats, seq_id);
    if (p.has & H_GPU)
        tk_match_gpu_stage(c, s, p.gpu, ts);
    if (p.has & H_VK)
        tk_match_vulkan_api_event(c, p.vk, ts);
    if ((p.has & H_TRACK_EVENT) && c->frames)
        tk_frames_event(c->frames, p.track_event.data, p.track_event.size, ts);
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
