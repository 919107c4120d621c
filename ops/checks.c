/* Argument checks shared by every op: the one place that validates op calls. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

bp_status bp_check_tensors(const char *op, bp_tensor *const *tensors, int n,
                           bp_device **out_device) {
    bp_device *device = NULL;
    for (int i = 0; i < n; i++) {
        if (!tensors[i])
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: tensor argument %d is NULL", op, i);
        bp_device *d = tensors[i]->storage->device;
        if (device && d != device)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: tensors are on different devices "
                                "(%s and %s); move them with bp_tensor_to", op, device->name,
                                d->name);
        device = d;
    }
    if (out_device)
        *out_device = device;
    return BP_OK;
}

bp_status bp_check_dtype(const char *op, bp_tensor *const *tensors, int n, bp_dtype dtype) {
    for (int i = 0; i < n; i++)
        if (tensors[i] && tensors[i]->dtype != dtype)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: dtype mismatch: %s and %s (no "
                                "implicit promotion; cast first)", op, bp_dtype_name(dtype),
                                bp_dtype_name(tensors[i]->dtype));
    return BP_OK;
}

bp_status bp_check_dtype_allowed(const char *op, bp_dtype dtype, uint32_t allowed) {
    if ((unsigned)dtype < BP_DTYPE_COUNT && (allowed & BP_DTYPE_BIT(dtype)))
        return BP_OK;
    char list[96] = "";
    size_t used = 0;
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (allowed & BP_DTYPE_BIT(dt))
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                     bp_dtype_name((bp_dtype)dt));
    return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: dtype %s is not supported (supported: %s)",
                        op, bp_dtype_name(dtype), list);
}

bp_status bp_broadcast_shapes(const char *op, bp_tensor *const *tensors, int n,
                              int64_t *out_shape, int *out_ndim) {
    int ndim = 0;
    for (int i = 0; i < n; i++)
        if (tensors[i]->ndim > ndim)
            ndim = tensors[i]->ndim;
    for (int d = 0; d < ndim; d++)
        out_shape[d] = 1;
    for (int i = 0; i < n; i++) {
        const bp_tensor *t = tensors[i];
        for (int d = 0; d < t->ndim; d++) {
            int64_t size = t->shape[d];
            int64_t *o = &out_shape[ndim - t->ndim + d];
            if (size == *o || size == 1)
                continue;
            if (*o == 1) {
                *o = size;
                continue;
            }
            char a[160], b[160];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: shapes %s and %s do not broadcast "
                                "(dim %d: %lld vs %lld)", op,
                                bp_shape_str(tensors[0]->shape, tensors[0]->ndim, a, sizeof a),
                                bp_shape_str(t->shape, t->ndim, b, sizeof b), d - t->ndim,
                                (long long)*o, (long long)size);
        }
    }
    *out_ndim = ndim;
    return BP_OK;
}

bp_status bp_check_dim(const char *op, int dim, int ndim, int *out_dim) {
    int lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
    if (dim < lo || dim > hi)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: dim %d is out of range for a tensor "
                            "of %d dims (expected %d to %d)", op, dim, ndim, lo, hi);
    *out_dim = dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
    return BP_OK;
}

/* Byte range [lo, hi) of storage that a tensor can touch. */
static void extent(const bp_tensor *t, int64_t *lo, int64_t *hi) {
    int64_t first = t->offset, last = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) {
            *lo = *hi = 0;
            return;
        }
        int64_t span = (t->shape[d] - 1) * t->strides[d];
        if (span < 0)
            first += span;
        else
            last += span;
    }
    size_t elem = bp_dtype_size(t->dtype);
    *lo = first * (int64_t)elem;
    *hi = (last + 1) * (int64_t)elem;
}

static bool same_view(const bp_tensor *a, const bp_tensor *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim ||
        a->dtype != b->dtype)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return false;
    return true;
}

bp_status bp_check_out(const char *op, bp_tensor *out, bp_device *device, bp_dtype dtype,
                       int ndim, const int64_t *shape, bp_tensor *const *inputs, int n_inputs,
                       bool same_view_ok) {
    if (!out)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: out is NULL", op);
    if (out->storage->device != device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: out is on %s but the inputs on %s", op,
                            out->storage->device->name, device->name);
    if (out->dtype != dtype)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: out has dtype %s, expected %s", op,
                            bp_dtype_name(out->dtype), bp_dtype_name(dtype));
    bool shape_ok = out->ndim == ndim;
    for (int d = 0; shape_ok && d < ndim; d++)
        shape_ok = out->shape[d] == shape[d];
    if (!shape_ok) {
        char got[160], want[160];
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: out has shape %s, expected %s", op,
                            bp_shape_str(out->shape, out->ndim, got, sizeof got),
                            bp_shape_str(shape, ndim, want, sizeof want));
    }
    int64_t olo, ohi;
    extent(out, &olo, &ohi);
    for (int i = 0; i < n_inputs; i++) {
        const bp_tensor *in = inputs[i];
        if (!in || in->storage != out->storage)
            continue;
        if (same_view_ok && same_view(in, out))
            continue;
        int64_t ilo, ihi;
        extent(in, &ilo, &ihi);
        if (ilo < ohi && olo < ihi)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: out overlaps input %d in memory "
                                "(only an identical view is allowed%s)", op, i,
                                same_view_ok ? "" : ", and not for this op");
    }
    return BP_OK;
}
