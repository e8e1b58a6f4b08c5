/* SPDX-License-Identifier: MIT */
/* dispatch_probe — what vkGetInstanceProcAddr / vkGetDeviceProcAddr answer
 * and what the commands they hand out do, recorded so that a run under the
 * layer can be compared line by line with a run without it.
 *
 *   dispatch_probe --out FILE [--notes FILE] [--layer LIBRARY] [--absent]
 *                  [--withhold NAME,...|optional] CONFIG
 *
 * CONFIG is "1.0" or "1.3" (VkApplicationInfo::apiVersion) followed by any
 * of "+utils" (VK_EXT_debug_utils, and VK_EXT_debug_report where present, on
 * the instance), "+inst" (VK_KHR_get_physical_device_properties2,
 * VK_KHR_device_group_creation) and "+dev" (every supported device
 * extension with commands the layer hooks, with what they depend on:
 * synchronization2, dynamic_rendering, create_renderpass2, copy_commands2,
 * device_group, draw_indirect_count, and debug_marker, calibrated_timestamps,
 * host_query_reset; implies +inst at 1.0).
 *
 * Where the commands come from:
 * - without --layer, from the loader's own vkGetInstanceProcAddr /
 *   vkGetDeviceProcAddr: the chain is whatever the environment enables (no
 *   layer for the baseline; VK_INSTANCE_LAYERS for the layer, alone or with
 *   validation);
 * - with --layer, the probe loads the layer library itself and stands above
 *   it, as the loader or a layer above it would: every lookup goes to the
 *   layer's own vkGetInstanceProcAddr / vkGetDeviceProcAddr, and the layer's
 *   next entity is the loader's application interface (with whatever the
 *   environment enables below). That also asks the layer for device commands
 *   through vkGetInstanceProcAddr, which the loader never does for names it
 *   knows.
 * - --withhold makes that next entity's vkGetDeviceProcAddr answer NULL for
 *   the names given ("optional": every device command of the probe's table
 *   that is not Vulkan 1.0 core) while its vkGetInstanceProcAddr still
 *   answers: a layer below that lacks functions. Also valid without
 *   --layer, for the baseline of such a run.
 *
 * The device part runs three times on a new device each: with every command
 * fetched through vkGetInstanceProcAddr(instance) ("pass gipa"), through
 * vkGetDeviceProcAddr(device) ("pass gdpa"), and with --absent (needs
 * --layer), once more calling the layer's hooks for commands the device does
 * not have: handed out by vkGetInstanceProcAddr, NULL from
 * vkGetDeviceProcAddr. Such a hook must do nothing (and return
 * VK_ERROR_EXTENSION_NOT_PRESENT where it returns a VkResult), so that pass
 * must end with exactly the effects of "pass gdpa"; the probe checks that
 * itself. A command whose vkGetDeviceProcAddr answer is NULL is never called
 * through a vkGetInstanceProcAddr pointer otherwise: the loader's trampoline
 * for it would crash without any layer.
 *
 * --out gets the lines to compare: the configuration, whether each of the
 * vk_command_names (every command of vulkan_core.h) is NULL through each
 * lookup, every call made or skipped with its VkResult, and the effects:
 * hashes of what the GPU work wrote, a pipeline-statistics query. --notes
 * gets what differs by construction and is checked separately: the
 * introspection answers, the names the layer intercepts ("hooked-gipa",
 * "hooked-gdpa", "hooked-global": the answer differs from the next
 * entity's, needs --layer), the --absent pass and every command called
 * ("called gipa|gdpa NAME") for the coverage check; the --absent pass's
 * calls of the layer's hooks count as called through vkGetInstanceProcAddr,
 * which is where they came from: for commands of extensions lavapipe does
 * not have (VK_EXT_mesh_shader; VK_EXT_debug_marker, which only the
 * validation layer offers) they are the only calls there can be.
 *
 * Exit 0 when the probe ran to its end (a crash is the failure this is
 * about), 1 on a failed check, 2 on bad arguments.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "shaders/iterate_comp_spv.h"
#include "shaders/triangles_frag_spv.h"
#include "shaders/triangles_vert_spv.h"
#include "vk_command_names.h"

#define LAYER_NAME "VK_LAYER_GPUTRACE_timeline"
#define N_NAMES    (sizeof vk_command_names / sizeof vk_command_names[0])

/* ---- output ------------------------------------------------------------ */

static FILE *out, *notes;
static int failures;

__attribute__((format(printf, 2, 3))) static void say(FILE *f, const char *fmt, ...)
{
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f); /* a crash must leave everything before it on disk */
}

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("dispatch_probe: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

static const char *result_name(VkResult r)
{
    switch (r) {
#define R(x) \
    case x:  \
        return #x;
        R(VK_SUCCESS)
        R(VK_NOT_READY)
        R(VK_TIMEOUT)
        R(VK_INCOMPLETE)
        R(VK_ERROR_OUT_OF_HOST_MEMORY)
        R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        R(VK_ERROR_INITIALIZATION_FAILED)
        R(VK_ERROR_DEVICE_LOST)
        R(VK_ERROR_LAYER_NOT_PRESENT)
        R(VK_ERROR_EXTENSION_NOT_PRESENT)
        R(VK_ERROR_FEATURE_NOT_PRESENT)
        R(VK_ERROR_UNKNOWN)
#undef R
    default:
        return "VK_(other)";
    }
}

/* ---- the chain ---------------------------------------------------------- */

/* What the probe looks commands up with ("top") and what stands below the
 * layer ("bottom": the loader, minus withheld names). Without --layer, top
 * is bottom. */
static PFN_vkGetInstanceProcAddr top_gipa;
static bool direct; /* --layer */

static char **withheld;
static size_t nwithheld;

static bool is_withheld(const char *name)
{
    for (size_t i = 0; i < nwithheld; i++) {
        if (strcmp(withheld[i], name) == 0)
            return true;
    }
    return false;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL bottom_gdpa(VkDevice device, const char *name);

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL bottom_gipa(VkInstance instance, const char *name)
{
    if (strcmp(name, "vkGetInstanceProcAddr") == 0)
        return (PFN_vkVoidFunction)bottom_gipa;
    if (nwithheld && strcmp(name, "vkGetDeviceProcAddr") == 0)
        return (PFN_vkVoidFunction)bottom_gdpa;
    return vkGetInstanceProcAddr(instance, name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL bottom_gdpa(VkDevice device, const char *name)
{
    if (is_withheld(name))
        return NULL;
    if (nwithheld && strcmp(name, "vkGetDeviceProcAddr") == 0)
        return (PFN_vkVoidFunction)bottom_gdpa;
    return vkGetDeviceProcAddr(device, name);
}

/* The loader's hook for dispatchable objects a layer creates; the loader's
 * own vkAllocateCommandBuffers below has already set them up. */
static VKAPI_ATTR VkResult VKAPI_CALL set_loader_data(VkDevice device, void *object)
{
    (void)device, (void)object;
    return VK_SUCCESS;
}

static bool load_layer(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fail("dlopen %s: %s", path, dlerror());
        return false;
    }
    PFN_vkNegotiateLoaderLayerInterfaceVersion negotiate =
        (PFN_vkNegotiateLoaderLayerInterfaceVersion)dlsym(lib,
                                                          "vkNegotiateLoaderLayerInterfaceVersion");
    VkNegotiateLayerInterface v = {
        .sType = LAYER_NEGOTIATE_INTERFACE_STRUCT,
        .loaderLayerInterfaceVersion = 2,
    };
    if (!negotiate || negotiate(&v) != VK_SUCCESS || !v.pfnGetInstanceProcAddr ||
        !v.pfnGetDeviceProcAddr) {
        fail("%s: interface negotiation failed", path);
        return false;
    }
    /* The device-level one is asked for through vkGetInstanceProcAddr, as
    * the loader does. */
    top_gipa = v.pfnGetInstanceProcAddr;
    direct = true;
    return true; /* never dlclosed: the layer may keep threads until exit */
}

/* ---- configuration ----------------------------------------------------- */

static struct {
    const char *text;
    uint32_t api;
    bool utils, inst, dev;
} cfg;

static bool parse_config(const char *text)
{
    cfg.text = text;
    if (strncmp(text, "1.0", 3) == 0)
        cfg.api = VK_API_VERSION_1_0;
    else if (strncmp(text, "1.3", 3) == 0)
        cfg.api = VK_API_VERSION_1_3;
    else
        return false;
    for (const char *p = text + 3; *p;) {
        size_t n = strcspn(p + 1, "+");
        if (*p != '+')
            return false;
        if (n == 5 && strncmp(p + 1, "utils", n) == 0)
            cfg.utils = true;
        else if (n == 4 && strncmp(p + 1, "inst", n) == 0)
            cfg.inst = true;
        else if (n == 3 && strncmp(p + 1, "dev", n) == 0)
            cfg.dev = true;
        else
            return false;
        p += 1 + n;
    }
    if (cfg.dev && cfg.api == VK_API_VERSION_1_0)
        cfg.inst = true; /* the device extensions depend on it */
    return true;
}

typedef struct names names;
struct names {
    const char *v[16];
    uint32_t n;
};

static bool has(const names *l, const char *name)
{
    for (uint32_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i], name) == 0)
            return true;
    }
    return false;
}

static void add_if(names *l, const VkExtensionProperties *avail, uint32_t navail, const char *name)
{
    for (uint32_t i = 0; i < navail; i++) {
        if (strcmp(avail[i].extensionName, name) == 0) {
            l->v[l->n++] = name;
            return;
        }
    }
}

static void print_names(const char *what, const names *l)
{
    char line[1024];
    size_t len = (size_t)snprintf(line, sizeof line, "%s", what);
    for (uint32_t i = 0; i < l->n && len < sizeof line; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, " %s", l->v[i]);
    say(out, "%s", line);
}

/* ---- device functions the probe uses ------------------------------------ */

/* X(name, since): since is the core version as 10/11/12/13, 0 for an
 * extension command. */
