/* cuda: loading the driver (cu_api.h). */
#include "cu_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuGetProcAddress as drivers from CUDA 12.0 export it. */
typedef CUresult (*get_proc_fn)(const char *symbol, void **pfn, int cuda_version,
                                cuuint64_t flags, CUdriverProcAddressQueryResult *status);

/* The CUDA version whose function `symbol` has the prototype <cuda.h> declares under
 * that name. cuGetProcAddress returns the newest version of a function up to the
 * version asked for; <cuda.h> renames a function whose signature changed to its new
 * name (cuMemAlloc is cuMemAlloc_v2), so CUDA_VERSION is right for almost all. The
 * exceptions are the functions that gained a new signature without a rename:
 * CUDA 13.0's cuCtxSynchronize takes the context to synchronize
 * (PFN_cuCtxSynchronize_v13000) while <cuda.h>'s cuCtxSynchronize keeps the old
 * prototype (the new one is cuCtxSynchronize_v2). Asking for it at CUDA_VERSION gave
 * the new function, which then read whatever was in its argument register as the
 * context: on a two-GPU host, the first synchronize after a context switch failed
 * with CUDA_ERROR_CONTEXT_IS_DESTROYED (found by bp-conformance's device group). */
static int prototype_version(const char *symbol) {
    static const struct {
        const char *symbol;
        int version;
    } older[] = {
        {"cuCtxSynchronize", 2000},
    };
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++)
        if (strcmp(symbol, older[i].symbol) == 0)
            return older[i].version;
    return CUDA_VERSION;
}

int cu_api_load(cu_api *api, char *reason, size_t size) {
    memset(api, 0, sizeof *api);
    const char *path = secure_getenv("BP_CUDA_LIBRARY");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(reason, size, "the CUDA driver is not installed: %s", why ? why : path);
        return -1;
    }
    get_proc_fn get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!get_proc) {
        snprintf(reason, size,
                 "%s has no cuGetProcAddress_v2: the driver is older than CUDA 12.0", path);
        return -1; /* the library stays loaded: see cu_api.h */
    }
#define CU_API_LOAD(name)                                                                     \
    {                                                                                         \
        void *fn = NULL;                                                                      \
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;          \
        CUresult r = get_proc(#name, &fn, prototype_version(#name),                           \
                              CU_GET_PROC_ADDRESS_DEFAULT, &found);                           \
        if (r != CUDA_SUCCESS || !fn) {                                                       \
            snprintf(reason, size,                                                            \
                     "%s: cuGetProcAddress(\"%s\") found no function (result %d, status %d)", \
                     path, #name, (int)r, (int)found);                                        \
            return -1;                                                                        \
        }                                                                                     \
        memcpy(&api->name, &fn, sizeof fn);                                                   \
    }
    CU_API_FUNCTIONS(CU_API_LOAD)
#undef CU_API_LOAD
    CUresult r = api->cuInit(0);
    if (r != CUDA_SUCCESS) {
        char text[160];
        snprintf(reason, size, "cuInit failed: %s", cu_result_text(api, r, text, sizeof text));
        return -1;
    }
    if (api->cuDriverGetVersion(&api->driver_version) != CUDA_SUCCESS)
        api->driver_version = 0;
    return 0;
}

const char *cu_result_text(const cu_api *api, CUresult r, char *buf, size_t size) {
    const char *name = NULL, *text = NULL;
    if (api->cuGetErrorName && api->cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    if (api->cuGetErrorString && api->cuGetErrorString(r, &text) != CUDA_SUCCESS)
        text = NULL;
    if (name && text)
        snprintf(buf, size, "%s: %s", name, text);
    else
        snprintf(buf, size, "CUresult %d", (int)r);
    return buf;
}
