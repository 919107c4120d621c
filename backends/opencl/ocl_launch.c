/* opencl: tensor arguments and kernel launches (ocl_launch.h). */
#include "ocl_launch.h"

#include <stdio.h>
#include <string.h>

int64_t ocl_numel(const bp_tensor_desc *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

size_t ocl_dtype_size(bp_dtype dt) {
    static const size_t sizes[BP_DTYPE_COUNT] = {
        [BP_DTYPE_F32] = 4, [BP_DTYPE_F16] = 2, [BP_DTYPE_BF16] = 2,
        [BP_DTYPE_F64] = 8, [BP_DTYPE_I8] = 1,  [BP_DTYPE_U8] = 1,
        [BP_DTYPE_I32] = 4, [BP_DTYPE_I64] = 8, [BP_DTYPE_BOOL] = 1,
    };
    return (unsigned)dt < BP_DTYPE_COUNT ? sizes[dt] : 0;
}

bp_status ocl_tensor_arg(ocl_device *dev, const bp_tensor_desc *t, cl_mem empty_mem,
                         ocl_targ *arg, const char *what) {
    memset(arg, 0, sizeof *arg);
    arg->d.ndim = t->ndim;
    for (int d = 0; d < t->ndim && d < OCL_MAXD; d++) {
        arg->d.shape[d] = t->shape[d];
        arg->d.stride[d] = t->strides[d];
    }
    if (ocl_numel(t) == 0) {
        arg->mem = empty_mem;
        return BP_OK;
    }
    size_t esize = ocl_dtype_size(t->dtype), off = 0;
    bp_status st = ocl_translate(dev, t->data, esize, &arg->mem, &off, what);
    if (st != BP_OK)
        return st;
    if (off % esize != 0)
        return dev->backend->host->set_error(
            BP_ERR_INVALID_ARGUMENT,
            "opencl:%d: %s: the tensor's data is at byte %zu of its buffer, not a multiple of "
            "its %zu-byte elements",
            dev->index, what, off, esize);
    arg->d.off = (cl_long)(off / esize);
    return BP_OK;
}

void ocl_plan_args(const bp_plan *p, ocl_targ *args) {
    for (int k = 0; k < p->n; k++) {
        args[k].d.ndim = p->ndim;
        for (int d = 0; d < OCL_MAXD; d++) {
            args[k].d.shape[d] = p->shape[d];
            args[k].d.stride[d] = p->strides[k][d];
        }
    }
}

void ocl_plan_elementwise(const bp_tensor_desc *out, int n_in, const bp_tensor_desc *const *ins,
                          ocl_targ *args) {
    bp_plan p;
    bp_plan_elementwise(&p, out, n_in, ins);
    ocl_plan_args(&p, args);
}

bp_status ocl_launch(ocl_stream *s, ocl_kernel *k, const char *what, int nargs,
                     const ocl_karg *args, cl_uint dims, const size_t *global,
                     const size_t *local) {
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

bp_status ocl_launch_1d(ocl_stream *s, ocl_kernel *k, const char *what, int nargs,
                        const ocl_karg *args, int64_t n) {
    size_t limit = s->device->info.max_wg < 256 ? s->device->info.max_wg : 256, local = 1;
    while (local * 2 <= limit)
        local *= 2;
    size_t global = ((size_t)n + local - 1) / local * local;
    return ocl_launch(s, k, what, nargs, args, 1, &global, &local);
}
