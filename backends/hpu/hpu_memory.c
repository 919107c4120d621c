/* hpu: device memory (the arena) and copies/memsets as modelled DMA work.
 *
 * Device pointers are host addresses inside the device's arena, so copies and memsets
 * run on the stream's worker with memmove/memset. Each is also an op of the DMA
 * engine in the model: host copies at the host link rate, all of them taking HBM time
 * for their bytes. On a capturing stream they become graph nodes. */
#include "hpu_graph.h"
#include "hpu_internal.h"

#include <string.h>

static bp_status mem_alloc(void *device, size_t size, void **out_ptr) {
    hpu_device *dev = device;
    const bp_host_services *host = dev->backend->host;
    bp_status checked = bp_plugin_check_out_ptr(host, HPU_NAME, dev->index, out_ptr);
    if (checked != BP_OK)
        return checked;
    void *p = hpu_arena_alloc(dev->arena, size);
    if (!p) {
        hpu_arena_stats st;
        hpu_arena_get_stats(dev->arena, &st);
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "hpu:%d: out of device memory: requested %zu bytes, %llu free "
                               "of %llu (largest free block %llu bytes; BP_HPU_MEMORY_MB sets "
                               "the size)",
                               dev->index, size, (unsigned long long)(st.size - st.in_use),
                               (unsigned long long)st.size, (unsigned long long)st.largest_free);
    }
    *out_ptr = p;
    return BP_OK;
}

static void mem_free(void *device, void *ptr) {
    hpu_device *dev = device;
    if (!ptr)
        return;
    if (!hpu_arena_free(dev->arena, ptr))
        dev->backend->host->log(BP_LOG_ERROR, HPU_NAME,
                                "hpu:%d: free of %p, which is not a live allocation of this "
                                "device: ignored", dev->index, ptr);
}

/* One DMA job on the stream's worker: a copy (src set) or a memset. */
typedef struct dma_task {
    void *dst;
    const void *src; /* NULL for a memset */
    size_t size;
    int value;
} dma_task;

static void dma_task_fn(void *payload) {
    dma_task t;
    memcpy(&t, payload, sizeof t);
    if (t.src)
        memmove(t.dst, t.src, t.size); /* a device-to-device copy may overlap */
    else
        memset(t.dst, t.value, t.size);
}

/* Eager DMA work: modelled (no host launch cost) and queued, under the model lock so
 * the model and the queue stay in one order. */
static bp_status eager_dma(hpu_stream *s, const hpu_work *w, const char *what, const dma_task *t) {
    hpu_device *dev = s->device;
    double end = hpu_model_eager(&dev->model, &dev->backend->params, w, s->ready_us, false);
    bp_status st = hpu_submit(s, what, dma_task_fn, t, sizeof *t, NULL);
    if (st == BP_OK)
        s->ready_us = end;
    return st;
}

static bp_status mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                bp_copy_kind kind) {
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    const bp_host_services *host = dev->backend->host;
    bp_status st = bp_plugin_check_copy_kind(host, HPU_NAME, dev->index, kind);
    if (st != BP_OK || size == 0)
        return st;
    st = bp_plugin_check_copy_pointers(host, HPU_NAME, dev->index, dst, src, size);
    if (st != BP_OK)
        return st;
    hpu_work w = hpu_work_copy(&dev->backend->params, kind, size);
    dma_task t = {.dst = dst, .src = src, .size = size};
    pthread_mutex_lock(&dev->lock);
    st = s->graph ? hpu_graph_add_copy(s->graph, dst, src, size, &w)
                  : eager_dma(s, &w, "a copy", &t);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static bp_status mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    hpu_stream *s = stream;
    hpu_device *dev = s->device;
    if (size == 0)
        return BP_OK;
    if (!ptr)
        return dev->backend->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                             "hpu:%d: memset of %zu bytes: the pointer is NULL",
                                             dev->index, size);
    hpu_work w = hpu_work_memset(&dev->backend->params, size);
    dma_task t = {.dst = ptr, .size = size, .value = value};
    pthread_mutex_lock(&dev->lock);
    bp_status st = s->graph ? hpu_graph_add_memset(s->graph, ptr, value, size, &w)
                            : eager_dma(s, &w, "a memset", &t);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

const bp_memory_vtable hpu_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = mem_alloc,
    .free = mem_free,
    .host_alloc = NULL, /* no BP_CAP_PINNED_HOST: the host uses aligned malloc */
    .host_free = NULL,
    .copy_async = mem_copy_async,
    .copy_peer_async = NULL, /* no BP_CAP_PEER_COPY: the host stages through host memory */
    .memset_async = mem_memset_async,
};
