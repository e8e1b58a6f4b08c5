/* SPDX-License-Identifier: MIT */
/* .pftrace output for the service side (in-process backend, gputrace-service). */
#include "tracing/service_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tracing/clock_snapshot.h"
#include "protos/perfetto/trace.pbc.h"
#include "protos/perfetto/trace_packet.pbc.h"

#define OUT_FLUSH_BYTES (1u << 20)

/* Sequence ids are handed out from 1 upwards; beyond this a gap is not
 * marked on the sequence (still counted in TraceStats). */
#define SVC_OUT_MAX_MARKED_SEQ (1u << 20)

void svc_out_init(svc_out *o, int fd)
{
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->service_uid = (int32_t)geteuid();
    pb_heap_init(&o->heap, 4096);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        o->file_size = (uint64_t)st.st_size;
}

void svc_out_init_sink(svc_out *o,
                       void (*sink)(void *ctx, const uint8_t *data,
                                    const struct svc_out_record *records, size_t n),
                       void *ctx)
{
    svc_out_init(o, -1);
    o->sink = sink;
    o->sink_ctx = ctx;
}

static void mark_dropped(svc_out *o, uint32_t seq)
{
    if (seq >= SVC_OUT_MAX_MARKED_SEQ)
        return;
    if (seq >= o->dropped_seq_len) {
        size_t n = o->dropped_seq_len ? o->dropped_seq_len : 64;
        while (n <= seq)
            n *= 2;
        uint8_t *m = realloc(o->dropped_seq, n);
        if (!m)
            return;
        memset(m + o->dropped_seq_len, 0, n - o->dropped_seq_len);
        o->dropped_seq = m;
        o->dropped_seq_len = n;
    }
    o->dropped_seq[seq] = 1;
}

/* Whether packets of `seq` were dropped since its last packet that made
 * it into the buffer; clears the mark. */
static bool take_dropped_mark(svc_out *o, uint32_t seq)
{
    if (seq >= o->dropped_seq_len || !o->dropped_seq[seq])
        return false;
    o->dropped_seq[seq] = 0;
    return true;
}

#define TAIL_RING (sizeof((svc_out *)0)->tail_ends / sizeof((svc_out *)0)->tail_ends[0])

/* Records [0, n) of the buffer are in the file now, from `base` on. */
static void note_tail(svc_out *o, uint64_t base, size_t n)
{
    for (size_t i = n > TAIL_RING ? n - TAIL_RING : 0; i < n; i++) {
        o->tail_ends[o->tail_head] = base + o->records[i].end;
        o->tail_head = (o->tail_head + 1) % TAIL_RING;
        if (o->num_tail_ends < TAIL_RING)
            o->num_tail_ends++;
    }
}

bool svc_out_make_room(svc_out *o, size_t bytes)
{
    if (o->broken || o->fd < 0 ||
        (o->last_error != ENOSPC && o->last_error != EDQUOT && o->last_error != EFBIG))
        return false;
    /* tail_ends[head - 1] is the file's end (record 0, the newest); cutting
     * records 0..k-1 leaves the file ending where record k ends. The
     * oldest noted record is never cut: where it starts is not known, and
     * the file's head holds the clocks. */
    size_t k = 0;
    uint64_t cut = o->file_size;
    while (o->file_size - cut < bytes) {
        if (k + 1 >= o->num_tail_ends)
            return false;
        k++;
        cut = o->tail_ends[(o->tail_head + TAIL_RING - 1 - k) % TAIL_RING];
    }
    if (k == 0)
        return true;
    if (ftruncate(o->fd, (off_t)cut) != 0 || lseek(o->fd, (off_t)cut, SEEK_SET) != (off_t)cut)
        return false;
    o->bytes_dropped += o->file_size - cut;
    o->packets_dropped += k;
    o->file_size = cut;
    o->tail_head = (o->tail_head + TAIL_RING - k) % TAIL_RING;
    o->num_tail_ends -= k;
    return true;
}

