/* SPDX-License-Identifier: MIT */
/* layer_settings_ext.h — VK_EXT_layer_settings for headers that predate it.
 *
 * Debian 12 ships Vulkan headers 1.3.239; the extension came with 1.3.272.
 * The values here are the registry's (Vulkan-Headers registry/vk.xml,
 * extension number 497: VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT is
 * 1000000000 + (497 - 1) * 1000 + offset 0; VkLayerSettingTypeEXT 0..7).
 * With newer headers their own definitions are used and this adds nothing.
 * Data only.
 */
#ifndef GPUTRACE_LAYER_SETTINGS_EXT_H
#define GPUTRACE_LAYER_SETTINGS_EXT_H

#include <vulkan/vulkan.h>

#ifndef VK_EXT_layer_settings
#define VK_EXT_layer_settings                            1
#define VK_EXT_LAYER_SETTINGS_SPEC_VERSION               2
#define VK_EXT_LAYER_SETTINGS_EXTENSION_NAME             "VK_EXT_layer_settings"
#define VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT ((VkStructureType)1000496000)

typedef enum VkLayerSettingTypeEXT {
    VK_LAYER_SETTING_TYPE_BOOL32_EXT = 0,
    VK_LAYER_SETTING_TYPE_INT32_EXT = 1,
    VK_LAYER_SETTING_TYPE_INT64_EXT = 2,
    VK_LAYER_SETTING_TYPE_UINT32_EXT = 3,
    VK_LAYER_SETTING_TYPE_UINT64_EXT = 4,
    VK_LAYER_SETTING_TYPE_FLOAT32_EXT = 5,
    VK_LAYER_SETTING_TYPE_FLOAT64_EXT = 6,
    VK_LAYER_SETTING_TYPE_STRING_EXT = 7,
    VK_LAYER_SETTING_TYPE_MAX_ENUM_EXT = 0x7FFFFFFF
} VkLayerSettingTypeEXT;

typedef struct VkLayerSettingEXT {
    const char *pLayerName;
    const char *pSettingName;
    VkLayerSettingTypeEXT type;
    uint32_t valueCount;
    const void *pValues;
} VkLayerSettingEXT;

typedef struct VkLayerSettingsCreateInfoEXT {
    VkStructureType sType;
    const void *pNext;
    uint32_t settingCount;
    const VkLayerSettingEXT *pSettings;
} VkLayerSettingsCreateInfoEXT;
#endif

#endif
