/* xpu: loading the Level Zero loader (xpu_api.h). */
#include "xpu_api.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h> /* secure_getenv (_GNU_SOURCE) */
#include <string.h>

#define XPU_DEFAULT_LOADER "libze_loader.so.1"

int xpu_api_load(xpu_api *api, char *reason, size_t reason_size) {
    memset(api, 0, sizeof *api);
    /* BP_XPU_LIBRARY picks the loader (a path or a soname); read with secure_getenv, like
     * the core's other library-choosing variables, so a setuid program never loads a
     * library named by its caller's environment. A value that does not load is the
     * reason for no devices: never a silent fallback to the default loader. */
    const char *choice = secure_getenv("BP_XPU_LIBRARY");
    bool chosen = choice && choice[0];
    const char *name = chosen ? choice : XPU_DEFAULT_LOADER;
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        if (chosen)
            snprintf(reason, reason_size, "BP_XPU_LIBRARY=%s cannot be loaded: %s", choice,
                     why ? why : "dlopen failed");
        else
            snprintf(reason, reason_size,
                     "%s not found (install the Level Zero loader, e.g. Debian's libze1, or "
                     "name one with BP_XPU_LIBRARY): %s",
                     XPU_DEFAULT_LOADER, why ? why : "dlopen failed");
        return -1;
    }
    const char *missing = NULL;
#define XPU_API_LOOKUP(fn)                                                                 \
    if (!missing) {                                                                        \
        void *sym = dlsym(lib, #fn);                                                       \
        if (sym)                                                                           \
            api->fn = (__typeof__(api->fn))sym;                                            \
        else                                                                               \
            missing = #fn;                                                                 \
    }
    XPU_ZE_INIT_FUNCTIONS(XPU_API_LOOKUP)
    XPU_ZE_FUNCTIONS(XPU_API_LOOKUP)
#undef XPU_API_LOOKUP
    if (missing) {
        snprintf(reason, reason_size,
                 "the Level Zero loader %s lacks %s (a loader of Level Zero 1.2 or newer is "
                 "needed)",
                 name, missing);
        dlclose(lib);
        memset(api, 0, sizeof *api);
        return -1;
    }
    /* Kept loaded until the process exits: drivers keep threads of their own, which an
     * unload could pull the code from under. */
    api->lib = lib;
    api->name = chosen ? choice : XPU_DEFAULT_LOADER;
    return 0;
}

const char *xpu_result_name(ze_result_t r) {
    switch (r) {
#define XPU_RESULT(name) case name: return #name;
    XPU_RESULT(ZE_RESULT_SUCCESS)
    XPU_RESULT(ZE_RESULT_NOT_READY)
    XPU_RESULT(ZE_RESULT_ERROR_DEVICE_LOST)
    XPU_RESULT(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    XPU_RESULT(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    XPU_RESULT(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    XPU_RESULT(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    XPU_RESULT(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    XPU_RESULT(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    XPU_RESULT(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    XPU_RESULT(ZE_RESULT_ERROR_NOT_AVAILABLE)
    XPU_RESULT(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    XPU_RESULT(ZE_RESULT_ERROR_UNINITIALIZED)
    XPU_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    XPU_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    XPU_RESULT(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_SIZE)
    XPU_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    XPU_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    XPU_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    XPU_RESULT(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    XPU_RESULT(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    XPU_RESULT(ZE_RESULT_ERROR_UNKNOWN)
#undef XPU_RESULT
    default: return "ze_result_t";
    }
}
