/* SPDX-License-Identifier: MIT */
/* cmd_check_layer.c — VK_LAYER_GPUTRACE_cmdcheck, a test-only Vulkan layer
 * placed right below VK_LAYER_GPUTRACE_timeline. It sees every command that
 * reaches the driver, the timing layer's own vkCmdWriteTimestamp and
 * vkCmdResetQueryPool included, and checks at each queue submission, batch
 * by batch in execution order (secondaries expanded where executed), the
 * rules the validation layer of Debian 12 (1.3.239) does not check:
 *
 *   - no timestamp or query reset between a suspended dynamic rendering
 *     instance and the instance resuming it (no action command is allowed
 *     there; the resumption may be in the next command buffer of a batch);
 *   - no timestamp recorded by a primary in a subpass (or rendering
 *     instance) whose contents are secondary command buffers;
 *   - no vkCmdResetQueryPool inside a render pass instance;
 *   - inside a multiview instance a timestamp uses popcount(viewMask)
 *     consecutive queries: no query is written twice in a batch without a
 *     reset in between (a timing layer that took too few queries per
 *     timestamp overlaps the next one).
 *
 * It also counts what it saw. At the last vkDestroyInstance it prints to
 * stderr
 *
 *   cmdcheck: batches=B timestamps=T inside=I multiview=M resets=R names=N
 *             labels=L violations=V
 *
 * (one line; inside: timestamps written inside render pass instances;
 * multiview: those taking more than one query; names: object names given
 * with vkSetDebugUtilsObjectNameEXT; labels: vkCmdBegin/End/Insert-
 * DebugUtilsLabelEXT calls), preceded by one "cmdcheck: violation:" line
 * per violation (the first 20). Like the Khronos validation layer
 * (1.3.239), it hands out the VK_EXT_debug_utils device commands through
 * vkGetInstanceProcAddr only: a layer above must take them from there. One lock: it is for small test
 * programs, not for speed. The loader plumbing is the test layers'
 * skeleton (tests/common/test_layer_skeleton.h).
 *
 * With GPUTRACE_CMDCHECK_QUEUES=N it also offers N queues in family 0
 * where the driver has fewer (cmd_check_queues.h): lavapipe's one queue
 * becomes several, for tests of work across queues.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/common/test_layer_skeleton.h"
#include "tests/layer/cmd_check_queues.h"

#define CC_MAX_REPORTED 20

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    unsigned long batches, timestamps, inside, multiview, resets, names, labels, violations;
} g_count;

__attribute__((format(printf, 1, 2))) static void violation(const char *fmt, ...)
{
    if (g_count.violations++ >= CC_MAX_REPORTED)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cmdcheck: violation: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) {
        fprintf(stderr, "cmdcheck: out of memory\n");
        abort();
    }
    return q;
}

/* ---- instances and devices ------------------------------------------------------- */

/* The device-level functions the layer intercepts. */
#define CC_HOOKS(X)           \
    X(CreateRenderPass)       \
    X(CreateRenderPass2)      \
    X(CreateRenderPass2KHR)   \
    X(BeginCommandBuffer)     \
    X(CmdBeginRenderPass)     \
    X(CmdBeginRenderPass2)    \
    X(CmdBeginRenderPass2KHR) \
    X(CmdNextSubpass)         \
    X(CmdNextSubpass2)        \
    X(CmdNextSubpass2KHR)     \
    X(CmdEndRenderPass)       \
    X(CmdEndRenderPass2)      \
    X(CmdEndRenderPass2KHR)   \
    X(CmdBeginRendering)      \
    X(CmdBeginRenderingKHR)   \
    X(CmdEndRendering)        \
    X(CmdEndRenderingKHR)     \
    X(CmdWriteTimestamp)      \
    X(CmdWriteTimestamp2)     \
    X(CmdWriteTimestamp2KHR)  \
    X(CmdResetQueryPool)      \
    X(CmdExecuteCommands)     \
    X(QueueSubmit)            \
    X(QueueSubmit2)           \
    X(QueueSubmit2KHR)

/* The extra queues (cmd_check_queues.h): their own next functions. */
#define CC_QUEUE_HOOKS(X) \
    X(GetDeviceQueue)     \
    X(GetDeviceQueue2)    \
    X(QueueWaitIdle)

