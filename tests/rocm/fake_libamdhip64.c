/* A stand-in for the HIP runtime (libamdhip64.so), for the rocm plugin's tests on
 * machines without an AMD GPU (tests/rocm/rocm.cmake). It exports every function the
 * plugin looks up (backends/rocm/hip_api.h), with the HIP 5.2 headers' prototypes.
 *
 * Its devices are host memory, and everything runs at once on the calling thread:
 * copies and memsets are memcpy/memset, a host function is called where it is
 * enqueued, streams and events are always complete. Kernels never run: a launch and a
 * stream capture fail with hipErrorNotSupported, so no test can pass by computing
 * nothing. Set by the environment, read at each call:
 *   FAKE_HIP_INIT_ERROR=<n>   hipInit returns hipError_t n (e.g. 100, hipErrorNoDevice)
 *   FAKE_HIP_DEVICES=<n>      devices (default 1; at most 4)
 *   FAKE_HIP_MEMORY_MB=<n>    each device's memory (default 64): hipMalloc beyond what is
 *                             left returns hipErrorOutOfMemory
 *   FAKE_HIP_ARCH=<name>      gcnArchName (default "gfx90a:sramecc+:xnack-"); wave 32 for
 *                             gfx1*, else 64
 *   FAKE_HIP_MODULE_ERROR=<n> hipModuleLoadData returns n (e.g. 209, hipErrorNoBinaryForGpu)
 * As built by default it has what ROCm 6 has beside HIP 5.2's functions: hipLaunchHostFunc
 * and hipGetDevicePropertiesR0000. Built with FAKE_HIP_5_2 it lacks both, as Debian's
 * HIP 5.2 runtime does; with FAKE_HIP_WITHOUT_GRAPH_EXEC_UPDATE it lacks
 * hipGraphExecUpdate (a runtime older than the plugin needs). */
#include <hip/hip_runtime_api.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_DEVICES 4
/* A call on one handle that has nothing to do: everything completed when enqueued. */
#define FAKE_DONE(name, type)                                                                \
    FAKE_EXPORT hipError_t name(type handle) {                                               \
        (void)handle;                                                                        \
        return hipSuccess;                                                                   \
    }

/* Streams and modules are distinct addresses; an event knows whether it was recorded. */
struct ihipStream_t {
    char unused;
};
struct ihipEvent_t {
    int recorded;
};
struct ihipModule_t {
    char unused;
};

static long env_number(const char *name, long fallback) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : fallback;
}

static int device_count(void) {
    long n = env_number("FAKE_HIP_DEVICES", 1);
    return n < 0 ? 0 : n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : (int)n;
}

static const char *arch(void) {
    const char *a = getenv("FAKE_HIP_ARCH");
    return a && *a ? a : "gfx90a:sramecc+:xnack-";
}

static size_t memory_bytes(void) {
    return (size_t)env_number("FAKE_HIP_MEMORY_MB", 64) << 20;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t used[FAKE_MAX_DEVICES];
static _Thread_local int current;

static int valid(int device) {
    return device >= 0 && device < device_count();
}

/* ---- init, errors, versions ---- */

FAKE_EXPORT hipError_t hipInit(unsigned int flags) {
    (void)flags;
    return (hipError_t)env_number("FAKE_HIP_INIT_ERROR", hipSuccess);
}

FAKE_EXPORT hipError_t hipRuntimeGetVersion(int *version) {
    *version = 50221153;
    return hipSuccess;
}

static const struct {
    hipError_t code;
    const char *name, *text;
} errors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorNoBinaryForGpu, "hipErrorNoBinaryForGpu",
     "no kernel image is available for execution on the device"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
};

FAKE_EXPORT const char *hipGetErrorName(hipError_t e) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return errors[i].name;
    return "hipErrorUnknown";
}

FAKE_EXPORT const char *hipGetErrorString(hipError_t e) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return errors[i].text;
    return "unknown error";
}

/* ---- devices ---- */

FAKE_EXPORT hipError_t hipGetDeviceCount(int *count) {
    *count = device_count();
    return *count ? hipSuccess : hipErrorNoDevice;
}

FAKE_EXPORT hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device) {
    if (!valid(device))
        return hipErrorInvalidDevice;
    snprintf(name, (size_t)len, "Fake AMD Instinct %d", device);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device) {
    if (!valid(device))
        return hipErrorInvalidDevice;
    *bytes = memory_bytes();
    return hipSuccess;
}

