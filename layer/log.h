/* SPDX-License-Identifier: MIT */
/* log.h — the layer's only way to print anything.
 *
 * A layer lives inside someone else's process, so it stays silent unless
 * asked: GPUTRACE_LOG=error|warn|info|debug picks the threshold (default:
 * nothing is printed) and GPUTRACE_LOG_FILE=path appends to a file instead
 * of stderr (or gputrace_timeline.log / .log_file in vk_layer_settings.txt
 * or VkLayerSettingsCreateInfoEXT, see settings.h). Each message is formatted into one buffer and written with a
 * single write(2), so lines from several threads or processes sharing a log
 * file never interleave.
 */
#ifndef GPUTRACE_LAYER_LOG_H
#define GPUTRACE_LAYER_LOG_H

#include <stdbool.h>

enum gt_log_level {
    GT_LOG_NONE = 0,
    GT_LOG_ERROR,
    GT_LOG_WARN,
    GT_LOG_INFO,
    GT_LOG_DEBUG,
};

/* Sets the logger up (once per process) from GPUTRACE_LOG / GPUTRACE_LOG_FILE
 * in the three sources of settings.h, with this instance pNext chain's
 * VkLayerSettingsCreateInfoEXT; a no-op once set up. Without it the first
 * message sets it up from the environment and the settings file. */
void gt_log_init(const void *instance_pnext);

/* True when a message of this level would be written; lets callers skip
 * building expensive arguments. Reads the environment on first use. */
bool gt_log_enabled(enum gt_log_level level);

/* Writes "gputrace: [<level>: ]<message>\n" if the level is enabled. */
void gt_log(enum gt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gt_error(...) gt_log(GT_LOG_ERROR, __VA_ARGS__)
#define gt_warn(...)  gt_log(GT_LOG_WARN, __VA_ARGS__)
#define gt_info(...)  gt_log(GT_LOG_INFO, __VA_ARGS__)
#define gt_debug(...) gt_log(GT_LOG_DEBUG, __VA_ARGS__)

#endif