/* Physical-device functions: through vkGetInstanceProcAddr. */
#define CC_INSTANCE_HOOKS(X)                   \
    X(GetPhysicalDeviceQueueFamilyProperties)  \
    X(GetPhysicalDeviceQueueFamilyProperties2) \
    X(GetPhysicalDeviceQueueFamilyProperties2KHR)

/* VK_EXT_debug_utils: through vkGetInstanceProcAddr only (see the top). */
#define CC_DEBUG_UTILS_HOOKS(X)   \
    X(SetDebugUtilsObjectNameEXT) \
    X(CmdBeginDebugUtilsLabelEXT) \
    X(CmdEndDebugUtilsLabelEXT)   \
    X(CmdInsertDebugUtilsLabelEXT)

/* The next layer's functions for those. */
typedef struct cc_device cc_device;
struct cc_device {
    tls_device base;
#define CC_MEMBER(name) PFN_vk##name name;
    CC_HOOKS(CC_MEMBER)
    CC_DEBUG_UTILS_HOOKS(CC_MEMBER)
#undef CC_MEMBER
    cq_device queues;
};

typedef struct cc_instance cc_instance;
struct cc_instance {
    tls_instance base;
    cq_instance queues;
};

static cc_device *device_of(const void *dispatchable)
{
    return (cc_device *)tls_device_of(dispatchable);
}

/* ---- what is recorded -------------------------------------------------------------- */

enum op_kind {
    OP_BEGIN_RENDERING, /* a = flags, b = viewMask */
    OP_END_RENDERING,
    OP_BEGIN_RENDER_PASS, /* h = render pass, a = contents */
    OP_NEXT_SUBPASS,      /* a = contents */
    OP_END_RENDER_PASS,
    OP_TIMESTAMP, /* h = pool, a = query */
    OP_RESET,     /* h = pool, a = first, b = count */
    OP_EXECUTE,   /* cbs[a] */
};

typedef struct cmd_op cmd_op;
struct cmd_op {
    enum op_kind kind;
    uint32_t a, b;
    uint64_t h;
    VkCommandBuffer *cbs;
};

typedef struct cb_log cb_log;
struct cb_log {
    VkCommandBuffer cb;
    cmd_op *ops;
    size_t n, cap;
};

typedef struct render_pass render_pass;
struct render_pass {
    uint64_t handle;
    uint32_t n;
    uint32_t *masks;
};

/* Under g_lock. */
static cb_log *g_logs;
static size_t g_nlogs, g_logs_cap;
static render_pass *g_passes;
static size_t g_npasses, g_passes_cap;

static cb_log *log_of(VkCommandBuffer cb)
{
    for (size_t i = 0; i < g_nlogs; i++) {
        if (g_logs[i].cb == cb)
            return &g_logs[i];
    }
    return NULL;
}

static void clear_log(cb_log *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->ops[i].cbs);
    l->n = 0;
}

static void record(VkCommandBuffer cb, cmd_op op)
{
    pthread_mutex_lock(&g_lock);
    cb_log *l = log_of(cb);
    if (!l) {
        if (g_nlogs == g_logs_cap) {
            g_logs_cap = g_logs_cap ? 2 * g_logs_cap : 64;
            g_logs = xrealloc(g_logs, g_logs_cap * sizeof *g_logs);
        }
        l = &g_logs[g_nlogs++];
        memset(l, 0, sizeof *l);
        l->cb = cb;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->ops = xrealloc(l->ops, l->cap * sizeof *l->ops);
    }
    l->ops[l->n++] = op;
    pthread_mutex_unlock(&g_lock);
}

static const render_pass *pass_of(uint64_t handle)
{
    for (size_t i = 0; i < g_npasses; i++) {
        if (g_passes[i].handle == handle)
            return &g_passes[i];
    }
    return NULL;
}

static void add_pass(uint64_t handle, uint32_t n, const uint32_t *masks)
{
    pthread_mutex_lock(&g_lock);
    render_pass *p = (render_pass *)pass_of(handle);
    if (!p) {
        if (g_npasses == g_passes_cap) {
            g_passes_cap = g_passes_cap ? 2 * g_passes_cap : 16;
            g_passes = xrealloc(g_passes, g_passes_cap * sizeof *g_passes);
        }
        p = &g_passes[g_npasses++];
        memset(p, 0, sizeof *p);
        p->handle = handle;
    }
    p->n = n;
    p->masks = xrealloc(p->masks, n * sizeof *p->masks);
    memcpy(p->masks, masks, n * sizeof *masks);
    pthread_mutex_unlock(&g_lock);
}