static int wave_size(void) {
    return strncmp(arch(), "gfx1", 4) == 0 ? 32 : 64;
}

FAKE_EXPORT hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr, int device) {
    if (!valid(device))
        return hipErrorInvalidDevice;
    switch (attr) {
    case hipDeviceAttributeWarpSize: *value = wave_size(); break;
    case hipDeviceAttributeMultiprocessorCount: *value = 104; break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock: *value = 65536; break;
    case hipDeviceAttributeMaxThreadsPerBlock: *value = 1024; break;
    case hipDeviceAttributeComputeCapabilityMajor: *value = 9; break;
    case hipDeviceAttributeComputeCapabilityMinor: *value = 0; break;
    default: *value = 0; break;
    }
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int device) {
    if (!valid(device))
        return hipErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    hipDeviceGetName(prop->name, (int)sizeof prop->name, device);
    snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "%s", arch());
    prop->totalGlobalMem = memory_bytes();
    prop->warpSize = wave_size();
    prop->multiProcessorCount = 104;
    prop->sharedMemPerBlock = 65536;
    prop->maxThreadsPerBlock = 1024;
    return hipSuccess;
}

#ifndef FAKE_HIP_5_2
/* ROCm 6's name for the function of HIP 5's hipDeviceProp_t. */
FAKE_EXPORT hipError_t hipGetDevicePropertiesR0000(hipDeviceProp_t *prop, int device);
FAKE_EXPORT hipError_t hipGetDevicePropertiesR0000(hipDeviceProp_t *prop, int device) {
    return hipGetDeviceProperties(prop, device);
}
#endif

FAKE_EXPORT hipError_t hipDeviceCanAccessPeer(int *can, int device, int peer) {
    if (!valid(device) || !valid(peer))
        return hipErrorInvalidDevice;
    *can = device != peer;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
    (void)flags;
    return valid(peer) ? hipSuccess : hipErrorInvalidDevice;
}

FAKE_EXPORT hipError_t hipSetDevice(int device) {
    if (!valid(device))
        return hipErrorInvalidDevice;
    current = device;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDevice(int *device) {
    *device = current;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceSynchronize(void) {
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceGetStreamPriorityRange(int *least, int *greatest) {
    *least = 0;
    *greatest = -1;
    return hipSuccess;
}

/* ---- memory: a block's size is kept in front of it ---- */

#define FAKE_HEADER 256

FAKE_EXPORT hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total) {
    pthread_mutex_lock(&lock);
    *total = memory_bytes();
    *free_bytes = *total > used[current] ? *total - used[current] : 0;
    pthread_mutex_unlock(&lock);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipMalloc(void **ptr, size_t size) {
    pthread_mutex_lock(&lock);
    int fits = used[current] <= memory_bytes() && size <= memory_bytes() - used[current];
    if (fits)
        used[current] += size;
    pthread_mutex_unlock(&lock);
    char *block = fits ? malloc(FAKE_HEADER + size) : NULL;
    if (!block) {
        if (fits) {
            pthread_mutex_lock(&lock);
            used[current] -= size;
            pthread_mutex_unlock(&lock);
        }
        *ptr = NULL;
        return hipErrorOutOfMemory;
    }
    memcpy(block, &size, sizeof size);
    memcpy(block + sizeof size, &current, sizeof current);
    *ptr = block + FAKE_HEADER;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipFree(void *ptr) {
    if (!ptr)
        return hipSuccess;
    char *block = (char *)ptr - FAKE_HEADER;
    size_t size;
    int device;
    memcpy(&size, block, sizeof size);
    memcpy(&device, block + sizeof size, sizeof device);
    pthread_mutex_lock(&lock);
    used[device] -= size;
    pthread_mutex_unlock(&lock);
    free(block);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
    (void)flags;
    *ptr = malloc(size ? size : 1);
    return *ptr ? hipSuccess : hipErrorOutOfMemory;
}

FAKE_EXPORT hipError_t hipHostFree(void *ptr) {
    free(ptr);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size,
                                      hipMemcpyKind kind, hipStream_t stream) {
    (void)kind;
    (void)stream;
    memmove(dst, src, size);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemcpyPeerAsync(void *dst, int dst_device, const void *src,
                                          int src_device, size_t size, hipStream_t stream) {
    (void)stream;
    if (!valid(dst_device) || !valid(src_device))
        return hipErrorInvalidDevice;
    memmove(dst, src, size);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t count,
                                        hipStream_t stream) {
    (void)stream;
    memset(dst, value, count);
    return hipSuccess;
}

/* ---- streams and events: always complete ---- */

FAKE_EXPORT hipError_t hipStreamCreateWithPriority(hipStream_t *stream, unsigned int flags,
                                                   int priority) {
    (void)flags;
    (void)priority;
    *stream = calloc(1, sizeof **stream);
    return *stream ? hipSuccess : hipErrorOutOfMemory;
}

FAKE_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) {
    free(stream);
    return hipSuccess;
}

FAKE_DONE(hipStreamSynchronize, hipStream_t)
FAKE_DONE(hipStreamQuery, hipStream_t)

FAKE_EXPORT hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event,
                                          unsigned int flags) {
    (void)stream;
    (void)event;
    (void)flags;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback,
                                            void *data, unsigned int flags) {
    (void)flags;
    callback(stream, hipSuccess, data);
    return hipSuccess;
}

#ifndef FAKE_HIP_5_2
FAKE_EXPORT hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void *data) {
    (void)stream;
    fn(data);
    return hipSuccess;
}
#endif

FAKE_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned flags) {
    (void)flags;
    *event = calloc(1, sizeof **event);
    return *event ? hipSuccess : hipErrorOutOfMemory;
}

FAKE_EXPORT hipError_t hipEventDestroy(hipEvent_t event) {
    free(event);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
    (void)stream;
    event->recorded = 1;
    return hipSuccess;
}

FAKE_DONE(hipEventQuery, hipEvent_t)
FAKE_DONE(hipEventSynchronize, hipEvent_t)

FAKE_EXPORT hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop) {
    (void)start;
    (void)stop;
    *ms = 0.0f;
    return hipSuccess;
}

