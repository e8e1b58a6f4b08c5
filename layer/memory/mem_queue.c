/* SPDX-License-Identifier: MIT */
/* mem_queue.c — see mem_queue.h. */
#include "layer/memory/mem_queue.h"

#include <string.h>

void mq_init(mq_queue *q)
{
    memset(q, 0, sizeof *q);
    q->next_seq = 1;
}

static void free_list(const gt_allocator *alloc, mq_block *b)
{
    while (b) {
        mq_block *next = b->next;
        gt_free(alloc, b);
        b = next;
    }
}

void mq_finish(mq_queue *q, const gt_allocator *alloc)
{
    free_list(alloc, q->head);
    free_list(alloc, q->free);
    q->head = q->tail = q->free = NULL;
    q->nblocks = 0;
}

static mq_block *new_block(mq_queue *q, const gt_allocator *alloc)
{
    mq_block *b = q->free;
    if (b) {
        q->free = b->next;
    } else {
        if (q->nblocks >= MQ_MAX_BLOCKS)
            return NULL;
        b = gt_zalloc(alloc, sizeof *b, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
        if (!b)
            return NULL;
        q->nblocks++;
    }
    b->next = NULL;
    b->count = 0;
    b->first_seq = q->next_seq;
    return b;
}

mq_record *mq_push(mq_queue *q, const gt_allocator *alloc, uint64_t *seq, bool *filled)
{
    *filled = false;
    mq_block *b = q->tail;
    if (!b || b->count == MQ_BLOCK_RECORDS) {
        b = new_block(q, alloc);
        if (!b) {
            q->lost++;
            return NULL;
        }
        if (q->tail)
            q->tail->next = b;
        else
            q->head = b;
        q->tail = b;
    }
    *seq = q->next_seq++;
    mq_record *r = &b->rec[b->count++];
    *filled = b->count == MQ_BLOCK_RECORDS;
    return r;
}

mq_block *mq_take(mq_queue *q)
{
    mq_block *b = q->head;
    if (!b || !b->count)
        return NULL;
    q->head = b->next;
    if (q->tail == b)
        q->tail = NULL;
    b->next = NULL;
    return b;
}

void mq_give_back(mq_queue *q, mq_block *b)
{
    b->next = q->free;
    q->free = b;
}

void mq_drop_all(mq_queue *q)
{
    mq_block *b;
    while ((b = mq_take(q)))
        mq_give_back(q, b);
}
