/* backplane: tensors, strided views over reference-counted device storage. */
#ifndef BACKPLANE_TENSOR_H
#define BACKPLANE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <backplane/dtype.h>
#include <backplane/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BP_MAX_DIMS 8

/** A strided view of device memory: dtype, up to BP_MAX_DIMS dims, shape, strides (in
 *  elements), storage offset (in elements) and device. Storage comes from the device's
 *  caching allocator and is reference counted: views share it, and it returns to the
 *  cache when the last tensor using it is released (stream-ordered, so work already
 *  enqueued on it still completes). A tensor's metadata is immutable; it may be read
 *  from many threads, and retained/released from many threads. */
typedef struct bp_tensor bp_tensor;

/** Creates an uninitialised contiguous tensor on `device`, allocated for the thread's
 *  current stream of the device. ndim 0 is a scalar (one element); a dim may be 0.
 *  Errors: BP_ERR_INVALID_ARGUMENT (bad dtype, ndim, negative dim, size overflow),
 *  BP_ERR_OUT_OF_MEMORY. The caller owns one reference. */
BP_API bp_status bp_tensor_empty(bp_device *device, bp_dtype dtype, int ndim,
                                 const int64_t *shape, bp_tensor **out_tensor);

/** Creates a contiguous tensor on `device` holding a copy of `host_data` (numel
 *  elements of `dtype`, row-major). Returns when the data has been copied, so the
 *  host buffer may be reused at once. */
BP_API bp_status bp_tensor_from_host(bp_device *device, bp_dtype dtype, int ndim,
                                     const int64_t *shape, const void *host_data,
                                     bp_tensor **out_tensor);

/** Copies the tensor's elements, in row-major order whatever its strides, into
 *  `host_data` (host_size bytes, at least numel * dtype size). Waits for the thread's
 *  current stream of the tensor's device first; returns when the data is there. */
BP_API bp_status bp_tensor_to_host(const bp_tensor *tensor, void *host_data, size_t host_size);

/** Adds a reference. Returns the tensor. */
BP_API bp_tensor *bp_tensor_retain(bp_tensor *tensor);
/** Drops a reference; the last one frees the tensor (and its storage, if no view uses
 *  it). NULL is a no-op. */
BP_API void bp_tensor_release(bp_tensor *tensor);

/* Accessors. They do not fail; on a NULL tensor they return 0 / NULL / false. */
BP_API bp_dtype bp_tensor_dtype(const bp_tensor *tensor);
BP_API int bp_tensor_ndim(const bp_tensor *tensor);
/** Size of dim `dim`; negative dims count from the end (-1 is the last). */
BP_API int64_t bp_tensor_size(const bp_tensor *tensor, int dim);
/** Stride of dim `dim` in elements; negative dims count from the end. */
BP_API int64_t bp_tensor_stride(const bp_tensor *tensor, int dim);
/** Pointer to the shape array (ndim entries); valid as long as the tensor. */
BP_API const int64_t *bp_tensor_shape(const bp_tensor *tensor);
BP_API int64_t bp_tensor_numel(const bp_tensor *tensor);
BP_API int64_t bp_tensor_storage_offset(const bp_tensor *tensor);
BP_API bp_device *bp_tensor_device(const bp_tensor *tensor);
/** Device address of the first element (storage base + offset); NULL for no elements. */
BP_API void *bp_tensor_data(const bp_tensor *tensor);
BP_API bool bp_tensor_is_contiguous(const bp_tensor *tensor);
/** True when both tensors use the same storage. */
BP_API bool bp_tensor_shares_storage(const bp_tensor *a, const bp_tensor *b);

/* Views: share storage with `tensor`; the caller owns one reference to the result. */

/** Elements [start, start+length) of dim `dim`. */
BP_API bp_status bp_tensor_narrow(bp_tensor *tensor, int dim, int64_t start, int64_t length,
                                  bp_tensor **out_view);
/** Splits dim `dim` into `sections` views as equal as possible (the first
 *  size % sections get one more element), like torch.tensor_split(t, sections, dim).
 *  out_views has room for `sections` pointers. */
BP_API bp_status bp_tensor_split(bp_tensor *tensor, int64_t sections, int dim,
                                 bp_tensor **out_views);
/** Swaps two dims. */
BP_API bp_status bp_tensor_transpose(bp_tensor *tensor, int dim0, int dim1, bp_tensor **out_view);
/** Reorders dims: dim i of the view is dim dims[i] of the tensor (a permutation). */
BP_API bp_status bp_tensor_permute(bp_tensor *tensor, const int *dims, bp_tensor **out_view);
/** A view with the given shape and the same numel; one entry may be -1 (inferred).
 *  When the strides cannot express it as a view, the result is a contiguous copy
 *  (enqueued on the current stream), as torch.reshape does. */
BP_API bp_status bp_tensor_reshape(bp_tensor *tensor, int ndim, const int64_t *shape,
                                   bp_tensor **out_tensor);
/** Inserts a dim of size 1 at `dim` (0..ndim; negative counts from the end). */
BP_API bp_status bp_tensor_unsqueeze(bp_tensor *tensor, int dim, bp_tensor **out_view);

/* Copies, enqueued on the current stream of the destination device. */

/** The tensor itself (retained) when contiguous, else a contiguous copy. */
BP_API bp_status bp_tensor_contiguous(bp_tensor *tensor, bp_tensor **out_tensor);
/** A contiguous copy on `device` with dtype `dtype` (conversion rounds to nearest even;
 *  float to integer truncates toward zero; to bool is value != 0). Any two devices. */
BP_API bp_status bp_tensor_to(bp_tensor *tensor, bp_device *device, bp_dtype dtype,
                              bp_tensor **out_tensor);

#ifdef __cplusplus
}
#endif
#endif
