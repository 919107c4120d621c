/* rocm: the HIP runtime, loaded at run time.
 *
 * libamdhip64.so (then libamdhip64.so.5, or $BP_ROCM_LIBRARY) is opened with dlopen
 * and every function looked up with dlsym, so the plugin never links the runtime and
 * loads on machines without it, where it reports zero devices and why.
 *
 * The table's members have the prototypes of the HIP headers this plugin was compiled
 * with (Debian's libamdhip64-dev, HIP 5.2; host-only C with __HIP_PLATFORM_AMD__):
 * `api->hipMalloc(...)` calls what hipMalloc would.
 *
 * Device selection is by ordinal (hipSetDevice/hipGetDevice): the HIP context API
 * (hipCtx*, hipDevicePrimaryCtx*) is deprecated and emulated by the runtime on top of
 * the current device anyway. */
#ifndef BP_HIP_API_H
#define BP_HIP_API_H

#include <stddef.h>
#include <hip/hip_runtime_api.h>

/* Every runtime function the plugin calls, looked up by its own name. */
#define HIP_API_FUNCTIONS(X)                                                                 \
    X(hipInit)                                                                               \
    X(hipRuntimeGetVersion)                                                                  \
    X(hipGetErrorName)                                                                       \
    X(hipGetErrorString)                                                                     \
    X(hipGetDeviceCount)                                                                     \
    X(hipDeviceGetName)                                                                      \
    X(hipDeviceTotalMem)                                                                     \
    X(hipDeviceGetAttribute)                                                                 \
    X(hipDeviceCanAccessPeer)                                                                \
    X(hipDeviceEnablePeerAccess)                                                             \
    X(hipSetDevice)                                                                          \
    X(hipGetDevice)                                                                          \
    X(hipDeviceSynchronize)                                                                  \
    X(hipDeviceGetStreamPriorityRange)                                                       \
    X(hipMemGetInfo)                                                                         \
    X(hipMalloc)                                                                             \
    X(hipFree)                                                                               \
    X(hipHostMalloc)                                                                         \
    X(hipHostFree)                                                                           \
    X(hipMemcpyAsync)                                                                        \
    X(hipMemcpyPeerAsync)                                                                    \
    X(hipMemsetD8Async)                                                                      \
    X(hipStreamCreateWithPriority)                                                           \
    X(hipStreamDestroy)                                                                      \
    X(hipStreamSynchronize)                                                                  \
    X(hipStreamQuery)                                                                        \
    X(hipStreamWaitEvent)                                                                    \
    X(hipStreamAddCallback)                                                                  \
    X(hipStreamBeginCapture)                                                                 \
    X(hipStreamEndCapture)                                                                   \
    X(hipStreamIsCapturing)                                                                  \
    X(hipEventCreateWithFlags)                                                               \
    X(hipEventDestroy)                                                                       \
    X(hipEventRecord)                                                                        \
    X(hipEventQuery)                                                                         \
    X(hipEventSynchronize)                                                                   \
    X(hipEventElapsedTime)                                                                   \
    X(hipModuleLoadData)                                                                     \
    X(hipModuleUnload)                                                                       \
    X(hipModuleGetFunction)                                                                  \
    X(hipModuleLaunchKernel)                                                                 \
    X(hipGraphGetNodes)                                                                      \
    X(hipGraphInstantiateWithFlags)                                                          \
    X(hipGraphExecUpdate)                                                                    \
    X(hipGraphLaunch)                                                                        \
    X(hipGraphExecDestroy)                                                                   \
    X(hipGraphDestroy)

typedef struct hip_api {
#define HIP_API_MEMBER(name) __typeof__(&name) name;
    HIP_API_FUNCTIONS(HIP_API_MEMBER)
#undef HIP_API_MEMBER
    /* hipGetDeviceProperties with the HIP 5 layout of hipDeviceProp_t: ROCm 6 changed
     * the struct and exports the old function as hipGetDevicePropertiesR0000 (and,
     * for old binaries, under its old name); HIP 5 has only the old name. */
    __typeof__(&hipGetDeviceProperties) get_device_properties;
    /* hipLaunchHostFunc where the runtime exports it (HIP 5.3 on; Debian's 5.2 library
     * declares it in its headers but lacks it), else NULL: host functions then go
     * through hipStreamAddCallback (hip_driver.c). */
    __typeof__(&hipLaunchHostFunc) launch_host_func;
    const char *path;    /* the file opened */
    int runtime_version; /* hipRuntimeGetVersion: e.g. 50221153 for HIP 5.2 */
} hip_api;

/* Loads the runtime and every function, and calls hipInit(0). On failure returns -1
 * with the reason in `reason` ("libamdhip64.so.5: cannot open shared object file",
 * "hipInit failed: hipErrorNoDevice", with what is wrong with /dev/kfd when it cannot be
 * opened); the library stays loaded for the life of the
 * process once opened (unloading a runtime under live threads is unsafe). */
int hip_api_load(hip_api *api, char *reason, size_t size);

/* "hipErrorOutOfMemory: out of memory" for `r` into buf (the name alone when the
 * runtime's string repeats it). */
const char *hip_result_text(const hip_api *api, hipError_t r, char *buf, size_t size);

#endif
