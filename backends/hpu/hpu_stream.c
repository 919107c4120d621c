/* hpu: streams and events.
 *
 * A stream is a cpu_queue worker (the real results, computed on the host) plus its
 * modelled state: ready_us, when its modelled work so far is done, and the graph it is
 * capturing into, if any. An event's latest record is either a ticket on a queue with
 * the modelled time of the record, or, when recorded on a capturing stream, the
 * completion of that graph. */
#include "hpu_graph.h"
#include "hpu_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- queue helpers ---- */

/* The status and message of a queue's errno value `err` (not 0) for `what`. */
static bp_status submit_error(hpu_stream *s, const char *what, int err) {
    const bp_host_services *host = s->device->backend->host;
    if (err == ENOMEM)
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "hpu:%d: cannot enqueue %s: the stream's queue cannot grow "
                               "(out of host memory)", s->device->index, what);
    return host->set_error(BP_ERR_INTERNAL, "hpu:%d: cannot enqueue %s (error %d)",
                           s->device->index, what, err);
}

bp_status hpu_submit(hpu_stream *s, const char *what, cpu_task_fn fn, const void *payload,
                     size_t size, uint64_t *out_ticket) {
    int err = cpu_queue_submit(s->queue, fn, payload, size, out_ticket);
    return err ? submit_error(s, what, err) : BP_OK;
}

bp_status hpu_submit_wait(hpu_stream *s, cpu_queue *queue, uint64_t ticket) {
    int err = cpu_queue_submit_wait(s->queue, queue, ticket);
    return err ? submit_error(s, "an event wait", err) : BP_OK;
}

/* ---- streams ---- */

static bp_status stream_create(void *device, int priority, void **out_stream) {
    hpu_device *dev = device;
    hpu_backend *be = dev->backend;
    hpu_stream *s = bp_plugin_calloc(be->host, HPU_NAME, dev->index, sizeof *s, "a stream");
    if (!s)
        return BP_ERR_OUT_OF_MEMORY;
    char name[16];
    snprintf(name, sizeof name, "bp-hpu%d-s%u", dev->index,
             atomic_fetch_add(&be->next_stream_id, 1u));
    int err = cpu_queue_create(name, NULL, &s->queue);
    if (err != 0) {
        free(s);
        return be->host->set_error(err == ENOMEM ? BP_ERR_OUT_OF_MEMORY : BP_ERR_BACKEND,
                                   "hpu:%d: cannot start a stream worker thread (%s)", dev->index,
                                   strerror(err));
    }
    s->device = dev;
    s->priority = priority;
    pthread_mutex_lock(&dev->lock);
    s->ready_us = dev->model.host_us;
    pthread_mutex_unlock(&dev->lock);
    bp_plugin_list_add(&dev->streams, &s->link);
    *out_stream = s;
    return BP_OK;
}

static void stream_destroy(void *stream) {
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    bp_plugin_list_remove(&dev->streams, &s->link);
    cpu_queue_destroy(s->queue);
    free(s);
}

static bp_status capturing_error(hpu_stream *s, const char *what) {
    return s->device->backend->host->set_error(
        BP_ERR_INVALID_STATE, "hpu:%d: %s: the stream is capturing a region; end it first",
        s->device->index, what);
}

static bp_status stream_synchronize(void *stream) {
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    pthread_mutex_lock(&dev->lock);
    bool capturing = s->graph != NULL;
    double ts = s->ready_us;
    pthread_mutex_unlock(&dev->lock);
    if (capturing)
        return capturing_error(s, "stream synchronize");
    cpu_queue_synchronize(s->queue);
    pthread_mutex_lock(&dev->lock);
    hpu_model_host_waited(&dev->model, ts);
    pthread_mutex_unlock(&dev->lock);
    return BP_OK;
}

static bp_status stream_query(void *stream) {
    hpu_stream *s = stream;
    return cpu_queue_idle(s->queue) ? BP_OK : BP_ERR_NOT_READY;
}

typedef struct host_fn_task {
    void (*fn)(void *arg);
    void *arg;
} host_fn_task;

