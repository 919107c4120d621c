/* gpu: the GPU backend core (gpu_core.h, docs/backends/cuda.md).
 *
 * This file: init (the driver table checked, the driver loaded, the devices found,
 * BP_GPU_PORTABLE_KERNELS read, the kernels registered), the device vtable, the
 * current-device guard (the device's primary context made current) and errors. */
#include "gpu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const bp_host_services *gpu_host;

/* ---- errors ---- */

bp_status gpu_fail(const gpu_device *dev, gpu_result r, const char *fmt, ...) {
    const gpu_driver *drv = dev->drv;
    char what[192], text[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    drv->result_text(r, text, sizeof text);
    bp_status st =
        drv->classify(r) == GPU_RESULT_OUT_OF_MEMORY ? BP_ERR_OUT_OF_MEMORY : BP_ERR_BACKEND;
    return gpu_host->set_error(st, "%s:%d: %s: %s", drv->device_type, dev->index, what, text);
}

bp_status gpu_error(const gpu_device *dev, bp_status status, const char *fmt, ...) {
    char message[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return gpu_host->set_error(status, "%s:%d: %s", dev->drv->device_type, dev->index, message);
}

bp_status gpu_enter(const gpu_device *dev) {
    gpu_result r = dev->drv->ctx_enter(dev->ctx);
    return r == GPU_SUCCESS ? BP_OK : gpu_fail(dev, r, "%s", dev->drv->name.ctx_enter);
}

/* ---- discovery ---- */

/* The first member of the table that is missing, or NULL when it is complete. */
static const char *missing_member(const gpu_driver *drv) {
#define GPU_CHECK_MEMBER(member)                                                              \
    if (!drv->member || !drv->name.member)                                                    \
        return #member;
    GPU_DRIVER_CALLS(GPU_CHECK_MEMBER)
#undef GPU_CHECK_MEMBER
    if (!drv->load)
        return "load";
    if (!drv->classify)
        return "classify";
    if (!drv->result_text)
        return "result_text";
    return NULL;
}

static int attribute(const gpu_driver *drv, int device, gpu_device_attribute a) {
    int v = 0;
    return drv->device_attribute(&v, a, device) == GPU_SUCCESS ? v : 0;
}

static void describe(const gpu_driver *drv, int ordinal, gpu_device_info *info) {
    int h = info->handle;
    if (drv->device_name(info->name, (int)sizeof info->name, h) != GPU_SUCCESS)
        snprintf(info->name, sizeof info->name, "%s device %d", drv->vendor, ordinal);
    if (drv->device_arch(info->arch, sizeof info->arch, h) != GPU_SUCCESS)
        snprintf(info->arch, sizeof info->arch, "unknown");
    size_t total = 0;
    if (drv->device_total_mem(&total, h) == GPU_SUCCESS)
        info->total_mem = total;
    info->multiprocessors = attribute(drv, h, GPU_ATTR_MULTIPROCESSORS);
    info->max_smem_optin = attribute(drv, h, GPU_ATTR_MAX_SHARED_OPTIN);
    info->warp_size = attribute(drv, h, GPU_ATTR_WARP_SIZE);
    if (info->warp_size <= 0)
        info->warp_size = 32; /* every GPU this core runs on has at least 32 lanes */
}

static void discover(gpu_backend *be) {
    const gpu_driver *drv = be->drv;
    int n = 0;
    gpu_result r = drv->device_count(&n);
    if (r != GPU_SUCCESS || n <= 0) {
        char text[160];
        snprintf(be->reason, sizeof be->reason, "the %s driver (%d) sees no device%s%s",
                 drv->vendor, be->driver_version, r != GPU_SUCCESS ? ": " : "",
                 r != GPU_SUCCESS ? drv->result_text(r, text, sizeof text) : "");
        return;
    }
    be->devices = calloc((size_t)n, sizeof *be->devices);
    if (!be->devices) {
        snprintf(be->reason, sizeof be->reason, "out of host memory for %d devices", n);
        return;
    }
    for (int i = 0; i < n; i++) {
        gpu_device_info *info = &be->devices[be->ndevices].info;
        if (drv->device_get(&info->handle, i) != GPU_SUCCESS)
            continue;
        describe(drv, i, info);
        be->ndevices++;
    }
    if (be->ndevices == 0)
        snprintf(be->reason, sizeof be->reason, "%s failed for all %d devices",
                 drv->name.device_get, n);
}

/* Stream priorities are a property of the device's context: read them once, with the
 * primary context retained briefly. */
static void read_priorities(gpu_backend *be, gpu_device *dev) {
    const gpu_driver *drv = be->drv;
    void *ctx = NULL, *prev = NULL;
    if (drv->primary_ctx_retain(&ctx, dev->info.handle) != GPU_SUCCESS)
        return;
    drv->ctx_get_current(&prev);
    if (drv->ctx_enter(ctx) == GPU_SUCCESS)
        drv->ctx_stream_priority_range(&dev->info.prio_least, &dev->info.prio_greatest);
    drv->ctx_enter(prev);
    drv->primary_ctx_release(dev->info.handle);
}

/* ---- BP_GPU_PORTABLE_KERNELS ---- */

/* "1": the portable kernels only (no NVIDIA-only fast path, no gemm provider), the
 * kernels an AMD build has; "0", unset or empty: the fast paths. Anything else: a
 * warning, and the fast paths. Read with secure_getenv: it chooses code. */
static bool read_portable_switch(const bp_host_services *host, const char *type) {
    const char *v = secure_getenv("BP_GPU_PORTABLE_KERNELS");
    if (!v || !*v || strcmp(v, "0") == 0)
        return false;
    if (strcmp(v, "1") == 0)
        return true;
    host->log(BP_LOG_WARN, type,
              "BP_GPU_PORTABLE_KERNELS='%.64s' is not 0 (fast paths) or 1 (portable kernels "
              "only); using the fast paths",
              v);
    return false;
}

/* ---- devices ---- */

static int device_count(void *backend) {
    return ((gpu_backend *)backend)->ndevices;
}

static const char *device_unavailable_reason(void *backend) {
    gpu_backend *be = backend;
    return bp_plugin_unavailable_reason(be->ndevices, be->reason);
}

static bp_status check_index(gpu_backend *be, int index) {
    return bp_plugin_check_index(be->host, be->drv->device_type, index, be->ndevices,
                                 be->drv->vendor, NULL);
}

/* Kernels cover f32, f16 and bf16 math; every dtype can be stored, filled, copied and
 * concatenated. */
#define GPU_DTYPES                                                                           \
    (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | BP_DTYPE_BIT(BP_DTYPE_BF16) |  \
     BP_DTYPE_BIT(BP_DTYPE_F64) | BP_DTYPE_BIT(BP_DTYPE_I8) | BP_DTYPE_BIT(BP_DTYPE_U8) |     \
     BP_DTYPE_BIT(BP_DTYPE_I32) | BP_DTYPE_BIT(BP_DTYPE_I64) | BP_DTYPE_BIT(BP_DTYPE_BOOL))

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    gpu_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, be->drv->device_type, props, &p);
    if (st != BP_OK)
        return st;
    const gpu_device_info *info = &be->devices[index].info;
    snprintf(p.description, sizeof p.description, "%.64s (%.15s, %d %.8s%s)", info->name,
             info->arch, info->multiprocessors, be->drv->multiprocessor,
             be->portable ? ", portable kernels" : "");
    p.total_memory = info->total_mem;
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_PINNED_HOST |
                     BP_CAP_REGIONS | BP_CAP_REGION_STREAMS |
                     (be->ndevices > 1 ? BP_CAP_PEER_COPY : 0u);
    p.dtypes = GPU_DTYPES;
    p.stream_priority_least = info->prio_least;
    p.stream_priority_greatest = info->prio_greatest;
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status device_open(void *backend, int index, void **out_device) {
    gpu_backend *be = backend;
    const gpu_driver *drv = be->drv;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    gpu_device *dev = &be->devices[index];
    gpu_result r = drv->primary_ctx_retain(&dev->ctx, dev->info.handle);
    if (r != GPU_SUCCESS)
        return gpu_fail(dev, r, "cannot retain the primary context (%s)",
                        drv->name.primary_ctx_retain);
    st = gpu_enter(dev);
    if (st == BP_OK)
        st = gpu_module_load(dev);
    if (st != BP_OK) {
        drv->primary_ctx_release(dev->info.handle);
        dev->ctx = NULL;
        return st;
    }
    *out_device = dev;
    return BP_OK;
}

static void device_close(void *device) {
    gpu_device *dev = device;
    const gpu_driver *drv = dev->drv;
    if (gpu_enter(dev) == BP_OK)
        drv->ctx_synchronize();
    gpu_graph_cache_destroy(dev);
    gpu_provider_close(dev);
    gpu_module_unload(dev);
    drv->primary_ctx_release(dev->info.handle);
    dev->ctx = NULL;
    dev->peer_enabled = 0;
}

static bp_status device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    gpu_device *dev = device;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    size_t free_b = 0, total_b = 0;
    gpu_result r = dev->drv->mem_get_info(&free_b, &total_b);
    if (r != GPU_SUCCESS)
        return gpu_fail(dev, r, "%s", dev->drv->name.mem_get_info);
    if (out_free)
        *out_free = free_b;
    if (out_total)
        *out_total = total_b;
    return BP_OK;
}

