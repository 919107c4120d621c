/* rocm: the GPU core's driver table (backends/gpu/gpu_driver.h) filled from the HIP
 * runtime (hip_api.h).
 *
 * HIP mirrors the CUDA Driver API call for call; the differences this file absorbs:
 *  - contexts: HIP's context API is deprecated, and a device's "context" here is a
 *    token naming its ordinal (device + 1): entering it is hipSetDevice when another
 *    device is current (hipGetDevice, a thread-local read in the runtime). HIP always
 *    has a current device (0 until set), so ctx_get_current never says "none";
 *  - dynamic shared memory: AMD has no opt-in; a block may take the device's whole LDS
 *    (hipDeviceAttributeMaxSharedMemoryPerBlock, 64 KiB on CDNA), so the opt-in limit is
 *    that attribute and setting a function's limit only checks the request against it;
 *  - host functions: hipLaunchHostFunc where the runtime has it, else
 *    hipStreamAddCallback with a small record per call (not while the stream captures:
 *    a callback is no graph node);
 *  - graph update: hipGraphExecUpdate's own result (topology changed...) becomes
 *    hipErrorGraphExecUpdateFailure, so the core instantiates again. */
#include "hip_driver.h"

#include "hip_api.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hip_api api;

/* ---- the library, errors ---- */

static int load(int *driver_version, char *reason, size_t size) {
    if (hip_api_load(&api, reason, size) != 0)
        return -1;
    *driver_version = api.runtime_version;
    return 0;
}

static gpu_result_class classify(gpu_result r) {
    switch (r) {
    case hipSuccess: return GPU_RESULT_OK;
    case hipErrorNotReady: return GPU_RESULT_NOT_READY;
    case hipErrorOutOfMemory: return GPU_RESULT_OUT_OF_MEMORY;
    default: return GPU_RESULT_ERROR;
    }
}

static const char *result_text(gpu_result r, char *buf, size_t size) {
    return hip_result_text(&api, (hipError_t)r, buf, size);
}

/* ---- devices: a hipDevice_t is the ordinal ---- */

static gpu_result device_count(int *count) {
    return api.hipGetDeviceCount(count);
}

static gpu_result device_get(int *device, int ordinal) {
    *device = ordinal;
    return hipSuccess;
}

static gpu_result device_name(char *buf, int size, int device) {
    return api.hipDeviceGetName(buf, size, device);
}

static gpu_result device_total_mem(size_t *bytes, int device) {
    return api.hipDeviceTotalMem(bytes, device);
}

static gpu_result device_attribute(int *value, gpu_device_attribute attribute, int device) {
    hipDeviceAttribute_t a;
    switch (attribute) {
    case GPU_ATTR_MULTIPROCESSORS: a = hipDeviceAttributeMultiprocessorCount; break;
    case GPU_ATTR_MAX_SHARED_OPTIN: a = hipDeviceAttributeMaxSharedMemoryPerBlock; break;
    case GPU_ATTR_WARP_SIZE: a = hipDeviceAttributeWarpSize; break;
    default: return hipErrorInvalidValue;
    }
    return api.hipDeviceGetAttribute(value, a, device);
}

/* gcnArchName without its feature suffixes: "gfx90a:sramecc+:xnack-" is "gfx90a". The
 * properties are read into a larger buffer: a runtime that writes a bigger struct than
 * HIP 5's must not write past ours. */
static gpu_result device_arch(char *buf, size_t size, int device) {
    union {
        hipDeviceProp_t props;
        char bytes[sizeof(hipDeviceProp_t) + 4096];
    } *p = calloc(1, sizeof *p);
    if (!p)
        return hipErrorOutOfMemory;
    hipError_t r = api.get_device_properties(&p->props, device);
    if (r == hipSuccess) {
        char *arch = p->props.gcnArchName;
        arch[sizeof p->props.gcnArchName - 1] = '\0';
        arch[strcspn(arch, ":")] = '\0';
        snprintf(buf, size, "%s", arch);
    }
    free(p);
    return r;
}

static gpu_result device_can_access_peer(int *can, int device, int peer_device) {
    return api.hipDeviceCanAccessPeer(can, device, peer_device);
}

