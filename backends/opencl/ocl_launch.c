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

void ocl_plan(int n, ocl_targ *args, int ndim, const int64_t *shape,
              const int64_t (*strides)[OCL_MAXD]) {
    int64_t sh[OCL_MAXD];
    int64_t st[OCL_MAXD][OCL_MAXD]; /* [operand][dim] */
    int m = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue; /* a size-1 dim moves nothing */
        bool merge = m > 0;
        for (int k = 0; k < n && merge; k++)
            merge = st[k][m - 1] == strides[k][d] * shape[d];
        if (merge) {
            sh[m - 1] *= shape[d];
            for (int k = 0; k < n; k++)
                st[k][m - 1] = strides[k][d];
        } else {
            sh[m] = shape[d];
            for (int k = 0; k < n; k++)
                st[k][m] = strides[k][d];
            m++;
        }
    }
    if (m == 0) { /* a single element */
        sh[0] = 1;
        for (int k = 0; k < n; k++)
            st[k][0] = 0;
        m = 1;
    }
    for (int k = 0; k < n; k++) {
        args[k].d.ndim = m;
        for (int d = 0; d < OCL_MAXD; d++) {
            args[k].d.shape[d] = d < m ? sh[d] : 1;
            args[k].d.stride[d] = d < m ? st[k][d] : 0;
        }
    }
}

void ocl_plan_elementwise(const bp_tensor_desc *out, int n_in, const bp_tensor_desc *const *ins,
                          ocl_targ *args) {
    int64_t strides[4][OCL_MAXD];
    int nd = out->ndim;
    for (int d = 0; d < nd; d++)
        strides[0][d] = out->strides[d];
    for (int k = 0; k < n_in && k < 3; k++) {
        const bp_tensor_desc *in = ins[k];
        int lead = nd - in->ndim;
        for (int d = 0; d < nd; d++) {
            int di = d - lead;
            strides[k + 1][d] = di < 0 || in->shape[di] == 1 ? 0 : in->strides[di];
        }
    }
    ocl_plan(n_in + 1, args, nd, out->shape, (const int64_t(*)[OCL_MAXD])strides);
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
