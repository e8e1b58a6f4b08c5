/* SPDX-License-Identifier: MIT */
/* settings.h — where a setting's value comes from (prefix gt_settings_).
 *
 * Three sources, as the Khronos layers read them (Vulkan-Utility-Libraries,
 * src/layer/vk_layer_settings.cpp, vkuGetLayerSettingValues: the environment
 * first, then the settings file, then the application's
 * VkLayerSettingsCreateInfoEXT). An empty value counts as unset and leaves
 * the choice to the next source.
 *
 * - Environment: GPUTRACE_<KEY>, then VK_GPUTRACE_TIMELINE_<KEY> (the
 *   Khronos layers' form for our layer name).
 * - vk_layer_settings.txt: lines "gputrace_timeline.<key> = value"; the
 *   first of the files listed at gt_settings_locate() that exists.
 * - VkLayerSettingsCreateInfoEXT (VK_EXT_layer_settings) in an instance's
 *   pNext chain, layer name VK_LAYER_GPUTRACE_timeline, setting <key>.
 *
 * <key> is the variable's name after GPUTRACE_ in lower case. This module
 * only finds values, as text; it never logs (the logger reads its own
 * settings through it): what config.c parses is reported there.
 */
#ifndef GPUTRACE_LAYER_SETTINGS_H
#define GPUTRACE_LAYER_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layer/layer_settings_ext.h"

/* Must equal GT_LAYER_NAME (layer_info.h, the plumbing's); the settings
 * tests of the API source fail otherwise. */
#define GT_SETTINGS_LAYER_NAME  "VK_LAYER_GPUTRACE_timeline"
#define GT_SETTINGS_FILE_PREFIX "gputrace_timeline."
#define GT_SETTINGS_ENV_PREFIX  "GPUTRACE_"
#define GT_SETTINGS_VK_PREFIX   "VK_GPUTRACE_TIMELINE_"
#define GT_SETTINGS_FILE_NAME   "vk_layer_settings.txt"

#define GT_SETTINGS_MAX_ENTRIES  64
#define GT_SETTINGS_POOL_SIZE    16384
#define GT_SETTINGS_LINE_MAX     4096
#define GT_SETTINGS_FILE_MAX     (1u << 20)
#define GT_SETTINGS_MAX_PROBLEMS 8
#define GT_SETTINGS_PROBLEM_SIZE 192
#define GT_SETTINGS_PATH_SIZE    1024

typedef enum gt_setting_source {
    GT_SETTING_UNSET,
    GT_SETTING_ENV,
    GT_SETTING_FILE,
    GT_SETTING_API,
} gt_setting_source;

/* What a setting holds, for the types VkLayerSettingEXT values may have. */
typedef enum gt_setting_kind {
    GT_SETTING_TEXT,   /* paths and names: STRING only */
    GT_SETTING_BOOL,   /* BOOL32, an integer type or STRING */
    GT_SETTING_NUMBER, /* an integer or floating-point type or STRING */
} gt_setting_kind;

typedef struct gt_settings_entry gt_settings_entry;
struct gt_settings_entry {
    uint32_t key;   /* offsets into the pool: the key after the prefix, */
    uint32_t value; /* and its value */
    uint32_t line;
};

/* Our layer's lines of one settings file. Other layers' lines are skipped;
 * a key given twice keeps its last value (as the Khronos layers do). */
typedef struct gt_settings_file gt_settings_file;
struct gt_settings_file {
    char path[GT_SETTINGS_PATH_SIZE]; /* empty: no file was read */
    uint32_t count;
    gt_settings_entry entries[GT_SETTINGS_MAX_ENTRIES];
    uint32_t pool_used;
    char pool[GT_SETTINGS_POOL_SIZE];
    /* Lines of ours that could not be read, and why; only the first
     * GT_SETTINGS_MAX_PROBLEMS are kept, all are counted. */
    uint32_t problem_count;
    char problems[GT_SETTINGS_MAX_PROBLEMS][GT_SETTINGS_PROBLEM_SIZE];
};

/* Adds the lines of text (any bytes, not NUL-terminated) to file. */
void gt_settings_parse(gt_settings_file *file, const char *text, size_t len);

/* The value of gputrace_timeline.<key>, or NULL; *line gets its line. */
const char *gt_settings_file_find(const gt_settings_file *file, const char *key, uint32_t *line);

/* Which settings file to read, as the Khronos layers choose it
 * (layer_settings_manager.cpp, LayerSettings::FindSettingsFile):
 * $XDG_DATA_HOME/vulkan/settings.d/vk_layer_settings.txt (HOME/.local/share
 * without XDG_DATA_HOME) if it is a regular file; else VK_LAYER_SETTINGS_PATH
 * if it exists (a directory: its vk_layer_settings.txt); else
 * vk_layer_settings.txt in the working directory. False if none can be
 * named (a path too long). */
bool gt_settings_locate(char *path, size_t size);

/* The located file, read and parsed once per process. A missing file is no
 * problem; one that is not a regular file, cannot be read or is larger than
 * GT_SETTINGS_FILE_MAX is ignored with a problem recorded. Never blocks on a
 * FIFO. */
const gt_settings_file *gt_settings_file_get(void);

typedef struct gt_setting gt_setting;
struct gt_setting {
    gt_setting_source source;
    /* The value as text, never empty; NULL with source set when the API
     * gave a value this kind cannot take (`problem` says why). */
    const char *value;
    const char *problem;
    char name[96]; /* as the user wrote it */
    char origin[GT_SETTINGS_PATH_SIZE +
                48]; /* "" (env), "FILE:LINE", "VkLayerSettingsCreateInfoEXT" */
    char text[48];   /* an API number rendered */
};

/* Finds the setting read from the environment variable env_name
 * ("GPUTRACE_OUTPUT") in the three sources, in order. instance_pnext: an
 * instance's pNext chain (or NULL); file: the settings file (or NULL). */
void gt_settings_lookup(const char *env_name, gt_setting_kind kind, const void *instance_pnext,
                        const gt_settings_file *file, gt_setting *out);

/* The name of the index-th setting of our layer in a pNext chain's
 * VkLayerSettingsCreateInfoEXT structures, or NULL past the last. */
const char *gt_settings_api_name(const void *instance_pnext, uint32_t index);

#endif
