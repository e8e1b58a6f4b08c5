/* SPDX-License-Identifier: MIT */
// Cross-check of our pb writer and reader against libprotobuf (test-only
// dependency), without any .proto: google::protobuf::UnknownFieldSet parses
// and builds arbitrary wire data.
//   - ours -> libprotobuf: random trees written by our writer (various slice
//     sizes) parse as an UnknownFieldSet with exactly the model's fields, in
//     order, with the same values; nested messages (with our redundant 4-byte
//     sizes) parse recursively; packed payloads decode with libprotobuf's
//     CodedInputStream to the same elements.
//   - libprotobuf -> ours: the same trees built as UnknownFieldSets (nested
//     messages serialized by libprotobuf, minimal sizes; packed payloads
//     written by CodedOutputStream) and serialized by libprotobuf read back
//     with our reader to the same model.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "protos/pb/pb_heap.h"
#include "protos/pb/pb_reader.h"
#include "tests/pb/pb_test_util.h"
#include "protos/pb/pb_writer.h"
}

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;
using google::protobuf::io::ArrayInputStream;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;

namespace
{

bool IsFixed32(uint8_t k)
{
    return k == PBT_PACKED_F32;
}
bool IsFixed64(uint8_t k)
{
    return k == PBT_PACKED_F64;
}

bool ComparePacked(const std::string &payload, const pbt_field &f, std::string *why)
{
    ArrayInputStream in(payload.data(), static_cast<int>(payload.size()));
    CodedInputStream cis(&in);
    for (size_t i = 0; i < f.len; i++) {
        uint64_t got = 0;
        bool ok;
        if (IsFixed32(f.packed_kind)) {
            uint32_t v = 0;
            ok = cis.ReadLittleEndian32(&v);
            got = v;
        } else if (IsFixed64(f.packed_kind)) {
            ok = cis.ReadLittleEndian64(&got);
        } else {
            ok = cis.ReadVarint64(&got);
        }
        if (!ok || got != f.packed_wire[i]) {
            *why = "packed element " + std::to_string(i) + " of field " + std::to_string(f.id);
            return false;
        }
    }
    if (cis.CurrentPosition() != static_cast<int>(payload.size())) {
        *why = "packed field " + std::to_string(f.id) + " has trailing bytes";
        return false;
    }
    return true;
}

bool Compare(const UnknownFieldSet &u, const pbt_msg &m, std::string *why)
{
    if (static_cast<size_t>(u.field_count()) != m.n) {
        *why = "libprotobuf sees " + std::to_string(u.field_count()) + " fields, model has " +
               std::to_string(m.n);
        return false;
    }
    for (size_t i = 0; i < m.n; i++) {
        const UnknownField &uf = u.field(static_cast<int>(i));
        const pbt_field &f = m.fields[i];
        std::string where = "field #" + std::to_string(i) + " (id " + std::to_string(f.id) + ")";
        if (uf.number() != static_cast<int>(f.id)) {
            *why = where + ": number " + std::to_string(uf.number());
            return false;
        }
        bool ok = true;
        switch (f.kind) {
        case PBT_VARINT:
        case PBT_RAW:
            ok = uf.type() == UnknownField::TYPE_VARINT && uf.varint() == f.value;
            break;
        case PBT_FIXED32:
            ok = uf.type() == UnknownField::TYPE_FIXED32 && uf.fixed32() == f.value;
            break;
        case PBT_FIXED64:
            ok = uf.type() == UnknownField::TYPE_FIXED64 && uf.fixed64() == f.value;
            break;
        case PBT_BYTES:
        case PBT_STRING:
            ok =
                uf.type() == UnknownField::TYPE_LENGTH_DELIMITED &&
                uf.length_delimited() == std::string(reinterpret_cast<const char *>(f.data), f.len);
            break;
        case PBT_NESTED: {
            if (uf.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
                ok = false;
                break;
            }
            UnknownFieldSet child;
            if (!child.ParseFromString(uf.length_delimited())) {
                *why = where + ": nested payload rejected by libprotobuf";
                return false;
            }
            if (!Compare(child, *f.child, why)) {
                *why = where + " > " + *why;
                return false;
            }
            break;
        }
        default:
            if (uf.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
                ok = false;
                break;
            }
            if (!ComparePacked(uf.length_delimited(), f, why))
                return false;
            break;
        }
        if (!ok) {
            *why = where + ": type or value differs";
            return false;
        }
    }
    return true;
}

void Build(UnknownFieldSet *u, const pbt_msg &m)
{
    for (size_t i = 0; i < m.n; i++) {
        const pbt_field &f = m.fields[i];
        int id = static_cast<int>(f.id);
        switch (f.kind) {
        case PBT_VARINT:
        case PBT_RAW:
            u->AddVarint(id, f.value);
            break;
        case PBT_FIXED32:
            u->AddFixed32(id, static_cast<uint32_t>(f.value));
            break;
        case PBT_FIXED64:
            u->AddFixed64(id, f.value);
            break;
        case PBT_BYTES:
        case PBT_STRING:
            u->AddLengthDelimited(id, std::string(reinterpret_cast<const char *>(f.data), f.len));
            break;
        case PBT_NESTED: {
            UnknownFieldSet child;
            Build(&child, *f.child);
            std::string s;
            child.SerializeToString(&s);
            u->AddLengthDelimited(id, s);
            break;
        }
        default: {
            std::string s;
            {
                StringOutputStream out(&s);
                CodedOutputStream cos(&out);
                for (size_t k = 0; k < f.len; k++) {
                    if (IsFixed32(f.packed_kind))
                        cos.WriteLittleEndian32(static_cast<uint32_t>(f.packed_wire[k]));
                    else if (IsFixed64(f.packed_kind))
                        cos.WriteLittleEndian64(f.packed_wire[k]);
                    else
                        cos.WriteVarint64(f.packed_wire[k]);
                }
            }
            u->AddLengthDelimited(id, s);
            break;
        }
        }
    }
}

pbt_gen_opts Opts()
{
    pbt_gen_opts o;
    o.max_depth = 6;
    o.max_fields = 8;
    o.max_total = 100;
    o.max_bytes_len = 2000;
    o.max_packed = 40;
    o.nested_pct = 20;
    return o;
}

void TestOursToLibprotobuf(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 0x11b9b0f);
    const pbt_gen_opts opts = Opts();
    static const size_t kSlices[] = { PB_MIN_BUFFER_BYTES, 29, 4096 };
    for (int t = 0; t < 1000; t++) {
        pbt_arena a = { nullptr };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        pb_heap_buffer h;
        pb_heap_init(&h, kSlices[t % 3]);
        pb_msg *pool =
            static_cast<pb_msg *>(pbt_alloc(&a, (pbt_count_nested(m) + 1) * sizeof(pb_msg)));
        assert_int_equal(pbt_write(pb_heap_stream(&h), m, pool), 0);
        size_t len = 0;
        uint8_t *bytes = pb_heap_dup(&h, &len);
        assert_non_null(bytes);
        UnknownFieldSet u;
        if (!u.ParseFromArray(bytes, static_cast<int>(len)))
            fail_msg("tree %d: libprotobuf rejects our %zu bytes", t, len);
        std::string why;
        if (!Compare(u, *m, &why))
            fail_msg("tree %d: %s", t, why.c_str());
        free(bytes);
        pb_heap_free(&h);
        pbt_arena_free(&a);
    }
}

