/* SPDX-License-Identifier: MIT */
/* The stats gputrace-check computes. Where trace_processor
 * (src/trace_processor/storage/stats.h) has a stat for the same thing, the
 * name, the single/indexed shape and the severity are the same, so numbers
 * can be compared with `select name, sum(value) from stats group by name`.
 * Perfetto v58 renamed, split or dropped some of v47's; both names are
 * reported, each with the value that version's trace_processor gives:
 * TK_SRC_TP stats both versions report alike, TK_SRC_TP47 as v47 counts
 * them (v58 counts them differently or not at all), TK_SRC_TP58 v58's own
 * (docs/toolkit.md, "Perfetto v47 and v58"). Stats of our own are marked
 * TK_SRC_OURS and never reuse an upstream name. */
#ifndef TK_STATS_H
#define TK_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "toolkit/tk_arith.h"
#include "toolkit/tk_map.h"

typedef enum tk_stat_severity {
    TK_STAT_INFO,
    TK_STAT_DATA_LOSS,
    TK_STAT_ERROR,
    TK_STAT_NOTICE /* v58: worth a look, neither error nor loss */
} tk_stat_severity;
typedef enum tk_stat_source {
    TK_SRC_TP,   /* trace_processor v47 and v58 alike */
    TK_SRC_TP47, /* as v47 counts it */
    TK_SRC_TP58, /* v58's name or count */
    TK_SRC_OURS
} tk_stat_source;

