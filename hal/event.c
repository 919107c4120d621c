/* Events: validation, the recorded flag, timing, and the calls into the backend. */
#include <stdlib.h>

#include "hal_internal.h"

bp_status bp_event_check(const bp_event *event, const char *what) {
    if (!event)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: event is NULL", what);
    unsigned magic = atomic_load_explicit(&event->magic, memory_order_relaxed);
    if (magic == BP_MAGIC_DEAD)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: event %p was destroyed", what,
                            (const void *)event);
    if (magic != BP_MAGIC_EVENT)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %p is not an event", what,
                            (const void *)event);
    return BP_OK;
}

bp_status bp_event_create(bp_device *device, unsigned flags, bp_event **out_event) {
    if (!device || !out_event)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_create: %s is NULL",
                            !device ? "device" : "out_event");
    if (flags & ~(unsigned)BP_EVENT_TIMING)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_create: unknown flags 0x%x",
                            flags & ~(unsigned)BP_EVENT_TIMING);
    bp_status st = bp_device_ensure_open(device);
    if (st != BP_OK)
        return st;
    bool timing = flags & BP_EVENT_TIMING;
    if (timing && !(device->props.capabilities & BP_CAP_TIMED_EVENTS))
        return bp_set_error(BP_ERR_UNSUPPORTED, "bp_event_create: %s has no timed events "
                            "(BP_CAP_TIMED_EVENTS)", device->name);
    bp_event *event = calloc(1, sizeof *event);
    if (!event)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate an event on %s", device->name);
    event->device = device;
    event->flags = flags;
    atomic_init(&event->recorded, false);
    st = device->backend->desc->event->create(device->handle, timing, &event->handle);
    if (st != BP_OK) {
        free(event);
        return bp_error_prefix(st, device->name);
    }
    atomic_init(&event->magic, BP_MAGIC_EVENT);
    *out_event = event;
    return BP_OK;
}

bp_status bp_event_destroy(bp_event *event) {
    if (!event)
        return BP_OK;
    bp_status st = bp_event_check(event, "bp_event_destroy");
    if (st != BP_OK)
        return st;
    unsigned expected = BP_MAGIC_EVENT;
    if (!atomic_compare_exchange_strong(&event->magic, &expected, BP_MAGIC_DEAD))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_destroy: event %p was destroyed",
                            (void *)event);
    bp_host_funcs_event_destroyed(event);
    event->device->backend->desc->event->destroy(event->handle);
    event->handle = NULL;
    bp_handle_retire(event);
    return BP_OK;
}

bp_status bp_event_record(bp_event *event, bp_stream *stream) {
    bp_status st = bp_event_check(event, "bp_event_record");
    if (st == BP_OK)
        st = bp_stream_check(stream, "bp_event_record");
    if (st != BP_OK)
        return st;
    if (stream->device != event->device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_record: the event belongs to %s "
                            "but the stream to %s", event->device->name, stream->device->name);
    st = event->device->backend->desc->event->record(event->handle, stream->handle);
    if (st != BP_OK)
        return bp_error_prefix(st, event->device->name);
    bp_host_funcs_event_recorded(event, stream);
    atomic_store(&event->recorded, true);
    /* Read by bp_event_synchronize: waiting for an event inside an open capture would
     * wait for work that has not been issued. */
    atomic_store_explicit(&event->capture_serial, stream->capture ? stream->capture->serial : 0,
                          memory_order_relaxed);
    return BP_OK;
}

bp_status bp_event_query(bp_event *event) {
    bp_status st = bp_event_check(event, "bp_event_query");
    if (st != BP_OK || !atomic_load(&event->recorded))
        return st;
    if (bp_host_funcs_event_pending(event))
        return BP_ERR_NOT_READY;
    st = event->device->backend->desc->event->query(event->handle);
    return st == BP_OK || st == BP_ERR_NOT_READY ? st : bp_error_prefix(st, event->device->name);
}

bp_status bp_event_synchronize(bp_event *event) {
    bp_status st = bp_event_check(event, "bp_event_synchronize");
    if (st != BP_OK || !atomic_load(&event->recorded))
        return st;
    uint64_t serial = atomic_load_explicit(&event->capture_serial, memory_order_relaxed);
    if (serial && bp_capture_serial_open(serial))
        return bp_capture_refuse(BP_CAPTURE_REFUSE_EVENT_SYNCHRONIZE, "bp_event_synchronize",
                                 event->device);
    bp_host_funcs_event_wait(event);
    st = event->device->backend->desc->event->synchronize(event->handle);
    return st == BP_OK ? st : bp_error_prefix(st, event->device->name);
}

static bp_status check_timing_event(const bp_event *event, const char *which) {
    if (!(event->flags & BP_EVENT_TIMING))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: the %s event was "
                            "created without BP_EVENT_TIMING", which);
    if (!atomic_load(&event->recorded))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: the %s event was never "
                            "recorded", which);
    return BP_OK;
}

bp_status bp_event_elapsed_ms(bp_event *start, bp_event *end, float *out_ms) {
    bp_status st = bp_event_check(start, "bp_event_elapsed_ms");
    if (st == BP_OK)
        st = bp_event_check(end, "bp_event_elapsed_ms");
    if (st == BP_OK && !out_ms)
        st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: out_ms is NULL");
    if (st == BP_OK)
        st = check_timing_event(start, "start");
    if (st == BP_OK)
        st = check_timing_event(end, "end");
    if (st != BP_OK)
        return st;
    if (start->device != end->device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_event_elapsed_ms: start is on %s but end "
                            "on %s", start->device->name, end->device->name);
    const bp_event_vtable *vt = start->device->backend->desc->event;
    bool start_done = vt->query(start->handle) != BP_ERR_NOT_READY &&
                      !bp_host_funcs_event_pending(start);
    if (!start_done || vt->query(end->handle) == BP_ERR_NOT_READY ||
        bp_host_funcs_event_pending(end))
        return bp_set_error(BP_ERR_NOT_READY, "bp_event_elapsed_ms: the %s event has not completed",
                            start_done ? "end" : "start");
    if (!vt->elapsed_ms)
        return bp_set_error(BP_ERR_UNSUPPORTED, "bp_event_elapsed_ms: backend '%s' cannot time events",
                            start->device->backend->name);
    st = vt->elapsed_ms(start->handle, end->handle, out_ms);
    return st == BP_OK ? st : bp_error_prefix(st, start->device->name);
}
