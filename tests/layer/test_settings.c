/* SPDX-License-Identifier: MIT */
/* test_settings — unit tests of layer/settings.c: the vk_layer_settings.txt
 * parser, where the file is looked for, and the order of the three
 * sources in gt_settings_lookup(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "layer/settings.h"

static gt_settings_file file;

static void parse(const char *text)
{
    memset(&file, 0, sizeof file);
    snprintf(file.path, sizeof file.path, "test.txt");
    gt_settings_parse(&file, text, strlen(text));
}

static const char *value(const char *key)
{
    return gt_settings_file_find(&file, key, NULL);
}

static void test_comments_and_whitespace(void **state)
{
    (void)state;
    parse("# a comment\n"
          "   # an indented comment with gputrace_timeline.output = /no\n"
          "\n"
          "gputrace_timeline.output=/a.pftrace\n"
          "\t gputrace_timeline.backend \t=\t inprocess \t# why\n"
          "gputrace_timeline.log = info#no space before the comment\r\n"
          "gputrace_timeline.buffer_kb =    \n");
    assert_string_equal(value("output"), "/a.pftrace");
    assert_string_equal(value("backend"), "inprocess");
    assert_string_equal(value("log"), "info");
    /* An empty value is kept as empty, which lookups treat as unset. */
    assert_string_equal(value("buffer_kb"), "");
    assert_int_equal(file.count, 4);
    assert_int_equal(file.problem_count, 0);
    uint32_t line = 0;
    assert_non_null(gt_settings_file_find(&file, "log", &line));
    assert_int_equal(line, 6);
}

static void test_quotes(void **state)
{
    (void)state;
    parse("gputrace_timeline.output = \"/tmp/a b#c.pftrace\"  # kept: '#' and the blank\n"
          "gputrace_timeline.log_file = \"  padded  \"\n"
          "gputrace_timeline.backend = \"system\" trailing\n"
          "gputrace_timeline.clock_source = \"bracket\n"
          "gputrace_timeline.log = in\"fo\n");
    assert_string_equal(value("output"), "/tmp/a b#c.pftrace");
    assert_string_equal(value("log_file"), "  padded  ");
    assert_null(value("backend"));
    assert_null(value("clock_source"));
    /* A quote inside an unquoted value is just a character. */
    assert_string_equal(value("log"), "in\"fo");
    assert_int_equal(file.problem_count, 2);
    assert_non_null(strstr(file.problems[0], "line 3: text after the closing quote"));
    assert_non_null(strstr(file.problems[1], "line 4: no closing quote"));
}

static void test_other_layers_and_unknown_keys(void **state)
{
    (void)state;
    parse("khronos_validation.validate_core = true\n"
          "lunarg_api_dump.output = x\n"
          "GPUTRACE_TIMELINE.output = case matters\n"
          "gputrace_timelineoutput = no dot\n"
          "gputrace_timeline.no_such_key = 1\n"
          "gputrace_timeline.Output = keys are case-sensitive\n");
    /* Unknown keys of ours are kept: config.c reports them by name. */
    assert_int_equal(file.count, 2);
    assert_string_equal(value("no_such_key"), "1");
    assert_string_equal(value("Output"), "keys are case-sensitive");
    assert_null(value("output"));
    assert_null(value("validate_core"));
    assert_int_equal(file.problem_count, 0);
}

static void test_malformed(void **state)
{
    (void)state;
    parse("gputrace_timeline.backend\n"
          "gputrace_timeline.log # = info\n"
          "gputrace_timeline. = 3\n"
          "gputrace_timeline.output = first\n"
          "gputrace_timeline.output = second\n");
    assert_int_equal(file.problem_count, 3);
    assert_non_null(strstr(file.problems[0], "line 1: no '='"));
    assert_non_null(strstr(file.problems[1], "line 2: no '='"));
    assert_non_null(strstr(file.problems[2], "line 3: no key"));
    /* Given twice: the last one counts, as with the Khronos layers. */
    assert_string_equal(value("output"), "second");
    assert_int_equal(file.count, 1);
}