/* ---- the check, at submission -------------------------------------------------------- */

typedef struct written written;
struct written {
    uint64_t pool;
    uint32_t query;
};

typedef struct walk walk;
struct walk {
    bool suspended;
    bool in_pass, in_rendering;
    const render_pass *pass;
    uint32_t subpass, contents;
    uint32_t rendering_flags, rendering_mask;
    written *written;
    size_t nwritten, written_cap;
};

static uint32_t views_here(const walk *w)
{
    uint32_t mask = 0;
    if (w->in_pass && w->pass && w->subpass < w->pass->n)
        mask = w->pass->masks[w->subpass];
    else if (w->in_rendering)
        mask = w->rendering_mask;
    return (uint32_t)__builtin_popcount(mask);
}

static void write_query(walk *w, uint64_t pool, uint32_t query)
{
    for (size_t i = 0; i < w->nwritten; i++) {
        if (w->written[i].pool == pool && w->written[i].query == query) {
            violation("query %u of pool 0x%llx written twice without a reset", query,
                      (unsigned long long)pool);
            return;
        }
    }
    if (w->nwritten == w->written_cap) {
        w->written_cap = w->written_cap ? 2 * w->written_cap : 64;
        w->written = xrealloc(w->written, w->written_cap * sizeof *w->written);
    }
    w->written[w->nwritten++] = (written){ pool, query };
}

static void reset_queries(walk *w, uint64_t pool, uint32_t first, uint32_t count)
{
    size_t j = 0;
    for (size_t i = 0; i < w->nwritten; i++) {
        const written *q = &w->written[i];
        if (!(q->pool == pool && q->query >= first && q->query - first < count))
            w->written[j++] = *q;
    }
    w->nwritten = j;
}

static void walk_log(walk *w, VkCommandBuffer cb, int level)
{
    const cb_log *l = log_of(cb);
    if (!l || level > 2)
        return;
    for (size_t i = 0; i < l->n; i++) {
        const cmd_op *op = &l->ops[i];
        switch (op->kind) {
        case OP_BEGIN_RENDERING:
            w->suspended = false;
            w->in_rendering = true;
            w->rendering_flags = op->a;
            w->rendering_mask = op->b;
            break;
        case OP_END_RENDERING:
            w->in_rendering = false;
            if (w->rendering_flags & VK_RENDERING_SUSPENDING_BIT)
                w->suspended = true;
            break;
        case OP_BEGIN_RENDER_PASS:
            w->in_pass = true;
            w->pass = pass_of(op->h);
            w->subpass = 0;
            w->contents = op->a;
            break;
        case OP_NEXT_SUBPASS:
            w->subpass++;
            w->contents = op->a;
            break;
        case OP_END_RENDER_PASS:
            w->in_pass = false;
            break;
        case OP_TIMESTAMP: {
            g_count.timestamps++;
            if (w->suspended)
                violation("timestamp between a suspended rendering instance and its resumption");
            if (level == 0 && w->in_pass && w->contents != VK_SUBPASS_CONTENTS_INLINE)
                violation("timestamp in a subpass whose contents are secondary command buffers");
            if (level == 0 && w->in_rendering &&
                (w->rendering_flags & VK_RENDERING_CONTENTS_SECONDARY_COMMAND_BUFFERS_BIT))
                violation("timestamp in a rendering instance whose contents are secondaries");
            uint32_t views = views_here(w);
            if (w->in_pass || w->in_rendering)
                g_count.inside++;
            if (views > 1)
                g_count.multiview++;
            for (uint32_t v = 0; v < (views ? views : 1); v++)
                write_query(w, op->h, op->a + v);
            break;
        }
        case OP_RESET:
            g_count.resets++;
            if (w->suspended)
                violation("query reset between a suspended rendering instance and its resumption");
            if (w->in_pass || w->in_rendering)
                violation("query reset inside a render pass instance");
            reset_queries(w, op->h, op->a, op->b);
            break;
        case OP_EXECUTE:
            for (uint32_t c = 0; c < op->a; c++)
                walk_log(w, op->cbs[c], level + 1);
            break;
        }
    }
}

