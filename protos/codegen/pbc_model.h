/* SPDX-License-Identifier: MIT */
/* protoc-gen-pbc internals: the in-memory schema model the plugin decodes
 * from a CodeGeneratorRequest, a small allocation arena and a string
 * builder, shared by the decoding (pbc_descriptor.c), emitting (pbc_emit.c)
 * and driver (protoc-gen-pbc.c) parts. */
#ifndef PBC_MODEL_H
#define PBC_MODEL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- descriptor.proto / plugin.proto constants ---------------------------
 * Field numbers checked against google/protobuf/descriptor.proto and
 * google/protobuf/compiler/plugin.proto (protobuf 3.21). */

enum { /* CodeGeneratorRequest */
    REQ_FILE_TO_GENERATE = 1,
    REQ_PARAMETER = 2,
    REQ_COMPILER_VERSION = 3,
    REQ_PROTO_FILE = 15,
};

enum { /* CodeGeneratorResponse */
    RESP_ERROR = 1,
    RESP_SUPPORTED_FEATURES = 2,
    RESP_FILE = 15,
};

enum { /* CodeGeneratorResponse.File */
    RESP_FILE_NAME = 1,
    RESP_FILE_INSERTION_POINT = 2,
    RESP_FILE_CONTENT = 15,
};

enum { /* CodeGeneratorResponse.Feature */
    FEATURE_PROTO3_OPTIONAL = 1,
};

enum { /* FileDescriptorProto */
    FILE_NAME = 1,
    FILE_PACKAGE = 2,
    FILE_DEPENDENCY = 3,
    FILE_MESSAGE_TYPE = 4,
    FILE_ENUM_TYPE = 5,
    FILE_SERVICE = 6,
    FILE_EXTENSION = 7,
    FILE_OPTIONS = 8,
    FILE_SOURCE_CODE_INFO = 9,
    FILE_PUBLIC_DEPENDENCY = 10,
    FILE_WEAK_DEPENDENCY = 11,
    FILE_SYNTAX = 12,
};

enum { /* DescriptorProto */
    MSG_NAME = 1,
    MSG_FIELD = 2,
    MSG_NESTED_TYPE = 3,
    MSG_ENUM_TYPE = 4,
    MSG_EXTENSION_RANGE = 5,
    MSG_EXTENSION = 6,
    MSG_OPTIONS = 7,
    MSG_ONEOF_DECL = 8,
};

enum { /* FieldDescriptorProto */
    FIELD_NAME = 1,
    FIELD_EXTENDEE = 2,
    FIELD_NUMBER = 3,
    FIELD_LABEL = 4,
    FIELD_TYPE = 5,
    FIELD_TYPE_NAME = 6,
    FIELD_DEFAULT_VALUE = 7,
    FIELD_OPTIONS = 8,
    FIELD_ONEOF_INDEX = 9,
    FIELD_JSON_NAME = 10,
    FIELD_PROTO3_OPTIONAL = 17,
};

enum { /* FieldOptions */
    FIELDOPT_CTYPE = 1,
    FIELDOPT_PACKED = 2,
};

enum { /* EnumDescriptorProto */
    ENUM_NAME = 1,
    ENUM_VALUE = 2,
    ENUM_OPTIONS = 3,
};

enum { /* EnumValueDescriptorProto */
    ENUMVAL_NAME = 1,
    ENUMVAL_NUMBER = 2,
};

/* FieldDescriptorProto.Label */
enum {
    LABEL_OPTIONAL = 1,
    LABEL_REQUIRED = 2,
    LABEL_REPEATED = 3
};

/* FieldDescriptorProto.Type */
enum {
    TYPE_DOUBLE = 1,
    TYPE_FLOAT = 2,
    TYPE_INT64 = 3,
    TYPE_UINT64 = 4,
    TYPE_INT32 = 5,
    TYPE_FIXED64 = 6,
    TYPE_FIXED32 = 7,
    TYPE_BOOL = 8,
    TYPE_STRING = 9,
    TYPE_GROUP = 10,
    TYPE_MESSAGE = 11,
    TYPE_BYTES = 12,
    TYPE_UINT32 = 13,
    TYPE_ENUM = 14,
    TYPE_SFIXED32 = 15,
    TYPE_SFIXED64 = 16,
    TYPE_SINT32 = 17,
    TYPE_SINT64 = 18,
    TYPE_MAX_ = 18,
};

/* ---- arena ---------------------------------------------------------------
 * Everything the model holds is allocated here and released at once. */

