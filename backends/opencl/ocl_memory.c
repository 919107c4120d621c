/* opencl: device memory.
 *
 * A cl_mem is a handle, not an address, but the host's caching allocator does
 * arithmetic on device pointers (base + offset inside a segment). So every buffer gets
 * a range of a fake device address space: addresses start at OCL_ADDR_BASE and only
 * grow (each range is 256-byte aligned and followed by a gap of at least 256 bytes),
 * so they are never reused while the process lives and the live ranges stay sorted by
 * appending. A device pointer translates to (cl_mem, byte offset) by a binary search
 * over the live ranges (gpukit's map). The pointers are never dereferenced by the host. */
#include "ocl_internal.h"

#include <stdlib.h>
#include <string.h>

#define OCL_ADDR_BASE UINT64_C(0x100000000)
#define OCL_ADDR_ALIGN UINT64_C(256)

void ocl_memmap_init(ocl_memmap *m) {
    gpukit_memmap_init(&m->map);
    pthread_mutex_init(&m->addr_lock, NULL);
    m->next_addr = OCL_ADDR_BASE;
}

static void release_buffer(void *handle, void *ctx) {
    ((ocl_device *)ctx)->backend->api.clReleaseMemObject((cl_mem)handle);
}

void ocl_memmap_clear(ocl_device *dev) {
    gpukit_memmap_clear(&dev->mem.map, release_buffer, dev);
}

bp_status ocl_translate(ocl_device *dev, const void *ptr, size_t size, cl_mem *out_mem,
                        size_t *out_offset, const char *what) {
    gpukit_range range;
    uint64_t off = 0;
    bp_status st = gpukit_memmap_translate(&dev->mem.map, ptr, size, dev->backend->host,
                                           OCL_NAME, dev->index, what, &range, &off);
    if (st != BP_OK)
        return st;
    *out_mem = (cl_mem)range.handle;
    *out_offset = (size_t)off;
    return BP_OK;
}

static bp_status mem_alloc(void *device, size_t size, void **out_ptr) {
    ocl_device *dev = device;
    const bp_host_services *host = dev->backend->host;
    bp_status st = bp_plugin_check_out_ptr(host, OCL_NAME, dev->index, out_ptr);
    if (st != BP_OK)
        return st;
    *out_ptr = NULL;
    ocl_memmap *m = &dev->mem;
    size_t bytes = size ? size : 1;
    uint64_t used = gpukit_memmap_used(&m->map);
    /* Drivers may allocate lazily, at first use: refuse what cannot fit up front. */
    if ((uint64_t)bytes > dev->info.max_alloc || (uint64_t)bytes > dev->info.global_mem - used ||
        used > dev->info.global_mem)
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "opencl:%d: out of device memory: requested %zu bytes, %llu of "
                               "%llu in use (at most %llu bytes per buffer on this device)",
                               dev->index, size, (unsigned long long)used,
                               (unsigned long long)dev->info.global_mem,
                               (unsigned long long)dev->info.max_alloc);
    cl_int err = CL_SUCCESS;
    cl_mem mem = dev->backend->api.clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL,
                                                  &err);
    if (!mem) {
        if (err == CL_INVALID_BUFFER_SIZE || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
            err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY)
            return host->set_error(BP_ERR_OUT_OF_MEMORY,
                                   "opencl:%d: out of device memory: clCreateBuffer of %zu "
                                   "bytes failed with %s (%d)",
                                   dev->index, size, ocl_error_name(err), (int)err);
        return ocl_fail(dev, err, "clCreateBuffer");
    }
    /* A range of the address space for the buffer; next_addr moves on only for a buffer
     * that made it into the map. */
    uint64_t span = ((uint64_t)bytes + OCL_ADDR_ALIGN - 1) / OCL_ADDR_ALIGN * OCL_ADDR_ALIGN;
    pthread_mutex_lock(&m->addr_lock);
    uint64_t addr = m->next_addr;
    st = gpukit_memmap_insert(&m->map, addr, size, mem, host, OCL_NAME, dev->index);
    if (st == BP_OK)
        m->next_addr = addr + span + OCL_ADDR_ALIGN;
    pthread_mutex_unlock(&m->addr_lock);
    if (st != BP_OK) {
        dev->backend->api.clReleaseMemObject(mem);
        return st;
    }
    *out_ptr = (void *)(uintptr_t)addr;
    return BP_OK;
}

/* The host frees only memory no pending work uses; OpenCL also keeps a released
 * buffer alive until the commands using it are done. */
static void mem_free(void *device, void *ptr) {
    ocl_device *dev = device;
    void *mem = NULL;
    if (gpukit_memmap_take(&dev->mem.map, ptr, dev->backend->host, OCL_NAME, dev->index, &mem))
        dev->backend->api.clReleaseMemObject((cl_mem)mem);
}

/* ---- copies ---- */

static void CL_CALLBACK free_staging(cl_event ev, cl_int status, void *user) {
    (void)ev;
    (void)status;
    free(user);
}

/* Host to device: the caller may reuse its memory as soon as we return, so the bytes
 * go through a staging copy that the write's completion frees. */
