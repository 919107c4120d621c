/* Internal contract of the tensor layer (tensor/): storage, tensor headers and deferred
 * storage, for the layers above it (the region recorder, the op library). Not
 * installed. The tensor layer uses hal only. */
#ifndef BP_TENSOR_INTERNAL_H
#define BP_TENSOR_INTERNAL_H

#include "hal_internal.h"

/* ---- storage and headers (tensor.c, view.c) ---- */

/* Reference-counted device memory shared by a tensor and its views. */
typedef struct bp_storage {
    atomic_int refcount;
    bp_device *device;
    void *ptr;                 /* from bp_memory_alloc; NULL for zero bytes */
    size_t bytes;
    bp_stream *stream;         /* the stream it was allocated for */
    uint64_t stream_id;        /* its id: a stream's address may be reused later */
    atomic_uint_least64_t last_user_id; /* last other stream recorded as a user */
    /* Non-NULL while the storage is deferred (below). */
    struct bp_deferred *deferred;
} bp_storage;

struct bp_tensor {
    atomic_int refcount;
    bp_storage *storage;
    bp_dtype dtype;
    int ndim;
    int64_t shape[BP_MAX_DIMS];
    int64_t strides[BP_MAX_DIMS]; /* elements */
    int64_t offset;               /* elements */
    /* What kernels see, filled once by bp_tensor_make_view (the metadata above never
     * changes), so that dispatch passes a pointer instead of building a copy. */
    bp_tensor_desc desc;
};

/* Writes "[2, 3, 4]" into buf and returns it (truncated to fit). */
BP_INTERNAL const char *bp_shape_str(const int64_t *shape, int ndim, char *buf, size_t size);
/* A new tensor header over `storage` (retained), with the given layout; fills desc. */
BP_INTERNAL bp_status bp_tensor_make_view(bp_storage *storage, bp_dtype dtype, int ndim,
                                          const int64_t *shape, const int64_t *strides,
                                          int64_t offset, bp_tensor **out_tensor);
/* Marks the tensor's storage as used by `stream` (bp_memory_record_stream) when that
 * is not the stream it was allocated for, so its memory is not reused too early. */
BP_INTERNAL bp_status bp_tensor_note_stream(const bp_tensor *tensor, bp_stream *stream);
/* Storage reference counting for the region recorder. */
BP_INTERNAL void bp_storage_retain(bp_storage *storage);
BP_INTERNAL void bp_storage_release(bp_storage *storage);
/* Contiguous strides (in elements) for `shape`. */
BP_INTERNAL void bp_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* Strides that give `tensor` the (same-numel) `shape` without copying, as PyTorch's
 * computeStride; false when only a copy can (view.c). */
BP_INTERNAL bool bp_tensor_view_strides(const bp_tensor *tensor, int ndim, const int64_t *shape,
                                        int64_t *strides);

/* The tensor whose desc member `desc` is (a descriptor from bp_tensor_kernel_desc). */
static inline bp_tensor *bp_tensor_of_desc(const bp_tensor_desc *desc) {
    return (bp_tensor *)((const char *)desc - offsetof(struct bp_tensor, desc));
}

/* ---- deferred storage (deferred.c) ----
 * bp_tensor_empty on a captured stream (a region records on it) makes storage without
 * memory: the capturing layer gives it memory when the capture ends (the region's
 * executor), and every header over it then gets its data pointer. Until then, reading
 * it fails (bp_storage_check_readable). */

typedef struct bp_deferred {
    /* The capture that will give it memory (the region's), NULL once that failed. */
    const bp_stream_capture *owner;
    pthread_mutex_t lock;
    bp_tensor **views;        /* headers over the storage, patched when memory comes */
    int nviews, cap;
} bp_deferred;

/* bp_tensor_empty on a captured stream hands the new storage to this hook, which the
 * capturing layer installs (from its constructor): it makes the storage deferred
 * (bp_storage_defer) and keeps it. Without one, the storage gets memory at once. */
typedef bp_status (*bp_storage_capture_hook)(bp_stream *stream, bp_storage *storage);
BP_INTERNAL void bp_storage_set_capture_hook(bp_storage_capture_hook hook);
/* bp_tensor_empty on a captured stream: the hook's answer (or memory at once). */
BP_INTERNAL bp_status bp_storage_captured(bp_stream *stream, bp_storage *storage);

/* Makes `storage` (no memory yet) deferred, owned by `owner`. */
BP_INTERNAL bp_status bp_storage_defer(bp_storage *storage, const bp_stream_capture *owner);
/* The owner gave the storage memory (storage->ptr): every header over it gets its data
 * pointer, and the storage becomes ordinary. */
BP_INTERNAL void bp_storage_resolve(bp_storage *storage);
/* The owner failed, or ended without giving it memory: it stays deferred, unreadable. */
BP_INTERNAL void bp_storage_abandon(bp_storage *storage);
/* BP_ERR_INVALID_STATE when the storage is deferred (its capture has not ended, or
 * failed), with a message naming `what`; BP_OK otherwise. */
BP_INTERNAL bp_status bp_storage_check_readable(const bp_storage *storage, const char *what);
/* For the tensor layer: a header over deferred storage was made / is being freed (for
 * patching at the end), and the storage itself is being freed. */
BP_INTERNAL bp_status bp_deferred_view_added(bp_storage *storage, bp_tensor *tensor);
BP_INTERNAL void bp_deferred_view_removed(bp_storage *storage, bp_tensor *tensor);
BP_INTERNAL void bp_deferred_storage_freed(bp_storage *storage);

#endif
