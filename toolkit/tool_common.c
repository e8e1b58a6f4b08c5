/* SPDX-License-Identifier: MIT */
/* Command-line helpers shared by the tools (tool_common.h). Numbers and
 * time come from tracing/util, like everywhere else in the tree. */
#include "toolkit/tool_common.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tracing/util/util_parse.h"
#include "tracing/util/util_time.h"

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

void tool_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void tool_print_version(const char *prog)
{
    printf("%s %s\n", prog, GPUTRACE_VERSION);
}

bool tool_parse_u32(const char *s, int base, uint32_t min, uint32_t max, uint32_t *out)
{
    return util_parse_u32(s, base, min, max, out);
}

bool tool_read_limits_valid(const char *prog, int64_t max_packet, int64_t max_inflated,
                            int64_t max_inflate_ratio)
{
    if (max_packet < 64) {
        tool_error(prog, "--max-packet-size must be at least 64");
        return false;
    }
    if (max_inflated < 0 || max_inflate_ratio < 0 || max_inflate_ratio > UINT32_MAX) {
        tool_error(prog, "--max-inflated-bytes and --max-inflate-ratio take 0 (no limit) or a "
                         "positive number");
        return false;
    }
    return true;
}

int tool_open_input(const char *path, bool *is_stdin)
{
    *is_stdin = strcmp(path, "-") == 0;
    return *is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
}

double tool_now_s(void)
{
    return util_now_s();
}
