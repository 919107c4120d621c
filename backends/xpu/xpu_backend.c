/* xpu: an Intel GPU backend plugin on Level Zero (docs/backends/xpu.md).
 *
 * This file: the descriptor, init (loading the Level Zero loader, zeInit, finding every
 * GPU device of every driver), the device table and the current-device guard.
 *
 * Devices: the devices zeDeviceGet reports, driver by driver, each followed by its
 * sub-devices (zeDeviceGetSubDevices) as indices of their own. With the driver's
 * default flat hierarchy a multi-tile GPU reports its tiles as devices and none has
 * sub-devices; with ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE a root device spans its tiles and
 * each tile is also an index. One context per driver holds all of that driver's devices. */
#include "xpu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bp_status xpu_fail(xpu_device *dev, ze_result_t r, const char *what) {
    bp_status st = r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY ||
                           r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
                       ? BP_ERR_OUT_OF_MEMORY
                       : BP_ERR_BACKEND;
    return dev->backend->host->set_error(st, "xpu:%d: %s: %s (0x%x)", dev->index, what,
                                         xpu_result_name(r), (unsigned)r);
}

/* ---- discovery ---- */

/* Appends "; <message>" (or the message, when first) to the reason for no devices. */
static void add_reason(xpu_backend *be, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_reason(xpu_backend *be, const char *fmt, ...) {
    size_t len = strlen(be->reason);
    if (len + 3 >= sizeof be->reason)
        return;
    if (len) {
        memcpy(be->reason + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(be->reason + len, sizeof be->reason - len, fmt, ap);
    va_end(ap);
}

/* Fills `info` from the device's properties. False, with why in `why`, when the device
 * is not a GPU or cannot be described. */
static bool describe_device(const xpu_api *api, ze_device_handle_t h, int root,
                            xpu_device_info *info, char *why, size_t why_size) {
    memset(info, 0, sizeof *info);
    info->handle = h;
    info->root = root;
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    ze_result_t r = api->zeDeviceGetProperties(h, &p);
    if (r != ZE_RESULT_SUCCESS) {
        snprintf(why, why_size, "zeDeviceGetProperties failed with %s", xpu_result_name(r));
        return false;
    }
    p.name[sizeof p.name - 1] = '\0';
    if (p.type != ZE_DEVICE_TYPE_GPU) {
        snprintf(why, why_size, "%.100s is not a GPU (type %d)", p.name, (int)p.type);
        return false;
    }
    ze_device_compute_properties_t c = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ze_device_module_properties_t m = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    const char *step = "zeDeviceGetComputeProperties";
    r = api->zeDeviceGetComputeProperties(h, &c);
    if (r == ZE_RESULT_SUCCESS) {
        step = "zeDeviceGetModuleProperties";
        r = api->zeDeviceGetModuleProperties(h, &m);
    }
    enum { MAX_MEMS = 8, MAX_GROUPS = 16 };
    ze_device_memory_properties_t mems[MAX_MEMS];
    uint32_t nmem = MAX_MEMS;
    for (uint32_t i = 0; i < MAX_MEMS; i++)
        mems[i] = (ze_device_memory_properties_t){
            .stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    if (r == ZE_RESULT_SUCCESS) {
        step = "zeDeviceGetMemoryProperties";
        r = api->zeDeviceGetMemoryProperties(h, &nmem, mems);
    }
    ze_command_queue_group_properties_t groups[MAX_GROUPS];
    uint32_t ngroups = MAX_GROUPS;
    for (uint32_t i = 0; i < MAX_GROUPS; i++)
        groups[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    if (r == ZE_RESULT_SUCCESS) {
        step = "zeDeviceGetCommandQueueGroupProperties";
        r = api->zeDeviceGetCommandQueueGroupProperties(h, &ngroups, groups);
    }
    if (r != ZE_RESULT_SUCCESS) {
        snprintf(why, why_size, "%.100s: %s failed with %s", p.name, step, xpu_result_name(r));
        return false;
    }
    uint32_t g = 0;
    while (g < ngroups && !(groups[g].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE))
        g++;
    if (g == ngroups) {
        snprintf(why, why_size, "%.100s has no compute command queue group", p.name);
        return false;
    }
    info->compute_ordinal = g;
    info->subdevice_id = p.subdeviceId;
    info->pci_id = p.deviceId;
    info->family = xpu_family_of(p.deviceId);
    for (uint32_t i = 0; i < nmem && i < MAX_MEMS; i++)
        info->total_mem += mems[i].totalSize;
    info->max_alloc = p.maxMemAllocSize;
    info->max_wg = c.maxTotalGroupSize ? c.maxTotalGroupSize : 1;
    info->local_mem = c.maxSharedLocalMemory;
    info->timer_hz = p.timerResolution;
    info->timestamp_bits = p.timestampValidBits;
    info->fp64 = m.fp64flags != 0;
    info->fp16 = (m.flags & ZE_DEVICE_MODULE_FLAG_FP16) != 0;
    if (root >= 0)
        snprintf(info->description, sizeof info->description, "%.100s (tile %u)", p.name,
                 (unsigned)p.subdeviceId);
    else
        snprintf(info->description, sizeof info->description, "%.120s", p.name);
    unsigned eus = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
    snprintf(info->features, sizeof info->features, "pci=0x%04x%s%s%s%s eus=%u simd=%u",
             (unsigned)p.deviceId, info->family ? " family=" : "",
             info->family ? info->family : "", info->fp64 ? " fp64" : "",
             info->fp16 ? " fp16" : "", eus, (unsigned)p.physicalEUSimdWidth);
    return true;
}

/* Appends a device to be->devices. False when out of host memory. */
static bool add_device(xpu_backend *be, xpu_driver *drv, const xpu_device_info *info, int *cap) {
    if (be->ndevices == *cap) {
        int ncap = *cap ? 2 * *cap : 4;
        xpu_device *grown = realloc(be->devices, (size_t)ncap * sizeof *grown);
        if (!grown)
            return false;
        be->devices = grown;
        *cap = ncap;
    }
    xpu_device *dev = &be->devices[be->ndevices++];
    memset(dev, 0, sizeof *dev);
    dev->driver = drv;
    dev->info = *info;
    return true;
}

/* Adds the devices of driver number `d` and their sub-devices. */
static void add_driver_devices(xpu_backend *be, xpu_driver *drv, uint32_t d, int *cap) {
    const xpu_api *api = &be->api;
    uint32_t n = 0;
    ze_result_t r = api->zeDeviceGet(drv->handle, &n, NULL);
    if (r != ZE_RESULT_SUCCESS || n == 0) {
        add_reason(be, "Level Zero driver %u has no GPU device (zeDeviceGet: %s, %u devices)",
                   (unsigned)d, xpu_result_name(r), (unsigned)n);
        return;
    }
    ze_device_handle_t *roots = calloc(n, sizeof *roots);
    if (!roots || api->zeDeviceGet(drv->handle, &n, roots) != ZE_RESULT_SUCCESS) {
        free(roots);
        add_reason(be, "Level Zero driver %u: zeDeviceGet failed listing %u devices",
                   (unsigned)d, (unsigned)n);
        return;
    }
    char why[256];
    for (uint32_t i = 0; i < n; i++) {
        xpu_device_info info;
        if (!describe_device(api, roots[i], -1, &info, why, sizeof why)) {
            add_reason(be, "driver %u device %u: %s", (unsigned)d, (unsigned)i, why);
            continue;
        }
        int root = be->ndevices;
        if (!add_device(be, drv, &info, cap))
            break;
        uint32_t nsub = 0;
        if (api->zeDeviceGetSubDevices(roots[i], &nsub, NULL) != ZE_RESULT_SUCCESS || nsub == 0)
            continue;
        ze_device_handle_t *subs = calloc(nsub, sizeof *subs);
        if (subs && api->zeDeviceGetSubDevices(roots[i], &nsub, subs) == ZE_RESULT_SUCCESS) {
            for (uint32_t k = 0; k < nsub; k++) {
                if (!describe_device(api, subs[k], root, &info, why, sizeof why))
                    add_reason(be, "driver %u device %u sub-device %u: %s", (unsigned)d,
                               (unsigned)i, (unsigned)k, why);
                else if (!add_device(be, drv, &info, cap))
                    break;
            }
        }
        free(subs);
    }
    free(roots);
}

/* Whether device i reaches every other device of the backend directly (one driver,
 * zeDeviceCanAccessPeer both ways). */
static bool reaches_all(xpu_backend *be, int i) {
    if (be->ndevices < 2)
        return false;
    for (int j = 0; j < be->ndevices; j++) {
        if (j == i)
            continue;
        xpu_device *a = &be->devices[i], *b = &be->devices[j];
        ze_bool_t ab = 0, ba = 0;
        if (a->driver != b->driver ||
            be->api.zeDeviceCanAccessPeer(a->info.handle, b->info.handle, &ab) !=
                ZE_RESULT_SUCCESS ||
            be->api.zeDeviceCanAccessPeer(b->info.handle, a->info.handle, &ba) !=
                ZE_RESULT_SUCCESS ||
            !ab || !ba)
            return false;
    }
    return true;
}

/* Fills be->drivers and be->devices. Stops at a failed zeInit: no other Level Zero call
 * follows it (Debian's loader crashes in zeDriverGet after zeInit failed, as it does
 * with intel-opencl-icd installed and no Intel GPU; tests/xpu has that case). */
static void discover(xpu_backend *be) {
    const xpu_api *api = &be->api;
    ze_result_t r = api->zeInit(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS) {
        add_reason(be,
                   "zeInit(ZE_INIT_FLAG_GPU_ONLY) failed with %s (0x%x): no Level Zero GPU "
                   "driver started (no Intel GPU, or no driver for it: Debian's "
                   "intel-opencl-icd has one)",
                   xpu_result_name(r), (unsigned)r);
        return;
    }
    uint32_t n = 0;
    r = api->zeDriverGet(&n, NULL);
    if (r != ZE_RESULT_SUCCESS || n == 0) {
        add_reason(be, "no Level Zero driver (zeDriverGet: %s, %u drivers)", xpu_result_name(r),
                   (unsigned)n);
        return;
    }
    ze_driver_handle_t *handles = calloc(n, sizeof *handles);
    be->drivers = calloc(n, sizeof *be->drivers);
    if (!handles || !be->drivers || api->zeDriverGet(&n, handles) != ZE_RESULT_SUCCESS) {
        free(handles);
        add_reason(be, "zeDriverGet failed listing %u drivers", (unsigned)n);
        return;
    }
    int cap = 0;
    for (uint32_t d = 0; d < n; d++) {
        ze_api_version_t version = 0;
        r = api->zeDriverGetApiVersion(handles[d], &version);
        if (r != ZE_RESULT_SUCCESS) {
            add_reason(be, "Level Zero driver %u: zeDriverGetApiVersion failed with %s",
                       (unsigned)d, xpu_result_name(r));
            continue;
        }
        if (version < XPU_ZE_API_NEEDED) {
            add_reason(be,
                       "Level Zero driver %u implements API %u.%u, older than the %u.%u this "
                       "plugin needs",
                       (unsigned)d, (unsigned)ZE_MAJOR_VERSION(version),
                       (unsigned)ZE_MINOR_VERSION(version),
                       (unsigned)ZE_MAJOR_VERSION(XPU_ZE_API_NEEDED),
                       (unsigned)ZE_MINOR_VERSION(XPU_ZE_API_NEEDED));
            continue;
        }
        xpu_driver *drv = &be->drivers[be->ndrivers];
        drv->backend = be;
        drv->handle = handles[d];
        int before = be->ndevices;
        add_driver_devices(be, drv, d, &cap);
        if (be->ndevices == before)
            continue;
        ze_context_desc_t cdesc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
        r = api->zeContextCreate(drv->handle, &cdesc, &drv->context);
        if (r != ZE_RESULT_SUCCESS) {
            add_reason(be, "Level Zero driver %u: zeContextCreate failed with %s", (unsigned)d,
                       xpu_result_name(r));
            be->ndevices = before;
            continue;
        }
        xpu_events_init(&drv->events);
        be->ndrivers++;
    }
    free(handles);
}

/* ---- devices ---- */

static int device_count(void *backend) {
    return ((xpu_backend *)backend)->ndevices;
}

static const char *device_unavailable_reason(void *backend) {
    xpu_backend *be = backend;
    return bp_plugin_unavailable_reason(be->ndevices, be->reason);
}

static bp_status check_index(xpu_backend *be, int index) {
    return bp_plugin_check_index(be->host, XPU_NAME, index, be->ndevices, "Level Zero", NULL);
}

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    xpu_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, XPU_NAME, props, &p);
    if (st != BP_OK)
        return st;
    const xpu_device_info *info = &be->devices[index].info;
    snprintf(p.description, sizeof p.description, "%s", info->description);
    p.total_memory = info->total_mem;
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_PINNED_HOST |
                     (info->timer_hz ? BP_CAP_TIMED_EVENTS : 0u) |
                     (info->peer_all ? BP_CAP_PEER_COPY : 0u);
    p.dtypes = clc_device_dtypes(info->fp64);
    p.stream_priority_least = 0;
    p.stream_priority_greatest = 0;
    snprintf(p.features, sizeof p.features, "%s", info->features);
    bp_props_copy_out(props, &p);
    return BP_OK;
}

/* The driver's context, made at init, is all a device needs. */
static bp_status device_open(void *backend, int index, void **out_device) {
    xpu_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    *out_device = &be->devices[index];
    return BP_OK;
}

/* The host destroyed the device's streams before. */
static void device_close(void *device) {
    xpu_device *dev = device;
    xpu_modules_destroy(dev);
    xpu_memory_release_all(dev);
}

static bp_status device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    xpu_device *dev = device;
    gpukit_memmap_mem_info(&dev->mem, dev->info.total_mem, out_free, out_total);
    return BP_OK;
}

static bp_status device_synchronize(void *device) {
    return xpu_device_synchronize(device);
}

/* ---- the current device: Level Zero has no per-thread state, so this is ours ---- */

static bp_status guard_set_current(void *device) {
    return bp_plugin_current_set(((xpu_device *)device)->index);
}

/* ---- init ---- */

/* The host closed every device before. */
static void free_backend(xpu_backend *be) {
    for (int i = 0; i < be->ndevices; i++) {
        xpu_device *dev = &be->devices[i];
        gpukit_memmap_fini(&dev->mem);
        bp_plugin_list_fini(&dev->streams);
        pthread_mutex_destroy(&dev->modules_lock);
    }
    for (int d = 0; d < be->ndrivers; d++) {
        xpu_events_destroy(&be->drivers[d]);
        be->api.zeContextDestroy(be->drivers[d].context);
    }
    free(be->devices);
    free(be->drivers);
    free(be);
}

static bp_status xpu_init(const bp_host_services *host, void **out_backend) {
    xpu_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "xpu: out of host memory for the backend");
    be->host = host;
    if (xpu_api_load(&be->api, be->reason, sizeof be->reason) == 0)
        discover(be);
    for (int i = 0; i < be->ndevices; i++) {
        xpu_device *dev = &be->devices[i];
        dev->backend = be;
        dev->index = i;
        dev->info.peer_all = reaches_all(be, i);
        /* The embedded modules were built with the fixed parameters (clc.h). */
        dev->clc = (clc_device){.ops = &xpu_clc_ops,
                                .host = host,
                                .type = XPU_NAME,
                                .index = i,
                                .rwg = CLC_FIXED_RWG,
                                .ts = CLC_FIXED_TS,
                                .max_wg = dev->info.max_wg,
                                .local_mem = dev->info.local_mem};
        gpukit_memmap_init(&dev->mem);
        bp_plugin_list_init(&dev->streams);
        pthread_mutex_init(&dev->modules_lock, NULL);
    }
    if (be->ndevices > 0 && BP_HOST_HAS(host, register_kernel)) {
        bp_status st = clc_register_kernels(host, XPU_NAME, xpu_stream_clc_device);
        if (st != BP_OK) {
            free_backend(be);
            return st; /* the host's message names what failed */
        }
    }
    for (int i = 0; i < be->ndevices; i++) {
        const xpu_device_info *info = &be->devices[i].info;
        host->log(BP_LOG_DEBUG, XPU_NAME, "xpu:%d: %s, %llu MiB, %s%s", i, info->description,
                  (unsigned long long)(info->total_mem >> 20), info->features,
                  info->max_wg < CLC_FIXED_MIN_WG ? " (work-groups too small for the kernels)"
                                                  : "");
    }
    if (be->ndevices == 0)
        host->log(BP_LOG_DEBUG, XPU_NAME, "xpu: no devices: %s", be->reason);
    *out_backend = be;
    return BP_OK;
}

static void xpu_shutdown(void *backend) {
    free_backend(backend);
}

static const bp_device_vtable xpu_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = device_unavailable_reason,
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = device_mem_info,
    .synchronize = device_synchronize,
};

static const bp_guard_vtable xpu_guard_vtable = {
    .struct_size = sizeof(bp_guard_vtable),
    .set_current = guard_set_current,
    .get_current = bp_plugin_current_get,
};

static const char *const xpu_aliases[] = {"ze", "level_zero", NULL};

static const bp_plugin_descriptor xpu_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = XPU_NAME,
    .aliases = xpu_aliases,
    .version = XPU_VERSION,
    .priority = 0,
    .init = xpu_init,
    .shutdown = xpu_shutdown,
    .device = &xpu_device_vtable,
    .stream = &xpu_stream_vtable,
    .event = &xpu_event_vtable,
    .memory = &xpu_memory_vtable,
    .guard = &xpu_guard_vtable,
    .region = NULL,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &xpu_descriptor;
}
