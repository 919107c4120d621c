/* xpu: Level Zero events, from pools of the driver's context.
 *
 * A pool holds XPU_POOL_EVENTS host-visible events, visible to every device of the
 * context (numDevices 0), with signal and wait scope "host", so the host can query and
 * wait on them and any device of the driver can wait on them. Beside each pool is a
 * host USM array of one 64-bit word per event, where a timing record writes the
 * device's global timestamp (zeCommandListAppendWriteGlobalTimestamp).
 *
 * Events are reference-counted: a stream's command holds its completion event, an
 * xpu_event holds its latest marker, a waiting command holds the marker it waits on.
 * The last release resets the event on the host and puts it back in the free list. */
#include "xpu_internal.h"

#include <stdlib.h>
#include <string.h>

#define XPU_POOL_EVENTS 128

struct xpu_event_block {
    ze_event_pool_handle_t pool;
    uint64_t *stamps; /* host USM, XPU_POOL_EVENTS words */
    xpu_zevent slots[XPU_POOL_EVENTS];
    xpu_event_block *next;
};

void xpu_events_init(xpu_events *ev) {
    memset(ev, 0, sizeof *ev);
    pthread_mutex_init(&ev->lock, NULL);
}

static void block_free(xpu_driver *drv, xpu_event_block *b) {
    const xpu_api *api = &drv->backend->api;
    for (int i = 0; i < XPU_POOL_EVENTS; i++)
        if (b->slots[i].event)
            api->zeEventDestroy(b->slots[i].event);
    if (b->pool)
        api->zeEventPoolDestroy(b->pool);
    if (b->stamps)
        api->zeMemFree(drv->context, b->stamps);
    free(b);
}

void xpu_events_destroy(xpu_driver *drv) {
    xpu_events *ev = &drv->events;
    pthread_mutex_lock(&ev->lock);
    xpu_event_block *b = ev->blocks;
    ev->blocks = NULL;
    ev->free = NULL;
    pthread_mutex_unlock(&ev->lock);
    while (b) {
        xpu_event_block *next = b->next;
        block_free(drv, b);
        b = next;
    }
    pthread_mutex_destroy(&ev->lock);
}

/* A new pool with all its events in the free list. Called with the lock held. */
static bp_status grow_locked(xpu_device *dev) {
    xpu_driver *drv = dev->driver;
    const xpu_api *api = &drv->backend->api;
    xpu_event_block *b = bp_plugin_calloc(drv->backend->host, XPU_NAME, dev->index, sizeof *b,
                                          "an event pool");
    if (!b)
        return BP_ERR_OUT_OF_MEMORY;
    ze_event_pool_desc_t pdesc = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                  .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                  .count = XPU_POOL_EVENTS};
    ze_result_t r = api->zeEventPoolCreate(drv->context, &pdesc, 0, NULL, &b->pool);
    const char *what = "zeEventPoolCreate";
    if (r == ZE_RESULT_SUCCESS) {
        ze_host_mem_alloc_desc_t hdesc = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
        what = "zeMemAllocHost (the timestamps of an event pool)";
        r = api->zeMemAllocHost(drv->context, &hdesc, XPU_POOL_EVENTS * sizeof(uint64_t),
                                sizeof(uint64_t), (void **)&b->stamps);
    }
    for (uint32_t i = 0; i < XPU_POOL_EVENTS && r == ZE_RESULT_SUCCESS; i++) {
        ze_event_desc_t edesc = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                                 .index = i,
                                 .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                                 .wait = ZE_EVENT_SCOPE_FLAG_HOST};
        what = "zeEventCreate";
        r = api->zeEventCreate(b->pool, &edesc, &b->slots[i].event);
        b->slots[i].timestamp = &b->stamps[i];
    }
    if (r != ZE_RESULT_SUCCESS) {
        block_free(drv, b);
        return xpu_fail(dev, r, what);
    }
    for (int i = XPU_POOL_EVENTS - 1; i >= 0; i--) {
        b->slots[i].next_free = drv->events.free;
        drv->events.free = &b->slots[i];
    }
    b->next = drv->events.blocks;
    drv->events.blocks = b;
    return BP_OK;
}

bp_status xpu_zevent_get(xpu_device *dev, xpu_zevent **out) {
    xpu_events *ev = &dev->driver->events;
    bp_status st = BP_OK;
    pthread_mutex_lock(&ev->lock);
    if (!ev->free)
        st = grow_locked(dev);
    if (st == BP_OK) {
        xpu_zevent *e = ev->free;
        ev->free = e->next_free;
        e->next_free = NULL;
        e->refs = 1;
        *out = e;
    }
    pthread_mutex_unlock(&ev->lock);
    return st;
}

void xpu_zevent_retain(xpu_driver *drv, xpu_zevent *e) {
    pthread_mutex_lock(&drv->events.lock);
    e->refs++;
    pthread_mutex_unlock(&drv->events.lock);
}

void xpu_zevent_release(xpu_driver *drv, xpu_zevent *e) {
    if (!e)
        return;
    pthread_mutex_lock(&drv->events.lock);
    if (--e->refs == 0) {
        /* No command uses it any more (the holders' rule): reset for the next user. An
         * event whose reset fails is kept out of the free list (destroyed with its pool). */
        if (drv->backend->api.zeEventHostReset(e->event) == ZE_RESULT_SUCCESS) {
            e->next_free = drv->events.free;
            drv->events.free = e;
        }
    }
    pthread_mutex_unlock(&drv->events.lock);
}
