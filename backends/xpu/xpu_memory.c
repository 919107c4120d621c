/* xpu: memory.
 *
 * Device memory is device USM (zeMemAllocDevice, 256-byte aligned): its pointers are
 * real device addresses, which the host's caching allocator offsets into and kernels
 * take as they are. The live allocations of each device are in gpukit's allocation map,
 * so that a pointer translates to (allocation base, offset) for the shared kernels'
 * checks, and so that mem_info counts what is in use. Pinned host memory is host USM
 * (zeMemAllocHost).
 *
 * Copies and fills are commands of the stream (xpu_stream.c's chain). Host memory that
 * is not USM (malloc'd, "pageable") is not something the device may be given by the
 * specification, so such copies go through host USM staging: to the device, the bytes
 * are copied into staging at once (the caller may reuse its memory when we return) and
 * the staging is freed when the command is done; from the device, the copy lands in
 * staging, and the call waits for it and copies it out (the ABI allows a copy to
 * pageable memory to block). Peer copies are plain copies between two devices of one
 * driver's context that can reach each other (zeDeviceCanAccessPeer, checked at init). */
#include "xpu_internal.h"

#include <stdlib.h>
#include <string.h>

#define XPU_ALIGN 256

static void free_allocation(void *handle, void *ctx) {
    xpu_device *dev = ctx;
    dev->backend->api.zeMemFree(dev->driver->context, handle);
}

void xpu_memory_release_all(xpu_device *dev) {
    gpukit_memmap_clear(&dev->mem, free_allocation, dev);
}

bp_status xpu_translate(xpu_device *dev, const void *ptr, size_t size, void **out_base,
                        size_t *out_offset, const char *what) {
    gpukit_range range;
    uint64_t offset = 0;
    bp_status st = gpukit_memmap_translate(&dev->mem, ptr, size, dev->backend->host, XPU_NAME,
                                           dev->index, what, &range, &offset);
    if (st != BP_OK)
        return st;
    *out_base = (void *)(uintptr_t)range.addr;
    *out_offset = (size_t)offset;
    return BP_OK;
}

static bp_status out_of_memory(xpu_device *dev, size_t size, ze_result_t r) {
    return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                         "xpu:%d: out of device memory: zeMemAllocDevice of %zu "
                                         "bytes failed with %s",
                                         dev->index, size, xpu_result_name(r));
}

static bp_status mem_alloc(void *device, size_t size, void **out_ptr) {
    xpu_device *dev = device;
    const xpu_api *api = &dev->backend->api;
    const bp_host_services *host = dev->backend->host;
    bp_status st = bp_plugin_check_out_ptr(host, XPU_NAME, dev->index, out_ptr);
    if (st != BP_OK)
        return st;
    *out_ptr = NULL;
    size_t bytes = size ? size : 1;
    if ((uint64_t)bytes > dev->info.max_alloc)
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "xpu:%d: out of device memory: requested %zu bytes, more than "
                               "the device's largest allocation (%llu bytes)",
                               dev->index, size, (unsigned long long)dev->info.max_alloc);
    ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
                                       .ordinal = 0};
    void *ptr = NULL;
    ze_result_t r = api->zeMemAllocDevice(dev->driver->context, &desc, bytes, XPU_ALIGN,
                                          dev->info.handle, &ptr);
    if (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY || r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY ||
        r == ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
        return out_of_memory(dev, size, r);
    if (r != ZE_RESULT_SUCCESS)
        return xpu_fail(dev, r, "zeMemAllocDevice");
    st = gpukit_memmap_insert(&dev->mem, (uint64_t)(uintptr_t)ptr, size, ptr, host, XPU_NAME,
                              dev->index);
    if (st != BP_OK) {
        api->zeMemFree(dev->driver->context, ptr);
        return st;
    }
    *out_ptr = ptr;
    return BP_OK;
}

/* The host frees only memory no pending work uses. */
static void mem_free(void *device, void *ptr) {
    xpu_device *dev = device;
    void *handle = NULL;
    if (!gpukit_memmap_take(&dev->mem, ptr, dev->backend->host, XPU_NAME, dev->index, &handle))
        return;
    ze_result_t r = dev->backend->api.zeMemFree(dev->driver->context, ptr);
    if (r != ZE_RESULT_SUCCESS)
        dev->backend->host->log(BP_LOG_ERROR, XPU_NAME, "xpu:%d: zeMemFree(%p) failed: %s",
                                dev->index, ptr, xpu_result_name(r));
}