#define PROBE_DEVICE_FUNCTIONS(X)          \
    X(DestroyDevice, 10)                   \
    X(GetDeviceQueue, 10)                  \
    X(GetDeviceQueue2, 11)                 \
    X(QueueSubmit, 10)                     \
    X(QueueSubmit2, 13)                    \
    X(QueueSubmit2KHR, 0)                  \
    X(QueueBindSparse, 10)                 \
    X(QueuePresentKHR, 0)                  \
    X(CreateSwapchainKHR, 0)               \
    X(DestroySwapchainKHR, 0)              \
    X(QueueWaitIdle, 10)                   \
    X(DeviceWaitIdle, 10)                  \
    X(AllocateMemory, 10)                  \
    X(FreeMemory, 10)                      \
    X(MapMemory, 10)                       \
    X(UnmapMemory, 10)                     \
    X(BindBufferMemory, 10)                \
    X(BindImageMemory, 10)                 \
    X(GetBufferMemoryRequirements, 10)     \
    X(GetImageMemoryRequirements, 10)      \
    X(CreateFence, 10)                     \
    X(DestroyFence, 10)                    \
    X(WaitForFences, 10)                   \
    X(CreateQueryPool, 10)                 \
    X(DestroyQueryPool, 10)                \
    X(GetQueryPoolResults, 10)             \
    X(CreateBuffer, 10)                    \
    X(DestroyBuffer, 10)                   \
    X(CreateImage, 10)                     \
    X(DestroyImage, 10)                    \
    X(CreateImageView, 10)                 \
    X(DestroyImageView, 10)                \
    X(CreateShaderModule, 10)              \
    X(DestroyShaderModule, 10)             \
    X(CreateComputePipelines, 10)          \
    X(CreateGraphicsPipelines, 10)         \
    X(DestroyPipeline, 10)                 \
    X(CreatePipelineLayout, 10)            \
    X(DestroyPipelineLayout, 10)           \
    X(CreateDescriptorSetLayout, 10)       \
    X(DestroyDescriptorSetLayout, 10)      \
    X(CreateDescriptorPool, 10)            \
    X(DestroyDescriptorPool, 10)           \
    X(AllocateDescriptorSets, 10)          \
    X(UpdateDescriptorSets, 10)            \
    X(CreateFramebuffer, 10)               \
    X(DestroyFramebuffer, 10)              \
    X(CreateRenderPass, 10)                \
    X(CreateRenderPass2, 12)               \
    X(CreateRenderPass2KHR, 0)             \
    X(DestroyRenderPass, 10)               \
    X(CreateCommandPool, 10)               \
    X(DestroyCommandPool, 10)              \
    X(ResetCommandPool, 10)                \
    X(AllocateCommandBuffers, 10)          \
    X(FreeCommandBuffers, 10)              \
    X(BeginCommandBuffer, 10)              \
    X(EndCommandBuffer, 10)                \
    X(ResetCommandBuffer, 10)              \
    X(CmdBindPipeline, 10)                 \
    X(CmdBindDescriptorSets, 10)           \
    X(CmdPushConstants, 10)                \
    X(CmdResetQueryPool, 10)               \
    X(CmdBeginQuery, 10)                   \
    X(CmdEndQuery, 10)                     \
    X(CmdDispatch, 10)                     \
    X(CmdDispatchIndirect, 10)             \
    X(CmdDispatchBase, 11)                 \
    X(CmdDispatchBaseKHR, 0)               \
    X(CmdSetViewport, 10)                  \
    X(CmdBindIndexBuffer, 10)              \
    X(CmdDraw, 10)                         \
    X(CmdDrawIndexed, 10)                  \
    X(CmdDrawIndirect, 10)                 \
    X(CmdDrawIndexedIndirect, 10)          \
    X(CmdDrawIndirectCount, 12)            \
    X(CmdDrawIndexedIndirectCount, 12)     \
    X(CmdDrawIndirectCountKHR, 0)          \
    X(CmdDrawIndexedIndirectCountKHR, 0)   \
    X(CmdDrawMeshTasksEXT, 0)              \
    X(CmdDrawMeshTasksIndirectEXT, 0)      \
    X(CmdDrawMeshTasksIndirectCountEXT, 0) \
    X(CmdFillBuffer, 10)                   \
    X(CmdUpdateBuffer, 10)                 \
    X(CmdCopyBuffer, 10)                   \
    X(CmdCopyBuffer2, 13)                  \
    X(CmdCopyBuffer2KHR, 0)                \
    X(CmdCopyImage, 10)                    \
    X(CmdCopyImage2, 13)                   \
    X(CmdCopyImage2KHR, 0)                 \
    X(CmdCopyBufferToImage, 10)            \
    X(CmdCopyBufferToImage2, 13)           \
    X(CmdCopyBufferToImage2KHR, 0)         \
    X(CmdCopyImageToBuffer, 10)            \
    X(CmdCopyImageToBuffer2, 13)           \
    X(CmdCopyImageToBuffer2KHR, 0)         \
    X(CmdBlitImage, 10)                    \
    X(CmdBlitImage2, 13)                   \
    X(CmdBlitImage2KHR, 0)                 \
    X(CmdResolveImage, 10)                 \
    X(CmdResolveImage2, 13)                \
    X(CmdResolveImage2KHR, 0)              \
    X(CmdClearColorImage, 10)              \
    X(CmdClearDepthStencilImage, 10)       \
    X(CmdClearAttachments, 10)             \
    X(CmdPipelineBarrier, 10)              \
    X(CmdPipelineBarrier2, 13)             \
    X(CmdPipelineBarrier2KHR, 0)           \
    X(CmdBeginRenderPass, 10)              \
    X(CmdNextSubpass, 10)                  \
    X(CmdEndRenderPass, 10)                \
    X(CmdBeginRenderPass2, 12)             \
    X(CmdNextSubpass2, 12)                 \
    X(CmdEndRenderPass2, 12)               \
    X(CmdBeginRenderPass2KHR, 0)           \
    X(CmdNextSubpass2KHR, 0)               \
    X(CmdEndRenderPass2KHR, 0)             \
    X(CmdBeginRendering, 13)               \
    X(CmdEndRendering, 13)                 \
    X(CmdBeginRenderingKHR, 0)             \
    X(CmdEndRenderingKHR, 0)               \
    X(CmdExecuteCommands, 10)              \
    X(CmdBeginDebugUtilsLabelEXT, 0)       \
    X(CmdEndDebugUtilsLabelEXT, 0)         \
    X(CmdInsertDebugUtilsLabelEXT, 0)      \
    X(QueueBeginDebugUtilsLabelEXT, 0)     \
    X(QueueEndDebugUtilsLabelEXT, 0)       \
    X(QueueInsertDebugUtilsLabelEXT, 0)    \
    X(SetDebugUtilsObjectNameEXT, 0)       \
    X(CmdDebugMarkerBeginEXT, 0)           \
    X(CmdDebugMarkerEndEXT, 0)             \
    X(CmdDebugMarkerInsertEXT, 0)          \
    X(DebugMarkerSetObjectNameEXT, 0)      \
    X(ResetQueryPool, 12)                  \
    X(ResetQueryPoolEXT, 0)                \
    X(GetCalibratedTimestampsEXT, 0)       \
    X(CmdWriteTimestamp2, 13)              \
    X(CmdWriteTimestamp2KHR, 0)            \
    X(BindBufferMemory2, 11)               \
    X(BindBufferMemory2KHR, 0)             \
    X(BindImageMemory2, 11)                \
    X(BindImageMemory2KHR, 0)              \
    X(CreateSemaphore, 10)                 \
    X(DestroySemaphore, 10)                \
    X(SignalSemaphore, 12)                 \
    X(SignalSemaphoreKHR, 0)               \
    X(WaitSemaphores, 12)                  \
    X(WaitSemaphoresKHR, 0)

enum fn_id {
#define X(name, since) FN_##name,
    PROBE_DEVICE_FUNCTIONS(X)
#undef X
    FN_COUNT
};

static const struct {
    const char *name;
    int since;
} fn_info[FN_COUNT] = {
#define X(name, since) [FN_##name] = { "vk" #name, since },
    PROBE_DEVICE_FUNCTIONS(X)
#undef X
};

enum lookup {
    LOOKUP_GIPA,
    LOOKUP_GDPA,
    LOOKUP_ABSENT
};
static const char *const lookup_names[] = { "gipa", "gdpa", "absent" };

typedef struct hook_api hook_api;
struct hook_api {
#define X(name, since) PFN_vk##name name;
    PROBE_DEVICE_FUNCTIONS(X)
#undef X
    bool absent[FN_COUNT]; /* the layer's hook for a command the device lacks */
};

static hook_api api;
static enum lookup pass;

/* Where this pass's record goes: the absent pass has none to compare. */
static FILE *pass_file(void)
{
    return pass == LOOKUP_ABSENT ? notes : out;
}

/* Whether fn can be called; says so on the pass's file. Absent commands are
 * called too (that is what the absent pass is about) but noted apart. */
static bool use(enum fn_id fn, bool present)
{
    FILE *f = pass_file();
    if (!present) {
        say(f, "skip %s", fn_info[fn].name);
        return false;
    }
    if (pass == LOOKUP_ABSENT && api.absent[fn]) {
        say(notes, "absent %s", fn_info[fn].name);
        /* A hook handed out by vkGetInstanceProcAddr (see the file comment). */
        say(notes, "called gipa %s", fn_info[fn].name);
    } else {
        say(f, "call %s", fn_info[fn].name);
    }
    if (pass != LOOKUP_ABSENT)
        say(notes, "called %s %s", lookup_names[pass], fn_info[fn].name);
    return true;
}

static VkResult result_of(enum fn_id fn, VkResult r)
{
    FILE *f = pass_file();
    say(f, "result %s %s", fn_info[fn].name, result_name(r));
    /* vkSetDebugUtilsObjectNameEXT absent below: the loader's terminator
     * answers VK_SUCCESS, and so does the layer (docs/layer.md, "Dispatch
     * rules"). */
    const VkResult absent =
        fn == FN_SetDebugUtilsObjectNameEXT ? VK_SUCCESS : VK_ERROR_EXTENSION_NOT_PRESENT;
    if (pass == LOOKUP_ABSENT && api.absent[fn] && r != absent)
        fail("absent %s returned %s, not %s", fn_info[fn].name, result_name(r),
             result_name(absent));
    return r;
}

/* Present and really the device's: an absent command does nothing, so what
 * depends on it must not be recorded. */
#define REAL(name) (api.name && !api.absent[FN_##name])
#define VCALL(name, ...)                      \
    do {                                      \
        if (use(FN_##name, api.name != NULL)) \
            api.name(__VA_ARGS__);            \
    } while (0)
#define NOT_CALLED VK_RESULT_MAX_ENUM
#define RCALL(name, ...) \
    (use(FN_##name, api.name != NULL) ? result_of(FN_##name, api.name(__VA_ARGS__)) : NOT_CALLED)

/* ---- instance ---------------------------------------------------------- */

static VkInstance instance;
static VkPhysicalDevice physical_device;
static names instance_exts, device_exts;
static VkPhysicalDeviceFeatures features;
static bool draw_indirect_count; /* the feature, enabled (Vulkan 1.2 and later) */
static VkPhysicalDeviceMemoryProperties memory_props;
static uint32_t queue_family;
static bool queue_sparse; /* the queue family does sparse binding */

static PFN_vkVoidFunction instance_fn(const char *name)
{
    PFN_vkVoidFunction f = top_gipa(instance, name);
    say(notes, "called gipa %s", name);
    return f;
}

static bool create_instance(void)
{
    /* What the loader offers, asked of the loader: the layer answers such
    * questions only about itself. */
    VkExtensionProperties avail[64];
    uint32_t navail = 64;
    if (vkEnumerateInstanceExtensionProperties(NULL, &navail, avail) < 0) {
        fail("vkEnumerateInstanceExtensionProperties failed");
        return false;
    }
    if (cfg.utils) {
        add_if(&instance_exts, avail, navail, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        add_if(&instance_exts, avail, navail, VK_EXT_DEBUG_REPORT_EXTENSION_NAME);
    }
    if (cfg.inst) {
        add_if(&instance_exts, avail, navail,
               VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME);
        add_if(&instance_exts, avail, navail, VK_KHR_DEVICE_GROUP_CREATION_EXTENSION_NAME);
    }
    print_names("instance-extensions", &instance_exts);

    /* The global entry points, as the loader asks a layer for them. */
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)top_gipa(NULL, "vkCreateInstance");
    say(out, "global vkCreateInstance %d", create != NULL);
    PFN_vkGetInstanceProcAddr gipa =
        (PFN_vkGetInstanceProcAddr)top_gipa(NULL, "vkGetInstanceProcAddr");
    say(out, "global vkGetInstanceProcAddr %d", gipa != NULL);
    for (size_t i = 0; i < N_NAMES && direct; i++) {
        PFN_vkVoidFunction mine = top_gipa(NULL, vk_command_names[i]);
        if (mine && mine != bottom_gipa(NULL, vk_command_names[i]))
            say(notes, "hooked-global %s", vk_command_names[i]);
    }
    PFN_vkEnumerateInstanceLayerProperties layers =
        (PFN_vkEnumerateInstanceLayerProperties)top_gipa(NULL,
                                                         "vkEnumerateInstanceLayerProperties");
    PFN_vkEnumerateInstanceExtensionProperties exts =
        (PFN_vkEnumerateInstanceExtensionProperties)top_gipa(
            NULL, "vkEnumerateInstanceExtensionProperties");
    /* The layer answers for itself, the loader for the chain: not compared. */
    if (layers) {
        uint32_t n = 0;
        say(notes, "introspection vkEnumerateInstanceLayerProperties %s",
            result_name(layers(&n, NULL)));
        say(notes, "called gipa vkEnumerateInstanceLayerProperties");
    }
    if (exts) {
        uint32_t n = 0;
        say(notes, "introspection vkEnumerateInstanceExtensionProperties(%s) %s", LAYER_NAME,
            result_name(exts(LAYER_NAME, &n, NULL)));
        say(notes, "called gipa vkEnumerateInstanceExtensionProperties");
    }
    if (!create || !gipa) {
        fail("no vkCreateInstance / vkGetInstanceProcAddr");
        return false;
    }
    say(notes, "called gipa vkGetInstanceProcAddr");
    top_gipa = gipa; /* from here on, the lookup's answer about itself */

    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "dispatch_probe",
        .apiVersion = cfg.api,
    };
    VkLayerInstanceLink link = { .pfnNextGetInstanceProcAddr = bottom_gipa };
    VkLayerInstanceCreateInfo chain = {
        .sType = VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO,
        .function = VK_LAYER_LINK_INFO,
        .u.pLayerInfo = &link,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = direct ? &chain : NULL,
        .pApplicationInfo = &app,
        .enabledExtensionCount = instance_exts.n,
        .ppEnabledExtensionNames = instance_exts.v,
    };
    VkResult r = create(&info, NULL, &instance);
    say(out, "result vkCreateInstance %s", result_name(r));
    say(notes, "called gipa vkCreateInstance");
    if (r != VK_SUCCESS) {
        fail("vkCreateInstance: %s", result_name(r));
        return false;
    }
    return true;
}

/* From Vulkan 1.2 on, the core vkCmdDraw*IndirectCount need the
 * drawIndirectCount feature (the KHR spellings need only their extension);
 * create_device enables it where the device has it. */
static void query_draw_indirect_count(void)
{
    if (cfg.api < VK_API_VERSION_1_2)
        return;
    PFN_vkGetPhysicalDeviceFeatures2 get_features2 =
        (PFN_vkGetPhysicalDeviceFeatures2)instance_fn("vkGetPhysicalDeviceFeatures2");
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    };
    VkPhysicalDeviceFeatures2 features2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &v12,
    };
    if (get_features2)
        get_features2(physical_device, &features2);
    draw_indirect_count = v12.drawIndirectCount;
    say(out, "feature drawIndirectCount %d", draw_indirect_count);
}

/* VK_KHR_get_physical_device_properties2's spelling, where the instance
 * enabled it. */
static void query_features2_khr(void)
{
    if (!has(&instance_exts, VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME))
        return;
    PFN_vkGetPhysicalDeviceFeatures2KHR get_features2 =
        (PFN_vkGetPhysicalDeviceFeatures2KHR)instance_fn("vkGetPhysicalDeviceFeatures2KHR");
    VkPhysicalDeviceFeatures2 features2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 };
    if (get_features2)
        get_features2(physical_device, &features2);
    say(out, "feature2 robustBufferAccess %d", (int)features2.features.robustBufferAccess);
}

