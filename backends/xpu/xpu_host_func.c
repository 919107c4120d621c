/* xpu: host functions on streams (the stream vtable's enqueue_host).
 *
 * Level Zero has no host-function command. A launch takes the next link of the stream's
 * chain (xpu_stream.c) without appending anything: its event is signalled from the host
 * (zeEventHostSignal) by the stream's host thread, made at its first host function,
 * which takes the launches in order, waits for the stream's command before the launch,
 * runs fn, and signals. The next command of the chain waits on that event like on any
 * other, so later work is held behind fn on the device, and stream synchronize and query
 * see it. fn runs on that thread because it may block (a test's gate). A failed wait
 * (a lost device) still runs fn and signals, so that nothing waits forever; the error
 * is logged, and the stream's own synchronize reports it. */
#include "xpu_internal.h"

#include <stdlib.h>

typedef struct host_job {
    void (*fn)(void *arg);
    void *arg;
    xpu_zevent *before; /* the stream's newest command at the launch, or NULL */
    xpu_zevent *done;   /* signalled from the host after fn */
    struct host_job *next;
} host_job;

struct xpu_host_thread {
    pthread_mutex_t lock;
    pthread_cond_t work;
    host_job *head, *tail;
    bool stop;
    pthread_t thread;
};

static void run_job(xpu_stream *s, host_job *job) {
    xpu_device *dev = s->device;
    const xpu_api *api = &dev->backend->api;
    if (job->before) {
        ze_result_t r = api->zeEventHostSynchronize(job->before->event, UINT64_MAX);
        if (r != ZE_RESULT_SUCCESS)
            dev->backend->host->log(BP_LOG_ERROR, XPU_NAME,
                                    "xpu:%d: host function: waiting for the work before it "
                                    "failed with %s; running it anyway",
                                    dev->index, xpu_result_name(r));
    }
    job->fn(job->arg);
    ze_result_t r = api->zeEventHostSignal(job->done->event);
    if (r != ZE_RESULT_SUCCESS)
        dev->backend->host->log(BP_LOG_ERROR, XPU_NAME,
                                "xpu:%d: host function: zeEventHostSignal failed with %s",
                                dev->index, xpu_result_name(r));
    xpu_zevent_release(dev->driver, job->before);
    xpu_zevent_release(dev->driver, job->done);
    free(job);
}

static void *host_thread_main(void *p) {
    xpu_stream *s = p;
    xpu_host_thread *t = s->host;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->head && !t->stop)
            pthread_cond_wait(&t->work, &t->lock);
        host_job *job = t->head;
        if (!job)
            break;
        t->head = job->next;
        if (!t->head)
            t->tail = NULL;
        pthread_mutex_unlock(&t->lock);
        run_job(s, job);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* The stream's host thread, started on first use. Call with s->lock held. */
static bp_status host_thread(xpu_stream *s, xpu_host_thread **out) {
    if (s->host) {
        *out = s->host;
        return BP_OK;
    }
    xpu_device *dev = s->device;
    xpu_host_thread *t = calloc(1, sizeof *t);
    if (!t)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "xpu:%d: out of host memory for a host thread",
                                             dev->index);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->work, NULL);
    s->host = t;
    int err = pthread_create(&t->thread, NULL, host_thread_main, s);
    if (err != 0) {
        s->host = NULL;
        pthread_cond_destroy(&t->work);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return dev->backend->host->set_error(BP_ERR_BACKEND,
                                             "xpu:%d: cannot start a stream's host thread "
                                             "(pthread_create: error %d)",
                                             dev->index, err);
    }
    *out = t;
    return BP_OK;
}

bp_status xpu_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    if (!fn)
        return dev->backend->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                             "xpu:%d: enqueue_host: fn is NULL", dev->index);
    host_job *job = calloc(1, sizeof *job);
    if (!job)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "xpu:%d: out of host memory for a host function",
                                             dev->index);
    job->fn = fn;
    job->arg = arg;
    xpu_enqueue e;
    bp_status st = xpu_enqueue_begin(s, NULL, &e);
    if (st != BP_OK) {
        free(job);
        return st;
    }
    xpu_host_thread *t = NULL;
    st = host_thread(s, &t);
    if (st != BP_OK) {
        xpu_enqueue_cancel(&e);
        free(job);
        return st;
    }
    /* The job's own references: the chain keeps `done` as the new link. */
    job->before = s->n ? s->cmds[s->n - 1].done : NULL;
    if (job->before)
        xpu_zevent_retain(dev->driver, job->before);
    job->done = e.done;
    xpu_zevent_retain(dev->driver, job->done);
    pthread_mutex_lock(&t->lock);
    if (t->tail)
        t->tail->next = job;
    else
        t->head = job;
    t->tail = job;
    pthread_cond_signal(&t->work);
    pthread_mutex_unlock(&t->lock);
    return xpu_enqueue_end(&e, ZE_RESULT_SUCCESS, "host function", NULL, NULL);
}

void xpu_host_thread_stop(xpu_stream *s) {
    xpu_host_thread *t = s->host;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->work);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->work);
    pthread_mutex_destroy(&t->lock);
    free(t);
    s->host = NULL;
}
