/* SPDX-License-Identifier: MIT */
// libprotobuf cross-check of the C code protoc-gen-pbc generates, in both
// directions, on the pbtest reference messages (pbtest_fill.h):
//   C writer -> libprotobuf parser: every field value, and no unknown fields
//     (which would mean a tag or wire type libprotobuf does not expect);
//   libprotobuf serializer -> generated C decoders: every field value;
//   and, where our writer's output is canonical (no nested messages, whose
//   lengths we reserve as 4-byte varints), the bytes are identical.
// libprotobuf is a test-only dependency.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pbtest.pb.h"
#include "tests/codegen/pbtest_fill.h"

namespace
{

int failures = 0;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

template <size_t N, typename T, typename R> void check_repeated(const R &got, const T (&want)[N])
{
    CHECK(static_cast<size_t>(got.size()) == N);
    for (size_t i = 0; i < N && i < static_cast<size_t>(got.size()); i++)
        CHECK(got.Get(static_cast<int>(i)) == want[i]);
}

template <size_t N, typename T, typename R> void fill_repeated(R *dst, const T (&src)[N])
{
    for (size_t i = 0; i < N; i++)
        dst->Add(src[i]);
}

std::string bytes_of(const uint8_t *p, size_t n)
{
    return std::string(reinterpret_cast<const char *>(p), n);
}

bool no_unknown_fields(const google::protobuf::Message &m)
{
    return m.GetReflection()->GetUnknownFields(m).empty();
}

// ---- pbtest.Scalars ----

void fill_scalars(pbtest::Scalars *m)
{
    m->set_f_double(PBT_F_DOUBLE);
    m->set_f_float(PBT_F_FLOAT);
    m->set_f_int64(PBT_F_INT64);
    m->set_f_uint64(PBT_F_UINT64);
    m->set_f_int32(PBT_F_INT32);
    m->set_f_fixed64(PBT_F_FIXED64);
    m->set_f_fixed32(PBT_F_FIXED32);
    m->set_f_bool(PBT_F_BOOL);
    m->set_f_string(PBT_F_STRING);
    m->set_f_bytes(bytes_of(pbt_f_bytes, PBT_F_BYTES_LEN));
    m->set_f_uint32(PBT_F_UINT32);
    m->set_f_enum(pbtest::COLOR_NEGATIVE);
    m->set_f_sfixed32(PBT_F_SFIXED32);
    m->set_f_sfixed64(PBT_F_SFIXED64);
    m->set_f_sint32(PBT_F_SINT32);
    m->set_f_sint64(PBT_F_SINT64);
}

void check_scalars(const pbtest::Scalars &m)
{
    CHECK(m.has_f_double() && m.f_double() == PBT_F_DOUBLE);
    CHECK(m.has_f_float() && m.f_float() == PBT_F_FLOAT);
    CHECK(m.has_f_int64() && m.f_int64() == PBT_F_INT64);
    CHECK(m.has_f_uint64() && m.f_uint64() == PBT_F_UINT64);
    CHECK(m.has_f_int32() && m.f_int32() == PBT_F_INT32);
    CHECK(m.has_f_fixed64() && m.f_fixed64() == PBT_F_FIXED64);
    CHECK(m.has_f_fixed32() && m.f_fixed32() == PBT_F_FIXED32);
    CHECK(m.has_f_bool() && m.f_bool() == PBT_F_BOOL);
    CHECK(m.has_f_string() && m.f_string() == PBT_F_STRING);
    CHECK(m.has_f_bytes() && m.f_bytes() == bytes_of(pbt_f_bytes, PBT_F_BYTES_LEN));
    CHECK(m.has_f_uint32() && m.f_uint32() == PBT_F_UINT32);
    CHECK(m.has_f_enum() && m.f_enum() == pbtest::COLOR_NEGATIVE);
    CHECK(m.f_enum() == PBT_F_ENUM);
    CHECK(m.has_f_sfixed32() && m.f_sfixed32() == PBT_F_SFIXED32);
    CHECK(m.has_f_sfixed64() && m.f_sfixed64() == PBT_F_SFIXED64);
    CHECK(m.has_f_sint32() && m.f_sint32() == PBT_F_SINT32);
    CHECK(m.has_f_sint64() && m.f_sint64() == PBT_F_SINT64);
    CHECK(no_unknown_fields(m));
}

// ---- pbtest.Repeated ----

void fill_repeated(pbtest::Repeated *m)
{
    fill_repeated(m->mutable_r_double(), pbt_r_double);
    fill_repeated(m->mutable_r_float(), pbt_r_float);
    fill_repeated(m->mutable_r_int64(), pbt_r_int64);
    fill_repeated(m->mutable_r_uint64(), pbt_r_uint64);
    fill_repeated(m->mutable_r_int32(), pbt_r_int32);
    fill_repeated(m->mutable_r_fixed64(), pbt_r_fixed64);
    fill_repeated(m->mutable_r_fixed32(), pbt_r_fixed32);
    fill_repeated(m->mutable_r_bool(), pbt_r_bool);
    m->add_r_string(pbt_r_string[0]);
    m->add_r_string(pbt_r_string[1]);
    m->add_r_bytes(bytes_of(pbt_r_bytes0, sizeof pbt_r_bytes0));
    m->add_r_bytes(std::string());
    fill_repeated(m->mutable_r_uint32(), pbt_r_uint32);
    for (int32_t v : pbt_r_enum)
        m->add_r_enum(static_cast<pbtest::Color>(v));
    fill_repeated(m->mutable_r_sfixed32(), pbt_r_sfixed32);
    fill_repeated(m->mutable_r_sfixed64(), pbt_r_sfixed64);
    fill_repeated(m->mutable_r_sint32(), pbt_r_sint32);
    fill_repeated(m->mutable_r_sint64(), pbt_r_sint64);
}

void check_repeated(const pbtest::Repeated &m)
{
    check_repeated(m.r_double(), pbt_r_double);
    check_repeated(m.r_float(), pbt_r_float);
    check_repeated(m.r_int64(), pbt_r_int64);
    check_repeated(m.r_uint64(), pbt_r_uint64);
    check_repeated(m.r_int32(), pbt_r_int32);
    check_repeated(m.r_fixed64(), pbt_r_fixed64);
    check_repeated(m.r_fixed32(), pbt_r_fixed32);
    check_repeated(m.r_bool(), pbt_r_bool);
    CHECK(m.r_string_size() == 2 && m.r_string(0) == pbt_r_string[0] &&
          m.r_string(1) == pbt_r_string[1]);
    CHECK(m.r_bytes_size() == 2 && m.r_bytes(0) == bytes_of(pbt_r_bytes0, sizeof pbt_r_bytes0) &&
          m.r_bytes(1).empty());
    check_repeated(m.r_uint32(), pbt_r_uint32);
    check_repeated(m.r_enum(), pbt_r_enum);
    check_repeated(m.r_sfixed32(), pbt_r_sfixed32);
    check_repeated(m.r_sfixed64(), pbt_r_sfixed64);
    check_repeated(m.r_sint32(), pbt_r_sint32);
    check_repeated(m.r_sint64(), pbt_r_sint64);
    CHECK(no_unknown_fields(m));
}

// ---- pbtest.Packed ----

void fill_packed(pbtest::Packed *m)
{
    fill_repeated(m->mutable_p_double(), pbt_p_double);
    fill_repeated(m->mutable_p_float(), pbt_p_float);
    fill_repeated(m->mutable_p_int64(), pbt_p_int64);
    fill_repeated(m->mutable_p_uint64(), pbt_p_uint64);
    fill_repeated(m->mutable_p_int32(), pbt_p_int32);
    fill_repeated(m->mutable_p_fixed64(), pbt_p_fixed64);
    fill_repeated(m->mutable_p_fixed32(), pbt_p_fixed32);
    fill_repeated(m->mutable_p_bool(), pbt_p_bool);
    fill_repeated(m->mutable_p_uint32(), pbt_p_uint32);
    for (int32_t v : pbt_p_enum)
        m->add_p_enum(static_cast<pbtest::Color>(v));
    fill_repeated(m->mutable_p_sfixed32(), pbt_p_sfixed32);
    fill_repeated(m->mutable_p_sfixed64(), pbt_p_sfixed64);
    fill_repeated(m->mutable_p_sint32(), pbt_p_sint32);
    fill_repeated(m->mutable_p_sint64(), pbt_p_sint64);
}

void check_packed(const pbtest::Packed &m)
{
    check_repeated(m.p_double(), pbt_p_double);
    check_repeated(m.p_float(), pbt_p_float);
    check_repeated(m.p_int64(), pbt_p_int64);
    check_repeated(m.p_uint64(), pbt_p_uint64);
    check_repeated(m.p_int32(), pbt_p_int32);
    check_repeated(m.p_fixed64(), pbt_p_fixed64);
    check_repeated(m.p_fixed32(), pbt_p_fixed32);
    check_repeated(m.p_bool(), pbt_p_bool);
    check_repeated(m.p_uint32(), pbt_p_uint32);
    check_repeated(m.p_enum(), pbt_p_enum);
    check_repeated(m.p_sfixed32(), pbt_p_sfixed32);
    check_repeated(m.p_sfixed64(), pbt_p_sfixed64);
    check_repeated(m.p_sint32(), pbt_p_sint32);
    check_repeated(m.p_sint64(), pbt_p_sint64);
    CHECK(no_unknown_fields(m));
}

// ---- pbtest.Outer ----

void fill_outer(pbtest::Outer *m)
{
    m->set_mode(pbtest::Outer::MODE_AUTO);
    pbtest::Outer::Middle *mid = m->mutable_middle();
    mid->set_id(7);
    mid->mutable_leaf()->set_depth(3);
    mid->mutable_leaf()->set_tag("leaf");
    mid->add_leaves()->set_depth(4);
    mid->add_leaves()->set_tag("b");
    m->add_middles()->set_id(1);
    mid = m->add_middles();
    mid->set_id(2);
    mid->mutable_leaf()->set_depth(9);
    m->mutable_point()->set_x(-5);
    m->mutable_point()->set_y(6);
    m->mutable_point()->set_label("p");
    m->add_points()->set_x(1);
    m->add_points()->set_y(-1);
    m->set_dep_color(pbtest::dep::DEP_NEGATIVE);
    fill_scalars(m->mutable_scalars());
    m->set_default_(42);
    m->set_register_("rax");
    m->add_case_(1);
    m->add_case_(2);
    m->add_case_(3);
    m->set_true_(true);
    m->set_choice_number(-9);
    (*m->mutable_counts())["k"] = 5;
    m->set_wide_tag(PBT_WIDE_TAG);
    m->set_max_field(PBT_MAX_FIELD);
}

void check_leaf(const pbtest::Outer::Middle::Leaf &l, bool has_depth, int32_t depth,
                const char *tag)
{
    CHECK(l.has_depth() == has_depth && l.depth() == (has_depth ? depth : 0));
    CHECK(l.has_tag() == (tag != nullptr) && (!tag || l.tag() == tag));
    CHECK(no_unknown_fields(l));
}

void check_outer(const pbtest::Outer &m)
{
    CHECK(m.has_mode() && m.mode() == pbtest::Outer::MODE_AUTO);
    CHECK(m.has_middle());
    const pbtest::Outer::Middle &mid = m.middle();
    CHECK(mid.has_id() && mid.id() == 7 && mid.has_leaf());
    check_leaf(mid.leaf(), true, 3, "leaf");
    CHECK(mid.leaves_size() == 2);
    if (mid.leaves_size() == 2) {
        check_leaf(mid.leaves(0), true, 4, nullptr);
        check_leaf(mid.leaves(1), false, 0, "b");
    }
    CHECK(m.middles_size() == 2);
    if (m.middles_size() == 2) {
        CHECK(m.middles(0).id() == 1 && !m.middles(0).has_leaf());
        CHECK(m.middles(1).id() == 2 && m.middles(1).has_leaf());
        check_leaf(m.middles(1).leaf(), true, 9, nullptr);
    }
    CHECK(m.has_point() && m.point().x() == -5 && m.point().y() == 6 && m.point().label() == "p");
    CHECK(m.points_size() == 2);
    if (m.points_size() == 2) {
        CHECK(m.points(0).has_x() && m.points(0).x() == 1 && !m.points(0).has_y());
        CHECK(!m.points(1).has_x() && m.points(1).has_y() && m.points(1).y() == -1);
    }
    CHECK(m.has_dep_color() && m.dep_color() == pbtest::dep::DEP_NEGATIVE);
    CHECK(m.has_scalars());
    check_scalars(m.scalars());
    CHECK(m.has_default_() && m.default_() == 42);
    CHECK(m.has_register_() && m.register_() == "rax");
    CHECK(m.case__size() == 3 && m.case_(0) == 1 && m.case_(1) == 2 && m.case_(2) == 3);
    CHECK(m.has_true_() && m.true_());
    CHECK(m.choice_case() == pbtest::Outer::kChoiceNumber && m.choice_number() == -9);
    CHECK(m.counts_size() == 1 && m.counts().count("k") == 1 && m.counts().at("k") == 5);
    CHECK(m.has_wide_tag() && m.wide_tag() == PBT_WIDE_TAG);
    CHECK(m.has_max_field() && m.max_field() == PBT_MAX_FIELD);
    CHECK(no_unknown_fields(m));
}

// Runs both directions for one message type.
template <typename Msg>
void cross_check(const char *name, uint8_t *(*c_write)(size_t, size_t *),
                 int (*c_check)(const void *, size_t), void (*fill)(Msg *),
                 void (*check)(const Msg &), bool canonical)
{
    int before = failures;
    size_t len = 0;
    uint8_t *c_bytes = c_write(1 << 16, &len);
    CHECK(c_bytes != nullptr);
    if (!c_bytes)
        return;

    Msg parsed;
    CHECK(parsed.ParseFromArray(c_bytes, static_cast<int>(len)));
    check(parsed);

    Msg filled;
    fill(&filled);
    std::string cpp_bytes;
    CHECK(filled.SerializeToString(&cpp_bytes));
    int c_failures = c_check(cpp_bytes.data(), cpp_bytes.size());
    CHECK(c_failures == 0);
    failures += c_failures;

    // Same message either way: libprotobuf re-serializes what it parsed from
    // our bytes exactly as what it built itself.
    std::string reserialized;
    CHECK(parsed.SerializeToString(&reserialized));
    CHECK(reserialized == cpp_bytes);
    if (canonical)
        CHECK(bytes_of(c_bytes, len) == cpp_bytes);

    std::free(c_bytes);
    std::printf("%s %s\n", failures == before ? "ok" : "FAILED", name);
}

} // namespace

int main()
{
    GOOGLE_PROTOBUF_VERIFY_VERSION;
    cross_check<pbtest::Scalars>("Scalars", pbtest_write_scalars, pbtest_check_scalars,
                                 fill_scalars, check_scalars, true);
    cross_check<pbtest::Scalars>("Scalars (runs)", pbtest_write_scalars_runs, pbtest_check_scalars,
                                 fill_scalars, check_scalars, true);
    cross_check<pbtest::Repeated>("Repeated", pbtest_write_repeated, pbtest_check_repeated,
                                  fill_repeated, check_repeated, true);
    cross_check<pbtest::Packed>("Packed", pbtest_write_packed, pbtest_check_packed, fill_packed,
                                check_packed, true);
    cross_check<pbtest::Outer>("Outer", pbtest_write_outer, pbtest_check_outer, fill_outer,
                               check_outer, false);
    google::protobuf::ShutdownProtobufLibrary();
    if (failures) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    return 0;
}
