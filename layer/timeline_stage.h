/* SPDX-License-Identifier: MIT */
/* timeline_stage.h — the render stages the timing feature reports (the
 * trace's "gpu_specifications") and the interning ids built from them.
 * Data only; shared by the recording code, the collector and emit.c.
 */
#ifndef GPUTRACE_LAYER_TIMELINE_STAGE_H
#define GPUTRACE_LAYER_TIMELINE_STAGE_H

#include <stdint.h>

/* hw_queue_iid = TL_QUEUE_IID_BASE + queue slot; stage_iid = enum tl_stage. */
#define TL_QUEUE_IID_BASE 64u

/* Render stages ("gpu_specifications" of the trace). */
enum tl_stage {
    TL_STAGE_EXECUTE = 0, /* internal marker: vkCmdExecuteCommands, not emitted */
    TL_STAGE_COMMAND_BUFFER,
    TL_STAGE_RENDER_PASS,
    TL_STAGE_RENDERING,
    TL_STAGE_DISPATCH,
    TL_STAGE_COPY,
    TL_STAGE_BLIT,
    TL_STAGE_RESOLVE,
    TL_STAGE_CLEAR,
    TL_STAGE_FILL,
    TL_STAGE_UPDATE,
    TL_STAGE_LABEL,
    TL_STAGE_SUBMISSION,
    TL_STAGE_COUNT,
};

#endif
