/* gpu: the embedded kernels: one module per image and device, kernel lookup by id, and
 * launches. */
#include "gpu_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const kernel_names[GPU_K_COUNT] = {
#define GPU_KERNEL(name) #name,
#define GPU_KERNEL_NV(name) #name,
#include "kernels.def"
#undef GPU_KERNEL
#undef GPU_KERNEL_NV
};

/* The family (kernels/<family>.cu, hence image) of each kernel. */
static const char *const kernel_family[GPU_K_COUNT] = {
#define GPU_KERNEL(name) GPU_FAMILY,
#define GPU_KERNEL_NV(name) GPU_FAMILY,
#include "kernels.def"
#undef GPU_KERNEL
#undef GPU_KERNEL_NV
};

bp_status gpu_module_load(gpu_device *dev) {
    if (gpu_image_count == 0 || dev->modules)
        return BP_OK;
    const gpu_driver *drv = dev->drv;
    void **mods = calloc((size_t)gpu_image_count, sizeof *mods);
    if (!mods)
        return gpu_error(dev, BP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < gpu_image_count; i++) {
        gpu_result r = drv->module_load(&mods[i], gpu_images[i].data);
        if (r != GPU_SUCCESS) {
            for (int j = 0; j < i; j++)
                drv->module_unload(mods[j]);
            free(mods);
            return gpu_fail(dev, r, "cannot load the %s kernels (%s)", gpu_images[i].family,
                            drv->name.module_load);
        }
    }
    dev->modules = mods;
    return BP_OK;
}

void gpu_module_unload(gpu_device *dev) {
    if (!dev->modules)
        return;
    for (int i = 0; i < gpu_image_count; i++)
        dev->drv->module_unload(dev->modules[i]);
    free(dev->modules);
    dev->modules = NULL;
    for (int k = 0; k < GPU_K_COUNT; k++)
        dev->functions[k] = (gpu_function){0};
}

/* Finds kernel k in the module of its family. A kernel missing from the image (an
 * NVIDIA-only one in an AMD image, or one the image was built without) is an error
 * that names it. */
static bp_status find_locked(gpu_device *dev, gpu_kernel_id k, void **out) {
    for (int i = 0; i < gpu_image_count && dev->modules; i++)
        if (strcmp(gpu_images[i].family, kernel_family[k]) == 0) {
            gpu_result r = dev->drv->module_get_function(out, dev->modules[i], kernel_names[k]);
            if (r != GPU_SUCCESS || !*out)
                return gpu_fail(dev, r, "kernel %s is not in the embedded modules (%s)",
                                kernel_names[k], dev->drv->name.module_get_function);
            return BP_OK;
        }
    return gpu_error(dev, BP_ERR_BACKEND, "kernel %s is not in the embedded modules (no %s image)",
                     kernel_names[k], kernel_family[k]);
}

/* Finds kernel k in the device's modules (once) and raises its dynamic shared memory
 * limit to `smem` when that is above what it allows. Called with dev->lock held. */
static bp_status resolve_locked(gpu_device *dev, gpu_kernel_id k, unsigned smem) {
    gpu_function *f = &dev->functions[k];
    if (!f->fn) {
        void *fn = NULL;
        bp_status st = find_locked(dev, k, &fn);
        if (st != BP_OK)
            return st;
        __atomic_store_n(&f->fn, fn, __ATOMIC_RELEASE);
    }
    if (smem > 48u * 1024u && (int)smem > f->smem_limit) {
        if ((int)smem > dev->info.max_smem_optin)
            return gpu_error(dev, BP_ERR_UNSUPPORTED,
                             "kernel %s needs %u bytes of shared memory; the device allows %d",
                             kernel_names[k], smem, dev->info.max_smem_optin);
        gpu_result r = dev->drv->function_set_max_dynamic_smem(f->fn, (int)smem);
        if (r != GPU_SUCCESS)
            return gpu_fail(dev, r, "%s(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                            dev->drv->name.function_set_max_dynamic_smem);
        __atomic_store_n(&f->smem_limit, (int)smem, __ATOMIC_RELEASE);
    }
    return BP_OK;
}

bp_status gpu_launch(gpu_stream *s, gpu_kernel_id k, const unsigned grid[3],
                     const unsigned block[3], unsigned smem, void **params, const char *what) {
    gpu_device *dev = s->device;
    gpu_function *f = &dev->functions[k];
    /* The common case reads the resolved function without the lock: it is written once
     * (under the lock) before any launch uses it, and a stale NULL only takes the lock. */
    void *fn = __atomic_load_n(&f->fn, __ATOMIC_ACQUIRE);
    if (!fn || (smem > 48u * 1024u && (int)smem > __atomic_load_n(&f->smem_limit,
                                                                   __ATOMIC_ACQUIRE))) {
        pthread_mutex_lock(&dev->lock);
        bp_status st = resolve_locked(dev, k, smem);
        pthread_mutex_unlock(&dev->lock);
        if (st != BP_OK)
            return st;
        fn = f->fn;
    }
    /* One driver call: it makes the context current when it is not, and launches. */
    gpu_result r = dev->drv->launch(dev->ctx, fn, grid, block, smem, s->handle, params);
    if (r != GPU_SUCCESS)
        return gpu_fail(dev, r, "%s: launching %s (%s)", what, kernel_names[k],
                        dev->drv->name.launch);
    return gpu_enqueued(s);
}