static void check_batch(const VkCommandBuffer *cbs, uint32_t n,
                        const VkCommandBufferSubmitInfo *infos)
{
    pthread_mutex_lock(&g_lock);
    walk w = { 0 };
    g_count.batches++;
    for (uint32_t i = 0; i < n; i++)
        walk_log(&w, cbs ? cbs[i] : infos[i].commandBuffer, 0);
    free(w.written);
    pthread_mutex_unlock(&g_lock);
}

/* ---- device hooks ----------------------------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL cc_CreateRenderPass(VkDevice device,
                                                          const VkRenderPassCreateInfo *info,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkRenderPass *rp)
{
    cc_device *d = device_of(device);
    VkResult r = d->CreateRenderPass(device, info, alloc, rp);
    if (r != VK_SUCCESS)
        return r;
    uint32_t *masks = calloc(info->subpassCount ? info->subpassCount : 1, sizeof *masks);
    if (!masks)
        abort();
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType != VK_STRUCTURE_TYPE_RENDER_PASS_MULTIVIEW_CREATE_INFO)
            continue;
        const VkRenderPassMultiviewCreateInfo *mv = (const void *)s;
        for (uint32_t i = 0; i < mv->subpassCount && i < info->subpassCount; i++)
            masks[i] = mv->pViewMasks[i];
    }
    add_pass((uint64_t)*rp, info->subpassCount, masks);
    free(masks);
    return r;
}

static VkResult create_pass2(PFN_vkCreateRenderPass2 next, VkDevice device,
                             const VkRenderPassCreateInfo2 *info,
                             const VkAllocationCallbacks *alloc, VkRenderPass *rp)
{
    VkResult r = next(device, info, alloc, rp);
    if (r != VK_SUCCESS)
        return r;
    uint32_t *masks = calloc(info->subpassCount ? info->subpassCount : 1, sizeof *masks);
    if (!masks)
        abort();
    for (uint32_t i = 0; i < info->subpassCount; i++)
        masks[i] = info->pSubpasses[i].viewMask;
    add_pass((uint64_t)*rp, info->subpassCount, masks);
    free(masks);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cc_CreateRenderPass2(VkDevice device,
                                                           const VkRenderPassCreateInfo2 *info,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkRenderPass *rp)
{
    return create_pass2(device_of(device)->CreateRenderPass2, device, info, alloc, rp);
}

static VKAPI_ATTR VkResult VKAPI_CALL cc_CreateRenderPass2KHR(VkDevice device,
                                                              const VkRenderPassCreateInfo2 *info,
                                                              const VkAllocationCallbacks *alloc,
                                                              VkRenderPass *rp)
{
    return create_pass2(device_of(device)->CreateRenderPass2KHR, device, info, alloc, rp);
}

static VKAPI_ATTR VkResult VKAPI_CALL cc_BeginCommandBuffer(VkCommandBuffer cb,
                                                            const VkCommandBufferBeginInfo *info)
{
    cc_device *d = device_of(cb);
    VkResult r = d->BeginCommandBuffer(cb, info);
    pthread_mutex_lock(&g_lock);
    cb_log *l = log_of(cb);
    if (l)
        clear_log(l); /* an implicit reset, or a handle reused */
    pthread_mutex_unlock(&g_lock);
    return r;
}

#define SUBPASS_CONTENTS(begin) ((begin) ? (uint32_t)(begin)->contents : UINT32_MAX)

