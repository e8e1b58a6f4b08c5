/* SPDX-License-Identifier: MIT */
/* The checking pipeline behind gputrace-check: feeds every TracePacket
 * through the same import steps trace_processor (v47) takes
 * (ProtoTraceReader::ParsePacket: incremental state, sequence defaults,
 * clock snapshots, timestamp conversion, TraceStats, GPU events), then
 * judges the result against thresholds and turns it into violations.
 *
 * Streaming: state is per sequence, per clock and per in-flight GPU
 * submission, never per packet. No glib, so the layer tests can use it. */
#ifndef TK_CHECKS_H
#define TK_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "toolkit/tk_clock_graph.h"
#include "toolkit/tk_stats.h"
#include "toolkit/tk_inflate.h"
#include "toolkit/tk_trace_reader.h"

typedef enum tk_severity {
    TK_SEV_INFO,
    TK_SEV_WARNING,
    TK_SEV_DATA_LOSS,
    TK_SEV_ERROR,
} tk_severity;

const char *tk_severity_name(tk_severity s);

/* Every violation code, with its severity. Documented in docs/toolkit.md. */
#define TK_VIOLATION_LIST(X)                            \
    X(input_error, TK_SEV_ERROR)                        \
    X(import_error, TK_SEV_ERROR)                       \
    X(clock_sync_failure, TK_SEV_ERROR)                 \
    X(invalid_clock_snapshots, TK_SEV_ERROR)            \
    X(trace_clock_change_ignored, TK_SEV_WARNING)       \
    X(clock_unresolvable, TK_SEV_WARNING)               \
    X(clock_non_monotonic, TK_SEV_WARNING)              \
    X(clock_single_snapshot, TK_SEV_WARNING)            \
    X(clock_snapshot_gap, TK_SEV_WARNING)               \
    X(clock_drift_exceeded, TK_SEV_ERROR)               \
    X(clock_error_exceeded, TK_SEV_ERROR)               \
    X(clock_used_before_first_snapshot, TK_SEV_WARNING) \
    X(global_clock_id_not_hashed, TK_SEV_WARNING)       \
    X(global_clock_id_unknown, TK_SEV_WARNING)          \
    X(global_clock_id_mismatch, TK_SEV_ERROR)           \
    X(global_clock_multiple_sequences, TK_SEV_WARNING)  \
    X(buffer_chunks_overwritten, TK_SEV_DATA_LOSS)      \
    X(buffer_chunks_discarded, TK_SEV_DATA_LOSS)        \
    X(buffer_patches_failed, TK_SEV_DATA_LOSS)          \
    X(buffer_abi_violations, TK_SEV_DATA_LOSS)          \
    X(writer_packet_loss, TK_SEV_DATA_LOSS)             \
    X(sequence_packet_loss, TK_SEV_DATA_LOSS)           \
    X(incremental_state_lost, TK_SEV_DATA_LOSS)         \
    X(incremental_state_missing, TK_SEV_ERROR)          \
    X(interned_data_missing, TK_SEV_WARNING)            \
    X(flushes_failed, TK_SEV_DATA_LOSS)                 \
    X(final_flush_failed, TK_SEV_DATA_LOSS)             \
    X(ftrace_overrun, TK_SEV_DATA_LOSS)                 \
    X(ftrace_dropped_events, TK_SEV_DATA_LOSS)          \
    X(ftrace_lost_events, TK_SEV_DATA_LOSS)             \
    X(packets_out_of_order, TK_SEV_WARNING)             \
    X(timestamp_overflow, TK_SEV_ERROR)                 \
    X(no_trace_stats, TK_SEV_DATA_LOSS)                 \
    X(gpu_render_stage_parser_errors, TK_SEV_ERROR)     \
    X(gpu_stage_dropped, TK_SEV_WARNING)                \
    X(gpu_stage_before_submit, TK_SEV_ERROR)            \
    X(gpu_stage_after_submit_window, TK_SEV_WARNING)    \
    X(gpu_events_missing, TK_SEV_ERROR)                 \
    X(state_limit_reached, TK_SEV_WARNING)

typedef enum tk_violation_code {
#define TK_VIOLATION_ENUM(code, sev) TK_V_##code,
    TK_VIOLATION_LIST(TK_VIOLATION_ENUM)
#undef TK_VIOLATION_ENUM
    TK_V_COUNT
} tk_violation_code;

const char *tk_violation_name(tk_violation_code c);
tk_severity tk_violation_severity(tk_violation_code c);

typedef struct tk_violation {
    tk_violation_code code;
    tk_severity severity;
    char *message;
} tk_violation;

/* A clock domain name the user (or, later, our producer) declares:
 * `NAME` alone, or `ID=NAME` to also assert the id it should have. */
typedef struct tk_clock_name {
    bool has_id;
    uint32_t id;
    const char *name;
} tk_clock_name;

