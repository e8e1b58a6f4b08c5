/* SPDX-License-Identifier: MIT */
/* settings.c — see settings.h. */
#include "layer/settings.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the settings file: parsing ----------------------------------------- */

static void __attribute__((format(printf, 2, 3)))
add_problem(gt_settings_file *file, const char *fmt, ...)
{
    if (file->problem_count < GT_SETTINGS_MAX_PROBLEMS) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(file->problems[file->problem_count], GT_SETTINGS_PROBLEM_SIZE, fmt, ap);
        va_end(ap);
    }
    file->problem_count++;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r';
}

/* Copies [s, s + n) into the pool as a string; UINT32_MAX if it is full. */
static uint32_t pool_add(gt_settings_file *file, const char *s, size_t n)
{
    if (n >= sizeof file->pool - file->pool_used)
        return UINT32_MAX;
    uint32_t at = file->pool_used;
    memcpy(file->pool + at, s, n);
    file->pool[at + n] = '\0';
    file->pool_used += (uint32_t)n + 1;
    return at;
}

static void store(gt_settings_file *file, const char *key, size_t key_len, const char *value,
                  size_t value_len, uint32_t line)
{
    gt_settings_entry *entry = NULL;
    for (uint32_t i = 0; i < file->count; i++) {
        const char *k = file->pool + file->entries[i].key;
        if (strlen(k) == key_len && memcmp(k, key, key_len) == 0)
            entry = &file->entries[i];
    }
    if (!entry && file->count == GT_SETTINGS_MAX_ENTRIES) {
        add_problem(file, "line %" PRIu32 ": more than %d settings; ignored", line,
                    GT_SETTINGS_MAX_ENTRIES);
        return;
    }
    uint32_t k = entry ? entry->key : pool_add(file, key, key_len);
    uint32_t v = k == UINT32_MAX ? UINT32_MAX : pool_add(file, value, value_len);
    if (v == UINT32_MAX) {
        add_problem(file, "line %" PRIu32 ": settings larger than %d bytes; ignored", line,
                    GT_SETTINGS_POOL_SIZE);
        return;
    }
    if (!entry)
        entry = &file->entries[file->count++];
    *entry = (gt_settings_entry){ .key = k, .value = v, .line = line };
}

/* One line of ours, without its newline: "gputrace_timeline.<key> = value"
 * with the prefix already matched at `s`. */
static void parse_ours(gt_settings_file *file, const char *s, const char *end, uint32_t line)
{
    const char *eq = memchr(s, '=', (size_t)(end - s));
    const char *hash = memchr(s, '#', (size_t)(end - s));
    if (!eq || (hash && hash < eq)) {
        add_problem(file, "line %" PRIu32 ": no '=' after the key; ignored", line);
        return;
    }
    const char *key = s + strlen(GT_SETTINGS_FILE_PREFIX), *key_end = eq;
    while (key_end > key && is_blank(key_end[-1]))
        key_end--;
    if (key_end == key) {
        add_problem(file, "line %" PRIu32 ": no key after \"%s\"; ignored", line,
                    GT_SETTINGS_FILE_PREFIX);
        return;
    }
    const char *v = eq + 1;
    while (v < end && is_blank(*v))
        v++;
    const char *v_end;
    if (v < end && *v == '"') {
        /* Quotes keep '#' and surrounding blanks in a value; no escapes. */
        v++;
        v_end = memchr(v, '"', (size_t)(end - v));
        if (!v_end) {
            add_problem(file, "line %" PRIu32 ": no closing quote; ignored", line);
            return;
        }
        const char *rest = v_end + 1;
        while (rest < end && is_blank(*rest))
            rest++;
        if (rest < end && *rest != '#') {
            add_problem(file, "line %" PRIu32 ": text after the closing quote; ignored", line);
            return;
        }
    } else {
        v_end = memchr(v, '#', (size_t)(end - v));
        if (!v_end)
            v_end = end;
        while (v_end > v && is_blank(v_end[-1]))
            v_end--;
    }
    if (memchr(key, '\0', (size_t)(key_end - key)) || memchr(v, '\0', (size_t)(v_end - v))) {
        add_problem(file, "line %" PRIu32 ": a NUL byte; ignored", line);
        return;
    }
    store(file, key, (size_t)(key_end - key), v, (size_t)(v_end - v), line);
}

void gt_settings_parse(gt_settings_file *file, const char *text, size_t len)
{
    const size_t prefix_len = strlen(GT_SETTINGS_FILE_PREFIX);
    const char *p = text, *end = text + len;
    uint32_t line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        line++;
        const char *s = p;
        p = nl ? nl + 1 : end;
        while (s < line_end && is_blank(*s))
            s++;
        /* Other layers' lines and comments are none of our business. */
        if ((size_t)(line_end - s) < prefix_len || memcmp(s, GT_SETTINGS_FILE_PREFIX, prefix_len))
            continue;
        if (line_end - s > GT_SETTINGS_LINE_MAX) {
            add_problem(file, "line %" PRIu32 ": longer than %d bytes; ignored", line,
                        GT_SETTINGS_LINE_MAX);
            continue;
        }
        parse_ours(file, s, line_end, line);
    }
}

