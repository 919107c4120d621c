/* Host functions on streams: bp_stream_launch_host_func, through the backend's
 * enqueue_host, or the core's fallback for a backend without one.
 *
 * The fallback. A stream gets a queue and a host thread at its first host function. A
 * launch records a backend event on the stream (it marks the work enqueued before)
 * and appends {event, fn, arg} to the queue; the thread takes the entries in order,
 * waits for the event, runs fn and counts it done. Until then the stream has pending
 * host functions (bp_stream.host_funcs_pending): every core path that hands the stream
 * new work calls bp_stream_host_funcs_wait first, so that work starts after fn;
 * query says NOT_READY; synchronize waits. An event recorded meanwhile keeps the queue
 * and the launch count it must see completed, so recording never blocks and a caller
 * can hold a stream on a host function and still record and query events on it.
 *
 * One mutex and one condition variable serve every queue: a plugin without
 * enqueue_host is rare, and the fast paths read only atomic counters. A queue lives as
 * long as its stream or an event that links to it (refs, under the mutex). */
#include <stdio.h>
#include <stdlib.h>

#include "hal_internal.h"

typedef struct host_item {
    bp_host_fn fn;
    void *arg;
    void *event; /* the backend's event recorded at the launch */
    struct host_item *next;
} host_item;

typedef struct bp_host_queue {
    int refs;               /* the stream's, and one per event linked to the queue */
    bp_stream *stream;      /* valid while the thread runs: destroy joins it first */
    host_item *head, *tail; /* launched, not yet taken by the thread */
    uint64_t launched;
    uint64_t completed;
    bool stop;
    pthread_t thread;
    pthread_cond_t work; /* signals the thread: an entry or stop */
    bp_status error;     /* the first failure of a wait for earlier work, not yet reported */
    char message[256];
} bp_host_queue;

static pthread_mutex_t queues_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queues_done = PTHREAD_COND_INITIALIZER; /* a host function returned */

/* Call with queues_lock held. */
static void queue_release(bp_host_queue *q) {
    if (--q->refs > 0)
        return;
    pthread_cond_destroy(&q->work);
    free(q);
}

static void *queue_thread(void *p) {
    bp_host_queue *q = p;
    const bp_event_vtable *ev = q->stream->device->backend->desc->event;
    pthread_mutex_lock(&queues_lock);
    for (;;) {
        while (!q->head && !q->stop)
            pthread_cond_wait(&q->work, &queues_lock);
        host_item *item = q->head;
        if (!item)
            break;
        q->head = item->next;
        if (!q->head)
            q->tail = NULL;
        pthread_mutex_unlock(&queues_lock);

        bp_status st = ev->synchronize(item->event);
        ev->destroy(item->event);
        /* fn runs even when the earlier work failed: it may be what releases a waiter;
         * the failure is reported by the stream's next synchronize. */
        item->fn(item->arg);

        pthread_mutex_lock(&queues_lock);
        if (st != BP_OK && q->error == BP_OK) {
            q->error = st;
            snprintf(q->message, sizeof q->message, "%s", bp_last_error());
        }
        q->completed++;
        atomic_fetch_sub_explicit(&q->stream->host_funcs_pending, 1, memory_order_release);
        atomic_fetch_sub_explicit(&q->stream->device->host_funcs_pending, 1,
                                  memory_order_release);
        pthread_cond_broadcast(&queues_done);
        free(item);
    }
    pthread_mutex_unlock(&queues_lock);
    return NULL;
}

