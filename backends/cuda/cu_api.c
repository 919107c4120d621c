/* cuda: loading the driver (cu_api.h). */
#include "cu_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuGetProcAddress as drivers from CUDA 12.0 export it. */
typedef CUresult (*get_proc_fn)(const char *symbol, void **pfn, int cuda_version,
                                cuuint64_t flags, CUdriverProcAddressQueryResult *status);

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
        CUresult r = get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found); \
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
