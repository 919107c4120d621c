/* Tensors: strided views over reference-counted storage from the caching allocator.
 *
 * A tensor header is immutable once made; only the two reference counts and the
 * storage's last_user_id change, and those are atomic, so tensors may be shared between
 * threads. What copies through the op library (bp_tensor_contiguous, bp_tensor_to_host,
 * bp_tensor_reshape when no view fits) lives in ops/copy.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_internal.h"

/* ---- storage ---- */

static void storage_release(bp_storage *s) {
    if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1)
        return;
    if (s->deferred)
        bp_deferred_storage_freed(s);
    if (s->ptr && bp_memory_free(s->device, s->ptr) != BP_OK)
        bp_log(BP_LOG_ERROR, "tensor", "freeing %zu bytes of tensor storage on %s failed: %s",
               s->bytes, s->device->name, bp_last_error());
    free(s);
}

void bp_storage_retain(bp_storage *storage) {
    atomic_fetch_add_explicit(&storage->refcount, 1, memory_order_relaxed);
}

void bp_storage_release(bp_storage *storage) { storage_release(storage); }

/* ---- helpers ---- */

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

void bp_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 1 ? shape[d] : 1;
    }
}

const char *bp_shape_str(const int64_t *shape, int ndim, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* Normalises a dim in [-ndim, ndim) to [0, ndim); false when out of range. */
static bool wrap_dim(int dim, int ndim, int *out) {
    if (dim < -ndim || dim >= ndim)
        return false;
    *out = dim < 0 ? dim + ndim : dim;
    return true;
}

static bp_status dim_error(const char *fn, int dim, int ndim) {
    if (ndim == 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: dim %d given but the tensor has 0 dims "
                            "(a scalar)", fn, dim);
    return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: dim %d is out of range for a tensor of %d "
                        "dims (expected %d to %d)", fn, dim, ndim, -ndim, ndim - 1);
}

static bp_status null_error(const char *fn, const char *what) {
    return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
}

/* Checks an ndim/shape pair for a new tensor; sets *numel. */
static bp_status check_shape(const char *fn, int ndim, const int64_t *shape, int64_t *numel) {
    if (ndim < 0 || ndim > BP_MAX_DIMS)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: ndim %d is out of range (0 to %d)", fn,
                            ndim, BP_MAX_DIMS);
    if (ndim > 0 && !shape)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: shape is NULL for ndim %d", fn, ndim);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            char buf[200];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                "%s: dim %d of shape %s is negative (%lld)", fn, d,
                                bp_shape_str(shape, ndim, buf, sizeof buf), (long long)shape[d]);
        }
        if (__builtin_mul_overflow(n, shape[d], &n)) {
            char buf[200];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: shape %s has too many elements "
                                "(overflows 64 bits)", fn,
                                bp_shape_str(shape, ndim, buf, sizeof buf));
        }
    }
    *numel = n;
    return BP_OK;
}

/* ---- internal API ---- */

/* What kernels see of the tensor: data at its first element, NULL without elements. */
static void describe(const bp_tensor *tensor, bp_tensor_desc *desc) {
    memset(desc, 0, sizeof *desc);
    /* Deferred storage has no memory yet: NULL until its region's executor assigns it. */
    desc->data = tensor->storage->deferred ? NULL : bp_tensor_data(tensor);
    desc->dtype = tensor->dtype;
    desc->ndim = tensor->ndim;
    for (int d = 0; d < tensor->ndim; d++) {
        desc->shape[d] = tensor->shape[d];
        desc->strides[d] = tensor->strides[d];
    }
}