/* The stream's queue, made (with its thread) on first use. Call with queues_lock held. */
static bp_status stream_queue(bp_stream *stream, bp_host_queue **out_queue) {
    bp_host_queue *q = atomic_load_explicit(&stream->host_queue, memory_order_relaxed);
    if (q) {
        *out_queue = q;
        return BP_OK;
    }
    q = calloc(1, sizeof *q);
    if (!q)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_stream_launch_host_func: cannot allocate "
                            "a host function queue for a stream of %s", stream->device->name);
    q->refs = 1;
    q->stream = stream;
    pthread_cond_init(&q->work, NULL);
    int err = pthread_create(&q->thread, NULL, queue_thread, q);
    if (err != 0) {
        pthread_cond_destroy(&q->work);
        free(q);
        return bp_set_error(BP_ERR_BACKEND, "bp_stream_launch_host_func: cannot start the host "
                            "thread for a stream of %s (pthread_create: error %d)",
                            stream->device->name, err);
    }
    atomic_store_explicit(&stream->host_queue, q, memory_order_release);
    *out_queue = q;
    return BP_OK;
}

static bp_status launch_fallback(bp_stream *stream, bp_host_fn fn, void *arg) {
    bp_device *device = stream->device;
    const bp_event_vtable *ev = device->backend->desc->event;
    host_item *item = calloc(1, sizeof *item);
    if (!item)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_stream_launch_host_func: cannot allocate "
                            "a host function entry on %s", device->name);
    item->fn = fn;
    item->arg = arg;
    bp_status st = ev->create(device->handle, 0, &item->event);
    if (st != BP_OK) {
        free(item);
        return bp_error_prefix(st, device->name);
    }
    /* Record and append under the lock: two launches on one stream keep their order. */
    pthread_mutex_lock(&queues_lock);
    bp_host_queue *q = NULL;
    st = stream_queue(stream, &q);
    if (st == BP_OK) {
        st = ev->record(item->event, stream->handle);
        if (st != BP_OK)
            st = bp_error_prefix(st, device->name);
    }
    if (st == BP_OK) {
        if (q->tail)
            q->tail->next = item;
        else
            q->head = item;
        q->tail = item;
        q->launched++;
        atomic_fetch_add_explicit(&stream->host_funcs_pending, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&device->host_funcs_pending, 1, memory_order_relaxed);
        pthread_cond_signal(&q->work);
    }
    pthread_mutex_unlock(&queues_lock);
    if (st != BP_OK) {
        ev->destroy(item->event);
        free(item);
    }
    return st;
}

/* The backend's enqueue_host, or NULL: the field arrived in ABI 1.1, so an older
 * plugin's table ends before it. */
static bp_status (*native_enqueue_host(const bp_stream_vtable *vt))(void *, void (*)(void *),
                                                                     void *) {
    if (vt->struct_size < BP_STRUCT_END(bp_stream_vtable, enqueue_host))
        return NULL;
    return vt->enqueue_host;
}

bp_status bp_stream_launch_host_func(bp_stream *stream, bp_host_fn fn, void *arg) {
    static const char what[] = "bp_stream_launch_host_func";
    if (!stream && !(stream = bp_current_stream(bp_current_device())))
        return bp_error_prefix(BP_ERR_INVALID_ARGUMENT, "bp_stream_launch_host_func: the stream "
                               "is NULL and the thread has no current stream");
    bp_status st = bp_stream_check(stream, what);
    if (st != BP_OK)
        return st;
    if (!fn)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: fn is NULL (stream on %s)", what,
                            stream->device->name);
    st = bp_stream_check_not_captured(stream, BP_CAPTURE_REFUSE_HOST_FUNC, what);
    if (st != BP_OK)
        return st;
    const bp_stream_vtable *vt = stream->device->backend->desc->stream;
    bp_status (*enqueue_host)(void *, void (*)(void *), void *) = native_enqueue_host(vt);
    if (!enqueue_host)
        return launch_fallback(stream, fn, arg);
    st = enqueue_host(stream->handle, fn, arg);
    return st == BP_OK ? st : bp_error_prefix(st, stream->device->name);
}

void bp_host_funcs_wait_slow(bp_stream *stream) {
    pthread_mutex_lock(&queues_lock);
    while (atomic_load_explicit(&stream->host_funcs_pending, memory_order_acquire) != 0)
        pthread_cond_wait(&queues_done, &queues_lock);
    pthread_mutex_unlock(&queues_lock);
}

