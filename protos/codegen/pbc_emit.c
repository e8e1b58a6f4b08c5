/* SPDX-License-Identifier: MIT */
/* protoc-gen-pbc: turns one decoded .proto file into a header-only C API
 * (writer over pb_writer.h, zero-copy view decoder over pb_reader.h).
 *
 * Layout of a generated header:
 *   banner, include guard, includes (pb + one per import)
 *   shared inline helpers (guarded, so several headers can coexist)
 *   every enum of the file (top level, then nested, in declaration order)
 *   every message's writer struct (all up front: setters reference children
 *   that may be declared later in the file)
 *   per message: field-number constants, writer functions, view, decoder.
 *
 * Every global C identifier the header defines is recorded (see
 * pbc_ident_log, pbc_ident.c) so the driver can reject schemas whose names
 * collide once flattened with '_' (e.g. message A.B_C vs A_B.C). */
#include "protos/codegen/pbc_model.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- naming -------------------------------------------------------------- */

/* Identifiers a field name must not be used as verbatim: C17 keywords, the
 * C23 ones, and object-like macros of headers a user is likely to include
 * alongside ours (stdbool, errno, complex, GNU predefines). */
static const char *const reserved_words[] = { "_Alignas",
                                              "_Alignof",
                                              "_Atomic",
                                              "_BitInt",
                                              "_Bool",
                                              "_Complex",
                                              "_Decimal128",
                                              "_Decimal32",
                                              "_Decimal64",
                                              "_Generic",
                                              "_Imaginary",
                                              "_Noreturn",
                                              "_Static_assert",
                                              "_Thread_local",
                                              "alignas",
                                              "alignof",
                                              "auto",
                                              "bool",
                                              "break",
                                              "case",
                                              "char",
                                              "complex",
                                              "const",
                                              "constexpr",
                                              "continue",
                                              "default",
                                              "do",
                                              "double",
                                              "else",
                                              "enum",
                                              "errno",
                                              "extern",
                                              "false",
                                              "float",
                                              "for",
                                              "goto",
                                              "if",
                                              "imaginary",
                                              "inline",
                                              "int",
                                              "linux",
                                              "long",
                                              "noreturn",
                                              "nullptr",
                                              "register",
                                              "restrict",
                                              "return",
                                              "short",
                                              "signed",
                                              "sizeof",
                                              "static",
                                              "static_assert",
                                              "struct",
                                              "switch",
                                              "thread_local",
                                              "true",
                                              "typedef",
                                              "typeof",
                                              "typeof_unqual",
                                              "union",
                                              "unix",
                                              "unsigned",
                                              "void",
                                              "volatile",
                                              "while" };

