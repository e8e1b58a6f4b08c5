/* SPDX-License-Identifier: MIT */
/* The producer's shared memory buffers: the one the service maps for us
 * (SetupTracing), or the one we offer it (InitializeConnection with
 * producer_provided_shmem). Either is wrapped in a refcounted
 * producer_smb: writers keep theirs mapped after a reconnection replaced
 * it. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracing/ipc/producer_internal.h"

/* Largest SMB we map for a service: Perfetto's service caps at 32 MiB. */
#define MAX_SERVICE_SMB (64u << 20)

void producer_smb_unref(producer_smb *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    smb_arbiter_destroy(s->arb);
    munmap(s->mem, s->size);
    free(s);
}

static void arbiter_notify(void *ctx, bool urgent)
{
    (void)urgent;
    producer_smb *s = ctx;
    producer_core_wake(s->p);
}

/* An SMB over `mem` (taken over: unmapped when the last ref goes). */
producer_smb *producer_smb_new(ipc_producer *p, void *mem, size_t size, size_t page_size)
{
    producer_smb *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->mem = mem;
    s->size = size;
    atomic_init(&s->refs, 1);
    smb_arbiter_config ac = {
        .smb_size = size,
        .page_size = page_size,
        .layout = SMB_PAGE_DIV1, /* Perfetto's default page layout */
        .notify = arbiter_notify,
        .notify_ctx = s,
    };
    s->arb = smb_arbiter_create_on(mem, &ac);
    if (!s->arb) {
        free(s);
        return NULL;
    }
    return s;
}

bool producer_smb_valid_page_size(size_t ps)
{
    return ps >= SMB_MIN_PAGE_SIZE && ps <= SMB_MAX_PAGE_SIZE && ps % SMB_MIN_PAGE_SIZE == 0;
}

bool producer_smb_attach_service(ipc_producer *p, int fd, uint32_t page_size_kb)
{
    size_t page_size = (size_t)page_size_kb * 1024u;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    /* A service SMB that could shrink would let the service SIGBUS us:
     * require the seal Perfetto's service puts on its memfds. */
    if (!producer_smb_valid_page_size(page_size) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size <= 0 || (uint64_t)st.st_size > MAX_SERVICE_SMB ||
        (size_t)st.st_size % page_size != 0 || seals < 0 || !(seals & F_SEAL_SHRINK))
        return false;
    size_t size = (size_t)st.st_size;
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED)
        return false;
    producer_smb *s = producer_smb_new(p, mem, size, page_size);
    if (!s) {
        munmap(mem, size);
        return false;
    }
    pthread_mutex_lock(&p->mu);
    s->conn_gen = p->conn_gen;
    p->smb = s;
    pthread_mutex_unlock(&p->mu);
    return true;
}

/* ---- the offered (producer-provided) SMB -------------------------------- */

void producer_smb_drop_offer(ipc_producer *p)
{
    if (p->offered_mem)
        munmap(p->offered_mem, p->smb_size);
    if (p->offered_fd >= 0)
        close(p->offered_fd);
    p->offered_mem = NULL;
    p->offered_fd = -1;
}

/* A sealed memfd, as Perfetto's producers create it: the service refuses
 * an SMB that could still shrink under it. */
bool producer_smb_make_offer(ipc_producer *p)
{
    int fd = memfd_create("gputrace-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return false;
    if (ftruncate(fd, p->smb_size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        close(fd);
        return false;
    }
    void *mem = mmap(NULL, p->smb_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        close(fd);
        return false;
    }
    p->offered_fd = fd;
    p->offered_mem = mem;
    return true;
}
