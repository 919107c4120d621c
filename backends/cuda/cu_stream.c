/* cuda: streams and events.
 *
 * Streams are non-blocking CUDA streams (they never wait for the legacy default
 * stream) with the priority asked for. While a region captures a stream
 * (cu_region.c), events recorded on it are captured too: they are marked, queries of
 * them say "not ready" (the captured work has not run), and the region records them
 * again after its launch, so that they complete with the region's work. */
#include "cu_internal.h"

#include <stdlib.h>

/* ---- streams ---- */

static bp_status stream_create(void *device, int priority, void **out_stream) {
    cu_device *dev = device;
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    cu_stream *s = bp_plugin_calloc(cu_host, CU_NAME, dev->index, sizeof *s, "a stream");
    if (!s)
        return BP_ERR_OUT_OF_MEMORY;
    s->device = dev;
    CUresult r = dev->backend->api.cuStreamCreateWithPriority(&s->handle, CU_STREAM_NON_BLOCKING,
                                                              priority);
    if (r != CUDA_SUCCESS) {
        free(s);
        return cu_fail(dev, r, "cuStreamCreateWithPriority");
    }
    *out_stream = s;
    return BP_OK;
}

static void stream_destroy(void *stream) {
    cu_stream *s = stream;
    cu_device *dev = s->device;
    const cu_api *api = &dev->backend->api;
    if (cu_enter(dev) == BP_OK) {
        if (s->workspace)
            api->cuMemFree((CUdeviceptr)(uintptr_t)s->workspace);
        api->cuStreamDestroy(s->handle);
    }
    free(s);
}

static bp_status stream_synchronize(void *stream) {
    cu_stream *s = stream;
    if (s->capturing)
        return cu_host->set_error(BP_ERR_INVALID_ARGUMENT,
                                  "cuda:%d: cannot synchronize a stream while a region captures it",
                                  s->device->index);
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    CUresult r = s->device->backend->api.cuStreamSynchronize(s->handle);
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(s->device, r, "cuStreamSynchronize");
}

static bp_status stream_query(void *stream) {
    cu_stream *s = stream;
    if (s->capturing)
        return BP_ERR_NOT_READY;
    if (cu_enter(s->device) != BP_OK)
        return BP_ERR_NOT_READY;
    CUresult r = s->device->backend->api.cuStreamQuery(s->handle);
    if (r == CUDA_SUCCESS)
        return BP_OK;
    if (r == CUDA_ERROR_NOT_READY)
        return BP_ERR_NOT_READY;
    return cu_fail(s->device, r, "cuStreamQuery");
}

static bp_status stream_wait_event(void *stream, void *event) {
    cu_stream *s = stream;
    cu_event *e = event;
    if (s->capturing && e->captured_in != s->capturing)
        return cu_region_defer_wait(s->capturing, e);
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    CUresult r = s->device->backend->api.cuStreamWaitEvent(s->handle, e->handle, 0);
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(s->device, r, "cuStreamWaitEvent");
}

/* A host function through cuLaunchHostFunc, whose callback type differs only in its
 * calling convention annotation (none on Linux). */
static bp_status stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    cu_stream *s = stream;
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    CUresult r = s->device->backend->api.cuLaunchHostFunc(s->handle, fn, arg);
    return r == CUDA_SUCCESS ? cu_stream_enqueued(s) : cu_fail(s->device, r, "cuLaunchHostFunc");
}

bp_status cu_device_synchronize(cu_device *dev) {
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    CUresult r = dev->backend->api.cuCtxSynchronize();
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(dev, r, "cuCtxSynchronize");
}

