/* SPDX-License-Identifier: MIT */
/* gputrace-check's options and the check of one file, for gputrace-check
 * itself and for gputrace-ci, which takes the same check options and runs
 * the same check in-process. Options are parsed into this module's own
 * storage (one set per process). */
#ifndef TOOL_CHECK_H
#define TOOL_CHECK_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

#include "toolkit/tk_checks.h"
#include "toolkit/tk_report.h"

/* Options and their storage, built from the parsed command line. */
typedef struct tool_check_config {
    tk_check_options o;
    GArray *names;           /* tk_clock_name, o.names points here */
    GPtrArray *name_storage; /* lines of --clock-names */
    GArray *devs;            /* tk_clock_deviation */
    FILE *gpu_stages;        /* --gpu-stages, open from build to close */
} tool_check_config;

/* What gputrace-check writes besides the verdict. */
typedef struct tool_check_outputs {
    bool json, verbose, no_progress;
    const char *junit, *plot;
} tool_check_outputs;

/* gputrace-check's summary, description and options (FILE… included). */
void tool_check_setup_context(GOptionContext *ctx);
/* Parses check options given as separate arguments (gputrace-ci's
 * pass-through options) into the same storage. */
bool tool_check_parse_passthrough(GPtrArray *args, GError **error);
/* After parsing: checks the values and builds the options; false after
 * printing `prog: why` (a usage error). Clear it even then. */
bool tool_check_config_build(const char *prog, tool_check_config *cfg);
/* Finishes the --gpu-stages file; false after printing `prog: FILE: why`
 * when it could not be written (exit status 2). */
bool tool_check_config_close(const char *prog, tool_check_config *cfg);
void tool_check_config_clear(tool_check_config *cfg);

/* Checks one file ("-": standard input) into *f. False when it could not
 * be opened or read to the end (exit status 2), after printing why as
 * `prog: PATH: message`; messages that *f points to are kept in `errors`.
 * `progress_line`: on a terminal, big inputs show their progress. */
bool tool_check_file(const char *prog, const char *path, const tk_check_options *o,
                     bool progress_line, tk_file_result *f, GPtrArray *errors);

gchar **tool_check_files(void);
const char *tool_check_plot_path(void);
const tool_check_outputs *tool_check_outputs_get(void);
void tool_check_free_args(void);

#endif /* TOOL_CHECK_H */
