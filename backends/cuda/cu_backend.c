/* cuda: a CUDA backend plugin on the CUDA Driver API (docs/backends/cuda.md).
 *
 * This file: the descriptor, init (loading the driver, finding the devices), the
 * device table and the current-device guard (the device's primary context made
 * current with cuCtxSetCurrent). */
#include "cu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const bp_host_services *cu_host;

bp_status cu_fail(cu_device *dev, CUresult r, const char *what) {
    char text[192];
    cu_result_text(&dev->backend->api, r, text, sizeof text);
    bp_status st = r == CUDA_ERROR_OUT_OF_MEMORY ? BP_ERR_OUT_OF_MEMORY : BP_ERR_BACKEND;
    return dev->backend->host->set_error(st, "cuda:%d: %s: %s", dev->index, what, text);
}

bp_status cu_enter(cu_device *dev) {
    const cu_api *api = &dev->backend->api;
    CUcontext cur = NULL;
    if (api->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == dev->ctx)
        return BP_OK;
    CUresult r = api->cuCtxSetCurrent(dev->ctx);
    return r == CUDA_SUCCESS ? BP_OK : cu_fail(dev, r, "cuCtxSetCurrent");
}

/* ---- discovery ---- */

static int attribute(const cu_api *api, CUdevice d, CUdevice_attribute a) {
    int v = 0;
    return api->cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : 0;
}

static void discover(cu_backend *be) {
    const cu_api *api = &be->api;
    int n = 0;
    CUresult r = api->cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS || n <= 0) {
        char text[160];
        snprintf(be->reason, sizeof be->reason, "the CUDA driver (%d) sees no device%s%s",
                 api->driver_version, r != CUDA_SUCCESS ? ": " : "",
                 r != CUDA_SUCCESS ? cu_result_text(api, r, text, sizeof text) : "");
        return;
    }
    be->devices = calloc((size_t)n, sizeof *be->devices);
    if (!be->devices) {
        snprintf(be->reason, sizeof be->reason, "out of host memory for %d devices", n);
        return;
    }
    for (int i = 0; i < n; i++) {
        cu_device_info *info = &be->devices[be->ndevices].info;
        if (api->cuDeviceGet(&info->handle, i) != CUDA_SUCCESS)
            continue;
        if (api->cuDeviceGetName(info->name, (int)sizeof info->name, info->handle) !=
            CUDA_SUCCESS)
            snprintf(info->name, sizeof info->name, "CUDA device %d", i);
        size_t total = 0;
        if (api->cuDeviceTotalMem(&total, info->handle) == CUDA_SUCCESS)
            info->total_mem = total;
        CUdevice h = info->handle;
        info->cc_major = attribute(api, h, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        info->cc_minor = attribute(api, h, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        info->sm_count = attribute(api, h, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        info->max_smem_optin =
            attribute(api, h, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        be->ndevices++;
    }
    if (be->ndevices == 0)
        snprintf(be->reason, sizeof be->reason, "cuDeviceGet failed for all %d devices", n);
}

/* ---- devices ---- */

static int device_count(void *backend) {
    return ((cu_backend *)backend)->ndevices;
}

static const char *device_unavailable_reason(void *backend) {
    cu_backend *be = backend;
    return bp_plugin_unavailable_reason(be->ndevices, be->reason);
}

static bp_status check_index(cu_backend *be, int index) {
    return bp_plugin_check_index(be->host, CU_NAME, index, be->ndevices, "CUDA", NULL);
}

/* Kernels cover f32, f16 and bf16 math; every dtype can be stored, filled, copied and
 * concatenated. */
#define CU_DTYPES                                                                            \
    (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | BP_DTYPE_BIT(BP_DTYPE_BF16) |  \
     BP_DTYPE_BIT(BP_DTYPE_F64) | BP_DTYPE_BIT(BP_DTYPE_I8) | BP_DTYPE_BIT(BP_DTYPE_U8) |     \
     BP_DTYPE_BIT(BP_DTYPE_I32) | BP_DTYPE_BIT(BP_DTYPE_I64) | BP_DTYPE_BIT(BP_DTYPE_BOOL))

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    cu_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, CU_NAME, props, &p);
    if (st != BP_OK)
        return st;
    const cu_device_info *info = &be->devices[index].info;
    snprintf(p.description, sizeof p.description, "%.96s (sm_%d%d, %d SMs)", info->name,
             info->cc_major, info->cc_minor, info->sm_count);
    p.total_memory = info->total_mem;
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_PINNED_HOST |
                     BP_CAP_REGIONS | BP_CAP_REGION_STREAMS |
                     (be->ndevices > 1 ? BP_CAP_PEER_COPY : 0u);
    p.dtypes = CU_DTYPES;
    p.stream_priority_least = info->prio_least;
    p.stream_priority_greatest = info->prio_greatest;
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status device_open(void *backend, int index, void **out_device) {
    cu_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    cu_device *dev = &be->devices[index];
    CUresult r = be->api.cuDevicePrimaryCtxRetain(&dev->ctx, dev->info.handle);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, r, "cannot retain the primary context (cuDevicePrimaryCtxRetain)");
    st = cu_enter(dev);
    if (st == BP_OK)
        st = cu_module_load(dev);
    if (st != BP_OK) {
        be->api.cuDevicePrimaryCtxRelease(dev->info.handle);
        dev->ctx = NULL;
        return st;
    }
    *out_device = dev;
    return BP_OK;
}

static void device_close(void *device) {
    cu_device *dev = device;
    const cu_api *api = &dev->backend->api;
    if (cu_enter(dev) == BP_OK)
        api->cuCtxSynchronize();
    cu_graph_cache_destroy(dev);
    cu_blaslt_destroy(dev);
    cu_module_unload(dev);
    api->cuDevicePrimaryCtxRelease(dev->info.handle);
    dev->ctx = NULL;
    dev->peer_enabled = 0;
}

static bp_status device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    cu_device *dev = device;
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    size_t free_b = 0, total_b = 0;
    CUresult r = dev->backend->api.cuMemGetInfo(&free_b, &total_b);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, r, "cuMemGetInfo");
    if (out_free)
        *out_free = free_b;
    if (out_total)
        *out_total = total_b;
    return BP_OK;
}

