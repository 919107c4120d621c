/* xpu: the Level Zero functions the plugin calls, as X-macro lists (no includes, so the
 * test suite's fake loader, tests/xpu/fake_ze_loader.c, can define every one of them).
 *
 * XPU_ZE_INIT_FUNCTIONS: what init calls before it knows of a GPU (zeInit, then the
 * drivers, their API versions and their devices). XPU_ZE_FUNCTIONS: everything else.
 * Every function of both lists must be exported by the loader: one missing is a clear
 * reason for 0 devices, found before any of them is called. */
#ifndef BP_XPU_ZE_FUNCTIONS_H
#define BP_XPU_ZE_FUNCTIONS_H

#define XPU_ZE_INIT_FUNCTIONS(X)                                                           \
    X(zeInit)                                                                              \
    X(zeDriverGet)                                                                         \
    X(zeDriverGetApiVersion)                                                               \
    X(zeDeviceGet)

#define XPU_ZE_FUNCTIONS(X)                                                                \
    X(zeDeviceGetSubDevices)                                                               \
    X(zeDeviceGetProperties)                                                               \
    X(zeDeviceGetComputeProperties)                                                        \
    X(zeDeviceGetModuleProperties)                                                         \
    X(zeDeviceGetMemoryProperties)                                                         \
    X(zeDeviceGetCommandQueueGroupProperties)                                              \
    X(zeDeviceCanAccessPeer)                                                               \
    X(zeContextCreate)                                                                     \
    X(zeContextDestroy)                                                                    \
    X(zeCommandListCreateImmediate)                                                        \
    X(zeCommandListDestroy)                                                                \
    X(zeCommandListAppendBarrier)                                                          \
    X(zeCommandListAppendMemoryCopy)                                                       \
    X(zeCommandListAppendMemoryFill)                                                       \
    X(zeCommandListAppendWriteGlobalTimestamp)                                             \
    X(zeCommandListAppendLaunchKernel)                                                     \
    X(zeEventPoolCreate)                                                                   \
    X(zeEventPoolDestroy)                                                                  \
    X(zeEventCreate)                                                                       \
    X(zeEventDestroy)                                                                      \
    X(zeEventHostSynchronize)                                                              \
    X(zeEventQueryStatus)                                                                  \
    X(zeEventHostReset)                                                                    \
    X(zeEventHostSignal)                                                                   \
    X(zeMemAllocDevice)                                                                    \
    X(zeMemAllocHost)                                                                      \
    X(zeMemFree)                                                                           \
    X(zeMemGetAllocProperties)                                                             \
    X(zeModuleCreate)                                                                      \
    X(zeModuleDestroy)                                                                     \
    X(zeModuleBuildLogGetString)                                                           \
    X(zeModuleBuildLogDestroy)                                                             \
    X(zeKernelCreate)                                                                      \
    X(zeKernelDestroy)                                                                     \
    X(zeKernelSetGroupSize)                                                                \
    X(zeKernelSetArgumentValue)

#endif
