/* opencl: an OpenCL backend plugin (docs/backends/opencl.md).
 *
 * This file: the descriptor, init (loading the ICD loader, finding every device of
 * every platform), the device table and the current-device guard. */
#include "ocl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bp_status ocl_fail(ocl_device *dev, cl_int err, const char *what) {
    bp_status st = err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE
                       ? BP_ERR_OUT_OF_MEMORY
                       : BP_ERR_BACKEND;
    return dev->backend->host->set_error(st, "opencl:%d: %s: %s (%d)", dev->index, what,
                                         ocl_error_name(err), (int)err);
}

/* ---- discovery ---- */

static void info_string(const ocl_api *api, cl_device_id id, cl_device_info what, char *buf,
                        size_t size) {
    buf[0] = '\0';
    if (api->clGetDeviceInfo(id, what, size, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[size - 1] = '\0';
}

static uint64_t info_u64(const ocl_api *api, cl_device_id id, cl_device_info what) {
    cl_ulong v = 0;
    if (api->clGetDeviceInfo(id, what, sizeof v, &v, NULL) != CL_SUCCESS)
        return 0;
    return v;
}

/* Whether the space-separated extension list names `ext` exactly. */
static bool has_extension(const char *list, const char *ext) {
    size_t n = strlen(ext);
    for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static void describe_device(const ocl_api *api, cl_platform_id platform, cl_device_id id,
                            ocl_device_info *info) {
    memset(info, 0, sizeof *info);
    info->platform = platform;
    info->id = id;
    char pname[128] = "";
    if (api->clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL) !=
        CL_SUCCESS)
        pname[0] = '\0';
    pname[sizeof pname - 1] = '\0';
    info_string(api, id, CL_DEVICE_NAME, info->name, sizeof info->name);
    info_string(api, id, CL_DRIVER_VERSION, info->driver, sizeof info->driver);
    info_string(api, id, CL_DEVICE_VERSION, info->version, sizeof info->version);
    snprintf(info->description, sizeof info->description, "%.60s: %.60s", pname, info->name);
    info->global_mem = info_u64(api, id, CL_DEVICE_GLOBAL_MEM_SIZE);
    info->max_alloc = info_u64(api, id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    info->local_mem = info_u64(api, id, CL_DEVICE_LOCAL_MEM_SIZE);
    size_t wg = 0;
    if (api->clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
        CL_SUCCESS)
        wg = 1;
    info->max_wg = wg ? wg : 1;
    cl_command_queue_properties qp = 0;
    if (api->clGetDeviceInfo(id, CL_DEVICE_QUEUE_PROPERTIES, sizeof qp, &qp, NULL) ==
        CL_SUCCESS)
        info->profiling = (qp & CL_QUEUE_PROFILING_ENABLE) != 0;
    size_t len = 0;
    if (api->clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &len) == CL_SUCCESS && len) {
        char *ext = calloc(1, len + 1);
        if (ext && api->clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, len, ext, NULL) ==
                       CL_SUCCESS) {
            info->fp64 = has_extension(ext, "cl_khr_fp64");
            info->fp16 = has_extension(ext, "cl_khr_fp16");
            info->il_program_khr = has_extension(ext, "cl_khr_il_program");
        }
        free(ext);
    }
}

/* BP_OPENCL_FP64=0 makes every device one without cl_khr_fp64 (no f64 dtype, kernels
 * built without double), as GPUs without fp64 are: their kernel variants then run on
 * any device. Unset, empty or 1: as the device reports. Anything else: false, with the
 * reason in be->reason (then no device). */
static bool read_fp64_switch(ocl_backend *be) {
    const char *v = secure_getenv("BP_OPENCL_FP64");
    be->hide_fp64 = v && strcmp(v, "0") == 0;
    if (!v || !v[0] || strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
        return true;
    snprintf(be->reason, sizeof be->reason,
             "BP_OPENCL_FP64='%.64s' is not 0 (devices as without cl_khr_fp64) or 1 (as they "
             "report)",
             v);
    return false;
}

/* Fills be->devices from every platform, in platform then device order. */
static void discover(ocl_backend *be) {
    const ocl_api *api = &be->api;
    cl_uint nplat = 0;
    cl_int err = api->clGetPlatformIDs(0, NULL, &nplat);
    if (err != CL_SUCCESS || nplat == 0) {
        const char *vendors = getenv("OCL_ICD_VENDORS");
        snprintf(be->reason, sizeof be->reason,
                 "no OpenCL platform found (clGetPlatformIDs: %d); is an ICD installed? "
                 "OCL_ICD_VENDORS=%s",
                 (int)err, vendors ? vendors : "(unset: /etc/OpenCL/vendors)");
        return;
    }
    cl_platform_id *plats = calloc(nplat, sizeof *plats);
    if (!plats || api->clGetPlatformIDs(nplat, plats, NULL) != CL_SUCCESS) {
        free(plats);
        snprintf(be->reason, sizeof be->reason, "clGetPlatformIDs failed listing %u platforms",
                 (unsigned)nplat);
        return;
    }
    int cap = 0;
    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint ndev = 0;
        if (api->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS ||
            ndev == 0)
            continue;
        cl_device_id *ids = calloc(ndev, sizeof *ids);
        if (!ids)
            continue;
        if (api->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, ids, NULL) == CL_SUCCESS) {
            for (cl_uint d = 0; d < ndev; d++) {
                if (be->ndevices == cap) {
                    int ncap = cap ? 2 * cap : 4;
                    ocl_device *grown = realloc(be->devices, (size_t)ncap * sizeof *grown);
                    if (!grown)
                        break;
                    be->devices = grown;
                    cap = ncap;
                }
                ocl_device *dev = &be->devices[be->ndevices];
                memset(dev, 0, sizeof *dev);
                describe_device(api, plats[p], ids[d], &dev->info);
                dev->info.fp64 = dev->info.fp64 && !be->hide_fp64;
                be->ndevices++;
            }
        }
        free(ids);
    }
    free(plats);
    if (be->ndevices == 0)
        snprintf(be->reason, sizeof be->reason,
                 "%u OpenCL platform%s found, but no device on any", (unsigned)nplat,
                 nplat == 1 ? "" : "s");
}

