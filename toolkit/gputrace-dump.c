/* SPDX-License-Identifier: MIT */
/* gputrace-dump: one line per TracePacket (offset, size, sequence, flags,
 * timestamp and clock, payload), and with --verbose the fields that matter
 * for clock correlation and loss (clock snapshots, trace stats, GPU and
 * Vulkan events, interned GPU specifications, sequence defaults). For
 * people debugging a trace; values are printed raw, as written. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protos/pb/pb_reader.h"
#include "toolkit/tk_clock_graph.h"
#include "toolkit/tk_fields.h"
#include "toolkit/tk_schema.h"
#include "toolkit/tk_inflate.h"
#include "toolkit/tk_trace_reader.h"
#include "toolkit/tool_common.h"

#define PROG "gputrace-dump"

static gboolean opt_verbose, opt_version;
static gint64 opt_max_packet = TK_READER_DEFAULT_MAX_PACKET;
static gint64 opt_max_inflated = (gint64)TK_INFLATE_DEFAULT_MAX_BYTES;
static gint64 opt_max_inflate_ratio = TK_INFLATE_DEFAULT_MAX_RATIO;
static gchar **opt_files;

static const GOptionEntry entries[] = {
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose,
      "Also print the fields of clock snapshots, trace stats, GPU/Vulkan events, interned GPU "
      "specifications and other payloads",
      NULL },
    { "max-packet-size", 0, 0, G_OPTION_ARG_INT64, &opt_max_packet,
      "Reject packets larger than this (default 33554432)", "BYTES" },
    { "max-inflated-bytes", 0, 0, G_OPTION_ARG_INT64, &opt_max_inflated,
      "Stop when a file's compressed packets (deflate or zstd) expand to more than this "
      "in total (default 1073741824; 0 no limit)",
      "BYTES" },
    { "max-inflate-ratio", 0, 0, G_OPTION_ARG_INT64, &opt_max_inflate_ratio,
      "Stop when a file's compressed packets (deflate or zstd) expand to more than N times "
      "their size, beyond the first 16 MiB (default 100; 0 no limit)",
      "N" },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &opt_files, NULL, "FILE…" },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

/* TracePacket payload names by field number (upstream v47 numbering, and
 * gpu_info from later upstream). */
static const char *payload_name(uint32_t id)
{
    switch (id) {
    case 1:
        return "ftrace_events";
    case 2:
        return "process_tree";
    case 4:
        return "inode_file_map";
    case 5:
        return "chrome_events";
    case 6:
        return "clock_snapshot";
    case 7:
        return "sys_stats";
    case 9:
        return "process_stats";
    case 11:
        return "track_event";
    case 33:
        return "trace_config";
    case 34:
        return "ftrace_stats";
    case 35:
        return "trace_stats";
    case 36:
        return "synchronization_marker";
    case 37:
        return "profile_packet";
    case 43:
        return "process_descriptor";
    case 44:
        return "thread_descriptor";
    case 45:
        return "system_info";
    case 50:
        return "compressed_packets";
    case 51:
        return "chrome_metadata";
    case 52:
        return "gpu_counter_event";
    case 53:
        return "gpu_render_stage_event";
    case 57:
        return "graphics_frame_event";
    case 60:
        return "track_descriptor";
    case 62:
        return "vulkan_memory_event";
    case 63:
        return "gpu_log";
    case 65:
        return "vulkan_api_event";
    case 67:
        return "cpu_info";
    case 69:
        return "service_event";
    case 71:
        return "gpu_mem_total_event";
    case 72:
        return "extension_descriptor";
    case 89:
        return "trace_uuid";
    case 107:
        return "remote_clock_sync";
    case 128: /* newer than v47, which skips it */
        return "gpu_info";
    case 133:
        return "zstd_compressed_packets";
    case 900:
        return "for_testing";
    default:
        return NULL;
    }
}

typedef struct dump_ctx {
    const char *path;
    tk_inflater *z;
    uint64_t packets;
    bool in_compressed;
    bool failed;
    char err[256];
} dump_ctx;

static void print_fields(const uint8_t *data, size_t len, const char *indent)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    printf("%s", indent);
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type == PB_WIRE_LEN)
            printf(" %u:len=%" PRIu64, f.id, f.value);
        else
            printf(" %u=%" PRIu64, f.id, f.value);
    }
    if (r.err)
        printf(" <%s>", pb_error_str(r.err));
    putchar('\n');
}