static bool is_reserved(const char *s)
{
    size_t lo = 0, hi = sizeof reserved_words / sizeof reserved_words[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(s, reserved_words[mid]);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/* A C identifier, or with `dotted` a '.'-separated sequence of them (an
 * optional leading '.' included). protoc only sends such names; checking
 * keeps a corrupt request from producing a header that does not parse. */
static bool valid_name(const char *s, bool dotted)
{
    if (dotted && *s == '.')
        s++;
    for (;;) {
        if (!ident_start(*s))
            return false;
        while (ident_char(*s))
            s++;
        if (*s == '\0')
            return true;
        if (!dotted || *s != '.')
            return false;
        s++;
    }
}

/* "pkg.Outer.Name" (or ".pkg.Outer.Name") -> "pkg_Outer_Name". */
static char *c_name(pbc_arena *a, const char *full)
{
    if (full[0] == '.')
        full++;
    char *s = pbc_strdup(a, full);
    for (char *p = s; *p; p++) {
        if (*p == '.')
            *p = '_';
    }
    return s;
}

static const char *field_ident(pbc_arena *a, const char *name)
{
    if (!is_reserved(name))
        return name;
    size_t n = strlen(name);
    char *s = pbc_alloc(a, n + 2);
    memcpy(s, name, n);
    s[n] = '_';
    return s;
}

static char *fmt(pbc_arena *a, const char *f, ...) __attribute__((format(printf, 2, 3)));
static char *fmt(pbc_arena *a, const char *f, ...)
{
    pbc_sb sb = { 0 };
    va_list ap;
    va_start(ap, f);
    pbc_sb_vprintf(&sb, f, ap);
    va_end(ap);
    char *s = pbc_strdup(a, sb.data ? sb.data : "");
    pbc_sb_free(&sb);
    return s;
}

/* Text safe inside a C block comment. */
static const char *comment_safe(pbc_arena *a, const char *s)
{
    if (!strstr(s, "*/") && !strstr(s, "/*"))
        return s;
    char *t = pbc_strdup(a, s);
    for (char *p = t; p[0] && p[1]; p++) {
        if ((p[0] == '*' && p[1] == '/') || (p[0] == '/' && p[1] == '*'))
            p[1] = '_';
    }
    return t;
}

/* ---- scalar types -------------------------------------------------------- */

typedef struct scalar_type {
    const char *proto;       /* name in .proto */
    const char *ctype;       /* setter argument and view member (enums: see below) */
    const char *wire;        /* PB_WIRE_* of one element */
    const char *append;      /* pb_msg_append_* for one element */
    const char *encode;      /* the value `v` as the append function takes it */
    const char *decode;      /* the value of pb_field `f` */
    const char *packed_fn;   /* appends an array as one packed field */
    const char *packed_elem; /* element type of that array */
    const char *packed_cast; /* applied to the array pointer, or "" */
    unsigned fixed_size;     /* 4 or 8 for fixed-width encodings, else 0 */
} scalar_type;

#define VARINT         "PB_WIRE_VARINT"
#define FIXED32        "PB_WIRE_FIXED32"
#define FIXED64        "PB_WIRE_FIXED64"
#define APPEND_VARINT  "pb_msg_append_varint"
#define APPEND_FIXED32 "pb_msg_append_fixed32"
#define APPEND_FIXED64 "pb_msg_append_fixed64"

static const scalar_type scalar_types[TYPE_MAX_ + 1] = {
    [TYPE_DOUBLE] = { "double", "double", FIXED64, APPEND_FIXED64, "pb_double_bits(v)",
                      "pb_field_double(&f)", "pbc_append_packed_double", "double", "", 8 },
    [TYPE_FLOAT] = { "float", "float", FIXED32, APPEND_FIXED32, "pb_float_bits(v)",
                     "pb_field_float(&f)", "pbc_append_packed_float", "float", "", 4 },
    [TYPE_INT64] = { "int64", "int64_t", VARINT, APPEND_VARINT, "(uint64_t)v", "pb_field_int64(&f)",
                     "pb_msg_append_packed_varint_i64", "int64_t", "", 0 },
    [TYPE_UINT64] = { "uint64", "uint64_t", VARINT, APPEND_VARINT, "v", "pb_field_uint64(&f)",
                      "pb_msg_append_packed_varint_u64", "uint64_t", "", 0 },
    /* int32 and enums are sign-extended to 64 bits, as protobuf requires. */
    [TYPE_INT32] = { "int32", "int32_t", VARINT, APPEND_VARINT, "(uint64_t)(int64_t)v",
                     "pb_field_int32(&f)", "pb_msg_append_packed_varint_i32", "int32_t", "", 0 },
    [TYPE_FIXED64] = { "fixed64", "uint64_t", FIXED64, APPEND_FIXED64, "v", "pb_field_uint64(&f)",
                       "pb_msg_append_packed_fixed64", "uint64_t", "", 8 },
    [TYPE_FIXED32] = { "fixed32", "uint32_t", FIXED32, APPEND_FIXED32, "v", "pb_field_uint32(&f)",
                       "pb_msg_append_packed_fixed32", "uint32_t", "", 4 },
    [TYPE_BOOL] = { "bool", "bool", VARINT, APPEND_VARINT, "(uint64_t)(v ? 1 : 0)",
                    "pb_field_bool(&f)", "pbc_append_packed_bool", "bool", "", 0 },
    [TYPE_UINT32] = { "uint32", "uint32_t", VARINT, APPEND_VARINT, "v", "pb_field_uint32(&f)",
                      "pb_msg_append_packed_varint_u32", "uint32_t", "", 0 },
    /* The C enum type may be unsigned when it has no negative values; going
     * through int32_t keeps out-of-range values sign-extended. The view keeps
     * the raw int32 so values this schema does not know survive. */
    [TYPE_ENUM] = { "enum", "int32_t", VARINT, APPEND_VARINT, "(uint64_t)(int64_t)(int32_t)v",
                    "pb_field_int32(&f)", "pb_msg_append_packed_varint_i32", "int32_t", "", 0 },
    [TYPE_SFIXED32] = { "sfixed32", "int32_t", FIXED32, APPEND_FIXED32, "(uint32_t)v",
                        "pb_field_int32(&f)", "pb_msg_append_packed_fixed32", "int32_t",
                        "(const uint32_t *)", 4 },
    [TYPE_SFIXED64] = { "sfixed64", "int64_t", FIXED64, APPEND_FIXED64, "(uint64_t)v",
                        "pb_field_int64(&f)", "pb_msg_append_packed_fixed64", "int64_t",
                        "(const uint64_t *)", 8 },
    [TYPE_SINT32] = { "sint32", "int32_t", VARINT, APPEND_VARINT, "pb_zigzag_encode32(v)",
                      "pb_field_sint32(&f)", "pb_msg_append_packed_sint32", "int32_t", "", 0 },
    [TYPE_SINT64] = { "sint64", "int64_t", VARINT, APPEND_VARINT, "pb_zigzag_encode64(v)",
                      "pb_field_sint64(&f)", "pb_msg_append_packed_sint64", "int64_t", "", 0 },
};

/* ---- per-field facts ----------------------------------------------------- */

enum field_kind {
    K_SCALAR,
    K_STRING,
    K_BYTES,
    K_MESSAGE
};

typedef struct field_info {
    const pbc_field *fd;
    const char *id;    /* escaped field name */
    const char *konst; /* C_FIELD_<id> */
    enum field_kind kind;
    const scalar_type *st; /* K_SCALAR */
    const char *type_c;    /* enums and messages: C type name */
    bool repeated;
    bool packed;
} field_info;

typedef struct emitter {
    pbc_arena *a;
    const pbc_file *file;
    pbc_sb *o;
    pbc_ident_log *log;
    bool proto3;
    const char *err;
} emitter;

static void set_err(emitter *e, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void set_err(emitter *e, const char *f, ...)
{
    if (e->err)
        return;
    pbc_sb sb = { 0 };
    va_list ap;
    va_start(ap, f);
    pbc_sb_vprintf(&sb, f, ap);
    va_end(ap);
    e->err = pbc_strdup(e->a, sb.data ? sb.data : "");
    pbc_sb_free(&sb);
}

static void ident(emitter *e, const char *name, const char *origin)
{
    pbc_ident_add(e->log, name, origin, e->file->name);
}

static bool field_info_init(emitter *e, const pbc_message *m, const char *cname,
                            const pbc_field *fd, field_info *fi)
{
    memset(fi, 0, sizeof *fi);
    fi->fd = fd;
    fi->id = field_ident(e->a, fd->name);
    fi->konst = fmt(e->a, "%s_FIELD_%s", cname, fi->id);
    fi->repeated = fd->label == LABEL_REPEATED;
    if (!valid_name(fd->name, false) || (fd->type_name && !valid_name(fd->type_name, true))) {
        set_err(e, "message %s: field or type name is not a valid identifier", m->full_name);
        return false;
    }
    if (fd->number < 1 || (uint32_t)fd->number > PBC_MAX_FIELD_NUMBER) {
        set_err(e, "field %s.%s has an invalid field number", m->full_name, fd->name);
        return false;
    }
    switch (fd->type) {
    case TYPE_STRING:
        fi->kind = K_STRING;
        break;
    case TYPE_BYTES:
        fi->kind = K_BYTES;
        break;
    case TYPE_MESSAGE:
        fi->kind = K_MESSAGE;
        fi->type_c = c_name(e->a, fd->type_name);
        break;
    case TYPE_GROUP:
        set_err(e, "field %s.%s: groups are not supported", m->full_name, fd->name);
        return false;
    default:
        fi->kind = K_SCALAR;
        fi->st = &scalar_types[fd->type];
        if (fd->type == TYPE_ENUM)
            fi->type_c = c_name(e->a, fd->type_name);
        /* proto3 packs repeated scalars unless told otherwise. */
        fi->packed =
            fi->repeated && (fd->packed_option == 1 || (fd->packed_option == -1 && e->proto3));
        break;
    }
    return true;
}

/* "optional int32", "repeated perfetto.protos.Foo", for comments. */
static const char *field_decl(emitter *e, const field_info *fi)
{
    const char *label = fi->fd->label == LABEL_REPEATED   ? "repeated"
                        : fi->fd->label == LABEL_REQUIRED ? "required"
                                                          : "optional";
    const char *type;
    switch (fi->fd->type) {
    case TYPE_STRING:
        type = "string";
        break;
    case TYPE_BYTES:
        type = "bytes";
        break;
    case TYPE_MESSAGE:
    case TYPE_ENUM:
        type = fi->fd->type_name + 1;
        break;
    default:
        type = fi->st->proto;
        break;
    }
    return fmt(e->a, "%s %s", label, type);
}

/* ---- emitting ------------------------------------------------------------ */

#define OUT(...) pbc_sb_printf(e->o, __VA_ARGS__)

/* An int32 as a C constant expression of type int (INT32_MIN has no literal). */
static const char *int_literal(emitter *e, int32_t v)
{
    pbc_sb sb = { 0 };
    if (v == INT32_MIN)
        pbc_sb_puts(&sb, "(-2147483647 - 1)");
    else
        pbc_sb_printf(&sb, "%ld", (long)v);
    char *s = pbc_strdup(e->a, sb.data);
    pbc_sb_free(&sb);
    return s;
}

static void emit_enum(emitter *e, const pbc_enum *en)
{
    const char *cname = c_name(e->a, en->full_name);
    const char *origin = fmt(e->a, "enum %s", en->full_name);
    if (en->n_values == 0) {
        set_err(e, "enum %s has no values", en->full_name);
        return;
    }
    bool names_ok = valid_name(en->full_name, true);
    for (size_t i = 0; i < en->n_values && names_ok; i++)
        names_ok = valid_name(en->values[i].name, false);
    if (!names_ok) {
        set_err(e, "enum %s: a name is not a valid identifier", en->full_name);
        return;
    }
    ident(e, cname, origin);
    ident(e, fmt(e->a, "%s_name", cname), origin);
    OUT("/* enum %s */\n", en->full_name);
    OUT("typedef enum %s {\n", cname);
    for (size_t i = 0; i < en->n_values; i++) {
        const pbc_enum_value *v = &en->values[i];
        const char *vname = fmt(e->a, "%s_%s", cname, v->name);
        ident(e, vname, fmt(e->a, "enum value %s.%s", en->full_name, v->name));
        OUT("    %s = %s,\n", vname, int_literal(e, v->number));
    }
    OUT("} %s;\n\n", cname);

    OUT("/* Name of value `v` as declared (the first one for aliases), or NULL. */\n");
    OUT("static inline const char *%s_name(int v)\n{\n    switch (v) {\n", cname);
    for (size_t i = 0; i < en->n_values; i++) {
        const pbc_enum_value *v = &en->values[i];
        bool alias = false;
        for (size_t j = 0; j < i && !alias; j++)
            alias = en->values[j].number == v->number;
        if (alias)
            continue;
        OUT("    case %s:\n        return \"%s\";\n", int_literal(e, v->number), v->name);
    }
    OUT("    default:\n        return NULL;\n    }\n}\n\n");
}

static void emit_enums_in(emitter *e, const pbc_message *m)
{
    for (size_t i = 0; i < m->n_enums; i++)
        emit_enum(e, &m->enums[i]);
    for (size_t i = 0; i < m->n_nested; i++)
        emit_enums_in(e, &m->nested[i]);
}

static void emit_struct(emitter *e, const pbc_message *m)
{
    const char *cname = c_name(e->a, m->full_name);
    ident(e, cname, fmt(e->a, "message %s", m->full_name));
    OUT("typedef struct %s {\n    pb_msg msg;\n} %s;\n", cname, cname);
    for (size_t i = 0; i < m->n_nested; i++)
        emit_struct(e, &m->nested[i]);
}

static void emit_writer_field(emitter *e, const char *cname, const field_info *fi)
{
    const char *verb = fi->repeated ? "add" : "set";
    const char *fn;
    OUT("/* %s %s = %d%s */\n", field_decl(e, fi), fi->fd->name, (int)fi->fd->number,
        fi->packed ? " [packed]; an empty array writes nothing" : "");
    switch (fi->kind) {
    case K_SCALAR:
        fn = fmt(e->a, "%s_set_%s", cname, fi->id);
        if (fi->packed) {
            const char *elem = fi->st->packed_elem;
            OUT("static inline void %s(%s *m, const %s *values, size_t n)\n{\n", fn, cname, elem);
            OUT("    if (n)\n        %s(&m->msg, %s, %svalues, n);\n}\n", fi->st->packed_fn,
                fi->konst, fi->st->packed_cast);
        } else {
            fn = fmt(e->a, "%s_%s_%s", cname, verb, fi->id);
            OUT("static inline void %s(%s *m, %s v)\n{\n", fn, cname,
                fi->type_c ? fi->type_c : fi->st->ctype);
            OUT("    %s(&m->msg, %s, %s);\n}\n", fi->st->append, fi->konst, fi->st->encode);
        }
        ident(e, fn, fi->konst);
        break;
    case K_STRING: {
        fn = fmt(e->a, "%s_%s_%s", cname, verb, fi->id);
        OUT("static inline void %s(%s *m, const char *v)\n{\n", fn, cname);
        OUT("    pb_msg_append_string(&m->msg, %s, v);\n}\n", fi->konst);
        ident(e, fn, fi->konst);
        const char *fn_len = fmt(e->a, "%s_len", fn);
        OUT("static inline void %s(%s *m, const void *data, size_t len)\n{\n", fn_len, cname);
        OUT("    pb_msg_append_bytes(&m->msg, %s, data, len);\n}\n", fi->konst);
        ident(e, fn_len, fi->konst);
        break;
    }
    case K_BYTES:
        fn = fmt(e->a, "%s_%s_%s", cname, verb, fi->id);
        OUT("static inline void %s(%s *m, const void *data, size_t len)\n{\n", fn, cname);
        OUT("    pb_msg_append_bytes(&m->msg, %s, data, len);\n}\n", fi->konst);
        ident(e, fn, fi->konst);
        break;
    case K_MESSAGE:
        fn = fmt(e->a, "%s_begin_%s", cname, fi->id);
        OUT("static inline void %s(%s *m, %s *child)\n{\n", fn, cname, fi->type_c);
        OUT("    pb_msg_begin_nested(&m->msg, %s, &child->msg);\n}\n", fi->konst);
        ident(e, fn, fi->konst);
        break;
    }
}

/* The raw-position encoder of a field for runs of fields under one bounds
 * check (pb_msg_reserve()): <msg>_put_<field>(p, value) returns the new end.
 * Packed fields have none (their size is not bounded by a constant); a
 * sub-message field gets a header writer that opens the child in the run. */
static void emit_put_field(emitter *e, const char *cname, const field_info *fi)
{
    const char *fn = fmt(e->a, "%s_put_%s", cname, fi->id);
    if (fi->kind == K_SCALAR && !fi->packed) {
        /* Unsigned 32-bit encodings never take more than 5 bytes. */
        bool narrow = fi->st == &scalar_types[TYPE_UINT32] ||
                      fi->st == &scalar_types[TYPE_SINT32] || fi->st == &scalar_types[TYPE_BOOL];
        const char *put = strcmp(fi->st->wire, FIXED32) == 0   ? "pb_put_fixed32_field"
                          : strcmp(fi->st->wire, FIXED64) == 0 ? "pb_put_fixed64_field"
                          : narrow                             ? "pb_put_varint32_field"
                                                               : "pb_put_varint_field";
        OUT("static inline uint8_t *%s(uint8_t *p, %s v)\n{\n", fn,
            fi->type_c ? fi->type_c : fi->st->ctype);
        OUT("    return %s(p, %s, %s);\n}\n", put, fi->konst, fi->st->encode);
    } else if (fi->kind == K_STRING || fi->kind == K_BYTES) {
        OUT("static inline uint8_t *%s(uint8_t *p, const void *data, size_t len)\n{\n", fn);
        OUT("    return pb_put_bytes_field(p, %s, data, len);\n}\n", fi->konst);
        if (fi->kind == K_STRING) {
            /* <msg>_put_<field>_cstr(p, str): NULL for PB_CSTR_RUN_MAX bytes or more. */
            ident(e, fn, fi->konst);
            fn = fmt(e->a, "%s_put_%s_cstr", cname, fi->id);
            OUT("static inline uint8_t *%s(uint8_t *p, const char *str)\n{\n", fn);
            OUT("    return pb_put_cstr_field(p, %s, str);\n}\n", fi->konst);
        }
    } else if (fi->kind == K_MESSAGE) {
        /* <msg>_put_begin_<field>(p, m, child): pb_msg_put_nested_begin(). */
        fn = fmt(e->a, "%s_put_begin_%s", cname, fi->id);
        OUT("static inline uint8_t *%s(uint8_t *p, %s *m, %s *child)\n{\n", fn, cname, fi->type_c);
        OUT("    return pb_msg_put_nested_begin(&m->msg, p, %s, &child->msg);\n}\n", fi->konst);
    } else {
        return;
    }
    ident(e, fn, fi->konst);
}

/* Records a view member and fails on duplicates within the struct (e.g.
 * repeated "foo" next to a field named "foo_count"). */
typedef struct members {
    const char **names;
    size_t n;
} members;

static void member(emitter *e, members *ms, const pbc_message *m, const char *name)
{
    for (size_t i = 0; i < ms->n; i++) {
        if (strcmp(ms->names[i], name) == 0) {
            set_err(e, "message %s: view member '%s' would be declared twice", m->full_name, name);
            return;
        }
    }
    ms->names[ms->n++] = name;
}

/* Alignment class of a view member: values are laid out 8-byte ones first,
 * then 4-byte ones and counts, then bools and presence flags, so the struct
 * has no inner padding and the decoder's memset stays small. */
static unsigned view_align(const field_info *fi)
{
    if (fi->repeated)
        return 4;
    if (fi->kind != K_SCALAR)
        return 8; /* pb_bytes */
    switch (fi->fd->type) {
    case TYPE_BOOL:
        return 1;
    case TYPE_DOUBLE:
    case TYPE_INT64:
    case TYPE_UINT64:
    case TYPE_FIXED64:
    case TYPE_SFIXED64:
    case TYPE_SINT64:
        return 8;
    default:
        return 4;
    }
}

static void emit_view(emitter *e, const pbc_message *m, const char *cname, const field_info *fis)
{
    members ms = { pbc_alloc_array(e->a, 2 * m->n_fields, sizeof(char *)), 0 };
    const char *vname = fmt(e->a, "%s_view", cname);
    ident(e, vname, fmt(e->a, "view of %s", m->full_name));
    OUT("/* Decoded view of %s.\n"
        " * has_<f> tells whether singular field <f> was present. Strings, bytes and\n"
        " * sub-messages point into the decoded buffer. Repeated fields are only\n"
        " * counted (packed and unpacked elements alike); iterate them with pb_reader\n"
        " * and the FIELD constants. */\n",
        m->full_name);
    OUT("typedef struct %s {\n", vname);
    if (m->n_fields == 0)
        OUT("    char unused_; /* C has no empty structs */\n");
    static const unsigned classes[] = { 8, 4, 1 };
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        for (size_t i = 0; i < m->n_fields; i++) {
            const field_info *fi = &fis[i];
            if (view_align(fi) != classes[c])
                continue;
            if (fi->repeated) {
                const char *cnt = fmt(e->a, "%s_count", fi->id);
                member(e, &ms, m, cnt);
                OUT("    uint32_t %s;\n", cnt);
            } else {
                member(e, &ms, m, fi->id);
                OUT("    %s %s;\n", fi->kind == K_SCALAR ? fi->st->ctype : "pb_bytes", fi->id);
            }
        }
    }
    for (size_t i = 0; i < m->n_fields; i++) {
        if (fis[i].repeated)
            continue;
        const char *has = fmt(e->a, "has_%s", fis[i].id);
        member(e, &ms, m, has);
        OUT("    bool %s;\n", has);
    }
    OUT("} %s;\n\n", vname);
}

static void emit_decode_case(emitter *e, const field_info *fi)
{
    OUT("        case %s:\n", fi->konst);
    const char *id = fi->id;
    if (fi->kind != K_SCALAR) {
        if (fi->repeated) {
            OUT("            if (f.wire_type == PB_WIRE_LEN)\n                v->%s_count++;\n",
                id);
        } else {
            OUT("            if (f.wire_type == PB_WIRE_LEN) {\n");
            OUT("                v->has_%s = true;\n", id);
            OUT("                v->%s.data = f.data;\n", id);
            OUT("                v->%s.size = (size_t)f.value;\n            }\n", id);
        }
        OUT("            break;\n");
        return;
    }
    const scalar_type *st = fi->st;
    if (fi->repeated) {
        /* Parsers must take both encodings whatever the declaration says. */
        OUT("            if (f.wire_type == %s)\n                v->%s_count++;\n", st->wire, id);
        OUT("            else if (f.wire_type == PB_WIRE_LEN)\n");
        if (st->fixed_size)
            OUT("                v->%s_count += (uint32_t)(f.value / %u);\n", id, st->fixed_size);
        else
            OUT("                v->%s_count += pbc_count_varints(f.data, f.value);\n", id);
    } else {
        OUT("            if (f.wire_type == %s) {\n", st->wire);
        OUT("                v->has_%s = true;\n", id);
        OUT("                v->%s = %s;\n            }\n", id, st->decode);
    }
    OUT("            break;\n");
}

static void emit_message(emitter *e, const pbc_message *m)
{
    if (!valid_name(m->full_name, true)) {
        set_err(e, "message name %s is not a valid identifier", m->full_name);
        return;
    }
    const char *cname = c_name(e->a, m->full_name);
    field_info *fis = pbc_alloc_array(e->a, m->n_fields, sizeof *fis);
    for (size_t i = 0; i < m->n_fields; i++) {
        if (!field_info_init(e, m, cname, &m->fields[i], &fis[i]))
            return;
    }

    OUT("/* ==== %s ==== */\n\n", m->full_name);
    if (m->n_fields) {
        OUT("enum {\n");
        for (size_t i = 0; i < m->n_fields; i++) {
            OUT("    %s = %d,\n", fis[i].konst, (int)fis[i].fd->number);
            ident(e, fis[i].konst, fmt(e->a, "field %s.%s", m->full_name, m->fields[i].name));
        }
        OUT("};\n\n");
    }

    const char *origin = fmt(e->a, "message %s", m->full_name);
    ident(e, fmt(e->a, "%s_init_root", cname), origin);
    ident(e, fmt(e->a, "%s_end", cname), origin);
    ident(e, fmt(e->a, "%s_decode", cname), origin);
    OUT("static inline void %s_init_root(%s *m, pb_stream *s)\n{\n"
        "    pb_msg_init_root(&m->msg, s);\n}\n",
        cname, cname);
    OUT("static inline uint32_t %s_end(%s *m)\n{\n    return pb_msg_end(&m->msg);\n}\n", cname,
        cname);
    for (size_t i = 0; i < m->n_fields; i++)
        emit_writer_field(e, cname, &fis[i]);
    ident(e, fmt(e->a, "%s_reserve", cname), origin);
    ident(e, fmt(e->a, "%s_commit", cname), origin);
    OUT("/* Runs of fields under one bounds check: see pb_msg_reserve(). */\n"
        "static inline uint8_t *%s_reserve(%s *m, size_t max_bytes)\n{\n"
        "    return pb_msg_reserve(&m->msg, max_bytes);\n}\n"
        "static inline void %s_commit(%s *m, uint8_t *end)\n{\n"
        "    pb_msg_commit(&m->msg, end);\n}\n",
        cname, cname, cname, cname);
    for (size_t i = 0; i < m->n_fields; i++)
        emit_put_field(e, cname, &fis[i]);
    OUT("\n");

    emit_view(e, m, cname, fis);
    OUT("/* Fills `v` from the serialized message; unknown fields and fields of an\n"
        " * unexpected wire type are skipped, the last occurrence of a singular field\n"
        " * wins. False only on malformed input. */\n");
    OUT("static inline bool %s_decode(%s_view *v, const void *data, size_t len)\n{\n", cname,
        cname);
    /* An empty span is an empty message; returning early also keeps a
     * (NULL, 0) span, as an absent sub-message's pb_bytes is, away from
     * pointer arithmetic. */
    OUT("    pb_reader r;\n    pb_field f;\n    memset(v, 0, sizeof *v);\n"
        "    if (len == 0)\n        return true;\n"
        "    pb_reader_init(&r, data, len);\n");
    if (m->n_fields == 0) {
        OUT("    while (pb_reader_next(&r, &f)) {\n    }\n");
    } else {
        OUT("    while (pb_reader_next(&r, &f)) {\n        switch (f.id) {\n");
        for (size_t i = 0; i < m->n_fields; i++)
            emit_decode_case(e, &fis[i]);
        OUT("        default:\n            break;\n        }\n    }\n");
    }
    OUT("    return r.err == PB_OK;\n}\n\n");

    for (size_t i = 0; i < m->n_nested; i++)
        emit_message(e, &m->nested[i]);
}

static const char *guard_name(emitter *e)
{
    pbc_sb sb = { 0 };
    pbc_sb_puts(&sb, "PBC_");
    for (const char *p = e->file->name; *p; p++) {
        char c = *p;
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            c = '_';
        pbc_sb_putn(&sb, &c, 1);
    }
    pbc_sb_puts(&sb, "_H");
    char *s = pbc_strdup(e->a, sb.data);
    pbc_sb_free(&sb);
    return s;
}

bool pbc_emit_header(pbc_arena *arena, const pbc_file *file, pbc_ident_log *log, pbc_sb *out,
                     const char **err)
{
    emitter em = { arena, file, out, log, strcmp(file->syntax, "proto3") == 0, NULL };
    emitter *e = &em;
    if (strcmp(file->syntax, "proto2") != 0 && !e->proto3) {
        *err = fmt(arena, "%s: syntax \"%s\" is not supported", file->name, file->syntax);
        return false;
    }
    for (size_t i = 0; i < file->n_deps; i++) {
        if (strpbrk(file->deps[i], "\"\\\n\r<>")) {
            *err = fmt(arena, "%s: import path \"%s\" cannot be spelled in an #include", file->name,
                       file->deps[i]);
            return false;
        }
    }
    const char *guard = guard_name(e);
    OUT("/* Generated by protoc-gen-pbc from %s \xe2\x80\x94 do not edit. */\n",
        comment_safe(arena, file->name));
    OUT("#ifndef %s\n#define %s\n\n", guard, guard);
    OUT("#include \"protos/pb/pb_writer.h\"\n#include \"protos/pb/pb_reader.h\"\n");
    /* Perfetto's schema is generated into build/protos/perfetto/ and named
     * from the root like every other include; a folder's own .proto files
     * are generated beside their users and stay unqualified. */
    for (size_t i = 0; i < file->n_deps; i++)
        OUT("#include \"%s%s\"\n",
            strncmp(file->deps[i], "perfetto/", 9) == 0 ? "protos/perfetto/" : "",
            pbc_header_name(arena, file->deps[i]));
    OUT("\n");
    pbc_sb_puts(out, pbc_runtime_helpers);

    for (size_t i = 0; i < file->n_enums; i++)
        emit_enum(e, &file->enums[i]);
    for (size_t i = 0; i < file->n_messages; i++)
        emit_enums_in(e, &file->messages[i]);

    if (file->n_messages) {
        OUT("/* Writers: one pb_msg each, open on a stream (see pb_writer.h). */\n");
        for (size_t i = 0; i < file->n_messages; i++)
            emit_struct(e, &file->messages[i]);
        OUT("\n");
    }
    for (size_t i = 0; i < file->n_messages; i++)
        emit_message(e, &file->messages[i]);

    OUT("#endif /* %s */\n", guard);
    *err = e->err;
    return e->err == NULL;
}
