/* SPDX-License-Identifier: MIT */
/* settings_probe — a Vulkan client for settings_test.sh: settings through
 * VkLayerSettingsCreateInfoEXT, and VK_EXT_tooling_info.
 *
 *   settings_probe [--set KEY=TYPE:VALUE]... [--other-layer] [--second KEY=TYPE:VALUE]
 *                  [--device] [--tools [--lenient]]
 *
 * Creates an instance through whatever layers the environment enables, with
 * a VkLayerSettingsCreateInfoEXT holding each --set for
 * VK_LAYER_GPUTRACE_timeline (TYPE: bool, i32, u32, i64, u64, f32, f64,
 * str). --other-layer adds the same settings for another layer's name
 * first, which the layer must ignore. --second creates a second instance
 * with that setting meanwhile. --device creates and destroys a device on the
 * first physical device (where the layer's session begins). --tools checks
 * vkGetPhysicalDeviceToolProperties and its EXT alias (count, fill,
 * VK_INCOMPLETE) and prints one line per tool and entry point (core, ext):
 *   core|ext tool NAME|VERSION|PURPOSES|LAYER
 * then "core|ext tools N" and "core|ext ours N" (our entries). --lenient
 * skips the check with room for none, which a layer above may get wrong.
 *
 * Exit 0 when every check passed, 1 otherwise (message on stderr), 2 on bad
 * arguments.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

#include "layer/layer_settings_ext.h"

#define LAYER_NAME   "VK_LAYER_GPUTRACE_timeline"
#define MAX_SETTINGS 32

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "settings_probe: %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            failures++;                                                     \
        }                                                                   \
    } while (0)

/* One value of any type, and what points at it. */
typedef struct value value;
struct value {
    union {
        VkBool32 b;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f32;
        double f64;
        const char *str;
    } v;
};

typedef struct settings settings;
struct settings {
    uint32_t n;
    VkLayerSettingEXT s[MAX_SETTINGS];
    value values[MAX_SETTINGS];
};

/* KEY=TYPE:VALUE into the next setting for `layer`; false if malformed. */
static bool parse_setting(settings *set, const char *layer, char *arg)
{
    char *eq = strchr(arg, '='), *colon = eq ? strchr(eq + 1, ':') : NULL;
    if (!eq || !colon || set->n == MAX_SETTINGS)
        return false;
    *eq = *colon = '\0';
    const char *type = eq + 1, *text = colon + 1;
    value *val = &set->values[set->n];
    VkLayerSettingEXT *s = &set->s[set->n];
    *s = (VkLayerSettingEXT){
        .pLayerName = layer, .pSettingName = arg, .valueCount = 1, .pValues = &val->v
    };
    if (strcmp(type, "bool") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_BOOL32_EXT;
        val->v.b = strtoul(text, NULL, 0) ? VK_TRUE : VK_FALSE;
    } else if (strcmp(type, "i32") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_INT32_EXT;
        val->v.i32 = (int32_t)strtol(text, NULL, 0);
    } else if (strcmp(type, "u32") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_UINT32_EXT;
        val->v.u32 = (uint32_t)strtoul(text, NULL, 0);
    } else if (strcmp(type, "i64") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_INT64_EXT;
        val->v.i64 = strtoll(text, NULL, 0);
    } else if (strcmp(type, "u64") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_UINT64_EXT;
        val->v.u64 = strtoull(text, NULL, 0);
    } else if (strcmp(type, "f32") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_FLOAT32_EXT;
        val->v.f32 = strtof(text, NULL);
    } else if (strcmp(type, "f64") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_FLOAT64_EXT;
        val->v.f64 = strtod(text, NULL);
    } else if (strcmp(type, "str") == 0) {
        s->type = VK_LAYER_SETTING_TYPE_STRING_EXT;
        val->v.str = text;
    } else {
        return false;
    }
    set->n++;
    return true;
}

static VkInstance create_instance(const settings *set)
{
    VkLayerSettingsCreateInfoEXT layer_settings = {
        .sType = VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT,
        .settingCount = set->n,
        .pSettings = set->s,
    };
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "settings_probe",
        .apiVersion = VK_API_VERSION_1_3,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = set->n ? &layer_settings : NULL,
        .pApplicationInfo = &app,
    };
    VkInstance instance = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&info, NULL, &instance);
    CHECK(r == VK_SUCCESS, "vkCreateInstance: %d", r);
    return r == VK_SUCCESS ? instance : VK_NULL_HANDLE;
}

static void create_device(VkPhysicalDevice pd)
{
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = 0,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
    };
    VkDevice device;
    VkResult r = vkCreateDevice(pd, &info, NULL, &device);
    CHECK(r == VK_SUCCESS, "vkCreateDevice: %d", r);
    if (r == VK_SUCCESS)
        vkDestroyDevice(device, NULL);
}

#define MAX_TOOLS 16

static void init_tools(VkPhysicalDeviceToolProperties *tools, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        memset(&tools[i], 0xab, sizeof tools[i]);
        tools[i].sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES;
        tools[i].pNext = NULL;
    }
}

/* The count/fill/incomplete idiom through one entry point; prints the list
 * of the first one checked. */
