/* test_layer_objects.h — the object tables of the repository's test-only
 * Vulkan layers (tests/faultlayer/fault_layer.c, tests/layer/
 * cmd_check_layer.c).
 *
 * Each layer keeps its instances and devices as structs whose first member
 * is the dispatch key of the handle they wrap, and finds them from any
 * dispatchable handle created under that handle (the loader's rule: state
 * is keyed on the dispatch key, never on the handle itself). A few
 * instances and devices at most, so a small fixed table and a linear scan.
 */
#ifndef GPUTRACE_TEST_LAYER_OBJECTS_H
#define GPUTRACE_TEST_LAYER_OBJECTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <vulkan/vk_layer.h>

#define TLO_MAX_OBJECTS 64

typedef struct tlo_table tlo_table;
struct tlo_table {
    pthread_rwlock_t lock;
    void *objs[TLO_MAX_OBJECTS]; /* each begins with `void *key` */
};

#define TLO_TABLE_INIT              \
    {                               \
        PTHREAD_RWLOCK_INITIALIZER, \
        {                           \
            NULL                    \
        }                           \
    }

static inline void *tlo_dispatch_key(const void *dispatchable)
{
    return *(void *const *)dispatchable;
}

/* The object whose key `dispatchable` carries, or NULL. */
static inline void *tlo_find(tlo_table *t, const void *dispatchable)
{
    if (!dispatchable)
        return NULL;
    void *key = tlo_dispatch_key(dispatchable);
    void *found = NULL;
    pthread_rwlock_rdlock(&t->lock);
    for (size_t i = 0; i < TLO_MAX_OBJECTS && !found; i++) {
        if (t->objs[i] && *(void *const *)t->objs[i] == key)
            found = t->objs[i];
    }
    pthread_rwlock_unlock(&t->lock);
    return found;
}

/* Adds `obj`; false when the table is full. */
static inline bool tlo_publish(tlo_table *t, void *obj)
{
    bool ok = false;
    pthread_rwlock_wrlock(&t->lock);
    for (size_t i = 0; i < TLO_MAX_OBJECTS && !ok; i++) {
        if (!t->objs[i]) {
            t->objs[i] = obj;
            ok = true;
        }
    }
    pthread_rwlock_unlock(&t->lock);
    return ok;
}

/* Removes `obj`; how many objects remain. */
static inline size_t tlo_unpublish(tlo_table *t, void *obj)
{
    size_t left = 0;
    pthread_rwlock_wrlock(&t->lock);
    for (size_t i = 0; i < TLO_MAX_OBJECTS; i++) {
        if (t->objs[i] == obj)
            t->objs[i] = NULL;
        else if (t->objs[i])
            left++;
    }
    pthread_rwlock_unlock(&t->lock);
    return left;
}

/* The loader's link to the next layer in a vkCreateInstance /
 * vkCreateDevice chain, with the chain advanced past it for the call down
 * (docs/LoaderLayerInterface.md); NULL when the loader's info is missing. */
static inline VkLayerInstanceLink *tlo_take_instance_link(const VkInstanceCreateInfo *info)
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

static inline VkLayerDeviceLink *tlo_take_device_link(const VkDeviceCreateInfo *info)
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

#endif
