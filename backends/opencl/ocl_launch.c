/* opencl: what the shared kernels (backends/clc, clc.h) run on an OpenCL device: device
 * addresses to (cl_mem, offset), kernels from ocl_program.c, and kernel launches, fills
 * and copies enqueued on the stream's in-order queue. */
#include "ocl_internal.h"

#include <stddef.h>
#include <stdio.h>

#define DEVICE_OF(c) ((ocl_device *)((char *)(c) - offsetof(ocl_device, clc)))

clc_device *ocl_stream_clc_device(void *stream) {
    return &((ocl_stream *)stream)->device->clc;
}

static bp_status translate(clc_device *c, const void *ptr, size_t size, void **handle,
                           size_t *offset, const char *what) {
    cl_mem mem = NULL;
    bp_status st = ocl_translate(DEVICE_OF(c), ptr, size, &mem, offset, what);
    *handle = mem;
    return st;
}

static bp_status get_kernel(clc_device *c, clc_program_id id, int variant, const char *name,
                            void **kernel) {
    ocl_kernel *k = NULL;
    bp_status st = ocl_get_kernel(DEVICE_OF(c), id, variant, name, &k);
    *kernel = k;
    return st;
}

/* Sets the arguments and enqueues, holding the stream's and the kernel's locks from the
 * first argument to the enqueue (clSetKernelArg is not thread-safe on one cl_kernel). */
static bp_status launch(void *stream, void *kernel, const char *what, int nargs,
                        const clc_karg *args, unsigned dims, const size_t *global,
                        const size_t *local) {
    ocl_stream *s = stream;
    ocl_kernel *k = kernel;
    ocl_device *dev = s->device;
    const ocl_api *api = &dev->backend->api;
    cl_int err = CL_SUCCESS;
    cl_event ev = NULL;
    const char *step = "clSetKernelArg";
    pthread_mutex_lock(&s->lock);
    pthread_mutex_lock(&k->lock);
    for (int i = 0; i < nargs && err == CL_SUCCESS; i++)
        err = api->clSetKernelArg(k->kernel, (cl_uint)i, args[i].size, args[i].value);
    if (err == CL_SUCCESS) {
        step = "clEnqueueNDRangeKernel";
        err = api->clEnqueueNDRangeKernel(s->queue, k->kernel, dims, NULL, global, local, 0, NULL,
                                          &ev);
    }
    pthread_mutex_unlock(&k->lock);
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    if (err != CL_SUCCESS) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s kernel: %s", what, step);
        return ocl_fail(dev, err, msg);
    }
    return BP_OK;
}

static bp_status fill(void *stream, void *handle, size_t offset, const void *pattern,
                      size_t pattern_size, size_t bytes) {
    ocl_stream *s = stream;
    const ocl_api *api = &s->device->backend->api;
    cl_event ev = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = api->clEnqueueFillBuffer(s->queue, (cl_mem)handle, pattern, pattern_size,
                                          offset, bytes, 0, NULL, &ev);
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(s->device, err, "fill (clEnqueueFillBuffer)");
}

static bp_status copy(void *stream, void *dst, size_t dst_offset, void *src, size_t src_offset,
                      size_t bytes) {
    ocl_stream *s = stream;
    const ocl_api *api = &s->device->backend->api;
    cl_event ev = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = api->clEnqueueCopyBuffer(s->queue, (cl_mem)src, (cl_mem)dst, src_offset,
                                          dst_offset, bytes, 0, NULL, &ev);
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(s->device, err, "copy (clEnqueueCopyBuffer)");
}

const clc_device_ops ocl_clc_ops = {
    .translate = translate,
    .get_kernel = get_kernel,
    .launch = launch,
    .fill = fill,
    .copy = copy,
};