/* A write-out failed after `written` bytes: keep the whole records among
 * them, cut the file back to the last one's end, drop the rest. */
static void drop_buffer(svc_out *o, size_t written, int err)
{
    size_t keep = 0, first_lost = 0;
    while (first_lost < o->num_records && o->records[first_lost].end <= written)
        keep = o->records[first_lost++].end;
    if (written > keep && !o->broken &&
        (ftruncate(o->fd, (off_t)(o->file_size + keep)) != 0 ||
         lseek(o->fd, (off_t)(o->file_size + keep), SEEK_SET) != (off_t)(o->file_size + keep)))
        o->broken = true;
    if (o->broken)
        keep = written; /* whatever it is, it is in the file now */
    else
        note_tail(o, o->file_size, first_lost);
    o->file_size += keep;
    for (size_t i = first_lost; i < o->num_records; i++)
        mark_dropped(o, o->records[i].sequence_id);
    o->write_failures++;
    o->packets_dropped += o->num_records - first_lost;
    o->bytes_dropped += o->len - keep;
    o->last_error = err;
    o->io_error = true;
    o->num_records = 0;
    o->len = 0;
}

bool svc_out_flush(svc_out *o)
{
    if (o->len == 0)
        return true;
    if (o->sink) {
        o->sink(o->sink_ctx, o->buf, o->records, o->num_records);
        o->num_records = 0;
        o->len = 0;
        return true;
    }
    if (o->broken || o->fd < 0) {
        drop_buffer(o, 0, o->fd < 0 ? EBADF : o->last_error);
        return false;
    }
    size_t off = 0;
    while (off < o->len) {
        ssize_t n = write(o->fd, o->buf + off, o->len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        /* write(2) returning 0 for a regular file means no room. */
        drop_buffer(o, off, n < 0 ? errno : ENOSPC);
        return false;
    }
    note_tail(o, o->file_size, o->num_records);
    o->file_size += o->len;
    o->num_records = 0;
    o->len = 0;
    return true;
}

bool svc_out_close(svc_out *o)
{
    svc_out_flush(o);
    bool ok = !o->io_error;
    if (o->fd >= 0 && close(o->fd) != 0)
        ok = false;
    o->fd = -1;
    free(o->buf);
    o->buf = NULL;
    free(o->records);
    o->records = NULL;
    free(o->dropped_seq);
    o->dropped_seq = NULL;
    pb_heap_free(&o->heap);
    return ok;
}

/* ---- opening trace files ------------------------------------------------ */

static bool put_str(char **p, char *end, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(end - *p) <= n)
        return false;
    memcpy(*p, s, n);
    *p += n;
    return true;
}

/* Host and program names become part of a file name: no '/' in them. */
static void file_name_safe(char *s)
{
    for (; *s; s++) {
        if (*s == '/')
            *s = '_';
    }
}

bool svc_out_expand_path(const char *pattern, char *out, size_t cap, unsigned *unknown)
{
    char *p = out, *end = out + cap;
    unsigned unk = 0;
    bool fits = cap > 0;
    for (const char *s = pattern; *s && fits; s++) {
        char tmp[256];
        if (*s != '%' || !s[1]) {
            tmp[0] = *s;
            tmp[1] = 0;
        } else {
            switch (*++s) {
            case 'p':
                snprintf(tmp, sizeof tmp, "%ld", (long)getpid());
                break;
            case 't':
                snprintf(tmp, sizeof tmp, "%lld", (long long)time(NULL));
                break;
            case 'h':
                if (gethostname(tmp, sizeof tmp) != 0)
                    snprintf(tmp, sizeof tmp, "localhost");
                tmp[sizeof tmp - 1] = 0;
                file_name_safe(tmp);
                break;
            case 'e':
                snprintf(tmp, sizeof tmp, "%s",
                         *program_invocation_short_name ? program_invocation_short_name
                                                        : "unknown");
                file_name_safe(tmp);
                break;
            case '%':
                snprintf(tmp, sizeof tmp, "%%");
                break;
            default:
                snprintf(tmp, sizeof tmp, "%%%c", *s);
                unk++;
                break;
            }
        }
        fits = put_str(&p, end, tmp);
    }
    if (unknown)
        *unknown = unk;
    if (!fits) {
        if (cap)
            out[0] = 0;
        errno = ENAMETOOLONG;
        return false;
    }
    *p = 0;
    return true;
}

