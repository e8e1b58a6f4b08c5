/* SPDX-License-Identifier: MIT */
/* host_waits.h — the application's threads waiting for the GPU
 * (vkWaitForFences, vkWaitSemaphores, vkQueueWaitIdle, vkDeviceWaitIdle)
 * as slices on the waiting thread's track, their end naming the stages
 * waited for (prefix hwait_; flow_sync.h says which).
 *
 * Waits happen on any thread, so each device has one small locked writer
 * per session slot for them, beside the queues' writers. Like those it
 * never waits for the tracing service (shared memory full: the packet is
 * dropped and counted, session.h) and describes the process and each
 * thread it writes for (timeline_context.h), again after its incremental
 * state was cleared.
 */
#ifndef GPUTRACE_LAYER_FLOWS_HOST_WAITS_H
#define GPUTRACE_LAYER_FLOWS_HOST_WAITS_H

#include <stdbool.h>
#include <stdint.h>

#include "layer/alloc.h"

typedef struct hwait_writers hwait_writers;

/* NULL when out of memory: waits are then not written. */
hwait_writers *hwait_create(const gt_allocator *alloc);
/* Releases every writer. */
void hwait_destroy(hwait_writers *hw);

/* A wait from `begin` to `end` (BOOTTIME) on the calling thread, named
 * `api`, for the stages `ids` (may be none): written for every running
 * session that gets the GPU stages. */
void hwait_write(hwait_writers *hw, const char *api, uint64_t begin, uint64_t end,
                 const uint64_t *ids, uint32_t nids);

/* Session callbacks: releases the writers of slots that stopped; `slot`'s
 * incremental state was cleared. */
void hwait_release_stale(hwait_writers *hw);
/* tw_flush_when_quiet() on each writer, under the lock (any thread: the
 * collector, so that a program that stopped waiting gets its last wait
 * slices into the file with their neighbours in time). */
void hwait_flush_quiet(hwait_writers *hw, uint64_t now_ns, uint64_t quiet_ns);
void hwait_clear(hwait_writers *hw, unsigned slot);

#endif