static bp_status device_synchronize(void *device) {
    return cu_device_synchronize(device);
}

/* ---- the current device: the CUDA context current on the thread ---- */

static bp_status guard_set_current(void *device) {
    return cu_enter(device);
}

static bp_status guard_get_current(void *backend, int *out_index) {
    cu_backend *be = backend;
    CUcontext cur = NULL;
    if (!out_index || be->api.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur)
        return BP_ERR_NOT_FOUND;
    for (int i = 0; i < be->ndevices; i++)
        if (be->devices[i].ctx == cur) {
            *out_index = i;
            return BP_OK;
        }
    return BP_ERR_NOT_FOUND;
}

/* ---- init ---- */

static void free_backend(cu_backend *be) {
    for (int i = 0; i < be->ndevices; i++)
        pthread_mutex_destroy(&be->devices[i].lock);
    free(be->devices);
    free(be);
}

static void log_devices(const cu_backend *be) {
    const bp_host_services *host = be->host;
    for (int i = 0; i < be->ndevices; i++) {
        const cu_device_info *info = &be->devices[i].info;
        host->log(BP_LOG_DEBUG, CU_NAME, "cuda:%d: %s, sm_%d%d, %d SMs, %llu MiB, driver %d", i,
                  info->name, info->cc_major, info->cc_minor, info->sm_count,
                  (unsigned long long)(info->total_mem >> 20), be->api.driver_version);
    }
    if (be->ndevices == 0)
        host->log(BP_LOG_DEBUG, CU_NAME, "cuda: no devices: %s", be->reason);
    else if (!cu_have_kernels())
        host->log(BP_LOG_WARN, CU_NAME,
                  "cuda: built without kernels (no nvcc at build time): devices offer memory, "
                  "streams and copies, and no ops");
}

static bp_status cu_init(const bp_host_services *host, void **out_backend) {
    cu_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "cuda: out of host memory for the backend");
    be->host = host;
    cu_host = host;
    if (cu_api_load(&be->api, be->reason, sizeof be->reason) == 0)
        discover(be);
    if (be->ndevices == 0 && !cu_have_kernels()) {
        size_t len = strlen(be->reason);
        snprintf(be->reason + len, sizeof be->reason - len,
                 "; and this plugin was built without kernels (no nvcc at build time)");
    }
    for (int i = 0; i < be->ndevices; i++) {
        cu_device *dev = &be->devices[i];
        dev->backend = be;
        dev->index = i;
        pthread_mutex_init(&dev->lock, NULL);
    }
    /* Stream priorities are a property of the device's context; read them once. */
    for (int i = 0; i < be->ndevices; i++) {
        cu_device *dev = &be->devices[i];
        CUcontext ctx = NULL;
        if (be->api.cuDevicePrimaryCtxRetain(&ctx, dev->info.handle) != CUDA_SUCCESS)
            continue;
        CUcontext prev = NULL;
        be->api.cuCtxGetCurrent(&prev);
        if (be->api.cuCtxSetCurrent(ctx) == CUDA_SUCCESS)
            be->api.cuCtxGetStreamPriorityRange(&dev->info.prio_least, &dev->info.prio_greatest);
        be->api.cuCtxSetCurrent(prev);
        be->api.cuDevicePrimaryCtxRelease(dev->info.handle);
    }
    if (be->ndevices > 0 && cu_have_kernels() && BP_HOST_HAS(host, register_kernel)) {
        bp_status st = cu_register_kernels(host);
        if (st != BP_OK) {
            free_backend(be);
            return st;
        }
    }
    log_devices(be);
    *out_backend = be;
    return BP_OK;
}

/* The host closed every device before. The driver stays loaded (cu_api.h). */
static void cu_shutdown(void *backend) {
    free_backend(backend);
}

bp_status cu_register_kernels(const bp_host_services *host) {
    const cu_op_entry *const families[] = {cu_ops_elementwise, cu_ops_matmul, cu_ops_sdpa};
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const cu_op_entry *e = families[f]; e->op; e++)
            for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
                if (!(e->dtypes & BP_DTYPE_BIT(dt)))
                    continue;
                /* fill converts its value with the host's reference fill kernel. */
                if (!strcmp(e->op, "fill") && !BP_HOST_HAS(host, run_reference_kernel))
                    continue;
                bp_status st = host->register_kernel(CU_NAME, e->op, (bp_dtype)dt, e->fn, NULL, 0);
                if (st != BP_OK)
                    return st;
            }
    return BP_OK;
}

static const bp_device_vtable cu_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = device_unavailable_reason,
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = device_mem_info,
    .synchronize = device_synchronize,
};

static const bp_guard_vtable cu_guard_vtable = {
    .struct_size = sizeof(bp_guard_vtable),
    .set_current = guard_set_current,
    .get_current = guard_get_current,
};

static const bp_plugin_descriptor cu_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = CU_NAME,
    .aliases = NULL,
    .version = CU_VERSION_STRING,
    .priority = 0,
    .init = cu_init,
    .shutdown = cu_shutdown,
    .device = &cu_device_vtable,
    .stream = &cu_stream_vtable,
    .event = &cu_event_vtable,
    .memory = &cu_memory_vtable,
    .guard = &cu_guard_vtable,
    .region = &cu_region_vtable,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &cu_descriptor;
}
