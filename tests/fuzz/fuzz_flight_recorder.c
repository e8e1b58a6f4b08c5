/* SPDX-License-Identifier: MIT */
/* Fuzz target: the flight recorder's parsing and windows
 * (tracing/flight_recorder.c) and the trigger texts (tracing/trigger.c).
 *
 * Input: a stream of records, each [sequence byte][time step byte]
 * [length, 2 bytes LE][bytes], appended to a 64 KiB recorder (so it evicts
 * and wraps), then windows from several times written to a sink; the whole
 * input also as one record (its kind), as a window file pattern and as a
 * trigger text. A window never holds more records than the ring, every
 * record it hands over is one that went in, and a file name fits its
 * buffer with its number in it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracing/flight_recorder.h"
#include "tracing/trigger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct sink_state {
    size_t records;
} sink_state;

static void sink(void *ctx, const uint8_t *bytes, const struct svc_out_record *records, size_t n)
{
    sink_state *s = ctx;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (records[i].end < start)
            abort();
        (void)flr_record_kind(bytes + start, records[i].end - start);
        start = records[i].end;
    }
    s->records += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    flr_recorder *r = flr_create(64 * 1024);
    if (!r)
        return 0;
    uint64_t now = 1;
    size_t at = 0, appended = 0;
    while (at + 4 <= size) {
        const uint32_t seq = data[at];
        now += data[at + 1];
        const size_t len = (size_t)data[at + 2] | (size_t)data[at + 3] << 8;
        at += 4;
        const size_t take = len < size - at ? len : size - at;
        const struct svc_out_record rec = { take, seq };
        flr_append(r, data + at, &rec, 1, now);
        appended++;
        at += take;
    }
    flr_stats st;
    flr_get_stats(r, &st);
    if (st.records + st.evicted + st.too_large + st.empty != appended || st.bytes > 64 * 1024)
        abort();
    const uint64_t froms[] = { 0, now / 2, now, now + 1 };
    for (size_t i = 0; i < sizeof froms / sizeof froms[0]; i++) {
        sink_state s = { 0 };
        svc_out out;
        svc_out_init_sink(&out, sink, &s);
        const size_t n = flr_write_window(r, &out, froms[i], 1);
        svc_out_close(&out);
        if (n != s.records || n > st.records)
            abort();
    }
    flr_destroy(r);

    (void)flr_record_kind(data, size);
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char path[256];
    if (flr_window_path(text, 42, path, sizeof path)) {
        if (strlen(path) >= sizeof path || !strstr(path, "42"))
            abort();
    }
    trg_spec spec;
    const char *why = NULL;
    if (trg_parse(text, &spec, &why)) {
        if (spec.kind == TRG_FILE && (!spec.path[0] || strlen(spec.path) >= TRG_PATH_MAX))
            abort();
        if (spec.kind != TRG_FILE && spec.kind != TRG_SIGNAL)
            abort();
    } else if (!why) {
        abort();
    }
    free(text);
    return 0;
}
