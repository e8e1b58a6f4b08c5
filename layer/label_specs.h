/* SPDX-License-Identifier: MIT */
/* label_specs.h — render stages named after debug labels, one table per
 * trace sequence (prefix ls_).
 *
 * trace_processor v47 names a GPU slice only after its stage
 * specification (InternedData.gpu_specifications, looked up by stage_iid),
 * not after GpuRenderStageEvent.name. So each distinct label text of a
 * sequence gets a stage of its own, named after the text, and its events
 * carry that stage's iid. The table says which iid a text has and whether
 * its specification still has to be written; it is emptied whenever the
 * sequence's incremental state starts afresh (the iids are then handed out
 * again). Bounded: past LS_MAX_LABELS texts or LS_MAX_BYTES of text,
 * ls_intern answers 0 and the caller falls back to the generic "Debug
 * label" stage. No locks, no allocation: the collector's thread owns it.
 */
#ifndef GPUTRACE_LAYER_LABEL_SPECS_H
#define GPUTRACE_LAYER_LABEL_SPECS_H

#include <stdbool.h>
#include <stdint.h>

/* Label stage iids: LS_IID_BASE + n. Disjoint from the fixed stages
 * (enum tl_stage, 1..) and the queues (TL_QUEUE_IID_BASE + slot, 64..127). */
#define LS_IID_BASE   1024u
#define LS_MAX_LABELS 256u
#define LS_MAX_BYTES  (16u * 1024u) /* label text, terminating NULs included */
#define LS_SLOTS      (2u * LS_MAX_LABELS)

typedef struct ls_table ls_table;
struct ls_table {
    uint32_t count, used;
    uint32_t hash[LS_SLOTS];
    uint16_t index[LS_SLOTS]; /* label number + 1; 0: empty slot */
    uint32_t offset[LS_MAX_LABELS];
    char text[LS_MAX_BYTES];
};

/* Forgets every label (a new incremental generation). */
void ls_reset(ls_table *t);

/* The stage iid of `text`; `*fresh` tells whether it was just added (its
 * specification must be written before the first event using it). 0 when
 * the table is full or `text` is NULL. */
uint64_t ls_intern(ls_table *t, const char *text, bool *fresh);

#endif
