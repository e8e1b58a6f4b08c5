/* SPDX-License-Identifier: MIT */
/* test_object_names — unit tests of layer/object_names.c: naming,
 * renaming, removal, the count and byte bounds, truncation at a UTF-8
 * boundary, collection in change order, and the mapping of
 * VK_EXT_debug_marker object types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layer/object_names.h"

/* object_names.c allocates through the layer's allocator helpers; these
 * count what is live so the tests see every name freed. */
static long live_allocs;

void *gt_zalloc(const gt_allocator *alloc, size_t size, VkSystemAllocationScope scope)
{
    (void)alloc, (void)scope;
    void *p = calloc(1, size);
    if (p)
        live_allocs++;
    return p;
}

void gt_free(const gt_allocator *alloc, void *ptr)
{
    (void)alloc;
    if (ptr)
        live_allocs--;
    free(ptr);
}

static tl_names_snapshot snap;

static int setup(void **state)
{
    live_allocs = 0;
    *state = tl_names_create(NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tl_names_destroy(*state);
    assert_int_equal(live_allocs, 0);
    return 0;
}

static void set_get_rename_remove(void **state)
{
    tl_object_names *n = *state;
    char buf[64];
    assert_false(tl_names_get(n, VK_OBJECT_TYPE_IMAGE, 0x10, buf, sizeof buf));
    assert_int_equal(tl_names_version(n), 0);

    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE, 0x10, "albedo", 5));
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_IMAGE, 0x10, buf, sizeof buf));
    assert_string_equal(buf, "albedo");
    /* The same handle under another type is another object. */
    assert_false(tl_names_get(n, VK_OBJECT_TYPE_BUFFER, 0x10, buf, sizeof buf));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_BUFFER, 0x10, "vertices", 6));
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_IMAGE, 0x10, buf, sizeof buf));
    assert_string_equal(buf, "albedo");

    uint64_t v = tl_names_version(n);
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE, 0x10, "normals", 7));
    assert_true(tl_names_version(n) > v);
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_IMAGE, 0x10, buf, sizeof buf));
    assert_string_equal(buf, "normals");

    /* An empty name and a NULL one both remove. */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE, 0x10, "", 8));
    assert_false(tl_names_get(n, VK_OBJECT_TYPE_IMAGE, 0x10, buf, sizeof buf));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_BUFFER, 0x10, NULL, 9));
    assert_false(tl_names_get(n, VK_OBJECT_TYPE_BUFFER, 0x10, buf, sizeof buf));
    /* A null handle is never named. */
    assert_false(tl_names_set(n, VK_OBJECT_TYPE_BUFFER, 0, "nothing", 10));
}

static void truncation(void **state)
{
    tl_object_names *n = *state;
    char name[400], buf[400];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_PIPELINE, 1, name, 1));
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_PIPELINE, 1, buf, sizeof buf));
    assert_int_equal(strlen(buf), TL_NAMES_MAX_LEN);

    /* A two-byte character across the cut is left out whole. */
    memset(name, 'b', sizeof name);
    memcpy(name + TL_NAMES_MAX_LEN - 1, "\xc3\xa9", 2); /* é at 254..255 */
    name[TL_NAMES_MAX_LEN + 5] = '\0';
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_PIPELINE, 2, name, 2));
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_PIPELINE, 2, buf, sizeof buf));
    assert_int_equal(strlen(buf), TL_NAMES_MAX_LEN - 1);

    /* The caller's buffer bounds the copy. */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_QUEUE, 3, "graphics queue", 3));
    char small[6];
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_QUEUE, 3, small, sizeof small));
    assert_string_equal(small, "graph");
}

static void count_bound(void **state)
{
    tl_object_names *n = *state;
    char name[32], buf[32];
    for (uint32_t i = 0; i < TL_NAMES_MAX_COUNT; i++) {
        snprintf(name, sizeof name, "cb %u", i);
        assert_true(tl_names_set(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x1000 + i * 8ull, name, i));
    }
    assert_int_equal(tl_names_refused(n), 0);
    /* Full: a new object is refused... */
    assert_false(tl_names_set(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x99999, "late", 1));
    assert_false(tl_names_get(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x99999, buf, sizeof buf));
    assert_int_equal(tl_names_refused(n), 1);
    /* ...a rename of a named one is not... */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x1000, "renamed", 1));
    /* ...and a removal makes room. */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x1008, NULL, 1));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x99999, "late", 1));
    /* Every survivor is still found (backward-shift deletion kept them). */
    for (uint32_t i = 2; i < TL_NAMES_MAX_COUNT; i++) {
        snprintf(name, sizeof name, "cb %u", i);
        assert_true(
            tl_names_get(n, VK_OBJECT_TYPE_COMMAND_BUFFER, 0x1000 + i * 8ull, buf, sizeof buf));
        assert_string_equal(buf, name);
    }
    assert_int_equal(tl_names_collect(n, 0, &snap), tl_names_version(n));
    assert_int_equal(snap.count, TL_NAMES_MAX_COUNT);
}