/* ---- devices ---- */

static int device_count(void *backend) {
    return ((ocl_backend *)backend)->ndevices;
}

static const char *device_unavailable_reason(void *backend) {
    ocl_backend *be = backend;
    return bp_plugin_unavailable_reason(be->ndevices, be->reason);
}

static bp_status check_index(ocl_backend *be, int index) {
    return bp_plugin_check_index(be->host, OCL_NAME, index, be->ndevices, "OpenCL", NULL);
}

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    ocl_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, OCL_NAME, props, &p);
    if (st != BP_OK)
        return st;
    const ocl_device_info *info = &be->devices[index].info;
    /* The program mode shows in bp-info: "<platform>: <device> (BP_OPENCL_PROGRAM=spirv)". */
    snprintf(p.description, sizeof p.description, "%.100s%s", info->description,
             be->spirv ? " (BP_OPENCL_PROGRAM=spirv)" : "");
    p.total_memory = info->global_mem;
    p.capabilities = BP_CAP_ASYNC_STREAMS | (info->profiling ? BP_CAP_TIMED_EVENTS : 0u);
    p.dtypes = clc_device_dtypes(info->fp64);
    p.stream_priority_least = 0;
    p.stream_priority_greatest = 0;
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status device_open(void *backend, int index, void **out_device) {
    ocl_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    ocl_device *dev = &be->devices[index];
    if (!dev->context) {
        cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM,
                                          (cl_context_properties)dev->info.platform, 0};
        cl_int err = CL_SUCCESS;
        ocl_altstack alt;
        ocl_altstack_save(&alt);
        dev->context = be->api.clCreateContext(cprops, 1, &dev->info.id, NULL, NULL, &err);
        ocl_altstack_restore(&alt);
        if (!dev->context)
            return ocl_fail(dev, err, "cannot create a context (clCreateContext)");
    }
    *out_device = dev;
    return BP_OK;
}

static void device_close(void *device) {
    ocl_device *dev = device;
    ocl_programs_destroy(dev);
    ocl_memmap_clear(dev);
    if (dev->context)
        dev->backend->api.clReleaseContext(dev->context);
    dev->context = NULL;
}

static bp_status device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    ocl_device *dev = device;
    gpukit_memmap_mem_info(&dev->mem.map, dev->info.global_mem, out_free, out_total);
    return BP_OK;
}

