/* SPDX-License-Identifier: MIT */
/* test_layer_skeleton.c — loader plumbing shared by the test-only layers
 * (test_layer_skeleton.h). Interface 2 as docs/LoaderLayerInterface.md
 * describes it.
 */
#include "tests/common/test_layer_skeleton.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- object tables ------------------------------------------------------------ */

/* A test program has a few instances and devices at most: a small fixed
 * table and a linear scan. Each entry begins with its dispatch key. */
#define TLS_MAX_OBJECTS 64

typedef struct tls_table tls_table;
struct tls_table {
    pthread_rwlock_t lock;
    void *objs[TLS_MAX_OBJECTS];
};

static tls_table g_instances = { PTHREAD_RWLOCK_INITIALIZER, { NULL } };
static tls_table g_devices = { PTHREAD_RWLOCK_INITIALIZER, { NULL } };

static void *dispatch_key(const void *dispatchable)
{
    return *(void *const *)dispatchable;
}

static void *table_find(tls_table *t, const void *dispatchable)
{
    if (!dispatchable)
        return NULL;
    void *key = dispatch_key(dispatchable);
    void *found = NULL;
    pthread_rwlock_rdlock(&t->lock);
    for (size_t i = 0; i < TLS_MAX_OBJECTS && !found; i++) {
        if (t->objs[i] && *(void *const *)t->objs[i] == key)
            found = t->objs[i];
    }
    pthread_rwlock_unlock(&t->lock);
    return found;
}

/* False when the table is full. */
static bool table_publish(tls_table *t, void *obj)
{
    bool ok = false;
    pthread_rwlock_wrlock(&t->lock);
    for (size_t i = 0; i < TLS_MAX_OBJECTS && !ok; i++) {
        if (!t->objs[i]) {
            t->objs[i] = obj;
            ok = true;
        }
    }
    pthread_rwlock_unlock(&t->lock);
    return ok;
}

/* How many objects remain. */
static size_t table_unpublish(tls_table *t, void *obj)
{
    size_t left = 0;
    pthread_rwlock_wrlock(&t->lock);
    for (size_t i = 0; i < TLS_MAX_OBJECTS; i++) {
        if (t->objs[i] == obj)
            t->objs[i] = NULL;
        else if (t->objs[i])
            left++;
    }
    pthread_rwlock_unlock(&t->lock);
    return left;
}

tls_instance *tls_instance_of(const void *dispatchable)
{
    return table_find(&g_instances, dispatchable);
}

tls_device *tls_device_of(const void *dispatchable)
{
    return table_find(&g_devices, dispatchable);
}

/* ---- the loader's chain info --------------------------------------------------- */

/* The link to the next layer, with the chain advanced past it for the call
 * down; NULL when the loader's info is missing. */
static VkLayerInstanceLink *take_instance_link(const VkInstanceCreateInfo *info)
{
    VkLayerInstanceCreateInfo *c = (VkLayerInstanceCreateInfo *)info->pNext;
    while (c && !(c->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                  c->function == VK_LAYER_LINK_INFO))
        c = (VkLayerInstanceCreateInfo *)c->pNext;
    if (!c || !c->u.pLayerInfo)
        return NULL;
    VkLayerInstanceLink *link = c->u.pLayerInfo;
    c->u.pLayerInfo = link->pNext;
    return link;
}

static VkLayerDeviceLink *take_device_link(const VkDeviceCreateInfo *info)
{
    VkLayerDeviceCreateInfo *c = (VkLayerDeviceCreateInfo *)info->pNext;
    while (c && !(c->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                  c->function == VK_LAYER_LINK_INFO))
        c = (VkLayerDeviceCreateInfo *)c->pNext;
    if (!c || !c->u.pLayerInfo)
        return NULL;
    VkLayerDeviceLink *link = c->u.pLayerInfo;
    c->u.pLayerInfo = link->pNext;
    return link;
}

/* ---- instances ------------------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL tls_CreateInstance(const VkInstanceCreateInfo *info,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkInstance *out)
{
    const tls_layer *L = &tls_the_layer;
    VkLayerInstanceLink *link = take_instance_link(info);
    if (!link)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->pfnNextGetInstanceProcAddr;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (!create)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (L->before_create_instance)
        L->before_create_instance();
    VkResult r = create(info, alloc, out);
    if (r != VK_SUCCESS)
        return r;

    tls_instance *inst = calloc(1, L->instance_size);
    if (inst) {
        inst->key = dispatch_key(*out);
        inst->handle = *out;
        inst->gipa = gipa;
        inst->DestroyInstance = (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance");
        if (L->instance_created)
            L->instance_created(inst);
        if (table_publish(&g_instances, inst))
            return VK_SUCCESS;
        free(inst);
    }
    /* Out of memory (or of table room): the instance goes again. */
    PFN_vkDestroyInstance destroy = (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance");
    if (destroy)
        destroy(*out, alloc);
    *out = VK_NULL_HANDLE;
    return VK_ERROR_OUT_OF_HOST_MEMORY;
}

static VKAPI_ATTR void VKAPI_CALL tls_DestroyInstance(VkInstance instance,
                                                      const VkAllocationCallbacks *alloc)
{
    tls_instance *inst = tls_instance_of(instance);
    if (!inst)
        return;
    const bool last = table_unpublish(&g_instances, inst) == 0;
    inst->DestroyInstance(instance, alloc);
    free(inst);
    if (tls_the_layer.instance_destroyed)
        tls_the_layer.instance_destroyed(last);
}