typedef struct pbc_arena_block pbc_arena_block;
typedef struct pbc_arena {
    pbc_arena_block *head;
} pbc_arena;

/* Zeroed memory; exits the process on OOM (a code generator has no better
 * option). */
void *pbc_alloc(pbc_arena *a, size_t size);
void *pbc_alloc_array(pbc_arena *a, size_t n, size_t elem);
char *pbc_strndup(pbc_arena *a, const void *data, size_t len);
char *pbc_strdup(pbc_arena *a, const char *s);
void pbc_arena_free(pbc_arena *a);

/* ---- string builder ------------------------------------------------------ */

typedef struct pbc_sb {
    char *data;
    size_t len;
    size_t cap;
} pbc_sb;

void pbc_sb_putn(pbc_sb *sb, const char *s, size_t n);
void pbc_sb_puts(pbc_sb *sb, const char *s);
void pbc_sb_printf(pbc_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pbc_sb_vprintf(pbc_sb *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void pbc_sb_free(pbc_sb *sb);

/* ---- schema model -------------------------------------------------------- */

typedef struct pbc_enum_value {
    const char *name;
    int32_t number;
} pbc_enum_value;

typedef struct pbc_enum {
    const char *name;      /* as declared */
    const char *full_name; /* "pkg.Outer.Name", no leading dot */
    pbc_enum_value *values;
    size_t n_values;
} pbc_enum;

typedef struct pbc_field {
    const char *name;
    int32_t number;
    int32_t label; /* LABEL_* */
    int32_t type;  /* TYPE_* */
    /* Message and enum fields: fully qualified, with a leading dot. */
    const char *type_name;
    /* [packed = ...]: -1 when absent. */
    int packed_option;
    bool in_oneof;
    bool proto3_optional;
} pbc_field;

typedef struct pbc_message pbc_message;
struct pbc_message {
    const char *name;
    const char *full_name;
    pbc_field *fields;
    size_t n_fields;
    pbc_message *nested;
    size_t n_nested;
    pbc_enum *enums;
    size_t n_enums;
};

typedef struct pbc_file {
    const char *name;    /* path relative to the -I root, e.g. "a/b.proto" */
    const char *package; /* "" when none */
    const char *syntax;  /* "proto2" (also when absent), "proto3", ... */
    const char **deps;
    size_t n_deps;
    pbc_message *messages;
    size_t n_messages;
    pbc_enum *enums;
    size_t n_enums;
} pbc_file;

typedef struct pbc_request {
    const char **to_generate;
    size_t n_to_generate;
    const char *parameter; /* NULL when absent */
    pbc_file *files;
    size_t n_files;
} pbc_request;

/* Decodes a serialized CodeGeneratorRequest into `req`, allocating from
 * `arena`. Returns false and fills `err` (a static description) when the
 * input is malformed. */
bool pbc_decode_request(pbc_arena *arena, const uint8_t *data, size_t len, pbc_request *req,
                        const char **err);

/* Generated header name for a .proto path: basename, ".proto" replaced by
 * ".pbc.h". Allocated from `arena`. */
char *pbc_header_name(pbc_arena *arena, const char *proto_path);

/* Protobuf field numbers are 29 bits. */
#define PBC_MAX_FIELD_NUMBER ((1u << 29) - 1)

/* ---- identifier log ------------------------------------------------------
 * Every global C identifier a header defines, with where it comes from, so
 * collisions between flattened names can be reported instead of surfacing
 * as compile errors in users' code. */

typedef struct pbc_ident {
    const char *name;
    const char *origin; /* "message a.B", "field a.B.c", ... */
    const char *file;   /* .proto path */
} pbc_ident;

typedef struct pbc_ident_log {
    pbc_ident *items;
    size_t n;
    size_t cap;
} pbc_ident_log;

void pbc_ident_add(pbc_ident_log *log, const char *name, const char *origin, const char *file);
/* Sorts the log; returns a description of the first duplicate (allocated
 * from `arena`), or NULL when every identifier is unique. */
const char *pbc_ident_check(pbc_arena *arena, pbc_ident_log *log);
void pbc_ident_free(pbc_ident_log *log);

/* Appends the header for `file` to `out` and records its identifiers in
 * `log`. Returns false and sets *err (allocated from `arena`) when the
 * schema cannot be expressed in C. */
bool pbc_emit_header(pbc_arena *arena, const pbc_file *file, pbc_ident_log *log, pbc_sb *out,
                     const char **err);

/* Source text of the helpers shared by all generated headers (pbc_runtime.c). */
extern const char pbc_runtime_helpers[];

#endif /* PBC_MODEL_H */