static void dump_clock_snapshot(const uint8_t *d, size_t n)
{
    perfetto_protos_ClockSnapshot_view snap;
    (void)perfetto_protos_ClockSnapshot_decode(&snap, d, n);
    if (snap.has_primary_trace_clock)
        printf("    primary_trace_clock=%d\n", snap.primary_trace_clock);
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, d, n);
    while (pb_reader_next(&r, &f)) {
        if (f.id != TK_CS_CLOCKS || f.wire_type != PB_WIRE_LEN)
            continue;
        perfetto_protos_ClockSnapshot_Clock_view c;
        (void)perfetto_protos_ClockSnapshot_Clock_decode(&c, f.data, (size_t)f.value);
        const char *bn = tk_clock_builtin_name(c.clock_id);
        printf("    clock %u%s%s%s ts=%" PRIu64, c.clock_id, bn ? " (" : "", bn ? bn : "",
               bn ? ")" : "", c.timestamp);
        if (c.unit_multiplier_ns)
            printf(" unit_multiplier_ns=%" PRIu64, c.unit_multiplier_ns);
        if (c.is_incremental)
            printf(" incremental");
        if (c.clock_id >= 128 && !(c.clock_id & 0x80000000u))
            printf("  [global id without the top bit]");
        putchar('\n');
    }
}

static void dump_trace_stats(const uint8_t *d, size_t n)
{
    static const char *buf_names[21] = {
        [1] = "bytes_written",
        [2] = "chunks_written",
        [3] = "chunks_overwritten",
        [4] = "write_wrap_count",
        [5] = "patches_succeeded",
        [6] = "patches_failed",
        [7] = "readaheads_succeeded",
        [8] = "readaheads_failed",
        [9] = "abi_violations",
        [10] = "chunks_rewritten",
        [11] = "chunks_committed_out_of_order",
        [12] = "buffer_size",
        [13] = "bytes_overwritten",
        [14] = "bytes_read",
        [15] = "padding_bytes_written",
        [16] = "padding_bytes_cleared",
        [17] = "chunks_read",
        [18] = "chunks_discarded",
        [19] = "trace_writer_packet_loss",
        [20] = "chunks_relocated",
    };
    pb_reader r;
    pb_field f;
    int buf = 0;
    pb_reader_init(&r, d, n);
    while (pb_reader_next(&r, &f)) {
        if (f.id == TK_TS_BUFFER_STATS && f.wire_type == PB_WIRE_LEN) {
            printf("    buffer %d:", buf++);
            pb_reader b;
            pb_field g;
            pb_reader_init(&b, f.data, (size_t)f.value);
            while (pb_reader_next(&b, &g))
                if (g.wire_type == PB_WIRE_VARINT && g.value)
                    printf(" %s=%" PRIu64, g.id < 21 && buf_names[g.id] ? buf_names[g.id] : "?",
                           g.value);
            putchar('\n');
        } else if (f.id == TK_TS_WRITER_STATS && f.wire_type == PB_WIRE_LEN) {
            perfetto_protos_TraceStats_WriterStats_view w;
            (void)perfetto_protos_TraceStats_WriterStats_decode(&w, f.data, (size_t)f.value);
            printf("    writer sequence=%" PRIu64 " buffer=%u\n", w.sequence_id, w.buffer);
        } else if (f.wire_type == PB_WIRE_VARINT && f.value) {
            static const char *names[16] = {
                [2] = "producers_connected",     [3] = "producers_seen",
                [4] = "data_sources_registered", [5] = "data_sources_seen",
                [6] = "tracing_sessions",        [7] = "total_buffers",
                [8] = "chunks_discarded",        [9] = "patches_discarded",
                [10] = "invalid_packets",        [12] = "flushes_requested",
                [13] = "flushes_succeeded",      [14] = "flushes_failed",
                [15] = "final_flush_outcome",
            };
            printf("    %s=%" PRIu64 "\n", f.id < 16 && names[f.id] ? names[f.id] : "?", f.value);
        }
    }
}