/* A recorded conversion uncertainty (e.g. VkCalibratedTimestamps
 * maxDeviation) added to the drift-based error bound of a clock, by the id
 * written in the trace. */
typedef struct tk_clock_deviation {
    uint32_t clock_id;
    int64_t ns;
} tk_clock_deviation;

typedef struct tk_check_options {
    int64_t max_error_ns;          /* <0: no check */
    double max_drift_ppm;          /* <0: no check */
    int64_t max_snapshot_gap_ns;   /* <0: no check */
    int64_t ooo_window_ns;         /* <0: no check */
    int64_t max_submit_latency_ns; /* <0: no check */
    int64_t submit_tolerance_ns;
    int64_t expect_gpu_events; /* <0: no expectation */
    bool allow_loss;           /* data_loss violations do not fail */
    bool fatal_warnings;       /* warnings fail */
    const tk_clock_name *names;
    size_t n_names;
    /* Internal: how many of `names` (at the end) the checker learned from the
     * trace itself; those never make other global clocks "unknown". */
    size_t n_learned_names;
    const tk_clock_deviation *deviations;
    size_t n_deviations;
    size_t max_packet_size;
    /* What compressed_packets may inflate to (tk_inflate_limits_default). */
    tk_inflate_limits inflate_limits;
    size_t block_size;
    uint32_t max_sequences;
    tk_clock_limits clock_limits;
    /* Keep per-clock offset/residual points for --plot. */
    bool keep_plot_points;
    /* For fuzzing: at the end, check the clock graphs' path index against a
     * full search and abort() on a difference. */
    bool self_check;
    /* When set, called for every GPU render stage the import keeps (a
     * gpu_slice row in trace_processor) with its event_id, its time on the
     * trace clock and its submission_id: what --gpu-stages prints, so that
     * the conversion can be compared with trace_processor's gpu_slice.ts. */
    void (*on_gpu_stage)(void *ctx, uint64_t event_id, int64_t ts, uint32_t submission_id);
    void *on_gpu_stage_ctx;
} tk_check_options;

void tk_check_options_default(tk_check_options *o);

typedef struct tk_plot_point {
    int64_t t_ns;        /* trace time of the snapshot */
    int64_t offset_ns;   /* trace time - clock reading */
    int64_t residual_ns; /* offset change since the previous snapshot */
} tk_plot_point;

typedef struct tk_clock_report {
    tk_clock_info info;
    const char *name; /* builtin name or a declared name; may be NULL */
    bool resolvable;
    bool error_known; /* a conversion error bound exists */
    int64_t max_error_ns;
    uint64_t failed_conversions; /* timestamps on this clock that could not be converted */
    tk_plot_point *points;
    size_t n_points;
} tk_clock_report;

typedef struct tk_result {
    bool input_error; /* unreadable/corrupt input: exit status 2 */
    bool aborted;     /* trace_processor would stop importing here */
    uint64_t bytes;
    uint64_t packets;
    uint64_t sequences;
    uint64_t gpu_render_stage_events;
    uint64_t vulkan_api_events;
    uint64_t vk_queue_submits;
    int64_t trace_clock;
    bool has_time_range;
    int64_t first_ts, last_ts;
    tk_clock_report *clocks;
    size_t n_clocks;
    tk_stats stats;
    tk_violation *violations;
    size_t n_violations;
    /* Clock names learned from the trace; clock reports point into these. */
    char **learned_names;
    size_t n_learned_names;
} tk_result;

void tk_result_free(tk_result *r);
/* Worst severity that counts against the verdict under `o`; the verdict is
 * "fail" when this is not TK_SEV_INFO. */
bool tk_result_failed(const tk_result *r, const tk_check_options *o);

typedef struct tk_checker tk_checker;

tk_checker *tk_checker_new(const tk_check_options *o);
void tk_checker_free(tk_checker *c);

/* One TracePacket (payload of a `packet` record). Returns false once the
 * import must stop (corrupt packet, or an error trace_processor treats as
 * fatal); the reason is kept for the result. */
bool tk_checker_packet(tk_checker *c, const uint8_t *data, size_t len, uint64_t offset);
/* Adapter for tk_reader (ctx = tk_checker). */
bool tk_checker_packet_cb(void *ctx, const uint8_t *data, size_t len, uint64_t offset);

/* Records that the input itself could not be read (exit 2). */
void tk_checker_input_error(tk_checker *c, const char *msg);
void tk_checker_set_bytes(tk_checker *c, uint64_t bytes);

/* Computes the verdict material. The checker is consumed. */
tk_result *tk_checker_finish(tk_checker *c);

/* Whole pipeline over an in-memory trace (tests, fuzzing). */
tk_result *tk_check_buffer(const void *data, size_t len, const tk_check_options *o);
/* Whole pipeline over a file descriptor, read in blocks. */
tk_result *tk_check_fd(int fd, const tk_check_options *o, tk_progress_cb progress, void *pctx);

#endif /* TK_CHECKS_H */
