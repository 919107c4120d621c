/* xpu: streams and events.
 *
 * A stream is an immediate command list (asynchronous mode) on the device's compute
 * queue group: commands are submitted as they are appended, with no queue, close or
 * execute step. Level Zero does not order the commands of a list by itself (API 1.4 has
 * no in-order flag: ZE_COMMAND_LIST_FLAG_IN_ORDER came with 1.9), so every command
 * signals an event of its own and waits on the event of the stream's previous command:
 * the stream is a chain. The newest command's event answers query (zeEventQueryStatus,
 * no new command) and synchronize (zeEventHostSynchronize; zeCommandListHostSynchronize
 * is API 1.6). A command's event goes back to the pool once the command after it is
 * done too (that one waited on it), or once it is the newest and done.
 *
 * An event is a marker: record appends a barrier (a timing event: a write of the
 * device's global timestamp) that waits on the stream's newest command and signals a
 * fresh event, then a chain barrier waiting on that marker, so that the stream's
 * synchronize covers the marker. A re-record takes a new marker, so commands already
 * waiting on the old one are unaffected. wait_event appends a chain barrier waiting on
 * the stream's newest command and the marker: the host thread never blocks. Host
 * functions are in xpu_host_func.c. */
#include "xpu_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the chain of commands ---- */

static void cmd_release(xpu_stream *s, xpu_cmd *c) {
    xpu_driver *drv = s->device->driver;
    xpu_zevent_release(drv, c->done);
    xpu_zevent_release(drv, c->held);
    if (c->staging)
        drv->backend->api.zeMemFree(drv->context, c->staging);
}

/* Releases the finished commands that no command waits on any more: those followed by
 * a finished command, and the newest when it is finished. Called with s->lock held. */
static void reclaim_locked(xpu_stream *s) {
    const xpu_api *api = &s->device->backend->api;
    size_t finished = 0;
    while (finished < s->n &&
           api->zeEventQueryStatus(s->cmds[finished].done->event) == ZE_RESULT_SUCCESS)
        finished++;
    size_t drop = finished == s->n ? finished : finished > 0 ? finished - 1 : 0;
    if (drop == 0)
        return;
    for (size_t i = 0; i < drop; i++)
        cmd_release(s, &s->cmds[i]);
    memmove(s->cmds, s->cmds + drop, (s->n - drop) * sizeof *s->cmds);
    s->n -= drop;
}

bp_status xpu_enqueue_begin(xpu_stream *s, xpu_zevent *extra, xpu_enqueue *e) {
    xpu_device *dev = s->device;
    memset(e, 0, sizeof *e);
    e->stream = s;
    pthread_mutex_lock(&s->lock);
    reclaim_locked(s);
    if (s->n == s->cap) {
        size_t ncap = s->cap ? 2 * s->cap : 16;
        xpu_cmd *grown = realloc(s->cmds, ncap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&s->lock);
            return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                                 "xpu:%d: out of host memory for a command",
                                                 dev->index);
        }
        s->cmds = grown;
        s->cap = ncap;
    }
    bp_status st = xpu_zevent_get(dev, &e->done);
    if (st != BP_OK) {
        pthread_mutex_unlock(&s->lock);
        return st;
    }
    if (s->n > 0)
        e->wait[e->nwait++] = s->cmds[s->n - 1].done->event;
    if (extra)
        e->wait[e->nwait++] = extra->event;
    return BP_OK;
}

bp_status xpu_enqueue_end(xpu_enqueue *e, ze_result_t r, const char *what, xpu_zevent *held,
                          void *staging) {
    xpu_stream *s = e->stream;
    xpu_cmd c = {.done = e->done, .held = held, .staging = staging};
    if (r == ZE_RESULT_SUCCESS)
        s->cmds[s->n++] = c;
    pthread_mutex_unlock(&s->lock);
    if (r == ZE_RESULT_SUCCESS)
        return BP_OK;
    cmd_release(s, &c); /* never appended: nothing on the device uses them */
    return xpu_fail(s->device, r, what);
}

void xpu_enqueue_cancel(xpu_enqueue *e) {
    xpu_stream *s = e->stream;
    pthread_mutex_unlock(&s->lock);
    xpu_zevent_release(s->device->driver, e->done);
}

/* The stream's newest command's event with a reference of the caller's, or NULL. */
static xpu_zevent *newest(xpu_stream *s) {
    pthread_mutex_lock(&s->lock);
    xpu_zevent *e = s->n ? s->cmds[s->n - 1].done : NULL;
    if (e)
        xpu_zevent_retain(s->device->driver, e);
    pthread_mutex_unlock(&s->lock);
    return e;
}

/* BP_OK when `e` is signalled, BP_ERR_NOT_READY (no message) when not, else an error. */
static bp_status zevent_status(xpu_device *dev, xpu_zevent *e, const char *what) {
    ze_result_t r = dev->backend->api.zeEventQueryStatus(e->event);
    if (r == ZE_RESULT_SUCCESS)
        return BP_OK;
    if (r == ZE_RESULT_NOT_READY)
        return BP_ERR_NOT_READY;
    return xpu_fail(dev, r, what);
}

