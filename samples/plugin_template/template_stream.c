/* Streams: each stream is a worker thread that runs its work in the order it was
 * enqueued. Copies, memsets, kernels, event records, waits on events and host functions
 * are all work items (template_submit), so everything on a stream is in stream order
 * and asynchronous to the thread that enqueued it.
 *
 * A real backend maps a stream to its runtime's queue instead; what the host expects
 * of it is the same: query says BP_ERR_NOT_READY while any enqueued work (a wait on
 * another stream's event included) has not finished, and synchronize waits for it. */
#include <stdlib.h>
#include <string.h>

#include "template.h"

typedef struct template_work {
    struct template_work *next;
    template_work_fn run;
    max_align_t args[]; /* the copy of the arguments */
} template_work;

struct template_stream {
    template_device *device;
    pthread_t worker;
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* work arrived, or stopping */
    pthread_cond_t idle;    /* pending reached 0 */
    template_work *head, *tail;
    uint64_t pending;       /* enqueued and not finished, the running item included */
    bool stopping;
};

static void device_work_added(template_device *dev) {
    pthread_mutex_lock(&dev->lock);
    dev->pending++;
    pthread_mutex_unlock(&dev->lock);
}

static void device_work_done(template_device *dev) {
    pthread_mutex_lock(&dev->lock);
    if (--dev->pending == 0)
        pthread_cond_broadcast(&dev->idle);
    pthread_mutex_unlock(&dev->lock);
}

bp_status template_submit(template_stream *s, template_work_fn run, const void *args,
                          size_t size) {
    template_work *w = malloc(sizeof *w + size);
    if (!w)
        return template_host->set_error(BP_ERR_OUT_OF_MEMORY,
                                        "template:%d: cannot allocate a work item",
                                        s->device->index);
    w->next = NULL;
    w->run = run;
    memcpy(w->args, args, size);
    device_work_added(s->device);
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    s->pending++;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    return BP_OK;
}

/* The worker: takes the oldest item, runs it without the lock held, counts it
 * finished; leaves when stopping and nothing is left. Lock order: stream, then device. */
static void *worker_main(void *arg) {
    template_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->wake, &s->lock);
        template_work *w = s->head;
        if (!w)
            break;
        s->head = w->next;
        if (!s->head)
            s->tail = NULL;
        pthread_mutex_unlock(&s->lock);
        w->run(w->args);
        free(w);
        pthread_mutex_lock(&s->lock);
        if (--s->pending == 0)
            pthread_cond_broadcast(&s->idle);
        device_work_done(s->device);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static bp_status stream_create(void *device, int priority, void **out_stream) {
    template_device *dev = device;
    template_stream *s = calloc(1, sizeof *s);
    if (!s)
        return template_host->set_error(BP_ERR_OUT_OF_MEMORY,
                                        "template:%d: cannot allocate a stream", dev->index);
    s->device = dev;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->idle, NULL);
    int err = pthread_create(&s->worker, NULL, worker_main, s);
    if (err) {
        pthread_cond_destroy(&s->idle);
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return template_host->set_error(BP_ERR_BACKEND,
                                        "template:%d: cannot start a stream thread: %s",
                                        dev->index, strerror(err));
    }
    *out_stream = s;
    return BP_OK;
}

/* The host calls it only after synchronize: the queue is empty. */
static void stream_destroy(void *stream) {
    template_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->worker, NULL);
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static bp_status stream_synchronize(void *stream) {
    template_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    while (s->pending)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return BP_OK;
}

static bp_status stream_query(void *stream) {
    template_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    bool busy = s->pending != 0;
    pthread_mutex_unlock(&s->lock);
    return busy ? BP_ERR_NOT_READY : BP_OK;
}

/* Host functions are work items like the others: later work waits for fn to return. */
typedef struct host_call {
    void (*fn)(void *arg);
    void *arg;
} host_call;

static void host_call_run(void *args) {
    host_call *c = args;
    c->fn(c->arg);
}

static bp_status stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    host_call c = {fn, arg};
    return template_submit(stream, host_call_run, &c, sizeof c);
}

bp_status template_device_synchronize(void *device) {
    template_device *dev = device;
    pthread_mutex_lock(&dev->lock);
    while (dev->pending)
        pthread_cond_wait(&dev->idle, &dev->lock);
    pthread_mutex_unlock(&dev->lock);
    return BP_OK;
}

const bp_stream_vtable template_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stream_create,
    .destroy = stream_destroy,
    .synchronize = stream_synchronize,
    .query = stream_query,
    .wait_event = template_stream_wait_event,
    .enqueue_host = stream_enqueue_host,
};
