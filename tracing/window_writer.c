/* SPDX-License-Identifier: MIT */
#include "tracing/window_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracing/util/util_mem.h"
#include "tracing/util/util_parse.h"
#include "tracing/util/util_thread.h"

struct ww_window {
    uint8_t *data;
    size_t len, cap;
    struct svc_out_record *records; /* ends are offsets into data */
    size_t n, records_cap;
    bool alloc_failed;
};

ww_window *ww_window_new(void)
{
    return calloc(1, sizeof(ww_window));
}

void ww_window_free(ww_window *w)
{
    if (!w)
        return;
    free(w->data);
    free(w->records);
    free(w);
}

void ww_window_sink(void *ctx, const uint8_t *data, const struct svc_out_record *records, size_t n)
{
    ww_window *w = ctx;
    if (!n || w->alloc_failed)
        return;
    const size_t bytes = records[n - 1].end;
    if (!util_grow_array((void **)&w->data, &w->cap, w->len + bytes, 1) ||
        !util_grow_array((void **)&w->records, &w->records_cap, w->n + n, sizeof *w->records)) {
        /* Half a window would pass for a whole one: it is not written. */
        w->alloc_failed = true;
        return;
    }
    memcpy(w->data + w->len, data, bytes);
    for (size_t i = 0; i < n; i++) {
        w->records[w->n + i].end = w->len + records[i].end;
        w->records[w->n + i].sequence_id = records[i].sequence_id;
    }
    w->len += bytes;
    w->n += n;
}

size_t ww_window_records(const ww_window *w)
{
    return w->n;
}

bool ww_window_complete(const ww_window *w)
{
    return !w->alloc_failed;
}

typedef struct ww_job {
    ww_window *w;
    int fd;
    char path[4096];
    unsigned number;
    size_t packets;
    unsigned fired;
} ww_job;

struct ww_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool has_job; /* job is in hand, until its file is closed */
    bool stop;
    ww_job job;
    void (*done)(void *ctx, const ww_result *r);
    void *ctx;
};

/* Through svc_out, so a file that fills up is cut back to whole records. */
static bool write_file(ww_job *job)
{
    svc_out o;
    svc_out_init(&o, job->fd);
    const ww_window *w = job->w;
    size_t start = 0;
    for (size_t i = 0; i < w->n; i++) {
        svc_out_raw_record(&o, w->data + start, w->records[i].end - start,
                           w->records[i].sequence_id);
        start = w->records[i].end;
    }
    return svc_out_close(&o);
}

static void *window_main(void *arg)
{
    ww_writer *ww = arg;
    pthread_setname_np(pthread_self(), "gputrace-window");
    pthread_mutex_lock(&ww->mu);
    for (;;) {
        while (!ww->has_job && !ww->stop)
            pthread_cond_wait(&ww->cv, &ww->mu);
        if (!ww->has_job)
            break; /* stopped with nothing in hand */
        ww_job *job = &ww->job;
        pthread_mutex_unlock(&ww->mu);
        const bool ok = write_file(job);
        const ww_result r = {
            .path = job->path,
            .ok = ok,
            .number = job->number,
            .packets = job->packets,
            .fired = job->fired,
        };
        ww->done(ww->ctx, &r);
        ww_window_free(job->w);
        job->w = NULL;
        pthread_mutex_lock(&ww->mu);
        ww->has_job = false;
    }
    pthread_mutex_unlock(&ww->mu);
    return NULL;
}

ww_writer *ww_create(void (*done)(void *ctx, const ww_result *r), void *ctx)
{
    ww_writer *ww = calloc(1, sizeof *ww);
    if (!ww)
        return NULL;
    ww->done = done;
    ww->ctx = ctx;
    pthread_mutex_init(&ww->mu, NULL);
    pthread_cond_init(&ww->cv, NULL);
    int rc = util_thread_start_quiet(&ww->thread, window_main, ww);
    if (rc != 0) {
        pthread_cond_destroy(&ww->cv);
        pthread_mutex_destroy(&ww->mu);
        free(ww);
        errno = rc;
        return NULL;
    }
    return ww;
}

bool ww_busy(ww_writer *ww)
{
    pthread_mutex_lock(&ww->mu);
    bool busy = ww->has_job;
    pthread_mutex_unlock(&ww->mu);
    return busy;
}

bool ww_submit(ww_writer *ww, ww_window *w, int fd, const char *path, unsigned number,
               size_t packets, unsigned fired)
{
    pthread_mutex_lock(&ww->mu);
    if (ww->has_job || ww->stop) {
        pthread_mutex_unlock(&ww->mu);
        ww_window_free(w);
        close(fd);
        return false;
    }
    ww->job = (ww_job){ .w = w, .fd = fd, .number = number, .packets = packets, .fired = fired };
    util_copy_str(ww->job.path, sizeof ww->job.path, path);
    ww->has_job = true;
    pthread_cond_signal(&ww->cv);
    pthread_mutex_unlock(&ww->mu);
    return true;
}

void ww_destroy(ww_writer *ww)
{
    if (!ww)
        return;
    pthread_mutex_lock(&ww->mu);
    ww->stop = true;
    pthread_cond_signal(&ww->cv);
    pthread_mutex_unlock(&ww->mu);
    pthread_join(ww->thread, NULL);
    pthread_cond_destroy(&ww->cv);
    pthread_mutex_destroy(&ww->mu);
    free(ww);
}
