/* SPDX-License-Identifier: MIT */
/* Field numbers of the Perfetto messages the checker decodes by hand with
 * pb_reader: payloads that our schema subset (protos/perfetto) does not
 * declare, so the generated code has no accessors for them. Numbers checked
 * against google/perfetto v47 protos/perfetto/trace/trace_packet.proto,
 * ftrace/ftrace_event_bundle.proto and ftrace/ftrace_stats.proto. */
#ifndef TK_FIELDS_H
#define TK_FIELDS_H

enum {
    /* TracePacket fields outside protos/perfetto/trace/trace_packet.proto */
    TK_PKT_FTRACE_EVENTS = 1, /* FtraceEventBundle */
    TK_PKT_CHROME_EVENTS = 5, /* timestamps implicitly MONOTONIC upstream */
    TK_PKT_FTRACE_STATS = 34, /* FtraceStats */
    TK_PKT_CHROME_METADATA = 51,
    TK_PKT_EXTENSION_DESCRIPTOR = 72,
    TK_PKT_REMOTE_CLOCK_SYNC = 107,

    /* FtraceEventBundle */
    TK_FTB_CPU = 1,
    TK_FTB_LOST_EVENTS = 3,

    /* FtraceStats */
    TK_FTS_PHASE = 1,
    TK_FTS_CPU_STATS = 2,
    TK_FTS_ATRACE_ERRORS = 5,
    TK_FTS_UNKNOWN_FTRACE_EVENTS = 6,
    TK_FTS_FAILED_FTRACE_EVENTS = 7,
    TK_FTS_PHASE_START = 1,
    TK_FTS_PHASE_END = 2,

    /* FtraceCpuStats */
    TK_FCS_CPU = 1,
    TK_FCS_ENTRIES = 2,
    TK_FCS_OVERRUN = 3,
    TK_FCS_COMMIT_OVERRUN = 4,
    TK_FCS_BYTES_READ = 5,
    TK_FCS_OLDEST_EVENT_TS = 6, /* double, seconds */
    TK_FCS_NOW_TS = 7,          /* double, seconds */
    TK_FCS_DROPPED_EVENTS = 8,
    TK_FCS_READ_EVENTS = 9,

    /* Any interned message: its id */
    TK_INTERNED_IID = 1,
};

#endif /* TK_FIELDS_H */
