/* gpu: streams and events.
 *
 * Streams are non-blocking streams (they never wait for the legacy default stream)
 * with the priority asked for. While a region captures a stream (gpu_region.c), events
 * recorded on it are captured too: they are marked, queries of them say "not ready"
 * (the captured work has not run), and the region records them again after its
 * launch, so that they complete with the region's work. */
#include "gpu_internal.h"

#include <stdlib.h>

/* A query's result: done, not ready, or an error. */
static bp_status query_result(const gpu_device *dev, gpu_result r, const char *call) {
    if (r == GPU_SUCCESS)
        return BP_OK;
    if (dev->drv->classify(r) == GPU_RESULT_NOT_READY)
        return BP_ERR_NOT_READY;
    return gpu_fail(dev, r, "%s", call);
}

/* ---- streams ---- */

static bp_status stream_create(void *device, int priority, void **out_stream) {
    gpu_device *dev = device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_stream *s =
        bp_plugin_calloc(gpu_host, dev->drv->device_type, dev->index, sizeof *s, "a stream");
    if (!s)
        return BP_ERR_OUT_OF_MEMORY;
    s->device = dev;
    gpu_result r = dev->drv->stream_create(&s->handle, priority);
    if (r != GPU_SUCCESS) {
        free(s);
        return gpu_fail(dev, r, "%s", dev->drv->name.stream_create);
    }
    *out_stream = s;
    return BP_OK;
}

static void stream_destroy(void *stream) {
    gpu_stream *s = stream;
    gpu_device *dev = s->device;
    if (gpu_enter(dev) == BP_OK) {
        if (s->workspace)
            dev->drv->mem_free((uint64_t)(uintptr_t)s->workspace);
        dev->drv->stream_destroy(s->handle);
    }
    free(s);
}

static bp_status stream_synchronize(void *stream) {
    gpu_stream *s = stream;
    if (s->capturing)
        return gpu_error(s->device, BP_ERR_INVALID_ARGUMENT,
                         "cannot synchronize a stream while a region captures it");
    bp_status st = gpu_enter(s->device);
    if (st != BP_OK)
        return st;
    gpu_result r = s->device->drv->stream_synchronize(s->handle);
    return r == GPU_SUCCESS ? BP_OK
                            : gpu_fail(s->device, r, "%s", s->device->drv->name.stream_synchronize);
}

static bp_status stream_query(void *stream) {
    gpu_stream *s = stream;
    if (s->capturing)
        return BP_ERR_NOT_READY;
    if (gpu_enter(s->device) != BP_OK)
        return BP_ERR_NOT_READY;
    return query_result(s->device, s->device->drv->stream_query(s->handle),
                        s->device->drv->name.stream_query);
}

static bp_status stream_wait_event(void *stream, void *event) {
    gpu_stream *s = stream;
    gpu_event *e = event;
    if (s->capturing && e->captured_in != s->capturing)
        return gpu_region_defer_wait(s->capturing, e);
    bp_status st = gpu_enter(s->device);
    if (st != BP_OK)
        return st;
    gpu_result r = s->device->drv->stream_wait_event(s->handle, e->handle);
    return r == GPU_SUCCESS ? BP_OK
                            : gpu_fail(s->device, r, "%s", s->device->drv->name.stream_wait_event);
}

static bp_status stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    gpu_stream *s = stream;
    bp_status st = gpu_enter(s->device);
    if (st != BP_OK)
        return st;
    gpu_result r = s->device->drv->launch_host_func(s->handle, fn, arg);
    return r == GPU_SUCCESS ? gpu_enqueued(s)
                            : gpu_fail(s->device, r, "%s", s->device->drv->name.launch_host_func);
}

bp_status gpu_device_synchronize(gpu_device *dev) {
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_result r = dev->drv->ctx_synchronize();
    return r == GPU_SUCCESS ? BP_OK : gpu_fail(dev, r, "%s", dev->drv->name.ctx_synchronize);
}

void *gpu_stream_handle(const gpu_stream *s) {
    return s->handle;
}

bp_status gpu_stream_enqueued(gpu_stream *s) {
    return gpu_enqueued(s);
}