static bp_status host_usm_alloc(xpu_device *dev, size_t size, void **out_ptr, const char *what) {
    ze_host_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ze_result_t r = dev->backend->api.zeMemAllocHost(dev->driver->context, &desc,
                                                     size ? size : 1, XPU_ALIGN, out_ptr);
    if (r == ZE_RESULT_SUCCESS)
        return BP_OK;
    *out_ptr = NULL;
    return xpu_fail(dev, r, what);
}

static bp_status mem_host_alloc(void *device, size_t size, void **out_ptr) {
    xpu_device *dev = device;
    if (!out_ptr)
        return dev->backend->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                             "xpu:%d: host_alloc: out_ptr is NULL", dev->index);
    return host_usm_alloc(dev, size, out_ptr, "pinned host memory (zeMemAllocHost)");
}

static void mem_host_free(void *device, void *ptr) {
    xpu_device *dev = device;
    if (ptr)
        dev->backend->api.zeMemFree(dev->driver->context, ptr);
}

/* ---- copies ---- */

/* Whether `ptr` is USM of dev's context (host, device or shared): memory a command may
 * be given as it is. */
static bool is_usm(xpu_device *dev, const void *ptr) {
    ze_memory_allocation_properties_t props = {
        .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    return dev->backend->api.zeMemGetAllocProperties(dev->driver->context, ptr, &props,
                                                     &owner) == ZE_RESULT_SUCCESS &&
           props.type != ZE_MEMORY_TYPE_UNKNOWN;
}

bp_status xpu_append_copy(xpu_stream *s, void *dst, const void *src, size_t size, void *staging,
                          const char *what) {
    xpu_enqueue e;
    bp_status st = xpu_enqueue_begin(s, NULL, &e);
    if (st != BP_OK) {
        if (staging)
            s->device->backend->api.zeMemFree(s->device->driver->context, staging);
        return st;
    }
    ze_result_t r = s->device->backend->api.zeCommandListAppendMemoryCopy(
        s->list, dst, src, size, e.done->event, e.nwait, e.wait);
    return xpu_enqueue_end(&e, r, what, NULL, staging);
}

static bp_status copy_h2d(void *stream, void *dst, const void *src, size_t size) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    void *base;
    size_t off;
    bp_status st = xpu_translate(dev, dst, size, &base, &off, "copy to the device");
    if (st != BP_OK)
        return st;
    if (is_usm(dev, src))
        return xpu_append_copy(s, dst, src, size, NULL,
                           "copy to the device (zeCommandListAppendMemoryCopy)");
    void *staging;
    st = host_usm_alloc(dev, size, &staging, "staging a copy to the device (zeMemAllocHost)");
    if (st != BP_OK)
        return st;
    memcpy(staging, src, size);
    return xpu_append_copy(s, dst, staging, size, staging,
                       "copy to the device (zeCommandListAppendMemoryCopy)");
}

static bp_status copy_d2h(void *stream, void *dst, const void *src, size_t size) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    const xpu_api *api = &dev->backend->api;
    void *base;
    size_t off;
    bp_status st = xpu_translate(dev, src, size, &base, &off, "copy from the device");
    if (st != BP_OK)
        return st;
    if (is_usm(dev, dst))
        return xpu_append_copy(s, dst, src, size, NULL,
                           "copy from the device (zeCommandListAppendMemoryCopy)");
    void *staging;
    st = host_usm_alloc(dev, size, &staging, "staging a copy from the device (zeMemAllocHost)");
    if (st != BP_OK)
        return st;
    xpu_enqueue e;
    st = xpu_enqueue_begin(s, NULL, &e);
    if (st != BP_OK) {
        api->zeMemFree(dev->driver->context, staging);
        return st;
    }
    xpu_zevent *done = e.done;
    ze_result_t r = api->zeCommandListAppendMemoryCopy(s->list, staging, src, size, done->event,
                                                       e.nwait, e.wait);
    if (r == ZE_RESULT_SUCCESS)
        xpu_zevent_retain(dev->driver, done); /* ours, to wait on below */
    st = xpu_enqueue_end(&e, r, "copy from the device (zeCommandListAppendMemoryCopy)", NULL,
                         NULL);
    if (st != BP_OK) {
        api->zeMemFree(dev->driver->context, staging);
        return st;
    }
    r = api->zeEventHostSynchronize(done->event, UINT64_MAX);
    xpu_zevent_release(dev->driver, done);
    if (r == ZE_RESULT_SUCCESS)
        memcpy(dst, staging, size);
    api->zeMemFree(dev->driver->context, staging);
    return r == ZE_RESULT_SUCCESS
               ? BP_OK
               : xpu_fail(dev, r, "copy from the device (zeEventHostSynchronize)");
}