bp_status bp_host_funcs_synchronize(bp_stream *stream) {
    if (!atomic_load_explicit(&stream->host_queue, memory_order_acquire))
        return BP_OK;
    bp_status st = BP_OK;
    char message[sizeof ((bp_host_queue *)0)->message];
    pthread_mutex_lock(&queues_lock);
    while (atomic_load_explicit(&stream->host_funcs_pending, memory_order_acquire) != 0)
        pthread_cond_wait(&queues_done, &queues_lock);
    bp_host_queue *q = atomic_load_explicit(&stream->host_queue, memory_order_relaxed);
    if (q->error != BP_OK) {
        st = q->error;
        snprintf(message, sizeof message, "%s", q->message);
        q->error = BP_OK;
    }
    pthread_mutex_unlock(&queues_lock);
    if (st != BP_OK)
        return bp_set_error(st, "%s: waiting for the work before a host function: %s",
                            stream->device->name, message);
    return BP_OK;
}

void bp_host_funcs_device_wait(bp_device *device) {
    if (atomic_load_explicit(&device->host_funcs_pending, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&queues_lock);
    while (atomic_load_explicit(&device->host_funcs_pending, memory_order_acquire) != 0)
        pthread_cond_wait(&queues_done, &queues_lock);
    pthread_mutex_unlock(&queues_lock);
}

void bp_host_funcs_stream_destroyed(bp_stream *stream) {
    bp_host_queue *q = atomic_load_explicit(&stream->host_queue, memory_order_acquire);
    if (!q)
        return;
    pthread_mutex_lock(&queues_lock);
    q->stop = true;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&queues_lock);
    pthread_join(q->thread, NULL);
    pthread_mutex_lock(&queues_lock);
    atomic_store_explicit(&stream->host_queue, NULL, memory_order_relaxed);
    queue_release(q);
    pthread_mutex_unlock(&queues_lock);
}

void bp_host_funcs_event_recorded(bp_event *event, const bp_stream *stream) {
    bp_host_queue *q = atomic_load_explicit(&stream->host_queue, memory_order_acquire);
    if (!q && !atomic_load_explicit(&event->host_queue, memory_order_acquire))
        return;
    pthread_mutex_lock(&queues_lock);
    bp_host_queue *old = atomic_load_explicit(&event->host_queue, memory_order_relaxed);
    bp_host_queue *linked = q && q->completed < q->launched ? q : NULL;
    if (linked) {
        linked->refs++;
        event->host_seq = linked->launched;
    }
    atomic_store_explicit(&event->host_queue, linked, memory_order_release);
    if (old)
        queue_release(old);
    pthread_mutex_unlock(&queues_lock);
}

/* Call with queues_lock held. */
static bool event_waits_locked(const bp_event *event) {
    const bp_host_queue *q = atomic_load_explicit(&event->host_queue, memory_order_relaxed);
    return q && q->completed < event->host_seq;
}

bool bp_host_funcs_event_pending(bp_event *event) {
    if (!atomic_load_explicit(&event->host_queue, memory_order_acquire))
        return false;
    pthread_mutex_lock(&queues_lock);
    bool pending = event_waits_locked(event);
    pthread_mutex_unlock(&queues_lock);
    return pending;
}

void bp_host_funcs_event_wait(bp_event *event) {
    if (!atomic_load_explicit(&event->host_queue, memory_order_acquire))
        return;
    pthread_mutex_lock(&queues_lock);
    while (event_waits_locked(event))
        pthread_cond_wait(&queues_done, &queues_lock);
    pthread_mutex_unlock(&queues_lock);
}

void bp_host_funcs_event_destroyed(bp_event *event) {
    if (!atomic_load_explicit(&event->host_queue, memory_order_acquire))
        return;
    pthread_mutex_lock(&queues_lock);
    bp_host_queue *q = atomic_load_explicit(&event->host_queue, memory_order_relaxed);
    atomic_store_explicit(&event->host_queue, NULL, memory_order_relaxed);
    if (q)
        queue_release(q);
    pthread_mutex_unlock(&queues_lock);
}
