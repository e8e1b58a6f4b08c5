/* SPDX-License-Identifier: MIT */
/* tracing/util: number parsing at its limits, bounded copies, deadline
 * arithmetic across second boundaries, array growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracing/util/util_mem.h"
#include "tracing/util/util_parse.h"
#include "tracing/util/util_time.h"

/* ---- numbers ------------------------------------------------------------- */

static void test_parse_u64_accepts(void **state)
{
    (void)state;
    uint64_t v = 7;
    assert_true(util_parse_u64("0", 10, 0, UINT64_MAX, &v));
    assert_int_equal(v, 0);
    assert_true(util_parse_u64("18446744073709551615", 10, 0, UINT64_MAX, &v));
    assert_true(v == UINT64_MAX);
    assert_true(util_parse_u64("0x10", 0, 0, UINT64_MAX, &v));
    assert_int_equal(v, 16);
    assert_true(util_parse_u64("010", 0, 0, UINT64_MAX, &v));
    assert_int_equal(v, 8);
    assert_true(util_parse_u64("0666", 8, 0, 0777, &v));
    assert_int_equal(v, 0666);
    assert_true(util_parse_u64("600", 8, 0, 0777, &v));
    assert_int_equal(v, 0600);
    /* Base 10 reads a leading zero as decimal. */
    assert_true(util_parse_u64("010", 10, 0, UINT64_MAX, &v));
    assert_int_equal(v, 10);
}

static void test_parse_u64_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1x",
        "x1",
        "0x",
        "1.5",
        "1e3",
        "abc",
        "\t7",
        "0x1g",
        "18446744073709551616",
        "99999999999999999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 42;
        if (util_parse_u64(bad[i], 0, 0, UINT64_MAX, &v))
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(v, 42); /* untouched */
    }
    uint64_t v = 42;
    assert_false(util_parse_u64(NULL, 10, 0, UINT64_MAX, &v));
    /* Only bases 10, 8 and 0. */
    assert_false(util_parse_u64("10", 16, 0, UINT64_MAX, &v));
    assert_false(util_parse_u64("10", 2, 0, UINT64_MAX, &v));
    /* Octal has no 8 or 9. */
    assert_false(util_parse_u64("0678", 8, 0, UINT64_MAX, &v));
    /* Hexadecimal needs base 0. */
    assert_false(util_parse_u64("0x10", 10, 0, UINT64_MAX, &v));
    assert_int_equal(v, 42);
}

static void test_parse_limits(void **state)
{
    (void)state;
    uint32_t v = 0;
    assert_true(util_parse_u32("8", 10, 8, 16, &v));
    assert_int_equal(v, 8);
    assert_true(util_parse_u32("16", 10, 8, 16, &v));
    assert_int_equal(v, 16);
    v = 99;
    assert_false(util_parse_u32("7", 10, 8, 16, &v));
    assert_false(util_parse_u32("17", 10, 8, 16, &v));
    assert_int_equal(v, 99);
    /* u32: the full range, and one past it (which would wrap if cast). */
    assert_true(util_parse_u32("4294967295", 10, 0, UINT32_MAX, &v));
    assert_true(v == UINT32_MAX);
    assert_false(util_parse_u32("4294967296", 10, 0, UINT32_MAX, &v));
    assert_false(util_parse_u32("0x100000000", 0, 0, UINT32_MAX, &v));
    size_t z = 0;
    assert_true(util_parse_size("4096", 10, 1, 1 << 20, &z));
    assert_int_equal(z, 4096);
    assert_false(util_parse_size("0", 10, 1, 1 << 20, &z));
    assert_false(util_parse_size("1048577", 10, 1, 1 << 20, &z));
    assert_int_equal(z, 4096);
}

/* ---- strings ------------------------------------------------------------- */

static void test_copy_str(void **state)
{
    (void)state;
    char buf[4];
    memset(buf, 'x', sizeof buf);
    assert_true(util_copy_str(buf, sizeof buf, "abc"));
    assert_string_equal(buf, "abc");
    assert_false(util_copy_str(buf, sizeof buf, "abcd"));
    assert_string_equal(buf, "abc");
    assert_true(util_copy_str(buf, sizeof buf, ""));
    assert_string_equal(buf, "");
    buf[0] = 'q';
    assert_false(util_copy_str(buf, 0, "a"));
    assert_int_equal(buf[0], 'q');
    assert_false(util_copy_str(buf, 1, "a"));
    assert_int_equal(buf[0], '\0');
}

/* ---- time ---------------------------------------------------------------- */