static bp_status zevent_wait(xpu_device *dev, xpu_zevent *e, const char *what) {
    ze_result_t r = dev->backend->api.zeEventHostSynchronize(e->event, UINT64_MAX);
    return r == ZE_RESULT_SUCCESS ? BP_OK : xpu_fail(dev, r, what);
}

/* ---- streams ---- */

static bp_status stream_create(void *device, int priority, void **out_stream) {
    xpu_device *dev = device;
    (void)priority; /* one priority: the host clamps to 0..0 */
    xpu_stream *s = bp_plugin_calloc(dev->backend->host, XPU_NAME, dev->index, sizeof *s,
                                     "a stream");
    if (!s)
        return BP_ERR_OUT_OF_MEMORY;
    ze_command_queue_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                    .ordinal = dev->info.compute_ordinal,
                                    .index = 0,
                                    .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                    .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_result_t r = dev->backend->api.zeCommandListCreateImmediate(
        dev->driver->context, dev->info.handle, &desc, &s->list);
    if (r != ZE_RESULT_SUCCESS) {
        free(s);
        return xpu_fail(dev, r, "cannot create a stream (zeCommandListCreateImmediate)");
    }
    s->device = dev;
    pthread_mutex_init(&s->lock, NULL);
    bp_plugin_list_add(&dev->streams, &s->link);
    *out_stream = s;
    return BP_OK;
}