static const char *kind_refused(mode_t mode)
{
    if (S_ISLNK(mode))
        return "is a symbolic link (not followed)";
    if (S_ISDIR(mode))
        return "is a directory";
    if (S_ISFIFO(mode))
        return "is a FIFO (not opened: it could block)";
    if (S_ISSOCK(mode))
        return "is a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "is a device (not opened)";
    return "is not a regular file";
}

enum open_outcome {
    OPEN_OK,
    OPEN_BUSY,
    OPEN_FAILED
};

static enum open_outcome open_locked(const char *path, svc_out_file *res)
{
    struct stat st;
    /* Never open what is not a plain file: opening a FIFO can block, a
     * device can act on open, a link can point anywhere. */
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        res->refused = kind_refused(st.st_mode);
        errno = S_ISDIR(st.st_mode) ? EISDIR : S_ISLNK(st.st_mode) ? ELOOP : EINVAL;
        return OPEN_FAILED;
    }
    /* Something swapped in after the check: O_NOFOLLOW fails on a link,
     * O_NONBLOCK keeps a FIFO from blocking, and fstat tells. */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == ELOOP)
            res->refused = kind_refused(S_IFLNK);
        else if (errno == ENXIO)
            res->refused = kind_refused(S_IFIFO);
        return OPEN_FAILED;
    }
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return OPEN_FAILED;
    }
    if (!S_ISREG(st.st_mode)) {
        res->refused = kind_refused(st.st_mode);
        close(fd);
        errno = EINVAL;
        return OPEN_FAILED;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        if (err == EWOULDBLOCK || err == EINTR) {
            close(fd);
            return OPEN_BUSY;
        }
        /* A file system without locks (ENOLCK, EOPNOTSUPP): write
         * unlocked, as any tool would. */
    }
    int err = 0;
    if (ftruncate(fd, 0) != 0)
        err = errno;
    int fl = fcntl(fd, F_GETFL);
    if (!err && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0))
        err = errno;
    if (err) {
        close(fd);
        errno = err;
        return OPEN_FAILED;
    }
    res->fd = fd;
    return OPEN_OK;
}

/* "<stem>.<pid><ext>": ext is the file name's last ".xxx" (not a leading
 * dot). */
static bool per_pid_path(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        dot = path + strlen(path);
    int n = snprintf(out, cap, "%.*s.%ld%s", (int)(dot - path), path, (long)getpid(), dot);
    return n > 0 && (size_t)n < cap;
}

void svc_out_create_file(const char *path, svc_out_file *res)
{
    res->fd = -1;
    res->fell_back = false;
    res->refused = NULL;
    int n = snprintf(res->path, sizeof res->path, "%s", path);
    if (n < 0 || (size_t)n >= sizeof res->path) {
        errno = ENAMETOOLONG;
        return;
    }
    enum open_outcome r = open_locked(res->path, res);
    if (r != OPEN_BUSY)
        return;
    if (!per_pid_path(path, res->path, sizeof res->path)) {
        snprintf(res->path, sizeof res->path, "%s", path);
        errno = ENAMETOOLONG;
        return;
    }
    res->fell_back = true;
    if (open_locked(res->path, res) == OPEN_BUSY) {
        res->refused = "is being written by another process";
        errno = EBUSY;
    }
}

