/* SPDX-License-Identifier: MIT */
/* gpu_identity.c — see gpu_identity.h. */
#include "layer/gpu_identity.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <xf86drm.h>

#include "layer/gpu_id.h"
#include "layer/log.h"
#include "tracing/util/util_parse.h"

#define GI_MAX_DRM    32u /* DRM devices considered; more are left out */
#define GI_MAX_VK     32u /* physical devices of the instance considered */
#define GI_MAX_EXTRA  12u
#define GI_VALUE_SIZE 272u /* driverInfo is up to 256 bytes */

struct gi_gpu {
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    char vendor[32], model[32], pci_bdf[24];
    uint8_t uuid[VK_UUID_SIZE];
    emc_kv extra[GI_MAX_EXTRA];
    char values[GI_MAX_EXTRA][GI_VALUE_SIZE];
};

/* What the layer learns about one physical device. */
typedef struct vk_facts vk_facts;
struct vk_facts {
    gid_vk_device id;
    bool has_uuid; /* id.uuid is the deviceUUID (else pipelineCacheUUID) */
    VkPhysicalDeviceProperties props;
    bool has_driver;
    VkPhysicalDeviceDriverProperties driver;
};

void gi_vendor_name(uint32_t vendor_id, char *out, size_t size)
{
    static const struct {
        uint32_t id;
        const char *name;
    } known[] = {
        { 0x1002, "AMD" },
        { 0x1022, "AMD" },
        { 0x10de, "NVIDIA" },
        { 0x8086, "Intel" },
        { 0x13b5, "ARM" },
        { 0x5143, "Qualcomm" },
        { 0x1010, "Imagination" },
        { 0x14e4, "Broadcom" },
        { 0x106b, "Apple" },
        { 0x15ad, "VMware" },
        { 0x1af4, "Red Hat (virtio)" },
        { 0x1414, "Microsoft" },
        { 0x144d, "Samsung" },
        { 0x1d17, "Zhaoxin" },
        { 0x10001, "Vivante" },
        { 0x10002, "VeriSilicon" },
        { 0x10003, "Kazan" },
        { 0x10004, "Codeplay" },
        { 0x10005, "Mesa" },
        { 0x10006, "PoCL" },
        { 0x10007, "Mobileye" },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (known[i].id == vendor_id) {
            util_copy_str(out, size, known[i].name);
            return;
        }
    }
    snprintf(out, size, "0x%04" PRIx32, vendor_id);
}

/* ---- libdrm ------------------------------------------------------------------- */

static bool node_numbers(const char *path, uint32_t *major_out, uint32_t *minor_out)
{
    struct stat st;
    if (!path || stat(path, &st) != 0 || !S_ISCHR(st.st_mode))
        return false;
    *major_out = major(st.st_rdev);
    *minor_out = minor(st.st_rdev);
    return true;
}

static void from_drm(const drmDevice *d, gid_drm_device *out)
{
    memset(out, 0, sizeof *out);
    if (d->available_nodes & (1 << DRM_NODE_RENDER))
        out->has_render =
            node_numbers(d->nodes[DRM_NODE_RENDER], &out->render_major, &out->render_minor);
    if (d->available_nodes & (1 << DRM_NODE_PRIMARY))
        out->has_primary =
            node_numbers(d->nodes[DRM_NODE_PRIMARY], &out->primary_major, &out->primary_minor);
    switch (d->bustype) {
    case DRM_BUS_PCI:
        out->pci = d->businfo.pci != NULL;
        if (d->businfo.pci) {
            out->pci_domain = d->businfo.pci->domain;
            out->pci_bus = d->businfo.pci->bus;
            out->pci_dev = d->businfo.pci->dev;
            out->pci_func = d->businfo.pci->func;
        }
        if (d->deviceinfo.pci) {
            out->vendor_id = d->deviceinfo.pci->vendor_id;
            out->device_id = d->deviceinfo.pci->device_id;
        }
        break;
    case DRM_BUS_PLATFORM:
        if (d->businfo.platform)
            util_copy_str(out->bus_name, sizeof out->bus_name, d->businfo.platform->fullname);
        break;
    case DRM_BUS_HOST1X:
        if (d->businfo.host1x)
            util_copy_str(out->bus_name, sizeof out->bus_name, d->businfo.host1x->fullname);
        break;
    case DRM_BUS_USB:
        if (d->businfo.usb)
            snprintf(out->bus_name, sizeof out->bus_name, "usb %03u:%03u", d->businfo.usb->bus,
                     d->businfo.usb->dev);
        break;
    default:
        break;
    }
}