/* A new header over `storage` (retained), with its kernel descriptor filled. */
bp_status bp_tensor_make_view(bp_storage *storage, bp_dtype dtype, int ndim, const int64_t *shape,
                              const int64_t *strides, int64_t offset, bp_tensor **out_tensor) {
    *out_tensor = NULL;
    if (ndim < 0 || ndim > BP_MAX_DIMS)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "tensor view: ndim %d is out of range (0 to "
                            "%d)", ndim, BP_MAX_DIMS);
    bp_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "tensor view: out of host memory for the "
                            "tensor header");
    atomic_init(&t->refcount, 1);
    atomic_fetch_add_explicit(&storage->refcount, 1, memory_order_relaxed);
    t->storage = storage;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
    t->offset = offset;
    describe(t, &t->desc);
    if (storage->deferred) {
        bp_status st = bp_deferred_view_added(storage, t);
        if (st != BP_OK) {
            storage_release(storage);
            free(t);
            return st;
        }
    }
    *out_tensor = t;
    return BP_OK;
}

/* Records `stream` with the allocator unless it is the allocation stream or was the
 * last one recorded: every op calls this, and recording is a locked map update. */
bp_status bp_tensor_note_stream(const bp_tensor *tensor, bp_stream *stream) {
    bp_storage *s = tensor->storage;
    if (!s->ptr || !stream || stream->id == s->stream_id ||
        stream->id == atomic_load_explicit(&s->last_user_id, memory_order_relaxed))
        return BP_OK;
    bp_status st = bp_memory_record_stream(s->device, s->ptr, stream);
    if (st == BP_OK)
        atomic_store_explicit(&s->last_user_id, stream->id, memory_order_relaxed);
    return st;
}

/* The kernel's view: data points at the first element, NULL without elements. */
const bp_tensor_desc *bp_tensor_kernel_desc(const bp_tensor *tensor) {
    return tensor ? &tensor->desc : NULL;
}

/* ---- creation ---- */

/* Storage for the current stream, contiguous strides; the header owns the storage's
 * first reference. */
bp_status bp_tensor_empty(bp_device *device, bp_dtype dtype, int ndim, const int64_t *shape,
                          bp_tensor **out_tensor) {
    if (!out_tensor)
        return null_error("bp_tensor_empty", "out_tensor");
    *out_tensor = NULL;
    if (!device)
        return null_error("bp_tensor_empty", "device");
    if ((unsigned)dtype >= BP_DTYPE_COUNT)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_empty: invalid dtype %d (expected "
                            "0 to %d)", (int)dtype, BP_DTYPE_COUNT - 1);
    int64_t numel = 0;
    bp_status st = check_shape("bp_tensor_empty", ndim, shape, &numel);
    if (st != BP_OK)
        return st;
    size_t bytes;
    if (__builtin_mul_overflow((uint64_t)numel, bp_dtype_size(dtype), &bytes)) {
        char buf[200];
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_empty: %s tensor of shape %s is "
                            "too large (byte size overflows)", bp_dtype_name(dtype),
                            bp_shape_str(shape, ndim, buf, sizeof buf));
    }
    bp_stream *stream = bp_current_stream(device);
    if (!stream)
        return bp_error_prefix(BP_ERR_INVALID_ARGUMENT, "bp_tensor_empty");
    bp_storage *s = calloc(1, sizeof *s);
    if (!s)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_tensor_empty: out of host memory");
    atomic_init(&s->refcount, 1);
    atomic_init(&s->last_user_id, 0);
    s->device = device;
    s->bytes = bytes;
    s->stream = stream;
    s->stream_id = stream->id;
    st = stream->capture ? bp_storage_captured(stream, s)
                         : bp_memory_alloc(device, bytes, stream, &s->ptr);
    if (st != BP_OK) {
        free(s);
        return st;
    }
    int64_t strides[BP_MAX_DIMS];
    bp_contiguous_strides(ndim, shape, strides);
    st = bp_tensor_make_view(s, dtype, ndim, shape, strides, 0, out_tensor);
    storage_release(s); /* the view holds it now, or it goes */
    return st;
}