/* ---- modules and launches: loaded, never run ---- */

FAKE_EXPORT hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
    (void)image;
    hipError_t e = (hipError_t)env_number("FAKE_HIP_MODULE_ERROR", hipSuccess);
    if (e != hipSuccess)
        return e;
    *module = calloc(1, sizeof **module);
    return *module ? hipSuccess : hipErrorOutOfMemory;
}

FAKE_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
    free(module);
    return hipSuccess;
}

/* Every kernel name resolves to this one, never launched. */
static char fake_function;

FAKE_EXPORT hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module,
                                            const char *name) {
    (void)module;
    (void)name;
    *function = (hipFunction_t)(void *)&fake_function;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy,
                                             unsigned int gz, unsigned int bx, unsigned int by,
                                             unsigned int bz, unsigned int smem,
                                             hipStream_t stream, void **params, void **extra) {
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
    (void)stream, (void)params, (void)extra;
    return hipErrorNotSupported;
}

/* ---- graphs: capture is not supported ---- */

FAKE_EXPORT hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode) {
    (void)stream;
    (void)mode;
    return hipErrorNotSupported;
}

FAKE_EXPORT hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph) {
    (void)stream;
    *graph = NULL;
    return hipErrorNotSupported;
}

FAKE_EXPORT hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus *status) {
    (void)stream;
    *status = hipStreamCaptureStatusNone;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipGraphGetNodes(hipGraph_t graph, hipGraphNode_t *nodes, size_t *count) {
    (void)graph;
    (void)nodes;
    *count = 0;
    return hipErrorNotSupported;
}

FAKE_EXPORT hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *exec, hipGraph_t graph,
                                                    unsigned long long flags) {
    (void)graph;
    (void)flags;
    *exec = NULL;
    return hipErrorNotSupported;
}

#ifndef FAKE_HIP_WITHOUT_GRAPH_EXEC_UPDATE
FAKE_EXPORT hipError_t hipGraphExecUpdate(hipGraphExec_t exec, hipGraph_t graph,
                                          hipGraphNode_t *error_node,
                                          hipGraphExecUpdateResult *result) {
    (void)exec;
    (void)graph;
    *error_node = NULL;
    *result = hipGraphExecUpdateErrorNotSupported;
    return hipErrorNotSupported;
}
#endif

FAKE_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
    (void)exec;
    (void)stream;
    return hipErrorNotSupported;
}

FAKE_DONE(hipGraphExecDestroy, hipGraphExec_t)
FAKE_DONE(hipGraphDestroy, hipGraph_t)