static void dump_gpu(const uint8_t *d, size_t n)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, d, n);
    printf("   ");
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_VARINT)
            continue;
        switch (f.id) {
        case TK_GRS_EVENT_ID:
            printf(" event_id=%" PRIu64, f.value);
            break;
        case TK_GRS_DURATION:
            printf(" duration=%" PRIu64, f.value);
            break;
        case TK_GRS_HW_QUEUE_IID:
            printf(" hw_queue_iid=%" PRIu64, f.value);
            break;
        case TK_GRS_STAGE_IID:
            printf(" stage_iid=%" PRIu64, f.value);
            break;
        case TK_GRS_SUBMISSION_ID:
            printf(" submission_id=%" PRIu64, f.value);
            break;
        case TK_GRS_CONTEXT:
            printf(" context=%" PRIu64, f.value);
            break;
        case TK_GRS_HW_QUEUE_ID:
            printf(" hw_queue_id=%" PRIu64, f.value);
            break;
        default:
            printf(" %u=%" PRIu64, f.id, f.value);
        }
    }
    putchar('\n');
}

static void dump_vk(const uint8_t *d, size_t n)
{
    perfetto_protos_VulkanApiEvent_view v;
    (void)perfetto_protos_VulkanApiEvent_decode(&v, d, n);
    if (v.has_vk_queue_submit) {
        perfetto_protos_VulkanApiEvent_VkQueueSubmit_view q;
        (void)perfetto_protos_VulkanApiEvent_VkQueueSubmit_decode(&q, v.vk_queue_submit.data,
                                                                  v.vk_queue_submit.size);
        printf("    vk_queue_submit duration_ns=%" PRIu64 " pid=%u tid=%u vk_queue=0x%" PRIx64
               " command_buffers=%u submission_id=%u\n",
               q.duration_ns, q.pid, q.tid, q.vk_queue, q.vk_command_buffers_count,
               q.submission_id);
    }
    if (v.has_vk_debug_utils_object_name) {
        perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_view o;
        (void)perfetto_protos_VulkanApiEvent_VkDebugUtilsObjectName_decode(
            &o, v.vk_debug_utils_object_name.data, v.vk_debug_utils_object_name.size);
        printf("    vk_debug_utils_object_name object=0x%" PRIx64 " type=%d name=\"%.*s\"\n",
               o.object, o.object_type, (int)(o.object_name.size > 80 ? 80 : o.object_name.size),
               o.object_name.data ? (const char *)o.object_name.data : "");
    }
}

static void dump_interned(const uint8_t *d, size_t n)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, d, n);
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_LEN)
            continue;
        uint64_t iid = 0;
        pb_bytes name = { 0 };
        pb_reader e;
        pb_field g;
        pb_reader_init(&e, f.data, (size_t)f.value);
        while (pb_reader_next(&e, &g)) {
            if (g.id == 1 && g.wire_type == PB_WIRE_VARINT)
                iid = g.value;
            else if (g.id == 2 && g.wire_type == PB_WIRE_LEN)
                name = pb_field_bytes(&g);
        }
        const char *what = f.id == TK_ID_GPU_SPECIFICATIONS  ? "gpu_specification"
                           : f.id == TK_ID_GRAPHICS_CONTEXTS ? "graphics_context"
                                                             : NULL;
        if (what)
            printf("    interned %s iid=%" PRIu64, what, iid);
        else
            printf("    interned field %u iid=%" PRIu64, f.id, iid);
        if (f.id == TK_ID_GPU_SPECIFICATIONS && name.data)
            printf(" name=\"%.*s\"", (int)(name.size > 80 ? 80 : name.size),
                   (const char *)name.data);
        putchar('\n');
    }
}

/* --verbose: the fields of the payloads that matter for correlation and
 * loss, and a field list of the others. */
static void dump_payloads(const uint8_t *data, size_t len)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
        if (f.wire_type != PB_WIRE_LEN)
            continue;
        switch (f.id) {
        case TK_TP_CLOCK_SNAPSHOT:
            dump_clock_snapshot(f.data, (size_t)f.value);
            break;
        case TK_TP_TRACE_STATS:
            dump_trace_stats(f.data, (size_t)f.value);
            break;
        case TK_TP_GPU_RENDER_STAGE_EVENT:
            dump_gpu(f.data, (size_t)f.value);
            break;
        case TK_TP_VULKAN_API_EVENT:
            dump_vk(f.data, (size_t)f.value);
            break;
        case TK_TP_INTERNED_DATA:
            dump_interned(f.data, (size_t)f.value);
            break;
        case TK_TP_TRACE_PACKET_DEFAULTS:
            print_fields(f.data, (size_t)f.value, "    defaults:");
            break;
        case TK_TP_COMPRESSED_PACKETS:
        case TK_TP_ZSTD_COMPRESSED_PACKETS:
        case TK_TP_SYNCHRONIZATION_MARKER:
            break;
        default:
            if (f.value <= 4096) {
                char indent[64];
                snprintf(indent, sizeof indent,
                         "    %s:", payload_name(f.id) ? payload_name(f.id) : "field");
                print_fields(f.data, (size_t)f.value, indent);
            }
        }
    }
}

