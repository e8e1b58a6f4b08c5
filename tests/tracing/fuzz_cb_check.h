/* SPDX-License-Identifier: MIT */
/* What the central buffer's fuzz targets (tests/tracing/fuzz_chunk_parser,
 * tests/fuzz/fuzz_service_commit) demand of every packet read out of it,
 * however hostile the producer: a non-empty, well-formed protobuf message
 * without the fields only the service may set. A violation aborts, which
 * is what the fuzzer reports. */
#ifndef FUZZ_CB_CHECK_H
#define FUZZ_CB_CHECK_H

#include <stdbool.h>

#include "tracing/trace_buffer.h"

/* Aborts unless `pkt` (all its slices together) passes. */
void fuzz_cb_check_packet(const cb_packet *pkt);

/* One read pass over `cb`, every packet checked. */
void fuzz_cb_read_all(cb_buffer *cb, bool final_read);

#endif