/* The machine's DRM devices with a render node, in gpu_id order. */
static uint32_t drm_list(gid_drm_device *out)
{
    drmDevicePtr devs[GI_MAX_DRM];
    int n = drmGetDevices2(0, devs, (int)GI_MAX_DRM);
    if (n <= 0) {
        gt_debug("libdrm lists no DRM device (%d): GPUs are numbered by device UUID", n);
        return 0;
    }
    for (int i = 0; i < n; i++)
        from_drm(devs[i], &out[i]);
    drmFreeDevices(devs, n);
    return gid_order_drm(out, (uint32_t)n);
}

/* ---- Vulkan ------------------------------------------------------------------- */

static PFN_vkGetPhysicalDeviceProperties2 props2_fn(const gt_instance *inst,
                                                    const VkPhysicalDeviceProperties *props)
{
    if (inst->api_version >= VK_API_VERSION_1_1 && props->apiVersion >= VK_API_VERSION_1_1 &&
        inst->vk.GetPhysicalDeviceProperties2)
        return inst->vk.GetPhysicalDeviceProperties2;
    if (inst->has_gpdp2)
        return inst->vk.GetPhysicalDeviceProperties2KHR;
    return NULL;
}

typedef struct ext_set ext_set;
struct ext_set {
    bool drm, pci, driver;
};

static ext_set device_extensions(const gt_instance *inst, VkPhysicalDevice pd,
                                 const gt_allocator *alloc)
{
    ext_set s = { 0 };
    uint32_t n = 0;
    if (inst->vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n)
        return s;
    VkExtensionProperties *exts =
        gt_zalloc(alloc, (size_t)n * sizeof *exts, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
    if (!exts)
        return s;
    VkResult r = inst->vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, exts);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        const char *e = exts[i].extensionName;
        s.drm |= !strcmp(e, VK_EXT_PHYSICAL_DEVICE_DRM_EXTENSION_NAME);
        s.pci |= !strcmp(e, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
        s.driver |= !strcmp(e, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    }
    gt_free(alloc, exts);
    return s;
}

static void query(const gt_instance *inst, VkPhysicalDevice pd, const gt_allocator *alloc,
                  vk_facts *f)
{
    memset(f, 0, sizeof *f);
    inst->vk.GetPhysicalDeviceProperties(pd, &f->props);
    memcpy(f->id.uuid, f->props.pipelineCacheUUID, VK_UUID_SIZE);
    PFN_vkGetPhysicalDeviceProperties2 get2 = props2_fn(inst, &f->props);
    if (!get2)
        return;
    /* Extension structures only where the device lists the extension. */
    const ext_set ext = device_extensions(inst, pd, alloc);
    VkPhysicalDeviceIDProperties idp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES };
    VkPhysicalDeviceDrmPropertiesEXT drm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRM_PROPERTIES_EXT,
    };
    VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
    };
    f->driver = (VkPhysicalDeviceDriverProperties){
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       .pNext = &idp };
    void **tail = &idp.pNext;
    if (ext.drm) {
        *tail = &drm;
        tail = &drm.pNext;
    }
    if (ext.pci) {
        *tail = &pci;
        tail = &pci.pNext;
    }
    const bool core12 =
        inst->api_version >= VK_API_VERSION_1_2 && f->props.apiVersion >= VK_API_VERSION_1_2;
    if (ext.driver || core12) {
        *tail = &f->driver;
        tail = &f->driver.pNext;
    }
    get2(pd, &p2);
    f->driver.pNext = NULL;
    memcpy(f->id.uuid, idp.deviceUUID, VK_UUID_SIZE);
    f->has_uuid = true;
    f->has_driver = ext.driver || core12;
    if (ext.drm) {
        f->id.has_drm = true;
        f->id.has_primary = drm.hasPrimary;
        f->id.has_render = drm.hasRender;
        f->id.primary_major = (uint32_t)drm.primaryMajor;
        f->id.primary_minor = (uint32_t)drm.primaryMinor;
        f->id.render_major = (uint32_t)drm.renderMajor;
        f->id.render_minor = (uint32_t)drm.renderMinor;
    }
    if (ext.pci) {
        f->id.has_pci = true;
        f->id.pci_domain = (uint16_t)pci.pciDomain;
        f->id.pci_bus = (uint8_t)pci.pciBus;
        f->id.pci_dev = (uint8_t)pci.pciDevice;
        f->id.pci_func = (uint8_t)pci.pciFunction;
    }
}

