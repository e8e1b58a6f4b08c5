/* SPDX-License-Identifier: MIT */
/* Output of gputrace-check: the human summary, the JSON document (schema
 * "gputrace-check/1", see docs/toolkit.md) and a JUnit XML file. Every
 * function takes the results of all input files and combines them. */
#ifndef TK_REPORT_H
#define TK_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "toolkit/tk_checks.h"

typedef struct tk_file_result {
    const char *path;  /* as given on the command line ("-" for stdin) */
    tk_result *result; /* NULL only if the file could not be opened */
    const char *open_error;
    double seconds; /* wall time of the check */
} tk_file_result;

/* "pass" or "fail" for one file (an unreadable file fails). */
bool tk_file_failed(const tk_file_result *f, const tk_check_options *o);

void tk_report_human(FILE *out, const tk_file_result *files, size_t n, const tk_check_options *o,
                     bool verbose);
void tk_report_json(FILE *out, const tk_file_result *files, size_t n, const tk_check_options *o);
/* Returns false with errno set when the file cannot be written. */
bool tk_report_junit(const char *path, const tk_file_result *files, size_t n,
                     const tk_check_options *o);

/* The parts of the JUnit file, for documents that embed gputrace-check's
 * test suites (gputrace-ci): the number of test cases and of failing ones,
 * and the <testsuite> elements. */
void tk_report_junit_counts(const tk_file_result *files, size_t n, const tk_check_options *o,
                            size_t *tests, size_t *failures);
void tk_report_junit_suites(FILE *out, const tk_file_result *files, size_t n,
                            const tk_check_options *o);

/* Helpers shared with gputrace-dump. */
void tk_json_string(FILE *out, const char *s);
const char *tk_clock_display_name(int64_t id, char *buf, size_t len);

#endif /* TK_REPORT_H */
