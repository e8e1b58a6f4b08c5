/* SPDX-License-Identifier: MIT */
/* bench-pb: serialization cost of our pb writer against a speed-of-light
 * serializer and libprotobuf C++, on the two message shapes of the ProtoZero
 * design doc ("simple": four integers and a 32-byte string; "nested": the
 * same event nested 3 levels deep).
 *
 * All serializers run in the same process, interleaved batch by batch (in
 * rounds, the order rotating) so that noise from other work on the machine
 * hits each of them alike. Times are this thread's CPU time. Each ns figure
 * is the median over rounds, in ns per message; each ratio is the median
 * over rounds of the ratio within the round.
 *
 * Before timing, the output of our writer is checked byte for byte against
 * a straightforward reference encoding and (with libprotobuf) parsed back by
 * libprotobuf, so a faster writer cannot be a wrong one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protos/bench/bench_pb.h"
#include "protos/pb/pb_reader.h"
#include "protos/pb/pb_writer.h"
#include "tracing/util/util_time.h"
#ifdef PB_BENCH_HAVE_PBC
#include "pb_bench.pbc.h"
#endif

#define N_BATCHES 61
/* Time one batch of our writer should take; the iteration count found for
 * it is then used by every serializer of the shape. Short batches, many of
 * them: on a shared machine, a burst of load then spoils few batches, and
 * the median ignores them. */
#define BATCH_TARGET_NS 2000000.0

/* Inputs at [1 KiB, 4 KiB) past a 4 KiB boundary; see bench_pb.h. */
static struct {
    _Alignas(PBB_OUT_ALIGN) uint8_t pad[1024];
    pbb_event events[PBB_N_INPUTS];
} input_events;
static struct {
    _Alignas(PBB_OUT_ALIGN) uint8_t pad[1024];
    char strings[PBB_N_INPUTS][PBB_STRING_LEN + 1];
} input_strings_block;
_Static_assert(sizeof input_events.events + 1024 <= PBB_OUT_ALIGN, "inputs overlap 0..1K");
_Static_assert(sizeof input_strings_block.strings + 1024 <= PBB_OUT_ALIGN, "inputs overlap 0..1K");
pbb_event *pbb_inputs = input_events.events;
#define input_strings input_strings_block.strings

static void init_inputs(void)
{
    static const char text[] = "The quick brown fox jumps over the lazy dog; pack my box";
    for (unsigned i = 0; i < PBB_N_INPUTS; i++) {
        pbb_event *e = &pbb_inputs[i];
        /* Magnitudes as in the design doc's fake event: every varint is
         * multi-byte (5, 5, 9 and 10 bytes); only low bits vary. */
        e->field_int32 = 0x12345678 + (int32_t)i;
        e->field_uint32 = 0x9abcdef0u + i;
        e->field_int64 = 0x123456789abcdef0ll + (int64_t)i * 3;
        e->field_uint64 = 0xfedcba9876543210ull - i * 5;
        memcpy(input_strings[i], text + (i % 16), PBB_STRING_LEN);
        input_strings[i][PBB_STRING_LEN] = '\0';
        e->field_string = input_strings[i];
    }
}

/* Each serializer's loop consumes its output the same way: the message size
 * and its first byte go into a checksum, and this barrier makes the whole
 * buffer observable (so no store can be elided) and keeps work from moving
 * across iterations. The first byte rather than the last: the last one is
 * written by a wide store inside memcpy/stpcpy, and loading one byte of it
 * right away can stall on store forwarding in a way that depends on the
 * library's code rather than on the serializer. */
