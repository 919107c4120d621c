/* opencl: streams and events.
 *
 * A stream is an in-order command queue (with profiling when the device has it). It
 * keeps the event of the latest command enqueued on it: query is that event's status,
 * so polling needs no new commands. Every enqueue flushes the queue, so that work
 * starts without a later synchronize and another queue may wait on it.
 *
 * An event is a marker: record enqueues one on the stream and replaces the marker the
 * event held (waits already enqueued keep their own reference to the old one). Timing
 * reads the markers' CL_PROFILING_COMMAND_END. A wait between queues of one context is
 * a barrier on the marker; across contexts (two devices) a user event of the waiting
 * context is completed by a callback of the marker, so neither blocks the host.
 * Host functions are in ocl_host_func.c. */
#include "ocl_internal.h"

#include <stdlib.h>
#include <string.h>

void ocl_stream_push_locked(ocl_stream *s, cl_event ev) {
    const ocl_api *api = &s->device->backend->api;
    if (s->last)
        api->clReleaseEvent(s->last);
    s->last = ev;
    api->clFlush(s->queue);
}

/* ---- streams ---- */

static bp_status stream_create(void *device, int priority, void **out_stream) {
    ocl_device *dev = device;
    (void)priority; /* one priority: the host clamps to 0..0 */
    ocl_stream *s = bp_plugin_calloc(dev->backend->host, OCL_NAME, dev->index, sizeof *s,
                                     "a stream");
    if (!s)
        return BP_ERR_OUT_OF_MEMORY;
    cl_int err = CL_SUCCESS;
    cl_command_queue_properties props = dev->info.profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    s->queue = dev->backend->api.clCreateCommandQueue(dev->context, dev->info.id, props, &err);
    if (!s->queue) {
        free(s);
        return ocl_fail(dev, err, "cannot create a stream (clCreateCommandQueue)");
    }
    s->device = dev;
    pthread_mutex_init(&s->lock, NULL);
    bp_plugin_list_add(&dev->streams, &s->link);
    *out_stream = s;
    return BP_OK;
}

/* Called after synchronize: nothing is pending. */
static void stream_destroy(void *stream) {
    ocl_stream *s = stream;
    ocl_device *dev = s->device;
    const ocl_api *api = &dev->backend->api;
    bp_plugin_list_remove(&dev->streams, &s->link);
    api->clFinish(s->queue);
    ocl_host_thread_stop(s);
    if (s->last)
        api->clReleaseEvent(s->last);
    api->clReleaseCommandQueue(s->queue);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static bp_status stream_synchronize(void *stream) {
    ocl_stream *s = stream;
    cl_int err = s->device->backend->api.clFinish(s->queue);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(s->device, err, "stream synchronize (clFinish)");
}

/* BP_OK when `ev` completed, BP_ERR_NOT_READY when not (no message), an error with a
 * message when the command failed. */
static bp_status event_status(ocl_device *dev, cl_event ev) {
    cl_int status = CL_COMPLETE;
    cl_int err = dev->backend->api.clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                                  sizeof status, &status, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(dev, err, "clGetEventInfo");
    if (status < 0)
        return ocl_fail(dev, status, "a command of the stream failed");
    return status == CL_COMPLETE ? BP_OK : BP_ERR_NOT_READY;
}

static bp_status stream_query(void *stream) {
    ocl_stream *s = stream;
    const ocl_api *api = &s->device->backend->api;
    pthread_mutex_lock(&s->lock);
    cl_event last = s->last;
    if (last)
        api->clRetainEvent(last);
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return BP_OK;
    bp_status st = event_status(s->device, last);
    api->clReleaseEvent(last);
    return st;
}

bp_status ocl_device_synchronize(ocl_device *dev) {
    const ocl_api *api = &dev->backend->api;
    cl_int err = CL_SUCCESS;
    /* The list lock keeps the streams alive while we wait. */
    pthread_mutex_lock(&dev->streams.lock);
    for (bp_plugin_link *k = dev->streams.head; k; k = k->next) {
        cl_int e = api->clFinish(BP_PLUGIN_CONTAINER_OF(k, ocl_stream, link)->queue);
        if (e != CL_SUCCESS && err == CL_SUCCESS)
            err = e;
    }
    pthread_mutex_unlock(&dev->streams.lock);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(dev, err, "device synchronize (clFinish)");
}

/* ---- events ---- */

static bp_status event_create(void *device, int timing, void **out_event) {
    ocl_device *dev = device;
    ocl_event *ev = bp_plugin_calloc(dev->backend->host, OCL_NAME, dev->index, sizeof *ev,
                                     "an event");
    if (!ev)
        return BP_ERR_OUT_OF_MEMORY;
    ev->device = dev;
    ev->timing = timing;
    pthread_mutex_init(&ev->lock, NULL);
    *out_event = ev;
    return BP_OK;
}

static void event_destroy(void *event) {
    ocl_event *ev = event;
    if (ev->marker)
        ev->device->backend->api.clReleaseEvent(ev->marker);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

/* The event's latest marker with a reference of the caller's, or NULL. */
static cl_event event_marker(ocl_event *ev) {
    pthread_mutex_lock(&ev->lock);
    cl_event m = ev->marker;
    if (m)
        ev->device->backend->api.clRetainEvent(m);
    pthread_mutex_unlock(&ev->lock);
    return m;
}

static bp_status event_record(void *event, void *stream) {
    ocl_event *ev = event;
    ocl_stream *s = stream;
    const ocl_api *api = &s->device->backend->api;
    cl_event m = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = api->clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &m);
    if (err == CL_SUCCESS) {
        api->clRetainEvent(m); /* one reference for the stream, one for the event */
        ocl_stream_push_locked(s, m);
    }
    pthread_mutex_unlock(&s->lock);
    if (err != CL_SUCCESS)
        return ocl_fail(s->device, err, "event record (clEnqueueMarkerWithWaitList)");
    pthread_mutex_lock(&ev->lock);
    cl_event old = ev->marker;
    ev->marker = m;
    pthread_mutex_unlock(&ev->lock);
    if (old)
        api->clReleaseEvent(old);
    return BP_OK;
}

static bp_status event_query(void *event) {
    ocl_event *ev = event;
    cl_event m = event_marker(ev);
    if (!m)
        return BP_OK;
    bp_status st = event_status(ev->device, m);
    ev->device->backend->api.clReleaseEvent(m);
    return st;
}

static bp_status event_synchronize(void *event) {
    ocl_event *ev = event;
    cl_event m = event_marker(ev);
    if (!m)
        return BP_OK;
    cl_int err = ev->device->backend->api.clWaitForEvents(1, &m);
    ev->device->backend->api.clReleaseEvent(m);
    return err == CL_SUCCESS ? BP_OK
                             : ocl_fail(ev->device, err, "event synchronize (clWaitForEvents)");
}

/* Completes the user event standing for a marker of another context. */
typedef struct bridge {
    const ocl_api *api;
    cl_event user;
} bridge;

static void CL_CALLBACK bridge_done(cl_event marker, cl_int status, void *arg) {
    (void)marker;
    bridge *b = arg;
    b->api->clSetUserEventStatus(b->user, status < 0 ? status : CL_COMPLETE);
    b->api->clReleaseEvent(b->user);
    free(b);
}

/* A user event of s's context that completes when `m` does. */
static bp_status bridge_event(ocl_stream *s, cl_event m, cl_event *out) {
    ocl_device *dev = s->device;
    const ocl_api *api = &dev->backend->api;
    cl_int err = CL_SUCCESS;
    cl_event user = api->clCreateUserEvent(dev->context, &err);
    if (!user)
        return ocl_fail(dev, err, "wait on another device's event (clCreateUserEvent)");
    bridge *b = malloc(sizeof *b);
    if (!b) {
        api->clReleaseEvent(user);
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "opencl:%d: out of host memory for an event wait",
                                             dev->index);
    }
    b->api = api;
    b->user = user;
    api->clRetainEvent(user); /* the callback's reference */
    err = api->clSetEventCallback(m, CL_COMPLETE, bridge_done, b);
    if (err != CL_SUCCESS) {
        api->clReleaseEvent(user);
        api->clReleaseEvent(user);
        free(b);
        return ocl_fail(dev, err, "wait on another device's event (clSetEventCallback)");
    }
    *out = user;
    return BP_OK;
}