static bp_status device_synchronize(void *device) {
    return ocl_device_synchronize(device);
}

/* ---- the current device: OpenCL has no per-thread state, so this is ours ---- */

static bp_status guard_set_current(void *device) {
    return bp_plugin_current_set(((ocl_device *)device)->index);
}

/* ---- init ---- */

static void free_backend(ocl_backend *be) {
    for (int i = 0; i < be->ndevices; i++) {
        ocl_device *dev = &be->devices[i];
        gpukit_memmap_fini(&dev->mem.map);
        pthread_mutex_destroy(&dev->mem.addr_lock);
        bp_plugin_list_fini(&dev->streams);
        pthread_mutex_destroy(&dev->programs_lock);
    }
    free(be->devices);
    free(be);
}

static bp_status ocl_init(const bp_host_services *host, void **out_backend) {
    ocl_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "opencl: out of host memory for the backend");
    be->host = host;
    if (ocl_program_mode_read(be) && read_fp64_switch(be) &&
        ocl_api_load(&be->api, be->reason, sizeof be->reason) == 0) {
        be->api_loaded = true;
        ocl_altstack alt;
        ocl_altstack_save(&alt);
        discover(be);
        ocl_altstack_restore(&alt);
    }
    for (int i = 0; i < be->ndevices; i++) {
        ocl_device *dev = &be->devices[i];
        dev->backend = be;
        dev->index = i;
        dev->clc = (clc_device){.ops = &ocl_clc_ops,
                                .host = host,
                                .type = OCL_NAME,
                                .index = i,
                                .max_wg = dev->info.max_wg,
                                .local_mem = dev->info.local_mem};
        clc_device_params(dev->info.max_wg, &dev->clc.rwg, &dev->clc.ts);
        if (be->spirv)
            ocl_spirv_device_init(dev);
        ocl_memmap_init(&dev->mem);
        bp_plugin_list_init(&dev->streams);
        pthread_mutex_init(&dev->programs_lock, NULL);
    }
    if (be->ndevices > 0 && BP_HOST_HAS(host, register_kernel)) {
        bp_status st = clc_register_kernels(host, OCL_NAME, ocl_stream_clc_device);
        if (st != BP_OK) {
            free_backend(be);
            return st; /* the host's message names what failed */
        }
    }
    for (int i = 0; i < be->ndevices; i++)
        host->log(BP_LOG_DEBUG, OCL_NAME, "opencl:%d: %s (%s, driver %s), %llu MiB%s%s", i,
                  be->devices[i].info.description, be->devices[i].info.version,
                  be->devices[i].info.driver,
                  (unsigned long long)(be->devices[i].info.global_mem >> 20),
                  be->devices[i].info.fp64 ? ", fp64"
                  : be->hide_fp64         ? ", no fp64 (BP_OPENCL_FP64=0)"
                                          : "",
                  be->devices[i].info.fp16 ? ", fp16" : "");
    if (be->ndevices == 0)
        host->log(BP_LOG_DEBUG, OCL_NAME, "opencl: no devices: %s", be->reason);
    *out_backend = be;
    return BP_OK;
}

/* The host closed every device before. The loader stays loaded (ocl_api.c). */
static void ocl_shutdown(void *backend) {
    free_backend(backend);
}

static const bp_device_vtable ocl_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = device_unavailable_reason,
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = device_mem_info,
    .synchronize = device_synchronize,
};

static const bp_guard_vtable ocl_guard_vtable = {
    .struct_size = sizeof(bp_guard_vtable),
    .set_current = guard_set_current,
    .get_current = bp_plugin_current_get,
};

static const char *const ocl_aliases[] = {"ocl", NULL};

static const bp_plugin_descriptor ocl_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = OCL_NAME,
    .aliases = ocl_aliases,
    .version = OCL_VERSION,
    .priority = 0,
    .init = ocl_init,
    .shutdown = ocl_shutdown,
    .device = &ocl_device_vtable,
    .stream = &ocl_stream_vtable,
    .event = &ocl_event_vtable,
    .memory = &ocl_memory_vtable,
    .guard = &ocl_guard_vtable,
    .region = NULL,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &ocl_descriptor;
}
