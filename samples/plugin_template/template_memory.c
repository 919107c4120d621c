/* Memory: the pretend device's memory is host memory from aligned_alloc, counted
 * against TEMPLATE_MEMORY so that mem_info and out-of-memory behave like a device's.
 * Copies and memsets are stream work (template_stream.c), ordered behind everything
 * enqueued before them; the host keeps the buffers alive until they have run.
 *
 * A real backend calls its runtime's allocator and asynchronous copy here. The host's
 * caching allocator sits above alloc/free and computes addresses inside the blocks it
 * got (base + offset): every such address must work in copies and kernels. */
#include <stdlib.h>
#include <string.h>

#include "template.h"

/* alloc puts the size in a header of TEMPLATE_ALIGN bytes before the block, so that
 * free can count it back and the block stays aligned. */
static bp_status memory_alloc(void *device, size_t size, void **out_ptr) {
    template_device *dev = device;
    size_t rounded = (size + TEMPLATE_ALIGN - 1) / TEMPLATE_ALIGN * TEMPLATE_ALIGN;
    uint64_t used = atomic_fetch_add(&dev->used, rounded) + rounded;
    unsigned char *base = NULL;
    if (rounded >= size && used <= TEMPLATE_MEMORY)
        base = aligned_alloc(TEMPLATE_ALIGN, TEMPLATE_ALIGN + rounded);
    if (!base) {
        atomic_fetch_sub(&dev->used, rounded);
        return template_host->set_error(BP_ERR_OUT_OF_MEMORY,
                                        "template:%d: cannot allocate %zu bytes (%llu of %llu "
                                        "in use)",
                                        dev->index, size,
                                        (unsigned long long)atomic_load(&dev->used),
                                        (unsigned long long)TEMPLATE_MEMORY);
    }
    memcpy(base, &rounded, sizeof rounded);
    *out_ptr = base + TEMPLATE_ALIGN;
    return BP_OK;
}

static void memory_free(void *device, void *ptr) {
    template_device *dev = device;
    unsigned char *base = (unsigned char *)ptr - TEMPLATE_ALIGN;
    size_t rounded;
    memcpy(&rounded, base, sizeof rounded);
    atomic_fetch_sub(&dev->used, rounded);
    free(base);
}

typedef struct copy_args {
    void *dst;
    const void *src;
    size_t size;
} copy_args;

static void copy_run(void *args) {
    copy_args *c = args;
    memcpy(c->dst, c->src, c->size);
}

/* Every direction is a memcpy here: device memory is host memory. */
static bp_status memory_copy_async(void *stream, void *dst, const void *src, size_t size,
                                   bp_copy_kind kind) {
    copy_args c = {dst, src, size};
    return template_submit(stream, copy_run, &c, sizeof c);
}

/* Between the two devices (BP_CAP_PEER_COPY), on a stream of either. */
static bp_status memory_copy_peer_async(void *stream, void *dst, void *dst_device,
                                        const void *src, void *src_device, size_t size) {
    copy_args c = {dst, src, size};
    return template_submit(stream, copy_run, &c, sizeof c);
}

typedef struct memset_args {
    void *ptr;
    int value;
    size_t size;
} memset_args;

static void memset_run(void *args) {
    memset_args *m = args;
    memset(m->ptr, m->value, m->size);
}

static bp_status memory_memset_async(void *stream, void *ptr, int value, size_t size) {
    memset_args m = {ptr, value, size};
    return template_submit(stream, memset_run, &m, sizeof m);
}

const bp_memory_vtable template_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = memory_alloc,
    .free = memory_free,
    .host_alloc = NULL, /* the host falls back to aligned malloc */
    .host_free = NULL,
    .copy_async = memory_copy_async,
    .copy_peer_async = memory_copy_peer_async,
    .memset_async = memory_memset_async,
};
