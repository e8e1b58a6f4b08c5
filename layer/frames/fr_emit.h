/* SPDX-License-Identifier: MIT */
/* fr_emit.h — the frames' packets (prefix fr_emit_): per stream, a frames
 * track and two counter tracks under the application's process track, and
 * per frame a slice on the former and a value on each of the latter.
 *
 * Tracks (TrackDescriptor, parent = the process track): "Frames", "GPU
 * frame time" and "frame interval", with " #N" after the names of the
 * process's N-th stream from the second on, so no two tracks of a process
 * share a name (the v58 UI would draw them as one; sibling merging is also
 * switched off). The counters are in milliseconds (double values,
 * unit_name "ms"). A frame is a slice "Frame N" from its start to its end
 * (BOOTTIME), its END written right after its BEGIN, so the next frame's
 * BEGIN at the same instant comes after it in the sequence; its arguments
 * (debug annotations on the BEGIN, docs/layer.md "Frames"): frame_number,
 * swapchain, image_index, present_mode, image_count, frame_id (frame
 * boundary), submissions, and when its GPU work came back gpu_time_ns and
 * gpu_busy_ns (incomplete = 1 when written before all of it did). The
 * counter values go at the frame's start: "GPU frame time" for frames with
 * GPU work, "frame interval" (present to present) from the second frame.
 *
 * Pure encoding, like emit.h: no locks, the caller owns the writer.
 */
#ifndef GPUTRACE_LAYER_FRAMES_FR_EMIT_H
#define GPUTRACE_LAYER_FRAMES_FR_EMIT_H

#include <stdint.h>

#include "layer/frames/fr_frames.h"
#include "tracing/trace_writer.h"

/* The three tracks of one stream, below the process track `process_uuid`. */
void fr_emit_tracks(tw_writer *tw, uint64_t timestamp, uint64_t process_uuid, const fr_record *r);

/* One frame: its slice and counter values. */
void fr_emit_frame(tw_writer *tw, uint64_t process_uuid, const fr_record *r);

/* The uuids of a stream's tracks (0 frames, 1 GPU frame time, 2 frame
 * interval): derived from the process track's, so every process's differ. */
uint64_t fr_emit_track_uuid(uint64_t process_uuid, uint32_t process_stream, unsigned which);

#endif
