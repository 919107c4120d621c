/* Events of the kit (cpukit.h).
 *
 * An event is the (queue, ticket) of its latest record: complete once that queue has
 * finished that many tasks. Stream and event state so come from one counter and
 * always agree, and a wait keeps the record it saw even if the event is re-recorded
 * on another stream. A timing record is a task that stamps the time; a plain record
 * needs no task at all (its ticket is the stream's last task). */
#include "cpukit_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cpukit_event {
    cpukit_device *device;
    atomic_uint refs; /* the host's handle + each queued timestamp task */
    pthread_mutex_t lock;
    bool timing;
    cpu_queue *queue; /* of the latest record (a reference); NULL = never recorded */
    uint64_t ticket;  /* the latest record is complete when `queue` reaches it */
    uint64_t seq;     /* records so far; the latest is number `seq` */
    uint64_t stamp_seq; /* latest record whose timestamp task has run */
    int64_t stamp_ns;   /* its CLOCK_MONOTONIC time */
} cpukit_event;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void event_release(cpukit_event *ev) {
    if (atomic_fetch_sub_explicit(&ev->refs, 1u, memory_order_acq_rel) != 1)
        return;
    if (ev->queue)
        cpu_queue_release(ev->queue);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

typedef struct stamp_task {
    cpukit_event *event;
    uint64_t seq;
} stamp_task;

/* The queue counts this task finished only after it returns, so whoever sees the
 * record complete also sees its timestamp. */
static void stamp_task_run(void *payload) {
    stamp_task t;
    memcpy(&t, payload, sizeof t);
    int64_t stamp = now_ns();
    pthread_mutex_lock(&t.event->lock);
    if (t.seq > t.event->stamp_seq) { /* an older record finishing late changes nothing */
        t.event->stamp_seq = t.seq;
        t.event->stamp_ns = stamp;
    }
    pthread_mutex_unlock(&t.event->lock);
    event_release(t.event);
}

static bp_status event_create(void *device, int timing, void **out_event) {
    cpukit_device *dev = device;
    cpukit_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return dev->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                    "%s: cannot allocate an event (%zu bytes)", dev->name,
                                    sizeof *ev);
    ev->device = dev;
    atomic_init(&ev->refs, 1u);
    pthread_mutex_init(&ev->lock, NULL);
    ev->timing = timing != 0;
    *out_event = ev;
    return BP_OK;
}

/* Queued timestamp tasks hold their own references, and waits hold the queue they
 * wait for, so pending work still completes. */
static void event_destroy(void *event) {
    event_release(event);
}

static bp_status event_record(void *event, void *stream) {
    cpukit_event *ev = event;
    cpukit_stream *s = stream;
    /* The event lock is held across the submit so that concurrent records of one
     * event take effect in one order. Workers never hold a queue lock while taking
     * an event lock, so this cannot deadlock. */
    pthread_mutex_lock(&ev->lock);
    uint64_t seq = ev->seq + 1, ticket = 0;
    if (ev->timing) {
        stamp_task t = {ev, seq};
        atomic_fetch_add_explicit(&ev->refs, 1u, memory_order_relaxed);
        bp_status st = cpukit_submit(s, "an event record", stamp_task_run, &t, sizeof t, &ticket);
        if (st != BP_OK) {
            atomic_fetch_sub_explicit(&ev->refs, 1u, memory_order_relaxed); /* not the last */
            pthread_mutex_unlock(&ev->lock);
            return st;
        }
    } else {
        ticket = cpu_queue_last_ticket(s->queue);
    }
    cpu_queue_retain(s->queue);
    if (ev->queue)
        cpu_queue_release(ev->queue);
    ev->queue = s->queue;
    ev->ticket = ticket;
    ev->seq = seq;
    pthread_mutex_unlock(&ev->lock);
    return BP_OK;
}

/* The queue and ticket of the event's latest record, with a reference on the queue
 * (NULL when never recorded). */
static cpu_queue *event_latest(cpukit_event *ev, uint64_t *out_ticket) {
    pthread_mutex_lock(&ev->lock);
    cpu_queue *q = ev->queue;
    *out_ticket = ev->ticket;
    if (q)
        cpu_queue_retain(q);
    pthread_mutex_unlock(&ev->lock);
    return q;
}

static bp_status event_query(void *event) {
    uint64_t ticket;
    cpu_queue *q = event_latest(event, &ticket);
    if (!q)
        return BP_OK;
    bool done = cpu_queue_done(q, ticket);
    cpu_queue_release(q);
    return done ? BP_OK : BP_ERR_NOT_READY;
}

static bp_status event_synchronize(void *event) {
    uint64_t ticket;
    cpu_queue *q = event_latest(event, &ticket);
    if (q) {
        cpu_queue_wait(q, ticket);
        cpu_queue_release(q);
    }
    return BP_OK;
}

bp_status cpukit_stream_wait_event(void *stream, void *event) {
    cpukit_stream *s = stream;
    uint64_t ticket;
    cpu_queue *q = event_latest(event, &ticket);
    if (!q) /* never recorded */
        return BP_OK;
    /* Takes over the reference on q, also on failure. */
    int err = cpu_queue_submit_wait(s->queue, q, ticket);
    return err ? cpukit_queue_error(s, "an event wait", err) : BP_OK;
}

/* Completion time of the event's latest record. */
static bp_status event_stamp(cpukit_event *ev, const char *which, int64_t *out_ns) {
    const cpukit_device *dev = ev->device;
    uint64_t ticket;
    cpu_queue *q = event_latest(ev, &ticket);
    if (!q)
        return dev->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                    "%s: elapsed_ms: the %s event was never recorded", dev->name,
                                    which);
    bool done = cpu_queue_done(q, ticket);
    cpu_queue_release(q);
    if (!done)
        return dev->host->set_error(BP_ERR_NOT_READY,
                                    "%s: elapsed_ms: the %s event has not completed", dev->name,
                                    which);
    pthread_mutex_lock(&ev->lock);
    *out_ns = ev->stamp_ns;
    pthread_mutex_unlock(&ev->lock);
    return BP_OK;
}

static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    cpukit_event *a = start, *b = end;
    if (!a->timing || !b->timing)
        return a->device->host->set_error(
            BP_ERR_INVALID_ARGUMENT,
            "%s: elapsed_ms needs two events created with BP_EVENT_TIMING "
            "(start has timing: %s, end has timing: %s)",
            a->device->name, a->timing ? "yes" : "no", b->timing ? "yes" : "no");
    int64_t t0 = 0, t1 = 0;
    bp_status st = event_stamp(a, "start", &t0);
    if (st == BP_OK)
        st = event_stamp(b, "end", &t1);
    if (st == BP_OK)
        *out_ms = (float)((double)(t1 - t0) / 1e6);
    return st;
}

const bp_event_vtable cpukit_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
