/* SPDX-License-Identifier: MIT */
/* What every gputrace tool (gputrace-check, gputrace-dump, gputrace-ci,
 * gputrace-service) shares on its command line: exit statuses, errors as
 * `prog: message`, strict number parsing, the input limits of the trace
 * readers and "-" for standard input. No glib: gputrace-service links it
 * too. */
#ifndef TOOL_COMMON_H
#define TOOL_COMMON_H

#include <stdbool.h>
#include <stdint.h>

enum {
    TOOL_EXIT_PASS = 0,
    TOOL_EXIT_FAIL = 1,  /* the checked thing failed */
    TOOL_EXIT_USAGE = 2, /* usage error, or an input that cannot be used */
};

/* Prints `prog: message` and a newline to standard error. */
void tool_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `prog VERSION` on standard output, for a --version option. */
void tool_print_version(const char *prog);

/* A number as a user writes it: digits only (no sign, no blanks), nothing
 * after them, within [min, max]. Base 10, 8, or 0 for C's 0x/0 prefixes. */
bool tool_parse_u32(const char *s, int base, uint32_t min, uint32_t max, uint32_t *out);

/* The limits gputrace-check and gputrace-dump put on their input
 * (--max-packet-size, --max-inflated-bytes, --max-inflate-ratio); false
 * after printing why when one is out of range. */
bool tool_read_limits_valid(const char *prog, int64_t max_packet, int64_t max_inflated,
                            int64_t max_inflate_ratio);

/* Opens `path` for reading, "-" being standard input (*is_stdin set);
 * -1 with errno on failure. */
int tool_open_input(const char *path, bool *is_stdin);

/* Monotonic seconds, for durations and progress rates. */
double tool_now_s(void);

#endif /* TOOL_COMMON_H */
