/* The public memory API: argument checks, stream resolution, host memory, copies. */
#include <stdlib.h>
#include <string.h>

#include "hal_internal.h"
#include "ptr_map.h"

/* Live host allocations -> the device they were made for (double/foreign free checks). */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static bp_ptr_map host_allocations;

static bp_status open_device(bp_device *device, const char *what) {
    if (!device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: device is NULL", what);
    return bp_device_ensure_open(device);
}

/* Resolves a NULL stream to the thread's current stream of `device` and checks that
 * the stream belongs to `device` (or to `other`, when given). */
static bp_status resolve_stream(bp_device *device, bp_device *other, bp_stream **stream,
                                const char *what) {
    if (!*stream)
        *stream = bp_current_stream(device);
    bp_status st = bp_stream_check(*stream, what);
    if (st != BP_OK)
        return st;
    if ((*stream)->device != device && (*stream)->device != other)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: the stream belongs to %s, not to %s%s%s",
                            what, (*stream)->device->name, device->name, other ? " or " : "",
                            other ? other->name : "");
    return BP_OK;
}

bp_status bp_memory_alloc(bp_device *device, size_t size, bp_stream *stream, void **out_ptr) {
    if (!out_ptr)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_memory_alloc: out_ptr is NULL");
    *out_ptr = NULL;
    bp_status st = open_device(device, "bp_memory_alloc");
    if (st == BP_OK)
        st = resolve_stream(device, NULL, &stream, "bp_memory_alloc");
    if (st != BP_OK || size == 0)
        return st;
    return bp_allocator_alloc(device->allocator, size, stream, out_ptr);
}

bp_status bp_memory_free(bp_device *device, void *ptr) {
    bp_status st = open_device(device, "bp_memory_free");
    if (st != BP_OK || !ptr)
        return st;
    return bp_allocator_free(device->allocator, ptr);
}

bp_status bp_memory_record_stream(bp_device *device, void *ptr, bp_stream *stream) {
    bp_status st = open_device(device, "bp_memory_record_stream");
    if (st == BP_OK)
        st = bp_stream_check(stream, "bp_memory_record_stream");
    if (st != BP_OK)
        return st;
    if (stream->device != device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_memory_record_stream: the stream belongs "
                            "to %s, the memory to %s", stream->device->name, device->name);
    if (!ptr)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_memory_record_stream: ptr is NULL");
    return bp_allocator_record_stream(device->allocator, ptr, stream);
}

bp_status bp_memory_get_stats(bp_device *device, bp_memory_stats *stats) {
    bp_status st = open_device(device, "bp_memory_get_stats");
    if (st != BP_OK)
        return st;
    if (!stats || stats->struct_size == 0 || stats->struct_size > sizeof(bp_memory_stats))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_memory_get_stats: stats is NULL or its "
                            "struct_size is not set to sizeof(bp_memory_stats) (%zu)",
                            sizeof(bp_memory_stats));
    bp_allocator_get_stats(device->allocator, stats);
    return BP_OK;
}

bp_status bp_memory_empty_cache(bp_device *device) {
    bp_status st = open_device(device, "bp_memory_empty_cache");
    return st == BP_OK ? bp_allocator_empty_cache(device->allocator) : st;
}

bp_status bp_memory_reset_peak(bp_device *device) {
    bp_status st = open_device(device, "bp_memory_reset_peak");
    if (st == BP_OK)
        bp_allocator_reset_peak(device->allocator);
    return st;
}

bp_status bp_memory_set_limit(bp_device *device, uint64_t limit_bytes) {
    bp_status st = open_device(device, "bp_memory_set_limit");
    return st == BP_OK ? bp_allocator_set_limit(device->allocator, limit_bytes) : st;
}

