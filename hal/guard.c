/* The current device and current streams of each thread, and the guards that set them. */
#include "hal_internal.h"

static _Thread_local bp_device *tls_device;
static _Thread_local bp_stream *tls_stream[BP_MAX_DEVICES]; /* by device slot */

/* The process default device, opened once it first succeeds. */
static _Atomic(bp_device *) default_device;

bp_device *bp_current_device(void) {
    if (tls_device)
        return tls_device;
    bp_device *device = atomic_load_explicit(&default_device, memory_order_acquire);
    if (device)
        return device;
    if (bp_device_default(&device) != BP_OK)
        return NULL;
    atomic_store_explicit(&default_device, device, memory_order_release);
    return device;
}

bp_stream *bp_current_stream(bp_device *device) {
    if (!device)
        return NULL;
    bp_stream *stream = tls_stream[device->slot];
    if (stream)
        return stream;
    return bp_device_ensure_open(device) == BP_OK ? device->default_stream : NULL;
}

/* Tells the device's backend that it became current on this thread, if it cares. */
static bp_status notify_backend(bp_device *device) {
    const bp_guard_vtable *guard = device->backend->desc->guard;
    if (!guard || !guard->set_current)
        return BP_OK;
    bp_status st = guard->set_current(device->handle);
    return st == BP_OK ? st : bp_error_prefix(st, device->name);
}

typedef bp_status (*get_current_fn)(void *backend, int *out_index);

/* get_current arrived in ABI 1.2: an older plugin's table ends before it, and the
 * host must not read past its struct_size. */
static get_current_fn guard_get_current(const bp_guard_vtable *guard) {
    if (!guard ||
        guard->struct_size < offsetof(bp_guard_vtable, get_current) + sizeof guard->get_current)
        return NULL;
    return guard->get_current;
}

/* The backend's device with `index` (as given to open); a device whose properties
 * could not be read is not registered, so positions and indices may differ. */
static bp_device *backend_device(const bp_backend *backend, int index) {
    for (int k = 0; k < backend->device_count; k++)
        if (backend->devices[k]->index == index)
            return backend->devices[k];
    return NULL;
}

bp_status bp_device_backend_current(bp_device *device, bp_device **out_device) {
    static const char what[] = "bp_device_backend_current";
    if (out_device)
        *out_device = NULL;
    if (!device || !out_device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                            !device ? "device" : "out_device");
    const bp_backend *backend = device->backend;
    get_current_fn get_current = guard_get_current(backend->desc->guard);
    if (!get_current)
        return bp_set_error(BP_ERR_UNSUPPORTED,
                            "%s: backend '%s' (of %s) does not report which of its devices is "
                            "current (its plugin has no guard get_current, ABI 1.2)",
                            what, backend->name, device->name);
    int index = -1;
    bp_status st = get_current(backend->state, &index);
    if (st == BP_ERR_NOT_FOUND)
        return bp_set_error(BP_ERR_NOT_FOUND,
                            "%s: backend '%s' has no device current on this thread", what,
                            backend->name);
    if (st != BP_OK)
        return bp_error_prefix(st, backend->name);
    bp_device *current = backend_device(backend, index);
    if (!current)
        return bp_set_error(BP_ERR_BACKEND,
                            "%s: backend '%s' reports device index %d as current, which is not "
                            "one of its %d devices",
                            what, backend->name, index, backend->device_count);
    *out_device = current;
    return BP_OK;
}

bp_status bp_device_guard_begin(bp_device_guard *guard, bp_device *device) {
    if (!guard)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_guard_begin: guard is NULL");
    guard->active = 0;
    if (!device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_guard_begin: device is NULL");
    bp_status st = bp_device_ensure_open(device);
    if (st == BP_OK)
        st = notify_backend(device);
    if (st != BP_OK)
        return st;
    guard->previous = tls_device;
    tls_device = device;
    guard->active = 1;
    return BP_OK;
}

void bp_device_guard_end(bp_device_guard *guard) {
    if (!guard || !guard->active)
        return;
    guard->active = 0;
    tls_device = guard->previous;
    /* The backend is told again even when the restored device is of the same backend
     * as the one ending: its own current device (a CUDA context) must follow. Restoring
     * cannot fail in a way the caller could act on at scope exit; an error is logged. */
    if (tls_device && notify_backend(tls_device) != BP_OK)
        bp_log(BP_LOG_WARN, "guard", "restoring %s: %s", tls_device->name, bp_last_error());
}

bp_status bp_stream_guard_begin(bp_stream_guard *guard, bp_stream *stream) {
    if (!guard)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_stream_guard_begin: guard is NULL");
    guard->active = 0;
    bp_status st = bp_stream_check(stream, "bp_stream_guard_begin");
    if (st == BP_OK)
        st = bp_device_guard_begin(&guard->device_guard, stream->device);
    if (st != BP_OK)
        return st;
    guard->device = stream->device;
    guard->previous_stream = tls_stream[stream->device->slot];
    tls_stream[stream->device->slot] = stream;
    guard->active = 1;
    return BP_OK;
}

void bp_stream_guard_end(bp_stream_guard *guard) {
    if (!guard || !guard->active)
        return;
    guard->active = 0;
    tls_stream[guard->device->slot] = guard->previous_stream;
    bp_device_guard_end(&guard->device_guard);
}
