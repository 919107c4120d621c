/* Stream capture: which streams a layer above captures (hal_internal.h explains it),
 * the open captures by serial, and the refusals, worded by the installed callbacks. */
#include "hal_internal.h"

/* Without a capturing layer nothing captures: these only stand in for its table. */
static bp_status refuse_alone(bp_capture_refusal refusal, const char *what,
                              const bp_device *device) {
    (void)refusal;
    return bp_set_error(BP_ERR_INVALID_STATE, "%s: a stream of %s is being captured", what,
                        device->name);
}

static void release_alone(bp_stream *stream) { (void)stream; }

static const bp_capture_callbacks callbacks_alone = {
    .refuse = refuse_alone,
    .release_stream_data = release_alone,
};
static _Atomic(const bp_capture_callbacks *) installed = &callbacks_alone;

void bp_capture_install(const bp_capture_callbacks *callbacks) {
    atomic_store_explicit(&installed, callbacks, memory_order_release);
}

static const bp_capture_callbacks *callbacks(void) {
    return atomic_load_explicit(&installed, memory_order_acquire);
}

bp_status bp_capture_refuse(bp_capture_refusal refusal, const char *what,
                            const bp_device *device) {
    return callbacks()->refuse(refusal, what, device);
}

/* ---- open captures ---- */

static atomic_uint_least64_t next_serial = 1;

/* Captures open now, linked through next_open: bp_event_synchronize asks by serial, so
 * an event never keeps a pointer to a stream that may be gone. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static bp_stream_capture *open_captures;

void bp_stream_capture_begin(bp_stream *stream, bp_stream_capture *capture) {
    capture->serial = atomic_fetch_add(&next_serial, 1);
    pthread_mutex_lock(&open_lock);
    capture->next_open = open_captures;
    open_captures = capture;
    pthread_mutex_unlock(&open_lock);
    stream->capture = capture;
    atomic_fetch_add(&stream->device->capturing, 1);
}

void bp_stream_capture_end(bp_stream *stream) {
    bp_stream_capture *capture = stream->capture;
    stream->capture = NULL;
    pthread_mutex_lock(&open_lock);
    bp_stream_capture **p = &open_captures;
    while (*p && *p != capture)
        p = &(*p)->next_open;
    if (*p)
        *p = capture->next_open;
    pthread_mutex_unlock(&open_lock);
    atomic_fetch_sub(&stream->device->capturing, 1);
}

bool bp_capture_serial_open(uint64_t serial) {
    bool open = false;
    pthread_mutex_lock(&open_lock);
    for (const bp_stream_capture *c = open_captures; c && !open; c = c->next_open)
        open = c->serial == serial;
    pthread_mutex_unlock(&open_lock);
    return open;
}

/* ---- streams being destroyed ---- */

bp_status bp_capture_stream_destroying(bp_stream *stream) {
    bp_status st = bp_stream_check_not_captured(stream, BP_CAPTURE_REFUSE_DESTROY,
                                                "bp_stream_destroy");
    if (st == BP_OK && stream->capture_data) {
        callbacks()->release_stream_data(stream);
        stream->capture_data = NULL;
    }
    return st;
}
