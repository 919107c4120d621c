/* cuda: the embedded kernels: one module per fatbin and device, kernel lookup by id,
 * and launches. */
#include "cu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kernel_names[CU_K_COUNT] = {
#define GPU_KERNEL(name) #name,
#include "kernels.def"
#undef GPU_KERNEL
};

/* The family (kernels/<family>.cu, hence fatbin) of each kernel. */
static const char *const kernel_family[CU_K_COUNT] = {
#define GPU_KERNEL(name) GPU_FAMILY,
#include "kernels.def"
#undef GPU_KERNEL
};

bp_status cu_module_load(cu_device *dev) {
    if (gpu_image_count == 0 || dev->modules)
        return BP_OK;
    const cu_api *api = &dev->backend->api;
    CUmodule *mods = calloc((size_t)gpu_image_count, sizeof *mods);
    if (!mods)
        return cu_host->set_error(BP_ERR_OUT_OF_MEMORY, "cuda:%d: out of host memory",
                                  dev->index);
    for (int i = 0; i < gpu_image_count; i++) {
        CUresult r = api->cuModuleLoadData(&mods[i], gpu_images[i].data);
        if (r != CUDA_SUCCESS) {
            for (int j = 0; j < i; j++)
                api->cuModuleUnload(mods[j]);
            free(mods);
            char what[96];
            snprintf(what, sizeof what, "cannot load the %s kernels (cuModuleLoadData)",
                     gpu_images[i].family);
            return cu_fail(dev, r, what);
        }
    }
    dev->modules = mods;
    return BP_OK;
}

void cu_module_unload(cu_device *dev) {
    if (!dev->modules)
        return;
    for (int i = 0; i < gpu_image_count; i++)
        dev->backend->api.cuModuleUnload(dev->modules[i]);
    free(dev->modules);
    dev->modules = NULL;
    for (int k = 0; k < CU_K_COUNT; k++)
        dev->functions[k] = (cu_function){0};
}

/* Finds kernel k in the device's modules (once) and raises its dynamic shared memory
 * limit to `smem` when that is above what it allows. Called with dev->lock held. */
static bp_status resolve_locked(cu_device *dev, cu_kernel_id k, unsigned smem) {
    const cu_api *api = &dev->backend->api;
    cu_function *f = &dev->functions[k];
    if (!f->fn) {
        CUfunction fn = NULL;
        CUresult r = CUDA_ERROR_NOT_FOUND;
        for (int i = 0; i < gpu_image_count && dev->modules; i++)
            if (strcmp(gpu_images[i].family, kernel_family[k]) == 0)
                r = api->cuModuleGetFunction(&fn, dev->modules[i], kernel_names[k]);
        if (!fn) {
            char what[128];
            snprintf(what, sizeof what, "kernel %s is not in the embedded modules",
                     kernel_names[k]);
            return cu_fail(dev, r, what);
        }
        __atomic_store_n(&f->fn, fn, __ATOMIC_RELEASE);
    }
    if (smem > 48u * 1024u && (int)smem > f->smem_limit) {
        if ((int)smem > dev->info.max_smem_optin)
            return cu_host->set_error(BP_ERR_UNSUPPORTED,
                                      "cuda:%d: kernel %s needs %u bytes of shared memory; the "
                                      "device allows %d",
                                      dev->index, kernel_names[k], smem, dev->info.max_smem_optin);
        CUresult r = api->cuFuncSetAttribute(
            f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
        if (r != CUDA_SUCCESS)
            return cu_fail(dev, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
        __atomic_store_n(&f->smem_limit, (int)smem, __ATOMIC_RELEASE);
    }
    return BP_OK;
}

bp_status cu_launch(cu_stream *s, cu_kernel_id k, const unsigned grid[3], const unsigned block[3],
                    unsigned smem, void **params, const char *what) {
    cu_device *dev = s->device;
    cu_function *f = &dev->functions[k];
    /* The common case reads the resolved function without the lock: it is written once
     * (under the lock) before any launch uses it, and a stale NULL only takes the lock. */
    CUfunction fn = __atomic_load_n(&f->fn, __ATOMIC_ACQUIRE);
    if (!fn || (smem > 48u * 1024u && (int)smem > __atomic_load_n(&f->smem_limit,
                                                                   __ATOMIC_ACQUIRE))) {
        pthread_mutex_lock(&dev->lock);
        bp_status st = resolve_locked(dev, k, smem);
        pthread_mutex_unlock(&dev->lock);
        if (st != BP_OK)
            return st;
        fn = f->fn;
    }
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    CUresult r = dev->backend->api.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0],
                                                  block[1], block[2], smem, s->handle, params,
                                                  NULL);
    if (r != CUDA_SUCCESS) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: launching %s (cuLaunchKernel)", what, kernel_names[k]);
        return cu_fail(dev, r, msg);
    }
    return cu_stream_enqueued(s);
}