const char *gt_settings_file_find(const gt_settings_file *file, const char *key, uint32_t *line)
{
    if (!file)
        return NULL;
    for (uint32_t i = 0; i < file->count; i++) {
        if (strcmp(file->pool + file->entries[i].key, key) == 0) {
            if (line)
                *line = file->entries[i].line;
            return file->pool + file->entries[i].value;
        }
    }
    return NULL;
}

/* ---- the settings file: finding and reading ---------------------------- */

static bool is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool path_join(char *path, size_t size, const char *dir, const char *tail)
{
    int n = snprintf(path, size, "%s%s", dir, tail);
    return n > 0 && (size_t)n < size;
}

bool gt_settings_locate(char *path, size_t size)
{
    /* Where Vulkan Configurator writes it. */
    const char *data = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    bool named = false;
    if (data && *data)
        named = path_join(path, size, data, "/vulkan/settings.d/" GT_SETTINGS_FILE_NAME);
    else if (home && *home)
        named =
            path_join(path, size, home, "/.local/share/vulkan/settings.d/" GT_SETTINGS_FILE_NAME);
    if (named && is_regular(path))
        return true;

    /* An existing VK_LAYER_SETTINGS_PATH is the choice, even if the
     * directory it names holds no file. */
    const char *env = getenv("VK_LAYER_SETTINGS_PATH");
    struct stat st;
    if (env && *env && stat(env, &st) == 0)
        return path_join(path, size, env, S_ISDIR(st.st_mode) ? "/" GT_SETTINGS_FILE_NAME : "");

    char cwd[GT_SETTINGS_PATH_SIZE];
    if (!getcwd(cwd, sizeof cwd))
        return false;
    return path_join(path, size, cwd, "/" GT_SETTINGS_FILE_NAME);
}

static pthread_once_t file_once = PTHREAD_ONCE_INIT;
static gt_settings_file file_state;

/* Reads the whole file (bounded) and parses it. */
static void read_file(gt_settings_file *file, const char *path)
{
    /* O_NONBLOCK: a FIFO of that name must not stall the application. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            add_problem(file, "cannot open it (%s); ignored", strerror(errno));
        return;
    }
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        add_problem(file, "not a regular file; ignored");
    } else if ((uint64_t)st.st_size > GT_SETTINGS_FILE_MAX) {
        add_problem(file, "larger than %u bytes; ignored", GT_SETTINGS_FILE_MAX);
    } else if ((text = malloc((size_t)st.st_size + 1)) != NULL) {
        size_t len = 0;
        while (len < (size_t)st.st_size) {
            ssize_t n = read(fd, text + len, (size_t)st.st_size - len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            len += (size_t)n;
        }
        snprintf(file->path, sizeof file->path, "%s", path);
        gt_settings_parse(file, text, len);
        free(text);
    }
    close(fd);
}

static void file_init(void)
{
    char path[GT_SETTINGS_PATH_SIZE];
    if (!gt_settings_locate(path, sizeof path))
        return;
    read_file(&file_state, path);
    /* A problem before parsing still needs the path to be reported. */
    if (!file_state.path[0] && file_state.problem_count)
        snprintf(file_state.path, sizeof file_state.path, "%s", path);
}

const gt_settings_file *gt_settings_file_get(void)
{
    pthread_once(&file_once, file_init);
    return &file_state;
}

/* ---- lookup --------------------------------------------------------------- */

static const VkLayerSettingEXT *api_find(const void *pnext, const char *key)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        if (s->sType != VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT)
            continue;
        const VkLayerSettingsCreateInfoEXT *info = (const VkLayerSettingsCreateInfoEXT *)s;
        for (uint32_t i = 0; info->pSettings && i < info->settingCount; i++) {
            const VkLayerSettingEXT *setting = &info->pSettings[i];
            if (setting->pLayerName && setting->pSettingName &&
                strcmp(setting->pLayerName, GT_SETTINGS_LAYER_NAME) == 0 &&
                strcmp(setting->pSettingName, key) == 0)
                return setting;
        }
    }
    return NULL;
}

const char *gt_settings_api_name(const void *pnext, uint32_t index)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        if (s->sType != VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT)
            continue;
        const VkLayerSettingsCreateInfoEXT *info = (const VkLayerSettingsCreateInfoEXT *)s;
        for (uint32_t i = 0; info->pSettings && i < info->settingCount; i++) {
            const VkLayerSettingEXT *setting = &info->pSettings[i];
            if (!setting->pLayerName || strcmp(setting->pLayerName, GT_SETTINGS_LAYER_NAME))
                continue;
            if (index-- == 0)
                return setting->pSettingName ? setting->pSettingName : "(null)";
        }
    }
    return NULL;
}

