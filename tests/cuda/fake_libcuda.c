/* A stand-in for libcuda.so.1 that has no device, for the cuda plugin's error paths
 * on machines without a GPU (tests/cuda/CMakeLists.txt). It exports only
 * cuGetProcAddress_v2, as a real driver does for the plugin's purposes:
 *  - cuInit fails with CUDA_ERROR_NO_DEVICE (100), named by cuGetErrorName/String;
 *  - every other function returns CUDA_ERROR_NOT_SUPPORTED (801);
 *  - the function named by $FAKE_CUDA_MISSING is not found (a driver too old for it).
 * Self-contained: the few CUDA values it needs are written out, no <cuda.h>. */
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

enum { SUCCESS = 0, ERROR_NO_DEVICE = 100, ERROR_NOT_FOUND = 500, ERROR_NOT_SUPPORTED = 801 };
enum { SYMBOL_FOUND = 0, SYMBOL_NOT_FOUND = 1 };

static int fake_init(unsigned flags) {
    (void)flags;
    return ERROR_NO_DEVICE;
}

static int fake_error_name(int result, const char **out) {
    *out = result == ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_NOT_SUPPORTED";
    return SUCCESS;
}

static int fake_error_string(int result, const char **out) {
    *out = result == ERROR_NO_DEVICE ? "no CUDA-capable device is detected"
                                     : "operation not supported";
    return SUCCESS;
}

static int fake_not_supported(void) {
    return ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
                                    unsigned long long flags, int *status);
FAKE_EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
                                    unsigned long long flags, int *status) {
    (void)cuda_version;
    (void)flags;
    const char *missing = getenv("FAKE_CUDA_MISSING");
    if (missing && strcmp(symbol, missing) == 0) {
        *pfn = NULL;
        if (status)
            *status = SYMBOL_NOT_FOUND;
        return ERROR_NOT_FOUND;
    }
    if (strcmp(symbol, "cuInit") == 0)
        *pfn = (void *)fake_init;
    else if (strcmp(symbol, "cuGetErrorName") == 0)
        *pfn = (void *)fake_error_name;
    else if (strcmp(symbol, "cuGetErrorString") == 0)
        *pfn = (void *)fake_error_string;
    else
        *pfn = (void *)fake_not_supported;
    if (status)
        *status = SYMBOL_FOUND;
    return SUCCESS;
}
