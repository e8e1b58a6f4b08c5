/* SPDX-License-Identifier: MIT */
/* SMB ABI: the byte layout and state encoding must be Perfetto's exactly
 * (shared_memory_abi.h in google/perfetto), so these tests pin bytes, not
 * just round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracing/smb_abi.h"

static uint8_t *alloc_smb(size_t size)
{
    uint8_t *p = aligned_alloc(4096, size);
    memset(p, 0, size);
    return p;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_geometry(void **state)
{
    (void)state;
    uint8_t *mem = alloc_smb(65536);
    smb_abi abi;
    assert_true(smb_abi_init(&abi, mem, 16384, 4096));
    assert_int_equal(abi.num_pages, 4);
    /* ((4096 - 8) / n) rounded down to 4: the sizes a Perfetto peer uses. */
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_NOT_PARTITIONED], 0);
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV1], 4088);
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV2], 2044);
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV4], 1020);
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV7], 584);
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV14], 292);
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV_RESERVED1], 0);
    assert_true(smb_abi_init(&abi, mem, 65536, 65536));
    assert_int_equal(abi.chunk_sizes[SMB_PAGE_DIV1], 65528);

    /* Bad geometry. */
    assert_false(smb_abi_init(&abi, mem, 16384, 2048));
    assert_false(smb_abi_init(&abi, mem, 16384, 6144));
    assert_false(smb_abi_init(&abi, mem, 10000, 4096));
    assert_false(smb_abi_init(&abi, mem + 8, 16384, 4096));
    assert_false(smb_abi_init(&abi, mem, 131072, 131072));
    free(mem);
}

static void test_header_layout(void **state)
{
    (void)state;
    /* Offsets and widths (also static_asserts in the header). */
    assert_int_equal(sizeof(smb_page_header), 8);
    assert_int_equal(sizeof(smb_chunk_header), 8);
    assert_int_equal(offsetof(smb_chunk_header, chunk_id), 0);
    assert_int_equal(offsetof(smb_chunk_header, writer_id), 4);
    assert_int_equal(offsetof(smb_chunk_header, packets), 6);
    /* packets = count:10 | flags:6 (bit-field order on little-endian). */
    assert_int_equal(smb_packets_make(3, SMB_CHUNK_FIRST_PACKET_CONTINUES), 3 | 1 << 10);
    assert_int_equal(smb_packets_make(1023, 7), 0x3FF | 7 << 10);
    assert_int_equal(smb_packets_count(0x1C05), 5);
    assert_int_equal(smb_packets_flags(0x1C05), 7);
    assert_int_equal(SMB_PACKET_SIZE_DROP_PACKET, (1u << 28) - 1);
}

static void test_partition_and_states(void **state)
{
    (void)state;
    uint8_t *mem = alloc_smb(8192);
    smb_abi abi;
    assert_true(smb_abi_init(&abi, mem, 8192, 4096));
    assert_int_equal(smb_free_chunks(&abi, 0), 0); /* unpartitioned */
    assert_true(smb_try_partition_page(&abi, 0, SMB_PAGE_DIV4));
    assert_false(smb_try_partition_page(&abi, 0, SMB_PAGE_DIV4));
    /* Layout 3 (Div4) in bits 28..30, all chunks free. */
    assert_int_equal(le32(mem), 3u << 28);
    assert_int_equal(smb_free_chunks(&abi, 0), 0xF);

    smb_chunk_header_value hv = { .chunk_id = 0x01020304,
                                  .writer_id = 0x0506,
                                  .packets =
                                      smb_packets_make(1, SMB_CHUNK_FIRST_PACKET_CONTINUES) };
    smb_chunk c;
    assert_true(smb_try_acquire_chunk_for_writing(&abi, 0, 2, &hv, &c));
    assert_ptr_equal(c.begin, mem + 8 + 2 * 1020);
    assert_int_equal(c.size, 1020);
    /* Chunk 2 BEING_WRITTEN (1) at bits 4..5. */
    assert_int_equal(le32(mem), 3u << 28 | 1u << 4);
    /* Header bytes: chunk_id LE, writer_id LE, packets LE. */
    const uint8_t want[8] = { 0x04, 0x03, 0x02, 0x01, 0x06, 0x05, 0x01, 0x04 };
    assert_memory_equal(c.begin, want, 8);
    assert_false(smb_try_acquire_chunk_for_writing(&abi, 0, 2, &hv, &c));
    assert_false(smb_try_acquire_chunk_for_reading(&abi, 0, 2, &c));

    assert_int_equal(smb_chunk_inc_packet_count(&c), 2);
    smb_chunk_set_flags(&c, SMB_CHUNK_LAST_PACKET_CONTINUES);
    assert_int_equal(smb_chunk_load_packets(&c), smb_packets_make(2, 3));
    assert_true(smb_release_chunk_as_complete(&abi, &c));
    assert_int_equal(le32(mem), 3u << 28 | 3u << 4); /* COMPLETE = 3 */
    assert_false(smb_release_chunk_as_complete(&abi, &c));

    smb_chunk r;
    assert_true(smb_try_acquire_chunk_for_reading(&abi, 0, 2, &r));
    assert_ptr_equal(r.begin, c.begin);
    assert_int_equal(le32(mem), 3u << 28 | 2u << 4); /* BEING_READ = 2 */
    assert_true(smb_release_chunk_as_free(&abi, &r));
    /* Last busy chunk freed: the page is unpartitioned again, header zero. */
    assert_int_equal(le32(mem), 0);
    const uint8_t zero[8] = { 0 };
    assert_memory_equal(c.begin, zero, 8);
    free(mem);
}