static bp_status copy_d2d(void *stream, void *dst, const void *src, size_t size) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    void *base;
    size_t off;
    bp_status st = xpu_translate(dev, dst, size, &base, &off, "device copy destination");
    if (st == BP_OK)
        st = xpu_translate(dev, src, size, &base, &off, "device copy source");
    if (st != BP_OK)
        return st;
    if (dst == src)
        return BP_OK;
    return xpu_append_copy(s, dst, src, size, NULL, "device copy (zeCommandListAppendMemoryCopy)");
}

static const bp_plugin_copy_fns copies = {copy_h2d, copy_d2h, copy_d2d};

static bp_status mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                bp_copy_kind kind) {
    xpu_device *dev = ((xpu_stream *)stream)->device;
    return bp_plugin_copy_by_kind(dev->backend->host, XPU_NAME, dev->index, &copies, stream, dst, src,
                                  size, kind);
}

static bp_status mem_copy_peer_async(void *stream, void *dst, void *dst_device, const void *src,
                                     void *src_device, size_t size) {
    xpu_stream *s = stream;
    xpu_device *ddev = dst_device, *sdev = src_device;
    if (size == 0)
        return BP_OK;
    if (ddev->driver != sdev->driver || !ddev->info.peer_all || !sdev->info.peer_all)
        return s->device->backend->host->set_error(
            BP_ERR_UNSUPPORTED,
            "xpu:%d: peer copy from xpu:%d to xpu:%d: the devices cannot reach each other "
            "directly",
            s->device->index, sdev->index, ddev->index);
    void *base;
    size_t off;
    bp_status st = xpu_translate(ddev, dst, size, &base, &off, "peer copy destination");
    if (st == BP_OK)
        st = xpu_translate(sdev, src, size, &base, &off, "peer copy source");
    if (st != BP_OK)
        return st;
    return xpu_append_copy(s, dst, src, size, NULL, "peer copy (zeCommandListAppendMemoryCopy)");
}

static bp_status mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    xpu_stream *s = stream;
    xpu_device *dev = s->device;
    if (size == 0)
        return BP_OK;
    void *base;
    size_t off;
    bp_status st = xpu_translate(dev, ptr, size, &base, &off, "memset");
    if (st != BP_OK)
        return st;
    uint8_t byte = (uint8_t)value;
    return xpu_append_fill(s, ptr, &byte, 1, size, "memset (zeCommandListAppendMemoryFill)");
}

bp_status xpu_append_fill(xpu_stream *s, void *ptr, const void *pattern, size_t pattern_size,
                          size_t size, const char *what) {
    xpu_enqueue e;
    bp_status st = xpu_enqueue_begin(s, NULL, &e);
    if (st != BP_OK)
        return st;
    ze_result_t r = s->device->backend->api.zeCommandListAppendMemoryFill(
        s->list, ptr, pattern, pattern_size, size, e.done->event, e.nwait, e.wait);
    return xpu_enqueue_end(&e, r, what, NULL, NULL);
}

const bp_memory_vtable xpu_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = mem_alloc,
    .free = mem_free,
    .host_alloc = mem_host_alloc,
    .host_free = mem_host_free,
    .copy_async = mem_copy_async,
    .copy_peer_async = mem_copy_peer_async,
    .memset_async = mem_memset_async,
};