static bp_status device_synchronize(void *device) {
    return gpu_device_synchronize(device);
}

/* ---- the current device: the context current on the thread ---- */

static bp_status guard_set_current(void *device) {
    return gpu_enter(device);
}

static bp_status guard_get_current(void *backend, int *out_index) {
    gpu_backend *be = backend;
    void *cur = NULL;
    if (!out_index || be->drv->ctx_get_current(&cur) != GPU_SUCCESS || !cur)
        return BP_ERR_NOT_FOUND;
    for (int i = 0; i < be->ndevices; i++)
        if (be->devices[i].ctx == cur) {
            *out_index = i;
            return BP_OK;
        }
    return BP_ERR_NOT_FOUND;
}

/* ---- init ---- */

static void free_backend(gpu_backend *be) {
    for (int i = 0; i < be->ndevices; i++)
        pthread_mutex_destroy(&be->devices[i].lock);
    free(be->devices);
    free(be);
}

static void log_devices(const gpu_backend *be) {
    const bp_host_services *host = be->host;
    const gpu_driver *drv = be->drv;
    for (int i = 0; i < be->ndevices; i++) {
        const gpu_device_info *info = &be->devices[i].info;
        host->log(BP_LOG_DEBUG, drv->device_type,
                  "%s:%d: %s, %s, %d %s, warp %d, %llu MiB, driver %d", drv->device_type, i,
                  info->name, info->arch, info->multiprocessors, drv->multiprocessor,
                  info->warp_size, (unsigned long long)(info->total_mem >> 20),
                  be->driver_version);
    }
    if (be->ndevices == 0)
        host->log(BP_LOG_DEBUG, drv->device_type, "%s: no devices: %s", drv->device_type,
                  be->reason);
    else if (!gpu_have_kernels())
        host->log(BP_LOG_WARN, drv->device_type,
                  "%s: built without kernels (no %s at build time): devices offer memory, "
                  "streams and copies, and no ops",
                  drv->device_type, drv->kernel_compiler);
    if (be->portable)
        host->log(BP_LOG_INFO, drv->device_type,
                  "%s: portable kernels only (BP_GPU_PORTABLE_KERNELS=1): no NVIDIA-only fast "
                  "path%s",
                  drv->device_type, drv->gemm ? ", no vendor BLAS" : "");
}