/* ---- GpuInfo entries ---------------------------------------------------------- */

static void add_extra(gi_gpu *g, emc_gpu *view, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_extra(gi_gpu *g, emc_gpu *view, const char *key, const char *fmt, ...)
{
    if (view->nextra >= GI_MAX_EXTRA)
        return;
    char *v = g->values[view->nextra];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, GI_VALUE_SIZE, fmt, ap);
    va_end(ap);
    g->extra[view->nextra] = (emc_kv){ key, v };
    view->nextra++;
}

static void bdf(char *out, size_t size, uint16_t domain, uint8_t bus, uint8_t dev, uint8_t func)
{
    snprintf(out, size, "%04x:%02x:%02x.%x", domain, bus, dev, func);
}

static void describe_drm(const gid_drm_device *d, gi_gpu *g, emc_gpu *view)
{
    if (d->pci) {
        bdf(g->pci_bdf, sizeof g->pci_bdf, d->pci_domain, d->pci_bus, d->pci_dev, d->pci_func);
        view->pci_bdf = g->pci_bdf;
        if (d->vendor_id) {
            gi_vendor_name(d->vendor_id, g->vendor, sizeof g->vendor);
            view->vendor = g->vendor;
            add_extra(g, view, "pci_id", "%04x:%04x", d->vendor_id, d->device_id);
        }
    }
    add_extra(g, view, "drm_render_node", "%u:%u", d->render_major, d->render_minor);
}

static const char *device_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "CPU";
    default:
        return "other";
    }
}

/* The full entry of the device being identified; `drm` is its DRM device
 * or NULL. */
static void describe_self(const vk_facts *f, const gid_drm_device *drm, gi_gpu *g, emc_gpu *view)
{
    const VkPhysicalDeviceProperties *p = &f->props;
    util_copy_str(g->name, sizeof g->name, p->deviceName);
    view->name = g->name;
    gi_vendor_name(p->vendorID, g->vendor, sizeof g->vendor);
    view->vendor = g->vendor;
    snprintf(g->model, sizeof g->model, "0x%04" PRIx32, p->deviceID);
    view->model = g->model;
    if (f->has_uuid) {
        memcpy(g->uuid, f->id.uuid, VK_UUID_SIZE);
        view->uuid = g->uuid;
    }
    if (f->id.has_pci)
        bdf(g->pci_bdf, sizeof g->pci_bdf, f->id.pci_domain, f->id.pci_bus, f->id.pci_dev,
            f->id.pci_func);
    else if (drm && drm->pci)
        bdf(g->pci_bdf, sizeof g->pci_bdf, drm->pci_domain, drm->pci_bus, drm->pci_dev,
            drm->pci_func);
    if (g->pci_bdf[0])
        view->pci_bdf = g->pci_bdf;
    if (f->has_driver) {
        add_extra(g, view, "driver_name", "%s", f->driver.driverName);
        add_extra(g, view, "driver_info", "%s", f->driver.driverInfo);
    }
    const uint32_t v = p->driverVersion;
    if (p->vendorID == 0x10de) /* NVIDIA packs 10.8.8.6 bits */
        add_extra(g, view, "driver_version", "%u.%u.%u.%u (0x%08x)", v >> 22, (v >> 14) & 0xff,
                  (v >> 6) & 0xff, v & 0x3f, v);
    else
        add_extra(g, view, "driver_version", "%u.%u.%u (0x%08x)", VK_API_VERSION_MAJOR(v),
                  VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v), v);
    add_extra(g, view, "vulkan_api_version", "%u.%u.%u", VK_API_VERSION_MAJOR(p->apiVersion),
              VK_API_VERSION_MINOR(p->apiVersion), VK_API_VERSION_PATCH(p->apiVersion));
    add_extra(g, view, "device_type", "%s", device_type(p->deviceType));
    add_extra(g, view, "vendor_id", "0x%04" PRIx32, p->vendorID);
    add_extra(g, view, "device_id", "0x%04" PRIx32, p->deviceID);
    if (drm)
        add_extra(g, view, "drm_render_node", "%u:%u", drm->render_major, drm->render_minor);
    else if (f->id.has_drm && f->id.has_render)
        add_extra(g, view, "drm_render_node", "%u:%u", f->id.render_major, f->id.render_minor);
    add_extra(g, view, "gpu_id_from", "%s",
              drm ? "DRM device order" : "device UUID order after the DRM devices");
}