static void host_fn_task_fn(void *payload) {
    host_fn_task t;
    memcpy(&t, payload, sizeof t);
    t.fn(t.arg);
}

/* Not modelled: a host function takes no device time. */
static bp_status stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    bp_status st = bp_plugin_check_host_fn(dev->backend->host, HPU_NAME, dev->index, fn);
    if (st != BP_OK)
        return st;
    host_fn_task t = {fn, arg};
    pthread_mutex_lock(&dev->lock);
    st = s->graph ? hpu_graph_add_host_fn(s->graph, fn, arg)
                  : hpu_submit(s, "a host function", host_fn_task_fn, &t, sizeof t, NULL);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

bp_status hpu_streams_synchronize(hpu_device *dev) {
    /* The list lock keeps streams alive during the waits; workers never take it. */
    pthread_mutex_lock(&dev->streams.lock);
    pthread_mutex_lock(&dev->lock);
    bool capturing = false;
    double ts = dev->model.host_us;
    for (bp_plugin_link *k = dev->streams.head; k; k = k->next) {
        const hpu_stream *s = BP_PLUGIN_CONTAINER_OF(k, hpu_stream, link);
        capturing = capturing || s->graph;
        if (s->ready_us > ts)
            ts = s->ready_us;
    }
    pthread_mutex_unlock(&dev->lock);
    if (capturing) {
        pthread_mutex_unlock(&dev->streams.lock);
        return dev->backend->host->set_error(
            BP_ERR_INVALID_STATE, "hpu:%d: device synchronize: a stream is capturing a region",
            dev->index);
    }
    for (bp_plugin_link *k = dev->streams.head; k; k = k->next)
        cpu_queue_synchronize(BP_PLUGIN_CONTAINER_OF(k, hpu_stream, link)->queue);
    pthread_mutex_unlock(&dev->streams.lock);
    pthread_mutex_lock(&dev->lock);
    hpu_model_host_waited(&dev->model, ts);
    pthread_mutex_unlock(&dev->lock);
    return BP_OK;
}

/* ---- events ---- */

typedef struct hpu_event {
    hpu_device *device;
    pthread_mutex_t lock;
    cpu_queue *queue; /* latest record outside a capture (a reference), or NULL */
    uint64_t ticket;
    double ts_us;     /* its modelled time */
    hpu_done *done;   /* latest record inside a capture (a reference), or NULL */
} hpu_event;

/* Where an event's latest record stands, with references of its own. */
typedef struct event_point {
    bool pending;     /* in a graph that has not been launched */
    hpu_done *done;   /* the graph's completion, or NULL */
    cpu_queue *queue; /* what to wait for, or NULL */
    uint64_t ticket;
    double ts_us;
} event_point;

static void point_get(hpu_event *ev, event_point *pt) {
    memset(pt, 0, sizeof *pt);
    pthread_mutex_lock(&ev->lock);
    if (ev->done) {
        pt->done = ev->done;
        hpu_done_retain(pt->done);
        hpu_done_state st = hpu_done_get(pt->done, &pt->queue, &pt->ticket, &pt->ts_us);
        pt->pending = st == HPU_DONE_CAPTURING;
    } else {
        pt->queue = ev->queue;
        if (pt->queue)
            cpu_queue_retain(pt->queue);
        pt->ticket = ev->ticket;
        pt->ts_us = ev->ts_us;
    }
    pthread_mutex_unlock(&ev->lock);
}

static void point_put(event_point *pt) {
    if (pt->queue)
        cpu_queue_release(pt->queue);
    hpu_done_release(pt->done);
}

static bool point_complete(const event_point *pt) {
    return !pt->pending && (!pt->queue || cpu_queue_done(pt->queue, pt->ticket));
}

static bp_status event_create(void *device, int timing, void **out_event) {
    hpu_device *dev = device;
    (void)timing; /* every event can be timed: its time is the model's */
    hpu_event *ev = bp_plugin_calloc(dev->backend->host, HPU_NAME, dev->index, sizeof *ev,
                                     "an event");
    if (!ev)
        return BP_ERR_OUT_OF_MEMORY;
    ev->device = dev;
    pthread_mutex_init(&ev->lock, NULL);
    *out_event = ev;
    return BP_OK;
}

