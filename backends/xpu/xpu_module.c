/* xpu: modules, built at first use per (device, program, variant).
 *
 * A module is the embedded SPIR-V of the program's variant (clc_spirv_find; built at
 * compile time from kernels/NAME.cl with the fixed RWG and TS), handed to zeModuleCreate as
 * ZE_MODULE_FORMAT_IL_SPIRV; the driver compiles it for the device. When an
 * ahead-of-time binary exists for the device's family (clc_native_find), it is tried
 * first as ZE_MODULE_FORMAT_NATIVE; one the driver refuses (another stepping, another
 * driver) is logged and the SPIR-V is built instead, then for every later module of the
 * device too. A build failure's message carries
 * the driver's build log. Modules are built under the device's modules_lock, so a
 * second caller waits for the first build. */
#include "xpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xpu_module {
    clc_program_id id;
    int variant;
    ze_module_handle_t module;
    xpu_kernel kernels[CLC_MAX_KERNELS]; /* created at first use */
    xpu_module *next;
};

/* The build log of a failed build, trimmed (the caller frees it), or NULL. */
static char *build_log(const xpu_api *api, ze_module_build_log_handle_t log) {
    size_t len = 0;
    char *text = NULL;
    if (log && api->zeModuleBuildLogGetString(log, &len, NULL) == ZE_RESULT_SUCCESS && len > 0 &&
        (text = calloc(1, len + 1)) != NULL &&
        api->zeModuleBuildLogGetString(log, &len, text) != ZE_RESULT_SUCCESS)
        text[0] = '\0';
    clc_build_log_trim(text);
    return text;
}

/* zeModuleCreate of `size` bytes in `format`; on failure *out_log is the build log. */
static ze_result_t create_module(xpu_device *dev, ze_module_format_t format,
                                 const unsigned char *bytes, size_t size,
                                 ze_module_handle_t *out, char **out_log) {
    const xpu_api *api = &dev->backend->api;
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = format,
                             .inputSize = size,
                             .pInputModule = bytes,
                             .pBuildFlags = "",
                             .pConstants = NULL};
    ze_module_build_log_handle_t log = NULL;
    *out = NULL;
    *out_log = NULL;
    ze_result_t r = api->zeModuleCreate(dev->driver->context, dev->info.handle, &desc, out, &log);
    if (r != ZE_RESULT_SUCCESS) {
        *out_log = build_log(api, log);
        *out = NULL;
    }
    if (log)
        api->zeModuleBuildLogDestroy(log);
    return r;
}

/* The native binary for the device's family, when there is one and the driver takes it.
 * After one refusal the device's other modules go straight to SPIR-V (one warning). */
static ze_module_handle_t try_native(xpu_device *dev, const clc_program_def *def,
                                     clc_program_id id, int variant) {
    if (!dev->info.family || dev->native_refused)
        return NULL;
    const clc_native_module *nat = clc_native_find(id, variant, dev->info.fp64, dev->info.family);
    if (!nat)
        return NULL;
    ze_module_handle_t mod = NULL;
    char *log = NULL;
    ze_result_t r = create_module(dev, ZE_MODULE_FORMAT_NATIVE, nat->binary, nat->size, &mod, &log);
    if (r != ZE_RESULT_SUCCESS) {
        dev->native_refused = true;
        dev->backend->host->log(BP_LOG_WARN, XPU_NAME,
                                "xpu:%d: the %s binary of the '%s' kernels (variant %d) does not "
                                "load (%s%s%s): building the SPIR-V instead, for every module "
                                "of this device",
                                dev->index, nat->family, def->name, variant, xpu_result_name(r),
                                log && log[0] ? ": " : "", log ? log : "");
    }
    free(log);
    return r == ZE_RESULT_SUCCESS ? mod : NULL;
}

