/* SPDX-License-Identifier: MIT */
/* Fuzz target: gputrace-dump's packet printer (on_packet, the --verbose
 * field dumps, compressed_packets inside), which is its own code apart from
 * gputrace-check's pipeline. The program's file is included with main()
 * renamed and its output sent to /dev/null. The input is the trace itself
 * (the seeds are the toolkit's traces); its length picks --verbose and
 * tight or loose limits. Any crash, sanitizer report or leak is a bug. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every header of the program before the renaming macros below. */
#include "protos/pb/pb_reader.h"
#include "toolkit/tk_clock_graph.h"
#include "toolkit/tk_fields.h"
#include "toolkit/tk_schema.h"
#include "toolkit/tk_inflate.h"
#include "toolkit/tk_trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int gputrace_dump_main(int argc, char **argv);

/* The program prints a lot; it goes to /dev/null, the sanitizers keep
 * stderr. */
static FILE *quiet_out, *quiet_err;
#undef stdout
#undef stderr
#define stdout      quiet_out
#define stderr      quiet_err
#define printf(...) fprintf(quiet_out, __VA_ARGS__)
#define putchar(c)  fputc((c), quiet_out)
#define main        gputrace_dump_main
#include "toolkit/gputrace-dump.c"
#undef main
#undef putchar
#undef printf
#undef stderr
#undef stdout

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!quiet_out) {
        quiet_out = fopen("/dev/null", "w");
        quiet_err = fopen("/dev/null", "w");
        if (!quiet_out || !quiet_err)
            abort();
    }
    /* What main() does for one file, on the input in memory: the file
     * reading itself is the reader's, fuzzed by fuzz_toolkit_check (and
     * main()'s 4 MiB read blocks would cost ASan more than the parsing). */
    opt_verbose = !(size & 1);
    tk_inflate_limits limits;
    tk_inflate_limits_default(&limits);
    /* Small limits keep a run short and reach the limit paths. */
    limits.max_bytes = size & 2 ? 65536 : 4u << 20;
    const size_t max_packet = size & 4 ? 512 : 65536;
    dump_ctx ctx = { .path = "fuzz", .z = tk_inflater_new(max_packet) };
    if (!ctx.z)
        return 0;
    tk_inflater_set_limits(ctx.z, &limits);
    tk_reader rd;
    tk_reader_config cfg = { .max_packet_size = max_packet };
    tk_reader_init(&rd, &cfg);
    tk_read_status st = tk_reader_parse_buffer(&rd, data, size, on_packet, &ctx);
    if (ctx.failed && !ctx.err[0])
        abort(); /* a failure always says why */
    if (!ctx.failed && st != TK_READ_OK && !tk_reader_error(&rd)[0])
        abort();
    fprintf(quiet_out, "# %" PRIu64 " packets\n", ctx.packets);
    tk_reader_free(&rd);
    tk_inflater_free(ctx.z);
    return 0;
}
