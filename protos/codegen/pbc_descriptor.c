/* SPDX-License-Identifier: MIT */
/* protoc-gen-pbc: arena, string builder, and decoding of the
 * CodeGeneratorRequest (FileDescriptorProto tree) with the pb reader.
 *
 * Every message is read in two passes over the same span: the first picks
 * up the name (nested names depend on it whatever order the fields come in)
 * and counts repeated children so their arrays are allocated once; the
 * second decodes the children. The reader never copies, so a second pass
 * costs one more walk over the tags. */
#include "protos/codegen/pbc_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protos/pb/pb_reader.h"

/* ---- arena --------------------------------------------------------------- */

struct pbc_arena_block {
    pbc_arena_block *next;
    max_align_t data[];
};

static void oom(void)
{
    fputs("protoc-gen-pbc: out of memory\n", stderr);
    exit(1);
}

void *pbc_alloc(pbc_arena *a, size_t size)
{
    pbc_arena_block *b = calloc(1, sizeof *b + (size ? size : 1));
    if (!b)
        oom();
    b->next = a->head;
    a->head = b;
    return b->data;
}

void *pbc_alloc_array(pbc_arena *a, size_t n, size_t elem)
{
    if (elem && n > SIZE_MAX / 2 / elem)
        oom();
    return pbc_alloc(a, n * elem);
}

char *pbc_strndup(pbc_arena *a, const void *data, size_t len)
{
    if (len == SIZE_MAX)
        oom();
    char *s = pbc_alloc(a, len + 1);
    if (len)
        memcpy(s, data, len);
    s[len] = '\0';
    return s;
}

char *pbc_strdup(pbc_arena *a, const char *s)
{
    return pbc_strndup(a, s, strlen(s));
}

