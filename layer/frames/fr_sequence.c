/* SPDX-License-Identifier: MIT */
/* fr_sequence.c — see fr_sequence.h. */
#include "layer/frames/fr_sequence.h"

#include <inttypes.h>

#include "layer/collector_sequence.h"
#include "layer/emit_context.h"
#include "layer/frames/fr_emit.h"
#include "layer/frames/fr_frames.h"
#include "layer/log.h"
#include "layer/process_info.h"

/* Frames taken from the device per round. */
#define FR_SEQ_BATCH 16u

static void write_on(tl_col_seq *s, const fr_record *recs, uint32_t n)
{
    const pi_process *p = pi_process_get();
    for (uint32_t k = 0; k < n; k++) {
        const fr_record *r = &recs[k];
        const uint32_t bit = r->stream < 32 ? 1u << r->stream : 0;
        if (!(s->frame_tracks & bit)) {
            if (!s->frame_tracks)
                emc_process_track(s->writer, r->start_ns, p->uuid, p->pid, p->name, p->cmdline,
                                  p->cmdline_len, false);
            fr_emit_tracks(s->writer, r->start_ns, p->uuid, r);
            s->frame_tracks |= bit;
        }
        fr_emit_frame(s->writer, p->uuid, r);
    }
}

void fr_seq_write(tl_collector *col, bool all)
{
    fr_device *fd = col->td->frames;
    if (!fd)
        return;
    /* Frames given up since the last look: the frames written next follow
     * a gap, which the sequence's next packet says (previous_packet_dropped,
     * as for submissions left untimed). */
    const uint64_t lost = fr_frames_lost(fd);
    if (lost != atomic_load(&col->dropped_frames)) {
        atomic_store(&col->dropped_frames, lost);
        if (atomic_load(&col->td->nqueues))
            seq_ensure_interned(col, col->td->queues[0]);
    }
    fr_record recs[FR_SEQ_BATCH];
    for (;;) {
        const uint32_t n = fr_take_ready(fd, recs, FR_SEQ_BATCH, all);
        for (unsigned i = 0; i < TL_SESSION_SLOTS && n && col->nwriters; i++)
            if (col->seqs[i].writer)
                write_on(&col->seqs[i], recs, n);
        if (n < FR_SEQ_BATCH)
            return;
    }
}

void fr_seq_report_loss(tl_collector *col)
{
    const uint64_t lost = fr_frames_lost(col->td->frames);
    if (lost)
        gt_warn("gpu %u: %" PRIu64 " frames were given up unwritten: the collector was %u "
                "frames behind them",
                col->td->gpu_id, lost, FR_RING_MAX);
}