/* The instance-level commands, through the only lookup they have. */
static bool query_instance(void)
{
    PFN_vkEnumeratePhysicalDevices enumerate =
        (PFN_vkEnumeratePhysicalDevices)instance_fn("vkEnumeratePhysicalDevices");
    uint32_t n = 1;
    VkResult r = enumerate ? enumerate(instance, &n, &physical_device) : NOT_CALLED;
    say(out, "result vkEnumeratePhysicalDevices %s count %u", result_name(r), n);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        fail("no physical device");
        return false;
    }
    const char *group_names[] = { "vkEnumeratePhysicalDeviceGroups",
                                  "vkEnumeratePhysicalDeviceGroupsKHR" };
    for (int i = 0; i < 2; i++) {
        PFN_vkEnumeratePhysicalDeviceGroups groups =
            (PFN_vkEnumeratePhysicalDeviceGroups)instance_fn(group_names[i]);
        if (!groups) {
            say(out, "skip %s", group_names[i]);
            continue;
        }
        VkPhysicalDeviceGroupProperties props[4];
        for (int j = 0; j < 4; j++)
            props[j] = (VkPhysicalDeviceGroupProperties){
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GROUP_PROPERTIES
            };
        uint32_t count = 4;
        r = groups(instance, &count, props);
        say(out, "result %s %s count %u devices %u", group_names[i], result_name(r), count,
            count ? props[0].physicalDeviceCount : 0);
    }

    /* Tooling info: the layer adds itself to the list, so the answers
     * differ by construction and go to the notes. */
    const char *tool_names[] = { "vkGetPhysicalDeviceToolProperties",
                                 "vkGetPhysicalDeviceToolPropertiesEXT" };
    for (int i = 0; i < 2; i++) {
        PFN_vkGetPhysicalDeviceToolProperties tools =
            (PFN_vkGetPhysicalDeviceToolProperties)instance_fn(tool_names[i]);
        if (!tools)
            continue;
        uint32_t count = 0;
        r = tools(physical_device, &count, NULL);
        say(notes, "introspection %s %s count %u", tool_names[i], result_name(r), count);
    }

    PFN_vkGetPhysicalDeviceFeatures get_features =
        (PFN_vkGetPhysicalDeviceFeatures)instance_fn("vkGetPhysicalDeviceFeatures");
    PFN_vkGetPhysicalDeviceMemoryProperties get_memory =
        (PFN_vkGetPhysicalDeviceMemoryProperties)instance_fn("vkGetPhysicalDeviceMemoryProperties");
    PFN_vkGetPhysicalDeviceQueueFamilyProperties get_families =
        (PFN_vkGetPhysicalDeviceQueueFamilyProperties)instance_fn(
            "vkGetPhysicalDeviceQueueFamilyProperties");
    PFN_vkEnumerateDeviceExtensionProperties dev_exts =
        (PFN_vkEnumerateDeviceExtensionProperties)instance_fn(
            "vkEnumerateDeviceExtensionProperties");
    PFN_vkEnumerateDeviceLayerProperties dev_layers =
        (PFN_vkEnumerateDeviceLayerProperties)instance_fn("vkEnumerateDeviceLayerProperties");
    if (!get_features || !get_memory || !get_families || !dev_exts) {
        fail("a Vulkan 1.0 physical-device command is missing");
        return false;
    }
    get_features(physical_device, &features);
    get_memory(physical_device, &memory_props);
    VkQueueFamilyProperties families[8];
    uint32_t nfamilies = 8;
    get_families(physical_device, &nfamilies, families);
    queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < nfamilies && queue_family == UINT32_MAX; i++) {
        if ((families[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) ==
            (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT))
            queue_family = i;
    }
    if (queue_family == UINT32_MAX) {
        fail("no graphics+compute queue family");
        return false;
    }
    queue_sparse = (families[queue_family].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT) != 0;
    if (dev_layers) {
        uint32_t count = 0;
        say(notes, "introspection vkEnumerateDeviceLayerProperties %s",
            result_name(dev_layers(physical_device, &count, NULL)));
    }

    VkExtensionProperties avail[512];
    uint32_t navail = 512;
    r = dev_exts(physical_device, NULL, &navail, avail);
    if (r < 0)
        navail = 0;
    /* The loader adds the device extensions of an enabled layer's manifest
     * to the list, and our layer adds VK_EXT_frame_boundary where the driver
     * lacks it (docs/layer.md, "Frames"): ours are counted in the notes. */
    uint32_t compared = 0;
    for (uint32_t i = 0; i < navail; i++)
        compared += strcmp(avail[i].extensionName, VK_EXT_TOOLING_INFO_EXTENSION_NAME) != 0 &&
                    strcmp(avail[i].extensionName, "VK_EXT_frame_boundary") != 0;
    say(out, "result vkEnumerateDeviceExtensionProperties %s count %u", result_name(r), compared);
    say(notes, "introspection vkEnumerateDeviceExtensionProperties count %u", navail);
    if (cfg.dev) {
        static const char *const wanted[] = {
            VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME,
            VK_KHR_DYNAMIC_RENDERING_EXTENSION_NAME,
            VK_KHR_DEPTH_STENCIL_RESOLVE_EXTENSION_NAME,
            VK_KHR_CREATE_RENDERPASS_2_EXTENSION_NAME,
            VK_KHR_MULTIVIEW_EXTENSION_NAME,
            VK_KHR_MAINTENANCE_2_EXTENSION_NAME,
            VK_KHR_COPY_COMMANDS_2_EXTENSION_NAME,
            VK_KHR_DEVICE_GROUP_EXTENSION_NAME,
            VK_KHR_DRAW_INDIRECT_COUNT_EXTENSION_NAME,
            VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME,
            VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME,
            VK_KHR_BIND_MEMORY_2_EXTENSION_NAME,
            VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME,
        };
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            add_if(&device_exts, avail, navail, wanted[i]);
        /* VK_EXT_debug_marker is offered by the validation layer; it needs
       * VK_EXT_debug_report on the instance. */
        if (has(&instance_exts, VK_EXT_DEBUG_REPORT_EXTENSION_NAME))
            add_if(&device_exts, avail, navail, VK_EXT_DEBUG_MARKER_EXTENSION_NAME);
    }
    print_names("device-extensions", &device_exts);
    query_draw_indirect_count();
    query_features2_khr();
    return true;
}

/* ---- device ------------------------------------------------------------ */

static VkDevice device;

static bool create_device(void)
{
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)instance_fn("vkCreateDevice");
    if (!create) {
        fail("no vkCreateDevice");
        return false;
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkPhysicalDeviceFeatures enabled = {
        .pipelineStatisticsQuery = features.pipelineStatisticsQuery,
        .multiDrawIndirect = features.multiDrawIndirect, /* drawCount 2 (record_draws) */
    };
    /* Features of the commands under test: core at 1.3, from the extensions
    * otherwise (which at 1.0 needs VkPhysicalDeviceFeatures2). */
    VkPhysicalDeviceVulkan13Features v13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .synchronization2 = VK_TRUE,
        .dynamicRendering = VK_TRUE,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .drawIndirectCount = draw_indirect_count,
        .timelineSemaphore = VK_TRUE,
    };
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
        .timelineSemaphore = VK_TRUE,
    };
    VkPhysicalDeviceSynchronization2Features sync2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,
        .synchronization2 = VK_TRUE,
    };
    VkPhysicalDeviceDynamicRenderingFeatures dynamic = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES,
        .dynamicRendering = VK_TRUE,
    };
    VkPhysicalDeviceHostQueryResetFeatures host_reset = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
        .hostQueryReset = VK_TRUE,
    };
    VkPhysicalDeviceFeatures2 features2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .features = enabled,
    };
    void *chain_head = NULL;
#define PREPEND(s)              \
    do {                        \
        (s).pNext = chain_head; \
        chain_head = &(s);      \
    } while (0)
    if (cfg.api >= VK_API_VERSION_1_3) {
        PREPEND(v13);
        PREPEND(v12);
    } else {
        if (has(&device_exts, VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME))
            PREPEND(sync2);
        if (has(&device_exts, VK_KHR_DYNAMIC_RENDERING_EXTENSION_NAME))
            PREPEND(dynamic);
        if (has(&device_exts, VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME))
            PREPEND(host_reset);
        if (has(&device_exts, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME))
            PREPEND(timeline);
    }
    bool use_features2 = chain_head != NULL;
    if (use_features2) {
        features2.pNext = chain_head;
        chain_head = &features2;
    }
#undef PREPEND

    VkLayerDeviceLink link = {
        .pfnNextGetInstanceProcAddr = bottom_gipa,
        .pfnNextGetDeviceProcAddr = bottom_gdpa,
    };
    VkLayerDeviceCreateInfo callback = {
        .sType = VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO,
        .pNext = chain_head,
        .function = VK_LOADER_DATA_CALLBACK,
        .u.pfnSetDeviceLoaderData = set_loader_data,
    };
    VkLayerDeviceCreateInfo chain = {
        .sType = VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO,
        .pNext = &callback,
        .function = VK_LAYER_LINK_INFO,
        .u.pLayerInfo = &link,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = direct ? (void *)&chain : chain_head,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = device_exts.n,
        .ppEnabledExtensionNames = device_exts.v,
        .pEnabledFeatures = use_features2 ? NULL : &enabled,
    };
    VkResult r = create(physical_device, &info, NULL, &device);
    say(pass_file(), "result vkCreateDevice %s", result_name(r));
    if (r != VK_SUCCESS) {
        fail("vkCreateDevice: %s", result_name(r));
        return false;
    }
    return true;
}

/* The commands that need no instance. Asked for with one, the loader's
 * application-facing vkGetInstanceProcAddr answers NULL from Vulkan 1.3 on,
 * but a layer must answer them for any handle: the loader asks the top layer
 * for vkCreateInstance with the handle of the instance being created. */
static bool is_global(const char *name)
{
    return strcmp(name, "vkCreateInstance") == 0 ||
           strcmp(name, "vkEnumerateInstanceExtensionProperties") == 0 ||
           strcmp(name, "vkEnumerateInstanceLayerProperties") == 0 ||
           strcmp(name, "vkEnumerateInstanceVersion") == 0;
}

