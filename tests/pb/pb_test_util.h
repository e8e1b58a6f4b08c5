/* SPDX-License-Identifier: MIT */
/* Helpers shared by the pb tests (C unit tests, the libprotobuf cross-check
 * and the corpus generator):
 *   - a deterministic RNG and a bump arena (everything a test allocates goes
 *     into one arena, freed at once, so ASan's leak check stays quiet);
 *   - a random message-tree model: which fields, in which order, written
 *     with which writer call, with which values;
 *   - pbt_write(): writes a model with our writer into any stream;
 *   - pbt_ref_encode(): an independent byte-at-a-time encoder of the same
 *     model, producing what the writer must produce byte for byte;
 *   - pbt_check(): decodes bytes with our reader and compares every field
 *     with the model. */
#ifndef PB_TEST_UTIL_H
#define PB_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protos/pb/pb_reader.h"
#include "protos/pb/pb_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RNG ----------------------------------------------------------------- */

typedef struct pbt_rng {
    uint64_t state;
} pbt_rng;

void pbt_rng_seed(pbt_rng *r, uint64_t seed);
uint64_t pbt_rng_next(pbt_rng *r);
/* Uniform in [0, n); 0 when n == 0. */
uint64_t pbt_rng_below(pbt_rng *r, uint64_t n);
/* Uniform in [lo, hi]. */
uint64_t pbt_rng_range(pbt_rng *r, uint64_t lo, uint64_t hi);
/* A value whose bit length is uniform in 0..64, so every varint size is
 * equally likely. */
uint64_t pbt_rng_bits(pbt_rng *r);

/* ---- arena --------------------------------------------------------------- */

typedef struct pbt_arena_block pbt_arena_block;
typedef struct pbt_arena {
    pbt_arena_block *blocks;
} pbt_arena;

/* Zeroed, 16-byte aligned; aborts on OOM. */
void *pbt_alloc(pbt_arena *a, size_t n);
void pbt_arena_free(pbt_arena *a);

/* ---- message-tree model ---------------------------------------------------- */

typedef enum pbt_kind {
    PBT_VARINT,  /* pb_msg_append_varint(value) */
    PBT_FIXED32, /* pb_msg_append_fixed32(value) */
    PBT_FIXED64, /* pb_msg_append_fixed64(value) */
    PBT_BYTES,   /* pb_msg_append_bytes(data, len) */
    PBT_STRING,  /* pb_msg_append_string(data), no NUL inside */
    PBT_RAW,     /* pb_msg_append_raw() of a pre-encoded varint field */
    PBT_NESTED,  /* pb_msg_begin_nested() ... child ... [pb_msg_end()] */
    PBT_PACKED,  /* pb_msg_append_packed_*(), see pbt_packed_kind */
    PBT_KIND_COUNT
} pbt_kind;

typedef enum pbt_packed_kind {
    PBT_PACKED_U64,
    PBT_PACKED_U32,
    PBT_PACKED_I64,
    PBT_PACKED_I32,
    PBT_PACKED_S64,
    PBT_PACKED_S32,
    PBT_PACKED_F32,
    PBT_PACKED_F64,
    PBT_PACKED_KIND_COUNT
} pbt_packed_kind;

typedef struct pbt_msg pbt_msg;

typedef struct pbt_field {
    uint32_t id;
    uint8_t kind;        /* pbt_kind */
    uint8_t packed_kind; /* pbt_packed_kind, PACKED only */
    /* NESTED only: not ended explicitly. Only set when the next field of the
     * parent is NESTED too (its begin finalizes this one) or this is the
     * parent's last field (the parent's end does). */
    bool leave_open;
    /* VARINT, RAW: the raw 64-bit value; FIXED32/FIXED64: the value. */
    uint64_t value;
    /* BYTES, STRING: the payload (STRING also NUL-terminated). */
    const uint8_t *data;
    /* BYTES, STRING: payload length; PACKED: element count. */
    size_t len;
    /* PACKED: the typed array handed to the writer, and each element as the
     * reader reports it (varint kinds: the raw varint; fixed: the value). */
    const void *packed_input;
    const uint64_t *packed_wire;
    /* NESTED */
    pbt_msg *child;
} pbt_field;

struct pbt_msg {
    pbt_field *fields;
    size_t n;
};

typedef struct pbt_gen_opts {
    unsigned max_depth;   /* nesting levels below the root */
    unsigned max_fields;  /* per message */
    unsigned max_total;   /* fields in the whole tree (a soft cap) */
    size_t max_bytes_len; /* longest BYTES/STRING payload */
    size_t max_packed;    /* longest packed array */
    unsigned nested_pct;  /* chance (%) of a nested field; 0: as any kind */
} pbt_gen_opts;

/* A random tree under the given limits; every kind and field-number range
 * (1-byte to 5-byte tags, up to PB_MAX_FIELD_ID) shows up. */
pbt_msg *pbt_gen(pbt_arena *a, pbt_rng *r, const pbt_gen_opts *o);

/* Writes `m` with our writer as a root message at the stream's position and
 * finalizes it. Returns the number of size mismatches seen (pb_msg_end()
 * results and root size vs. the reference); 0 when all is well. `pool` must
 * have room for pbt_count_nested(m) messages and stay alive until return. */
unsigned pbt_write(pb_stream *s, const pbt_msg *m, pb_msg *pool);
/* Same, but consecutive scalar and bytes fields go through pb_msg_reserve()
 * and the pb_put_*_field() encoders whenever the buffer has room for them. */
unsigned pbt_write_runs(pb_stream *s, const pbt_msg *m, pb_msg *pool);
size_t pbt_count_nested(const pbt_msg *m);

/* Reference encoding (nested sizes as 4-byte redundant varints, as the
 * writer does). pbt_ref_size() is the encoded payload size of `m`. */
size_t pbt_ref_size(const pbt_msg *m);
size_t pbt_ref_encode(const pbt_msg *m, uint8_t *out);
/* Minimal varint, one byte at a time. */
size_t pbt_ref_varint(uint64_t v, uint8_t *out);

/* Decodes [data, data+len) with our reader (pb_reader_next/enter, packed
 * iterators) and compares it with `m`. Returns true on a match; otherwise
 * describes the first difference in `why`. */
bool pbt_check(const uint8_t *data, size_t len, const pbt_msg *m, char *why, size_t why_len);

/* Copies `len` bytes into a malloc'd block of exactly that size (at least
 * one byte is allocated, but only `len` are meant to be read), so ASan
 * reports any read past the end. */
uint8_t *pbt_exact_copy(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* PB_TEST_UTIL_H */
