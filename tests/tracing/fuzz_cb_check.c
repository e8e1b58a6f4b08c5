/* SPDX-License-Identifier: MIT */
#include "tests/tracing/fuzz_cb_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"
#include "protos/perfetto/trace_packet.pbc.h"

void fuzz_cb_check_packet(const cb_packet *pkt)
{
    uint8_t *flat = malloc(pkt->size ? pkt->size : 1);
    if (!flat)
        abort();
    size_t off = 0;
    for (size_t i = 0; i < pkt->num_slices; i++) {
        memcpy(flat + off, pkt->slices[i].data, pkt->slices[i].size);
        off += pkt->slices[i].size;
    }
    if (off != pkt->size || pkt->size == 0 || pb_validate(flat, off) != PB_OK)
        abort();
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, flat, off);
    while (pb_reader_next(&r, &f)) {
        if (f.id == perfetto_protos_TracePacket_FIELD_trusted_uid ||
            f.id == perfetto_protos_TracePacket_FIELD_trusted_packet_sequence_id ||
            f.id == perfetto_protos_TracePacket_FIELD_trusted_pid)
            abort();
    }
    free(flat);
}

void fuzz_cb_read_all(cb_buffer *cb, bool final_read)
{
    cb_packet pkt;
    cb_begin_read(cb, final_read);
    while (cb_read_next(cb, &pkt))
        fuzz_cb_check_packet(&pkt);
}