void pbc_arena_free(pbc_arena *a)
{
    pbc_arena_block *b = a->head;
    while (b) {
        pbc_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* ---- string builder ------------------------------------------------------ */

static void sb_reserve(pbc_sb *sb, size_t extra)
{
    if (sb->cap - sb->len > extra)
        return;
    size_t cap = sb->cap ? sb->cap : 4096;
    while (cap - sb->len <= extra) {
        if (cap > SIZE_MAX / 2)
            oom();
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p)
        oom();
    sb->data = p;
    sb->cap = cap;
}

void pbc_sb_putn(pbc_sb *sb, const char *s, size_t n)
{
    sb_reserve(sb, n);
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void pbc_sb_puts(pbc_sb *sb, const char *s)
{
    pbc_sb_putn(sb, s, strlen(s));
}

void pbc_sb_vprintf(pbc_sb *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0)
        oom();
    if ((size_t)n < sizeof small) {
        pbc_sb_putn(sb, small, (size_t)n);
    } else {
        sb_reserve(sb, (size_t)n);
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    }
    va_end(ap2);
}

void pbc_sb_printf(pbc_sb *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pbc_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void pbc_sb_free(pbc_sb *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct dec {
    pbc_arena *arena;
    const char *err;
} dec;

/* Field ids of interest are all below this; larger ones are never counted. */
#define MAX_COUNTED_ID 32

static bool fail(dec *d, const char *err)
{
    if (!d->err)
        d->err = err;
    return false;
}

static bool reader_failed(dec *d, const pb_reader *r)
{
    return r->err != PB_OK ? fail(d, pb_error_str(r->err)) : false;
}

/* Counts occurrences of each field id (below MAX_COUNTED_ID) in `r`, which
 * is taken by value so the caller's position does not move. */
static bool count_ids(dec *d, pb_reader r, size_t counts[MAX_COUNTED_ID])
{
    pb_field f;
    memset(counts, 0, MAX_COUNTED_ID * sizeof counts[0]);
    while (pb_reader_next(&r, &f)) {
        if (f.id < MAX_COUNTED_ID)
            counts[f.id]++;
    }
    return !reader_failed(d, &r);
}

static bool want_wire(dec *d, const pb_field *f, enum pb_wire_type wt)
{
    return f->wire_type == wt ? true : fail(d, "descriptor field has an unexpected wire type");
}

static bool get_string(dec *d, const pb_field *f, const char **out)
{
    if (!want_wire(d, f, PB_WIRE_LEN))
        return false;
    if (f->value && memchr(f->data, 0, (size_t)f->value))
        return fail(d, "descriptor string contains a NUL byte");
    *out = pbc_strndup(d->arena, f->data, (size_t)f->value);
    return true;
}

static bool get_int32(dec *d, const pb_field *f, int32_t *out)
{
    if (!want_wire(d, f, PB_WIRE_VARINT))
        return false;
    *out = pb_field_int32(f);
    return true;
}

static bool enter(dec *d, pb_reader *parent, const pb_field *f, pb_reader *child)
{
    if (pb_reader_enter(parent, f, child))
        return true;
    reader_failed(d, parent);
    return false;
}

static const char *join_name(dec *d, const char *scope, const char *name)
{
    if (!scope[0])
        return name;
    size_t a = strlen(scope), b = strlen(name);
    char *s = pbc_alloc(d->arena, a + b + 2);
    memcpy(s, scope, a);
    s[a] = '.';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

static bool decode_enum_value(dec *d, pb_reader *r, pbc_enum_value *v)
{
    pb_field f;
    while (pb_reader_next(r, &f)) {
        bool ok = true;
        if (f.id == ENUMVAL_NAME)
            ok = get_string(d, &f, &v->name);
        else if (f.id == ENUMVAL_NUMBER)
            ok = get_int32(d, &f, &v->number);
        if (!ok)
            return false;
    }
    if (reader_failed(d, r))
        return false;
    return v->name ? true : fail(d, "enum value without a name");
}

static bool decode_enum(dec *d, pb_reader *r, const char *scope, pbc_enum *e)
{
    size_t counts[MAX_COUNTED_ID];
    if (!count_ids(d, *r, counts))
        return false;
    e->values = pbc_alloc_array(d->arena, counts[ENUM_VALUE], sizeof *e->values);
    pb_field f;
    while (pb_reader_next(r, &f)) {
        bool ok = true;
        if (f.id == ENUM_NAME) {
            ok = get_string(d, &f, &e->name);
        } else if (f.id == ENUM_VALUE) {
            pb_reader child;
            ok = enter(d, r, &f, &child) && decode_enum_value(d, &child, &e->values[e->n_values++]);
        }
        if (!ok)
            return false;
    }
    if (reader_failed(d, r))
        return false;
    if (!e->name)
        return fail(d, "enum without a name");
    e->full_name = join_name(d, scope, e->name);
    return true;
}

static bool decode_field_options(dec *d, pb_reader *r, pbc_field *fd)
{
    pb_field f;
    while (pb_reader_next(r, &f)) {
        if (f.id == FIELDOPT_PACKED) {
            if (!want_wire(d, &f, PB_WIRE_VARINT))
                return false;
            fd->packed_option = pb_field_bool(&f) ? 1 : 0;
        }
    }
    return !reader_failed(d, r);
}

static bool decode_field(dec *d, pb_reader *r, pbc_field *fd)
{
    fd->label = LABEL_OPTIONAL;
    fd->packed_option = -1;
    pb_field f;
    while (pb_reader_next(r, &f)) {
        bool ok = true;
        int32_t tmp = 0;
        switch (f.id) {
        case FIELD_NAME:
            ok = get_string(d, &f, &fd->name);
            break;
        case FIELD_NUMBER:
            ok = get_int32(d, &f, &fd->number);
            break;
        case FIELD_LABEL:
            ok = get_int32(d, &f, &fd->label);
            break;
        case FIELD_TYPE:
            ok = get_int32(d, &f, &fd->type);
            break;
        case FIELD_TYPE_NAME:
            ok = get_string(d, &f, &fd->type_name);
            break;
        case FIELD_ONEOF_INDEX:
            ok = get_int32(d, &f, &tmp);
            fd->in_oneof = true;
            break;
        case FIELD_PROTO3_OPTIONAL:
            ok = get_int32(d, &f, &tmp);
            fd->proto3_optional = tmp != 0;
            break;
        case FIELD_OPTIONS: {
            pb_reader child;
            ok = enter(d, r, &f, &child) && decode_field_options(d, &child, fd);
            break;
        }
        default:
            break;
        }
        if (!ok)
            return false;
    }
    if (reader_failed(d, r))
        return false;
    if (!fd->name)
        return fail(d, "field without a name");
    if (fd->type < 1 || fd->type > TYPE_MAX_)
        return fail(d, "field with a missing or unknown type");
    if (fd->label < LABEL_OPTIONAL || fd->label > LABEL_REPEATED)
        return fail(d, "field with an unknown label");
    if ((fd->type == TYPE_MESSAGE || fd->type == TYPE_ENUM || fd->type == TYPE_GROUP) &&
        (!fd->type_name || fd->type_name[0] != '.'))
        return fail(d, "message or enum field without a fully qualified type name");
    return true;
}

/* Reads only the "name" field (id 1) of a message or file span. */
static bool peek_name(dec *d, pb_reader r, uint32_t id, const char **name)
{
    pb_field f;
    while (pb_reader_next(&r, &f)) {
        if (f.id == id && !get_string(d, &f, name))
            return false;
    }
    return !reader_failed(d, &r);
}

static bool decode_message(dec *d, pb_reader *r, const char *scope, pbc_message *m)
{
    size_t counts[MAX_COUNTED_ID];
    if (!count_ids(d, *r, counts) || !peek_name(d, *r, MSG_NAME, &m->name))
        return false;
    if (!m->name)
        return fail(d, "message without a name");
    m->full_name = join_name(d, scope, m->name);
    m->fields = pbc_alloc_array(d->arena, counts[MSG_FIELD], sizeof *m->fields);
    m->nested = pbc_alloc_array(d->arena, counts[MSG_NESTED_TYPE], sizeof *m->nested);
    m->enums = pbc_alloc_array(d->arena, counts[MSG_ENUM_TYPE], sizeof *m->enums);
    pb_field f;
    while (pb_reader_next(r, &f)) {
        pb_reader child;
        bool ok = true;
        switch (f.id) {
        case MSG_FIELD:
            ok = enter(d, r, &f, &child) && decode_field(d, &child, &m->fields[m->n_fields++]);
            break;
        case MSG_NESTED_TYPE:
            ok = enter(d, r, &f, &child) &&
                 decode_message(d, &child, m->full_name, &m->nested[m->n_nested++]);
            break;
        case MSG_ENUM_TYPE:
            ok = enter(d, r, &f, &child) &&
                 decode_enum(d, &child, m->full_name, &m->enums[m->n_enums++]);
            break;
        default:
            break;
        }
        if (!ok)
            return false;
    }
    return !reader_failed(d, r);
}

static bool decode_file(dec *d, pb_reader *r, pbc_file *file)
{
    size_t counts[MAX_COUNTED_ID];
    if (!count_ids(d, *r, counts) || !peek_name(d, *r, FILE_PACKAGE, &file->package))
        return false;
    if (!file->package)
        file->package = "";
    file->syntax = "proto2";
    file->deps = pbc_alloc_array(d->arena, counts[FILE_DEPENDENCY], sizeof *file->deps);
    file->messages = pbc_alloc_array(d->arena, counts[FILE_MESSAGE_TYPE], sizeof *file->messages);
    file->enums = pbc_alloc_array(d->arena, counts[FILE_ENUM_TYPE], sizeof *file->enums);
    pb_field f;
    while (pb_reader_next(r, &f)) {
        pb_reader child;
        bool ok = true;
        switch (f.id) {
        case FILE_NAME:
            ok = get_string(d, &f, &file->name);
            break;
        case FILE_SYNTAX:
            ok = get_string(d, &f, &file->syntax);
            break;
        case FILE_DEPENDENCY:
            ok = get_string(d, &f, &file->deps[file->n_deps++]);
            break;
        case FILE_MESSAGE_TYPE:
            ok = enter(d, r, &f, &child) &&
                 decode_message(d, &child, file->package, &file->messages[file->n_messages++]);
            break;
        case FILE_ENUM_TYPE:
            ok = enter(d, r, &f, &child) &&
                 decode_enum(d, &child, file->package, &file->enums[file->n_enums++]);
            break;
        default:
            break;
        }
        if (!ok)
            return false;
    }
    if (reader_failed(d, r))
        return false;
    if (!file->name)
        return fail(d, "file descriptor without a name");
    if (!file->syntax[0])
        file->syntax = "proto2";
    return true;
}

bool pbc_decode_request(pbc_arena *arena, const uint8_t *data, size_t len, pbc_request *req,
                        const char **err)
{
    dec d = { arena, NULL };
    memset(req, 0, sizeof *req);
    pb_reader r;
    pb_reader_init(&r, data, len);
    size_t counts[MAX_COUNTED_ID];
    bool ok = count_ids(&d, r, counts);
    if (ok) {
        req->to_generate =
            pbc_alloc_array(arena, counts[REQ_FILE_TO_GENERATE], sizeof *req->to_generate);
        req->files = pbc_alloc_array(arena, counts[REQ_PROTO_FILE], sizeof *req->files);
    }
    pb_field f;
    while (ok && pb_reader_next(&r, &f)) {
        pb_reader child;
        switch (f.id) {
        case REQ_FILE_TO_GENERATE:
            ok = get_string(&d, &f, &req->to_generate[req->n_to_generate++]);
            break;
        case REQ_PARAMETER:
            ok = get_string(&d, &f, &req->parameter);
            break;
        case REQ_PROTO_FILE:
            ok = enter(&d, &r, &f, &child) && decode_file(&d, &child, &req->files[req->n_files++]);
            break;
        default:
            break;
        }
    }
    if (ok)
        ok = !reader_failed(&d, &r);
    *err = d.err;
    return ok;
}

char *pbc_header_name(pbc_arena *arena, const char *proto_path)
{
    const char *base = strrchr(proto_path, '/');
    base = base ? base + 1 : proto_path;
    size_t n = strlen(base);
    static const char ext[] = ".proto";
    if (n > sizeof ext - 1 && strcmp(base + n - (sizeof ext - 1), ext) == 0)
        n -= sizeof ext - 1;
    static const char suffix[] = ".pbc.h";
    char *out = pbc_alloc(arena, n + sizeof suffix);
    memcpy(out, base, n);
    memcpy(out + n, suffix, sizeof suffix);
    return out;
}