/* X(name, indexed, severity, source) */
#define TK_STAT_LIST(X)                                                                       \
    X(clock_sync_failure, false, TK_STAT_ERROR, TK_SRC_TP47)                                  \
    X(clock_sync_cache_miss, false, TK_STAT_INFO, TK_SRC_TP47)                                \
    X(invalid_clock_snapshots, false, TK_STAT_ERROR, TK_SRC_TP)                               \
    X(tokenizer_skipped_packets, false, TK_STAT_INFO, TK_SRC_TP47)                            \
    X(interned_data_tokenizer_errors, false, TK_STAT_INFO, TK_SRC_TP)                         \
    X(gpu_render_stage_parser_errors, false, TK_STAT_ERROR, TK_SRC_TP47)                      \
    X(ftrace_bundle_tokenizer_errors, false, TK_STAT_ERROR, TK_SRC_TP)                        \
    X(ftrace_setup_errors, false, TK_STAT_INFO, TK_SRC_TP)                                    \
    X(traced_producers_connected, false, TK_STAT_INFO, TK_SRC_TP)                             \
    X(traced_producers_seen, false, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(traced_data_sources_registered, false, TK_STAT_INFO, TK_SRC_TP)                         \
    X(traced_data_sources_seen, false, TK_STAT_INFO, TK_SRC_TP)                               \
    X(traced_tracing_sessions, false, TK_STAT_INFO, TK_SRC_TP)                                \
    X(traced_total_buffers, false, TK_STAT_INFO, TK_SRC_TP)                                   \
    X(traced_chunks_discarded, false, TK_STAT_INFO, TK_SRC_TP)                                \
    X(traced_patches_discarded, false, TK_STAT_INFO, TK_SRC_TP)                               \
    X(traced_flushes_requested, false, TK_STAT_INFO, TK_SRC_TP)                               \
    X(traced_flushes_succeeded, false, TK_STAT_INFO, TK_SRC_TP)                               \
    X(traced_flushes_failed, false, TK_STAT_DATA_LOSS, TK_SRC_TP)                             \
    X(traced_final_flush_succeeded, false, TK_STAT_INFO, TK_SRC_TP)                           \
    X(traced_final_flush_failed, false, TK_STAT_DATA_LOSS, TK_SRC_TP)                         \
    X(filter_input_bytes, false, TK_STAT_INFO, TK_SRC_TP)                                     \
    X(filter_input_packets, false, TK_STAT_INFO, TK_SRC_TP)                                   \
    X(filter_output_bytes, false, TK_STAT_INFO, TK_SRC_TP)                                    \
    X(filter_time_taken_ns, false, TK_STAT_INFO, TK_SRC_TP)                                   \
    X(filter_errors, false, TK_STAT_ERROR, TK_SRC_TP)                                         \
    X(traced_buf_buffer_size, true, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(traced_buf_bytes_written, true, TK_STAT_INFO, TK_SRC_TP)                                \
    X(traced_buf_bytes_overwritten, true, TK_STAT_INFO, TK_SRC_TP)                            \
    X(traced_buf_bytes_read, true, TK_STAT_INFO, TK_SRC_TP)                                   \
    X(traced_buf_bytes_filtered_out, true, TK_STAT_INFO, TK_SRC_TP)                           \
    X(traced_buf_padding_bytes_written, true, TK_STAT_INFO, TK_SRC_TP)                        \
    X(traced_buf_padding_bytes_cleared, true, TK_STAT_INFO, TK_SRC_TP)                        \
    X(traced_buf_chunks_written, true, TK_STAT_INFO, TK_SRC_TP)                               \
    X(traced_buf_chunks_rewritten, true, TK_STAT_INFO, TK_SRC_TP)                             \
    X(traced_buf_chunks_overwritten, true, TK_STAT_INFO, TK_SRC_TP)                           \
    X(traced_buf_chunks_discarded, true, TK_STAT_INFO, TK_SRC_TP)                             \
    X(traced_buf_chunks_read, true, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(traced_buf_chunks_committed_out_of_order, true, TK_STAT_INFO, TK_SRC_TP)                \
    X(traced_buf_write_wrap_count, true, TK_STAT_INFO, TK_SRC_TP)                             \
    X(traced_buf_patches_succeeded, true, TK_STAT_INFO, TK_SRC_TP)                            \
    X(traced_buf_patches_failed, true, TK_STAT_DATA_LOSS, TK_SRC_TP)                          \
    X(traced_buf_readaheads_succeeded, true, TK_STAT_INFO, TK_SRC_TP)                         \
    X(traced_buf_readaheads_failed, true, TK_STAT_INFO, TK_SRC_TP)                            \
    X(traced_buf_abi_violations, true, TK_STAT_DATA_LOSS, TK_SRC_TP)                          \
    X(traced_buf_trace_writer_packet_loss, true, TK_STAT_DATA_LOSS, TK_SRC_TP)                \
    X(traced_buf_sequence_packet_loss, true, TK_STAT_DATA_LOSS, TK_SRC_TP)                    \
    X(ftrace_cpu_entries_begin, true, TK_STAT_INFO, TK_SRC_TP)                                \
    X(ftrace_cpu_entries_end, true, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(ftrace_cpu_entries_delta, true, TK_STAT_INFO, TK_SRC_TP)                                \
    X(ftrace_cpu_overrun_begin, true, TK_STAT_INFO, TK_SRC_TP)                                \
    X(ftrace_cpu_overrun_end, true, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(ftrace_cpu_overrun_delta, true, TK_STAT_INFO, TK_SRC_TP)                                \
    X(ftrace_cpu_commit_overrun_begin, true, TK_STAT_INFO, TK_SRC_TP)                         \
    X(ftrace_cpu_commit_overrun_end, true, TK_STAT_INFO, TK_SRC_TP)                           \
    X(ftrace_cpu_commit_overrun_delta, true, TK_STAT_ERROR, TK_SRC_TP)                        \
    X(ftrace_cpu_bytes_begin, true, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(ftrace_cpu_bytes_end, true, TK_STAT_INFO, TK_SRC_TP)                                    \
    X(ftrace_cpu_bytes_delta, true, TK_STAT_INFO, TK_SRC_TP)                                  \
    X(ftrace_cpu_dropped_events_begin, true, TK_STAT_INFO, TK_SRC_TP)                         \
    X(ftrace_cpu_dropped_events_end, true, TK_STAT_INFO, TK_SRC_TP)                           \
    X(ftrace_cpu_dropped_events_delta, true, TK_STAT_ERROR, TK_SRC_TP)                        \
    X(ftrace_cpu_read_events_begin, true, TK_STAT_INFO, TK_SRC_TP)                            \
    X(ftrace_cpu_read_events_end, true, TK_STAT_INFO, TK_SRC_TP)                              \
    X(ftrace_cpu_read_events_delta, true, TK_STAT_INFO, TK_SRC_TP)                            \
    X(ftrace_cpu_now_ts_begin, true, TK_STAT_INFO, TK_SRC_TP)                                 \
    X(ftrace_cpu_now_ts_end, true, TK_STAT_INFO, TK_SRC_TP)                                   \
    X(ftrace_cpu_oldest_event_ts_begin, true, TK_STAT_INFO, TK_SRC_TP)                        \
    X(ftrace_cpu_oldest_event_ts_end, true, TK_STAT_INFO, TK_SRC_TP)                          \
    X(ftrace_cpu_has_data_loss, true, TK_STAT_DATA_LOSS, TK_SRC_TP)                           \
    /* ---- v58's (see the head comment) ---- */                                              \
    X(clock_sync_failure_unknown_source_clock, false, TK_STAT_ERROR, TK_SRC_TP58)             \
    X(clock_sync_failure_unknown_target_clock, false, TK_STAT_ERROR, TK_SRC_TP58)             \
    X(clock_sync_failure_no_path, false, TK_STAT_ERROR, TK_SRC_TP58)                          \
    X(clock_sync_failure_undeferrable_packet_loss, false, TK_STAT_DATA_LOSS, TK_SRC_TP58)     \
    X(packet_skipped_seq_needs_incremental_state_invalid, false, TK_STAT_NOTICE, TK_SRC_TP58) \
    X(interned_data_skipped_incremental_state_invalid, false, TK_STAT_NOTICE, TK_SRC_TP58)    \
    X(incremental_state_cleared_missing_sequence_id, false, TK_STAT_ERROR, TK_SRC_TP58)       \
    X(previous_packet_dropped_missing_sequence_id, false, TK_STAT_ERROR, TK_SRC_TP58)         \
    X(trace_packet_defaults_missing_sequence_id, false, TK_STAT_ERROR, TK_SRC_TP58)           \
    X(interned_data_missing_sequence_id, false, TK_STAT_ERROR, TK_SRC_TP58)                   \
    X(traced_buf_incremental_sequences_dropped, true, TK_STAT_DATA_LOSS, TK_SRC_TP58)         \
    X(trace_sorter_negative_timestamp_dropped, false, TK_STAT_ERROR, TK_SRC_TP58)             \
    /* ---- ours ---- */                                                                      \
    X(previous_packet_dropped, false, TK_STAT_INFO, TK_SRC_OURS)                              \
    X(sequence_packet_loss, false, TK_STAT_DATA_LOSS, TK_SRC_OURS)                            \
    X(incremental_state_skipped_after_loss, false, TK_STAT_DATA_LOSS, TK_SRC_OURS)            \
    X(incremental_state_skipped_never_cleared, false, TK_STAT_ERROR, TK_SRC_OURS)             \
    X(packets_out_of_order, false, TK_STAT_INFO, TK_SRC_OURS)                                 \
    X(timestamp_overflow, false, TK_STAT_ERROR, TK_SRC_OURS)                                  \
    X(timestamps_converted, false, TK_STAT_INFO, TK_SRC_OURS)                                 \
    X(gpu_render_stage_events_dropped, false, TK_STAT_INFO, TK_SRC_OURS)                      \
    X(gpu_stage_before_submit, false, TK_STAT_ERROR, TK_SRC_OURS)                             \
    X(gpu_stage_after_submit_window, false, TK_STAT_INFO, TK_SRC_OURS)                        \
    X(gpu_stage_unmatched_submission, false, TK_STAT_INFO, TK_SRC_OURS)                       \
    X(compressed_packets, false, TK_STAT_INFO, TK_SRC_OURS)                                   \
    X(compressed_bytes_inflated, false, TK_STAT_INFO, TK_SRC_OURS)                            \
    X(zstd_compressed_packets, false, TK_STAT_INFO, TK_SRC_OURS)                              \
    X(remote_clock_sync_packets, false, TK_STAT_INFO, TK_SRC_OURS)                            \
    X(trace_stats_packets, false, TK_STAT_INFO, TK_SRC_OURS)                                  \
    X(clock_snapshot_packets, false, TK_STAT_INFO, TK_SRC_OURS)                               \
    X(state_limit_hits, false, TK_STAT_INFO, TK_SRC_OURS)

typedef enum tk_stat_id {
#define TK_STAT_ENUM(name, indexed, sev, src) TK_STAT_##name,
    TK_STAT_LIST(TK_STAT_ENUM)
#undef TK_STAT_ENUM
    TK_STAT_COUNT
} tk_stat_id;

typedef struct tk_stat_desc {
    const char *name;
    bool indexed;
    tk_stat_severity severity;
    tk_stat_source source;
} tk_stat_desc;

const tk_stat_desc *tk_stat_describe(tk_stat_id id);
const char *tk_stat_severity_name(tk_stat_severity s);

/* At most this many indices per indexed stat (cpus, buffers); values for
 * further indices are dropped and counted in `dropped_indices`. */
#define TK_STAT_MAX_INDICES 4096

typedef struct tk_stat_slot {
    int32_t idx;
    int64_t value;
} tk_stat_slot;

typedef struct tk_stats {
    int64_t single[TK_STAT_COUNT];
    bool present[TK_STAT_COUNT];
    /* Per indexed stat, its indices in order of first appearance. */
    tk_stat_slot *slots[TK_STAT_COUNT];
    uint32_t n_slots[TK_STAT_COUNT];
    uint32_t cap_slots[TK_STAT_COUNT];
    /* Where each index sits in slots[stat]: indices 0..TK_STAT_MAX_INDICES-1
     * (buffers and cpus, normally) in a direct table (position + 1, 0 when
     * absent), any other in the hash index (stat << 32 | index). Either way
     * one lookup per value, however many indices a trace declares. */
    uint16_t *direct[TK_STAT_COUNT];
    uint32_t n_hashed[TK_STAT_COUNT];
    tk_map index;
    uint64_t dropped_indices;
    /* Index entries examined by lookups and inserts: the work, for tests
     * that bound it by the number of values stored. */
    uint64_t probes;
} tk_stats;

void tk_stats_init(tk_stats *s);
void tk_stats_free(tk_stats *s);

static inline void tk_stats_set(tk_stats *s, tk_stat_id id, int64_t v)
{
    s->single[id] = v;
    s->present[id] = true;
}
static inline void tk_stats_add(tk_stats *s, tk_stat_id id, int64_t by)
{
    s->single[id] = tk_sat_add(s->single[id], by);
    s->present[id] = true;
}
static inline int64_t tk_stats_get(const tk_stats *s, tk_stat_id id)
{
    return s->single[id];
}

void tk_stats_set_indexed(tk_stats *s, tk_stat_id id, int32_t idx, int64_t v);
bool tk_stats_get_indexed(tk_stats *s, tk_stat_id id, int32_t idx, int64_t *v);
/* Single value, or the sum over indices, clamped to [INT64_MIN, INT64_MAX]
 * (values are read from the trace and may be absurd). */
int64_t tk_stats_total(const tk_stats *s, tk_stat_id id);
/* Any value of the stat (any index) is not zero. */
bool tk_stats_nonzero(const tk_stats *s, tk_stat_id id);
/* Adds every value of `from` into `into` (indexed: per index). */
void tk_stats_merge(tk_stats *into, const tk_stats *from);

#endif /* TK_STATS_H */
