/* opencl: host functions on streams (the stream vtable's enqueue_host).
 *
 * OpenCL has no host-function command, so each launch enqueues, under the stream's
 * lock: a marker (it completes when the work before it has), then a barrier waiting on
 * a new user event, which holds every later command of the in-order queue. A host
 * thread of the stream, made at its first host function, takes the launches in order,
 * waits for the marker, runs fn, and then completes the user event, which releases the
 * queue. fn runs on that thread rather than in a marker callback because it may block
 * (a test's gate), and callbacks run on the ICD's own thread, which must not block.
 * A failed marker still runs fn (it may be what another thread waits for) and fails the
 * user event with the marker's status, so the error reaches the later commands and the
 * stream's synchronize. */
#include "ocl_internal.h"

#include <stdlib.h>

typedef struct host_job {
    gpukit_host_job job; /* first: the thread's queue entry */
    ocl_stream *stream;
    cl_event marker; /* the work before the launch */
    cl_event user;   /* completed after fn: the barrier after the launch waits on it */
} host_job;

/* The marker's final status: CL_COMPLETE, or the negative error of a failed command. */
static cl_int marker_status(const ocl_api *api, cl_event marker) {
    api->clWaitForEvents(1, &marker);
    cl_int status = CL_COMPLETE;
    cl_int err = api->clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                     &status, NULL);
    return err != CL_SUCCESS ? err : status < 0 ? status : CL_COMPLETE;
}

/* On the stream's host thread. */
static void run_job(gpukit_host_job *j) {
    host_job *job = (host_job *)j;
    const ocl_api *api = &job->stream->device->backend->api;
    cl_int status = marker_status(api, job->marker);
    job->job.fn(job->job.arg);
    api->clSetUserEventStatus(job->user, status);
    api->clReleaseEvent(job->marker);
    api->clReleaseEvent(job->user);
    free(job);
}

bp_status ocl_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    ocl_stream *s = stream;
    ocl_device *dev = s->device;
    const ocl_api *api = &dev->backend->api;
    gpukit_host_job *j = NULL;
    bp_status st = gpukit_host_job_new(dev->backend->host, OCL_NAME, dev->index, fn, arg,
                                       sizeof(host_job), run_job, &j);
    if (st != BP_OK)
        return st;
    host_job *job = (host_job *)j;
    job->stream = s;
    cl_int err = CL_SUCCESS;
    job->user = api->clCreateUserEvent(dev->context, &err);
    if (!job->user) {
        free(job);
        return ocl_fail(dev, err, "host function (clCreateUserEvent)");
    }
    cl_event barrier = NULL;
    pthread_mutex_lock(&s->lock);
    st = gpukit_host_thread_ensure(&s->host, dev->backend->host, OCL_NAME, dev->index);
    const char *failed = NULL;
    if (st == BP_OK) {
        err = api->clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &job->marker);
        failed = err != CL_SUCCESS ? "host function (clEnqueueMarkerWithWaitList)" : NULL;
    }
    if (st == BP_OK && !failed) {
        err = api->clEnqueueBarrierWithWaitList(s->queue, 1, &job->user, &barrier);
        failed = err != CL_SUCCESS ? "host function (clEnqueueBarrierWithWaitList)" : NULL;
    }
    if (st == BP_OK && !failed) {
        ocl_stream_push_locked(s, barrier); /* flushes: the marker can complete */
        gpukit_host_thread_push(s->host, &job->job);
    }
    pthread_mutex_unlock(&s->lock);
    if (st == BP_OK && !failed)
        return BP_OK;
    if (job->marker) /* enqueued, but no barrier waits on the user event */
        api->clReleaseEvent(job->marker);
    api->clSetUserEventStatus(job->user, CL_COMPLETE);
    api->clReleaseEvent(job->user);
    free(job);
    return failed ? ocl_fail(dev, err, failed) : st;
}

void ocl_host_thread_stop(ocl_stream *s) {
    gpukit_host_thread_stop(s->host);
    s->host = NULL;
}
