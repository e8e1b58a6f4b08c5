/* backend_inproc.c — the in-process backend (GPUTRACE_OUTPUT=path): the
 * tracing library's embedded service writing one .pftrace, tracing from
 * creation until destruction (final flush, last clock snapshot,
 * TraceStats). */
#include <errno.h>
#include <stdlib.h>

#include "backend.h"
#include "config.h"
#include "inproc_backend.h"

/* Sequences are numbered by the backend; the session has only one. */
#define INPROC_INSTANCE 1

struct inproc {
   struct tl_backend base;
   gt_backend *be;
};

static tw_writer *
inproc_new_writer(struct tl_backend *base, uint64_t instance)
{
   struct inproc *b = (struct inproc *)base;
   if (instance != INPROC_INSTANCE)
      return NULL;
   return gt_inproc_new_writer(b->be);
}

static void
inproc_release_writer(struct tl_backend *base, tw_writer *tw)
{
   (void)base;
   tw_destroy(tw);
}

static void
inproc_destroy(struct tl_backend *base)
{
   struct inproc *b = (struct inproc *)base;
   gt_inproc_destroy(b->be);
   free(b);
}

static const struct tl_backend_ops inproc_ops = {
   .name = "inprocess",
   .new_writer = inproc_new_writer,
   .release_writer = inproc_release_writer,
   .destroy = inproc_destroy,
};

struct tl_backend *
tl_backend_inproc_create(const char *path, const struct tl_backend_events *events)
{
   struct inproc *b = calloc(1, sizeof *b);
   if (!b)
      return NULL;
   gt_inproc_config cfg;
   gt_inproc_config_default(&cfg);
   cfg.output_path = path;
   /* A GPU producer writes in bursts after each completion: room for a
    * few seconds of them without ever blocking the collector. The ring
    * (GPUTRACE_BUFFER_KB, 32 MiB by default) bounds what a long run keeps
    * in memory before it is written out. */
   cfg.smb_size = 4u << 20;
   cfg.buffer_size = (size_t)gt_config()->buffer_kb * 1024u;
   b->base.ops = &inproc_ops;
   b->be = gt_inproc_create(&cfg);
   if (!b->be) {
      int err = errno;
      free(b);
      errno = err;
      return NULL;
   }
   events->started(events->ctx, INPROC_INSTANCE);
   return &b->base;
}
