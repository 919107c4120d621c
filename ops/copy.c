/* Creation and copy ops: fill, copy (with broadcast and dtype conversion), cast, cat,
 * and the tensor copies of tensor.h (bp_tensor_contiguous, bp_tensor_to_host,
 * bp_tensor_reshape when no view fits, bp_tensor_to). */
#include <string.h>

#include "ops_internal.h"

static bp_status null_arg(const char *op, const char *what) {
    return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
}

static bp_status check_dtype_value(const char *op, bp_dtype dtype) {
    if ((unsigned)dtype < BP_DTYPE_COUNT)
        return BP_OK;
    return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d (expected 0 to %d)", op,
                        (int)dtype, BP_DTYPE_COUNT - 1);
}

/* ---- fill ---- */

/* Op "fill" on out's device, kernel chosen by out's dtype. */
bp_status bp_fill(bp_tensor *out, double value) {
    bp_device *device = NULL;
    bp_status st = bp_check_tensors("fill", &out, 1, &device);
    if (st != BP_OK)
        return st;
    bp_fill_attrs attrs = {.value = value};
    return bp_op_run(BP_OP_FILL, out->dtype, device, NULL, 0, &out, 1, &attrs);
}

/* ---- copy and cast ---- */

/* Op "copy", kernel chosen by dst's dtype (it converts from any source dtype). */
bp_status bp_copy(bp_tensor *dst, bp_tensor *src) {
    bp_device *device = NULL;
    bp_tensor *both[2] = {dst, src};
    if (!dst || !src)
        return null_arg("copy", !dst ? "dst" : "src");
    bp_status st = bp_check_tensors("copy", both, 2, &device);
    if (st != BP_OK)
        return st;
    bool fits = src->ndim <= dst->ndim;
    for (int d = 0; fits && d < src->ndim; d++) {
        int64_t s = src->shape[d], t = dst->shape[dst->ndim - src->ndim + d];
        fits = s == t || s == 1;
    }
    if (!fits) {
        char a[160], b[160];
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "copy: src of shape %s does not broadcast to "
                            "dst shape %s", bp_shape_str(src->shape, src->ndim, a, sizeof a),
                            bp_shape_str(dst->shape, dst->ndim, b, sizeof b));
    }
    st = bp_check_out("copy", dst, device, dst->dtype, dst->ndim, dst->shape, &src, 1, true);
    if (st != BP_OK)
        return st;
    /* The one overlap allowed is the identical view (same dtype too): nothing to do. */
    if (dst->storage == src->storage && dst->offset == src->offset && dst->ndim == src->ndim &&
        dst->dtype == src->dtype && memcmp(dst->shape, src->shape, sizeof dst->shape) == 0 &&
        memcmp(dst->strides, src->strides, sizeof dst->strides) == 0)
        return BP_OK;
    return bp_op_run(BP_OP_COPY, dst->dtype, device, &src, 1, &dst, 1, NULL);
}

/* A new contiguous tensor filled by op "copy". */
bp_status bp_cast(bp_tensor *src, bp_dtype dtype, bp_tensor **out) {
    if (!out)
        return null_arg("cast", "out");
    *out = NULL;
    if (!src)
        return null_arg("cast", "src");
    bp_status st = check_dtype_value("cast", dtype);
    if (st != BP_OK)
        return st;
    bp_tensor *t = NULL;
    st = bp_op_alloc_out(src->storage->device, dtype, src->ndim, src->shape, &t);
    if (st == BP_OK)
        st = bp_op_run(BP_OP_COPY, dtype, src->storage->device, &src, 1, &t, 1, NULL);
    if (st != BP_OK) {
        bp_tensor_release(t);
        return st;
    }
    *out = t;
    return BP_OK;
}

/* ---- tensor copies ---- */

/* The tensor retained when contiguous, else a same-dtype bp_cast. */
bp_status bp_tensor_contiguous(bp_tensor *tensor, bp_tensor **out_tensor) {
    if (!out_tensor)
        return null_arg("bp_tensor_contiguous", "out_tensor");
    *out_tensor = NULL;
    if (!tensor)
        return null_arg("bp_tensor_contiguous", "tensor");
    if (bp_tensor_is_contiguous(tensor)) {
        *out_tensor = bp_tensor_retain(tensor);
        return BP_OK;
    }
    return bp_cast(tensor, tensor->dtype, out_tensor);
}