static inline void barrier(const void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* ---- ours ---------------------------------------------------------------- */

/* A flat stream over one buffer large enough for any message of the bench,
 * rewound before each message, as a trace writer's chunk would be. Its
 * delegate is never asked for another buffer: if it were, the numbers would
 * not be measuring the fast path, so it stops the bench. */
static _Alignas(PBB_OUT_ALIGN) uint8_t ours_buf[1024];
/* The stream's fields are loaded right after stores to the buffer: keep
 * them away from the buffer's first bytes modulo 4 KiB, too. */
static struct {
    _Alignas(PBB_OUT_ALIGN) uint8_t pad[2048];
    pb_stream s;
} ours_stream_block;
#define ours_stream ours_stream_block.s

static pb_span ours_new_buffer(void *ctx, pb_stream *s)
{
    (void)ctx;
    (void)s;
    fprintf(stderr, "bench-pb: the flat stream ran out of space\n");
    abort();
}

static uint8_t *ours_annotate_patch(void *ctx, uint8_t *size_field)
{
    (void)ctx;
    return size_field;
}

static const pb_stream_delegate ours_delegate = {
    .new_buffer = ours_new_buffer,
    .annotate_patch = ours_annotate_patch,
};

/* Fill helpers are plain inline functions: the compiler decides, as it
 * would for application code. (Forcing them inline made our nested loop
 * slower, not faster: ~1100 instructions of straight-line code ran at a
 * clearly lower IPC than four calls to one out-of-line copy.) */
#define FILL_INLINE static inline

#ifdef PB_BENCH_HAVE_PBC
/* Generated from pb_bench.proto by protoc-gen-pbc. */
typedef gputrace_bench_PbBenchEvent ours_msg;

/* The event's fields at `p` (a run: see ours_fill_simple()); NULL when the
 * string is too long for a one-pass run (PB_CSTR_RUN_MAX). */
#define OURS_SIMPLE_MAX_BYTES (4 * PB_MAX_SCALAR_FIELD_BYTES + PB_MAX_CSTR_FIELD_BYTES)
FILL_INLINE uint8_t *ours_put_simple(uint8_t *p, const pbb_event *in)
{
    p = gputrace_bench_PbBenchEvent_put_field_int32(p, in->field_int32);
    p = gputrace_bench_PbBenchEvent_put_field_uint32(p, in->field_uint32);
    p = gputrace_bench_PbBenchEvent_put_field_int64(p, in->field_int64);
    p = gputrace_bench_PbBenchEvent_put_field_uint64(p, in->field_uint64);
    return gputrace_bench_PbBenchEvent_put_field_string_cstr(p, in->field_string);
}

/* Field by field, switching buffers as needed: when the buffer lacks the
 * room for a run, or the string is too long for one. Out of line and cold,
 * so the fast paths stay small. */
static __attribute__((noinline, cold)) void ours_fill_simple_slow(ours_msg *m, const pbb_event *in)
{
    gputrace_bench_PbBenchEvent_set_field_int32(m, in->field_int32);
    gputrace_bench_PbBenchEvent_set_field_uint32(m, in->field_uint32);
    gputrace_bench_PbBenchEvent_set_field_int64(m, in->field_int64);
    gputrace_bench_PbBenchEvent_set_field_uint64(m, in->field_uint64);
    gputrace_bench_PbBenchEvent_set_field_string(m, in->field_string);
}

FILL_INLINE void ours_fill_simple(ours_msg *m, const pbb_event *in)
{
    /* One bounds check for the whole event, a constant one (the string's
     * length is found while it is copied), the position in a register. */
    uint8_t *p = gputrace_bench_PbBenchEvent_reserve(m, OURS_SIMPLE_MAX_BYTES);
    uint8_t *end = PB_LIKELY(p != NULL) ? ours_put_simple(p, in) : NULL;
    if (PB_LIKELY(end != NULL))
        gputrace_bench_PbBenchEvent_commit(m, end);
    else
        ours_fill_simple_slow(m, in);
}
/* A level's fields and its child's header in one run. */
FILL_INLINE void ours_fill_and_begin(ours_msg *m, const pbb_event *in, ours_msg *child)
{
    uint8_t *p =
        gputrace_bench_PbBenchEvent_reserve(m, OURS_SIMPLE_MAX_BYTES + PB_NESTED_HEADER_BYTES);
    uint8_t *end = PB_LIKELY(p != NULL) ? ours_put_simple(p, in) : NULL;
    if (PB_LIKELY(end != NULL)) {
        end = gputrace_bench_PbBenchEvent_put_begin_field_nested(end, m, child);
        gputrace_bench_PbBenchEvent_commit(child, end);
        return;
    }
    ours_fill_simple_slow(m, in);
    gputrace_bench_PbBenchEvent_begin_field_nested(m, child);
}
#define ours_begin_nested(m, child) gputrace_bench_PbBenchEvent_begin_field_nested(m, child)
#define ours_end(m)                 gputrace_bench_PbBenchEvent_end(m)
#define ours_init_root(m, s)        gputrace_bench_PbBenchEvent_init_root(m, s)
#else
typedef pb_msg ours_msg;

FILL_INLINE void ours_fill_simple(ours_msg *m, const pbb_event *in)
{
    pb_msg_append_varint(m, PBB_FIELD_INT32, (uint64_t)(int64_t)in->field_int32);
    pb_msg_append_varint(m, PBB_FIELD_UINT32, in->field_uint32);
    pb_msg_append_varint(m, PBB_FIELD_INT64, (uint64_t)in->field_int64);
    pb_msg_append_varint(m, PBB_FIELD_UINT64, in->field_uint64);
    pb_msg_append_string(m, PBB_FIELD_STRING, in->field_string);
}
#define ours_begin_nested(m, child) pb_msg_begin_nested(m, PBB_FIELD_NESTED, child)
FILL_INLINE void ours_fill_and_begin(ours_msg *m, const pbb_event *in, ours_msg *child)
{
    ours_fill_simple(m, in);
    ours_begin_nested(m, child);
}
#define ours_end(m)                 pb_msg_end(m)
#define ours_init_root(m, s)        pb_msg_init_root(m, s)
#endif

/* FillNested(depth) = FillSimple + child if depth < 3, unrolled: each level
 * is filled, then its child begun; the children end innermost first. */
FILL_INLINE void ours_fill_nested(ours_msg *root, const pbb_event *in)
{
    ours_msg levels[PBB_NESTED_DEPTH];
    ours_msg *m = root;
    for (int depth = 0; depth < PBB_NESTED_DEPTH; depth++) {
        ours_fill_and_begin(m, in, &levels[depth]);
        m = &levels[depth];
    }
    ours_fill_simple(m, in);
    for (int depth = PBB_NESTED_DEPTH - 1; depth >= 0; depth--)
        ours_end(&levels[depth]);
}

/* Serializes one message from scratch into ours_buf; returns its size. */
FILL_INLINE uint32_t ours_serialize(const pbb_event *in, int nested)
{
    pb_span span = { ours_buf, ours_buf + sizeof ours_buf };
    pb_stream_reset(&ours_stream, span);
    ours_msg root;
    ours_init_root(&root, &ours_stream);
    if (nested)
        ours_fill_nested(&root, in);
    else
        ours_fill_simple(&root, in);
    return ours_end(&root);
}

static __attribute__((noinline)) uint64_t ours_run_simple(uint64_t iters)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        uint32_t size = ours_serialize(&pbb_inputs[i % PBB_N_INPUTS], 0);
        sum += size + ours_buf[0];
        barrier(ours_buf);
    }
    return sum;
}