bp_status gpu_stream_workspace(gpu_stream *s, size_t size, void **out) {
    if (s->workspace_size >= size) {
        *out = s->workspace;
        return BP_OK;
    }
    gpu_device *dev = s->device;
    const gpu_driver *drv = dev->drv;
    if (s->capturing)
        return gpu_error(dev, BP_ERR_UNSUPPORTED,
                         "a kernel needs %zu bytes of stream workspace while a region captures "
                         "the stream, which has %zu",
                         size, s->workspace_size);
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    if (s->workspace) {
        /* Work already enqueued may still use the old one. */
        gpu_result r = drv->stream_synchronize(s->handle);
        if (r != GPU_SUCCESS)
            return gpu_fail(dev, r, "%s (growing the workspace)", drv->name.stream_synchronize);
        drv->mem_free((uint64_t)(uintptr_t)s->workspace);
        s->workspace = NULL;
        s->workspace_size = 0;
    }
    uint64_t p = 0;
    gpu_result r = drv->mem_alloc(&p, size);
    if (r != GPU_SUCCESS)
        return gpu_fail(dev, r, "%s (stream workspace)", drv->name.mem_alloc);
    s->workspace = (void *)(uintptr_t)p;
    s->workspace_size = size;
    *out = s->workspace;
    return BP_OK;
}

const bp_stream_vtable gpu_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stream_create,
    .destroy = stream_destroy,
    .synchronize = stream_synchronize,
    .query = stream_query,
    .wait_event = stream_wait_event,
    .enqueue_host = stream_enqueue_host,
};

/* ---- events ---- */

static bp_status event_create(void *device, int timing, void **out_event) {
    gpu_device *dev = device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_event *e =
        bp_plugin_calloc(gpu_host, dev->drv->device_type, dev->index, sizeof *e, "an event");
    if (!e)
        return BP_ERR_OUT_OF_MEMORY;
    e->device = dev;
    e->timing = timing != 0;
    gpu_result r = dev->drv->event_create(&e->handle, e->timing);
    if (r != GPU_SUCCESS) {
        free(e);
        return gpu_fail(dev, r, "%s", dev->drv->name.event_create);
    }
    *out_event = e;
    return BP_OK;
}

static void event_destroy(void *event) {
    gpu_event *e = event;
    gpu_region *r = __atomic_load_n(&e->captured_in, __ATOMIC_ACQUIRE);
    if (!r)
        r = e->waited_in;
    if (r)
        gpu_region_forget_event(r, e);
    if (gpu_enter(e->device) == BP_OK)
        e->device->drv->event_destroy(e->handle);
    free(e);
}

static bp_status event_record(void *event, void *stream) {
    gpu_event *e = event;
    gpu_stream *s = stream;
    bp_status st = gpu_enter(s->device);
    if (st != BP_OK)
        return st;
    gpu_result r = s->device->drv->event_record(e->handle, s->handle);
    if (r != GPU_SUCCESS)
        return gpu_fail(s->device, r, "%s", s->device->drv->name.event_record);
    __atomic_store_n(&e->captured_in, s->capturing, __ATOMIC_RELEASE);
    if (s->capturing)
        gpu_region_note_record(s->capturing, e);
    return BP_OK;
}

static bp_status event_query(void *event) {
    gpu_event *e = event;
    if (__atomic_load_n(&e->captured_in, __ATOMIC_ACQUIRE))
        return BP_ERR_NOT_READY; /* its work is captured, not yet launched */
    if (gpu_enter(e->device) != BP_OK)
        return BP_ERR_NOT_READY;
    return query_result(e->device, e->device->drv->event_query(e->handle),
                        e->device->drv->name.event_query);
}

static bp_status event_synchronize(void *event) {
    gpu_event *e = event;
    if (__atomic_load_n(&e->captured_in, __ATOMIC_ACQUIRE))
        return gpu_error(e->device, BP_ERR_INVALID_ARGUMENT,
                         "cannot wait for an event recorded inside a region that is still "
                         "being captured");
    bp_status st = gpu_enter(e->device);
    if (st != BP_OK)
        return st;
    gpu_result r = e->device->drv->event_synchronize(e->handle);
    return r == GPU_SUCCESS ? BP_OK
                            : gpu_fail(e->device, r, "%s", e->device->drv->name.event_synchronize);
}

static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    gpu_event *a = start, *b = end;
    if (!a->timing || !b->timing)
        return gpu_error(a->device, BP_ERR_INVALID_ARGUMENT,
                         "elapsed time needs two timing events");
    bp_status st = gpu_enter(a->device);
    if (st != BP_OK)
        return st;
    gpu_result r = a->device->drv->event_elapsed_ms(out_ms, a->handle, b->handle);
    return r == GPU_SUCCESS ? BP_OK
                            : gpu_fail(a->device, r, "%s", a->device->drv->name.event_elapsed_ms);
}

const bp_event_vtable gpu_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