/* ---- devices --------------------------------------------------------------------- */

/* The device-level half of vkDestroyDevice, `dev` already unpublished. */
static void destroy_device(tls_device *dev, const VkAllocationCallbacks *alloc)
{
    const tls_layer *L = &tls_the_layer;
    if (L->device_destroy_before)
        L->device_destroy_before(dev);
    if (dev->DestroyDevice)
        dev->DestroyDevice(dev->handle, alloc);
    if (L->device_destroy_after)
        L->device_destroy_after(dev);
    free(dev);
}

static VKAPI_ATTR VkResult VKAPI_CALL tls_CreateDevice(VkPhysicalDevice pd,
                                                       const VkDeviceCreateInfo *info,
                                                       const VkAllocationCallbacks *alloc,
                                                       VkDevice *out)
{
    const tls_layer *L = &tls_the_layer;
    tls_instance *inst = tls_instance_of(pd);
    VkLayerDeviceLink *link = inst ? take_device_link(info) : NULL;
    if (!link)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = link->pfnNextGetDeviceProcAddr;
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(inst->handle, "vkCreateDevice");
    if (!create)
        return VK_ERROR_INITIALIZATION_FAILED;
    VkResult r = create(pd, L->amend_device_create ? L->amend_device_create(inst, pd, info) : info,
                        alloc, out);
    if (r != VK_SUCCESS)
        return r;

    tls_device *dev = calloc(1, L->device_size);
    if (!dev) {
        PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)gdpa(*out, "vkDestroyDevice");
        if (destroy)
            destroy(*out, alloc);
        *out = VK_NULL_HANDLE;
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    dev->key = dispatch_key(*out);
    dev->handle = *out;
    dev->gdpa = gdpa;
    dev->DestroyDevice = (PFN_vkDestroyDevice)gdpa(*out, "vkDestroyDevice");
    if (L->device_created)
        L->device_created(dev);
    if (table_publish(&g_devices, dev))
        return VK_SUCCESS;
    destroy_device(dev, alloc);
    *out = VK_NULL_HANDLE;
    return VK_ERROR_OUT_OF_HOST_MEMORY;
}

static VKAPI_ATTR void VKAPI_CALL tls_DestroyDevice(VkDevice device,
                                                    const VkAllocationCallbacks *alloc)
{
    if (!device)
        return;
    tls_device *dev = tls_device_of(device);
    if (!dev)
        return;
    table_unpublish(&g_devices, dev);
    destroy_device(dev, alloc);
}

/* ---- lookup ------------------------------------------------------------------------ */

static PFN_vkVoidFunction find_hook(const tls_hook *hooks, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(hooks[i].name, name) == 0)
            return hooks[i].fn;
    }
    return NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL tls_GetDeviceProcAddr(VkDevice device,
                                                                      const char *name);
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL tls_GetInstanceProcAddr(VkInstance instance,
                                                                        const char *name);

/* The skeleton's own entry points, answered for any instance. */
static PFN_vkVoidFunction own_function(const char *name)
{
    static const tls_hook own[] = {
        TLS_HOOK(tls_, GetInstanceProcAddr), TLS_HOOK(tls_, CreateInstance),
        TLS_HOOK(tls_, DestroyInstance),     TLS_HOOK(tls_, CreateDevice),
        TLS_HOOK(tls_, GetDeviceProcAddr),   TLS_HOOK(tls_, DestroyDevice),
    };
    return find_hook(own, TLS_COUNT(own), name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL tls_GetInstanceProcAddr(VkInstance instance,
                                                                        const char *name)
{
    const tls_layer *L = &tls_the_layer;
    PFN_vkVoidFunction own = own_function(name);
    if (own)
        return own;
    tls_instance *inst = tls_instance_of(instance);
    if (!inst)
        return NULL;
    if (L->hidden && L->hidden(name))
        return NULL;
    PFN_vkVoidFunction next = inst->gipa(instance, name);
    if (!next)
        return NULL;
    PFN_vkVoidFunction hook = find_hook(L->instance_hooks, L->n_instance_hooks, name);
    if (!hook)
        hook = find_hook(L->device_hooks, L->n_device_hooks, name);
    return hook ? hook : next;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL tls_GetDeviceProcAddr(VkDevice device,
                                                                      const char *name)
{
    const tls_layer *L = &tls_the_layer;
    if (strcmp(name, "vkGetDeviceProcAddr") == 0)
        return (PFN_vkVoidFunction)tls_GetDeviceProcAddr;
    if (strcmp(name, "vkDestroyDevice") == 0)
        return (PFN_vkVoidFunction)tls_DestroyDevice;
    tls_device *dev = tls_device_of(device);
    if (!dev)
        return NULL;
    if (L->hidden && L->hidden(name))
        return NULL;
    /* Instance-level hooks, device commands among them, are the layer's
     * through vkGetInstanceProcAddr only (see tls_layer). */
    if (find_hook(L->instance_hooks, L->n_instance_hooks, name))
        return NULL;
    PFN_vkVoidFunction next = dev->gdpa(device, name);
    if (!next)
        return NULL;
    PFN_vkVoidFunction hook = find_hook(L->device_hooks, L->n_device_hooks, name);
    return hook ? hook : next;
}

VkResult tls_negotiate(VkNegotiateLayerInterface *v)
{
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT || v->loaderLayerInterfaceVersion < 2)
        return VK_ERROR_INITIALIZATION_FAILED;
    v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = tls_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = tls_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