static void byte_bound(void **state)
{
    tl_object_names *n = *state;
    char name[TL_NAMES_MAX_LEN + 1], buf[TL_NAMES_MAX_LEN + 1];
    memset(name, 'x', TL_NAMES_MAX_LEN);
    name[TL_NAMES_MAX_LEN] = '\0';
    const uint32_t fit = TL_NAMES_MAX_BYTES / (TL_NAMES_MAX_LEN + 1);
    for (uint32_t i = 0; i < fit; i++)
        assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 1 + i, name, i));
    assert_false(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 5000, name, 1));
    assert_int_equal(tl_names_refused(n), 1);
    /* A rename that does not fit leaves the object unnamed, never stale:
     * first free exactly one name's room, then grow another. */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 1, NULL, 2));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 5000, "short", 3));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 5000, name, 4));
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_IMAGE_VIEW, 5000, buf, sizeof buf));
    /* Full to the byte: 6 + 3 bytes fit after shrinking 5000 to "short". */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 5000, "short", 5));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 6001, "ab", 6));
    name[250] = '\0'; /* 251 bytes: 2 more than there is room for */
    assert_false(tl_names_set(n, VK_OBJECT_TYPE_IMAGE_VIEW, 6001, name, 7));
    assert_false(tl_names_get(n, VK_OBJECT_TYPE_IMAGE_VIEW, 6001, buf, sizeof buf));
    assert_int_equal(tl_names_refused(n), 2);
    assert_true(tl_names_get(n, VK_OBJECT_TYPE_IMAGE_VIEW, 5000, buf, sizeof buf));
    assert_string_equal(buf, "short");
}

static void collect_in_change_order(void **state)
{
    tl_object_names *n = *state;
    assert_int_equal(tl_names_collect(n, 0, &snap), 0);
    assert_int_equal(snap.count, 0);
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_RENDER_PASS, 0xa0, "first", 100));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_FRAMEBUFFER, 0xb0, "second", 200));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_QUEUE, 0xc0, "third", 300));
    uint64_t v = tl_names_collect(n, 0, &snap);
    assert_int_equal(v, tl_names_version(n));
    assert_int_equal(snap.count, 3);
    assert_string_equal(snap.items[0].text, "first");
    assert_int_equal(snap.items[0].type, VK_OBJECT_TYPE_RENDER_PASS);
    assert_int_equal(snap.items[0].handle, 0xa0);
    assert_int_equal(snap.items[0].set_ns, 100);
    assert_string_equal(snap.items[1].text, "second");
    assert_string_equal(snap.items[2].text, "third");

    /* Only what changed since: a rename comes last, a removal not at all. */
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_RENDER_PASS, 0xa0, "first again", 400));
    assert_true(tl_names_set(n, VK_OBJECT_TYPE_QUEUE, 0xc0, NULL, 500));
    uint64_t v2 = tl_names_collect(n, v, &snap);
    assert_true(v2 > v);
    assert_int_equal(snap.count, 1);
    assert_string_equal(snap.items[0].text, "first again");
    assert_int_equal(tl_names_collect(n, v2, &snap), v2);
    assert_int_equal(snap.count, 0);
    /* From 0 again: everything that has a name. */
    tl_names_collect(n, 0, &snap);
    assert_int_equal(snap.count, 2);
    assert_string_equal(snap.items[0].text, "second");
    assert_string_equal(snap.items[1].text, "first again");
}

static void debug_marker_types(void **state)
{
    (void)state;
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_COMMAND_BUFFER_EXT),
                     VK_OBJECT_TYPE_COMMAND_BUFFER);
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_RENDER_PASS_EXT),
                     VK_OBJECT_TYPE_RENDER_PASS);
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_FRAMEBUFFER_EXT),
                     VK_OBJECT_TYPE_FRAMEBUFFER);
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_QUEUE_EXT),
                     VK_OBJECT_TYPE_QUEUE);
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_COMMAND_POOL_EXT),
                     VK_OBJECT_TYPE_COMMAND_POOL);
    /* Where the numbers part: 26.. in one, extension numbers in the other. */
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_SURFACE_KHR_EXT),
                     VK_OBJECT_TYPE_SURFACE_KHR);
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_SWAPCHAIN_KHR_EXT),
                     VK_OBJECT_TYPE_SWAPCHAIN_KHR);
    assert_int_equal(
        tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_SAMPLER_YCBCR_CONVERSION_EXT),
        VK_OBJECT_TYPE_SAMPLER_YCBCR_CONVERSION);
    assert_int_equal(tl_names_from_debug_report(VK_DEBUG_REPORT_OBJECT_TYPE_UNKNOWN_EXT),
                     VK_OBJECT_TYPE_UNKNOWN);
    assert_int_equal(tl_names_from_debug_report((VkDebugReportObjectTypeEXT)12345),
                     VK_OBJECT_TYPE_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(set_get_rename_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(count_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(byte_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(collect_in_change_order, setup, teardown),
        cmocka_unit_test(debug_marker_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
