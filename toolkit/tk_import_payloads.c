/* SPDX-License-Identifier: MIT */
/* The import of the payloads trace_processor reads while tokenizing:
 * sequence defaults and interned data (with the clock names our layer
 * writes into interned GPU specifications), ClockSnapshot, TraceStats and
 * the ftrace statistics. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_arith.h"
#include "toolkit/tk_checks_internal.h"
#include "toolkit/tk_fields.h"
#include "toolkit/tk_schema.h"

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

void tk_import_defaults(tk_seq_state *s, pb_bytes b)
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
    tk_learned_clock *lc = NULL;
    for (size_t i = 0; i < c->n_learned; i++) {
        const tk_learned_clock *k = &c->learned[i];
        if (k->name_hash == h && k->name_len == n && memcmp(k->name, v, n) == 0) {
            lc = &c->learned[i];
            break;
        }
    }
    if (!lc) {
        if (c->n_learned == TK_MAX_LEARNED_CLOCKS)
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

void tk_import_interned(tk_checker *c, tk_seq_state *s, pb_bytes b)
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
        tk_iid_set *set = NULL;
        if (f.id == TK_ID_GPU_SPECIFICATIONS)
            set = &s->specs;
        else if (f.id == TK_ID_GRAPHICS_CONTEXTS)
            set = &s->contexts;
        if (!set)
            continue;
        if (set->map.len >= TK_MAX_INTERNED_PER_SEQ) {
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

/* ---- ClockSnapshot ----------------------------------------------------------------- */

void tk_import_clock_snapshot(tk_checker *c, tk_machine *m, pb_bytes b, uint32_t seq_id,
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
        tk_import_stop(c, false, "packet at offset %" PRIu64 ": %s (trace_processor stops here)",
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

/* TraceStats.filter_stats: the trace filter's counters, and the bytes it
 * removed per buffer (plain or packed). */
static void import_filter_stats(tk_checker *c, pb_bytes b)
{
    pb_field f;
    perfetto_protos_TraceStats_FilterStats_view fs;
    (void)perfetto_protos_TraceStats_FilterStats_decode(&fs, b.data, b.size);
    tk_stats_set(&c->st, TK_STAT_filter_errors, (int64_t)fs.errors);
    tk_stats_set(&c->st, TK_STAT_filter_input_bytes, (int64_t)fs.input_bytes);
    tk_stats_set(&c->st, TK_STAT_filter_input_packets, (int64_t)fs.input_packets);
    tk_stats_set(&c->st, TK_STAT_filter_output_bytes, (int64_t)fs.output_bytes);
    tk_stats_set(&c->st, TK_STAT_filter_time_taken_ns, (int64_t)fs.time_taken_ns);
    int32_t idx = 0;
    pb_reader fr;
    pb_reader_init(&fr, b.data, b.size);
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

void tk_import_trace_stats(tk_checker *c, tk_machine *m, pb_bytes b)
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

    if (v.has_filter_stats)
        import_filter_stats(c, v.filter_stats);

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
    /* Per buffer, over the writers this packet lists for it: reset the
     * buffers named, then sum (through the stats' own index, so a long list
     * stays linear).
     *   traced_buf_sequence_packet_loss: their losses;
     *   traced_buf_incremental_sequences_dropped (v58): how many of them
     *   had every packet that needed incremental state skipped. */
    for (int pass = 0; pass < 2; pass++) {
        pb_reader_init(&r, b.data, b.size);
        while (pb_reader_next(&r, &f)) {
            if (f.wire_type != PB_WIRE_LEN || f.id != TK_TS_WRITER_STATS)
                continue;
            perfetto_protos_TraceStats_WriterStats_view ws;
            (void)perfetto_protos_TraceStats_WriterStats_decode(&ws, f.data, (size_t)f.value);
            uint64_t *idx = tk_map_find(&m->seq_index, (uint32_t)ws.sequence_id);
            if (!idx)
                continue;
            const tk_seq_state *s = &m->seqs[*idx];
            const int32_t buffer = (int32_t)ws.buffer;
            const bool all_skipped =
                s->needs_state_skipped > 0 && s->needs_state_skipped == s->needs_state;
            int64_t sum = 0;
            if (pass == 1)
                tk_stats_get_indexed(&c->st, TK_STAT_traced_buf_incremental_sequences_dropped,
                                     buffer, &sum);
            tk_stats_set_indexed(&c->st, TK_STAT_traced_buf_incremental_sequences_dropped, buffer,
                                 pass == 0 ? 0 : tk_sat_add(sum, all_skipped));
            if (!s->loss_key)
                continue;
            sum = 0;
            if (pass == 1)
                tk_stats_get_indexed(&c->st, TK_STAT_traced_buf_sequence_packet_loss, buffer, &sum);
            tk_stats_set_indexed(&c->st, TK_STAT_traced_buf_sequence_packet_loss, buffer,
                                 pass == 0 ? 0 : tk_sat_add(sum, tk_sat_from_u64(s->data_loss)));
        }
    }
}

/* ---- ftrace ------------------------------------------------------------------------ */

void tk_import_ftrace_stats(tk_checker *c, tk_machine *m, pb_bytes b, uint32_t seq_id)
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

bool tk_import_ftrace_bundle(tk_checker *c, pb_bytes b, uint64_t offset)
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
        tk_import_stop(c, false,
                       "packet at offset %" PRIu64 ": ftrace bundle for cpu %u (limit 1024); "
                       "trace_processor stops here",
                       offset, (uint32_t)cpu);
        return false;
    }
    if (lost)
        tk_stats_set_indexed(&c->st, TK_STAT_ftrace_cpu_has_data_loss, (int32_t)(uint32_t)cpu, 1);
    return true;
}