static VKAPI_ATTR void VKAPI_CALL cc_CmdBeginRenderPass(VkCommandBuffer cb,
                                                        const VkRenderPassBeginInfo *info,
                                                        VkSubpassContents contents)
{
    record(cb, (cmd_op){ OP_BEGIN_RENDER_PASS, contents, 0, (uint64_t)info->renderPass, NULL });
    device_of(cb)->CmdBeginRenderPass(cb, info, contents);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdBeginRenderPass2(VkCommandBuffer cb,
                                                         const VkRenderPassBeginInfo *info,
                                                         const VkSubpassBeginInfo *begin)
{
    record(cb, (cmd_op){ OP_BEGIN_RENDER_PASS, SUBPASS_CONTENTS(begin), 0,
                         (uint64_t)info->renderPass, NULL });
    device_of(cb)->CmdBeginRenderPass2(cb, info, begin);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdBeginRenderPass2KHR(VkCommandBuffer cb,
                                                            const VkRenderPassBeginInfo *info,
                                                            const VkSubpassBeginInfo *begin)
{
    record(cb, (cmd_op){ OP_BEGIN_RENDER_PASS, SUBPASS_CONTENTS(begin), 0,
                         (uint64_t)info->renderPass, NULL });
    device_of(cb)->CmdBeginRenderPass2KHR(cb, info, begin);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdNextSubpass(VkCommandBuffer cb, VkSubpassContents contents)
{
    record(cb, (cmd_op){ OP_NEXT_SUBPASS, contents, 0, 0, NULL });
    device_of(cb)->CmdNextSubpass(cb, contents);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdNextSubpass2(VkCommandBuffer cb,
                                                     const VkSubpassBeginInfo *begin,
                                                     const VkSubpassEndInfo *end)
{
    record(cb, (cmd_op){ OP_NEXT_SUBPASS, SUBPASS_CONTENTS(begin), 0, 0, NULL });
    device_of(cb)->CmdNextSubpass2(cb, begin, end);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdNextSubpass2KHR(VkCommandBuffer cb,
                                                        const VkSubpassBeginInfo *begin,
                                                        const VkSubpassEndInfo *end)
{
    record(cb, (cmd_op){ OP_NEXT_SUBPASS, SUBPASS_CONTENTS(begin), 0, 0, NULL });
    device_of(cb)->CmdNextSubpass2KHR(cb, begin, end);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdEndRenderPass(VkCommandBuffer cb)
{
    record(cb, (cmd_op){ OP_END_RENDER_PASS, 0, 0, 0, NULL });
    device_of(cb)->CmdEndRenderPass(cb);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdEndRenderPass2(VkCommandBuffer cb,
                                                       const VkSubpassEndInfo *end)
{
    record(cb, (cmd_op){ OP_END_RENDER_PASS, 0, 0, 0, NULL });
    device_of(cb)->CmdEndRenderPass2(cb, end);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdEndRenderPass2KHR(VkCommandBuffer cb,
                                                          const VkSubpassEndInfo *end)
{
    record(cb, (cmd_op){ OP_END_RENDER_PASS, 0, 0, 0, NULL });
    device_of(cb)->CmdEndRenderPass2KHR(cb, end);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdBeginRendering(VkCommandBuffer cb,
                                                       const VkRenderingInfo *info)
{
    record(cb, (cmd_op){ OP_BEGIN_RENDERING, info->flags, info->viewMask, 0, NULL });
    device_of(cb)->CmdBeginRendering(cb, info);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdBeginRenderingKHR(VkCommandBuffer cb,
                                                          const VkRenderingInfo *info)
{
    record(cb, (cmd_op){ OP_BEGIN_RENDERING, info->flags, info->viewMask, 0, NULL });
    device_of(cb)->CmdBeginRenderingKHR(cb, info);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdEndRendering(VkCommandBuffer cb)
{
    record(cb, (cmd_op){ OP_END_RENDERING, 0, 0, 0, NULL });
    device_of(cb)->CmdEndRendering(cb);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdEndRenderingKHR(VkCommandBuffer cb)
{
    record(cb, (cmd_op){ OP_END_RENDERING, 0, 0, 0, NULL });
    device_of(cb)->CmdEndRenderingKHR(cb);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdWriteTimestamp(VkCommandBuffer cb,
                                                       VkPipelineStageFlagBits stage,
                                                       VkQueryPool pool, uint32_t query)
{
    record(cb, (cmd_op){ OP_TIMESTAMP, query, 0, (uint64_t)pool, NULL });
    device_of(cb)->CmdWriteTimestamp(cb, stage, pool, query);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdWriteTimestamp2(VkCommandBuffer cb,
                                                        VkPipelineStageFlags2 stage,
                                                        VkQueryPool pool, uint32_t query)
{
    record(cb, (cmd_op){ OP_TIMESTAMP, query, 0, (uint64_t)pool, NULL });
    device_of(cb)->CmdWriteTimestamp2(cb, stage, pool, query);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdWriteTimestamp2KHR(VkCommandBuffer cb,
                                                           VkPipelineStageFlags2 stage,
                                                           VkQueryPool pool, uint32_t query)
{
    record(cb, (cmd_op){ OP_TIMESTAMP, query, 0, (uint64_t)pool, NULL });
    device_of(cb)->CmdWriteTimestamp2KHR(cb, stage, pool, query);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdResetQueryPool(VkCommandBuffer cb, VkQueryPool pool,
                                                       uint32_t first, uint32_t count)
{
    record(cb, (cmd_op){ OP_RESET, first, count, (uint64_t)pool, NULL });
    device_of(cb)->CmdResetQueryPool(cb, pool, first, count);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdExecuteCommands(VkCommandBuffer cb, uint32_t count,
                                                        const VkCommandBuffer *buffers)
{
    VkCommandBuffer *copy = xrealloc(NULL, count * sizeof *copy);
    memcpy(copy, buffers, count * sizeof *copy);
    record(cb, (cmd_op){ OP_EXECUTE, count, 0, 0, copy });
    device_of(cb)->CmdExecuteCommands(cb, count, buffers);
}

static VKAPI_ATTR VkResult VKAPI_CALL cc_QueueSubmit(VkQueue queue, uint32_t n,
                                                     const VkSubmitInfo *submits, VkFence fence)
{
    for (uint32_t i = 0; i < n; i++)
        check_batch(submits[i].pCommandBuffers, submits[i].commandBufferCount, NULL);
    cc_device *d = device_of(queue);
    VkResult r = d->QueueSubmit(cq_begin(&d->queues, queue), n, submits, fence);
    cq_end(&d->queues);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cc_QueueSubmit2(VkQueue queue, uint32_t n,
                                                      const VkSubmitInfo2 *submits, VkFence fence)
{
    for (uint32_t i = 0; i < n; i++)
        check_batch(NULL, submits[i].commandBufferInfoCount, submits[i].pCommandBufferInfos);
    cc_device *d = device_of(queue);
    VkResult r = d->QueueSubmit2(cq_begin(&d->queues, queue), n, submits, fence);
    cq_end(&d->queues);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cc_QueueSubmit2KHR(VkQueue queue, uint32_t n,
                                                         const VkSubmitInfo2 *submits,
                                                         VkFence fence)
{
    for (uint32_t i = 0; i < n; i++)
        check_batch(NULL, submits[i].commandBufferInfoCount, submits[i].pCommandBufferInfos);
    cc_device *d = device_of(queue);
    VkResult r = d->QueueSubmit2KHR(cq_begin(&d->queues, queue), n, submits, fence);
    cq_end(&d->queues);
    return r;
}

/* ---- extra queues (cmd_check_queues.h) ------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL cc_QueueWaitIdle(VkQueue queue)
{
    cc_device *d = device_of(queue);
    VkResult r = d->queues.QueueWaitIdle(cq_begin(&d->queues, queue));
    cq_end(&d->queues);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cc_GetDeviceQueue(VkDevice device, uint32_t family,
                                                    uint32_t index, VkQueue *queue)
{
    cq_get_queue(&device_of(device)->queues, device, family, index, queue);
}

static VKAPI_ATTR void VKAPI_CALL cc_GetDeviceQueue2(VkDevice device,
                                                     const VkDeviceQueueInfo2 *info, VkQueue *queue)
{
    cq_get_queue2(&device_of(device)->queues, device, info, queue);
}

static cc_instance *instance_of(const void *dispatchable)
{
    return (cc_instance *)tls_instance_of(dispatchable);
}

static VKAPI_ATTR void VKAPI_CALL cc_GetPhysicalDeviceQueueFamilyProperties(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties *props)
{
    cq_queue_family_properties(&instance_of(pd)->queues, pd, count, props);
}

static VKAPI_ATTR void VKAPI_CALL cc_GetPhysicalDeviceQueueFamilyProperties2(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties2 *props)
{
    cq_queue_family_properties2(&instance_of(pd)->queues, false, pd, count, props);
}

static VKAPI_ATTR void VKAPI_CALL cc_GetPhysicalDeviceQueueFamilyProperties2KHR(
    VkPhysicalDevice pd, uint32_t *count, VkQueueFamilyProperties2 *props)
{
    cq_queue_family_properties2(&instance_of(pd)->queues, true, pd, count, props);
}

static void cc_instance_created(tls_instance *base)
{
    cq_instance_created(&((cc_instance *)base)->queues, base);
}

static const VkDeviceCreateInfo *cc_amend_device_create(tls_instance *inst, VkPhysicalDevice pd,
                                                        const VkDeviceCreateInfo *info)
{
    return cq_amend_device_create(&((cc_instance *)inst)->queues, pd, info);
}

static void cc_device_destroy_after(tls_device *base)
{
    cq_device_destroyed(&((cc_device *)base)->queues);
}

/* ---- debug utils ------------------------------------------------------------------------- */

static void count(unsigned long *counter)
{
    pthread_mutex_lock(&g_lock);
    (*counter)++;
    pthread_mutex_unlock(&g_lock);
}

static VKAPI_ATTR VkResult VKAPI_CALL
cc_SetDebugUtilsObjectNameEXT(VkDevice device, const VkDebugUtilsObjectNameInfoEXT *info)
{
    count(&g_count.names);
    cc_device *d = device_of(device);
    if (d && info->objectType == VK_OBJECT_TYPE_QUEUE &&
        cq_is_extra(&d->queues, info->objectHandle))
        return VK_SUCCESS; /* the layers above have it; the driver does not know the queue */
    return d && d->SetDebugUtilsObjectNameEXT ? d->SetDebugUtilsObjectNameEXT(device, info)
                                              : VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdBeginDebugUtilsLabelEXT(VkCommandBuffer cb,
                                                                const VkDebugUtilsLabelEXT *label)
{
    count(&g_count.labels);
    cc_device *d = device_of(cb);
    if (d && d->CmdBeginDebugUtilsLabelEXT)
        d->CmdBeginDebugUtilsLabelEXT(cb, label);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdEndDebugUtilsLabelEXT(VkCommandBuffer cb)
{
    count(&g_count.labels);
    cc_device *d = device_of(cb);
    if (d && d->CmdEndDebugUtilsLabelEXT)
        d->CmdEndDebugUtilsLabelEXT(cb);
}

static VKAPI_ATTR void VKAPI_CALL cc_CmdInsertDebugUtilsLabelEXT(VkCommandBuffer cb,
                                                                 const VkDebugUtilsLabelEXT *label)
{
    count(&g_count.labels);
    cc_device *d = device_of(cb);
    if (d && d->CmdInsertDebugUtilsLabelEXT)
        d->CmdInsertDebugUtilsLabelEXT(cb, label);
}

/* ---- instance and device life ----------------------------------------------------------- */

static void report(void)
{
    pthread_mutex_lock(&g_lock);
    fprintf(stderr,
            "cmdcheck: batches=%lu timestamps=%lu inside=%lu multiview=%lu resets=%lu names=%lu "
            "labels=%lu violations=%lu\n",
            g_count.batches, g_count.timestamps, g_count.inside, g_count.multiview, g_count.resets,
            g_count.names, g_count.labels, g_count.violations);
    for (size_t i = 0; i < g_nlogs; i++) {
        clear_log(&g_logs[i]);
        free(g_logs[i].ops);
    }
    free(g_logs);
    g_logs = NULL;
    g_nlogs = g_logs_cap = 0;
    for (size_t i = 0; i < g_npasses; i++)
        free(g_passes[i].masks);
    free(g_passes);
    g_passes = NULL;
    g_npasses = g_passes_cap = 0;
    pthread_mutex_unlock(&g_lock);
}

static void cc_instance_destroyed(bool last)
{
    if (last)
        report();
}

static void cc_device_created(tls_device *base)
{
    cc_device *d = (cc_device *)base;
#define CC_GET(name) d->name = (PFN_vk##name)base->gdpa(base->handle, "vk" #name);
    CC_HOOKS(CC_GET)
    CC_DEBUG_UTILS_HOOKS(CC_GET)
#undef CC_GET
    cq_device_created(&d->queues, base);
}

#define CC_ENTRY(name) TLS_HOOK(cc_, name),
static const tls_hook device_hooks[] = { CC_HOOKS(CC_ENTRY) CC_QUEUE_HOOKS(CC_ENTRY) };
static const tls_hook instance_hooks[] = { CC_DEBUG_UTILS_HOOKS(CC_ENTRY)
                                               CC_INSTANCE_HOOKS(CC_ENTRY) };
#undef CC_ENTRY

const tls_layer tls_the_layer = {
    .instance_hooks = instance_hooks,
    .n_instance_hooks = TLS_COUNT(instance_hooks),
    .device_hooks = device_hooks,
    .n_device_hooks = TLS_COUNT(device_hooks),
    .instance_size = sizeof(cc_instance),
    .device_size = sizeof(cc_device),
    .instance_created = cc_instance_created,
    .device_created = cc_device_created,
    .device_destroy_after = cc_device_destroy_after,
    .instance_destroyed = cc_instance_destroyed,
    .amend_device_create = cc_amend_device_create,
};

VK_LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    return tls_negotiate(v);
}