/* Through a contiguous copy when strided; device-to-host on the current stream,
 * waited for. */
bp_status bp_tensor_to_host(const bp_tensor *tensor, void *host_data, size_t host_size) {
    if (!tensor)
        return null_arg("bp_tensor_to_host", "tensor");
    size_t bytes = (size_t)bp_tensor_numel(tensor) * bp_dtype_size(tensor->dtype);
    if (bytes == 0)
        return BP_OK;
    if (!host_data)
        return null_arg("bp_tensor_to_host", "host_data");
    bp_status rst = bp_storage_check_readable(tensor->storage, "bp_tensor_to_host");
    if (rst != BP_OK)
        return rst;
    if (host_size < bytes)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_to_host: host buffer has %zu "
                            "bytes, the tensor needs %zu (%lld %s elements)", host_size, bytes,
                            (long long)bp_tensor_numel(tensor), bp_dtype_name(tensor->dtype));
    bp_device *device = tensor->storage->device;
    bp_stream *stream = bp_current_stream(device);
    if (!stream)
        return bp_error_prefix(BP_ERR_INVALID_ARGUMENT, "bp_tensor_to_host");
    bp_tensor *c = NULL;
    /* bp_tensor_contiguous only retains or reads the tensor: the cast keeps it const. */
    bp_status st = bp_tensor_contiguous((bp_tensor *)tensor, &c);
    if (st != BP_OK)
        return bp_error_prefix(st, "bp_tensor_to_host");
    st = bp_memory_copy_async(host_data, NULL, bp_tensor_data(c), device, bytes, stream);
    if (st == BP_OK)
        st = bp_stream_synchronize(stream);
    bp_tensor_release(c);
    return st == BP_OK ? BP_OK : bp_error_prefix(st, "bp_tensor_to_host");
}


/* A view when bp_tensor_view_strides finds strides, else a view of a contiguous copy. */
bp_status bp_tensor_reshape(bp_tensor *tensor, int ndim, const int64_t *shape,
                            bp_tensor **out_tensor) {
    if (!out_tensor)
        return null_arg("bp_tensor_reshape", "out_tensor");
    *out_tensor = NULL;
    if (!tensor)
        return null_arg("bp_tensor_reshape", "tensor");
    if (ndim < 0 || ndim > BP_MAX_DIMS)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_reshape: ndim %d is out of range "
                            "(0 to %d)", ndim, BP_MAX_DIMS);
    if (ndim > 0 && !shape)
        return null_arg("bp_tensor_reshape", "shape");
    char want[200], have[200];
    int64_t new_shape[BP_MAX_DIMS], known = 1;
    int infer = -1;
    for (int d = 0; d < ndim; d++) {
        new_shape[d] = shape[d];
        if (shape[d] == -1 && infer < 0) {
            infer = d;
        } else if (shape[d] < 0) {
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_reshape: invalid shape %s (%s)",
                                bp_shape_str(shape, ndim, want, sizeof want),
                                shape[d] == -1 ? "only one dim may be -1" : "negative dim");
        } else if (__builtin_mul_overflow(known, shape[d], &known)) {
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_reshape: shape %s has too many "
                                "elements", bp_shape_str(shape, ndim, want, sizeof want));
        }
    }
    int64_t numel = bp_tensor_numel(tensor);
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_reshape: cannot reshape a "
                                "tensor of shape %s (%lld elements) into %s",
                                bp_shape_str(tensor->shape, tensor->ndim, have, sizeof have),
                                (long long)numel, bp_shape_str(shape, ndim, want, sizeof want));
        new_shape[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_reshape: cannot reshape a tensor "
                            "of shape %s (%lld elements) into %s (%lld elements)",
                            bp_shape_str(tensor->shape, tensor->ndim, have, sizeof have),
                            (long long)numel, bp_shape_str(new_shape, ndim, want, sizeof want),
                            (long long)known);
    int64_t strides[BP_MAX_DIMS];
    if (bp_tensor_view_strides(tensor, ndim, new_shape, strides))
        return bp_tensor_make_view(tensor->storage, tensor->dtype, ndim, new_shape, strides,
                                   tensor->offset, out_tensor);
    bp_tensor *c = NULL;
    bp_status st = bp_tensor_contiguous(tensor, &c);
    if (st != BP_OK)
        return bp_error_prefix(st, "bp_tensor_reshape");
    bp_contiguous_strides(ndim, new_shape, strides);
    st = bp_tensor_make_view(c->storage, c->dtype, ndim, new_shape, strides, c->offset,
                             out_tensor);
    bp_tensor_release(c);
    return st;
}

