/* backplane: the current device and current stream of a thread, and scoped guards. */
#ifndef BACKPLANE_GUARD_H
#define BACKPLANE_GUARD_H

#include <backplane/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The calling thread's current device: the last one set by a guard still in scope,
 *  else the process default (bp_device_default()). NULL only when the default device
 *  cannot be opened (bp_last_error() says why). */
BP_API bp_device *bp_current_device(void);

/** The calling thread's current stream on `device`: the one set by a stream guard
 *  still in scope, else the device's default stream. NULL for a NULL device. */
BP_API bp_stream *bp_current_stream(bp_device *device);

/** The device that `device`'s backend itself holds current on the calling thread, as
 *  the backend reports it (ABI 1.2 bp_guard_vtable.get_current): with a CUDA backend,
 *  the device whose context is current. Guards keep it in step: a guard's begin makes
 *  its device current in the backend, and a guard's end makes the device it restores
 *  current again; ending the outermost guard leaves the backend's notion as it was.
 *  So it tells whether a backend really followed the guards.
 *  Errors: BP_ERR_INVALID_ARGUMENT for a NULL argument; BP_ERR_UNSUPPORTED when the
 *  backend does not report a current device (the built-in cpu backend, plugins older
 *  than ABI 1.2); BP_ERR_NOT_FOUND when it has none current on this thread; the
 *  backend's error when it fails. *out_device is NULL on every error. */
BP_API bp_status bp_device_backend_current(bp_device *device, bp_device **out_device);

/** Saved state of a device guard; treat the fields as private. */
typedef struct bp_device_guard {
    bp_device *previous;
    int active;
} bp_device_guard;

/** Saved state of a stream guard; treat the fields as private. */
typedef struct bp_stream_guard {
    bp_device_guard device_guard;
    bp_device *device;
    bp_stream *previous_stream;
    int active;
} bp_stream_guard;

/** Makes `device` the current device of this thread until bp_device_guard_end(guard).
 *  Guards nest: each end restores what its begin replaced. On error the guard is left
 *  inactive and its end is a no-op. */
BP_API bp_status bp_device_guard_begin(bp_device_guard *guard, bp_device *device);

/** Restores the device current before the matching begin. Idempotent. */
BP_API void bp_device_guard_end(bp_device_guard *guard);

/** Makes `stream` the current stream of its device, and its device the current
 *  device, until bp_stream_guard_end(guard). Nestable; errors as the device guard. */
BP_API bp_status bp_stream_guard_begin(bp_stream_guard *guard, bp_stream *stream);

/** Restores the stream and device current before the matching begin. Idempotent. */
BP_API void bp_stream_guard_end(bp_stream_guard *guard);

/* Scoped forms (GCC and Clang): the guard ends when the enclosing block is left, by
 * falling off its end, by return, break or goto, so error paths restore too.
 *
 *     bp_status st;
 *     BP_DEVICE_GUARD(dev, &st);
 *     if (st != BP_OK) return st;
 *     ... work on dev ...
 */
#define BP_GUARD_CAT_(a, b) a##b
#define BP_GUARD_CAT(a, b) BP_GUARD_CAT_(a, b)
#define BP_DEVICE_GUARD(device, out_status)                                                  \
    bp_device_guard BP_GUARD_CAT(bp_device_guard_, __LINE__)                                  \
        __attribute__((cleanup(bp_device_guard_end))) = {.active = 0};                                   \
    *(out_status) = bp_device_guard_begin(&BP_GUARD_CAT(bp_device_guard_, __LINE__), (device))
#define BP_STREAM_GUARD(stream, out_status)                                                  \
    bp_stream_guard BP_GUARD_CAT(bp_stream_guard_, __LINE__)                                  \
        __attribute__((cleanup(bp_stream_guard_end))) = {.active = 0};                           \
    *(out_status) = bp_stream_guard_begin(&BP_GUARD_CAT(bp_stream_guard_, __LINE__), (stream))

#ifdef __cplusplus
}
#endif
#endif