void TestLibprotobufToOurs(void **state)
{
    (void)state;
    pbt_rng r;
    pbt_rng_seed(&r, 0x2b9b0f);
    const pbt_gen_opts opts = Opts();
    for (int t = 0; t < 1000; t++) {
        pbt_arena a = { nullptr };
        pbt_msg *m = pbt_gen(&a, &r, &opts);
        UnknownFieldSet u;
        Build(&u, *m);
        std::string s;
        assert_true(u.SerializeToString(&s));
        uint8_t *exact = pbt_exact_copy(s.data(), s.size());
        char why[256];
        if (!pbt_check(exact, s.size(), m, why, sizeof why))
            fail_msg("tree %d: %s", t, why);
        /* Same fields, but libprotobuf's nested sizes are minimal, so ours
         * can only be longer, by at most 3 bytes per nested message. */
        size_t ours = pbt_ref_size(m);
        assert_true(ours >= s.size());
        assert_true(ours - s.size() <= 3 * pbt_count_nested(m));
        free(exact);
        pbt_arena_free(&a);
    }
}

} // namespace

int main()
{
    GOOGLE_PROTOBUF_VERIFY_VERSION;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(TestOursToLibprotobuf),
        cmocka_unit_test(TestLibprotobufToOurs),
    };
    int rc = cmocka_run_group_tests(tests, nullptr, nullptr);
    google::protobuf::ShutdownProtobufLibrary();
    return rc;
}
