/* SPDX-License-Identifier: MIT */
/* trace_file.h — what the trace checkers of tests/layer (trace_check,
 * context_check) share (prefix tf_): reading a .pftrace and walking its
 * packets, copying a string field, and reporting failures under the
 * program's name.
 */
#ifndef GPUTRACE_TESTS_LAYER_TRACE_FILE_H
#define GPUTRACE_TESTS_LAYER_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_reader.h"

/* The program's name, before every message; set by main(). */
extern const char *tf_prog;
/* How many tf_fail() calls there were. */
extern int tf_failures;

/* Reports one failed check (the first 20 are printed, all counted). */
void tf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Copies `b` into `dst` as a NUL-terminated string, cut to fit. */
void tf_copy_str(char *dst, size_t size, pb_bytes b);

/* Reads the trace at `path` and calls `on_packet` for every Trace.packet,
 * in file order. Returns the file's bytes (the packets point into them;
 * the caller frees them), or NULL after printing why it cannot be read. */
uint8_t *tf_read_packets(const char *path, void (*on_packet)(const uint8_t *data, size_t len));

#endif