static void check_tools(VkInstance instance, VkPhysicalDevice pd, const char *name, const char *tag,
                        bool strict)
{
    PFN_vkGetPhysicalDeviceToolProperties fn =
        (PFN_vkGetPhysicalDeviceToolProperties)vkGetInstanceProcAddr(instance, name);
    CHECK(fn, "%s: not found", name);
    if (!fn)
        return;
    uint32_t count = 0;
    VkResult r = fn(pd, &count, NULL);
    CHECK(r == VK_SUCCESS && count <= MAX_TOOLS, "%s count: %d, %u", name, r, count);
    if (r != VK_SUCCESS || count > MAX_TOOLS)
        return;
    if (count == 0) {
        printf("%s tools 0\n%s ours 0\n", tag, tag);
        return;
    }

    VkPhysicalDeviceToolProperties tools[MAX_TOOLS];
    init_tools(tools, MAX_TOOLS);
    uint32_t filled = count;
    r = fn(pd, &filled, tools);
    CHECK(r == VK_SUCCESS && filled == count, "%s fill: %d, %u of %u", name, r, filled, count);
    int ours = 0;
    for (uint32_t i = 0; i < filled; i++) {
        const VkPhysicalDeviceToolProperties *t = &tools[i];
        CHECK(memchr(t->name, '\0', sizeof t->name) && memchr(t->layer, '\0', sizeof t->layer) &&
                  memchr(t->version, '\0', sizeof t->version) &&
                  memchr(t->description, '\0', sizeof t->description),
              "%s: tool %u has an unterminated string", name, i);
        printf("%s tool %.*s|%.*s|0x%x|%.*s\n", tag, (int)sizeof t->name, t->name,
               (int)sizeof t->version, t->version, (unsigned)t->purposes, (int)sizeof t->layer,
               t->layer);
        if (strncmp(t->layer, LAYER_NAME, sizeof t->layer) == 0) {
            ours++;
            CHECK(strcmp(t->name, "gputrace timeline") == 0, "our name: %s", t->name);
            CHECK(t->purposes == (VK_TOOL_PURPOSE_TRACING_BIT | VK_TOOL_PURPOSE_PROFILING_BIT),
                  "our purposes: 0x%x", (unsigned)t->purposes);
            CHECK(t->version[0] && t->description[0], "our version or description is empty");
            CHECK(t->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES && !t->pNext,
                  "our sType/pNext changed");
        }
    }
    printf("%s tools %u\n", tag, filled);

    /* One short: incomplete, and no more written than there was room for. */
    if (count > 1) {
        init_tools(tools, MAX_TOOLS);
        filled = count - 1;
        r = fn(pd, &filled, tools);
        CHECK(r == VK_INCOMPLETE && filled == count - 1, "%s short by one: %d, %u", name, r,
              filled);
        unsigned char untouched[sizeof tools[0]];
        VkPhysicalDeviceToolProperties probe;
        init_tools(&probe, 1);
        memcpy(untouched, &probe, sizeof untouched);
        CHECK(memcmp(&tools[count - 1], untouched, sizeof untouched) == 0,
              "%s wrote past the room it was given", name);
    }
    /* Room for none (Debian 12's validation layer answers VK_SUCCESS and a
     * count of 1 here, above us: --lenient). */
    filled = 0;
    r = fn(pd, &filled, tools);
    CHECK(!strict || (r == VK_INCOMPLETE && filled == 0), "%s with room for none: %d, %u", name, r,
          filled);
    /* Room to spare: the count stays the number written. */
    filled = MAX_TOOLS;
    r = fn(pd, &filled, tools);
    CHECK(r == VK_SUCCESS && filled == count, "%s with room to spare: %d, %u", name, r, filled);
    printf("%s ours %d\n", tag, ours);
}

int main(int argc, char **argv)
{
    static settings set, second;
    bool other_layer = false, device = false, tools = false, want_second = false, lenient = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            if (!parse_setting(&set, LAYER_NAME, argv[++i]))
                return 2;
        } else if (strcmp(argv[i], "--second") == 0 && i + 1 < argc) {
            if (!parse_setting(&second, LAYER_NAME, argv[++i]))
                return 2;
            want_second = true;
        } else if (strcmp(argv[i], "--other-layer") == 0) {
            other_layer = true;
        } else if (strcmp(argv[i], "--device") == 0) {
            device = true;
        } else if (strcmp(argv[i], "--tools") == 0) {
            tools = true;
        } else if (strcmp(argv[i], "--lenient") == 0) {
            lenient = true;
        } else {
            fprintf(stderr, "settings_probe: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (other_layer) {
        /* The same settings for another layer first: not ours to read. */
        uint32_t n = set.n;
        if (2 * n > MAX_SETTINGS)
            return 2;
        memmove(&set.s[n], &set.s[0], n * sizeof set.s[0]);
        for (uint32_t i = 0; i < n; i++) {
            set.s[i] = set.s[n + i];
            set.s[i].pLayerName = "VK_LAYER_OTHER_vendor_layer";
        }
        set.n = 2 * n;
    }

    VkInstance instance = create_instance(&set);
    if (!instance)
        return 1;
    VkInstance later = want_second ? create_instance(&second) : VK_NULL_HANDLE;
    VkPhysicalDevice pd;
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &pd);
    CHECK((r == VK_SUCCESS || r == VK_INCOMPLETE) && n == 1, "no physical device");
    if (n == 1) {
        if (device)
            create_device(pd);
        if (tools) {
            check_tools(instance, pd, "vkGetPhysicalDeviceToolProperties", "core", !lenient);
            check_tools(instance, pd, "vkGetPhysicalDeviceToolPropertiesEXT", "ext", !lenient);
        }
    }
    if (later)
        vkDestroyInstance(later, NULL);
    vkDestroyInstance(instance, NULL);
    if (failures == 0)
        printf("settings_probe: ok\n");
    return failures ? 1 : 0;
}