static __attribute__((noinline)) uint64_t ours_run_nested(uint64_t iters)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        uint32_t size = ours_serialize(&pbb_inputs[i % PBB_N_INPUTS], 1);
        sum += size + ours_buf[0];
        barrier(ours_buf);
    }
    return sum;
}

/* ---- speed of light ------------------------------------------------------- */

/* The design doc's reference: raw values appended to a linear, aligned
 * buffer; no encoding, no bounds checks, no size bookkeeping. (The doc's
 * version assigns strcpy's return value, which does not advance the
 * pointer; stpcpy does what was meant.) */
typedef struct sol_msg {
    _Alignas(PBB_OUT_ALIGN) uint8_t storage[(PBB_NESTED_DEPTH + 1) * (24 + PBB_STRING_LEN + 8)];
    uint8_t *ptr;
} sol_msg;

static sol_msg sol;

#define SOL_APPEND(m, x)                          \
    do {                                          \
        __typeof__(x) sol_v_ = (x);               \
        memcpy((m)->ptr, &sol_v_, sizeof sol_v_); \
        (m)->ptr += sizeof sol_v_;                \
    } while (0)

FILL_INLINE void sol_fill_simple(sol_msg *m, const pbb_event *in)
{
    SOL_APPEND(m, in->field_int32);
    SOL_APPEND(m, in->field_uint32);
    SOL_APPEND(m, in->field_int64);
    SOL_APPEND(m, in->field_uint64);
    m->ptr = (uint8_t *)stpcpy((char *)m->ptr, in->field_string) + 1;
}

