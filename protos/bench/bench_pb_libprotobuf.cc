/* SPDX-License-Identifier: MIT */
// libprotobuf C++ side of bench_pb: the same two message shapes serialized
// the way a libprotobuf user would do it on a hot path (one message object
// reused with Clear() + setters, SerializeToArray into a reserved buffer).
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "protos/bench/bench_pb.h"
#include "pb_bench.pb.h"

using gputrace::bench::PbBenchEvent;

namespace
{

// Large enough for the nested shape (four events of under 100 bytes each);
// aligned as explained in bench_pb.h.
constexpr size_t kOutCap = 1024;
alignas(PBB_OUT_ALIGN) uint8_t g_out[kOutCap];

inline void Barrier(const void *p)
{
    // Makes the output observable and stops the compiler from moving work
    // across iterations (see barrier() in bench_pb.c, also for why the
    // checksum reads the first byte of the output).
    __asm__ volatile("" : : "r"(p) : "memory");
}

inline void FillSimple(PbBenchEvent *msg, const pbb_event &in)
{
    msg->set_field_int32(in.field_int32);
    msg->set_field_uint32(in.field_uint32);
    msg->set_field_int64(in.field_int64);
    msg->set_field_uint64(in.field_uint64);
    msg->set_field_string(in.field_string);
}

void FillNested(PbBenchEvent *msg, const pbb_event &in, int depth)
{
    FillSimple(msg, in);
    if (depth < PBB_NESTED_DEPTH)
        FillNested(msg->add_field_nested(), in, depth + 1);
}

PbBenchEvent &Message()
{
    static PbBenchEvent *msg = new PbBenchEvent();
    return *msg;
}

template <bool kNested> uint64_t Run(uint64_t iters)
{
    PbBenchEvent &msg = Message();
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        const pbb_event &in = pbb_inputs[i % PBB_N_INPUTS];
        msg.Clear();
        if (kNested)
            FillNested(&msg, in, 0);
        else
            FillSimple(&msg, in);
        // SerializeToArray computes (and caches) the size itself; reading
        // the cached value adds no second pass.
        msg.SerializeToArray(g_out, static_cast<int>(kOutCap));
        size_t size = static_cast<size_t>(msg.GetCachedSize());
        sum += size + g_out[0];
        Barrier(g_out);
    }
    return sum;
}

int Compare(const PbBenchEvent &got, const pbb_event &want, int depth)
{
    int bad = 0;
    if (!got.has_field_int32() || got.field_int32() != want.field_int32)
        bad = 1;
    if (!got.has_field_uint32() || got.field_uint32() != want.field_uint32)
        bad = 1;
    if (!got.has_field_int64() || got.field_int64() != want.field_int64)
        bad = 1;
    if (!got.has_field_uint64() || got.field_uint64() != want.field_uint64)
        bad = 1;
    if (!got.has_field_string() || got.field_string() != want.field_string)
        bad = 1;
    if (got.field_nested_size() != (depth > 0 ? 1 : 0))
        bad = 1;
    if (bad) {
        std::fprintf(stderr, "bench-pb: libprotobuf parsed a different event:\n%s",
                     got.DebugString().c_str());
        return -1;
    }
    if (depth > 0)
        return Compare(got.field_nested(0), want, depth - 1);
    return 0;
}

int Check(const uint8_t *data, size_t len, unsigned input, int depth)
{
    PbBenchEvent msg;
    if (!msg.ParseFromArray(data, static_cast<int>(len))) {
        std::fprintf(stderr, "bench-pb: libprotobuf rejects our %zu bytes\n", len);
        return -1;
    }
    // Unknown fields would mean we wrote a field number or wire type the
    // schema does not expect.
    if (msg.GetReflection()->GetUnknownFields(msg).field_count() != 0) {
        std::fprintf(stderr, "bench-pb: unexpected unknown fields\n");
        return -1;
    }
    return Compare(msg, pbb_inputs[input % PBB_N_INPUTS], depth);
}

} // namespace

extern "C" uint64_t pbb_lpb_run_simple(uint64_t iters)
{
    return Run<false>(iters);
}
extern "C" uint64_t pbb_lpb_run_nested(uint64_t iters)
{
    return Run<true>(iters);
}

extern "C" int pbb_lpb_check_simple(const uint8_t *data, size_t len, unsigned input)
{
    return Check(data, len, input, 0);
}

extern "C" int pbb_lpb_check_nested(const uint8_t *data, size_t len, unsigned input)
{
    return Check(data, len, input, PBB_NESTED_DEPTH);
}
