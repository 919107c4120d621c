/* xpu: what the shared kernels (backends/clc, clc.h) run on a Level Zero device: device
 * pointers to (allocation base, offset), kernels from xpu_module.c, and kernel
 * launches, fills and copies appended to the stream's chain (xpu_stream.c).
 *
 * A buffer argument is the allocation's base pointer (USM), passed by value; the
 * element offset travels in the tensor's descriptor, as on OpenCL. A local-memory
 * argument is zeKernelSetArgumentValue with its size and a NULL value. */
#include "xpu_internal.h"

#include <stddef.h>
#include <stdio.h>

#define DEVICE_OF(c) ((xpu_device *)((char *)(c) - offsetof(xpu_device, clc)))

clc_device *xpu_stream_clc_device(void *stream) {
    return &((xpu_stream *)stream)->device->clc;
}

static bp_status translate(clc_device *c, const void *ptr, size_t size, void **handle,
                           size_t *offset, const char *what) {
    return xpu_translate(DEVICE_OF(c), ptr, size, handle, offset, what);
}

static bp_status get_kernel(clc_device *c, clc_program_id id, int variant, const char *name,
                            void **kernel) {
    xpu_kernel *k = NULL;
    bp_status st = xpu_get_kernel(DEVICE_OF(c), id, variant, name, &k);
    *kernel = k;
    return st;
}

/* The group counts of an NDRange: global[d] / local[d] per dimension, 1 beyond dims.
 * False when a global size is not a multiple of its local size or too large. */
static bool group_counts(unsigned dims, const size_t *global, const size_t *local,
                         uint32_t group[3], ze_group_count_t *count) {
    size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1};
    for (unsigned d = 0; d < dims; d++) {
        g[d] = global[d];
        l[d] = local[d];
    }
    for (int d = 0; d < 3; d++) {
        if (l[d] == 0 || l[d] > UINT32_MAX || g[d] % l[d] != 0 || g[d] / l[d] > UINT32_MAX)
            return false;
        group[d] = (uint32_t)l[d];
    }
    count->groupCountX = (uint32_t)(g[0] / l[0]);
    count->groupCountY = (uint32_t)(g[1] / l[1]);
    count->groupCountZ = (uint32_t)(g[2] / l[2]);
    return true;
}

/* Sets the group size and the arguments and appends, holding the stream's lock (from
 * xpu_enqueue_begin) and the kernel's lock from the group size to the append: the
 * kernel's state is captured by the append. */
static bp_status launch(void *stream, void *kernel, const char *what, int nargs,
                        const clc_karg *args, unsigned dims, const size_t *global,
                        const size_t *local) {
    xpu_stream *s = stream;
    xpu_kernel *k = kernel;
    xpu_device *dev = s->device;
    const xpu_api *api = &dev->backend->api;
    uint32_t group[3];
    ze_group_count_t count;
    if (dims < 1 || dims > 3 || !group_counts(dims, global, local, group, &count))
        return dev->backend->host->set_error(BP_ERR_INTERNAL,
                                             "xpu:%d: %s kernel: an NDRange of %u dims whose "
                                             "global size is not a multiple of its local size",
                                             dev->index, what, dims);
    xpu_enqueue e;
    bp_status st = xpu_enqueue_begin(s, NULL, &e);
    if (st != BP_OK)
        return st;
    const char *step = "zeKernelSetGroupSize";
    pthread_mutex_lock(&k->lock);
    ze_result_t r = api->zeKernelSetGroupSize(k->kernel, group[0], group[1], group[2]);
    for (int i = 0; i < nargs && r == ZE_RESULT_SUCCESS; i++) {
        step = "zeKernelSetArgumentValue";
        r = api->zeKernelSetArgumentValue(k->kernel, (uint32_t)i, args[i].size, args[i].value);
    }
    if (r == ZE_RESULT_SUCCESS) {
        step = "zeCommandListAppendLaunchKernel";
        r = api->zeCommandListAppendLaunchKernel(s->list, k->kernel, &count, e.done->event,
                                                 e.nwait, e.wait);
    }
    pthread_mutex_unlock(&k->lock);
    char msg[160];
    snprintf(msg, sizeof msg, "%s kernel: %s", what, step);
    return xpu_enqueue_end(&e, r, msg, NULL, NULL);
}

static bp_status fill(void *stream, void *handle, size_t offset, const void *pattern,
                      size_t pattern_size, size_t bytes) {
    return xpu_append_fill(stream, (char *)handle + offset, pattern, pattern_size, bytes,
                           "fill (zeCommandListAppendMemoryFill)");
}

static bp_status copy(void *stream, void *dst, size_t dst_offset, void *src, size_t src_offset,
                      size_t bytes) {
    return xpu_append_copy(stream, (char *)dst + dst_offset, (const char *)src + src_offset,
                           bytes, NULL, "copy (zeCommandListAppendMemoryCopy)");
}

const clc_device_ops xpu_clc_ops = {
    .translate = translate,
    .get_kernel = get_kernel,
    .launch = launch,
    .fill = fill,
    .copy = copy,
};