/* Every command of vulkan_core.h through both lookups, NULL or not (the
 * global ones through vkGetDeviceProcAddr only); with --layer also which
 * ones the layer answers with a function of its own. */
static void record_lookups(PFN_vkGetDeviceProcAddr gdpa)
{
    for (size_t i = 0; i < N_NAMES; i++) {
        const char *name = vk_command_names[i];
        PFN_vkVoidFunction gi = top_gipa(instance, name);
        PFN_vkVoidFunction gd = gdpa(device, name);
        if (is_global(name))
            say(out, "lookup %s gdpa %d", name, gd != NULL);
        else
            say(out, "lookup %s gipa %d gdpa %d", name, gi != NULL, gd != NULL);
        if (!direct)
            continue;
        if (gi && gi != bottom_gipa(instance, name))
            say(notes, "hooked-gipa %s", name);
        if (gd && gd != bottom_gdpa(device, name))
            say(notes, "hooked-gdpa %s", name);
    }
}

/* Fills `api` for this pass (see the file comment). */
static void resolve(PFN_vkGetDeviceProcAddr gdpa)
{
    memset(&api, 0, sizeof api);
    PFN_vkVoidFunction *slot = (PFN_vkVoidFunction *)(void *)&api;
    for (int i = 0; i < FN_COUNT; i++) {
        const char *name = fn_info[i].name;
        PFN_vkVoidFunction gi = top_gipa(instance, name);
        PFN_vkVoidFunction gd = gdpa(device, name);
        /* A core command above the application's version is not called even
       * when a lookup answers: the loader answers vkGetDeviceQueue2 on any
       * device, and its trampoline crashes on a 1.0 one. */
        if (fn_info[i].since > 10 + (int)VK_API_VERSION_MINOR(cfg.api))
            gd = gi = NULL;
        switch (pass) {
        case LOOKUP_GIPA:
            slot[i] = gd ? gi : NULL;
            break;
        case LOOKUP_GDPA:
            slot[i] = gd;
            break;
        case LOOKUP_ABSENT:
            gi = top_gipa(instance, name);
            if (!gdpa(device, name) && gi && gi != bottom_gipa(instance, name)) {
                slot[i] = gi;
                api.absent[i] = true;
            } else {
                slot[i] = gd;
            }
            break;
        }
    }
}

/* ---- the work ---------------------------------------------------------- */

/* Regions of the probe's buffer, each written by one group of commands;
 * a command that does not run leaves its region as the host filled it. */
enum section {
    S_FILL,
    S_UPDATE,
    S_COMPUTE,
    S_INDIRECT,
    S_COPYBUF,
    S_UPLOAD,
    S_SRC,
    S_DST,
    S_DST2,
    S_DST2KHR,
    S_DEPTH,
    S_SECONDARY,
    S_SUBMIT2,
    S_SUBMIT2KHR,
    S_DRAW,
    S_COUNT
};
static const char *const section_names[S_COUNT] = {
    "fill",   "update",        "compute",      "indirect",         "copy-buffer",
    "upload", "render-target", "image-copies", "image-to-buffer2", "image-to-buffer2khr",
    "depth",  "secondary",     "submit2",      "submit2khr",       "draws",
};
#define SECTION       4096u
#define OFF(s)        ((VkDeviceSize)(s)*SECTION)
#define IMG_W         64u
#define IMG_H         16u
#define COMPUTE_COUNT 256u

/* The host-filled arguments of the draws, in S_INDIRECT after the
 * dispatch's: three VkDrawIndirectCommand, three
 * VkDrawIndexedIndirectCommand, a draw count, the indices. */
#define DRAW_ARGS    64u
#define INDEXED_ARGS 128u
#define DRAW_COUNT   192u
#define INDICES      256u
#define N_DRAWS      8u /* the draws' viewports side by side: 8 x IMG_H pixels each */

typedef struct objects objects;
struct objects {
    VkQueue queue;
    VkBuffer buffer, index_buffer;
    VkDeviceMemory buffer_memory;
    uint32_t *mapped;
    VkImage src, dst, ms, depth, draw;
    VkDeviceMemory image_memory[5];
    VkImageView src_view, draw_view;
    VkRenderPass rp1, rp2, rp2khr;
    VkFramebuffer fb, draw_fb;
    VkShaderModule vert, frag;
    VkPipelineLayout draw_layout;
    VkPipeline draw_pipeline;
    VkShaderModule shader;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptor_pool;
    VkDescriptorSet set;
    VkQueryPool stats;
    VkCommandPool pool;
    VkCommandBuffer primary, secondary, extra[2];
    VkFence fence;
};

typedef struct effects effects;
struct effects {
    uint32_t hash[S_COUNT];
    uint64_t invocations;
    bool have_invocations;
    int queue2_same;
};

static uint32_t fnv1a(const void *data, size_t size)
{
    const unsigned char *p = data;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static int memory_type(uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < memory_props.memoryTypeCount; i++) {
        if ((bits & (1u << i)) && (memory_props.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    }
    return -1;
}

static VkResult bind_image(objects *o, VkImage image, int index)
{
    VkMemoryRequirements req = { 0 };
    VCALL(GetImageMemoryRequirements, device, image, &req);
    int type = memory_type(req.memoryTypeBits, 0);
    if (type < 0)
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    VkResult r = RCALL(AllocateMemory, device, &alloc, NULL, &o->image_memory[index]);
    if (r != VK_SUCCESS)
        return r;
    return RCALL(BindImageMemory, device, image, o->image_memory[index], 0);
}

static VkResult create_image(objects *o, VkImage *image, int index, VkFormat format,
                             VkSampleCountFlagBits samples, VkImageUsageFlags usage, uint32_t w,
                             uint32_t h)
{
    VkImageCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .imageType = VK_IMAGE_TYPE_2D,
        .format = format,
        .extent = { w, h, 1 },
        .mipLevels = 1,
        .arrayLayers = 1,
        .samples = samples,
        .tiling = VK_IMAGE_TILING_OPTIMAL,
        .usage = usage,
        .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
    };
    VkResult r = RCALL(CreateImage, device, &info, NULL, image);
    return r == VK_SUCCESS ? bind_image(o, *image, index) : r;
}

/* A framebuffer of rp1 (one colour attachment, the probe's image size). */
static VkResult create_rp1_framebuffer(const objects *o, VkImageView view,
                                       VkFramebuffer *framebuffer)
{
    VkFramebufferCreateInfo fb = {
        .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
        .renderPass = o->rp1,
        .attachmentCount = 1,
        .pAttachments = &view,
        .width = IMG_W,
        .height = IMG_H,
        .layers = 1,
    };
    return RCALL(CreateFramebuffer, device, &fb, NULL, framebuffer);
}

/* Two subpasses drawing nothing, both with the render target as their
 * color attachment, in the layout everything here stays in. */
static VkResult create_render_passes(objects *o)
{
    VkAttachmentDescription att = {
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = VK_IMAGE_LAYOUT_GENERAL,
        .finalLayout = VK_IMAGE_LAYOUT_GENERAL,
    };
    VkAttachmentReference ref = { 0, VK_IMAGE_LAYOUT_GENERAL };
    VkSubpassDescription subpasses[2] = {
        { .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
          .colorAttachmentCount = 1,
          .pColorAttachments = &ref },
        { .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
          .colorAttachmentCount = 1,
          .pColorAttachments = &ref },
    };
    VkSubpassDependency dep = {
        .srcSubpass = 0,
        .dstSubpass = 1,
        .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
        .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
        .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
    };
    VkRenderPassCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &att,
        .subpassCount = 2,
        .pSubpasses = subpasses,
        .dependencyCount = 1,
        .pDependencies = &dep,
    };
    VkResult r = RCALL(CreateRenderPass, device, &info, NULL, &o->rp1);
    if (r != VK_SUCCESS)
        return r;

    VkAttachmentDescription2 att2 = {
        .sType = VK_STRUCTURE_TYPE_ATTACHMENT_DESCRIPTION_2,
        .format = att.format,
        .samples = att.samples,
        .loadOp = att.loadOp,
        .storeOp = att.storeOp,
        .stencilLoadOp = att.stencilLoadOp,
        .stencilStoreOp = att.stencilStoreOp,
        .initialLayout = att.initialLayout,
        .finalLayout = att.finalLayout,
    };
    VkAttachmentReference2 ref2 = {
        .sType = VK_STRUCTURE_TYPE_ATTACHMENT_REFERENCE_2,
        .attachment = 0,
        .layout = VK_IMAGE_LAYOUT_GENERAL,
        .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
    };
    VkSubpassDescription2 subpasses2[2];
    for (int i = 0; i < 2; i++)
        subpasses2[i] = (VkSubpassDescription2){
            .sType = VK_STRUCTURE_TYPE_SUBPASS_DESCRIPTION_2,
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
            .colorAttachmentCount = 1,
            .pColorAttachments = &ref2,
        };
    VkSubpassDependency2 dep2 = {
        .sType = VK_STRUCTURE_TYPE_SUBPASS_DEPENDENCY_2,
        .srcSubpass = 0,
        .dstSubpass = 1,
        .srcStageMask = dep.srcStageMask,
        .dstStageMask = dep.dstStageMask,
        .srcAccessMask = dep.srcAccessMask,
        .dstAccessMask = dep.dstAccessMask,
    };
    VkRenderPassCreateInfo2 info2 = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO_2,
        .attachmentCount = 1,
        .pAttachments = &att2,
        .subpassCount = 2,
        .pSubpasses = subpasses2,
        .dependencyCount = 1,
        .pDependencies = &dep2,
    };
    RCALL(CreateRenderPass2, device, &info2, NULL, &o->rp2);
    RCALL(CreateRenderPass2KHR, device, &info2, NULL, &o->rp2khr);

    VkImageViewCreateInfo view = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .image = o->src,
        .viewType = VK_IMAGE_VIEW_TYPE_2D,
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
    };
    r = RCALL(CreateImageView, device, &view, NULL, &o->src_view);
    if (r != VK_SUCCESS)
        return r;
    return create_rp1_framebuffer(o, o->src_view, &o->fb);
}

static VkResult create_pipeline(objects *o)
{
    VkShaderModuleCreateInfo module = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = sizeof iterate_comp_spv,
        .pCode = iterate_comp_spv,
    };
    VkResult r = RCALL(CreateShaderModule, device, &module, NULL, &o->shader);
    if (r != VK_SUCCESS)
        return r;
    VkDescriptorSetLayoutBinding binding = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
    };
    VkDescriptorSetLayoutCreateInfo set_layout = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &binding,
    };
    r = RCALL(CreateDescriptorSetLayout, device, &set_layout, NULL, &o->set_layout);
    if (r != VK_SUCCESS)
        return r;
    VkPushConstantRange push = { VK_SHADER_STAGE_COMPUTE_BIT, 0, 8 };
    VkPipelineLayoutCreateInfo layout = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &o->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push,
    };
    r = RCALL(CreatePipelineLayout, device, &layout, NULL, &o->pipeline_layout);
    if (r != VK_SUCCESS)
        return r;
    /* A non-zero base workgroup needs the pipeline to allow it. */
    bool dispatch_base =
        cfg.api >= VK_API_VERSION_1_1 || has(&device_exts, VK_KHR_DEVICE_GROUP_EXTENSION_NAME);
    VkComputePipelineCreateInfo pipeline = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .flags = dispatch_base ? VK_PIPELINE_CREATE_DISPATCH_BASE_BIT : 0,
      .stage =
         {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = o->shader,
            .pName = "main",
         },
      .layout = o->pipeline_layout,
   };
    r = RCALL(CreateComputePipelines, device, VK_NULL_HANDLE, 1, &pipeline, NULL, &o->pipeline);
    if (r != VK_SUCCESS)
        return r;
    VkDescriptorPoolSize size = { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1 };
    VkDescriptorPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    r = RCALL(CreateDescriptorPool, device, &pool, NULL, &o->descriptor_pool);
    if (r != VK_SUCCESS)
        return r;
    VkDescriptorSetAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = o->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &o->set_layout,
    };
    r = RCALL(AllocateDescriptorSets, device, &alloc, &o->set);
    if (r != VK_SUCCESS)
        return r;
    VkDescriptorBufferInfo buffer = { o->buffer, OFF(S_COMPUTE), COMPUTE_COUNT * 4 };
    VkWriteDescriptorSet write = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = o->set,
        .dstBinding = 0,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = &buffer,
    };
    VCALL(UpdateDescriptorSets, device, 1, &write, 0, NULL);
    return VK_SUCCESS;
}