bp_status bp_host_alloc(bp_device *device, size_t size, void **out_ptr) {
    if (!out_ptr)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_host_alloc: out_ptr is NULL");
    *out_ptr = NULL;
    bp_status st = open_device(device, "bp_host_alloc");
    if (st != BP_OK || size == 0)
        return st;
    const bp_memory_vtable *vt = device->backend->desc->memory;
    void *ptr = NULL;
    if (vt->host_alloc) {
        st = vt->host_alloc(device->handle, size, &ptr);
        if (st != BP_OK)
            return bp_error_prefix(st, device->name);
    } else {
        size_t rounded = (size + 63) & ~(size_t)63;
        ptr = rounded >= size ? aligned_alloc(64, rounded) : NULL;
        if (!ptr)
            return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_host_alloc: cannot allocate %zu bytes of "
                                "host memory for %s", size, device->name);
    }
    pthread_mutex_lock(&host_lock);
    bool stored = bp_ptr_map_put(&host_allocations, ptr, device);
    pthread_mutex_unlock(&host_lock);
    if (!stored) {
        vt->host_free ? vt->host_free(device->handle, ptr) : free(ptr);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_host_alloc: out of memory tracking "
                            "allocations");
    }
    *out_ptr = ptr;
    return BP_OK;
}

bp_status bp_host_free(bp_device *device, void *ptr) {
    bp_status st = open_device(device, "bp_host_free");
    if (st != BP_OK || !ptr)
        return st;
    pthread_mutex_lock(&host_lock);
    bp_device *owner = bp_ptr_map_get(&host_allocations, ptr);
    if (owner == device)
        bp_ptr_map_remove(&host_allocations, ptr);
    pthread_mutex_unlock(&host_lock);
    if (!owner)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_host_free: %p is not a live allocation of "
                            "bp_host_alloc (double free or foreign pointer)", ptr);
    if (owner != device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_host_free: %p was allocated for %s, not %s",
                            ptr, owner->name, device->name);
    const bp_memory_vtable *vt = device->backend->desc->memory;
    vt->host_free ? vt->host_free(device->handle, ptr) : free(ptr);
    return BP_OK;
}

/* A copy between devices that cannot talk to each other directly: through host memory,
 * synchronously, after all work of the source device and of `stream`. */
static bp_status copy_staged(void *dst, bp_device *dst_device, const void *src,
                             bp_device *src_device, size_t size, bp_stream *stream) {
    void *staging = malloc(size);
    if (!staging)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_memory_copy_async: cannot allocate %zu bytes "
                            "of host memory to stage a copy from %s to %s", size,
                            src_device->name, dst_device->name);
    bp_stream *src_stream = stream->device == src_device ? stream : src_device->default_stream;
    bp_stream *dst_stream = stream->device == dst_device ? stream : dst_device->default_stream;
    bp_status st = bp_stream_synchronize(stream);
    if (st == BP_OK)
        st = bp_device_synchronize(src_device);
    if (st == BP_OK)
        st = src_device->backend->desc->memory->copy_async(src_stream->handle, staging, src, size,
                                                           BP_COPY_DEVICE_TO_HOST);
    if (st == BP_OK)
        st = bp_stream_synchronize(src_stream);
    if (st == BP_OK) {
        bp_stream_host_funcs_wait(dst_stream);
        st = dst_device->backend->desc->memory->copy_async(dst_stream->handle, dst, staging, size,
                                                           BP_COPY_HOST_TO_DEVICE);
    }
    if (st == BP_OK)
        st = bp_stream_synchronize(dst_stream);
    free(staging);
    return st;
}

/* Whether the ranges [a, a + size) and [b, b + size) share a byte. */
static bool ranges_overlap(const void *a, const void *b, size_t size) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y ? y - x < size : x - y < size;
}

/* A copy within the device of `stream`, with memmove semantics: backends never see
 * overlapping ranges (plugin.h), so overlapping ones go through a temporary block of
 * the caching allocator, in stream order (src -> tmp, tmp -> dst, tmp freed on the
 * stream, which may reuse it at once). dst == src copies nothing. */
