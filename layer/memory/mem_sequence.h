/* SPDX-License-Identifier: MIT */
/* mem_sequence.h — a device's memory events on the trace, written by its
 * collector thread (prefix msq_): one sequence (writer) per running session
 * that wants them (session.h), apart from the collector's GPU sequences so
 * that their incremental states never clear each other's.
 *
 * A sequence begins with its interned data (function names, annotation
 * keys), the process's track and the heaps' counter tracks, then a snapshot
 * of every memory object alive (events marked before_session, at the
 * snapshot's time), so its totals add up from the first packet; then the
 * records the application's threads queued since (mem_queue.h), each as
 * one or more VulkanMemoryEvents and the changed heap totals. With
 * VK_EXT_memory_budget the driver's budget and usage per heap are sampled
 * too (at most every 250 ms while events come).
 */
#ifndef GPUTRACE_LAYER_MEMORY_MEM_SEQUENCE_H
#define GPUTRACE_LAYER_MEMORY_MEM_SEQUENCE_H

#include <stdbool.h>

#include "layer/memory/mem_device.h"

/* The collector of the device: `wake(ctx)` is called (under the memory
 * lock, from an application thread) when a block of records filled up.
 * Detach before the collector goes. */
void msq_attach(mem_device *md, void (*wake)(void *ctx), void *ctx);
void msq_detach(mem_device *md);

/* Follows the sessions (a sequence with its snapshot for each new one) and
 * writes what is queued. Cheap when nothing changed. Collector thread. */
void msq_serve(mem_device *md);
/* Writes what is queued, then gives back the writers of sessions that
 * stopped / of every session. Collector thread. */
void msq_release_stale(mem_device *md);
/* As seq_flush_quiet (collector_sequence.h), for the memory sequences.
 * Collector thread. */
void msq_flush_quiet(mem_device *md, uint64_t now_ns, uint64_t quiet_ns);
void msq_release_all(mem_device *md);
/* The session in `slot` asked for its interned data again (any thread). */
void msq_clear_incremental_state(mem_device *md, unsigned slot);
/* Frees what the sequences allocated (the collector has ended). */
void msq_finish(mem_device *md);

#endif