/* The draws' target, as a framebuffer of rp1 (its first subpass draws). */
static VkResult create_draw_target(objects *o)
{
    VkImageViewCreateInfo view = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .image = o->draw,
        .viewType = VK_IMAGE_VIEW_TYPE_2D,
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
    };
    VkResult r = RCALL(CreateImageView, device, &view, NULL, &o->draw_view);
    if (r != VK_SUCCESS)
        return r;
    return create_rp1_framebuffer(o, o->draw_view, &o->draw_fb);
}

/* The triangles shaders (no vertex input, gl_VertexIndex 0-8) for the
 * first subpass of rp1; the viewport is dynamic, one per draw. */
static VkResult create_draw_pipeline(objects *o)
{
    VkShaderModuleCreateInfo module = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = sizeof triangles_vert_spv,
        .pCode = triangles_vert_spv,
    };
    VkResult r = RCALL(CreateShaderModule, device, &module, NULL, &o->vert);
    if (r != VK_SUCCESS)
        return r;
    module.codeSize = sizeof triangles_frag_spv;
    module.pCode = triangles_frag_spv;
    if ((r = RCALL(CreateShaderModule, device, &module, NULL, &o->frag)))
        return r;
    VkPipelineLayoutCreateInfo layout = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO };
    if ((r = RCALL(CreatePipelineLayout, device, &layout, NULL, &o->draw_layout)))
        return r;

    VkPipelineShaderStageCreateInfo stages[2] = {
        { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
          .stage = VK_SHADER_STAGE_VERTEX_BIT,
          .module = o->vert,
          .pName = "main" },
        { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
          .stage = VK_SHADER_STAGE_FRAGMENT_BIT,
          .module = o->frag,
          .pName = "main" },
    };
    VkPipelineVertexInputStateCreateInfo vertex_input = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
    };
    VkPipelineInputAssemblyStateCreateInfo assembly = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
        .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
    };
    VkRect2D scissor = { { 0, 0 }, { IMG_W, IMG_H } };
    VkPipelineViewportStateCreateInfo viewport = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
        .viewportCount = 1,
        .scissorCount = 1,
        .pScissors = &scissor,
    };
    VkPipelineRasterizationStateCreateInfo raster = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
        .polygonMode = VK_POLYGON_MODE_FILL,
        .cullMode = VK_CULL_MODE_NONE,
        .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
        .lineWidth = 1.0f,
    };
    VkPipelineMultisampleStateCreateInfo multisample = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
        .rasterizationSamples = VK_SAMPLE_COUNT_1_BIT,
    };
    VkPipelineColorBlendAttachmentState blend_att = {
        .colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                          VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT,
    };
    VkPipelineColorBlendStateCreateInfo blend = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &blend_att,
    };
    VkDynamicState dynamic_states[] = { VK_DYNAMIC_STATE_VIEWPORT };
    VkPipelineDynamicStateCreateInfo dynamic = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
        .dynamicStateCount = 1,
        .pDynamicStates = dynamic_states,
    };
    VkGraphicsPipelineCreateInfo pipeline = {
        .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
        .stageCount = 2,
        .pStages = stages,
        .pVertexInputState = &vertex_input,
        .pInputAssemblyState = &assembly,
        .pViewportState = &viewport,
        .pRasterizationState = &raster,
        .pMultisampleState = &multisample,
        .pColorBlendState = &blend,
        .pDynamicState = &dynamic,
        .layout = o->draw_layout,
        .renderPass = o->rp1,
        .subpass = 0,
    };
    return RCALL(CreateGraphicsPipelines, device, VK_NULL_HANDLE, 1, &pipeline, NULL,
                 &o->draw_pipeline);
}

/* The draws' arguments (see DRAW_ARGS): each record draws one of the
 * shader's three triangles, so a draw that read the wrong record, or
 * ignored the count, shows in its viewport. */
static void fill_draw_args(objects *o)
{
    char *base = (char *)o->mapped + OFF(S_INDIRECT);
    VkDrawIndirectCommand draws[3] = { { 3, 1, 0, 0 }, { 3, 1, 3, 0 }, { 3, 1, 6, 0 } };
    /* Triangle 2 (the list's first three indices); triangle 1 (its last
     * three, 0-2, moved by vertexOffset); triangle 0 (3-5 moved back). */
    VkDrawIndexedIndirectCommand indexed[3] = {
        { 3, 1, 0, 0, 0 },
        { 3, 1, 6, 3, 0 },
        { 3, 1, 3, -3, 0 },
    };
    const uint32_t count = 2; /* of the three records: the count buffer is read */
    const uint16_t indices[9] = { 6, 7, 8, 3, 4, 5, 0, 1, 2 };
    memcpy(base + DRAW_ARGS, draws, sizeof draws);
    memcpy(base + INDEXED_ARGS, indexed, sizeof indexed);
    memcpy(base + DRAW_COUNT, &count, sizeof count);
    memcpy(base + INDICES, indices, sizeof indices);
}

/* The indices get a buffer of their own, bound to the probe's memory at
 * INDICES of S_INDIRECT: lavapipe (Mesa 22.3) ignores the offset given to
 * vkCmdBindIndexBuffer in vkCmdDrawIndexedIndirect and its count variants
 * and reads the indices from the start of the buffer. */
static VkResult create_index_buffer(objects *o, uint32_t type)
{
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 9 * sizeof(uint16_t),
        .usage = VK_BUFFER_USAGE_INDEX_BUFFER_BIT,
    };
    VkResult r = RCALL(CreateBuffer, device, &info, NULL, &o->index_buffer);
    if (r != VK_SUCCESS)
        return r;
    VkMemoryRequirements req = { 0 };
    VCALL(GetBufferMemoryRequirements, device, o->index_buffer, &req);
    const VkDeviceSize offset = OFF(S_INDIRECT) + INDICES;
    if (!(req.memoryTypeBits & (1u << type)) || !req.alignment || offset % req.alignment ||
        offset + req.size > OFF(S_INDIRECT + 1))
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    return RCALL(BindBufferMemory, device, o->index_buffer, o->buffer_memory, offset);
}

static VkResult create_objects(objects *o)
{
    VkBufferCreateInfo buffer = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = OFF(S_COUNT),
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
    };
    VkResult r = RCALL(CreateBuffer, device, &buffer, NULL, &o->buffer);
    if (r != VK_SUCCESS)
        return r;
    VkMemoryRequirements req = { 0 };
    VCALL(GetBufferMemoryRequirements, device, o->buffer, &req);
    int type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (type < 0)
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = RCALL(AllocateMemory, device, &alloc, NULL, &o->buffer_memory);
    if (r != VK_SUCCESS)
        return r;
    r = RCALL(BindBufferMemory, device, o->buffer, o->buffer_memory, 0);
    if (r != VK_SUCCESS || (r = create_index_buffer(o, (uint32_t)type)))
        return r;
    void *p = NULL;
    r = RCALL(MapMemory, device, o->buffer_memory, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS)
        return r;
    o->mapped = p;
    /* Distinct words everywhere, so each region's hash says whether it was
    * written. */
    for (uint32_t i = 0; i < OFF(S_COUNT) / 4; i++)
        o->mapped[i] = i * 2654435761u;
    uint32_t *indirect = o->mapped + OFF(S_INDIRECT) / 4;
    indirect[0] = indirect[1] = indirect[2] = 1;
    fill_draw_args(o);

    const VkImageUsageFlags xfer =
        VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    if ((r = create_image(o, &o->src, 0, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
                          xfer | VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT, IMG_W, IMG_H)) ||
        (r = create_image(o, &o->dst, 1, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, xfer,
                          IMG_W, IMG_H)) ||
        (r = create_image(o, &o->ms, 2, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_4_BIT,
                          xfer | VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT, IMG_W, IMG_H)) ||
        (r = create_image(o, &o->depth, 3, VK_FORMAT_D32_SFLOAT, VK_SAMPLE_COUNT_1_BIT,
                          xfer | VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, 16, 16)) ||
        (r = create_image(o, &o->draw, 4, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
                          VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
                          IMG_W, IMG_H)))
        return r;
    if ((r = create_render_passes(o)) || (r = create_pipeline(o)) || (r = create_draw_target(o)) ||
        (r = create_draw_pipeline(o)))
        return r;
    if (features.pipelineStatisticsQuery) {
        VkQueryPoolCreateInfo q = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_PIPELINE_STATISTICS,
            .queryCount = 1,
            .pipelineStatistics = VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT,
        };
        if ((r = RCALL(CreateQueryPool, device, &q, NULL, &o->stats)))
            return r;
    }
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = queue_family,
    };
    if ((r = RCALL(CreateCommandPool, device, &pool, NULL, &o->pool)))
        return r;
    VkCommandBufferAllocateInfo cbs = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = o->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if ((r = RCALL(AllocateCommandBuffers, device, &cbs, &o->primary)))
        return r;
    cbs.commandBufferCount = 2;
    if ((r = RCALL(AllocateCommandBuffers, device, &cbs, o->extra)))
        return r;
    cbs.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
    cbs.commandBufferCount = 1;
    if ((r = RCALL(AllocateCommandBuffers, device, &cbs, &o->secondary)))
        return r;
    VkFenceCreateInfo fence = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    return RCALL(CreateFence, device, &fence, NULL, &o->fence);
}

static void destroy_objects(objects *o)
{
    if (o->pool) {
        VkCommandBuffer all[4] = { o->primary, o->secondary, o->extra[0], o->extra[1] };
        VCALL(FreeCommandBuffers, device, o->pool, 4, all);
        RCALL(ResetCommandPool, device, o->pool, 0);
        VCALL(DestroyCommandPool, device, o->pool, NULL);
    }
    VCALL(DestroyFence, device, o->fence, NULL);
    VCALL(DestroyQueryPool, device, o->stats, NULL);
    VCALL(DestroyPipeline, device, o->pipeline, NULL);
    VCALL(DestroyPipeline, device, o->draw_pipeline, NULL);
    VCALL(DestroyPipelineLayout, device, o->pipeline_layout, NULL);
    VCALL(DestroyPipelineLayout, device, o->draw_layout, NULL);
    VCALL(DestroyDescriptorPool, device, o->descriptor_pool, NULL);
    VCALL(DestroyDescriptorSetLayout, device, o->set_layout, NULL);
    VCALL(DestroyShaderModule, device, o->shader, NULL);
    VCALL(DestroyShaderModule, device, o->vert, NULL);
    VCALL(DestroyShaderModule, device, o->frag, NULL);
    VCALL(DestroyFramebuffer, device, o->fb, NULL);
    VCALL(DestroyFramebuffer, device, o->draw_fb, NULL);
    VCALL(DestroyRenderPass, device, o->rp1, NULL);
    VCALL(DestroyRenderPass, device, o->rp2, NULL);
    VCALL(DestroyRenderPass, device, o->rp2khr, NULL);
    VCALL(DestroyImageView, device, o->src_view, NULL);
    VCALL(DestroyImageView, device, o->draw_view, NULL);
    VkImage images[5] = { o->src, o->dst, o->ms, o->depth, o->draw };
    for (int i = 0; i < 5; i++) {
        VCALL(DestroyImage, device, images[i], NULL);
        VCALL(FreeMemory, device, o->image_memory[i], NULL);
    }
    VCALL(DestroyBuffer, device, o->buffer, NULL);
    VCALL(DestroyBuffer, device, o->index_buffer, NULL);
    if (o->mapped)
        VCALL(UnmapMemory, device, o->buffer_memory);
    VCALL(FreeMemory, device, o->buffer_memory, NULL);
}

/* Everything to everything: the probe's commands are few and order is all
 * it cares about. */
static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier m = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
    };
    VCALL(CmdPipelineBarrier, cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
          VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &m, 0, NULL, 0, NULL);
}

static void label(VkCommandBuffer cb, const char *name, bool begin)
{
    VkDebugUtilsLabelEXT l = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                               .pLabelName = name };
    if (begin)
        VCALL(CmdBeginDebugUtilsLabelEXT, cb, &l);
    else
        VCALL(CmdEndDebugUtilsLabelEXT, cb);
}

