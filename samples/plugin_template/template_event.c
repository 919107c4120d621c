/* Events. Each record puts a marker in the stream: a work item that marks the record
 * reached (and takes its timestamp) when the stream gets there. The event points to the
 * marker of its latest record; a wait or a synchronize keeps the marker it saw, so a
 * later record of the same event (on another stream, say) does not change what an
 * earlier wait waits for. Markers are counted references: the event and every work
 * item that uses one hold one, so destroying an event never frees a marker that a
 * stream still needs. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdlib.h>
#include <time.h>

#include "template.h"

typedef struct template_marker {
    atomic_uint refs;
    pthread_mutex_t lock;
    pthread_cond_t reached_cond;
    bool reached;
    struct timespec when; /* CLOCK_MONOTONIC, when the stream reached the marker */
} template_marker;

typedef struct template_event {
    template_device *device;
    bool timing;
    pthread_mutex_t lock;     /* guards latest */
    template_marker *latest;  /* of the latest record; NULL before the first */
} template_event;

/* A marker with two references: the event's and its work item's. */
static template_marker *marker_new(void) {
    template_marker *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    atomic_init(&m->refs, 2u);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->reached_cond, NULL);
    return m;
}

static void marker_free(template_marker *m) {
    pthread_cond_destroy(&m->reached_cond);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void marker_release(template_marker *m) {
    if (m && atomic_fetch_sub(&m->refs, 1u) == 1u)
        marker_free(m);
}

static bool marker_reached(template_marker *m) {
    pthread_mutex_lock(&m->lock);
    bool reached = m->reached;
    pthread_mutex_unlock(&m->lock);
    return reached;
}

static void marker_wait(template_marker *m) {
    pthread_mutex_lock(&m->lock);
    while (!m->reached)
        pthread_cond_wait(&m->reached_cond, &m->lock);
    pthread_mutex_unlock(&m->lock);
}

/* The marker of the event's latest record, with a reference for the caller. */
static template_marker *latest_marker(template_event *e) {
    pthread_mutex_lock(&e->lock);
    template_marker *m = e->latest;
    if (m)
        atomic_fetch_add(&m->refs, 1u);
    pthread_mutex_unlock(&e->lock);
    return m;
}

/* ---- work items; each owns one reference to its marker ---- */

static void reach_run(void *args) {
    template_marker *m = *(template_marker **)args;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&m->lock);
    m->when = now;
    m->reached = true;
    pthread_cond_broadcast(&m->reached_cond);
    pthread_mutex_unlock(&m->lock);
    marker_release(m);
}

static void wait_run(void *args) {
    template_marker *m = *(template_marker **)args;
    marker_wait(m);
    marker_release(m);
}

/* ---- the event table ---- */

static bp_status event_create(void *device, int timing, void **out_event) {
    template_device *dev = device;
    template_event *e = calloc(1, sizeof *e);
    if (!e)
        return template_host->set_error(BP_ERR_OUT_OF_MEMORY,
                                        "template:%d: cannot allocate an event", dev->index);
    e->device = dev;
    e->timing = timing != 0;
    pthread_mutex_init(&e->lock, NULL);
    *out_event = e;
    return BP_OK;
}

static void event_destroy(void *event) {
    template_event *e = event;
    marker_release(e->latest);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static bp_status event_record(void *event, void *stream) {
    template_event *e = event;
    template_marker *m = marker_new();
    if (!m)
        return template_host->set_error(BP_ERR_OUT_OF_MEMORY,
                                        "template:%d: cannot allocate an event record",
                                        e->device->index);
    bp_status st = template_submit(stream, reach_run, &m, sizeof m);
    if (st != BP_OK) {
        marker_free(m); /* no one else has it */
        return st;
    }
    pthread_mutex_lock(&e->lock);
    template_marker *old = e->latest;
    e->latest = m;
    pthread_mutex_unlock(&e->lock);
    marker_release(old);
    return BP_OK;
}

/* The host passes only recorded events, so latest is set. */
static bp_status event_query(void *event) {
    template_marker *m = latest_marker(event);
    bool reached = marker_reached(m);
    marker_release(m);
    return reached ? BP_OK : BP_ERR_NOT_READY;
}

static bp_status event_synchronize(void *event) {
    template_marker *m = latest_marker(event);
    marker_wait(m);
    marker_release(m);
    return BP_OK;
}

bp_status template_stream_wait_event(void *stream, void *event) {
    template_marker *m = latest_marker(event); /* the work item's reference */
    bp_status st = template_submit(stream, wait_run, &m, sizeof m);
    if (st != BP_OK)
        marker_release(m);
    return st;
}

static double marker_seconds(template_marker *m) {
    pthread_mutex_lock(&m->lock);
    double s = (double)m->when.tv_sec + (double)m->when.tv_nsec / 1e9;
    pthread_mutex_unlock(&m->lock);
    return s;
}

/* The host calls it for two timing events whose records have both completed. */
static bp_status event_elapsed_ms(void *start, void *end, float *out_ms) {
    template_event *a = start, *b = end;
    if (!a->timing || !b->timing)
        return template_host->set_error(BP_ERR_INVALID_ARGUMENT,
                                        "template: elapsed time of an event without timing");
    template_marker *ma = latest_marker(a), *mb = latest_marker(b);
    bp_status st = BP_ERR_NOT_READY;
    if (marker_reached(ma) && marker_reached(mb)) {
        *out_ms = (float)((marker_seconds(mb) - marker_seconds(ma)) * 1e3);
        st = BP_OK;
    }
    marker_release(ma);
    marker_release(mb);
    return st == BP_OK ? st
                       : template_host->set_error(st, "template: an event has not completed");
}

const bp_event_vtable template_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_ms = event_elapsed_ms,
};