/* bp_tensor_empty, then a host-to-device copy on its stream, waited for. */
bp_status bp_tensor_from_host(bp_device *device, bp_dtype dtype, int ndim, const int64_t *shape,
                              const void *host_data, bp_tensor **out_tensor) {
    if (!out_tensor)
        return null_error("bp_tensor_from_host", "out_tensor");
    *out_tensor = NULL;
    bp_stream *current = bp_current_stream(device);
    bp_status st = BP_OK;
    if (current) /* its copy could not be recorded */
        st = bp_stream_check_not_captured(current, BP_CAPTURE_REFUSE_COPY, "bp_tensor_from_host");
    if (st != BP_OK)
        return st;
    bp_tensor *t = NULL;
    st = bp_tensor_empty(device, dtype, ndim, shape, &t);
    if (st != BP_OK)
        return bp_error_prefix(st, "bp_tensor_from_host");
    bp_storage *s = t->storage;
    if (s->bytes > 0) {
        if (!host_data) {
            bp_tensor_release(t);
            return null_error("bp_tensor_from_host", "host_data");
        }
        st = bp_memory_copy_async(s->ptr, device, host_data, NULL, s->bytes, s->stream);
        if (st == BP_OK)
            st = bp_stream_synchronize(s->stream);
        if (st != BP_OK) {
            bp_tensor_release(t);
            return bp_error_prefix(st, "bp_tensor_from_host");
        }
    }
    *out_tensor = t;
    return BP_OK;
}

/* Reference counting: the last header released drops its storage reference. */
bp_tensor *bp_tensor_retain(bp_tensor *tensor) {
    if (tensor)
        atomic_fetch_add_explicit(&tensor->refcount, 1, memory_order_relaxed);
    return tensor;
}

void bp_tensor_release(bp_tensor *tensor) {
    if (!tensor || atomic_fetch_sub_explicit(&tensor->refcount, 1, memory_order_acq_rel) != 1)
        return;
    if (tensor->storage->deferred)
        bp_deferred_view_removed(tensor->storage, tensor);
    storage_release(tensor->storage);
    free(tensor);
}

/* ---- accessors (NULL-safe, never failing; see tensor.h) ---- */

bp_dtype bp_tensor_dtype(const bp_tensor *tensor) { return tensor ? tensor->dtype : BP_DTYPE_F32; }

int bp_tensor_ndim(const bp_tensor *tensor) { return tensor ? tensor->ndim : 0; }

/* Out-of-range dims read as 0, like a NULL tensor: accessors do not fail. */
int64_t bp_tensor_size(const bp_tensor *tensor, int dim) {
    int d;
    return tensor && wrap_dim(dim, tensor->ndim, &d) ? tensor->shape[d] : 0;
}

int64_t bp_tensor_stride(const bp_tensor *tensor, int dim) {
    int d;
    return tensor && wrap_dim(dim, tensor->ndim, &d) ? tensor->strides[d] : 0;
}

const int64_t *bp_tensor_shape(const bp_tensor *tensor) { return tensor ? tensor->shape : NULL; }

int64_t bp_tensor_numel(const bp_tensor *tensor) {
    return tensor ? numel_of(tensor->ndim, tensor->shape) : 0;
}

int64_t bp_tensor_storage_offset(const bp_tensor *tensor) { return tensor ? tensor->offset : 0; }

bp_device *bp_tensor_device(const bp_tensor *tensor) {
    return tensor ? tensor->storage->device : NULL;
}

void *bp_tensor_data(const bp_tensor *tensor) {
    if (tensor && tensor->storage->deferred) {
        bp_storage_check_readable(tensor->storage, "bp_tensor_data");
        return NULL;
    }
    if (!tensor || !tensor->storage->ptr || bp_tensor_numel(tensor) == 0)
        return NULL;
    return (char *)tensor->storage->ptr + tensor->offset * (int64_t)bp_dtype_size(tensor->dtype);
}

/* Dims of size 1 may have any stride, and a tensor without elements is contiguous,
 * as in PyTorch. */