static void append(svc_out *o, const void *data, size_t n)
{
    if (o->len + n > o->cap) {
        size_t ncap = o->cap ? o->cap : OUT_FLUSH_BYTES;
        while (ncap < o->len + n)
            ncap *= 2;
        uint8_t *p = realloc(o->buf, ncap);
        if (!p) {
            o->alloc_failed = true;
            return;
        }
        o->buf = p;
        o->cap = ncap;
    }
    memcpy(o->buf + o->len, data, n);
    o->len += n;
}

/* A record is appended whole or not at all: an allocation failure part
 * way would leave a frame the reader cannot skip. */
static size_t begin_record(svc_out *o)
{
    o->alloc_failed = false;
    if (o->num_records == o->records_cap) {
        size_t n = o->records_cap ? 2 * o->records_cap : 1024;
        struct svc_out_record *r = realloc(o->records, n * sizeof *r);
        if (!r)
            o->alloc_failed = true;
        else {
            o->records = r;
            o->records_cap = n;
        }
    }
    return o->len;
}

static void end_record(svc_out *o, size_t start, uint32_t sequence_id)
{
    if (o->alloc_failed) {
        o->len = start;
        o->io_error = true;
        o->packets_dropped++;
        mark_dropped(o, sequence_id);
        return;
    }
    o->records[o->num_records++] = (struct svc_out_record){ o->len, sequence_id };
}

/* Trace.packet (field 1) framing. */
static void record_header(svc_out *o, size_t len)
{
    uint8_t hdr[1 + PB_MAX_VARINT_BYTES];
    hdr[0] = (uint8_t)pb_make_tag(perfetto_protos_Trace_FIELD_packet, PB_WIRE_LEN);
    uint8_t *e = pb_write_varint(len, hdr + 1);
    append(o, hdr, (size_t)(e - hdr));
}

static uint8_t *put_varint_field(uint8_t *p, uint32_t field, uint64_t v)
{
    return pb_write_varint(v, pb_write_varint(pb_make_tag(field, PB_WIRE_VARINT), p));
}

/* Protobuf merges repeated occurrences of a field, so appending a trusted
 * field overrides anything the producer wrote there. */
void svc_out_writer_packet(svc_out *o, const cb_packet *p, int32_t uid, int32_t pid)
{
    uint8_t trailer[4 * PB_MAX_SCALAR_FIELD_BYTES];
    uint8_t *e = trailer;
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_uid, (uint64_t)(int64_t)uid);
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_packet_sequence_id,
                         p->sequence_id);
    e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_trusted_pid, (uint64_t)(int64_t)pid);
    /* Also after packets this output failed to write. */
    bool dropped = take_dropped_mark(o, p->sequence_id);
    if (p->previous_packet_dropped || dropped)
        e = put_varint_field(e, perfetto_protos_TracePacket_FIELD_previous_packet_dropped, 1);
    size_t tl = (size_t)(e - trailer);
    size_t start = begin_record(o);
    record_header(o, p->size + tl);
    for (size_t i = 0; i < p->num_slices; i++)
        append(o, p->slices[i].data, p->slices[i].size);
    append(o, trailer, tl);
    end_record(o, start, p->sequence_id);
    if (o->len >= OUT_FLUSH_BYTES)
        svc_out_flush(o);
}

void svc_out_raw_record(svc_out *o, const uint8_t *record, size_t len, uint32_t sequence_id)
{
    size_t start = begin_record(o);
    append(o, record, len);
    end_record(o, start, sequence_id);
    if (o->len >= OUT_FLUSH_BYTES)
        svc_out_flush(o);
}

static void begin_service_packet(svc_out *o, perfetto_protos_TracePacket *pkt)
{
    pb_heap_reset(&o->heap);
    perfetto_protos_TracePacket_init_root(pkt, pb_heap_stream(&o->heap));
}