static void test_long_lines_and_limits(void **state)
{
    (void)state;
    size_t n = GT_SETTINGS_LINE_MAX + 100;
    char *text = malloc(n + 200);
    assert_non_null(text);
    int k = snprintf(text, n + 200, "gputrace_timeline.output = ");
    memset(text + k, 'x', n - (size_t)k);
    snprintf(text + n, 200, "\ngputrace_timeline.log = info\n");
    parse(text);
    assert_null(value("output"));
    assert_string_equal(value("log"), "info");
    assert_int_equal(file.problem_count, 1);
    assert_non_null(strstr(file.problems[0], "line 1: longer than"));

    /* Another layer's long line is none of our business. */
    memcpy(text, "other_layer.output = ", 21);
    memset(text + 21, 'y', n - 21);
    snprintf(text + n, 200, "\n");
    parse(text);
    assert_int_equal(file.problem_count, 0);

    /* More settings than fit: the rest is counted, not a crash. */
    char *many = malloc(GT_SETTINGS_MAX_ENTRIES * 2 * 48);
    assert_non_null(many);
    size_t len = 0;
    for (int i = 0; i < GT_SETTINGS_MAX_ENTRIES * 2; i++)
        len += (size_t)sprintf(many + len, "gputrace_timeline.key%d = %d\n", i, i);
    parse(many);
    assert_int_equal(file.count, GT_SETTINGS_MAX_ENTRIES);
    assert_int_equal(file.problem_count, GT_SETTINGS_MAX_ENTRIES);
    free(many);
    free(text);
}

static void test_nul_bytes(void **state)
{
    (void)state;
    static const char text[] = "gputrace_timeline.output = a\0b\ngputrace_timeline.log = info";
    memset(&file, 0, sizeof file);
    gt_settings_parse(&file, text, sizeof text - 1);
    assert_null(value("output"));
    /* No newline at the end: still a line. */
    assert_string_equal(value("log"), "info");
    assert_int_equal(file.problem_count, 1);
}

/* ---- where the file is ------------------------------------------------- */

static char dir[] = "/tmp/gputrace-test-settings.XXXXXX";

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static void test_locate(void **state)
{
    (void)state;
    char path[GT_SETTINGS_PATH_SIZE], want[GT_SETTINGS_PATH_SIZE + 64];
    char xdg[512], conf[512], wd[512];
    snprintf(xdg, sizeof xdg, "%s/data", dir);
    snprintf(conf, sizeof conf, "%s/conf", dir);
    snprintf(wd, sizeof wd, "%s/wd", dir);
    assert_int_equal(mkdir(xdg, 0700), 0);
    assert_int_equal(mkdir(conf, 0700), 0);
    assert_int_equal(mkdir(wd, 0700), 0);
    assert_int_equal(chdir(wd), 0);
    setenv("XDG_DATA_HOME", xdg, 1);
    unsetenv("VK_LAYER_SETTINGS_PATH");

    /* Nothing else: the working directory. */
    assert_true(gt_settings_locate(path, sizeof path));
    snprintf(want, sizeof want, "%s/vk_layer_settings.txt", wd);
    assert_string_equal(path, want);

    /* VK_LAYER_SETTINGS_PATH: a directory (even without the file)... */
    setenv("VK_LAYER_SETTINGS_PATH", conf, 1);
    assert_true(gt_settings_locate(path, sizeof path));
    snprintf(want, sizeof want, "%s/vk_layer_settings.txt", conf);
    assert_string_equal(path, want);
    /* ... a file of any name ... */
    snprintf(want, sizeof want, "%s/mine.txt", conf);
    touch(want);
    setenv("VK_LAYER_SETTINGS_PATH", want, 1);
    assert_true(gt_settings_locate(path, sizeof path));
    assert_string_equal(path, want);
    /* ... and nothing if it does not exist. */
    snprintf(want, sizeof want, "%s/missing", conf);
    setenv("VK_LAYER_SETTINGS_PATH", want, 1);
    assert_true(gt_settings_locate(path, sizeof path));
    snprintf(want, sizeof want, "%s/vk_layer_settings.txt", wd);
    assert_string_equal(path, want);

    /* Vulkan Configurator's file comes first when it is a regular file. */
    snprintf(want, sizeof want, "%s/vulkan", xdg);
    assert_int_equal(mkdir(want, 0700), 0);
    snprintf(want, sizeof want, "%s/vulkan/settings.d", xdg);
    assert_int_equal(mkdir(want, 0700), 0);
    snprintf(want, sizeof want, "%s/vulkan/settings.d/vk_layer_settings.txt", xdg);
    setenv("VK_LAYER_SETTINGS_PATH", conf, 1);
    assert_true(gt_settings_locate(path, sizeof path));
    assert_string_not_equal(path, want);
    touch(want);
    assert_true(gt_settings_locate(path, sizeof path));
    assert_string_equal(path, want);
    /* Without XDG_DATA_HOME: HOME/.local/share. */
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", dir, 1);
    assert_true(gt_settings_locate(path, sizeof path));
    snprintf(want, sizeof want, "%s/vk_layer_settings.txt", conf);
    assert_string_equal(path, want);
}