bool bp_tensor_is_contiguous(const bp_tensor *tensor) {
    if (!tensor)
        return false;
    if (bp_tensor_numel(tensor) == 0)
        return true;
    int64_t expect = 1;
    for (int d = tensor->ndim - 1; d >= 0; d--) {
        if (tensor->shape[d] != 1 && tensor->strides[d] != expect)
            return false;
        expect *= tensor->shape[d];
    }
    return true;
}

bool bp_tensor_shares_storage(const bp_tensor *a, const bp_tensor *b) {
    return a && b && a->storage == b->storage;
}

/* ---- views ---- */

static bp_status view_of(bp_tensor *t, const int64_t *shape, const int64_t *strides, int ndim,
                         int64_t offset, bp_tensor **out_view) {
    return bp_tensor_make_view(t->storage, t->dtype, ndim, shape, strides, offset, out_view);
}

/* Same strides; the offset moves to `start`. */
bp_status bp_tensor_narrow(bp_tensor *tensor, int dim, int64_t start, int64_t length,
                           bp_tensor **out_view) {
    if (!out_view)
        return null_error("bp_tensor_narrow", "out_view");
    *out_view = NULL;
    if (!tensor)
        return null_error("bp_tensor_narrow", "tensor");
    int d;
    if (!wrap_dim(dim, tensor->ndim, &d))
        return dim_error("bp_tensor_narrow", dim, tensor->ndim);
    int64_t size = tensor->shape[d];
    if (start < -size || start > size)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_narrow: start %lld is out of range "
                            "for dim %d of size %lld (expected %lld to %lld)", (long long)start,
                            dim, (long long)size, (long long)-size, (long long)size);
    if (start < 0)
        start += size;
    if (length < 0 || length > size - start)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_narrow: start %lld + length %lld "
                            "exceeds size %lld of dim %d", (long long)start, (long long)length,
                            (long long)size, dim);
    int64_t shape[BP_MAX_DIMS];
    memcpy(shape, tensor->shape, sizeof shape);
    shape[d] = length;
    return view_of(tensor, shape, tensor->strides, tensor->ndim,
                   tensor->offset + start * tensor->strides[d], out_view);
}

/* Narrows of sizes size/sections, the first size%sections one larger; all or none. */
bp_status bp_tensor_split(bp_tensor *tensor, int64_t sections, int dim, bp_tensor **out_views) {
    if (!out_views)
        return null_error("bp_tensor_split", "out_views");
    if (!tensor)
        return null_error("bp_tensor_split", "tensor");
    if (sections < 1)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_split: sections is %lld, expected "
                            "at least 1", (long long)sections);
    for (int64_t i = 0; i < sections; i++)
        out_views[i] = NULL;
    int d;
    if (!wrap_dim(dim, tensor->ndim, &d))
        return dim_error("bp_tensor_split", dim, tensor->ndim);
    int64_t size = tensor->shape[d], base = size / sections, extra = size % sections;
    int64_t start = 0;
    for (int64_t i = 0; i < sections; i++) {
        int64_t length = base + (i < extra ? 1 : 0);
        bp_status st = bp_tensor_narrow(tensor, d, start, length, &out_views[i]);
        if (st != BP_OK) {
            for (int64_t j = 0; j < i; j++) {
                bp_tensor_release(out_views[j]);
                out_views[j] = NULL;
            }
            return bp_error_prefix(st, "bp_tensor_split");
        }
        start += length;
    }
    return BP_OK;
}

