/* opencl: programs from the embedded SPIR-V modules instead of OpenCL C source
 * (BP_OPENCL_PROGRAM=spirv; docs/backends/opencl.md, "SPIR-V mode").
 *
 * The modules are the ones the xpu plugin hands to Level Zero (backends/clc, clc.h),
 * compiled at build time with clc.h's fixed RWG and TS, so a device in this mode runs
 * the kernels with those work-group sizes and needs work-groups of CLC_FIXED_MIN_WG.
 * A device that cannot build from SPIR-V is still listed (memory, streams and events
 * work); its kernels fail with the reason, found here at init. */
#include "ocl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ocl_program_mode_read(ocl_backend *be) {
    const char *mode = secure_getenv("BP_OPENCL_PROGRAM");
    if (!mode || !mode[0] || strcmp(mode, "source") == 0) {
        be->spirv = false;
        return true;
    }
    if (strcmp(mode, "spirv") == 0) {
        be->spirv = true;
        return true;
    }
    snprintf(be->reason, sizeof be->reason,
             "BP_OPENCL_PROGRAM='%.64s' is not a program mode: expected 'source' (OpenCL C, "
             "the default) or 'spirv' (the embedded SPIR-V modules)",
             mode);
    return false;
}

/* The OpenCL version of CL_DEVICE_VERSION ("OpenCL 2.1 ...") as major * 10 + minor,
 * or 0 when it does not parse. */
static int device_version(const ocl_device_info *info) {
    unsigned major = 0, minor = 0;
    if (sscanf(info->version, "OpenCL %u.%u", &major, &minor) != 2 || minor > 9)
        return 0;
    return (int)(major * 10 + minor);
}

/* CL_DEVICE_IL_VERSION into buf ("" when the device reports none). */
static void il_versions(const ocl_api *api, cl_device_id id, char *buf, size_t size) {
    if (api->clGetDeviceInfo(id, OCL_DEVICE_IL_VERSION, size, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[size - 1] = '\0';
}

/* How dev creates programs from SPIR-V: OpenCL 2.1's clCreateProgramWithIL, else
 * cl_khr_il_program's clCreateProgramWithILKHR; NULL when the device takes no SPIR-V,
 * with why in `why`. */
static ocl_create_program_with_il_fn il_function(ocl_device *dev, char *why, size_t n) {
    const ocl_api *api = &dev->backend->api;
    char ils[256];
    il_versions(api, dev->info.id, ils, sizeof ils);
    if (!strstr(ils, "SPIR-V")) {
        snprintf(why, n,
                 "the device takes no SPIR-V (CL_DEVICE_IL_VERSION is '%.120s'%s; %.100s)", ils,
                 dev->info.il_program_khr ? "" : ", no cl_khr_il_program", dev->info.version);
        return NULL;
    }
    if (device_version(&dev->info) >= 21 && api->clCreateProgramWithIL)
        return api->clCreateProgramWithIL;
    void *khr = dev->info.il_program_khr && api->clGetExtensionFunctionAddressForPlatform
                    ? api->clGetExtensionFunctionAddressForPlatform(dev->info.platform,
                                                                    "clCreateProgramWithILKHR")
                    : NULL;
    if (khr)
        return (ocl_create_program_with_il_fn)khr;
    snprintf(why, n,
             "the device lists '%.80s' but neither clCreateProgramWithIL (OpenCL 2.1; the "
             "device is '%.60s', the loader %s it) nor cl_khr_il_program's "
             "clCreateProgramWithILKHR is there",
             ils, dev->info.version, api->clCreateProgramWithIL ? "has" : "lacks");
    return NULL;
}

void ocl_spirv_device_init(ocl_device *dev) {
    dev->clc.rwg = CLC_FIXED_RWG;
    dev->clc.ts = CLC_FIXED_TS;
    char *why = dev->spirv_unusable;
    size_t n = sizeof dev->spirv_unusable;
    if (clc_spirv_module_count == 0)
        snprintf(why, n,
                 "this libbp_opencl.so was built without SPIR-V modules (clang, llvm-spirv "
                 "or spirv-val missing at build time: see CMake's 'clc:' line)");
    else if (dev->info.max_wg < CLC_FIXED_MIN_WG)
        snprintf(why, n,
                 "the SPIR-V kernels need work-groups of %d work-items, the device takes at "
                 "most %zu (BP_OPENCL_PROGRAM=source builds them for it)",
                 CLC_FIXED_MIN_WG, dev->info.max_wg);
    else
        dev->create_il = il_function(dev, why, n);
    if (dev->create_il)
        dev->backend->host->log(BP_LOG_DEBUG, OCL_NAME,
                                "opencl:%d: kernels from SPIR-V (BP_OPENCL_PROGRAM=spirv, %zu "
                                "modules, RWG=%d TS=%d)",
                                dev->index, clc_spirv_module_count, CLC_FIXED_RWG, CLC_FIXED_TS);
    else
        dev->backend->host->log(BP_LOG_DEBUG, OCL_NAME,
                                "opencl:%d: BP_OPENCL_PROGRAM=spirv, but no kernel will run: %s",
                                dev->index, why);
}

bp_status ocl_spirv_module(ocl_device *dev, clc_program_id id, int variant,
                           const clc_module **out) {
    const bp_host_services *host = dev->backend->host;
    const clc_program_def *def = &clc_programs[id];
    if (!dev->create_il)
        return host->set_error(
            BP_ERR_UNSUPPORTED,
            "opencl:%d: the '%s' kernels from SPIR-V (BP_OPENCL_PROGRAM=spirv): %s", dev->index,
            def->name, dev->spirv_unusable);
    *out = clc_spirv_find(id, variant, dev->info.fp64);
    if (!*out)
        return host->set_error(
            BP_ERR_UNSUPPORTED,
            "opencl:%d: no SPIR-V module of the '%s' kernels for %s=%d on a device %s fp64 "
            "(BP_OPENCL_PROGRAM=spirv; backends/clc/cmake/spirv.cmake lists the variants built)",
            dev->index, def->name, def->by_size ? "BP_ESIZE" : "BP_DT", variant,
            dev->info.fp64 ? "with" : "without");
    return BP_OK;
}
