/* SPDX-License-Identifier: MIT */
/* trace_file.c — see trace_file.h. */
#include "tests/layer/trace_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/perfetto/trace.pbc.h"

const char *tf_prog = "check";
int tf_failures;

void tf_fail(const char *fmt, ...)
{
    va_list ap;
    if (tf_failures++ < 20) {
        fprintf(stderr, "%s: FAIL: ", tf_prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

void tf_copy_str(char *dst, size_t size, pb_bytes b)
{
    size_t n = b.size < size - 1 ? b.size : size - 1;
    memcpy(dst, b.data, n);
    dst[n] = '\0';
}

uint8_t *tf_read_packets(const char *path, void (*on_packet)(const uint8_t *data, size_t len))
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", tf_prog, path, strerror(errno));
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf || size < 0 || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: %s: cannot read\n", tf_prog, path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    pb_reader r;
    pb_field fld;
    pb_reader_init(&r, buf, (size_t)size);
    while (pb_reader_next(&r, &fld)) {
        if (fld.id == perfetto_protos_Trace_FIELD_packet && fld.wire_type == PB_WIRE_LEN)
            on_packet(fld.data, (size_t)fld.value);
    }
    if (r.err != PB_OK) {
        fprintf(stderr, "%s: %s: malformed trace\n", tf_prog, path);
        free(buf);
        return NULL;
    }
    return buf;
}
