/* SPDX-License-Identifier: MIT */
/* mem_queue.h — what happened to a device's memory objects since the
 * collector last looked, in order (prefix mq_).
 *
 * While a session wants memory events, each hook appends one record (a
 * copy of the object as it was then) on the application's thread; the
 * device's collector takes whole blocks and encodes them off that thread.
 * Records live in blocks of MQ_BLOCK_RECORDS, reused once encoded; at most
 * MQ_MAX_BLOCKS exist, beyond that a record is dropped and counted (the
 * trace marks the loss). No locks: the device's memory lock guards it.
 */
#ifndef GPUTRACE_LAYER_MEMORY_MEM_QUEUE_H
#define GPUTRACE_LAYER_MEMORY_MEM_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "layer/alloc.h"
#include "layer/memory/mem_table.h"

#define MQ_BLOCK_RECORDS 128u
#define MQ_MAX_BLOCKS    128u /* 16384 records waiting at most */

enum mq_kind {
    MQ_ALLOCATE, /* obj: the new memory */
    MQ_FREE,     /* obj: the memory as it was */
    MQ_CREATE,   /* obj: the new buffer or image */
    MQ_DESTROY,  /* obj: the buffer or image as it was (with its bindings) */
    MQ_BIND,     /* obj: after the bind; `binding` the new one */
    MQ_MAP,      /* obj: the memory; `offset`, `size` mapped */
    MQ_UNMAP,    /* obj: the memory */
    MQ_NAMED,    /* obj: the object; its name is looked up when written */
};

typedef struct mq_record mq_record;
struct mq_record {
    uint64_t ts;         /* CLOCK_BOOTTIME */
    uint8_t kind;        /* enum mq_kind */
    uint8_t api;         /* enum mem_api (mem_device.h) */
    uint8_t object_kind; /* enum mt_kind */
    uint8_t binding;
    uint64_t offset, size;
    mt_object obj;
};

typedef struct mq_block mq_block;
struct mq_block {
    mq_block *next;
    uint64_t first_seq; /* the position of rec[0] */
    uint32_t count;
    mq_record rec[MQ_BLOCK_RECORDS];
};

typedef struct mq_queue mq_queue;
struct mq_queue {
    mq_block *head, *tail; /* oldest, newest (being filled) */
    mq_block *free;
    uint32_t nblocks;  /* allocated, in the queue, free or taken */
    uint64_t next_seq; /* the position the next record gets */
    uint64_t lost;     /* records dropped for want of a block */
};

void mq_init(mq_queue *q);
/* Frees every block (none may be taken). */
void mq_finish(mq_queue *q, const gt_allocator *alloc);

/* Room for the next record, its position in *seq; NULL when it cannot be
 * had (counted in `lost`). *filled: a block became full (the collector may
 * want to know). */
mq_record *mq_push(mq_queue *q, const gt_allocator *alloc, uint64_t *seq, bool *filled);

/* The oldest block, taken out of the queue (the newest one too: the next
 * record starts another), or NULL when empty. Give it back when done. */
mq_block *mq_take(mq_queue *q);
void mq_give_back(mq_queue *q, mq_block *b);

/* Drops every queued record (no session wants them any more). */
void mq_drop_all(mq_queue *q);

#endif
