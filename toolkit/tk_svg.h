/* SPDX-License-Identifier: MIT */
/* --plot: a hand-written SVG with, for every custom clock of every file,
 * its offset to the trace clock (trace time - clock reading) at each
 * snapshot and the residual (change of that offset since the previous
 * snapshot, i.e. the error a piecewise-constant conversion makes just
 * before the next snapshot). */
#ifndef TK_SVG_H
#define TK_SVG_H

#include <stdbool.h>

#include "toolkit/tk_report.h"

/* Returns false with errno set on I/O errors. Clocks without points
 * (builtin ones, the trace clock) are left out; with none left (and no
 * frames) the file says so in a text element. With frame statistics
 * (--frames), each frames track also gets a panel of its frame interval
 * and GPU frame time over the run, the interval's p50, p90 and p99 marked. */
bool tk_svg_write(const char *path, const tk_file_result *files, size_t n);

#endif /* TK_SVG_H */
