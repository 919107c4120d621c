/* gpu: raw device memory (under the host's caching allocator), pinned host memory,
 * copies and memsets. Device pointers are the driver's addresses; with unified
 * addressing one memcpy_async serves every direction. */
#include "gpu_internal.h"

#define DPTR(p) ((uint64_t)(uintptr_t)(p))

static bp_status mem_alloc(void *device, size_t size, void **out_ptr) {
    gpu_device *dev = device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    uint64_t p = 0;
    gpu_result r = dev->drv->mem_alloc(&p, size ? size : 1);
    if (r != GPU_SUCCESS)
        return gpu_fail(dev, r, "%s of %zu bytes", dev->drv->name.mem_alloc, size);
    *out_ptr = (void *)(uintptr_t)p;
    return BP_OK;
}

static void mem_free(void *device, void *ptr) {
    gpu_device *dev = device;
    if (gpu_enter(dev) == BP_OK)
        dev->drv->mem_free(DPTR(ptr));
}

static bp_status mem_host_alloc(void *device, size_t size, void **out_ptr) {
    gpu_device *dev = device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_result r = dev->drv->mem_host_alloc(out_ptr, size ? size : 1);
    return r == GPU_SUCCESS ? BP_OK : gpu_fail(dev, r, "%s", dev->drv->name.mem_host_alloc);
}

static void mem_host_free(void *device, void *ptr) {
    gpu_device *dev = device;
    if (gpu_enter(dev) == BP_OK)
        dev->drv->mem_host_free(ptr);
}

/* The end of an enqueue of the driver call `what` on s: the stream's bookkeeping when the
 * driver took the work, else the error. */
static bp_status enqueue_result(gpu_stream *s, gpu_result r, const char *what) {
    return r == GPU_SUCCESS ? gpu_enqueued(s) : gpu_fail(s->device, r, "%s", what);
}

static bp_status mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                bp_copy_kind kind) {
    gpu_stream *s = stream;
    (void)kind; /* unified addressing tells the driver the direction */
    if (size == 0)
        return BP_OK;
    const gpu_device *dev = s->device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_result r = dev->drv->memcpy_async(DPTR(dst), DPTR(src), size, s->handle);
    return enqueue_result(s, r, dev->drv->name.memcpy_async);
}

/* Peer access lets kernels and copies of `from` reach `to`'s memory directly; without
 * it the driver still copies (staged through the host). Enabled once per pair. */
static void enable_peer(gpu_device *from, const gpu_device *to) {
    uint64_t bit = 1ull << (to->index & 63);
    if (from == to || (__atomic_load_n(&from->peer_enabled, __ATOMIC_ACQUIRE) & bit))
        return;
    const gpu_driver *drv = from->drv;
    int can = 0;
    if (drv->device_can_access_peer(&can, from->info.handle, to->info.handle) == GPU_SUCCESS &&
        can) {
        gpu_result r = drv->ctx_enable_peer_access(to->ctx);
        if (r != GPU_SUCCESS)
            gpu_host->log(BP_LOG_INFO, drv->device_type,
                          "%s:%d: peer access to %s:%d not enabled (%d); copies are staged",
                          drv->device_type, from->index, drv->device_type, to->index, (int)r);
    }
    __atomic_fetch_or(&from->peer_enabled, bit, __ATOMIC_RELEASE);
}

static bp_status mem_copy_peer_async(void *stream, void *dst, void *dst_device, const void *src,
                                     void *src_device, size_t size) {
    gpu_stream *s = stream;
    gpu_device *d = dst_device, *sd = src_device;
    if (size == 0)
        return BP_OK;
    gpu_device *dev = s->device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    enable_peer(dev, dev == d ? sd : d);
    gpu_result r = dev->drv->memcpy_peer_async(DPTR(dst), d->info.handle, d->ctx, DPTR(src),
                                               sd->info.handle, sd->ctx, size, s->handle);
    return enqueue_result(s, r, dev->drv->name.memcpy_peer_async);
}

static bp_status mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    gpu_stream *s = stream;
    if (size == 0)
        return BP_OK;
    const gpu_device *dev = s->device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_result r = dev->drv->memset_d8_async(DPTR(ptr), (unsigned char)value, size, s->handle);
    return enqueue_result(s, r, dev->drv->name.memset_d8_async);
}

const bp_memory_vtable gpu_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = mem_alloc,
    .free = mem_free,
    .host_alloc = mem_host_alloc,
    .host_free = mem_host_free,
    .copy_async = mem_copy_async,
    .copy_peer_async = mem_copy_peer_async,
    .memset_async = mem_memset_async,
};