static bp_status copy_h2d(void *stream, void *dst, const void *src, size_t size) {
    ocl_stream *s = stream;
    ocl_device *dev = s->device;
    const ocl_api *api = &dev->backend->api;
    cl_mem mem;
    size_t off;
    bp_status st = ocl_translate(dev, dst, size, &mem, &off, "copy to the device");
    if (st != BP_OK)
        return st;
    void *staging = malloc(size);
    if (!staging)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "opencl:%d: out of host memory staging a copy of "
                                             "%zu bytes",
                                             dev->index, size);
    memcpy(staging, src, size);
    cl_event ev = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = api->clEnqueueWriteBuffer(s->queue, mem, CL_FALSE, off, size, staging, 0, NULL,
                                           &ev);
    if (err == CL_SUCCESS && api->clSetEventCallback(ev, CL_COMPLETE, free_staging, staging) !=
                                 CL_SUCCESS) {
        api->clWaitForEvents(1, &ev); /* no callback: wait here instead */
        free(staging);
    }
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    if (err != CL_SUCCESS) {
        free(staging);
        return ocl_fail(dev, err, "clEnqueueWriteBuffer");
    }
    return BP_OK;
}

/* Device to host: the host synchronizes the stream before it reads. */
static bp_status copy_d2h(void *stream, void *dst, const void *src, size_t size) {
    ocl_stream *s = stream;
    ocl_device *dev = s->device;
    cl_mem mem;
    size_t off;
    bp_status st = ocl_translate(dev, src, size, &mem, &off, "copy from the device");
    if (st != BP_OK)
        return st;
    cl_event ev = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = dev->backend->api.clEnqueueReadBuffer(s->queue, mem, CL_FALSE, off, size, dst,
                                                       0, NULL, &ev);
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(dev, err, "clEnqueueReadBuffer");
}

/* Device to device. clEnqueueCopyBuffer refuses overlapping ranges of one buffer;
 * those go through a temporary buffer (released at once: OpenCL keeps it until the
 * two copies are done). */
static bp_status copy_d2d(void *stream, void *dst, const void *src, size_t size) {
    ocl_stream *s = stream;
    ocl_device *dev = s->device;
    const ocl_api *api = &dev->backend->api;
    cl_mem dmem, smem;
    size_t doff, soff;
    bp_status st = ocl_translate(dev, dst, size, &dmem, &doff, "device copy destination");
    if (st == BP_OK)
        st = ocl_translate(dev, src, size, &smem, &soff, "device copy source");
    if (st != BP_OK)
        return st;
    if (dmem == smem && doff == soff)
        return BP_OK;
    bool overlap = dmem == smem && doff < soff + size && soff < doff + size;
    cl_mem tmp = NULL;
    cl_int err = CL_SUCCESS;
    if (overlap) {
        tmp = api->clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size, NULL, &err);
        if (!tmp)
            return ocl_fail(dev, err, "clCreateBuffer (an overlapping copy's temporary)");
    }
    cl_event ev = NULL;
    pthread_mutex_lock(&s->lock);
    if (tmp) {
        cl_event first = NULL;
        err = api->clEnqueueCopyBuffer(s->queue, smem, tmp, soff, 0, size, 0, NULL, &first);
        if (err == CL_SUCCESS) {
            ocl_stream_push_locked(s, first);
            err = api->clEnqueueCopyBuffer(s->queue, tmp, dmem, 0, doff, size, 0, NULL, &ev);
        }
    } else {
        err = api->clEnqueueCopyBuffer(s->queue, smem, dmem, soff, doff, size, 0, NULL, &ev);
    }
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    if (tmp)
        api->clReleaseMemObject(tmp);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(dev, err, "clEnqueueCopyBuffer");
}

static const bp_plugin_copy_fns copies = {copy_h2d, copy_d2h, copy_d2d};

static bp_status mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                bp_copy_kind kind) {
    ocl_device *dev = ((ocl_stream *)stream)->device;
    return bp_plugin_copy_by_kind(dev->backend->host, OCL_NAME, dev->index, &copies, stream, dst, src,
                                  size, kind);
}

static bp_status mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    ocl_stream *s = stream;
    ocl_device *dev = s->device;
    if (size == 0)
        return BP_OK;
    cl_mem mem;
    size_t off;
    bp_status st = ocl_translate(dev, ptr, size, &mem, &off, "memset");
    if (st != BP_OK)
        return st;
    cl_uchar byte = (cl_uchar)value;
    cl_event ev = NULL;
    pthread_mutex_lock(&s->lock);
    cl_int err = dev->backend->api.clEnqueueFillBuffer(s->queue, mem, &byte, 1, off, size, 0,
                                                       NULL, &ev);
    if (err == CL_SUCCESS)
        ocl_stream_push_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(dev, err, "clEnqueueFillBuffer");
}

const bp_memory_vtable ocl_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = mem_alloc,
    .free = mem_free,
    .host_alloc = NULL, /* no BP_CAP_PINNED_HOST: the host uses aligned malloc */
    .host_free = NULL,
    .copy_async = mem_copy_async,
    .copy_peer_async = NULL, /* no BP_CAP_PEER_COPY: the host stages through host memory */
    .memset_async = mem_memset_async,
};