/* ---- the order of the sources ------------------------------------------ */

static void test_lookup_order(void **state)
{
    (void)state;
    unsetenv("GPUTRACE_OUTPUT");
    unsetenv("VK_GPUTRACE_TIMELINE_OUTPUT");
    parse("gputrace_timeline.output = /file\n");
    const char *api_value = "/api";
    VkLayerSettingEXT other = { "VK_LAYER_OTHER_layer", "output", VK_LAYER_SETTING_TYPE_STRING_EXT,
                                1, &(const char *){ "/other" } };
    VkLayerSettingEXT ours = { GT_SETTINGS_LAYER_NAME, "output", VK_LAYER_SETTING_TYPE_STRING_EXT,
                               1, &api_value };
    VkLayerSettingsCreateInfoEXT second = { VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT, NULL,
                                            1, &ours };
    VkLayerSettingsCreateInfoEXT first = { VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT,
                                           &second, 1, &other };
    gt_setting s;

    gt_settings_lookup("GPUTRACE_OUTPUT", GT_SETTING_TEXT, &first, NULL, &s);
    assert_int_equal(s.source, GT_SETTING_API);
    assert_string_equal(s.value, "/api");
    assert_string_equal(s.origin, "VkLayerSettingsCreateInfoEXT");

    gt_settings_lookup("GPUTRACE_OUTPUT", GT_SETTING_TEXT, &first, &file, &s);
    assert_int_equal(s.source, GT_SETTING_FILE);
    assert_string_equal(s.value, "/file");
    assert_string_equal(s.name, "gputrace_timeline.output");
    assert_string_equal(s.origin, "test.txt:1");

    setenv("VK_GPUTRACE_TIMELINE_OUTPUT", "/vk-env", 1);
    gt_settings_lookup("GPUTRACE_OUTPUT", GT_SETTING_TEXT, &first, &file, &s);
    assert_int_equal(s.source, GT_SETTING_ENV);
    assert_string_equal(s.value, "/vk-env");
    assert_string_equal(s.name, "VK_GPUTRACE_TIMELINE_OUTPUT");

    setenv("GPUTRACE_OUTPUT", "/env", 1);
    gt_settings_lookup("GPUTRACE_OUTPUT", GT_SETTING_TEXT, &first, &file, &s);
    assert_int_equal(s.source, GT_SETTING_ENV);
    assert_string_equal(s.value, "/env");
    assert_string_equal(s.name, "GPUTRACE_OUTPUT");

    /* Empty is unset, in every source. */
    setenv("GPUTRACE_OUTPUT", "", 1);
    setenv("VK_GPUTRACE_TIMELINE_OUTPUT", "", 1);
    parse("gputrace_timeline.output =\n");
    gt_settings_lookup("GPUTRACE_OUTPUT", GT_SETTING_TEXT, &first, &file, &s);
    assert_int_equal(s.source, GT_SETTING_API);
    api_value = "";
    gt_settings_lookup("GPUTRACE_OUTPUT", GT_SETTING_TEXT, &first, &file, &s);
    assert_int_equal(s.source, GT_SETTING_UNSET);
    assert_null(s.value);
    unsetenv("GPUTRACE_OUTPUT");
    unsetenv("VK_GPUTRACE_TIMELINE_OUTPUT");
}