/* Copies the bytes of contiguous `src` into `dst` (same numel and dtype), on one
 * device or two. Between devices of one backend the copy is a peer copy on dst's current
 * stream: events order it after src's current stream, and src's current stream after
 * it, so that neither tensor's memory is reused while the copy may still run. Between
 * backends the HAL stages the copy synchronously. */
static bp_status copy_across(bp_tensor *dst, bp_tensor *src) {
    bp_device *to = dst->storage->device, *from = src->storage->device;
    size_t bytes = (size_t)bp_tensor_numel(src) * bp_dtype_size(src->dtype);
    if (bytes == 0)
        return BP_OK;
    bp_stream *to_stream = bp_current_stream(to), *from_stream = bp_current_stream(from);
    if (!to_stream || !from_stream)
        return BP_ERR_INVALID_ARGUMENT; /* the device failed to open and said why */
    bool peer = to != from && to->backend == from->backend;
    bp_event *ready = NULL, *done = NULL;
    bp_status st = bp_tensor_note_stream(src, from_stream);
    if (st == BP_OK && peer)
        st = bp_event_create(from, BP_EVENT_DEFAULT, &ready);
    if (st == BP_OK && peer)
        st = bp_event_create(to, BP_EVENT_DEFAULT, &done);
    if (st == BP_OK && peer)
        st = bp_event_record(ready, from_stream);
    if (st == BP_OK && peer)
        st = bp_stream_wait_event(to_stream, ready);
    if (st == BP_OK)
        st = bp_memory_copy_async(bp_tensor_data(dst), to, bp_tensor_data(src), from, bytes,
                                  to_stream);
    if (st == BP_OK && peer)
        st = bp_event_record(done, to_stream);
    if (st == BP_OK && peer)
        st = bp_stream_wait_event(from_stream, done);
    if (ready)
        bp_event_destroy(ready);
    if (done)
        bp_event_destroy(done);
    return st;
}

/* Same device: a cast (or a byte copy); across devices: a byte copy of the
 * contiguous source plus one conversion on a device that has the kernel for it. */
bp_status bp_tensor_to(bp_tensor *tensor, bp_device *device, bp_dtype dtype,
                       bp_tensor **out_tensor) {
    if (!out_tensor)
        return null_arg("bp_tensor_to", "out_tensor");
    *out_tensor = NULL;
    if (!tensor || !device)
        return null_arg("bp_tensor_to", !tensor ? "tensor" : "device");
    bp_status st = check_dtype_value("bp_tensor_to", dtype);
    if (st != BP_OK)
        return st;
    bp_device *from = tensor->storage->device;
    /* A plain byte copy needs no kernel: a backend without a copy kernel can still
     * duplicate a contiguous tensor. */
    if (from == device && (dtype != tensor->dtype || !bp_tensor_is_contiguous(tensor)))
        return bp_cast(tensor, dtype, out_tensor);

    /* Convert where a copy kernel for the target dtype exists: on the target device
     * after the transfer, else on the source before it. With neither, the transfer
     * comes first and the dispatcher reports the missing kernel (or falls back). */
    bool convert_first = dtype != tensor->dtype &&
                         !(bp_kernel_dtypes(BP_OP_COPY, device) & BP_DTYPE_BIT(dtype)) &&
                         (bp_kernel_dtypes(BP_OP_COPY, from) & BP_DTYPE_BIT(dtype));
    bp_tensor *src = NULL, *moved = NULL;
    st = convert_first ? bp_cast(tensor, dtype, &src) : bp_tensor_contiguous(tensor, &src);
    if (st == BP_OK)
        st = bp_tensor_empty(device, src->dtype, src->ndim, src->shape, &moved);
    if (st == BP_OK)
        st = copy_across(moved, src);
    bp_tensor_release(src);
    if (st == BP_OK && moved->dtype != dtype) {
        bp_tensor *converted = NULL;
        st = bp_cast(moved, dtype, &converted);
        bp_tensor_release(moved);
        moved = st == BP_OK ? converted : NULL;
    }
    if (st != BP_OK) {
        bp_tensor_release(moved);
        return bp_error_prefix(st, "bp_tensor_to");
    }
    *out_tensor = moved;
    return BP_OK;
}