/* ---- contexts: a token per device (see above) ---- */

static void *device_token(int device) {
    return (void *)(uintptr_t)(device + 1);
}

static int token_device(void *ctx) {
    return (int)((uintptr_t)ctx - 1);
}

static gpu_result primary_ctx_retain(void **ctx, int device) {
    int count = 0;
    hipError_t r = api.hipGetDeviceCount(&count);
    if (r != hipSuccess)
        return r;
    if (device < 0 || device >= count)
        return hipErrorInvalidDevice;
    *ctx = device_token(device);
    return hipSuccess;
}

static gpu_result primary_ctx_release(int device) {
    (void)device;
    return hipSuccess;
}

static gpu_result ctx_enter(void *ctx) {
    if (!ctx)
        return hipSuccess; /* HIP has no "no current device" */
    int cur = -1;
    hipError_t r = api.hipGetDevice(&cur);
    if (r == hipSuccess && cur == token_device(ctx))
        return hipSuccess;
    return api.hipSetDevice(token_device(ctx));
}

static gpu_result ctx_get_current(void **ctx) {
    int cur = -1;
    hipError_t r = api.hipGetDevice(&cur);
    *ctx = r == hipSuccess && cur >= 0 ? device_token(cur) : NULL;
    return r;
}

static gpu_result ctx_synchronize(void) {
    return api.hipDeviceSynchronize();
}

static gpu_result ctx_stream_priority_range(int *least, int *greatest) {
    return api.hipDeviceGetStreamPriorityRange(least, greatest);
}

static gpu_result ctx_enable_peer_access(void *peer_ctx) {
    hipError_t r = api.hipDeviceEnablePeerAccess(token_device(peer_ctx), 0);
    return r == hipErrorPeerAccessAlreadyEnabled ? hipSuccess : r;
}

/* ---- memory ---- */

static void *address(uint64_t ptr) {
    return (void *)(uintptr_t)ptr;
}

static gpu_result mem_get_info(size_t *free_bytes, size_t *total_bytes) {
    return api.hipMemGetInfo(free_bytes, total_bytes);
}

static gpu_result mem_alloc(uint64_t *ptr, size_t size) {
    void *p = NULL;
    hipError_t r = api.hipMalloc(&p, size);
    *ptr = r == hipSuccess ? (uint64_t)(uintptr_t)p : 0;
    return r;
}

static gpu_result mem_free(uint64_t ptr) {
    return api.hipFree(address(ptr));
}

static gpu_result mem_host_alloc(void **ptr, size_t size) {
    return api.hipHostMalloc(ptr, size, hipHostMallocPortable);
}

static gpu_result mem_host_free(void *ptr) {
    return api.hipHostFree(ptr);
}

static gpu_result memcpy_async(uint64_t dst, uint64_t src, size_t size, void *stream) {
    return api.hipMemcpyAsync(address(dst), address(src), size, hipMemcpyDefault, stream);
}

static gpu_result memcpy_peer_async(uint64_t dst, int dst_device, void *dst_ctx, uint64_t src,
                                    int src_device, void *src_ctx, size_t size, void *stream) {
    (void)dst_ctx;
    (void)src_ctx;
    return api.hipMemcpyPeerAsync(address(dst), dst_device, address(src), src_device, size,
                                  stream);
}

static gpu_result memset_d8_async(uint64_t dst, unsigned char value, size_t size, void *stream) {
    return api.hipMemsetD8Async(address(dst), value, size, stream);
}

/* ---- streams ---- */

static gpu_result stream_create(void **stream, int priority) {
    hipStream_t s = NULL;
    hipError_t r = api.hipStreamCreateWithPriority(&s, hipStreamNonBlocking, priority);
    *stream = s;
    return r;
}

static gpu_result stream_destroy(void *stream) {
    return api.hipStreamDestroy(stream);
}

static gpu_result stream_synchronize(void *stream) {
    return api.hipStreamSynchronize(stream);
}

static gpu_result stream_query(void *stream) {
    return api.hipStreamQuery(stream);
}