static bp_status copy_within_device(bp_stream *stream, void *dst, const void *src, size_t size) {
    const bp_memory_vtable *vt = stream->device->backend->desc->memory;
    if (!ranges_overlap(dst, src, size))
        return vt->copy_async(stream->handle, dst, src, size, BP_COPY_DEVICE_TO_DEVICE);
    if (dst == src)
        return BP_OK;
    void *tmp = NULL;
    bp_status st = bp_allocator_alloc(stream->device->allocator, size, stream, &tmp);
    if (st != BP_OK)
        return bp_error_prefix(st, "bp_memory_copy_async: staging a copy whose ranges overlap");
    st = vt->copy_async(stream->handle, tmp, src, size, BP_COPY_DEVICE_TO_DEVICE);
    if (st == BP_OK)
        st = vt->copy_async(stream->handle, dst, tmp, size, BP_COPY_DEVICE_TO_DEVICE);
    bp_status freed = bp_allocator_free(stream->device->allocator, tmp);
    return st != BP_OK ? st : freed; /* the copy's error first: a free cannot hide it */
}

bp_status bp_memory_copy_async(void *dst, bp_device *dst_device, const void *src,
                               bp_device *src_device, size_t size, bp_stream *stream) {
    static const char what[] = "bp_memory_copy_async";
    if (!dst_device && !src_device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: both sides are host memory; at least one "
                            "must be a device (use memcpy for host copies)", what);
    if (size > 0 && (!dst || !src))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %s pointer is NULL for a copy of %zu bytes",
                            what, !dst ? "destination" : "source", size);
    bp_device *primary = dst_device ? dst_device : src_device;
    bp_device *secondary = dst_device ? src_device : NULL;
    bp_status st = open_device(primary, what);
    if (st == BP_OK && secondary)
        st = open_device(secondary, what);
    if (st == BP_OK)
        st = resolve_stream(primary, secondary, &stream, what);
    if (st == BP_OK)
        st = bp_stream_check_not_captured(stream, BP_CAPTURE_REFUSE_COPY, what);
    if (st != BP_OK || size == 0)
        return st;
    bp_stream_host_funcs_wait(stream);

    const bp_memory_vtable *vt = stream->device->backend->desc->memory;
    if (!src_device)
        st = vt->copy_async(stream->handle, dst, src, size, BP_COPY_HOST_TO_DEVICE);
    else if (!dst_device)
        st = vt->copy_async(stream->handle, dst, src, size, BP_COPY_DEVICE_TO_HOST);
    else if (dst_device == src_device)
        st = copy_within_device(stream, dst, src, size);
    else if (dst_device->backend == src_device->backend && vt->copy_peer_async &&
             (dst_device->props.capabilities & BP_CAP_PEER_COPY))
        st = vt->copy_peer_async(stream->handle, dst, dst_device->handle, src, src_device->handle,
                                 size);
    else
        return copy_staged(dst, dst_device, src, src_device, size, stream);
    return st == BP_OK ? st : bp_error_prefix(st, stream->device->name);
}

bp_status bp_memory_set_async(bp_device *device, void *ptr, int value, size_t size,
                              bp_stream *stream) {
    static const char what[] = "bp_memory_set_async";
    bp_status st = open_device(device, what);
    if (st == BP_OK)
        st = resolve_stream(device, NULL, &stream, what);
    if (st == BP_OK)
        st = bp_stream_check_not_captured(stream, BP_CAPTURE_REFUSE_COPY, what);
    if (st != BP_OK || size == 0)
        return st;
    if (!ptr)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: ptr is NULL for %zu bytes", what, size);
    bp_stream_host_funcs_wait(stream);
    st = device->backend->desc->memory->memset_async(stream->handle, ptr, value, size);
    return st == BP_OK ? st : bp_error_prefix(st, device->name);
}
