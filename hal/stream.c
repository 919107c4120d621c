/* Streams: validation, priorities, and the calls into the backend. */
#include <stdlib.h>

#include "hal_internal.h"

bp_status bp_stream_check(const bp_stream *stream, const char *what) {
    if (!stream)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: stream is NULL", what);
    unsigned magic = atomic_load_explicit(&stream->magic, memory_order_relaxed);
    if (magic == BP_MAGIC_DEAD)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: stream %p was destroyed", what,
                            (const void *)stream);
    if (magic != BP_MAGIC_STREAM)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %p is not a stream", what,
                            (const void *)stream);
    return BP_OK;
}

static int clamp_priority(const bp_device *device, int priority) {
    int greatest = device->props.stream_priority_greatest; /* numerically smallest */
    int least = device->props.stream_priority_least;
    if (greatest > least) {
        int t = greatest;
        greatest = least;
        least = t;
    }
    return priority < greatest ? greatest : priority > least ? least : priority;
}

static atomic_uint_least64_t next_stream_id = 1;

static bp_status create_stream(bp_device *device, int priority, bool is_default,
                               bp_stream **out_stream) {
    bp_stream *stream = calloc(1, sizeof *stream);
    if (!stream)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate a stream on %s", device->name);
    stream->id = atomic_fetch_add(&next_stream_id, 1);
    stream->device = device;
    stream->priority = clamp_priority(device, priority);
    stream->is_default = is_default;
    bp_status st = device->backend->desc->stream->create(device->handle, stream->priority,
                                                         &stream->handle);
    if (st != BP_OK) {
        free(stream);
        return bp_error_prefix(st, device->name);
    }
    atomic_init(&stream->magic, BP_MAGIC_STREAM);
    *out_stream = stream;
    return BP_OK;
}

bp_status bp_stream_create_default(bp_device *device, bp_stream **out_stream) {
    return create_stream(device, 0, true, out_stream);
}

bp_status bp_stream_create(bp_device *device, int priority, bp_stream **out_stream) {
    if (!device || !out_stream)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_stream_create: %s is NULL",
                            !device ? "device" : "out_stream");
    bp_status st = bp_device_ensure_open(device);
    return st == BP_OK ? create_stream(device, priority, false, out_stream) : st;
}

bp_status bp_stream_destroy(bp_stream *stream) {
    if (!stream)
        return BP_OK;
    bp_status st = bp_stream_check(stream, "bp_stream_destroy");
    if (st != BP_OK)
        return st;
    if (stream->is_default)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "bp_stream_destroy: the default stream of %s cannot be destroyed",
                            stream->device->name);
    st = bp_capture_stream_destroying(stream);
    if (st != BP_OK)
        return st;
    unsigned expected = BP_MAGIC_STREAM;
    if (!atomic_compare_exchange_strong(&stream->magic, &expected, BP_MAGIC_DEAD))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_stream_destroy: stream %p was destroyed",
                            (void *)stream);
    const bp_stream_vtable *vt = stream->device->backend->desc->stream;
    st = bp_host_funcs_synchronize(stream);
    bp_status backend_st = vt->synchronize(stream->handle);
    if (st == BP_OK)
        st = backend_st;
    bp_host_funcs_stream_destroyed(stream);
    bp_allocator_stream_destroyed(stream->device->allocator, stream);
    vt->destroy(stream->handle);
    stream->handle = NULL;
    bp_handle_retire(stream);
    return st == BP_OK ? BP_OK : bp_error_prefix(st, "bp_stream_destroy (work failed before it)");
}

bp_status bp_stream_default(bp_device *device, bp_stream **out_stream) {
    if (!device || !out_stream)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_stream_default: %s is NULL",
                            !device ? "device" : "out_stream");
    bp_status st = bp_device_ensure_open(device);
    if (st == BP_OK)
        *out_stream = device->default_stream;
    return st;
}

bp_device *bp_stream_device(const bp_stream *stream) {
    return bp_stream_check(stream, "bp_stream_device") == BP_OK ? stream->device : NULL;
}

bp_status bp_stream_get_priority(const bp_stream *stream, int *out_priority) {
    bp_status st = bp_stream_check(stream, "bp_stream_get_priority");
    if (st != BP_OK)
        return st;
    if (!out_priority)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_stream_get_priority: out_priority is NULL");
    *out_priority = stream->priority;
    return BP_OK;
}

bp_status bp_stream_synchronize(bp_stream *stream) {
    bp_status st = bp_stream_check(stream, "bp_stream_synchronize");
    if (st == BP_OK)
        st = bp_stream_check_not_captured(stream, BP_CAPTURE_REFUSE_SYNCHRONIZE,
                                          "bp_stream_synchronize");
    if (st == BP_OK)
        st = bp_host_funcs_synchronize(stream);
    if (st != BP_OK)
        return st;
    st = stream->device->backend->desc->stream->synchronize(stream->handle);
    return st == BP_OK ? st : bp_error_prefix(st, stream->device->name);
}

bp_status bp_stream_query(bp_stream *stream) {
    bp_status st = bp_stream_check(stream, "bp_stream_query");
    if (st != BP_OK)
        return st;
    if (atomic_load_explicit(&stream->host_funcs_pending, memory_order_acquire) != 0)
        return BP_ERR_NOT_READY; /* a fallback host function has not returned */
    st = stream->device->backend->desc->stream->query(stream->handle);
    return st == BP_OK || st == BP_ERR_NOT_READY ? st : bp_error_prefix(st, stream->device->name);
}

bp_status bp_stream_wait_event(bp_stream *stream, bp_event *event) {
    bp_status st = bp_stream_check(stream, "bp_stream_wait_event");
    if (st == BP_OK)
        st = bp_event_check(event, "bp_stream_wait_event");
    if (st != BP_OK)
        return st;
    if (!atomic_load(&event->recorded))
        return BP_OK;
    if (event->device->backend != stream->device->backend)
        return bp_event_synchronize(event);
    /* The wait is work on `stream`; and a backend cannot wait for the core's host
     * functions, so the host does (documented with bp_stream_launch_host_func). */
    bp_stream_host_funcs_wait(stream);
    bp_host_funcs_event_wait(event);
    st = stream->device->backend->desc->stream->wait_event(stream->handle, event->handle);
    return st == BP_OK ? st : bp_error_prefix(st, stream->device->name);
}