static bp_status build_module(xpu_device *dev, clc_program_id id, int variant,
                              ze_module_handle_t *out) {
    const clc_program_def *def = &clc_programs[id];
    const bp_host_services *host = dev->backend->host;
    if (dev->info.max_wg < CLC_FIXED_MIN_WG)
        return host->set_error(BP_ERR_UNSUPPORTED,
                               "xpu:%d: the '%s' kernels need work-groups of %d work-items; "
                               "this device takes at most %zu",
                               dev->index, def->name, CLC_FIXED_MIN_WG, dev->info.max_wg);
    *out = try_native(dev, def, id, variant);
    if (*out)
        return BP_OK;
    const clc_module *spv = clc_spirv_find(id, variant, dev->info.fp64);
    if (!spv)
        return host->set_error(BP_ERR_UNSUPPORTED,
                               "xpu:%d: no SPIR-V module of the '%s' kernels for variant %d%s",
                               dev->index, def->name, variant,
                               dev->info.fp64 ? "" : " on a device without fp64");
    char *log = NULL;
    ze_result_t r = create_module(dev, ZE_MODULE_FORMAT_IL_SPIRV, spv->spirv, spv->size, out, &log);
    if (r != ZE_RESULT_SUCCESS) {
        bp_status st = host->set_error(
            r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY || r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
                ? BP_ERR_OUT_OF_MEMORY
                : BP_ERR_BACKEND,
            "xpu:%d: building the '%s' kernels (SPIR-V, variant %d%s) failed with %s: %s",
            dev->index, def->name, variant, spv->fp64 ? ", fp64" : "", xpu_result_name(r),
            log && log[0] ? log : "(no build log)");
        free(log);
        return st;
    }
    host->log(BP_LOG_DEBUG, XPU_NAME, "xpu:%d: built the '%s' kernels (SPIR-V, variant %d)",
              dev->index, def->name, variant);
    return BP_OK;
}

static void module_free(xpu_device *dev, xpu_module *m) {
    const xpu_api *api = &dev->backend->api;
    for (int i = 0; i < CLC_MAX_KERNELS; i++) {
        if (!m->kernels[i].kernel)
            continue;
        api->zeKernelDestroy(m->kernels[i].kernel);
        pthread_mutex_destroy(&m->kernels[i].lock);
    }
    if (m->module)
        api->zeModuleDestroy(m->module);
    free(m);
}

/* Kernel k of module m, created at its first use (a module built for an integer dtype
 * lacks the float-only kernels). Called with modules_lock held. */
static bp_status module_kernel(xpu_device *dev, xpu_module *m, int k) {
    xpu_kernel *kern = &m->kernels[k];
    if (kern->kernel)
        return BP_OK;
    const char *name = clc_programs[m->id].kernels[k];
    ze_kernel_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
    ze_result_t r = dev->backend->api.zeKernelCreate(m->module, &desc, &kern->kernel);
    if (r != ZE_RESULT_SUCCESS) {
        kern->kernel = NULL;
        char what[96];
        snprintf(what, sizeof what, "zeKernelCreate of %s (variant %d)", name, m->variant);
        return xpu_fail(dev, r, what);
    }
    pthread_mutex_init(&kern->lock, NULL);
    return BP_OK;
}

bp_status xpu_get_kernel(xpu_device *dev, clc_program_id id, int variant, const char *name,
                         xpu_kernel **out) {
    int k = clc_kernel_index(id, name);
    if (k < 0)
        return dev->backend->host->set_error(BP_ERR_INTERNAL,
                                             "xpu: program %d has no kernel '%s'", (int)id,
                                             name ? name : "(null)");
    bp_status st = BP_OK;
    pthread_mutex_lock(&dev->modules_lock);
    xpu_module *m = dev->modules;
    while (m && (m->id != id || m->variant != variant))
        m = m->next;
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m)
            st = dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                               "xpu:%d: out of host memory for a module",
                                               dev->index);
        if (st == BP_OK) {
            m->id = id;
            m->variant = variant;
            st = build_module(dev, id, variant, &m->module);
            if (st == BP_OK) {
                m->next = dev->modules;
                dev->modules = m;
            } else {
                free(m);
            }
        }
    }
    if (st == BP_OK)
        st = module_kernel(dev, m, k);
    pthread_mutex_unlock(&dev->modules_lock);
    if (st == BP_OK)
        *out = &m->kernels[k];
    return st;
}

void xpu_modules_destroy(xpu_device *dev) {
    pthread_mutex_lock(&dev->modules_lock);
    xpu_module *m = dev->modules;
    dev->modules = NULL;
    pthread_mutex_unlock(&dev->modules_lock);
    while (m) {
        xpu_module *next = m->next;
        module_free(dev, m);
        m = next;
    }
}