/* ---- cat ---- */

/* Checks the parts and computes the output shape; *out_dim is the normalised dim. */
static bp_status cat_shape(bp_tensor *const *tensors, int n, int dim, bp_device **device,
                           int *out_dim, int64_t *shape) {
    if (!tensors)
        return null_arg("cat", "tensors");
    if (n < 1)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "cat: needs at least one tensor, got %d", n);
    bp_status st = bp_check_tensors("cat", tensors, n, device);
    if (st == BP_OK)
        st = bp_check_dtype("cat", tensors, n, tensors[0]->dtype);
    if (st != BP_OK)
        return st;
    const bp_tensor *first = tensors[0];
    if (first->ndim == 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "cat: tensor 0 is a scalar (0 dims); "
                            "unsqueeze it to concatenate");
    st = bp_check_dim("cat", dim, first->ndim, out_dim);
    if (st != BP_OK)
        return st;
    memcpy(shape, first->shape, sizeof first->shape);
    shape[*out_dim] = 0;
    for (int i = 0; i < n; i++) {
        const bp_tensor *t = tensors[i];
        bool same = t->ndim == first->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = d == *out_dim || t->shape[d] == first->shape[d];
        if (!same) {
            char a[160], b[160];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "cat: tensor %d has shape %s but tensor 0 "
                                "has %s (all dims but dim %d must match)", i,
                                bp_shape_str(t->shape, t->ndim, a, sizeof a),
                                bp_shape_str(first->shape, first->ndim, b, sizeof b), *out_dim);
        }
        shape[*out_dim] += t->shape[*out_dim];
    }
    return BP_OK;
}

/* Op "cat" into `out`, which must not overlap any part. */
bp_status bp_cat_out(bp_tensor *const *tensors, int n, int dim, bp_tensor *out) {
    bp_device *device = NULL;
    int64_t shape[BP_MAX_DIMS];
    int d = 0;
    bp_status st = cat_shape(tensors, n, dim, &device, &d, shape);
    if (st != BP_OK)
        return st;
    bp_dtype dtype = tensors[0]->dtype;
    st = bp_check_out("cat", out, device, dtype, tensors[0]->ndim, shape, tensors, n, false);
    if (st != BP_OK)
        return st;
    bp_cat_attrs attrs = {.dim = d};
    return bp_op_run(BP_OP_CAT, dtype, device, tensors, n, &out, 1, &attrs);
}

/* bp_cat_out into a new contiguous tensor. */
bp_status bp_cat(bp_tensor *const *tensors, int n, int dim, bp_tensor **out) {
    if (!out)
        return null_arg("cat", "out");
    *out = NULL;
    bp_device *device = NULL;
    int64_t shape[BP_MAX_DIMS];
    int d = 0;
    bp_status st = cat_shape(tensors, n, dim, &device, &d, shape);
    if (st != BP_OK)
        return st;
    bp_tensor *t = NULL;
    st = bp_op_alloc_out(device, tensors[0]->dtype, tensors[0]->ndim, shape, &t);
    if (st == BP_OK)
        st = bp_cat_out(tensors, n, d, t);
    if (st != BP_OK) {
        bp_tensor_release(t);
        return st;
    }
    *out = t;
    return BP_OK;
}