static void test_timespec_add_ms(void **state)
{
    (void)state;
    struct timespec t = { 5, 999000000L };
    struct timespec r = util_timespec_add_ms(t, 1);
    assert_int_equal(r.tv_sec, 6);
    assert_int_equal(r.tv_nsec, 0);
    r = util_timespec_add_ms(t, 2);
    assert_int_equal(r.tv_sec, 6);
    assert_int_equal(r.tv_nsec, 1000000L);
    r = util_timespec_add_ms((struct timespec){ 5, 999999999L }, 1999);
    assert_int_equal(r.tv_sec, 7);
    assert_int_equal(r.tv_nsec, 998999999L);
    r = util_timespec_add_ms((struct timespec){ 0, 0 }, UINT32_MAX);
    assert_int_equal(r.tv_sec, UINT32_MAX / 1000);
    assert_int_equal(r.tv_nsec, (long)(UINT32_MAX % 1000) * 1000000L);
    r = util_timespec_add_ms(t, 0);
    assert_int_equal(r.tv_sec, 5);
    assert_int_equal(r.tv_nsec, 999000000L);
}

static void test_timespec_before(void **state)
{
    (void)state;
    struct timespec a = { 1, 999999999L }, b = { 2, 0 };
    assert_true(util_timespec_before(&a, &b));
    assert_false(util_timespec_before(&b, &a));
    assert_false(util_timespec_before(&a, &a));
    struct timespec c = { 2, 1 };
    assert_true(util_timespec_before(&b, &c));
}

static void test_remaining_ms(void **state)
{
    (void)state;
    struct timespec deadline = { 10, 500000L }; /* 10 s + 0.5 ms */
    /* Across the second boundary: nanoseconds of `now` above the
     * deadline's. */
    struct timespec now = { 9, 999000000L };
    assert_int_equal(util_remaining_ms_at(&deadline, &now), 2); /* 1.5 ms, up */
    now = (struct timespec){ 10, 0 };
    assert_int_equal(util_remaining_ms_at(&deadline, &now), 1);
    now = (struct timespec){ 10, 499999L };
    assert_int_equal(util_remaining_ms_at(&deadline, &now), 1);
    now = deadline;
    assert_int_equal(util_remaining_ms_at(&deadline, &now), 0);
    now = (struct timespec){ 11, 0 };
    assert_int_equal(util_remaining_ms_at(&deadline, &now), 0);
    now = (struct timespec){ 0, 500000L };
    assert_int_equal(util_remaining_ms_at(&deadline, &now), 10000);
    struct timespec far = { (time_t)UINT32_MAX, 0 };
    now = (struct timespec){ 0, 0 };
    assert_true(util_remaining_ms_at(&far, &now) == UINT32_MAX);
}

static void test_deadline_is_ahead(void **state)
{
    (void)state;
    /* The clock only moves forward: a deadline 1 s out leaves at most
     * 1000 ms and (on any machine this runs on) more than nothing, and one
     * 0 ms out has passed by the time we look. */
    struct timespec d = util_deadline_after_ms(1000);
    uint32_t left = util_remaining_ms(&d);
    assert_true(left > 0 && left <= 1000);
    struct timespec now = util_deadline_after_ms(0);
    assert_false(util_timespec_before(&d, &now));
    struct timespec gone = util_deadline_after_ms(0);
    assert_int_equal(util_remaining_ms(&gone), 0);
    uint64_t a = util_now_ns();
    util_sleep_ms(2);
    uint64_t b = util_now_ns();
    assert_true(b - a >= 2000000u);
    assert_true(util_now_ms() >= b / 1000000u);
    assert_true(util_now_s() >= (double)b / 1e9);
}

/* ---- memory -------------------------------------------------------------- */

static void test_grow_array(void **state)
{
    (void)state;
    int *arr = NULL;
    size_t cap = 0;
    assert_true(util_grow_array((void **)&arr, &cap, 0, sizeof *arr));
    assert_null(arr);
    assert_true(util_grow_array((void **)&arr, &cap, 1, sizeof *arr));
    assert_int_equal(cap, 16);
    for (int i = 0; i < 16; i++)
        arr[i] = i;
    assert_true(util_grow_array((void **)&arr, &cap, 17, sizeof *arr));
    assert_int_equal(cap, 32);
    assert_true(util_grow_array((void **)&arr, &cap, 100, sizeof *arr));
    assert_int_equal(cap, 128);
    for (int i = 0; i < 16; i++)
        assert_int_equal(arr[i], i);
    /* Sizes that overflow are refused and leave the array alone. */
    int *before = arr;
    assert_false(util_grow_array((void **)&arr, &cap, SIZE_MAX, sizeof *arr));
    assert_false(util_grow_array((void **)&arr, &cap, SIZE_MAX / 2, 64));
    assert_ptr_equal(arr, before);
    assert_int_equal(cap, 128);
    free(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_u64_accepts), cmocka_unit_test(test_parse_u64_rejects),
        cmocka_unit_test(test_parse_limits),      cmocka_unit_test(test_copy_str),
        cmocka_unit_test(test_timespec_add_ms),   cmocka_unit_test(test_timespec_before),
        cmocka_unit_test(test_remaining_ms),      cmocka_unit_test(test_deadline_is_ahead),
        cmocka_unit_test(test_grow_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