static bp_status stream_synchronize(void *stream) {
    xpu_stream *s = stream;
    xpu_zevent *last = newest(s);
    if (!last)
        return BP_OK;
    bp_status st = zevent_wait(s->device, last, "stream synchronize (zeEventHostSynchronize)");
    xpu_zevent_release(s->device->driver, last);
    pthread_mutex_lock(&s->lock);
    reclaim_locked(s);
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* Called after synchronize: nothing is pending. */
static void stream_destroy(void *stream) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    bp_plugin_list_remove(&dev->streams, &s->link);
    /* The host synchronized the stream; wait again in case that failed, so that no
     * event is reset while the device may still signal it. */
    if (s->n > 0)
        dev->backend->api.zeEventHostSynchronize(s->cmds[s->n - 1].done->event, UINT64_MAX);
    gpukit_host_thread_stop(s->host);
    for (size_t i = 0; i < s->n; i++)
        cmd_release(s, &s->cmds[i]);
    free(s->cmds);
    dev->backend->api.zeCommandListDestroy(s->list);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static bp_status stream_query(void *stream) {
    xpu_stream *s = stream;
    xpu_zevent *last = newest(s);
    if (!last)
        return BP_OK;
    bp_status st = zevent_status(s->device, last, "stream query (zeEventQueryStatus)");
    xpu_zevent_release(s->device->driver, last);
    return st;
}

bp_status xpu_device_synchronize(xpu_device *dev) {
    bp_status first = BP_OK;
    /* The list lock keeps the streams alive while we wait. */
    pthread_mutex_lock(&dev->streams.lock);
    for (bp_plugin_link *k = dev->streams.head; k; k = k->next) {
        bp_status st = stream_synchronize(BP_PLUGIN_CONTAINER_OF(k, xpu_stream, link));
        if (st != BP_OK && first == BP_OK)
            first = st;
    }
    pthread_mutex_unlock(&dev->streams.lock);
    return first;
}

/* ---- events ---- */

static bp_status event_create(void *device, int timing, void **out_event) {
    xpu_device *dev = device;
    xpu_event *ev = bp_plugin_calloc(dev->backend->host, XPU_NAME, dev->index, sizeof *ev,
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
    xpu_event *ev = event;
    xpu_zevent_release(ev->device->driver, ev->marker);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

/* The event's latest marker with a reference of the caller's, or NULL. */
static xpu_zevent *event_marker(xpu_event *ev) {
    pthread_mutex_lock(&ev->lock);
    xpu_zevent *m = ev->marker;
    if (m)
        xpu_zevent_retain(ev->device->driver, m);
    pthread_mutex_unlock(&ev->lock);
    return m;
}

static bp_status event_record(void *event, void *stream) {
    xpu_event *ev = event;
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    const xpu_api *api = &dev->backend->api;
    /* The host records an event only on a stream of the event's own device. */
    xpu_zevent *marker = NULL;
    bp_status st = xpu_zevent_get(dev, &marker);
    if (st != BP_OK)
        return st;
    xpu_enqueue e;
    st = xpu_enqueue_begin(s, NULL, &e);
    if (st != BP_OK) {
        xpu_zevent_release(dev->driver, marker);
        return st;
    }
    const char *what = ev->timing ? "event record (zeCommandListAppendWriteGlobalTimestamp)"
                                  : "event record (zeCommandListAppendBarrier)";
    ze_result_t r =
        ev->timing ? api->zeCommandListAppendWriteGlobalTimestamp(s->list, marker->timestamp,
                                                                  marker->event, e.nwait, e.wait)
                   : api->zeCommandListAppendBarrier(s->list, marker->event, e.nwait, e.wait);
    bool marker_appended = r == ZE_RESULT_SUCCESS;
    if (marker_appended) {
        what = "event record (zeCommandListAppendBarrier)";
        r = api->zeCommandListAppendBarrier(s->list, e.done->event, 1, &marker->event);
    }
    /* The chain command holds one reference to the marker, the event another. When the
     * marker was appended but the chain barrier failed, the device may still signal the
     * marker: its reference is kept (the pool frees it at close). */
    if (r == ZE_RESULT_SUCCESS)
        xpu_zevent_retain(dev->driver, marker);
    st = xpu_enqueue_end(&e, r, what, r == ZE_RESULT_SUCCESS ? marker : NULL, NULL);
    if (st != BP_OK) {
        if (!marker_appended)
            xpu_zevent_release(dev->driver, marker);
        return st;
    }
    pthread_mutex_lock(&ev->lock);
    xpu_zevent *old = ev->marker;
    ev->marker = marker;
    pthread_mutex_unlock(&ev->lock);
    xpu_zevent_release(dev->driver, old);
    return BP_OK;
}

static bp_status event_query(void *event) {
    xpu_event *ev = event;
    xpu_zevent *m = event_marker(ev);
    if (!m)
        return BP_OK;
    bp_status st = zevent_status(ev->device, m, "event query (zeEventQueryStatus)");
    xpu_zevent_release(ev->device->driver, m);
    return st;
}

static bp_status event_synchronize(void *event) {
    xpu_event *ev = event;
    xpu_zevent *m = event_marker(ev);
    if (!m)
        return BP_OK;
    bp_status st = zevent_wait(ev->device, m, "event synchronize (zeEventHostSynchronize)");
    xpu_zevent_release(ev->device->driver, m);
    return st;
}

static bp_status stream_wait_event(void *stream, void *event) {
    xpu_stream *s = stream;
    xpu_event *ev = event;
    xpu_device *dev = s->device;
    if (ev->device->driver != dev->driver)
        return dev->backend->host->set_error(
            BP_ERR_UNSUPPORTED,
            "xpu:%d: stream wait: the event was recorded on xpu:%d, a device of another Level "
            "Zero driver (events are shared within one driver's context only)",
            dev->index, ev->device->index);
    xpu_zevent *m = event_marker(ev);
    if (!m)
        return BP_OK;
    xpu_enqueue e;
    bp_status st = xpu_enqueue_begin(s, m, &e);
    if (st != BP_OK) {
        xpu_zevent_release(dev->driver, m);
        return st;
    }
    ze_result_t r = dev->backend->api.zeCommandListAppendBarrier(s->list, e.done->event, e.nwait,
                                                                 e.wait);
    return xpu_enqueue_end(&e, r, "stream wait (zeCommandListAppendBarrier)", m, NULL);
}

/* elapsed_ms's query of a marker (bp_plugin_elapsed_ready). */
static bp_status marker_status(void *dev, void *marker) {
    return zevent_status(dev, marker, "elapsed_ms (zeEventQueryStatus)");
}

static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    xpu_event *a = start, *b = end;
    xpu_device *dev = a->device;
    const bp_host_services *host = dev->backend->host;
    if (!a->timing || !b->timing)
        return host->set_error(BP_ERR_INVALID_ARGUMENT,
                               "xpu:%d: elapsed_ms: the %s event was created without timing",
                               dev->index, a->timing ? "end" : "start");
    xpu_zevent *ma = event_marker(a), *mb = event_marker(b);
    bp_status st =
        bp_plugin_elapsed_ready(host, XPU_NAME, dev->index, ma, mb, marker_status, dev);
    if (st == BP_OK && dev->info.timer_hz == 0)
        st = host->set_error(BP_ERR_UNSUPPORTED, "xpu:%d: elapsed_ms: the device reports no "
                             "timer resolution", dev->index);
    if (st == BP_OK && out_ms) {
        /* Both timestamps are of the one device's clock (the host times only events
         * of one device); the counter wraps at timestampValidBits. */
        uint32_t bits = dev->info.timestamp_bits;
        uint64_t mask = bits == 0 || bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
        uint64_t ticks = (*mb->timestamp - *ma->timestamp) & mask;
        *out_ms = (float)((double)ticks * 1e3 / (double)dev->info.timer_hz);
    }
    xpu_zevent_release(dev->driver, ma);
    xpu_zevent_release(dev->driver, mb);
    return st;
}

const bp_stream_vtable xpu_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stream_create,
    .destroy = stream_destroy,
    .synchronize = stream_synchronize,
    .query = stream_query,
    .wait_event = stream_wait_event,
    .enqueue_host = xpu_stream_enqueue_host,
};

const bp_event_vtable xpu_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