static void end_service_packet(svc_out *o, perfetto_protos_TracePacket *pkt)
{
    perfetto_protos_TracePacket_set_trusted_uid(pkt, o->service_uid);
    perfetto_protos_TracePacket_set_trusted_packet_sequence_id(pkt, GT_SERVICE_SEQUENCE_ID);
    if (take_dropped_mark(o, GT_SERVICE_SEQUENCE_ID))
        perfetto_protos_TracePacket_set_previous_packet_dropped(pkt, 1);
    perfetto_protos_TracePacket_end(pkt);
    size_t n = pb_heap_size(&o->heap);
    uint8_t *tmp = malloc(n ? n : 1);
    if (!tmp || o->heap.out_of_memory) {
        free(tmp);
        o->io_error = true;
        o->packets_dropped++;
        mark_dropped(o, GT_SERVICE_SEQUENCE_ID);
        return;
    }
    pb_heap_copy(&o->heap, tmp);
    size_t start = begin_record(o);
    record_header(o, n);
    append(o, tmp, n);
    end_record(o, start, GT_SERVICE_SEQUENCE_ID);
    free(tmp);
}

void svc_out_clock_snapshot(svc_out *o)
{
    clk_snapshot s;
    clk_take_snapshot(&s);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_ClockSnapshot cs;
    begin_service_packet(o, &pkt);
    perfetto_protos_TracePacket_begin_clock_snapshot(&pkt, &cs);
    clk_write_snapshot(&cs, &s);
    perfetto_protos_ClockSnapshot_end(&cs);
    end_service_packet(o, &pkt);
}

void svc_out_trace_uuid(svc_out *o)
{
    uint64_t r[2] = { 0, 0 };
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        r[0] = clk_boottime_ns() ^ ((uint64_t)getpid() << 32);
        r[1] = clk_monotonic_ns() * 0x9E3779B97F4A7C15ull;
    }
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TraceUuid u;
    begin_service_packet(o, &pkt);
    perfetto_protos_TracePacket_begin_trace_uuid(&pkt, &u);
    perfetto_protos_TraceUuid_set_msb(&u, (int64_t)r[0]);
    perfetto_protos_TraceUuid_set_lsb(&u, (int64_t)r[1]);
    perfetto_protos_TraceUuid_end(&u);
    end_service_packet(o, &pkt);
}