static bp_status register_kernels(const gpu_backend *be) {
    const bp_host_services *host = be->host;
    const gpu_op_entry *const families[] = {gpu_ops_elementwise, gpu_ops_matmul, gpu_ops_sdpa};
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const gpu_op_entry *e = families[f]; e->op; e++)
            for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
                if (!(e->dtypes & BP_DTYPE_BIT(dt)))
                    continue;
                /* fill converts its value with the host's reference fill kernel. */
                if (!strcmp(e->op, "fill") && !BP_HOST_HAS(host, run_reference_kernel))
                    continue;
                bp_status st = host->register_kernel(be->drv->device_type, e->op, (bp_dtype)dt,
                                                     e->fn, NULL, 0);
                if (st != BP_OK)
                    return st;
            }
    return BP_OK;
}

/* Loads the driver and finds the devices; on failure be->reason says why. */
static void start(gpu_backend *be) {
    const gpu_driver *drv = be->drv;
    const char *missing = missing_member(drv);
    if (missing) {
        snprintf(be->reason, sizeof be->reason, "the plugin's driver table has no %s", missing);
        return;
    }
    if (drv->load(&be->driver_version, be->reason, sizeof be->reason) == 0)
        discover(be);
    if (be->ndevices == 0 && !gpu_have_kernels()) {
        size_t len = strlen(be->reason);
        snprintf(be->reason + len, sizeof be->reason - len,
                 "; and this plugin was built without kernels (no %s at build time)",
                 drv->kernel_compiler);
    }
}

bp_status gpu_backend_init(const gpu_driver *drv, const bp_host_services *host,
                           void **out_backend) {
    gpu_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "%s: out of host memory for the backend",
                               drv->device_type);
    be->host = host;
    be->drv = drv;
    gpu_host = host;
    be->portable = read_portable_switch(host, drv->device_type);
    start(be);
    bool fast_paths = drv->platform == GPU_PLATFORM_NVIDIA && !be->portable;
    for (int i = 0; i < be->ndevices; i++) {
        gpu_device *dev = &be->devices[i];
        dev->backend = be;
        dev->drv = drv;
        dev->index = i;
        dev->fast_paths = fast_paths;
        pthread_mutex_init(&dev->lock, NULL);
        read_priorities(be, dev);
    }
    if (be->ndevices > 0 && gpu_have_kernels() && BP_HOST_HAS(host, register_kernel)) {
        bp_status st = register_kernels(be);
        if (st != BP_OK) {
            free_backend(be);
            return st;
        }
    }
    log_devices(be);
    *out_backend = be;
    return BP_OK;
}

/* The host closed every device before. The driver stays loaded (gpu_driver.h, load). */
void gpu_backend_shutdown(void *backend) {
    free_backend(backend);
}

const bp_device_vtable gpu_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = device_unavailable_reason,
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = device_mem_info,
    .synchronize = device_synchronize,
};

const bp_guard_vtable gpu_guard_vtable = {
    .struct_size = sizeof(bp_guard_vtable),
    .set_current = guard_set_current,
    .get_current = guard_get_current,
};
