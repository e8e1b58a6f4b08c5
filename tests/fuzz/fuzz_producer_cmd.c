/* SPDX-License-Identifier: MIT */
/* Fuzz target: the producer's command decoding (producer_cmd.c) on its
 * own, without the framing in front of it, so every input reaches it.
 * The input is one GetAsyncCommandResponse as the service would push it;
 * its last byte picks the size of the data-source name buffer (1..64), so
 * truncation is tried at every length.
 *
 * Beyond "no crash, no out-of-bounds read", what comes out must point into
 * the input: the command body and its DataSourceConfig lie inside the
 * bytes given, the name is NUL-terminated inside its buffer and is a
 * prefix of the config's name bytes. Any violation aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protos/perfetto/data_source_config.pbc.h"
#include "tracing/ipc/producer_cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const uint8_t *p, size_t n, const uint8_t *begin, size_t len)
{
    if (n == 0)
        return true;
    return p >= begin && p <= begin + len && n <= (size_t)(begin + len - p);
}

static void count_id(void *ctx, uint64_t id)
{
    (void)id;
    ++*(size_t *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t name_cap = size ? 1 + data[size - 1] % 64 : 16;
    producer_cmd c;
    if (!producer_cmd_parse(data, size, &c))
        return 0;
    if (c.kind > PRODUCER_CMD_CLEAR_INCREMENTAL_STATE ||
        !inside(c.body.data, c.body.size, data, size))
        abort();

    if (c.kind == PRODUCER_CMD_FLUSH || c.kind == PRODUCER_CMD_CLEAR_INCREMENTAL_STATE) {
        /* parse() already walked the ids once: a second walk must agree. */
        size_t n = 0;
        if (!producer_cmd_for_each_id(&c, count_id, &n) || n > c.body.size)
            abort();
    }

    if (c.kind == PRODUCER_CMD_SETUP_DATA_SOURCE || c.kind == PRODUCER_CMD_START_DATA_SOURCE) {
        if (!inside(c.config.data, c.config.size, c.body.data, c.body.size))
            abort();
        /* Exact-size heap buffer: ASan sees a write one past its end. */
        char *name = malloc(name_cap);
        if (!name)
            return 0;
        ipc_producer_ds_config cfg;
        if (producer_parse_ds_config(c.config, &cfg, name, name_cap)) {
            /* The name as the generated decoder sees it, cut to fit. */
            perfetto_protos_DataSourceConfig_view v;
            if (!perfetto_protos_DataSourceConfig_decode(&v, c.config.data, c.config.size))
                abort();
            size_t copied = v.name.size < name_cap - 1 ? v.name.size : name_cap - 1;
            if (cfg.name != name || name[copied] != '\0' ||
                memcmp(name, v.name.data, copied) != 0 || cfg.raw != c.config.data ||
                cfg.raw_size != c.config.size)
                abort();
            /* What the layer reads of it (layer/backend_system.c): the
             * nested GpuRenderStagesConfig and VulkanMemoryConfig, inside
             * the config's bytes. */
            perfetto_protos_GpuRenderStagesConfig_view gpu;
            if (v.has_gpu_renderstages_config &&
                perfetto_protos_GpuRenderStagesConfig_decode(&gpu, v.gpu_renderstages_config.data,
                                                             v.gpu_renderstages_config.size) &&
                !inside(v.gpu_renderstages_config.data, v.gpu_renderstages_config.size,
                        c.config.data, c.config.size))
                abort();
            perfetto_protos_VulkanMemoryConfig_view mem;
            if (v.has_vulkan_memory_config &&
                perfetto_protos_VulkanMemoryConfig_decode(&mem, v.vulkan_memory_config.data,
                                                          v.vulkan_memory_config.size) &&
                !inside(v.vulkan_memory_config.data, v.vulkan_memory_config.size, c.config.data,
                        c.config.size))
                abort();
        }
        free(name);
    }
    return 0;
}
