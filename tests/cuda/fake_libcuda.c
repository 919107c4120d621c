/* A stand-in for libcuda.so.1 that has no device, for the cuda plugin's error paths
 * on machines without a GPU (tests/cuda/cuda.cmake). It exports only
 * cuGetProcAddress_v2, as a real driver does for the plugin's purposes:
 *  - cuInit fails with CUDA_ERROR_NO_DEVICE (100), named by cuGetErrorName/String;
 *  - every other function returns CUDA_ERROR_NOT_SUPPORTED (801);
 *  - the function named by $FAKE_CUDA_MISSING is not found (a driver too old for it).
 * With FAKE_CUDA_DEVICES=1 it has one device instead, enough for the plugin's discovery,
 * device open and close, properties and memory info (a plugin built without kernels,
 * which loads no module): "Fake CUDA device", sm_90, 4 SMs, warp 32, 1 GiB; contexts
 * are a thread's current pointer; streams and events are handles whose work is always
 * done; memory is the host's (malloc); everything else is still not supported.
 * Self-contained: the few CUDA values it needs are written out, no <cuda.h>. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

enum { SUCCESS = 0, ERROR_OUT_OF_MEMORY = 2, ERROR_NO_DEVICE = 100, ERROR_NOT_FOUND = 500, ERROR_NOT_SUPPORTED = 801 };
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

/* ---- the device of FAKE_CUDA_DEVICES=1 ---- */

enum {
    ATTR_WARP_SIZE = 10,
    ATTR_MULTIPROCESSOR_COUNT = 16,
    ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    ATTR_COMPUTE_CAPABILITY_MINOR = 76,
    ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

static int primary_context; /* its address is the device's primary context */
static _Thread_local void *current_context;

static int device_init(unsigned flags) {
    (void)flags;
    return SUCCESS;
}

static int device_driver_version(int *version) {
    *version = 13000;
    return SUCCESS;
}

static int device_count(int *count) {
    *count = 1;
    return SUCCESS;
}

static int device_get(int *device, int ordinal) {
    *device = ordinal;
    return ordinal == 0 ? SUCCESS : ERROR_NO_DEVICE;
}

static int device_name(char *name, int size, int device) {
    (void)device;
    snprintf(name, (size_t)size, "Fake CUDA device");
    return SUCCESS;
}

static int device_total_mem(size_t *bytes, int device) {
    (void)device;
    *bytes = (size_t)1 << 30;
    return SUCCESS;
}

static int device_attribute(int *value, int attribute, int device) {
    (void)device;
    switch (attribute) {
    case ATTR_WARP_SIZE: *value = 32; return SUCCESS;
    case ATTR_MULTIPROCESSOR_COUNT: *value = 4; return SUCCESS;
    case ATTR_COMPUTE_CAPABILITY_MAJOR: *value = 9; return SUCCESS;
    case ATTR_COMPUTE_CAPABILITY_MINOR: *value = 0; return SUCCESS;
    case ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; return SUCCESS;
    default: return ERROR_NOT_SUPPORTED;
    }
}

static int ctx_retain(void **ctx, int device) {
    (void)device;
    *ctx = &primary_context;
    return SUCCESS;
}

static int ctx_release(int device) {
    (void)device;
    return SUCCESS;
}

static int ctx_get_current(void **ctx) {
    *ctx = current_context;
    return SUCCESS;
}

static int ctx_set_current(void *ctx) {
    current_context = ctx;
    return SUCCESS;
}

static int ctx_synchronize(void) {
    return SUCCESS;
}

static int ctx_priority_range(int *least, int *greatest) {
    *least = 0;
    *greatest = -5;
    return SUCCESS;
}

static int handle; /* its address is every stream and event */

static int handle_create(void **out, unsigned flags) {
    (void)flags;
    *out = &handle;
    return SUCCESS;
}

static int stream_create(void **stream, unsigned flags, int priority) {
    (void)priority;
    return handle_create(stream, flags);
}

static int handle_done(void *h) {
    (void)h;
    return SUCCESS;
}

static int event_record(void *event, void *stream) {
    (void)event;
    (void)stream;
    return SUCCESS;
}

static int mem_alloc(unsigned long long *ptr, size_t size) {
    void *p = malloc(size);
    *ptr = (unsigned long long)(size_t)p;
    return p ? SUCCESS : ERROR_OUT_OF_MEMORY;
}

static int mem_free(unsigned long long ptr) {
    free((void *)(size_t)ptr);
    return SUCCESS;
}

static int mem_get_info(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = (size_t)1 << 29;
    *total_bytes = (size_t)1 << 30;
    return SUCCESS;
}

/* The device's function `symbol`, or NULL. */
static void *device_function(const char *symbol) {
    static const struct {
        const char *symbol;
        void *fn;
    } table[] = {
        {"cuInit", (void *)device_init},
        {"cuDriverGetVersion", (void *)device_driver_version},
        {"cuDeviceGetCount", (void *)device_count},
        {"cuDeviceGet", (void *)device_get},
        {"cuDeviceGetName", (void *)device_name},
        {"cuDeviceTotalMem", (void *)device_total_mem},
        {"cuDeviceGetAttribute", (void *)device_attribute},
        {"cuDevicePrimaryCtxRetain", (void *)ctx_retain},
        {"cuDevicePrimaryCtxRelease", (void *)ctx_release},
        {"cuCtxGetCurrent", (void *)ctx_get_current},
        {"cuCtxSetCurrent", (void *)ctx_set_current},
        {"cuCtxSynchronize", (void *)ctx_synchronize},
        {"cuCtxGetStreamPriorityRange", (void *)ctx_priority_range},
        {"cuMemGetInfo", (void *)mem_get_info},
        {"cuMemAlloc", (void *)mem_alloc},
        {"cuMemFree", (void *)mem_free},
        {"cuStreamCreateWithPriority", (void *)stream_create},
        {"cuStreamDestroy", (void *)handle_done},
        {"cuStreamSynchronize", (void *)handle_done},
        {"cuStreamQuery", (void *)handle_done},
        {"cuEventCreate", (void *)handle_create},
        {"cuEventDestroy", (void *)handle_done},
        {"cuEventRecord", (void *)event_record},
        {"cuEventQuery", (void *)handle_done},
        {"cuEventSynchronize", (void *)handle_done},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(symbol, table[i].symbol) == 0)
            return table[i].fn;
    return NULL;
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
    const char *devices = getenv("FAKE_CUDA_DEVICES");
    void *device_fn = devices && strcmp(devices, "1") == 0 ? device_function(symbol) : NULL;
    if (device_fn)
        *pfn = device_fn;
    else if (strcmp(symbol, "cuInit") == 0)
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