static VkClearValue color(float r, float g, float b)
{
    return (VkClearValue){ .color.float32 = { r, g, b, 1.0f } };
}

/* Clears `rect` of the current subpass's attachment. */
static void clear_rect(VkCommandBuffer cb, VkClearValue value, int32_t x, int32_t y, uint32_t w,
                       uint32_t h)
{
    VkClearAttachment att = { VK_IMAGE_ASPECT_COLOR_BIT, 0, value };
    VkClearRect rect = { { { x, y }, { w, h } }, 0, 1 };
    VCALL(CmdClearAttachments, cb, 1, &att, 1, &rect);
}

/* Five render pass instances, each in its own 8-column strip of the
 * render target: clear by load op, then clear-attachments per subpass. */
static void record_render_passes(objects *o, VkCommandBuffer cb)
{
    VkClearValue clear = color(0.2f, 0.4f, 0.6f);
    VkRenderPassBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = o->rp1,
        .framebuffer = o->fb,
        .renderArea = { { 0, 0 }, { 8, IMG_H } },
        .clearValueCount = 1,
        .pClearValues = &clear,
    };
    VkSubpassBeginInfo sub_begin = {
        .sType = VK_STRUCTURE_TYPE_SUBPASS_BEGIN_INFO,
        .contents = VK_SUBPASS_CONTENTS_INLINE,
    };
    VkSubpassEndInfo sub_end = { .sType = VK_STRUCTURE_TYPE_SUBPASS_END_INFO };

    if (o->rp1 && api.CmdBeginRenderPass) {
        VCALL(CmdBeginRenderPass, cb, &begin, VK_SUBPASS_CONTENTS_INLINE);
        clear_rect(cb, color(1, 0, 0), 0, 0, 4, 4);
        VCALL(CmdNextSubpass, cb, VK_SUBPASS_CONTENTS_INLINE);
        clear_rect(cb, color(0, 1, 0), 4, 4, 4, 4);
        VCALL(CmdEndRenderPass, cb);
        barrier(cb);
    }
    begin.renderPass = o->rp2 ? o->rp2 : o->rp1;
    begin.renderArea.offset.x = 8;
    if (begin.renderPass && api.CmdBeginRenderPass2) {
        VCALL(CmdBeginRenderPass2, cb, &begin, &sub_begin);
        bool real = REAL(CmdBeginRenderPass2);
        if (real)
            clear_rect(cb, color(0, 0, 1), 8, 0, 4, 4);
        VCALL(CmdNextSubpass2, cb, &sub_begin, &sub_end);
        if (real)
            clear_rect(cb, color(1, 1, 0), 12, 4, 4, 4);
        VCALL(CmdEndRenderPass2, cb, &sub_end);
        barrier(cb);
    }
    begin.renderPass = o->rp2khr ? o->rp2khr : o->rp1;
    begin.renderArea.offset.x = 16;
    if (begin.renderPass && api.CmdBeginRenderPass2KHR) {
        VCALL(CmdBeginRenderPass2KHR, cb, &begin, &sub_begin);
        bool real = REAL(CmdBeginRenderPass2KHR);
        if (real)
            clear_rect(cb, color(0, 1, 1), 16, 0, 4, 4);
        VCALL(CmdNextSubpass2KHR, cb, &sub_begin, &sub_end);
        if (real)
            clear_rect(cb, color(1, 0, 1), 20, 4, 4, 4);
        VCALL(CmdEndRenderPass2KHR, cb, &sub_end);
        barrier(cb);
    }

    VkRenderingAttachmentInfo att = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
        .imageView = o->src_view,
        .imageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .clearValue = color(0.5f, 0.25f, 0.125f),
    };
    VkRenderingInfo rendering = {
        .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
        .renderArea = { { 24, 0 }, { 8, IMG_H } },
        .layerCount = 1,
        .colorAttachmentCount = 1,
        .pColorAttachments = &att,
    };
    if (api.CmdBeginRendering) {
        VCALL(CmdBeginRendering, cb, &rendering);
        if (REAL(CmdBeginRendering))
            clear_rect(cb, color(0.75f, 0.75f, 0), 26, 2, 4, 4);
        VCALL(CmdEndRendering, cb);
        barrier(cb);
    }
    rendering.renderArea.offset.x = 32;
    if (api.CmdBeginRenderingKHR) {
        VCALL(CmdBeginRenderingKHR, cb, &rendering);
        if (REAL(CmdBeginRenderingKHR))
            clear_rect(cb, color(0, 0.75f, 0.75f), 34, 2, 4, 4);
        VCALL(CmdEndRenderingKHR, cb);
        barrier(cb);
    }
}

/* Draws into viewport `i` of the draw target from here on. */
static void viewport(VkCommandBuffer cb, uint32_t i)
{
    const uint32_t w = IMG_W / N_DRAWS;
    VkViewport v = { (float)(i * w), 0.0f, (float)w, (float)IMG_H, 0.0f, 1.0f };
    VCALL(CmdSetViewport, cb, 0, 1, &v);
}

/* Whether a core vkCmdDraw*IndirectCount may be called: with the feature,
 * or as the layer's hook for a device without the command, which does
 * nothing. */
static bool count_draw_allowed(enum fn_id fn)
{
    return draw_indirect_count || api.absent[fn];
}

/* Every draw command, each into its own viewport of the draw target, in
 * the first subpass of rp1: the target's readback shows which ran, and
 * with what arguments (fill_draw_args). */
static void record_draws(objects *o, VkCommandBuffer cb)
{
    VkClearValue clear = color(0.25f, 0.5f, 0.75f);
    VkRenderPassBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = o->rp1,
        .framebuffer = o->draw_fb,
        .renderArea = { { 0, 0 }, { IMG_W, IMG_H } },
        .clearValueCount = 1,
        .pClearValues = &clear,
    };
    const VkDeviceSize args = OFF(S_INDIRECT) + DRAW_ARGS;
    const VkDeviceSize indexed = OFF(S_INDIRECT) + INDEXED_ARGS;
    const VkDeviceSize count = OFF(S_INDIRECT) + DRAW_COUNT;
    const uint32_t stride = sizeof(VkDrawIndirectCommand);
    const uint32_t indexed_stride = sizeof(VkDrawIndexedIndirectCommand);
    /* More than one draw per vkCmdDraw*Indirect needs multiDrawIndirect. */
    const uint32_t multi = features.multiDrawIndirect ? 2 : 1;

    VCALL(CmdBeginRenderPass, cb, &begin, VK_SUBPASS_CONTENTS_INLINE);
    VCALL(CmdBindPipeline, cb, VK_PIPELINE_BIND_POINT_GRAPHICS, o->draw_pipeline);
    VCALL(CmdBindIndexBuffer, cb, o->index_buffer, 0, VK_INDEX_TYPE_UINT16);
    viewport(cb, 0);
    VCALL(CmdDraw, cb, 9, 1, 0, 0);
    viewport(cb, 1);
    VCALL(CmdDrawIndexed, cb, 6, 1, 3, 0, 0);
    viewport(cb, 2);
    VCALL(CmdDrawIndirect, cb, o->buffer, args, multi, stride);
    viewport(cb, 3);
    VCALL(CmdDrawIndexedIndirect, cb, o->buffer, indexed, multi, indexed_stride);
    /* Up to three records each, of which the count buffer says two. */
    viewport(cb, 4);
    if (count_draw_allowed(FN_CmdDrawIndirectCount))
        VCALL(CmdDrawIndirectCount, cb, o->buffer, args, o->buffer, count, 3, stride);
    viewport(cb, 5);
    if (count_draw_allowed(FN_CmdDrawIndexedIndirectCount))
        VCALL(CmdDrawIndexedIndirectCount, cb, o->buffer, indexed, o->buffer, count, 3,
              indexed_stride);
    viewport(cb, 6);
    VCALL(CmdDrawIndirectCountKHR, cb, o->buffer, args, o->buffer, count, 3, stride);
    viewport(cb, 7);
    VCALL(CmdDrawIndexedIndirectCountKHR, cb, o->buffer, indexed, o->buffer, count, 3,
          indexed_stride);
    /* The probe never enables VK_EXT_mesh_shader (lavapipe has none): these
     * are only ever the layer's hooks in the --absent pass, which must do
     * nothing, so no mesh pipeline is needed. The dispatch's arguments
     * double as a VkDrawMeshTasksIndirectCommandEXT. */
    VCALL(CmdDrawMeshTasksEXT, cb, 1, 1, 1);
    VCALL(CmdDrawMeshTasksIndirectEXT, cb, o->buffer, OFF(S_INDIRECT), 1,
          sizeof(VkDrawMeshTasksIndirectCommandEXT));
    VCALL(CmdDrawMeshTasksIndirectCountEXT, cb, o->buffer, OFF(S_INDIRECT), o->buffer, count, 1,
          sizeof(VkDrawMeshTasksIndirectCommandEXT));
    VCALL(CmdNextSubpass, cb, VK_SUBPASS_CONTENTS_INLINE);
    VCALL(CmdEndRenderPass, cb);
    barrier(cb);
}

static void record_compute(objects *o, VkCommandBuffer cb)
{
    VCALL(CmdBindPipeline, cb, VK_PIPELINE_BIND_POINT_COMPUTE, o->pipeline);
    VCALL(CmdBindDescriptorSets, cb, VK_PIPELINE_BIND_POINT_COMPUTE, o->pipeline_layout, 0, 1,
          &o->set, 0, NULL);
    uint32_t params[2] = { 3, COMPUTE_COUNT };
    VCALL(CmdPushConstants, cb, o->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof params,
          params);
    if (o->stats) {
        VCALL(CmdResetQueryPool, cb, o->stats, 0, 1);
        VCALL(CmdBeginQuery, cb, o->stats, 0, 0);
    }
    /* Workgroup 0 twice, 1 and 2 once each: the result tells which ran. */
    VCALL(CmdDispatch, cb, 1, 1, 1);
    barrier(cb);
    VCALL(CmdDispatchIndirect, cb, o->buffer, OFF(S_INDIRECT));
    barrier(cb);
    VCALL(CmdDispatchBase, cb, 1, 0, 0, 1, 1, 1);
    VCALL(CmdDispatchBaseKHR, cb, 2, 0, 0, 1, 1, 1);
    if (o->stats)
        VCALL(CmdEndQuery, cb, o->stats, 0);
}

