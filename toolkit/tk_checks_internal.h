/* SPDX-License-Identifier: MIT */
/* What the checker's modules share: the import (tk_import*.c: what
 * trace_processor does with each packet), GPU stage/submission matching
 * (tk_match.c) and the verdict (tk_verdict*.c: findings from what was
 * imported). Not part of the library's interface (tk_checks.h). */
#ifndef TK_CHECKS_INTERNAL_H
#define TK_CHECKS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_checks.h"
#include "toolkit/tk_map.h"

#define TK_SUBMIT_SLOTS         (1u << 14)
#define TK_MAX_MACHINES         64
#define TK_MAX_INTERNED_PER_SEQ (1u << 16)
#define TK_MAX_FAILED_CLOCKS    4096

/* ---- state -------------------------------------------------------------------- */

/* Interned ids of one kind on one sequence, with the two most recent hits
 * in front (GPU events look up the same few ids over and over). */
typedef struct tk_iid_set {
    tk_map map;
    bool full; /* over TK_MAX_INTERNED_PER_SEQ: lookups answer "known" */
    uint8_t n_recent;
    uint64_t recent[2];
} tk_iid_set;

typedef struct tk_seq_state {
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
    /* Packets with SEQ_NEEDS_INCREMENTAL_STATE, and those of them skipped
     * (v58: a sequence that lost them all is counted per buffer). */
    uint64_t needs_state, needs_state_skipped;
    /* Interned ids of the current generation. */
    tk_iid_set specs, contexts;
} tk_seq_state;

typedef struct tk_failed_clock {
    int64_t id;
    uint64_t count;
} tk_failed_clock;

typedef struct tk_machine {
    uint32_t id;
    tk_clock_graph *g;
    tk_map seq_index;
    tk_seq_state *seqs;
    uint32_t n_seqs, cap_seqs;
    /* The few sequences being interleaved right now (index + 1; 0 = none). */
    uint32_t recent_id[4];
    uint32_t recent_idx[4];
    uint32_t recent_next;
    tk_seq_state overflow;
    int64_t latest_ts;
    bool has_pushed;
    int64_t max_pushed_ts;
    /* Clocks of timestamps that could not be converted, in order of first
     * failure (reports must not depend on hash order), found by id through
     * failed_index. */
    tk_failed_clock *failed;
    uint32_t n_failed, cap_failed;
    uint64_t failed_unlisted; /* failures beyond TK_MAX_FAILED_CLOCKS clocks */
    tk_map failed_index;
    tk_map ftrace_error_seqs;
} tk_machine;

typedef struct tk_submit_slot {
    uint32_t id;
    uint32_t gpu_count;
    int64_t submit_ts, submit_end;
    int64_t gpu_min, gpu_max;
    uint8_t state; /* bit 0: submit seen, bit 1: GPU stage(s) seen */
} tk_submit_slot;

/* A global clock that describes itself in the trace: our layer writes
 * `clock_domain=NAME clock_id=0xID deviation_ns=N` into the description of
 * each interned hardware queue (docs/layer.md), so the checker can verify
 * the id against FNV-1a(NAME) | 0x80000000 and use the recorded deviation
 * in the error bound without being told. */
#define TK_MAX_LEARNED_CLOCKS 64
typedef struct tk_learned_clock {
    char *name;
    size_t name_len;
    uint64_t name_hash; /* compared before the name itself */
    uint32_t id;
    bool has_id;
    int64_t deviation_ns;
} tk_learned_clock;

struct tk_checker {
    tk_check_options o;
    tk_learned_clock learned[TK_MAX_LEARNED_CLOCKS];
    size_t n_learned;
    tk_stats st;
    tk_machine *m;
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

    tk_submit_slot *subs;

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

/* ---- import (tk_import.c, tk_import_payloads.c) ---- */

/* Stops the import with a reason kept for the result; the first reason
 * wins. `input_error`: the input itself is broken (exit 2). */
void tk_import_stop(tk_checker *c, bool input_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tk_import_defaults(tk_seq_state *s, pb_bytes b);
void tk_import_interned(tk_checker *c, tk_seq_state *s, pb_bytes b);
void tk_import_clock_snapshot(tk_checker *c, tk_machine *m, pb_bytes b, uint32_t seq_id,
                              uint64_t offset);
void tk_import_trace_stats(tk_checker *c, tk_machine *m, pb_bytes b);
void tk_import_ftrace_stats(tk_checker *c, tk_machine *m, pb_bytes b, uint32_t seq_id);
/* False when trace_processor would stop importing (the import is stopped). */
bool tk_import_ftrace_bundle(tk_checker *c, pb_bytes b, uint64_t offset);

/* InternedData lookup as trace_processor's LookupInternedMessage: a miss
 * counts interned_data_tokenizer_errors. A full set answers "known". */
static PB_ALWAYS_INLINE bool tk_import_lookup_interned(tk_checker *c, tk_iid_set *set, uint64_t iid)
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

/* ---- GPU stages against their submissions (tk_match.c) ---- */

void tk_match_gpu_stage(tk_checker *c, tk_seq_state *s, pb_bytes b, int64_t ts);
void tk_match_vulkan_api_event(tk_checker *c, pb_bytes b, int64_t ts);
/* At the end: stages still waiting for their submission count as unmatched. */
void tk_match_finish(tk_checker *c);

/* ---- verdict (tk_verdict.c, tk_verdict_clocks.c) ---- */

/* The violations found so far, in the order they are reported. */
typedef struct tk_vlist {
    tk_violation *v;
    size_t n, cap;
} tk_vlist;

void tk_verdict_add(tk_vlist *l, tk_violation_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Per-clock reports of machine `m` into `res`, and the clock violations. */
void tk_verdict_clocks(tk_checker *c, tk_machine *m, tk_vlist *vl, tk_result *res);

#endif /* TK_CHECKS_INTERNAL_H */