static bool on_packet(void *vctx, const uint8_t *data, size_t len, uint64_t offset)
{
    dump_ctx *ctx = vctx;
    pb_reader r;
    pb_field f;
    bool has_ts = false, has_clk = false, has_seq = false;
    uint64_t ts = 0, clk = 0, seq = 0, flags = 0;
    bool dropped = false, first = false, cleared = false;
    pb_bytes compressed = { 0 }, defaults = { 0 };
    tk_codec codec = TK_CODEC_DEFLATE;
    char payloads[256] = "";
    size_t pl = 0;

    ctx->packets++;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
        switch (f.id) {
        case TK_TP_TIMESTAMP:
            has_ts = true;
            ts = f.value;
            continue;
        case TK_TP_TIMESTAMP_CLOCK_ID:
            has_clk = true;
            clk = f.value;
            continue;
        case TK_TP_TRUSTED_PACKET_SEQUENCE_ID:
            has_seq = true;
            seq = f.value;
            continue;
        case TK_TP_SEQUENCE_FLAGS:
            flags = f.value;
            continue;
        case TK_TP_PREVIOUS_PACKET_DROPPED:
            dropped = f.value != 0;
            continue;
        case TK_TP_FIRST_PACKET_ON_SEQUENCE:
            first = f.value != 0;
            continue;
        case TK_TP_INCREMENTAL_STATE_CLEARED:
            cleared = f.value != 0;
            continue;
        case TK_TP_TRUSTED_UID:
        case TK_TP_TRUSTED_PID:
        case TK_TP_MACHINE_ID:
            continue;
        case TK_TP_COMPRESSED_PACKETS:
            compressed = pb_field_bytes(&f);
            codec = TK_CODEC_DEFLATE;
            break;
        case TK_TP_ZSTD_COMPRESSED_PACKETS:
            /* As upstream: deflate when a packet has both. */
            if (!compressed.data) {
                compressed = pb_field_bytes(&f);
                codec = TK_CODEC_ZSTD;
            }
            break;
        case TK_TP_TRACE_PACKET_DEFAULTS:
            defaults = pb_field_bytes(&f);
            break;
        default:
            break;
        }
        const char *name = payload_name(f.id);
        int w =
            name ? snprintf(payloads + pl, sizeof payloads - pl, "%s%s", pl ? "," : "", name)
                 : snprintf(payloads + pl, sizeof payloads - pl, "%sfield%u", pl ? "," : "", f.id);
        if (f.id == TK_TP_INTERNED_DATA)
            w = snprintf(payloads + pl, sizeof payloads - pl, "%sinterned_data", pl ? "," : "");
        else if (f.id == TK_TP_TRACE_PACKET_DEFAULTS)
            w = snprintf(payloads + pl, sizeof payloads - pl, "%strace_packet_defaults",
                         pl ? "," : "");
        if (w > 0 && (size_t)w < sizeof payloads - pl)
            pl += (size_t)w;
    }
    printf("%s%" PRIu64 " size=%zu", ctx->in_compressed ? "  > " : "", offset, len);
    if (has_seq)
        printf(" seq=%" PRIu64, seq);
    if (has_ts)
        printf(" ts=%" PRIu64, ts);
    if (has_clk) {
        const char *bn = tk_clock_builtin_name((int64_t)clk);
        printf(" clock=%" PRIu64 "%s%s%s", clk, bn ? "(" : "", bn ? bn : "", bn ? ")" : "");
    }
    if (flags & TK_SEQ_INCREMENTAL_STATE_CLEARED || cleared)
        printf(" [cleared]");
    if (flags & TK_SEQ_NEEDS_INCREMENTAL_STATE)
        printf(" [needs-state]");
    if (dropped)
        printf(" [previous-dropped]");
    if (first)
        printf(" [first]");
    printf(" %s", pl ? payloads : "(empty)");
    if (r.err)
        printf(" <malformed: %s>", pb_error_str(r.err));
    putchar('\n');

    if (opt_verbose && !r.err)
        dump_payloads(data, len);
    (void)defaults;

    if (compressed.data && !r.err) {
        if (ctx->in_compressed) {
            snprintf(ctx->err, sizeof ctx->err, "offset %" PRIu64 ": nested compressed_packets",
                     offset);
            ctx->failed = true;
            return false;
        }
        ctx->in_compressed = true;
        tk_read_status st = tk_decompress_packets(ctx->z, codec, compressed.data, compressed.size,
                                                  offset, on_packet, ctx, NULL);
        ctx->in_compressed = false;
        if (st != TK_READ_OK && st != TK_READ_ERR_ABORTED) {
            snprintf(ctx->err, sizeof ctx->err, "%s", tk_inflater_error(ctx->z));
            ctx->failed = true;
            return false;
        }
        if (st == TK_READ_ERR_ABORTED)
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    /* GOption prints its help in the locale's charset: "?" for every
     * non-ASCII character under the C locale a program starts in. */
    setlocale(LC_ALL, "");
    g_autoptr(GOptionContext) octx = g_option_context_new("— list the packets of traces");
    g_autoptr(GError) error = NULL;
    g_option_context_set_summary(octx, "Print one line per TracePacket of Perfetto traces.");
    g_option_context_set_description(
        octx, "Each line: input offset of the packet record, size, trusted_packet_sequence_id,\n"
              "timestamp and timestamp_clock_id as written, sequence flags ([cleared],\n"
              "[needs-state]), loss markers ([previous-dropped], [first]) and the payload\n"
              "fields. Packets inside compressed_packets (deflate) or zstd_compressed_packets\n"
              "are indented with \"> \" and carry the offset of the compressed packet. \"-\"\n"
              "reads standard input. Compressed packets may expand to at most\n"
              "--max-inflate-ratio times their size\n"
              "and --max-inflated-bytes in all; beyond, the file is an input error.\n"
              "\n"
              "Exit status:\n"
              "  0  every file was read to the end\n"
              "  2  usage error, or an input could not be opened, read or decoded\n");
    g_option_context_add_main_entries(octx, entries, NULL);
    if (!g_option_context_parse(octx, &argc, &argv, &error)) {
        fprintf(stderr, PROG ": %s\nTry '" PROG " --help'.\n", error->message);
        return 2;
    }
    if (opt_version) {
        tool_print_version(PROG);
        g_strfreev(opt_files);
        return TOOL_EXIT_PASS;
    }
    if (!opt_files || !opt_files[0]) {
        fprintf(stderr, PROG ": no input file (use - for standard input)\n");
        return 2;
    }
    if (!tool_read_limits_valid(PROG, opt_max_packet, opt_max_inflated, opt_max_inflate_ratio))
        return TOOL_EXIT_USAGE;
    tk_inflate_limits limits;
    tk_inflate_limits_default(&limits);
    limits.max_bytes = (uint64_t)opt_max_inflated;
    limits.max_ratio = (uint32_t)opt_max_inflate_ratio;
    int status = 0;
    for (gchar **p = opt_files; *p; p++) {
        bool is_stdin;
        int fd = tool_open_input(*p, &is_stdin);
        if (fd < 0) {
            fprintf(stderr, PROG ": %s: %s\n", *p, g_strerror(errno));
            status = 2;
            continue;
        }
        if (opt_files[1])
            printf("== %s\n", *p);
        dump_ctx ctx = { .path = *p, .z = tk_inflater_new((size_t)opt_max_packet) };
        if (ctx.z)
            tk_inflater_set_limits(ctx.z, &limits);
        tk_reader rd;
        tk_reader_config cfg = { .max_packet_size = (size_t)opt_max_packet };
        tk_reader_init(&rd, &cfg);
        tk_read_status st =
            ctx.z ? tk_reader_read_fd(&rd, fd, on_packet, &ctx, NULL, NULL) : TK_READ_ERR_NOMEM;
        if (ctx.failed) {
            fprintf(stderr, PROG ": %s: %s\n", *p, ctx.err);
            status = 2;
        } else if (st != TK_READ_OK) {
            fprintf(stderr, PROG ": %s: %s\n", *p, tk_reader_error(&rd));
            status = 2;
        }
        printf("# %s: %" PRIu64 " packets, %" PRIu64 " bytes\n", *p, ctx.packets,
               rd.offset + rd.len);
        tk_reader_free(&rd);
        tk_inflater_free(ctx.z);
        if (!is_stdin)
            close(fd);
    }
    fflush(stdout);
    g_strfreev(opt_files);
    return status;
}
