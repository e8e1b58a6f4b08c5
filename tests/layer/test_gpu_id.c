/* SPDX-License-Identifier: MIT */
/* test_gpu_id — unit tests of layer/gpu_id.c: the machine-wide gpu_id
 * scheme on made-up device lists (no libdrm, no Vulkan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "layer/gpu_id.h"

static gid_drm_device pci_dev(uint16_t domain, uint8_t bus, uint8_t dev, uint32_t render_minor)
{
    gid_drm_device d = { .pci = true, .pci_domain = domain, .pci_bus = bus, .pci_dev = dev };
    d.has_render = true;
    d.render_major = 226;
    d.render_minor = render_minor;
    d.has_primary = true;
    d.primary_major = 226;
    d.primary_minor = render_minor - 128;
    return d;
}

static gid_vk_device vk_render(uint32_t minor, uint8_t uuid0)
{
    gid_vk_device v = { .has_drm = true, .has_render = true, .render_major = 226 };
    v.render_minor = minor;
    v.uuid[0] = uuid0;
    return v;
}

static gid_vk_device vk_plain(uint8_t uuid0, uint8_t uuid15)
{
    gid_vk_device v = { 0 };
    v.uuid[0] = uuid0;
    v.uuid[15] = uuid15;
    return v;
}

/* libdrm's order is readdir's: the ids follow the bus, and devices without
 * a render node (display-only) get none. */
static void drm_order_by_bus(void **state)
{
    (void)state;
    gid_drm_device d[4] = {
        pci_dev(0, 0x03, 0, 129),
        pci_dev(0, 0x00, 2, 128),
        pci_dev(1, 0x00, 0, 130),
        { .has_primary = true, .primary_major = 226, .primary_minor = 5 }, /* no render node */
    };
    d[3].pci = false;
    assert_int_equal(gid_order_drm(d, 4), 3);
    assert_int_equal(d[0].render_minor, 128);
    assert_int_equal(d[1].render_minor, 129);
    assert_int_equal(d[2].render_minor, 130);
    /* Non-PCI buses after PCI, by name. */
    gid_drm_device e[3] = { 0 };
    e[0].has_render = e[1].has_render = e[2].has_render = true;
    strcpy(e[0].bus_name, "soc/zz.gpu");
    strcpy(e[1].bus_name, "soc/aa.gpu");
    e[2] = pci_dev(0, 9, 0, 140);
    assert_int_equal(gid_order_drm(e, 3), 3);
    assert_true(e[0].pci);
    assert_string_equal(e[1].bus_name, "soc/aa.gpu");
    assert_string_equal(e[2].bus_name, "soc/zz.gpu");
}

/* The same GPU gets the same id whatever the process's instance lists. */
static void same_gpu_same_id_in_every_process(void **state)
{
    (void)state;
    gid_drm_device d[2] = { pci_dev(0, 0x03, 0, 129), pci_dev(0, 0x00, 2, 128) };
    uint32_t n = gid_order_drm(d, 2);
    gid_vk_device dgpu = vk_render(129, 0x77), igpu = vk_render(128, 0x11);
    gid_vk_device proc_a[] = { dgpu, igpu };
    gid_vk_device proc_b[] = { dgpu }; /* e.g. DRI_PRIME / ICD filtering */
    assert_int_equal(gid_assign(d, n, &dgpu, proc_a, 2), 1);
    assert_int_equal(gid_assign(d, n, &dgpu, proc_b, 1), 1);
    assert_int_equal(gid_assign(d, n, &igpu, proc_a, 2), 0);
    assert_int_equal(gid_assign(d, n, &igpu, NULL, 0), 0);
}

/* A device without VK_EXT_physical_device_drm is found by its PCI address;
 * a primary node alone is enough too. */
static void match_by_pci_or_primary(void **state)
{
    (void)state;
    gid_drm_device d[2] = { pci_dev(0, 0x00, 2, 128), pci_dev(0, 0x03, 0, 129) };
    uint32_t n = gid_order_drm(d, 2);
    gid_vk_device pci = { .has_pci = true, .pci_bus = 3 };
    assert_int_equal(gid_match_drm(d, n, &pci), 1);
    gid_vk_device primary = { .has_drm = true, .has_primary = true, .primary_major = 226 };
    primary.primary_minor = 0;
    assert_int_equal(gid_match_drm(d, n, &primary), 0);
    gid_vk_device elsewhere = { .has_pci = true, .pci_bus = 7 };
    assert_int_equal(gid_match_drm(d, n, &elsewhere), -1);
    assert_int_equal(gid_assign(d, n, &elsewhere, &elsewhere, 1), 2);
}

/* Devices with no DRM node come after the DRM ones, by UUID, duplicates
 * (two ICDs listing one device) counted once. */
static void non_drm_after_drm_by_uuid(void **state)
{
    (void)state;
    gid_drm_device d[1] = { pci_dev(0, 0x00, 2, 128) };
    uint32_t n = gid_order_drm(d, 1);
    gid_vk_device gpu = vk_render(128, 0x01);
    gid_vk_device lvp = vk_plain(0x6d, 0), other = vk_plain(0x20, 9), dup = vk_plain(0x20, 9);
    gid_vk_device all[] = { lvp, gpu, other, dup };
    assert_int_equal(gid_assign(d, n, &gpu, all, 4), 0);
    assert_int_equal(gid_assign(d, n, &other, all, 4), 1);
    assert_int_equal(gid_assign(d, n, &lvp, all, 4), 2);
    /* The list order does not matter. */
    gid_vk_device rev[] = { dup, other, gpu, lvp };
    assert_int_equal(gid_assign(d, n, &lvp, rev, 4), 2);
    /* Which device is at an id, for GpuInfo's lower entries. */
    assert_int_equal(gid_non_drm_at(d, n, all, 4, 1), 2);
    assert_int_equal(gid_non_drm_at(d, n, all, 4, 2), 0);
    assert_int_equal(gid_non_drm_at(d, n, all, 4, 0), -1);
    assert_int_equal(gid_non_drm_at(d, n, all, 4, 3), -1);
}

/* No libdrm list (container, no /dev/dri): every device by UUID from 0. */
static void no_drm_devices(void **state)
{
    (void)state;
    gid_vk_device lvp = vk_render(128, 0x6d); /* claims a node nobody lists */
    gid_vk_device all[] = { lvp };
    assert_int_equal(gid_assign(NULL, 0, &lvp, all, 1), 0);
    assert_int_equal(gid_assign(NULL, 0, &lvp, NULL, 0), 0);
    gid_vk_device a = vk_plain(1, 0), b = vk_plain(2, 0);
    gid_vk_device ab[] = { b, a };
    assert_int_equal(gid_assign(NULL, 0, &b, ab, 2), 1);
    assert_int_equal(gid_assign(NULL, 0, &a, ab, 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(drm_order_by_bus),
        cmocka_unit_test(same_gpu_same_id_in_every_process),
        cmocka_unit_test(match_by_pci_or_primary),
        cmocka_unit_test(non_drm_after_drm_by_uuid),
        cmocka_unit_test(no_drm_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