/* An entry for another device of the instance (no DRM device). */
static void describe_other(const vk_facts *f, gi_gpu *g, emc_gpu *view)
{
    util_copy_str(g->name, sizeof g->name, f->props.deviceName);
    view->name = g->name;
    gi_vendor_name(f->props.vendorID, g->vendor, sizeof g->vendor);
    view->vendor = g->vendor;
    if (f->has_uuid) {
        memcpy(g->uuid, f->id.uuid, VK_UUID_SIZE);
        view->uuid = g->uuid;
    }
}

/* ---- identify ------------------------------------------------------------------ */

typedef struct scratch scratch;
struct scratch {
    gid_drm_device drm[GI_MAX_DRM];
    vk_facts facts[GI_MAX_VK];
    gid_vk_device ids[GI_MAX_VK];
    VkPhysicalDevice pds[GI_MAX_VK];
};

static void fill_entries(gi_identity *id, const scratch *s, uint32_t ndrm, uint32_t nall,
                         const vk_facts *self, int32_t self_drm)
{
    for (uint32_t i = 0; i < id->ngpus; i++) {
        gi_gpu *g = &id->store[i];
        emc_gpu *view = &id->gpus[i];
        view->extra = g->extra;
        if (i == id->gpu_id) {
            describe_self(self, self_drm >= 0 ? &s->drm[self_drm] : NULL, g, view);
        } else if (i < ndrm) {
            describe_drm(&s->drm[i], g, view);
        } else {
            int32_t k = gid_non_drm_at(s->drm, ndrm, s->ids, nall, i);
            if (k >= 0)
                describe_other(&s->facts[k], g, view);
        }
    }
}

void gi_identify(gi_identity *id, const gt_instance *inst, VkPhysicalDevice pd,
                 const gt_allocator *alloc)
{
    memset(id, 0, sizeof *id);
    scratch *s = gt_zalloc(alloc, sizeof *s, VK_SYSTEM_ALLOCATION_SCOPE_COMMAND);
    vk_facts self;
    query(inst, pd, alloc, &self);
    if (!s) {
        gt_warn("out of memory: gpu_id 0 and no GpuInfo for %s", self.props.deviceName);
        return;
    }
    const uint32_t ndrm = drm_list(s->drm);
    uint32_t nall = GI_MAX_VK;
    VkResult r = inst->vk.EnumeratePhysicalDevices(inst->handle, &nall, s->pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        nall = 0;
    for (uint32_t i = 0; i < nall; i++) {
        query(inst, s->pds[i], alloc, &s->facts[i]);
        s->ids[i] = s->facts[i].id;
    }
    const int32_t self_drm = gid_match_drm(s->drm, ndrm, &self.id);
    id->gpu_id = gid_assign(s->drm, ndrm, &self.id, s->ids, nall);
    if (self_drm >= 0)
        snprintf(id->drm_node, sizeof id->drm_node, "%u:%u", s->drm[self_drm].render_major,
                 s->drm[self_drm].render_minor);
    gt_debug("gpu_id %u for %s: %s (%u DRM devices with a render node, %u physical devices)",
             id->gpu_id, self.props.deviceName,
             self_drm >= 0 ? "its DRM device's place" : "its UUID's rank after the DRM devices",
             ndrm, nall);

    id->ngpus = id->gpu_id + 1;
    id->gpus =
        gt_zalloc(alloc, (size_t)id->ngpus * sizeof *id->gpus, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    id->store =
        gt_zalloc(alloc, (size_t)id->ngpus * sizeof *id->store, VK_SYSTEM_ALLOCATION_SCOPE_DEVICE);
    if (!id->gpus || !id->store) {
        gt_warn("out of memory: no GpuInfo for gpu %u", id->gpu_id);
        gi_finish(id, alloc);
        id->ngpus = 0;
    } else {
        fill_entries(id, s, ndrm, nall, &self, self_drm);
    }
    gt_free(alloc, s);
}

void gi_finish(gi_identity *id, const gt_allocator *alloc)
{
    gt_free(alloc, id->gpus);
    gt_free(alloc, id->store);
    id->gpus = NULL;
    id->store = NULL;
    id->ngpus = 0;
}
