/* gpukit: a thread that runs a stream's host functions in order (gpukit.h). Backends
 * whose runtime has no host-function command (OpenCL, Level Zero) hold the stream's later
 * work on an event that the job signals after the function; the function runs here, not
 * in a runtime callback, because it may block (a test's gate) and callbacks run on the
 * runtime's own threads. */
#include "gpukit.h"

#include <errno.h>
#include <stdlib.h>

struct gpukit_host_thread {
    pthread_mutex_t lock;
    pthread_cond_t work;
    gpukit_host_job *head, *tail;
    bool stop;
    pthread_t thread;
};

static void *host_thread_main(void *p) {
    gpukit_host_thread *t = p;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->head && !t->stop)
            pthread_cond_wait(&t->work, &t->lock);
        gpukit_host_job *job = t->head;
        if (!job)
            break;
        t->head = job->next;
        if (!t->head)
            t->tail = NULL;
        pthread_mutex_unlock(&t->lock);
        job->run(job);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int gpukit_host_thread_start(gpukit_host_thread **out) {
    *out = NULL;
    gpukit_host_thread *t = calloc(1, sizeof *t);
    if (!t)
        return ENOMEM;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->work, NULL);
    int err = pthread_create(&t->thread, NULL, host_thread_main, t);
    if (err != 0) {
        pthread_cond_destroy(&t->work);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return err;
    }
    *out = t;
    return 0;
}

bp_status gpukit_host_thread_ensure(gpukit_host_thread **t, const bp_host_services *host,
                                    const char *type, int index) {
    if (*t)
        return BP_OK;
    int err = gpukit_host_thread_start(t);
    if (err != 0)
        return host->set_error(err == ENOMEM ? BP_ERR_OUT_OF_MEMORY : BP_ERR_BACKEND,
                               "%s:%d: cannot start a stream's host thread (error %d)", type,
                               index, err);
    return BP_OK;
}

bp_status gpukit_host_job_new(const bp_host_services *host, const char *type, int index,
                              void (*fn)(void *arg), void *arg, size_t size,
                              void (*run)(gpukit_host_job *job), gpukit_host_job **out) {
    bp_status st = bp_plugin_check_host_fn(host, type, index, fn);
    if (st != BP_OK)
        return st;
    gpukit_host_job *job = bp_plugin_calloc(host, type, index, size, "a host function");
    if (!job)
        return BP_ERR_OUT_OF_MEMORY;
    job->run = run;
    job->fn = fn;
    job->arg = arg;
    *out = job;
    return BP_OK;
}

void gpukit_host_thread_push(gpukit_host_thread *t, gpukit_host_job *job) {
    job->next = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->tail)
        t->tail->next = job;
    else
        t->head = job;
    t->tail = job;
    pthread_cond_signal(&t->work);
    pthread_mutex_unlock(&t->lock);
}

void gpukit_host_thread_stop(gpukit_host_thread *t) {
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
}