static void test_api_types(void **state)
{
    (void)state;
    unsetenv("GPUTRACE_BUFFER_KB");
    unsetenv("VK_GPUTRACE_TIMELINE_BUFFER_KB");
    VkBool32 b = VK_TRUE;
    int32_t i32 = -5;
    uint64_t u64 = 18446744073709551615ull;
    float f = 128.0f;
    double d = 0.5;
    const char *str = "64";
    struct {
        VkLayerSettingTypeEXT type;
        const void *v;
        gt_setting_kind kind;
        const char *want; /* NULL: refused */
    } cases[] = {
        { VK_LAYER_SETTING_TYPE_BOOL32_EXT, &b, GT_SETTING_BOOL, "1" },
        { VK_LAYER_SETTING_TYPE_BOOL32_EXT, &b, GT_SETTING_NUMBER, NULL },
        { VK_LAYER_SETTING_TYPE_BOOL32_EXT, &b, GT_SETTING_TEXT, NULL },
        { VK_LAYER_SETTING_TYPE_INT32_EXT, &i32, GT_SETTING_NUMBER, "-5" },
        { VK_LAYER_SETTING_TYPE_INT32_EXT, &i32, GT_SETTING_BOOL, "-5" },
        { VK_LAYER_SETTING_TYPE_UINT64_EXT, &u64, GT_SETTING_NUMBER, "18446744073709551615" },
        { VK_LAYER_SETTING_TYPE_FLOAT32_EXT, &f, GT_SETTING_NUMBER, "128" },
        { VK_LAYER_SETTING_TYPE_FLOAT32_EXT, &f, GT_SETTING_BOOL, NULL },
        { VK_LAYER_SETTING_TYPE_FLOAT64_EXT, &d, GT_SETTING_NUMBER, "0.5" },
        { VK_LAYER_SETTING_TYPE_STRING_EXT, &str, GT_SETTING_NUMBER, "64" },
        { (VkLayerSettingTypeEXT)99, &b, GT_SETTING_NUMBER, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        VkLayerSettingEXT setting = { GT_SETTINGS_LAYER_NAME, "buffer_kb", cases[i].type, 1,
                                      cases[i].v };
        VkLayerSettingsCreateInfoEXT info = { VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT,
                                              NULL, 1, &setting };
        gt_setting s;
        gt_settings_lookup("GPUTRACE_BUFFER_KB", cases[i].kind, &info, NULL, &s);
        assert_int_equal(s.source, GT_SETTING_API);
        if (cases[i].want) {
            assert_non_null(s.value);
            assert_string_equal(s.value, cases[i].want);
        } else {
            assert_null(s.value);
            assert_non_null(s.problem);
        }
    }
    /* No values, or a NULL array: refused, not read. */
    VkLayerSettingEXT empty = { GT_SETTINGS_LAYER_NAME, "buffer_kb",
                                VK_LAYER_SETTING_TYPE_UINT32_EXT, 0, &b };
    VkLayerSettingEXT null_values = { GT_SETTINGS_LAYER_NAME, "buffer_kb",
                                      VK_LAYER_SETTING_TYPE_UINT32_EXT, 1, NULL };
    VkLayerSettingEXT *bad[] = { &empty, &null_values };
    for (size_t i = 0; i < 2; i++) {
        VkLayerSettingsCreateInfoEXT info = { VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT,
                                              NULL, 1, bad[i] };
        gt_setting s;
        gt_settings_lookup("GPUTRACE_BUFFER_KB", GT_SETTING_NUMBER, &info, NULL, &s);
        assert_int_equal(s.source, GT_SETTING_API);
        assert_null(s.value);
    }
    /* Names of ours in the chain, for the unknown-key report. */
    VkLayerSettingEXT list[] = {
        { "VK_LAYER_OTHER_layer", "a", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &b },
        { GT_SETTINGS_LAYER_NAME, "b", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &b },
        { NULL, "c", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &b },
        { GT_SETTINGS_LAYER_NAME, NULL, VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &b },
    };
    VkLayerSettingsCreateInfoEXT info = { VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT, NULL, 4,
                                          list };
    assert_string_equal(gt_settings_api_name(&info, 0), "b");
    assert_string_equal(gt_settings_api_name(&info, 1), "(null)");
    assert_null(gt_settings_api_name(&info, 2));
    assert_null(gt_settings_api_name(NULL, 0));
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comments_and_whitespace),
        cmocka_unit_test(test_quotes),
        cmocka_unit_test(test_other_layers_and_unknown_keys),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_long_lines_and_limits),
        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_locate),
        cmocka_unit_test(test_lookup_order),
        cmocka_unit_test(test_api_types),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        failed++;
    return failed;
}