void svc_out_trace_stats(svc_out *o, const cb_buffer *cb, const svc_session_stats *s)
{
    const cb_stats *st = cb_get_stats(cb);
    perfetto_protos_TracePacket pkt;
    perfetto_protos_TraceStats ts;
    perfetto_protos_TraceStats_BufferStats bs;
    begin_service_packet(o, &pkt);
    perfetto_protos_TracePacket_begin_trace_stats(&pkt, &ts);

    perfetto_protos_TraceStats_begin_buffer_stats(&ts, &bs);
    perfetto_protos_TraceStats_BufferStats_set_buffer_size(&bs, st->buffer_size);
    perfetto_protos_TraceStats_BufferStats_set_bytes_written(&bs, st->bytes_written);
    perfetto_protos_TraceStats_BufferStats_set_bytes_overwritten(&bs, st->bytes_overwritten);
    perfetto_protos_TraceStats_BufferStats_set_bytes_read(&bs, st->bytes_read);
    perfetto_protos_TraceStats_BufferStats_set_padding_bytes_written(&bs,
                                                                     st->padding_bytes_written);
    perfetto_protos_TraceStats_BufferStats_set_padding_bytes_cleared(&bs,
                                                                     st->padding_bytes_cleared);
    perfetto_protos_TraceStats_BufferStats_set_chunks_written(&bs, st->chunks_written);
    perfetto_protos_TraceStats_BufferStats_set_chunks_rewritten(&bs, st->chunks_rewritten);
    perfetto_protos_TraceStats_BufferStats_set_chunks_overwritten(&bs, st->chunks_overwritten);
    perfetto_protos_TraceStats_BufferStats_set_chunks_discarded(&bs, st->chunks_discarded);
    perfetto_protos_TraceStats_BufferStats_set_chunks_read(&bs, st->chunks_read);
    perfetto_protos_TraceStats_BufferStats_set_chunks_committed_out_of_order(
        &bs, st->chunks_committed_out_of_order);
    perfetto_protos_TraceStats_BufferStats_set_write_wrap_count(&bs, st->write_wrap_count);
    perfetto_protos_TraceStats_BufferStats_set_patches_succeeded(&bs, st->patches_succeeded);
    perfetto_protos_TraceStats_BufferStats_set_patches_failed(&bs, st->patches_failed);
    perfetto_protos_TraceStats_BufferStats_set_readaheads_succeeded(&bs, st->readaheads_succeeded);
    perfetto_protos_TraceStats_BufferStats_set_readaheads_failed(&bs, st->readaheads_failed);
    perfetto_protos_TraceStats_BufferStats_set_abi_violations(&bs, st->abi_violations);
    perfetto_protos_TraceStats_BufferStats_set_trace_writer_packet_loss(
        &bs, st->trace_writer_packet_loss);
    perfetto_protos_TraceStats_BufferStats_end(&bs);

    for (int i = 0; i < CB_HIST_BUCKETS; i++)
        perfetto_protos_TraceStats_add_chunk_payload_histogram_def(&ts, cb_hist_thresholds[i]);
    for (size_t i = 0; i < cb_num_sequences(cb); i++) {
        cb_writer_stats w;
        perfetto_protos_TraceStats_WriterStats ws;
        cb_get_writer_stats(cb, i, &w);
        perfetto_protos_TraceStats_begin_writer_stats(&ts, &ws);
        perfetto_protos_TraceStats_WriterStats_set_sequence_id(&ws, w.sequence_id);
        perfetto_protos_TraceStats_WriterStats_set_buffer(&ws, 0);
        perfetto_protos_TraceStats_WriterStats_set_chunk_payload_histogram_counts(&ws, w.counts,
                                                                                  CB_HIST_BUCKETS);
        perfetto_protos_TraceStats_WriterStats_set_chunk_payload_histogram_sum(&ws, w.sums,
                                                                               CB_HIST_BUCKETS);
        perfetto_protos_TraceStats_WriterStats_end(&ws);
    }
    perfetto_protos_TraceStats_set_producers_connected(&ts, s->producers_connected);
    perfetto_protos_TraceStats_set_producers_seen(&ts, s->producers_seen);
    perfetto_protos_TraceStats_set_data_sources_registered(&ts, s->data_sources_registered);
    perfetto_protos_TraceStats_set_data_sources_seen(&ts, s->data_sources_seen);
    perfetto_protos_TraceStats_set_tracing_sessions(&ts, 1);
    perfetto_protos_TraceStats_set_total_buffers(&ts, 1);
    perfetto_protos_TraceStats_set_chunks_discarded(&ts, s->chunks_discarded);
    perfetto_protos_TraceStats_set_patches_discarded(&ts, s->patches_discarded);
    perfetto_protos_TraceStats_set_invalid_packets(&ts, st->invalid_packets);
    perfetto_protos_TraceStats_set_flushes_requested(&ts, s->flushes_requested);
    perfetto_protos_TraceStats_set_flushes_succeeded(&ts, s->flushes_succeeded);
    /* A write-out that never reached the file is a flush that failed, as
     * far as the reader of the file is concerned. */
    perfetto_protos_TraceStats_set_flushes_failed(&ts, s->flushes_failed + o->write_failures);
    if (!s->interim)
        perfetto_protos_TraceStats_set_final_flush_outcome(
            &ts, s->final_flush_failed
                     ? perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_FAILED
                     : perfetto_protos_TraceStats_FinalFlushOutcome_FINAL_FLUSH_SUCCEEDED);
    perfetto_protos_TraceStats_end(&ts);
    end_service_packet(o, &pkt);
}
