/* SPDX-License-Identifier: MIT */
/* collector_types.h — the state of one device's collector, shared by the
 * thread's loop (collector.c) and its trace sequence
 * (collector_sequence.c). Data only.
 */
#ifndef GPUTRACE_LAYER_COLLECTOR_TYPES_H
#define GPUTRACE_LAYER_COLLECTOR_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "layer/gpu_clock.h"
#include "layer/label_specs.h"
#include "layer/object_names.h"
#include "layer/snapshot_placement.h"
#include "layer/timeline_device_types.h"
#include "layer/timeline_submission_types.h"
#include "tracing/trace_writer.h"

/* One trace sequence of the device: the collector writes one per running
 * session slot (session.h), each with its own writer, interned state,
 * clock snapshots and loss accounting. */
typedef struct tl_col_seq tl_col_seq;
struct tl_col_seq {
    unsigned slot;
    tw_writer *writer;
    uint32_t writer_gen; /* the slot's generation it was made for */
    bool need_interned;
    uint64_t interned_queues; /* bit per queue slot */
    uint64_t interned_at;     /* MONOTONIC of the last full re-emission */
    uint64_t interned_events; /* events written on it then */
    uint64_t events;          /* render stage events written on it */
    uint64_t lost_seen;
    uint64_t dropped_seen; /* dropped_subs + dropped_frames already reported */
    uint64_t first_snapshot_at, last_snapshot_at; /* MONOTONIC, 0: none yet */
    /* Names (object_names.h) emitted since the incremental state started
    * afresh: every change up to this version. */
    uint64_t names_since;
    /* The newest version (tl_name_item.seq) written on it since its
     * session began: a name no newer is a repeat (emit_names). */
    uint64_t names_written;
    /* Stages named after label texts (label_specs.h); allocated at the
    * first label, emptied with the incremental state. */
    ls_table *labels;
    /* Frame streams whose tracks were described on it in this incremental
     * generation, bit per stream (layer/frames/fr_sequence.c). */
    uint32_t frame_tracks;
};

/* The collector's bulk read (collector.c, read_in_bulk): the results it
 * reads in one pass, and one entry per query chunk they use. */
#define COL_BULK_RESULTS 256u
#define COL_BULK_CHUNKS  512u
typedef struct col_bulk_result {
    tl_result *res;
    uint32_t chunks_left; /* not read yet in this pass */
} col_bulk_result;
typedef struct col_bulk_chunk {
    VkQueryPool pool;
    uint32_t first;  /* the chunk's first query in the pool */
    uint32_t result; /* index into bulk_results */
    uint32_t chunk;  /* index into the recording's chunks */
} col_bulk_chunk;

typedef struct tl_collector tl_collector;
struct tl_collector {
    tl_device *td;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake_cond;
    pthread_cond_t ack_cond;
    tl_submission *head, *tail;
    bool wake, stop, exiting, finished, joined;
    uint32_t release_req, release_ack;
    atomic_uint clear_req; /* bit per session slot asking for interned data */
    /* Work submissions in the list (bounded: see col_backlog_full), and
    * those passed through untimed because it was full. */
    atomic_uint backlog;
    uint32_t max_backlog;
    atomic_uint_fast64_t dropped_subs, dropped_regions;
    /* Frames given up (fr_frames_lost) as the collector last saw them. */
    atomic_uint_fast64_t dropped_frames;
    /* Regions of complete work whose timestamps were not there to read
     * (collector_sequence.c, emit_recording): lost, so counted. */
    atomic_uint_fast64_t unread_regions;

    /* The thread's own. */
    gc_clock clock;
    /* Where the clock's snapshots go (snapshot_placement.h): the model the
     * calibrations feed, what was published, and the latest device end of
     * the GPU events written so far. */
    sp_model clock_model;
    sp_state placement;
    uint64_t written_end;
    bool closing; /* the last calibration, after the last events */
    tl_col_seq seqs[TL_SESSION_SLOTS];
    uint32_t nwriters;         /* seqs with a writer */
    uint64_t quiet_checked_ns; /* seq_flush_quiet's last look (MONOTONIC) */
    uint64_t events_emitted, events_unconverted;
    bool stop_seen;                /* draining: take what calibration there is */
    bool no_stall;                 /* the application waits for us: see never_stall() */
    uint64_t copy_probed_ns;       /* MONOTONIC of the last copy_unseen probe */
    tl_names_snapshot *names_snap; /* the names to emit (collector_sequence.c) */
    col_bulk_result bulk_results[COL_BULK_RESULTS];
    col_bulk_chunk bulk_chunks[COL_BULK_CHUNKS];
    uint64_t bulk_values[2 * TL_CHUNK_QUERIES * TL_CHUNKS_PER_POOL]; /* one run's */
};

#endif