static bp_status stream_wait_event(void *stream, void *event) {
    ocl_stream *s = stream;
    ocl_event *ev = event;
    const ocl_api *api = &s->device->backend->api;
    cl_event m = event_marker(ev);
    if (!m)
        return BP_OK;
    cl_event waited = m;
    bp_status st = BP_OK;
    if (ev->device->context != s->device->context) {
        st = bridge_event(s, m, &waited);
        api->clReleaseEvent(m);
        if (st != BP_OK)
            return st;
    }
    cl_event barrier = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = api->clEnqueueBarrierWithWaitList(s->queue, 1, &waited, &barrier);
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, barrier);
    pthread_mutex_unlock(&s->lock);
    api->clReleaseEvent(waited);
    return err == CL_SUCCESS
               ? BP_OK
               : ocl_fail(s->device, err, "stream wait (clEnqueueBarrierWithWaitList)");
}

/* elapsed_ms's query of a marker (bp_plugin_elapsed_ready). */
static bp_status marker_status(void *dev, void *marker) {
    return event_status(dev, marker);
}

static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    ocl_event *a = start, *b = end;
    ocl_device *dev = a->device;
    const ocl_api *api = &dev->backend->api;
    const bp_host_services *host = dev->backend->host;
    cl_event ma = event_marker(a), mb = event_marker(b);
    cl_ulong ta = 0, tb = 0;
    bp_status st =
        bp_plugin_elapsed_ready(host, OCL_NAME, dev->index, ma, mb, marker_status, dev);
    if (st == BP_OK) {
        cl_int err = api->clGetEventProfilingInfo(ma, CL_PROFILING_COMMAND_END, sizeof ta, &ta,
                                                  NULL);
        if (err == CL_SUCCESS)
            err = api->clGetEventProfilingInfo(mb, CL_PROFILING_COMMAND_END, sizeof tb, &tb,
                                               NULL);
        if (err != CL_SUCCESS)
            st = ocl_fail(dev, err, "elapsed_ms (clGetEventProfilingInfo)");
    }
    if (st == BP_OK && out_ms)
        *out_ms = (float)(((double)tb - (double)ta) / 1e6);
    if (ma)
        api->clReleaseEvent(ma);
    if (mb)
        api->clReleaseEvent(mb);
    return st;
}

const bp_stream_vtable ocl_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stream_create,
    .destroy = stream_destroy,
    .synchronize = stream_synchronize,
    .query = stream_query,
    .wait_event = stream_wait_event,
    .enqueue_host = ocl_stream_enqueue_host,
};

const bp_event_vtable ocl_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