static void record_copies(objects *o, VkCommandBuffer cb)
{
    VkBufferCopy bc = { OFF(S_FILL), OFF(S_COPYBUF), 1024 };
    VCALL(CmdCopyBuffer, cb, o->buffer, o->buffer, 1, &bc);
    VkBufferCopy2 bc2 = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_COPY_2,
        .srcOffset = OFF(S_UPDATE),
        .dstOffset = OFF(S_COPYBUF) + 1024,
        .size = 1024,
    };
    VkCopyBufferInfo2 cbi = {
        .sType = VK_STRUCTURE_TYPE_COPY_BUFFER_INFO_2,
        .srcBuffer = o->buffer,
        .dstBuffer = o->buffer,
        .regionCount = 1,
        .pRegions = &bc2,
    };
    VCALL(CmdCopyBuffer2, cb, &cbi);
    bc2.dstOffset += 1024;
    VCALL(CmdCopyBuffer2KHR, cb, &cbi);

    /* The destination image: rows 0-3 image copies, 4-7 blits, 8-11
    * resolves, 12-15 buffer uploads; columns 0-15 the 1.0 command, 16-31
    * the 2 one, 32-47 the 2KHR one. */
    const VkImageSubresourceLayers color_layers = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 };
    VkImageCopy ic = { color_layers, { 0, 0, 0 }, color_layers, { 0, 0, 0 }, { 16, 4, 1 } };
    VCALL(CmdCopyImage, cb, o->src, VK_IMAGE_LAYOUT_GENERAL, o->dst, VK_IMAGE_LAYOUT_GENERAL, 1,
          &ic);
    VkImageCopy2 ic2 = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_COPY_2,
        .srcSubresource = color_layers,
        .srcOffset = { 16, 0, 0 },
        .dstSubresource = color_layers,
        .dstOffset = { 16, 0, 0 },
        .extent = { 16, 4, 1 },
    };
    VkCopyImageInfo2 ici = {
        .sType = VK_STRUCTURE_TYPE_COPY_IMAGE_INFO_2,
        .srcImage = o->src,
        .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .dstImage = o->dst,
        .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .regionCount = 1,
        .pRegions = &ic2,
    };
    VCALL(CmdCopyImage2, cb, &ici);
    ic2.srcOffset.x = ic2.dstOffset.x = 32;
    VCALL(CmdCopyImage2KHR, cb, &ici);

    VkImageBlit blit = {
        color_layers, { { 0, 0, 0 }, { 16, 8, 1 } }, color_layers, { { 0, 4, 0 }, { 16, 8, 1 } }
    };
    VCALL(CmdBlitImage, cb, o->src, VK_IMAGE_LAYOUT_GENERAL, o->dst, VK_IMAGE_LAYOUT_GENERAL, 1,
          &blit, VK_FILTER_NEAREST);
    VkImageBlit2 blit2 = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_BLIT_2,
        .srcSubresource = color_layers,
        .srcOffsets = { { 16, 0, 0 }, { 32, 8, 1 } },
        .dstSubresource = color_layers,
        .dstOffsets = { { 16, 4, 0 }, { 32, 8, 1 } },
    };
    VkBlitImageInfo2 bli = {
        .sType = VK_STRUCTURE_TYPE_BLIT_IMAGE_INFO_2,
        .srcImage = o->src,
        .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .dstImage = o->dst,
        .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .regionCount = 1,
        .pRegions = &blit2,
        .filter = VK_FILTER_NEAREST,
    };
    VCALL(CmdBlitImage2, cb, &bli);
    blit2.srcOffsets[0].x = blit2.dstOffsets[0].x = 32;
    blit2.srcOffsets[1].x = blit2.dstOffsets[1].x = 48;
    VCALL(CmdBlitImage2KHR, cb, &bli);

    VkImageResolve res = { color_layers, { 0, 0, 0 }, color_layers, { 0, 8, 0 }, { 16, 4, 1 } };
    VCALL(CmdResolveImage, cb, o->ms, VK_IMAGE_LAYOUT_GENERAL, o->dst, VK_IMAGE_LAYOUT_GENERAL, 1,
          &res);
    VkImageResolve2 res2 = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_RESOLVE_2,
        .srcSubresource = color_layers,
        .dstSubresource = color_layers,
        .dstOffset = { 16, 8, 0 },
        .extent = { 16, 4, 1 },
    };
    VkResolveImageInfo2 rsi = {
        .sType = VK_STRUCTURE_TYPE_RESOLVE_IMAGE_INFO_2,
        .srcImage = o->ms,
        .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .dstImage = o->dst,
        .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .regionCount = 1,
        .pRegions = &res2,
    };
    VCALL(CmdResolveImage2, cb, &rsi);
    res2.dstOffset.x = 32;
    VCALL(CmdResolveImage2KHR, cb, &rsi);

    VkBufferImageCopy up = { OFF(S_UPLOAD), 0, 0, color_layers, { 0, 12, 0 }, { 16, 4, 1 } };
    VCALL(CmdCopyBufferToImage, cb, o->buffer, o->dst, VK_IMAGE_LAYOUT_GENERAL, 1, &up);
    VkBufferImageCopy2 up2 = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_IMAGE_COPY_2,
        .bufferOffset = OFF(S_UPLOAD) + 256,
        .imageSubresource = color_layers,
        .imageOffset = { 16, 12, 0 },
        .imageExtent = { 16, 4, 1 },
    };
    VkCopyBufferToImageInfo2 upi = {
        .sType = VK_STRUCTURE_TYPE_COPY_BUFFER_TO_IMAGE_INFO_2,
        .srcBuffer = o->buffer,
        .dstImage = o->dst,
        .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .regionCount = 1,
        .pRegions = &up2,
    };
    VCALL(CmdCopyBufferToImage2, cb, &upi);
    up2.bufferOffset += 256;
    up2.imageOffset.x = 32;
    VCALL(CmdCopyBufferToImage2KHR, cb, &upi);
}

static void record_readbacks(objects *o, VkCommandBuffer cb)
{
    const VkImageSubresourceLayers color_layers = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 };
    VkBufferImageCopy whole = { OFF(S_DST), 0, 0, color_layers, { 0, 0, 0 }, { IMG_W, IMG_H, 1 } };
    VCALL(CmdCopyImageToBuffer, cb, o->dst, VK_IMAGE_LAYOUT_GENERAL, o->buffer, 1, &whole);
    whole.bufferOffset = OFF(S_SRC);
    VCALL(CmdCopyImageToBuffer, cb, o->src, VK_IMAGE_LAYOUT_GENERAL, o->buffer, 1, &whole);
    VkBufferImageCopy depth = {
        OFF(S_DEPTH), 0, 0, { VK_IMAGE_ASPECT_DEPTH_BIT, 0, 0, 1 }, { 0, 0, 0 }, { 16, 16, 1 }
    };
    VCALL(CmdCopyImageToBuffer, cb, o->depth, VK_IMAGE_LAYOUT_GENERAL, o->buffer, 1, &depth);
    whole.bufferOffset = OFF(S_DRAW);
    VCALL(CmdCopyImageToBuffer, cb, o->draw, VK_IMAGE_LAYOUT_GENERAL, o->buffer, 1, &whole);

    VkBufferImageCopy2 half = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_IMAGE_COPY_2,
        .bufferOffset = OFF(S_DST2),
        .imageSubresource = color_layers,
        .imageExtent = { IMG_W, IMG_H / 2, 1 },
    };
    VkCopyImageToBufferInfo2 info = {
        .sType = VK_STRUCTURE_TYPE_COPY_IMAGE_TO_BUFFER_INFO_2,
        .srcImage = o->dst,
        .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
        .dstBuffer = o->buffer,
        .regionCount = 1,
        .pRegions = &half,
    };
    VCALL(CmdCopyImageToBuffer2, cb, &info);
    half.bufferOffset = OFF(S_DST2KHR);
    half.imageOffset.y = IMG_H / 2;
    VCALL(CmdCopyImageToBuffer2KHR, cb, &info);
}

/* Global barriers through the two synchronization2 spellings. */
static void barriers2(VkCommandBuffer cb)
{
    VkMemoryBarrier2 m = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
        .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
        .dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        .dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
    };
    VkDependencyInfo dep = {
        .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
        .memoryBarrierCount = 1,
        .pMemoryBarriers = &m,
    };
    VCALL(CmdPipelineBarrier2, cb, &dep);
    VCALL(CmdPipelineBarrier2KHR, cb, &dep);
}

static void record_main(objects *o)
{
    VkCommandBuffer cb = o->primary;
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    RCALL(BeginCommandBuffer, cb, &begin);
    label(cb, "probe", true);

    VkImageMemoryBarrier to_general[5];
    VkImage images[5] = { o->src, o->dst, o->ms, o->depth, o->draw };
    for (int i = 0; i < 5; i++)
        to_general[i] = (VkImageMemoryBarrier){
            .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
            .dstAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
            .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
            .newLayout = VK_IMAGE_LAYOUT_GENERAL,
            .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
            .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
            .image = images[i],
            .subresourceRange = { i == 3 ? VK_IMAGE_ASPECT_DEPTH_BIT : VK_IMAGE_ASPECT_COLOR_BIT, 0,
                                  1, 0, 1 },
        };
    VCALL(CmdPipelineBarrier, cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
          VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, NULL, 0, NULL, 5, to_general);

    VCALL(CmdFillBuffer, cb, o->buffer, OFF(S_FILL), SECTION, 0xa5a5a5a5u);
    uint32_t words[64];
    for (uint32_t i = 0; i < 64; i++)
        words[i] = 0x1000u + i;
    VCALL(CmdUpdateBuffer, cb, o->buffer, OFF(S_UPDATE), sizeof words, words);
    const VkImageSubresourceRange color_range = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 };
    VkClearColorValue a = { .float32 = { 0.1f, 0.2f, 0.3f, 1.0f } };
    VkClearColorValue m = { .float32 = { 0.9f, 0.8f, 0.7f, 1.0f } };
    VCALL(CmdClearColorImage, cb, o->src, VK_IMAGE_LAYOUT_GENERAL, &a, 1, &color_range);
    VCALL(CmdClearColorImage, cb, o->dst, VK_IMAGE_LAYOUT_GENERAL, &a, 1, &color_range);
    VCALL(CmdClearColorImage, cb, o->ms, VK_IMAGE_LAYOUT_GENERAL, &m, 1, &color_range);
    VkClearDepthStencilValue ds = { 0.25f, 0 };
    const VkImageSubresourceRange depth_range = { VK_IMAGE_ASPECT_DEPTH_BIT, 0, 1, 0, 1 };
    VCALL(CmdClearDepthStencilImage, cb, o->depth, VK_IMAGE_LAYOUT_GENERAL, &ds, 1, &depth_range);
    barrier(cb);

    label(cb, "compute", true);
    record_compute(o, cb);
    label(cb, "compute", false);
    barrier(cb);
    barriers2(cb);

    record_render_passes(o, cb);
    record_draws(o, cb);
    record_copies(o, cb);
    barrier(cb);
    record_readbacks(o, cb);

    VkCommandBufferInheritanceInfo inherit = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO
    };
    VkCommandBufferBeginInfo sbegin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .pInheritanceInfo = &inherit,
    };
    if (RCALL(BeginCommandBuffer, o->secondary, &sbegin) == VK_SUCCESS) {
        VCALL(CmdFillBuffer, o->secondary, o->buffer, OFF(S_SECONDARY), SECTION, 0x5ec0da7au);
        RCALL(EndCommandBuffer, o->secondary);
        VCALL(CmdExecuteCommands, cb, 1, &o->secondary);
    }

    VkDebugUtilsLabelEXT insert = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                    .pLabelName = "inserted" };
    VCALL(CmdInsertDebugUtilsLabelEXT, cb, &insert);
    VkDebugMarkerMarkerInfoEXT marker = { .sType = VK_STRUCTURE_TYPE_DEBUG_MARKER_MARKER_INFO_EXT,
                                          .pMarkerName = "marker" };
    VCALL(CmdDebugMarkerBeginEXT, cb, &marker);
    VCALL(CmdDebugMarkerInsertEXT, cb, &marker);
    VCALL(CmdDebugMarkerEndEXT, cb);
    label(cb, "probe", false);
    RCALL(EndCommandBuffer, cb);
}

/* A primary that fills `section`, recorded afresh. */
static bool record_fill(objects *o, VkCommandBuffer cb, enum section section, uint32_t value)
{
    RCALL(ResetCommandBuffer, cb, 0);
    VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    if (RCALL(BeginCommandBuffer, cb, &begin) != VK_SUCCESS)
        return false;
    VCALL(CmdFillBuffer, cb, o->buffer, OFF(section), SECTION, value);
    return RCALL(EndCommandBuffer, cb) == VK_SUCCESS;
}

static void wait_fence(objects *o)
{
    RCALL(WaitForFences, device, 1, &o->fence, VK_TRUE, UINT64_MAX);
    VCALL(DestroyFence, device, o->fence, NULL);
    VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if (RCALL(CreateFence, device, &info, NULL, &o->fence) != VK_SUCCESS)
        o->fence = VK_NULL_HANDLE;
}

