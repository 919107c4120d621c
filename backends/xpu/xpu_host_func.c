/* xpu: host functions on streams (the stream vtable's enqueue_host).
 *
 * Level Zero has no host-function command. A launch takes the next link of the stream's
 * chain (xpu_stream.c) without appending anything: its event is signalled from the host
 * (zeEventHostSignal) by the stream's host thread (gpukit's), made at its first host
 * function, which takes the launches in order, waits for the stream's command before the
 * launch, runs fn, and signals. The next command of the chain waits on that event like on any
 * other, so later work is held behind fn on the device, and stream synchronize and query
 * see it. fn runs on that thread because it may block (a test's gate). A failed wait
 * (a lost device) still runs fn and signals, so that nothing waits forever; the error
 * is logged, and the stream's own synchronize reports it. */
#include "xpu_internal.h"

#include <stdlib.h>

typedef struct host_job {
    gpukit_host_job job; /* first: the thread's queue entry */
    xpu_stream *stream;
    xpu_zevent *before; /* the stream's newest command at the launch, or NULL */
    xpu_zevent *done;   /* signalled from the host after fn */
} host_job;

/* On the stream's host thread. */
static void run_job(gpukit_host_job *j) {
    host_job *job = (host_job *)j;
    xpu_device *dev = job->stream->device;
    const xpu_api *api = &dev->backend->api;
    if (job->before) {
        ze_result_t r = api->zeEventHostSynchronize(job->before->event, UINT64_MAX);
        if (r != ZE_RESULT_SUCCESS)
            dev->backend->host->log(BP_LOG_ERROR, XPU_NAME,
                                    "xpu:%d: host function: waiting for the work before it "
                                    "failed with %s; running it anyway",
                                    dev->index, xpu_result_name(r));
    }
    job->job.fn(job->job.arg);
    ze_result_t r = api->zeEventHostSignal(job->done->event);
    if (r != ZE_RESULT_SUCCESS)
        dev->backend->host->log(BP_LOG_ERROR, XPU_NAME,
                                "xpu:%d: host function: zeEventHostSignal failed with %s",
                                dev->index, xpu_result_name(r));
    xpu_zevent_release(dev->driver, job->before);
    xpu_zevent_release(dev->driver, job->done);
    free(job);
}

bp_status xpu_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    gpukit_host_job *j = NULL;
    bp_status st = gpukit_host_job_new(dev->backend->host, XPU_NAME, dev->index, fn, arg,
                                       sizeof(host_job), run_job, &j);
    if (st != BP_OK)
        return st;
    host_job *job = (host_job *)j;
    job->stream = s;
    xpu_enqueue e;
    st = xpu_enqueue_begin(s, NULL, &e);
    if (st == BP_OK) {
        st = gpukit_host_thread_ensure(&s->host, dev->backend->host, XPU_NAME, dev->index);
        if (st != BP_OK)
            xpu_enqueue_cancel(&e);
    }
    if (st != BP_OK) {
        free(job);
        return st;
    }
    /* The job's own references: the chain keeps `done` as the new link. */
    job->before = s->n ? s->cmds[s->n - 1].done : NULL;
    if (job->before)
        xpu_zevent_retain(dev->driver, job->before);
    job->done = e.done;
    xpu_zevent_retain(dev->driver, job->done);
    gpukit_host_thread_push(s->host, &job->job);
    return xpu_enqueue_end(&e, ZE_RESULT_SUCCESS, "host function", NULL, NULL);
}
