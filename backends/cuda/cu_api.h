/* cuda: the CUDA Driver API, loaded at run time.
 *
 * libcuda.so.1 (or $BP_CUDA_LIBRARY) is opened with dlopen; only cuGetProcAddress is
 * looked up with dlsym, and every other function through it, asking for the version
 * of the function whose prototype is the one <cuda.h> (the header this plugin was
 * compiled with) declares: CUDA_VERSION, or an older version for a function that
 * changed its signature without a rename (cu_api.c, prototype_version). The plugin therefore never links libcuda and loads on machines
 * without a driver, where it reports zero devices and why.
 *
 * The table's members have the prototypes of <cuda.h>: `api->cuMemAlloc(...)` calls
 * what cuMemAlloc would (the header's _v2 renames apply to the member names too). */
#ifndef BP_CU_API_H
#define BP_CU_API_H

#include <stddef.h>
#include <cuda.h>

/* Every driver function the plugin calls. */
#define CU_API_FUNCTIONS(X)                                                                   \
    X(cuInit)                                                                                 \
    X(cuDriverGetVersion)                                                                     \
    X(cuGetErrorName)                                                                         \
    X(cuGetErrorString)                                                                       \
    X(cuDeviceGetCount)                                                                       \
    X(cuDeviceGet)                                                                            \
    X(cuDeviceGetName)                                                                        \
    X(cuDeviceTotalMem)                                                                       \
    X(cuDeviceGetAttribute)                                                                   \
    X(cuDeviceCanAccessPeer)                                                                  \
    X(cuDevicePrimaryCtxRetain)                                                               \
    X(cuDevicePrimaryCtxRelease)                                                              \
    X(cuCtxSetCurrent)                                                                        \
    X(cuCtxGetCurrent)                                                                        \
    X(cuCtxSynchronize)                                                                       \
    X(cuCtxGetStreamPriorityRange)                                                            \
    X(cuCtxEnablePeerAccess)                                                                  \
    X(cuMemGetInfo)                                                                           \
    X(cuMemAlloc)                                                                             \
    X(cuMemFree)                                                                              \
    X(cuMemHostAlloc)                                                                         \
    X(cuMemFreeHost)                                                                          \
    X(cuMemcpyAsync)                                                                          \
    X(cuMemcpyPeerAsync)                                                                      \
    X(cuMemsetD8Async)                                                                        \
    X(cuStreamCreateWithPriority)                                                             \
    X(cuStreamDestroy)                                                                        \
    X(cuStreamSynchronize)                                                                    \
    X(cuStreamQuery)                                                                          \
    X(cuStreamWaitEvent)                                                                      \
    X(cuLaunchHostFunc)                                                                       \
    X(cuStreamBeginCapture)                                                                   \
    X(cuStreamEndCapture)                                                                     \
    X(cuStreamIsCapturing)                                                                    \
    X(cuEventCreate)                                                                          \
    X(cuEventDestroy)                                                                         \
    X(cuEventRecord)                                                                          \
    X(cuEventQuery)                                                                           \
    X(cuEventSynchronize)                                                                     \
    X(cuEventElapsedTime)                                                                     \
    X(cuModuleLoadData)                                                                       \
    X(cuModuleUnload)                                                                         \
    X(cuModuleGetFunction)                                                                    \
    X(cuFuncSetAttribute)                                                                     \
    X(cuLaunchKernel)                                                                         \
    X(cuGraphGetNodes)                                                                        \
    X(cuGraphInstantiateWithFlags)                                                            \
    X(cuGraphExecUpdate)                                                                      \
    X(cuGraphLaunch)                                                                          \
    X(cuGraphExecDestroy)                                                                     \
    X(cuGraphDestroy)

typedef struct cu_api {
#define CU_API_MEMBER(name) __typeof__(&name) name;
    CU_API_FUNCTIONS(CU_API_MEMBER)
#undef CU_API_MEMBER
    int driver_version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
} cu_api;

/* Loads the driver and every function, and calls cuInit(0). On failure returns -1
 * with the reason in `reason` ("libcuda.so.1: cannot open shared object file", "cuInit:
 * CUDA_ERROR_NO_DEVICE"); the library stays loaded for the life of the process once
 * opened (unloading a driver under live threads is unsafe). */
int cu_api_load(cu_api *api, char *reason, size_t size);

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for `r`, into buf. */
const char *cu_result_text(const cu_api *api, CUresult r, char *buf, size_t size);

#endif
