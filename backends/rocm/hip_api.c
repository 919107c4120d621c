/* rocm: loading the HIP runtime (hip_api.h). */
#include "hip_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The files tried when BP_ROCM_LIBRARY is unset: the development link (any installed
 * ROCm), then HIP 5's runtime, which Debian ships without the link. */
static const char *const default_paths[] = {"libamdhip64.so", "libamdhip64.so.5"};

/* Opens BP_ROCM_LIBRARY, or the first default that opens. On failure the reason is
 * the first file's error (the others are named). */
static void *open_runtime(const char **out_path, char *reason, size_t size) {
    const char *named = secure_getenv("BP_ROCM_LIBRARY");
    size_t count = sizeof default_paths / sizeof default_paths[0];
    const char *const *paths = default_paths;
    if (named && *named) {
        paths = &named;
        count = 1;
    }
    for (size_t i = 0; i < count; i++) {
        void *lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            *out_path = paths[i];
            return lib;
        }
        if (i == 0) {
            const char *why = dlerror();
            snprintf(reason, size, "the HIP runtime is not installed: %s", why ? why : paths[0]);
        }
    }
    for (size_t i = 1; i < count; i++) {
        size_t len = strlen(reason);
        snprintf(reason + len, size - len, "%s%s", i == 1 ? " (nor " : ", ", paths[i]);
        if (i == count - 1) {
            len = strlen(reason);
            snprintf(reason + len, size - len, ")");
        }
    }
    return NULL;
}

int hip_api_load(hip_api *api, char *reason, size_t size) {
    memset(api, 0, sizeof *api);
    void *lib = open_runtime(&api->path, reason, size);
    if (!lib)
        return -1;
#define HIP_API_LOAD(name)                                                                   \
    {                                                                                        \
        void *fn = dlsym(lib, #name);                                                        \
        if (!fn) {                                                                           \
            snprintf(reason, size, "%s has no %s: not a HIP runtime, or one older than 5.2", \
                     api->path, #name);                                                      \
            return -1; /* the library stays loaded: see hip_api.h */                         \
        }                                                                                    \
        memcpy(&api->name, &fn, sizeof fn);                                                  \
    }
    HIP_API_FUNCTIONS(HIP_API_LOAD)
#undef HIP_API_LOAD
    void *props = dlsym(lib, "hipGetDevicePropertiesR0000");
    if (!props)
        props = dlsym(lib, "hipGetDeviceProperties");
    if (!props) {
        snprintf(reason, size, "%s has no hipGetDeviceProperties: not a HIP runtime",
                 api->path);
        return -1;
    }
    memcpy(&api->get_device_properties, &props, sizeof props);
    void *host_func = dlsym(lib, "hipLaunchHostFunc");
    memcpy(&api->launch_host_func, &host_func, sizeof host_func);
    hipError_t r = api->hipInit(0);
    if (r != hipSuccess) {
        char text[160];
        snprintf(reason, size, "hipInit failed: %s", hip_result_text(api, r, text, sizeof text));
        /* Without the kernel driver's device file the runtime finds no GPU: say so. */
        if (access("/dev/kfd", R_OK | W_OK) != 0) {
            const char *why = strerror(errno);
            size_t len = strlen(reason);
            snprintf(reason + len, size - len,
                     " (/dev/kfd, the ROCm kernel driver's device: %s)", why);
        }
        return -1;
    }
    if (api->hipRuntimeGetVersion(&api->runtime_version) != hipSuccess)
        api->runtime_version = 0;
    return 0;
}

const char *hip_result_text(const hip_api *api, hipError_t r, char *buf, size_t size) {
    const char *name = api->hipGetErrorName ? api->hipGetErrorName(r) : NULL;
    const char *text = api->hipGetErrorString ? api->hipGetErrorString(r) : NULL;
    if (name && text && strcmp(name, text) != 0)
        snprintf(buf, size, "%s: %s", name, text);
    else if (name)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "hipError_t %d", (int)r);
    return buf;
}
