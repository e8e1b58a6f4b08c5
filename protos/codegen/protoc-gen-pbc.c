/* SPDX-License-Identifier: MIT */
/* protoc-gen-pbc: protoc plugin emitting header-only C for our pb library.
 *
 *   protoc --plugin=protoc-gen-pbc=PATH --pbc_out=DIR -I ROOT a/b/x.proto ...
 *
 * writes DIR/x.pbc.h for every file named on the command line (flat: only
 * the basename is kept, so basenames must be unique per invocation). The
 * request is decoded with pb_reader and the response encoded with pb_heap:
 * the plugin is built from the same library it generates code for.
 *
 * Problems with the schema (unsupported constructs, C name collisions) are
 * reported through CodeGeneratorResponse.error, which protoc prints; a
 * malformed request is an internal error: message on stderr, exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_heap.h"
#include "protos/codegen/pbc_model.h"

static uint8_t *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            uint8_t *p = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!p) {
                free(buf);
                return NULL;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

typedef struct output {
    const char *name;
    pbc_sb content;
} output;

static const pbc_file *find_file(const pbc_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_files; i++) {
        if (strcmp(req->files[i].name, name) == 0)
            return &req->files[i];
    }
    return NULL;
}

/* Generates every requested header into `outs` (req->n_to_generate
 * entries, in command-line order). Dependencies are generated too, into a
 * scratch buffer, so that identifier collisions across the headers a
 * translation unit can end up including together are caught here. */
static const char *generate(pbc_arena *arena, const pbc_request *req, output *outs)
{
    for (size_t i = 0; i < req->n_to_generate; i++) {
        if (!find_file(req, req->to_generate[i]))
            return "a file to generate has no descriptor in the request";
        outs[i].name = pbc_header_name(arena, req->to_generate[i]);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(outs[i].name, outs[j].name) == 0) {
                pbc_sb sb = { 0 };
                pbc_sb_printf(&sb,
                              "%s and %s would both generate %s (outputs are flat: basenames "
                              "must be unique)",
                              req->to_generate[j], req->to_generate[i], outs[i].name);
                char *msg = pbc_strdup(arena, sb.data);
                pbc_sb_free(&sb);
                return msg;
            }
        }
    }

    pbc_ident_log log = { 0 };
    const char *err = NULL;
    for (size_t i = 0; i < req->n_files && !err; i++) {
        const pbc_file *file = &req->files[i];
        output *dst = NULL;
        for (size_t j = 0; j < req->n_to_generate && !dst; j++) {
            if (strcmp(req->to_generate[j], file->name) == 0)
                dst = &outs[j];
        }
        pbc_sb scratch = { 0 };
        pbc_emit_header(arena, file, &log, dst ? &dst->content : &scratch, &err);
        pbc_sb_free(&scratch);
    }
    if (!err)
        err = pbc_ident_check(arena, &log);
    pbc_ident_free(&log);
    return err;
}

static bool write_response(const char *error, const output *outs, size_t n_outs)
{
    pb_heap_buffer h;
    pb_heap_init(&h, 1 << 16);
    pb_msg resp;
    pb_msg_init_root(&resp, pb_heap_stream(&h));
    /* Only the flattening of proto3 optional into plain optional fields is
     * needed to support it: presence is tracked for every singular field. */
    pb_msg_append_varint(&resp, RESP_SUPPORTED_FEATURES, FEATURE_PROTO3_OPTIONAL);
    if (error) {
        pb_msg_append_string(&resp, RESP_ERROR, error);
    } else {
        for (size_t i = 0; i < n_outs; i++) {
            pb_msg file;
            pb_msg_begin_nested(&resp, RESP_FILE, &file);
            pb_msg_append_string(&file, RESP_FILE_NAME, outs[i].name);
            pb_msg_append_bytes(&file, RESP_FILE_CONTENT, outs[i].content.data,
                                outs[i].content.len);
            pb_msg_end(&file);
        }
    }
    pb_msg_end(&resp);

    size_t len = 0;
    uint8_t *data = h.out_of_memory ? NULL : pb_heap_dup(&h, &len);
    pb_heap_free(&h);
    if (!data) {
        fputs("protoc-gen-pbc: out of memory\n", stderr);
        return false;
    }
    bool ok = fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0;
    free(data);
    if (!ok)
        fputs("protoc-gen-pbc: cannot write the response to stdout\n", stderr);
    return ok;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fputs("protoc-gen-pbc is a protoc plugin: run it through\n"
              "  protoc --plugin=protoc-gen-pbc=<path> --pbc_out=<dir> -I <root> <file.proto>...\n",
              stderr);
        return 2;
    }
    size_t len = 0;
    uint8_t *input = read_all(stdin, &len);
    if (!input) {
        fputs("protoc-gen-pbc: cannot read the request from stdin\n", stderr);
        return 1;
    }

    pbc_arena arena = { 0 };
    pbc_request req;
    const char *err = NULL;
    int status = 0;
    if (!pbc_decode_request(&arena, input, len, &req, &err)) {
        fprintf(stderr, "protoc-gen-pbc: malformed CodeGeneratorRequest: %s\n",
                err ? err : "unknown error");
        status = 1;
    } else {
        output *outs = pbc_alloc_array(&arena, req.n_to_generate, sizeof *outs);
        const char *gen_err = generate(&arena, &req, outs);
        for (size_t i = 0; i < req.n_to_generate && !gen_err; i++) {
            if (outs[i].content.len > PB_MAX_NESTED_SIZE / 2)
                gen_err = "generated header too large for a CodeGeneratorResponse";
        }
        if (!write_response(gen_err, outs, req.n_to_generate))
            status = 1;
        for (size_t i = 0; i < req.n_to_generate; i++)
            pbc_sb_free(&outs[i].content);
    }
    pbc_arena_free(&arena);
    free(input);
    return status;
}