/* Waits hold references of their own, so nothing pending needs the event. */
static void event_destroy(void *event) {
    hpu_event *ev = event;
    if (ev->queue)
        cpu_queue_release(ev->queue);
    hpu_done_release(ev->done);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

static bp_status event_record(void *event, void *stream) {
    hpu_event *ev = event;
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    pthread_mutex_lock(&ev->lock);
    cpu_queue *old_queue = ev->queue;
    hpu_done *old_done = ev->done;
    pthread_mutex_lock(&dev->lock);
    if (s->graph) {
        ev->done = hpu_graph_done(s->graph);
        hpu_done_retain(ev->done);
        ev->queue = NULL;
        ev->ticket = 0;
    } else {
        ev->done = NULL;
        ev->queue = s->queue;
        cpu_queue_retain(ev->queue);
        ev->ticket = cpu_queue_last_ticket(s->queue);
        ev->ts_us = hpu_model_record_ts(&dev->model, s->ready_us);
    }
    pthread_mutex_unlock(&dev->lock);
    pthread_mutex_unlock(&ev->lock);
    if (old_queue)
        cpu_queue_release(old_queue);
    hpu_done_release(old_done);
    return BP_OK;
}

static bp_status event_query(void *event) {
    event_point pt;
    point_get(event, &pt);
    bool complete = point_complete(&pt);
    point_put(&pt);
    return complete ? BP_OK : BP_ERR_NOT_READY;
}

static bp_status not_launched_error(hpu_device *dev) {
    return dev->backend->host->set_error(
        BP_ERR_INVALID_STATE, "hpu: event recorded in a region capture that has not been launched");
}

static bp_status event_synchronize(void *event) {
    hpu_event *ev = event;
    hpu_device *dev = ev->device;
    event_point pt;
    point_get(ev, &pt);
    if (pt.pending) {
        point_put(&pt);
        return not_launched_error(dev);
    }
    if (pt.queue)
        cpu_queue_wait(pt.queue, pt.ticket);
    pthread_mutex_lock(&dev->lock);
    hpu_model_host_waited(&dev->model, pt.ts_us);
    pthread_mutex_unlock(&dev->lock);
    point_put(&pt);
    return BP_OK;
}

static bp_status stream_wait_event(void *stream, void *event) {
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    event_point pt;
    point_get(event, &pt);
    bp_status st = BP_OK;
    pthread_mutex_lock(&dev->lock);
    if (s->graph && pt.done && pt.done == hpu_graph_done(s->graph)) {
        /* Recorded in this very capture: capture order already orders it. */
    } else if (pt.pending) {
        st = not_launched_error(dev);
    } else if (s->graph) {
        st = hpu_graph_add_wait(s->graph, pt.queue, pt.ticket, pt.ts_us);
        pt.queue = NULL; /* handed over */
    } else {
        if (pt.ts_us > s->ready_us)
            s->ready_us = pt.ts_us;
        if (pt.queue)
            st = hpu_submit_wait(s, pt.queue, pt.ticket);
        pt.queue = NULL; /* handed over */
    }
    pthread_mutex_unlock(&dev->lock);
    point_put(&pt);
    return st;
}

static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    hpu_event *a = start;
    event_point pa, pb;
    point_get(start, &pa);
    point_get(end, &pb);
    /* The simulator's events are one device's: the message names the backend alone. */
    bp_status st = bp_plugin_elapsed_completed(a->device->backend->host, HPU_NAME, -1,
                                               point_complete(&pa) ? BP_OK : BP_ERR_NOT_READY,
                                               point_complete(&pb) ? BP_OK : BP_ERR_NOT_READY);
    if (st == BP_OK && out_ms)
        *out_ms = (float)((pb.ts_us - pa.ts_us) / 1000.0);
    point_put(&pa);
    point_put(&pb);
    return st;
}

const bp_stream_vtable hpu_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stream_create,
    .destroy = stream_destroy,
    .synchronize = stream_synchronize,
    .query = stream_query,
    .wait_event = stream_wait_event,
    .enqueue_host = stream_enqueue_host,
};

const bp_event_vtable hpu_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