bp_status cu_stream_workspace(cu_stream *s, size_t size, void **out) {
    if (s->workspace_size >= size) {
        *out = s->workspace;
        return BP_OK;
    }
    cu_device *dev = s->device;
    if (s->capturing)
        return cu_host->set_error(BP_ERR_UNSUPPORTED,
                                  "cuda:%d: a kernel needs %zu bytes of stream workspace while a "
                                  "region captures the stream, which has %zu",
                                  dev->index, size, s->workspace_size);
    const cu_api *api = &dev->backend->api;
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    if (s->workspace) {
        /* Work already enqueued may still use the old one. */
        CUresult r = api->cuStreamSynchronize(s->handle);
        if (r != CUDA_SUCCESS)
            return cu_fail(dev, r, "cuStreamSynchronize (growing the workspace)");
        api->cuMemFree((CUdeviceptr)(uintptr_t)s->workspace);
        s->workspace = NULL;
        s->workspace_size = 0;
    }
    CUdeviceptr p = 0;
    CUresult r = api->cuMemAlloc(&p, size);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, r, "cuMemAlloc (stream workspace)");
    s->workspace = (void *)(uintptr_t)p;
    s->workspace_size = size;
    *out = s->workspace;
    return BP_OK;
}

const bp_stream_vtable cu_stream_vtable = {
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
    cu_device *dev = device;
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    cu_event *e = bp_plugin_calloc(cu_host, CU_NAME, dev->index, sizeof *e, "an event");
    if (!e)
        return BP_ERR_OUT_OF_MEMORY;
    e->device = dev;
    e->timing = timing != 0;
    CUresult r = dev->backend->api.cuEventCreate(&e->handle,
                                                 timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
        free(e);
        return cu_fail(dev, r, "cuEventCreate");
    }
    *out_event = e;
    return BP_OK;
}

static void event_destroy(void *event) {
    cu_event *e = event;
    cu_region *r = __atomic_load_n(&e->captured_in, __ATOMIC_ACQUIRE);
    if (!r)
        r = e->waited_in;
    if (r)
        cu_region_forget_event(r, e);
    if (cu_enter(e->device) == BP_OK)
        e->device->backend->api.cuEventDestroy(e->handle);
    free(e);
}

static bp_status event_record(void *event, void *stream) {
    cu_event *e = event;
    cu_stream *s = stream;
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    CUresult r = s->device->backend->api.cuEventRecord(e->handle, s->handle);
    if (r != CUDA_SUCCESS)
        return cu_fail(s->device, r, "cuEventRecord");
    __atomic_store_n(&e->captured_in, s->capturing, __ATOMIC_RELEASE);
    if (s->capturing)
        cu_region_note_record(s->capturing, e);
    return BP_OK;
}

static bp_status event_query(void *event) {
    cu_event *e = event;
    if (__atomic_load_n(&e->captured_in, __ATOMIC_ACQUIRE))
        return BP_ERR_NOT_READY; /* its work is captured, not yet launched */
    if (cu_enter(e->device) != BP_OK)
        return BP_ERR_NOT_READY;
    CUresult r = e->device->backend->api.cuEventQuery(e->handle);
    if (r == CUDA_SUCCESS)
        return BP_OK;
    if (r == CUDA_ERROR_NOT_READY)
        return BP_ERR_NOT_READY;
    return cu_fail(e->device, r, "cuEventQuery");
}

static bp_status event_synchronize(void *event) {
    cu_event *e = event;
    if (__atomic_load_n(&e->captured_in, __ATOMIC_ACQUIRE))
        return cu_host->set_error(BP_ERR_INVALID_ARGUMENT,
                                  "cuda:%d: cannot wait for an event recorded inside a region "
                                  "that is still being captured",
                                  e->device->index);
    bp_status st = cu_enter(e->device);
    if (st != BP_OK)
        return st;
    CUresult r = e->device->backend->api.cuEventSynchronize(e->handle);
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(e->device, r, "cuEventSynchronize");
}

static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    cu_event *a = start, *b = end;
    if (!a->timing || !b->timing)
        return cu_host->set_error(BP_ERR_INVALID_ARGUMENT,
                                  "cuda:%d: elapsed time needs two timing events",
                                  a->device->index);
    bp_status st = cu_enter(a->device);
    if (st != BP_OK)
        return st;
    CUresult r = a->device->backend->api.cuEventElapsedTime(out_ms, a->handle, b->handle);
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(a->device, r, "cuEventElapsedTime");
}

const bp_event_vtable cu_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