static gpu_result stream_wait_event(void *stream, void *event) {
    return api.hipStreamWaitEvent(stream, event, 0);
}

/* A host function through hipStreamAddCallback: the record it runs from. */
typedef struct host_call {
    void (*fn)(void *arg);
    void *arg;
} host_call;

static void run_host_call(hipStream_t stream, hipError_t status, void *data) {
    (void)stream;
    (void)status;
    host_call call = *(host_call *)data;
    free(data);
    call.fn(call.arg);
}

static gpu_result launch_host_func(void *stream, void (*fn)(void *arg), void *arg) {
    if (api.launch_host_func)
        return api.launch_host_func(stream, fn, arg);
    hipStreamCaptureStatus capture = hipStreamCaptureStatusNone;
    hipError_t r = api.hipStreamIsCapturing(stream, &capture);
    if (r != hipSuccess)
        return r;
    if (capture != hipStreamCaptureStatusNone)
        return hipErrorStreamCaptureUnsupported;
    host_call *call = malloc(sizeof *call);
    if (!call)
        return hipErrorOutOfMemory;
    call->fn = fn;
    call->arg = arg;
    r = api.hipStreamAddCallback(stream, run_host_call, call, 0);
    if (r != hipSuccess)
        free(call);
    return r;
}

/* ---- events ---- */

static gpu_result event_create(void **event, int timing) {
    hipEvent_t e = NULL;
    hipError_t r = api.hipEventCreateWithFlags(&e, timing ? hipEventDefault : hipEventDisableTiming);
    *event = e;
    return r;
}

static gpu_result event_destroy(void *event) {
    return api.hipEventDestroy(event);
}

static gpu_result event_record(void *event, void *stream) {
    return api.hipEventRecord(event, stream);
}

static gpu_result event_query(void *event) {
    return api.hipEventQuery(event);
}

static gpu_result event_synchronize(void *event) {
    return api.hipEventSynchronize(event);
}

static gpu_result event_elapsed_ms(float *ms, void *start, void *end) {
    return api.hipEventElapsedTime(ms, start, end);
}

/* ---- modules and kernels ---- */

static gpu_result module_load(void **module, const void *image) {
    hipModule_t m = NULL;
    hipError_t r = api.hipModuleLoadData(&m, image);
    *module = m;
    return r;
}

static gpu_result module_unload(void *module) {
    return api.hipModuleUnload(module);
}

static gpu_result module_get_function(void **function, void *module, const char *name) {
    hipFunction_t f = NULL;
    hipError_t r = api.hipModuleGetFunction(&f, module, name);
    *function = f;
    return r;
}

/* No opt-in on AMD (see above): the request is checked against the current device's
 * LDS per block. */
static gpu_result function_set_max_dynamic_smem(void *function, int bytes) {
    (void)function;
    int device = 0, limit = 0;
    hipError_t r = api.hipGetDevice(&device);
    if (r == hipSuccess)
        r = api.hipDeviceGetAttribute(&limit, hipDeviceAttributeMaxSharedMemoryPerBlock, device);
    if (r != hipSuccess)
        return r;
    return bytes <= limit ? hipSuccess : hipErrorInvalidValue;
}

static gpu_result launch(void *ctx, void *function, const unsigned grid[3], const unsigned block[3],
                         unsigned smem, void *stream, void **params) {
    hipError_t r = ctx_enter(ctx);
    if (r != hipSuccess)
        return r;
    return api.hipModuleLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1],
                                     block[2], smem, stream, params, NULL);
}

/* ---- graphs ---- */

static gpu_result stream_begin_capture(void *stream) {
    return api.hipStreamBeginCapture(stream, hipStreamCaptureModeRelaxed);
}

static gpu_result stream_end_capture(void *stream, void **graph) {
    hipGraph_t g = NULL;
    hipError_t r = api.hipStreamEndCapture(stream, &g);
    *graph = g;
    return r;
}

static gpu_result graph_node_count(void *graph, size_t *count) {
    return api.hipGraphGetNodes(graph, NULL, count);
}

static gpu_result graph_instantiate(void **exec, void *graph) {
    hipGraphExec_t e = NULL;
    hipError_t r = api.hipGraphInstantiateWithFlags(&e, graph, 0);
    *exec = e;
    return r;
}

