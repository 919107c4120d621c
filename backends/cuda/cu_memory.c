/* cuda: raw device memory (cuMemAlloc, under the host's caching allocator), pinned host
 * memory, copies and memsets. Device pointers are CUdeviceptr values; with unified
 * addressing one cuMemcpyAsync serves every direction. */
#include "cu_internal.h"

#include <stdio.h>

#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

static bp_status mem_alloc(void *device, size_t size, void **out_ptr) {
    cu_device *dev = device;
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    CUdeviceptr p = 0;
    CUresult r = dev->backend->api.cuMemAlloc(&p, size ? size : 1);
    if (r != CUDA_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "cuMemAlloc of %zu bytes", size);
        return cu_fail(dev, r, what);
    }
    *out_ptr = (void *)(uintptr_t)p;
    return BP_OK;
}

static void mem_free(void *device, void *ptr) {
    cu_device *dev = device;
    if (cu_enter(dev) == BP_OK)
        dev->backend->api.cuMemFree(DPTR(ptr));
}

static bp_status mem_host_alloc(void *device, size_t size, void **out_ptr) {
    cu_device *dev = device;
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    CUresult r = dev->backend->api.cuMemHostAlloc(out_ptr, size ? size : 1,
                                                  CU_MEMHOSTALLOC_PORTABLE);
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(dev, r, "cuMemHostAlloc");
}

static void mem_host_free(void *device, void *ptr) {
    cu_device *dev = device;
    if (cu_enter(dev) == BP_OK)
        dev->backend->api.cuMemFreeHost(ptr);
}

static bp_status mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                bp_copy_kind kind) {
    cu_stream *s = stream;
    (void)kind; /* unified addressing tells the driver the direction */
    if (size == 0)
        return BP_OK;
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    CUresult r = s->device->backend->api.cuMemcpyAsync(DPTR(dst), DPTR(src), size, s->handle);
    return r == CUDA_SUCCESS ? cu_stream_enqueued(s) : cu_fail(s->device, r, "cuMemcpyAsync");
}

/* Peer access lets kernels and copies of `from` reach `to`'s memory directly; without
 * it the driver still copies (staged through the host). Enabled once per pair. */
static void enable_peer(cu_device *from, cu_device *to) {
    uint64_t bit = 1ull << (to->index & 63);
    if (from == to || (__atomic_load_n(&from->peer_enabled, __ATOMIC_ACQUIRE) & bit))
        return;
    const cu_api *api = &from->backend->api;
    int can = 0;
    if (api->cuDeviceCanAccessPeer(&can, from->info.handle, to->info.handle) == CUDA_SUCCESS &&
        can) {
        CUresult r = api->cuCtxEnablePeerAccess(to->ctx, 0);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            from->backend->host->log(BP_LOG_INFO, CU_NAME,
                                     "cuda:%d: peer access to cuda:%d not enabled (%d); copies "
                                     "are staged",
                                     from->index, to->index, (int)r);
    }
    __atomic_fetch_or(&from->peer_enabled, bit, __ATOMIC_RELEASE);
}

static bp_status mem_copy_peer_async(void *stream, void *dst, void *dst_device, const void *src,
                                     void *src_device, size_t size) {
    cu_stream *s = stream;
    cu_device *d = dst_device, *sd = src_device;
    if (size == 0)
        return BP_OK;
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    enable_peer(s->device, s->device == d ? sd : d);
    CUresult r = s->device->backend->api.cuMemcpyPeerAsync(DPTR(dst), d->ctx, DPTR(src), sd->ctx,
                                                           size, s->handle);
    return r == CUDA_SUCCESS ? cu_stream_enqueued(s) : cu_fail(s->device, r, "cuMemcpyPeerAsync");
}

static bp_status mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    cu_stream *s = stream;
    if (size == 0)
        return BP_OK;
    bp_status st = cu_enter(s->device);
    if (st != BP_OK)
        return st;
    CUresult r = s->device->backend->api.cuMemsetD8Async(DPTR(ptr), (unsigned char)value, size,
                                                         s->handle);
    return r == CUDA_SUCCESS ? cu_stream_enqueued(s) : cu_fail(s->device, r, "cuMemsetD8Async");
}

const bp_memory_vtable cu_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = mem_alloc,
    .free = mem_free,
    .host_alloc = mem_host_alloc,
    .host_free = mem_host_free,
    .copy_async = mem_copy_async,
    .copy_peer_async = mem_copy_peer_async,
    .memset_async = mem_memset_async,
};