/* A floating-point value as the integer it holds, or as itself (which the
 * number parsers then refuse). The range test comes first, so the cast is
 * defined; no libm (the layer does not link it). */
static void render_double(char *text, size_t size, double d)
{
    if (isfinite(d) && d >= 0 && d < 18446744073709551616.0 && d == (double)(uint64_t)d)
        snprintf(text, size, "%.0f", d);
    else
        snprintf(text, size, "%g", d);
}

/* The API's first value as text, for the kind of setting asked for. */
static void api_value(const VkLayerSettingEXT *setting, gt_setting_kind kind, gt_setting *out)
{
    const void *v = setting->pValues;
    if (!v || setting->valueCount < 1) {
        out->problem = "no value";
        return;
    }
    bool number = kind != GT_SETTING_TEXT;
    char *t = out->text;
    size_t n = sizeof out->text;
    switch (setting->type) {
    case VK_LAYER_SETTING_TYPE_STRING_EXT:
        out->value = *(const char *const *)v;
        if (!out->value)
            out->problem = "a NULL string";
        return;
    case VK_LAYER_SETTING_TYPE_BOOL32_EXT:
        if (kind == GT_SETTING_BOOL)
            snprintf(t, n, "%d", *(const VkBool32 *)v ? 1 : 0);
        break;
    case VK_LAYER_SETTING_TYPE_INT32_EXT:
        if (number)
            snprintf(t, n, "%" PRId32, *(const int32_t *)v);
        break;
    case VK_LAYER_SETTING_TYPE_UINT32_EXT:
        if (number)
            snprintf(t, n, "%" PRIu32, *(const uint32_t *)v);
        break;
    case VK_LAYER_SETTING_TYPE_INT64_EXT:
        if (number)
            snprintf(t, n, "%" PRId64, *(const int64_t *)v);
        break;
    case VK_LAYER_SETTING_TYPE_UINT64_EXT:
        if (number)
            snprintf(t, n, "%" PRIu64, *(const uint64_t *)v);
        break;
    case VK_LAYER_SETTING_TYPE_FLOAT32_EXT:
        if (kind == GT_SETTING_NUMBER)
            render_double(t, n, *(const float *)v);
        break;
    case VK_LAYER_SETTING_TYPE_FLOAT64_EXT:
        if (kind == GT_SETTING_NUMBER)
            render_double(t, n, *(const double *)v);
        break;
    default:
        out->problem = "an unknown VkLayerSettingTypeEXT";
        return;
    }
    if (t[0])
        out->value = t;
    else
        out->problem = kind == GT_SETTING_TEXT ? "not of type VK_LAYER_SETTING_TYPE_STRING_EXT"
                                               : "of a type this setting cannot take";
}

void gt_settings_lookup(const char *env_name, gt_setting_kind kind, const void *instance_pnext,
                        const gt_settings_file *file, gt_setting *out)
{
    memset(out, 0, sizeof *out);
    const size_t env_prefix_len = strlen(GT_SETTINGS_ENV_PREFIX);
    const char *suffix = strncmp(env_name, GT_SETTINGS_ENV_PREFIX, env_prefix_len) == 0
                             ? env_name + env_prefix_len
                             : env_name;
    char key[64];
    size_t i;
    for (i = 0; suffix[i] && i < sizeof key - 1; i++)
        key[i] = (char)(suffix[i] >= 'A' && suffix[i] <= 'Z' ? suffix[i] - 'A' + 'a' : suffix[i]);
    key[i] = '\0';

    /* 1. The environment: ours, then the Khronos form. */
    const char *v = getenv(env_name);
    if (v && *v) {
        out->source = GT_SETTING_ENV;
        out->value = v;
        snprintf(out->name, sizeof out->name, "%s", env_name);
        return;
    }
    snprintf(out->name, sizeof out->name, "%s%s", GT_SETTINGS_VK_PREFIX, suffix);
    v = getenv(out->name);
    if (v && *v) {
        out->source = GT_SETTING_ENV;
        out->value = v;
        return;
    }

    /* 2. The settings file. */
    uint32_t line = 0;
    v = gt_settings_file_find(file, key, &line);
    if (v && *v) {
        out->source = GT_SETTING_FILE;
        out->value = v;
        snprintf(out->name, sizeof out->name, "%s%s", GT_SETTINGS_FILE_PREFIX, key);
        snprintf(out->origin, sizeof out->origin, "%s:%" PRIu32, file->path, line);
        return;
    }

    /* 3. The application's VkLayerSettingsCreateInfoEXT. */
    const VkLayerSettingEXT *setting = api_find(instance_pnext, key);
    if (setting) {
        out->source = GT_SETTING_API;
        snprintf(out->name, sizeof out->name, "%s", key);
        snprintf(out->origin, sizeof out->origin, "VkLayerSettingsCreateInfoEXT");
        api_value(setting, kind, out);
        if (out->value && !*out->value)
            memset(out, 0, sizeof *out); /* empty: unset, as elsewhere */
        return;
    }
    memset(out, 0, sizeof *out);
}