static void submit_all(objects *o)
{
    VkDebugUtilsLabelEXT ql = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                .pLabelName = "submit" };
    VCALL(QueueBeginDebugUtilsLabelEXT, o->queue, &ql);
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &o->primary,
    };
    if (RCALL(QueueSubmit, o->queue, 1, &submit, o->fence) == VK_SUCCESS)
        wait_fence(o);
    VCALL(QueueInsertDebugUtilsLabelEXT, o->queue, &ql);

    /* vkQueueSubmit2 and its KHR alias, each on its own primary. */
    VkCommandBufferSubmitInfo cbi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO };
    VkSubmitInfo2 submit2 = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
        .commandBufferInfoCount = 1,
        .pCommandBufferInfos = &cbi,
    };
    if (api.QueueSubmit2 && record_fill(o, o->extra[0], S_SUBMIT2, 0x2222u)) {
        cbi.commandBuffer = o->extra[0];
        if (RCALL(QueueSubmit2, o->queue, 1, &submit2, o->fence) == VK_SUCCESS)
            wait_fence(o);
    }
    if (api.QueueSubmit2KHR && record_fill(o, o->extra[1], S_SUBMIT2KHR, 0x3333u)) {
        cbi.commandBuffer = o->extra[1];
        if (RCALL(QueueSubmit2KHR, o->queue, 1, &submit2, o->fence) == VK_SUCCESS)
            wait_fence(o);
    }
    VCALL(QueueEndDebugUtilsLabelEXT, o->queue);

    /* vkQueueBindSparse binding nothing: valid only on a queue that does
     * sparse binding (lavapipe's does not; the coverage check then leaves
     * the name out, see dispatch_test.sh). */
    if (queue_sparse)
        RCALL(QueueBindSparse, o->queue, 0, NULL, VK_NULL_HANDLE);
    else
        say(notes, "uncallable vkQueueBindSparse");

    /* The probe never enables VK_KHR_swapchain (there is no surface): these
     * are only ever the layer's hooks in the --absent pass, which must do
     * nothing. */
    VkSwapchainCreateInfoKHR sci = { .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR };
    VkSwapchainKHR swapchain = VK_NULL_HANDLE;
    RCALL(CreateSwapchainKHR, device, &sci, NULL, &swapchain);
    VkPresentInfoKHR present = { .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR };
    RCALL(QueuePresentKHR, o->queue, &present);
    VCALL(DestroySwapchainKHR, device, swapchain, NULL);

    RCALL(QueueWaitIdle, o->queue);
    RCALL(DeviceWaitIdle, device);
}

/* A small buffer and image bound through vkBind*Memory2 (`khr`: the KHR
 * aliases), then gone again: the layer follows memory objects. */
static void bind2(bool khr)
{
    const VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 256,
        .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
    };
    const VkImageCreateInfo ii = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .imageType = VK_IMAGE_TYPE_2D,
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .extent = { 4, 4, 1 },
        .mipLevels = 1,
        .arrayLayers = 1,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .tiling = VK_IMAGE_TILING_OPTIMAL,
        .usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT,
    };
    VkBuffer buffer = VK_NULL_HANDLE;
    VkImage image = VK_NULL_HANDLE;
    VkDeviceMemory bmem = VK_NULL_HANDLE, imem = VK_NULL_HANDLE;
    VkMemoryRequirements req = { 0 };
    if (RCALL(CreateBuffer, device, &bi, NULL, &buffer) == VK_SUCCESS) {
        VCALL(GetBufferMemoryRequirements, device, buffer, &req);
        VkMemoryAllocateInfo alloc = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            .allocationSize = req.size,
            .memoryTypeIndex = (uint32_t)memory_type(req.memoryTypeBits, 0),
        };
        if (RCALL(AllocateMemory, device, &alloc, NULL, &bmem) == VK_SUCCESS) {
            const VkBindBufferMemoryInfo bind = { VK_STRUCTURE_TYPE_BIND_BUFFER_MEMORY_INFO, NULL,
                                                  buffer, bmem, 0 };
            if (khr)
                RCALL(BindBufferMemory2KHR, device, 1, &bind);
            else
                RCALL(BindBufferMemory2, device, 1, &bind);
        }
    }
    if (RCALL(CreateImage, device, &ii, NULL, &image) == VK_SUCCESS) {
        VCALL(GetImageMemoryRequirements, device, image, &req);
        VkMemoryAllocateInfo alloc = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            .allocationSize = req.size,
            .memoryTypeIndex = (uint32_t)memory_type(req.memoryTypeBits, 0),
        };
        if (RCALL(AllocateMemory, device, &alloc, NULL, &imem) == VK_SUCCESS) {
            const VkBindImageMemoryInfo bind = { VK_STRUCTURE_TYPE_BIND_IMAGE_MEMORY_INFO, NULL,
                                                 image, imem, 0 };
            if (khr)
                RCALL(BindImageMemory2KHR, device, 1, &bind);
            else
                RCALL(BindImageMemory2, device, 1, &bind);
        }
    }
    VCALL(DestroyImage, device, image, NULL);
    VCALL(FreeMemory, device, imem, NULL);
    VCALL(DestroyBuffer, device, buffer, NULL);
    VCALL(FreeMemory, device, bmem, NULL);
}

/* Semaphores: a binary one made and destroyed; where the device has
 * timeline semaphores (core at 1.3, VK_KHR_timeline_semaphore at 1.0), one
 * signalled by the host and waited for through both forms of the calls:
 * the layer follows what signals what (flows). */
static void semaphores(void)
{
    const VkSemaphoreCreateInfo binary = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO };
    VkSemaphore s = VK_NULL_HANDLE;
    if (RCALL(CreateSemaphore, device, &binary, NULL, &s) == VK_SUCCESS)
        VCALL(DestroySemaphore, device, s, NULL);
    if (cfg.api < VK_API_VERSION_1_3 &&
        !has(&device_exts, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME))
        return;
    const VkSemaphoreTypeCreateInfo type = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
    };
    const VkSemaphoreCreateInfo info = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                         .pNext = &type };
    s = VK_NULL_HANDLE;
    if (RCALL(CreateSemaphore, device, &info, NULL, &s) != VK_SUCCESS)
        return;
    for (uint64_t v = 1; v <= 2; v++) {
        const VkSemaphoreSignalInfo signal = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                               .semaphore = s,
                                               .value = v };
        const VkSemaphoreWaitInfo wait = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                           .semaphoreCount = 1,
                                           .pSemaphores = &s,
                                           .pValues = &v };
        const uint64_t second = 1000000000ull;
        if (v == 1) {
            RCALL(SignalSemaphore, device, &signal);
            RCALL(WaitSemaphores, device, &wait, second);
        } else {
            RCALL(SignalSemaphoreKHR, device, &signal);
            RCALL(WaitSemaphoresKHR, device, &wait, second);
        }
    }
    VCALL(DestroySemaphore, device, s, NULL);
}

static bool run_work(effects *fx)
{
    objects o;
    memset(&o, 0, sizeof o);
    memset(fx, 0, sizeof *fx);
    VCALL(GetDeviceQueue, device, queue_family, 0, &o.queue);
    VkDeviceQueueInfo2 qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_INFO_2,
        .queueFamilyIndex = queue_family,
    };
    VkQueue q2 = VK_NULL_HANDLE;
    VCALL(GetDeviceQueue2, device, &qi, &q2);
    fx->queue2_same = q2 == VK_NULL_HANDLE ? -1 : q2 == o.queue;
    if (!o.queue) {
        fail("no queue");
        return false;
    }
    VkResult r = create_objects(&o);
    if (r == VK_SUCCESS) {
        VkDebugUtilsObjectNameInfoEXT name = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
            .objectType = VK_OBJECT_TYPE_BUFFER,
            .objectHandle = (uint64_t)o.buffer,
            .pObjectName = "probe buffer",
        };
        RCALL(SetDebugUtilsObjectNameEXT, device, &name);
        VkDebugMarkerObjectNameInfoEXT marker_name = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_MARKER_OBJECT_NAME_INFO_EXT,
            .objectType = VK_DEBUG_REPORT_OBJECT_TYPE_BUFFER_EXT,
            .object = (uint64_t)o.buffer,
            .pObjectName = "probe buffer",
        };
        RCALL(DebugMarkerSetObjectNameEXT, device, &marker_name);
        bind2(false);
        bind2(true);
        semaphores();
        record_main(&o);
        submit_all(&o);
        for (int s = 0; s < S_COUNT; s++)
            fx->hash[s] = fnv1a((const char *)o.mapped + OFF(s), SECTION);
        if (o.stats) {
            uint64_t value = 0;
            r = RCALL(GetQueryPoolResults, device, o.stats, 0, 1, sizeof value, &value,
                      sizeof value, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
            fx->have_invocations = r == VK_SUCCESS;
            fx->invocations = value;
        }
    } else {
        fail("creating the probe's objects: %s", result_name(r));
    }
    destroy_objects(&o);
    return r == VK_SUCCESS;
}

static void print_effects(FILE *f, const effects *fx)
{
    for (int s = 0; s < S_COUNT; s++)
        say(f, "effect %s %08" PRIx32, section_names[s], fx->hash[s]);
    if (fx->have_invocations)
        say(f, "effect compute-invocations %" PRIu64, fx->invocations);
    say(f, "effect get-device-queue2 %d", fx->queue2_same);
}

static bool run_pass(enum lookup lookup, effects *fx)
{
    pass = lookup;
    FILE *f = pass_file();
    say(f, "pass %s", lookup_names[lookup]);
    if (!create_device())
        return false;
    PFN_vkGetDeviceProcAddr gdpa =
        (PFN_vkGetDeviceProcAddr)top_gipa(instance, "vkGetDeviceProcAddr");
    say(f, "lookup vkGetDeviceProcAddr through gipa %d", gdpa != NULL);
    say(notes, "called gipa vkGetDeviceProcAddr");
    if (gdpa && lookup != LOOKUP_GIPA) {
        /* The function's answer about itself is the one to use from here. */
        gdpa = (PFN_vkGetDeviceProcAddr)gdpa(device, "vkGetDeviceProcAddr");
        say(f, "lookup vkGetDeviceProcAddr through gdpa %d", gdpa != NULL);
        say(notes, "called gdpa vkGetDeviceProcAddr");
    }
    if (!gdpa) {
        fail("no vkGetDeviceProcAddr");
        return false;
    }
    if (lookup == LOOKUP_GIPA)
        record_lookups(gdpa);
    resolve(gdpa);
    bool ok = run_work(fx);
    print_effects(f, fx);
    VCALL(DestroyDevice, device, NULL);
    device = VK_NULL_HANDLE;
    return ok;
}

/* ---- main -------------------------------------------------------------- */

static void add_withheld(const char *list)
{
    if (strcmp(list, "optional") == 0) {
        for (int i = 0; i < FN_COUNT; i++) {
            if (fn_info[i].since != 10) {
                withheld = realloc(withheld, (nwithheld + 1) * sizeof *withheld);
                withheld[nwithheld++] = strdup(fn_info[i].name);
            }
        }
        return;
    }
    char *copy = strdup(list);
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        withheld = realloc(withheld, (nwithheld + 1) * sizeof *withheld);
        withheld[nwithheld++] = strdup(tok);
    }
    free(copy);
}

static int usage(void)
{
    fprintf(stderr, "usage: dispatch_probe --out FILE [--notes FILE] [--layer LIBRARY] "
                    "[--absent] [--withhold NAME,...|optional] 1.0|1.3[+utils][+inst][+dev]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *out_path = NULL, *notes_path = NULL, *layer = NULL, *config = NULL;
    bool absent = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else if (strcmp(argv[i], "--notes") == 0 && i + 1 < argc)
            notes_path = argv[++i];
        else if (strcmp(argv[i], "--layer") == 0 && i + 1 < argc)
            layer = argv[++i];
        else if (strcmp(argv[i], "--withhold") == 0 && i + 1 < argc)
            add_withheld(argv[++i]);
        else if (strcmp(argv[i], "--absent") == 0)
            absent = true;
        else if (!config && argv[i][0] != '-')
            config = argv[i];
        else
            return usage();
    }
    if (!out_path || !config || !parse_config(config) || (absent && !layer))
        return usage();
    out = fopen(out_path, "w");
    notes = notes_path ? fopen(notes_path, "w") : NULL;
    if (!out || (notes_path && !notes)) {
        perror("dispatch_probe: opening output");
        return 2;
    }
    top_gipa = bottom_gipa;
    if (layer && !load_layer(layer))
        return 1;
    say(out, "config %s", cfg.text);

    effects by_gdpa, fx;
    if (create_instance()) {
        if (query_instance()) {
            if (run_pass(LOOKUP_GIPA, &fx) && run_pass(LOOKUP_GDPA, &by_gdpa) && absent &&
                run_pass(LOOKUP_ABSENT, &fx)) {
                if (memcmp(fx.hash, by_gdpa.hash, sizeof fx.hash) != 0 ||
                    fx.invocations != by_gdpa.invocations)
                    fail("calling the layer's hooks for commands the device lacks changed "
                         "what the GPU work did");
            }
        }
        PFN_vkDestroyInstance destroy = (PFN_vkDestroyInstance)instance_fn("vkDestroyInstance");
        if (destroy)
            destroy(instance, NULL);
        else
            fail("no vkDestroyInstance");
    }
    say(out, "end");
    fclose(out);
    if (notes)
        fclose(notes);
    return failures ? 1 : 0;
}