FILL_INLINE void sol_fill_nested(sol_msg *m, const pbb_event *in)
{
    for (int depth = 0; depth <= PBB_NESTED_DEPTH; depth++)
        sol_fill_simple(m, in);
}

static __attribute__((noinline)) uint64_t sol_run_simple(uint64_t iters)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        sol.ptr = sol.storage;
        sol_fill_simple(&sol, &pbb_inputs[i % PBB_N_INPUTS]);
        sum += (uint64_t)(sol.ptr - sol.storage) + sol.storage[0];
        barrier(sol.storage);
    }
    return sum;
}

static __attribute__((noinline)) uint64_t sol_run_nested(uint64_t iters)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        sol.ptr = sol.storage;
        sol_fill_nested(&sol, &pbb_inputs[i % PBB_N_INPUTS]);
        sum += (uint64_t)(sol.ptr - sol.storage) + sol.storage[0];
        barrier(sol.storage);
    }
    return sum;
}

/* ---- correctness checks ----------------------------------------------------- */

/* Deliberately naive encoder: one byte at a time, sizes computed up front. */
static size_t ref_varint(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    do {
        out[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            out[n] |= 0x80;
        n++;
    } while (v);
    return n;
}

static size_t ref_encode(const pbb_event *in, int depth, uint8_t *out)
{
    size_t n = 0;
    n += ref_varint(PBB_FIELD_INT32 << 3, out + n);
    n += ref_varint((uint64_t)(int64_t)in->field_int32, out + n);
    n += ref_varint(PBB_FIELD_UINT32 << 3, out + n);
    n += ref_varint(in->field_uint32, out + n);
    n += ref_varint(PBB_FIELD_INT64 << 3, out + n);
    n += ref_varint((uint64_t)in->field_int64, out + n);
    n += ref_varint(PBB_FIELD_UINT64 << 3, out + n);
    n += ref_varint(in->field_uint64, out + n);
    size_t len = strlen(in->field_string);
    n += ref_varint(PBB_FIELD_STRING << 3 | 2, out + n);
    n += ref_varint(len, out + n);
    memcpy(out + n, in->field_string, len);
    n += len;
    if (depth < PBB_NESTED_DEPTH) {
        n += ref_varint(PBB_FIELD_NESTED << 3 | 2, out + n);
        size_t child = ref_encode(in, depth + 1, out + n + 4);
        /* The writer reserves a 4-byte redundant varint for nested sizes. */
        out[n] = (uint8_t)(0x80 | (child & 0x7f));
        out[n + 1] = (uint8_t)(0x80 | ((child >> 7) & 0x7f));
        out[n + 2] = (uint8_t)(0x80 | ((child >> 14) & 0x7f));
        out[n + 3] = (uint8_t)((child >> 21) & 0x7f);
        n += 4 + child;
    }
    return n;
}

static int check_outputs(void)
{
    for (unsigned i = 0; i < PBB_N_INPUTS; i++) {
        for (int nested = 0; nested <= 1; nested++) {
            uint32_t size = ours_serialize(&pbb_inputs[i], nested);
            const uint8_t *got = ours_buf;
            uint8_t want[1024];
            size_t want_len = ref_encode(&pbb_inputs[i], nested ? 0 : PBB_NESTED_DEPTH, want);
            if (size != want_len || (size_t)(ours_stream.write_ptr - ours_buf) != want_len ||
                memcmp(got, want, want_len) != 0) {
                fprintf(stderr, "bench-pb: writer output differs from reference (input %u, %s)\n",
                        i, nested ? "nested" : "simple");
                return -1;
            }
            if (pb_validate(got, size) != PB_OK)
                return -1;
#ifdef PB_BENCH_HAVE_LIBPROTOBUF
            int rc =
                nested ? pbb_lpb_check_nested(got, size, i) : pbb_lpb_check_simple(got, size, i);
            if (rc != 0)
                return -1;
#endif
        }
    }
    return 0;
}

/* ---- driver ------------------------------------------------------------------- */

typedef uint64_t (*run_fn)(uint64_t iters);

typedef struct serializer {
    const char *name;
    run_fn run;
    double ns[N_BATCHES]; /* per message, one entry per batch */
    double median;
} serializer;

static double median(const double *v, size_t n);

static volatile uint64_t sink;

/* CPU time of this thread: time slices lost to other processes (the
 * machine is shared) do not count, as in the "CPU" column of the design
 * doc's benchmark tables. */
static double time_batch(run_fn run, uint64_t iters)
{
    uint64_t t0 = util_thread_cpu_ns();
    sink += run(iters);
    return (double)(util_thread_cpu_ns() - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(serializer *sers, size_t n)
{
    /* Calibrate on ours (the first) so a batch takes BATCH_TARGET_NS. */
    uint64_t iters = 1024;
    for (;;) {
        double t = time_batch(sers[0].run, iters);
        if (t >= BATCH_TARGET_NS / 4 || iters >= (1ull << 30)) {
            double scaled = (double)iters * BATCH_TARGET_NS / (t > 1 ? t : 1);
            iters = scaled < 1024 ? 1024 : (uint64_t)scaled;
            break;
        }
        iters *= 2;
    }
    for (size_t k = 0; k < n; k++) /* warm-up */
        time_batch(sers[k].run, iters / 4 + 1);
    for (int b = 0; b < N_BATCHES; b++) {
        /* Rotate the order too, so no serializer always runs first. */
        for (size_t j = 0; j < n; j++) {
            serializer *s = &sers[(j + (size_t)b) % n];
            s->ns[b] = time_batch(s->run, iters) / (double)iters;
        }
    }
    for (size_t k = 0; k < n; k++)
        sers[k].median = median(sers[k].ns, N_BATCHES);
}

static double median(const double *v, size_t n)
{
    double sorted[N_BATCHES];
    memcpy(sorted, v, n * sizeof v[0]);
    qsort(sorted, n, sizeof sorted[0], cmp_double);
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* Median over rounds of a / b within each round: the serializers of a
 * round ran back to back, so they saw about the same machine. */
static double ratio(const serializer *a, const serializer *b)
{
    double r[N_BATCHES];
    for (int i = 0; i < N_BATCHES; i++)
        r[i] = a->ns[i] / b->ns[i];
    return median(r, N_BATCHES);
}

int main(void)
{
    init_inputs();
    pb_stream_init(&ours_stream, &ours_delegate);
    if (check_outputs() != 0)
        return 1;

    serializer simple[] = {
        { .name = "ours", .run = ours_run_simple },
        { .name = "sol", .run = sol_run_simple },
#ifdef PB_BENCH_HAVE_LIBPROTOBUF
        { .name = "libprotobuf", .run = pbb_lpb_run_simple },
#endif
    };
    serializer nested[] = {
        { .name = "ours", .run = ours_run_nested },
        { .name = "sol", .run = sol_run_nested },
#ifdef PB_BENCH_HAVE_LIBPROTOBUF
        { .name = "libprotobuf", .run = pbb_lpb_run_nested },
#endif
    };
    size_t n = sizeof simple / sizeof simple[0];
    measure(simple, n);
    measure(nested, n);

    for (size_t k = 0; k < n; k++)
        printf("BENCH pb_simple_%s_ns %.2f ns\n", simple[k].name, simple[k].median);
    for (size_t k = 0; k < n; k++)
        printf("BENCH pb_nested_%s_ns %.2f ns\n", nested[k].name, nested[k].median);
    printf("BENCH pb_simple_vs_sol %.2f x\n", ratio(&simple[0], &simple[1]));
    printf("BENCH pb_nested_vs_sol %.2f x\n", ratio(&nested[0], &nested[1]));
#ifdef PB_BENCH_HAVE_LIBPROTOBUF
    printf("BENCH pb_simple_libprotobuf_over_ours %.2f x\n", ratio(&simple[2], &simple[0]));
    printf("BENCH pb_nested_libprotobuf_over_ours %.2f x\n", ratio(&nested[2], &nested[0]));
#else
    fprintf(stderr, "bench-pb: built without libprotobuf; its figures are missing\n");
#endif
    return 0;
}