static gpu_result graph_exec_update(void *exec, void *graph) {
    hipGraphNode_t failed = NULL;
    hipGraphExecUpdateResult result = hipGraphExecUpdateSuccess;
    hipError_t r = api.hipGraphExecUpdate(exec, graph, &failed, &result);
    if (r == hipSuccess && result != hipGraphExecUpdateSuccess)
        r = hipErrorGraphExecUpdateFailure;
    return r;
}

static gpu_result graph_launch(void *exec, void *stream) {
    return api.hipGraphLaunch(exec, stream);
}

static gpu_result graph_exec_destroy(void *exec) {
    return api.hipGraphExecDestroy(exec);
}

static gpu_result graph_destroy(void *graph) {
    return api.hipGraphDestroy(graph);
}

const gpu_driver hip_driver = {
    .platform = GPU_PLATFORM_AMD,
    .device_type = "rocm",
    .vendor = "HIP",
    .multiprocessor = "CUs",
    .kernel_compiler = "hipcc",
    .load = load,
    .classify = classify,
    .result_text = result_text,
#define HIP_DRIVER_MEMBER(member) .member = member,
    GPU_DRIVER_CALLS(HIP_DRIVER_MEMBER)
#undef HIP_DRIVER_MEMBER
    .name = {
        .device_count = "hipGetDeviceCount",
        .device_get = "(the ordinal is the device)",
        .device_name = "hipDeviceGetName",
        .device_total_mem = "hipDeviceTotalMem",
        .device_attribute = "hipDeviceGetAttribute",
        .device_arch = "hipGetDeviceProperties",
        .device_can_access_peer = "hipDeviceCanAccessPeer",
        .primary_ctx_retain = "hipGetDeviceCount",
        .primary_ctx_release = "(nothing)",
        .ctx_enter = "hipSetDevice",
        .ctx_get_current = "hipGetDevice",
        .ctx_synchronize = "hipDeviceSynchronize",
        .ctx_stream_priority_range = "hipDeviceGetStreamPriorityRange",
        .ctx_enable_peer_access = "hipDeviceEnablePeerAccess",
        .mem_get_info = "hipMemGetInfo",
        .mem_alloc = "hipMalloc",
        .mem_free = "hipFree",
        .mem_host_alloc = "hipHostMalloc",
        .mem_host_free = "hipHostFree",
        .memcpy_async = "hipMemcpyAsync",
        .memcpy_peer_async = "hipMemcpyPeerAsync",
        .memset_d8_async = "hipMemsetD8Async",
        .stream_create = "hipStreamCreateWithPriority",
        .stream_destroy = "hipStreamDestroy",
        .stream_synchronize = "hipStreamSynchronize",
        .stream_query = "hipStreamQuery",
        .stream_wait_event = "hipStreamWaitEvent",
        .launch_host_func = "hipLaunchHostFunc/hipStreamAddCallback",
        .event_create = "hipEventCreateWithFlags",
        .event_destroy = "hipEventDestroy",
        .event_record = "hipEventRecord",
        .event_query = "hipEventQuery",
        .event_synchronize = "hipEventSynchronize",
        .event_elapsed_ms = "hipEventElapsedTime",
        .module_load = "hipModuleLoadData",
        .module_unload = "hipModuleUnload",
        .module_get_function = "hipModuleGetFunction",
        .function_set_max_dynamic_smem = "hipDeviceGetAttribute(MaxSharedMemoryPerBlock)",
        .launch = "hipModuleLaunchKernel",
        .stream_begin_capture = "hipStreamBeginCapture",
        .stream_end_capture = "hipStreamEndCapture",
        .graph_node_count = "hipGraphGetNodes",
        .graph_instantiate = "hipGraphInstantiateWithFlags",
        .graph_exec_update = "hipGraphExecUpdate",
        .graph_launch = "hipGraphLaunch",
        .graph_exec_destroy = "hipGraphExecDestroy",
        .graph_destroy = "hipGraphDestroy",
    },
    .gemm = NULL,
};