/* Swaps the two dims' sizes and strides. */
bp_status bp_tensor_transpose(bp_tensor *tensor, int dim0, int dim1, bp_tensor **out_view) {
    if (!out_view)
        return null_error("bp_tensor_transpose", "out_view");
    *out_view = NULL;
    if (!tensor)
        return null_error("bp_tensor_transpose", "tensor");
    int d0, d1;
    if (!wrap_dim(dim0, tensor->ndim, &d0))
        return dim_error("bp_tensor_transpose", dim0, tensor->ndim);
    if (!wrap_dim(dim1, tensor->ndim, &d1))
        return dim_error("bp_tensor_transpose", dim1, tensor->ndim);
    int64_t shape[BP_MAX_DIMS], strides[BP_MAX_DIMS];
    memcpy(shape, tensor->shape, sizeof shape);
    memcpy(strides, tensor->strides, sizeof strides);
    shape[d0] = tensor->shape[d1];
    shape[d1] = tensor->shape[d0];
    strides[d0] = tensor->strides[d1];
    strides[d1] = tensor->strides[d0];
    return view_of(tensor, shape, strides, tensor->ndim, tensor->offset, out_view);
}

/* Reorders sizes and strides; dims may be negative but must not repeat. */
bp_status bp_tensor_permute(bp_tensor *tensor, const int *dims, bp_tensor **out_view) {
    if (!out_view)
        return null_error("bp_tensor_permute", "out_view");
    *out_view = NULL;
    if (!tensor)
        return null_error("bp_tensor_permute", "tensor");
    int ndim = tensor->ndim;
    if (ndim > 0 && !dims)
        return null_error("bp_tensor_permute", "dims");
    bool seen[BP_MAX_DIMS] = {false};
    int64_t shape[BP_MAX_DIMS], strides[BP_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        int d;
        if (!wrap_dim(dims[i], ndim, &d))
            return dim_error("bp_tensor_permute", dims[i], ndim);
        if (seen[d]) {
            char buf[200];
            int64_t given[BP_MAX_DIMS];
            for (int j = 0; j < ndim; j++)
                given[j] = dims[j];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_permute: dims %s are not a "
                                "permutation of 0..%d (dim %d repeats)",
                                bp_shape_str(given, ndim, buf, sizeof buf), ndim - 1, d);
        }
        seen[d] = true;
        shape[i] = tensor->shape[d];
        strides[i] = tensor->strides[d];
    }
    return view_of(tensor, shape, strides, ndim, tensor->offset, out_view);
}

/* Inserts a size-1 dim. */
bp_status bp_tensor_unsqueeze(bp_tensor *tensor, int dim, bp_tensor **out_view) {
    if (!out_view)
        return null_error("bp_tensor_unsqueeze", "out_view");
    *out_view = NULL;
    if (!tensor)
        return null_error("bp_tensor_unsqueeze", "tensor");
    int ndim = tensor->ndim, d;
    if (ndim == BP_MAX_DIMS)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_unsqueeze: the tensor already has "
                            "the maximum of %d dims", BP_MAX_DIMS);
    if (!wrap_dim(dim, ndim + 1, &d))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_tensor_unsqueeze: dim %d is out of range "
                            "for a tensor of %d dims (expected %d to %d)", dim, ndim, -ndim - 1,
                            ndim);
    int64_t shape[BP_MAX_DIMS], strides[BP_MAX_DIMS];
    for (int i = 0, j = 0; i <= ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            /* The stride PyTorch gives: as if the dim had been split off the next one. */
            strides[i] = d < ndim ? tensor->shape[d] * tensor->strides[d] : 1;
            continue;
        }
        shape[i] = tensor->shape[j];
        strides[i] = tensor->strides[j];
        j++;
    }
    return view_of(tensor, shape, strides, ndim + 1, tensor->offset, out_view);
}

/* PyTorch's computeStride: walk the old dims from the back in chunks that are
 * contiguous with each other, and require the new dims to tile each chunk exactly. */
bool bp_tensor_view_strides(const bp_tensor *t, int ndim, const int64_t *shape,
                            int64_t *strides) {
    if (bp_tensor_is_contiguous(t)) {
        bp_contiguous_strides(ndim, shape, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tensor_numel *= t->shape[td];
        if (td == 0 ||
            (t->shape[td - 1] != 1 && t->strides[td - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (td > 0) {
                chunk_base = t->strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}