static void test_page_stays_partitioned_while_busy(void **state)
{
    (void)state;
    uint8_t *mem = alloc_smb(4096);
    smb_abi abi;
    assert_true(smb_abi_init(&abi, mem, 4096, 4096));
    assert_true(smb_try_partition_page(&abi, 0, SMB_PAGE_DIV14));
    assert_int_equal(smb_free_chunks(&abi, 0), 0x3FFF);
    smb_chunk_header_value hv = { .chunk_id = 1, .writer_id = 1 };
    smb_chunk a, b;
    assert_true(smb_try_acquire_chunk_for_writing(&abi, 0, 0, &hv, &a));
    assert_true(smb_try_acquire_chunk_for_writing(&abi, 0, 13, &hv, &b));
    assert_int_equal(le32(mem), 5u << 28 | 1u | 1u << 26);
    assert_int_equal(smb_free_chunks(&abi, 0), 0x3FFF & ~(1u | 1u << 13));
    assert_true(smb_release_chunk_as_complete(&abi, &a));
    smb_chunk r;
    assert_true(smb_try_acquire_chunk_for_reading(&abi, 0, 0, &r));
    assert_true(smb_release_chunk_as_free(&abi, &r));
    assert_int_equal(le32(mem), 5u << 28 | 1u << 26);
    free(mem);
}

static void test_hostile_bitmaps(void **state)
{
    (void)state;
    uint8_t *mem = alloc_smb(4096);
    smb_abi abi;
    assert_true(smb_abi_init(&abi, mem, 4096, 4096));
    smb_chunk c;
    /* Reserved layouts have no chunks: nothing can be acquired. */
    uint32_t bogus = 6u << 28 | 0x0FFFFFFF;
    memcpy(mem, &bogus, 4);
    assert_int_equal(smb_free_chunks(&abi, 0), 0);
    assert_false(smb_try_acquire_chunk_for_reading(&abi, 0, 0, &c));
    /* Out-of-range page and chunk indexes. */
    assert_false(smb_try_acquire_chunk_for_reading(&abi, 5, 0, &c));
    bogus = 1u << 28 | 3u;
    memcpy(mem, &bogus, 4);
    assert_false(smb_try_acquire_chunk_for_reading(&abi, 0, 1, &c));
    assert_true(smb_try_acquire_chunk_for_reading(&abi, 0, 0, &c));
    smb_chunk fake = { 0 };
    assert_false(smb_release_chunk_as_free(&abi, &fake));
    free(mem);
}

static void test_fragment_headers(void **state)
{
    (void)state;
    uint32_t v = 0;
    const uint8_t redundant[4] = { 0x85, 0x80, 0x80, 0x00 }; /* 5, padded */
    assert_int_equal(smb_read_fragment_header(redundant, redundant + 4, &v), 4);
    assert_int_equal(v, 5);
    const uint8_t shortv[2] = { 0x7f, 0xAA };
    assert_int_equal(smb_read_fragment_header(shortv, shortv + 2, &v), 1);
    assert_int_equal(v, 127);
    const uint8_t drop[4] = { 0xff, 0xff, 0xff, 0x7f };
    assert_int_equal(smb_read_fragment_header(drop, drop + 4, &v), 4);
    assert_int_equal(v, SMB_PACKET_SIZE_DROP_PACKET);
    const uint8_t unterminated[5] = { 0x80, 0x80, 0x80, 0x80, 0x01 };
    assert_int_equal(smb_read_fragment_header(unterminated, unterminated + 5, &v), 0);
    assert_int_equal(smb_read_fragment_header(redundant, redundant + 2, &v), 0);

    /* Two fragments of 2 and 1 bytes, then garbage. */
    const uint8_t frags[] = { 0x82, 0x80, 0x80, 0x00, 'a', 'b', 0x01, 'c', 0xff, 0xff };
    assert_int_equal(smb_fragments_extent(frags, sizeof frags, 0), 0);
    assert_int_equal(smb_fragments_extent(frags, sizeof frags, 1), 6);
    assert_int_equal(smb_fragments_extent(frags, sizeof frags, 2), 8);
    assert_int_equal(smb_fragments_extent(frags, sizeof frags, 5), 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_header_layout),
        cmocka_unit_test(test_partition_and_states),
        cmocka_unit_test(test_page_stays_partitioned_while_busy),
        cmocka_unit_test(test_hostile_bitmaps),
        cmocka_unit_test(test_fragment_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
