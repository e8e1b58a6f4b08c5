/* SPDX-License-Identifier: MIT */
/* fr_sequence.c — see fr_sequence.h. */
#include "layer/frames/fr_sequence.h"

#include "layer/emit_context.h"
#include "layer/frames/fr_emit.h"
#include "layer/frames/fr_frames.h"
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
