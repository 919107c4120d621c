/* cuda: the GPU core's driver table (gpu_driver.h) on the CUDA Driver API (cu_api.h).
 * Each member is the driver function its name says, with the core's opaque handles
 * cast to the CUDA types; what CUDA asks for besides (flags, modes) is fixed here. */
#include "cu_driver.h"

#include <stdio.h>
#include <string.h>

/* The driver's functions, loaded once per plugin init (load). */
static cu_api api;

#define DPTR(p) ((CUdeviceptr)(p))

/* ---- the library, errors ---- */

static int load(int *driver_version, char *reason, size_t size) {
    if (cu_api_load(&api, reason, size) != 0)
        return -1;
    *driver_version = api.driver_version;
    return 0;
}

static gpu_result_class classify(gpu_result r) {
    switch ((CUresult)r) {
    case CUDA_SUCCESS: return GPU_RESULT_OK;
    case CUDA_ERROR_NOT_READY: return GPU_RESULT_NOT_READY;
    case CUDA_ERROR_OUT_OF_MEMORY: return GPU_RESULT_OUT_OF_MEMORY;
    default: return GPU_RESULT_ERROR;
    }
}

static const char *result_text(gpu_result r, char *buf, size_t size) {
    return cu_result_text(&api, (CUresult)r, buf, size);
}

/* ---- devices ---- */

static gpu_result device_count(int *count) {
    return api.cuDeviceGetCount(count);
}

static gpu_result device_get(int *device, int ordinal) {
    CUdevice d = 0;
    CUresult r = api.cuDeviceGet(&d, ordinal);
    *device = (int)d;
    return r;
}

static gpu_result device_name(char *buf, int size, int device) {
    return api.cuDeviceGetName(buf, size, (CUdevice)device);
}

static gpu_result device_total_mem(size_t *bytes, int device) {
    return api.cuDeviceTotalMem(bytes, (CUdevice)device);
}

static gpu_result device_attribute(int *value, gpu_device_attribute attribute, int device) {
    static const CUdevice_attribute attributes[] = {
        [GPU_ATTR_MULTIPROCESSORS] = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        [GPU_ATTR_MAX_SHARED_OPTIN] = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        [GPU_ATTR_WARP_SIZE] = CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    };
    return api.cuDeviceGetAttribute(value, attributes[attribute], (CUdevice)device);
}

/* "sm_<major><minor>" from the compute capability. */
static gpu_result device_arch(char *buf, size_t size, int device) {
    int major = 0, minor = 0;
    CUresult r = api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                          (CUdevice)device);
    if (r == CUDA_SUCCESS)
        r = api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     (CUdevice)device);
    if (r == CUDA_SUCCESS)
        snprintf(buf, size, "sm_%d%d", major, minor);
    return r;
}

static gpu_result device_can_access_peer(int *can, int device, int peer_device) {
    return api.cuDeviceCanAccessPeer(can, (CUdevice)device, (CUdevice)peer_device);
}

/* ---- contexts ---- */

static gpu_result primary_ctx_retain(void **ctx, int device) {
    CUcontext c = NULL;
    CUresult r = api.cuDevicePrimaryCtxRetain(&c, (CUdevice)device);
    *ctx = c;
    return r;
}

static gpu_result primary_ctx_release(int device) {
    return api.cuDevicePrimaryCtxRelease((CUdevice)device);
}

static gpu_result ctx_enter(void *ctx) {
    CUcontext cur = NULL;
    if (api.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == (CUcontext)ctx)
        return CUDA_SUCCESS;
    return api.cuCtxSetCurrent((CUcontext)ctx);
}

static gpu_result ctx_get_current(void **ctx) {
    CUcontext c = NULL;
    CUresult r = api.cuCtxGetCurrent(&c);
    *ctx = c;
    return r;
}

static gpu_result ctx_synchronize(void) {
    return api.cuCtxSynchronize();
}

static gpu_result ctx_stream_priority_range(int *least, int *greatest) {
    return api.cuCtxGetStreamPriorityRange(least, greatest);
}

static gpu_result ctx_enable_peer_access(void *peer_ctx) {
    CUresult r = api.cuCtxEnablePeerAccess((CUcontext)peer_ctx, 0);
    return r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CUDA_SUCCESS : r;
}

/* ---- memory ---- */

static gpu_result mem_get_info(size_t *free_bytes, size_t *total_bytes) {
    return api.cuMemGetInfo(free_bytes, total_bytes);
}

static gpu_result mem_alloc(uint64_t *ptr, size_t size) {
    CUdeviceptr p = 0;
    CUresult r = api.cuMemAlloc(&p, size);
    *ptr = (uint64_t)p;
    return r;
}

static gpu_result mem_free(uint64_t ptr) {
    return api.cuMemFree(DPTR(ptr));
}

static gpu_result mem_host_alloc(void **ptr, size_t size) {
    return api.cuMemHostAlloc(ptr, size, CU_MEMHOSTALLOC_PORTABLE);
}

static gpu_result mem_host_free(void *ptr) {
    return api.cuMemFreeHost(ptr);
}

static gpu_result memcpy_async(uint64_t dst, uint64_t src, size_t size, void *stream) {
    return api.cuMemcpyAsync(DPTR(dst), DPTR(src), size, (CUstream)stream);
}

static gpu_result memcpy_peer_async(uint64_t dst, int dst_device, void *dst_ctx, uint64_t src,
                                    int src_device, void *src_ctx, size_t size, void *stream) {
    (void)dst_device; /* CUDA names each side by its context */
    (void)src_device;
    return api.cuMemcpyPeerAsync(DPTR(dst), (CUcontext)dst_ctx, DPTR(src), (CUcontext)src_ctx,
                                 size, (CUstream)stream);
}

static gpu_result memset_d8_async(uint64_t dst, unsigned char value, size_t size, void *stream) {
    return api.cuMemsetD8Async(DPTR(dst), value, size, (CUstream)stream);
}

/* ---- streams ---- */

static gpu_result stream_create(void **stream, int priority) {
    CUstream s = NULL;
    CUresult r = api.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority);
    *stream = s;
    return r;
}

static gpu_result stream_destroy(void *stream) {
    return api.cuStreamDestroy((CUstream)stream);
}

static gpu_result stream_synchronize(void *stream) {
    return api.cuStreamSynchronize((CUstream)stream);
}

static gpu_result stream_query(void *stream) {
    return api.cuStreamQuery((CUstream)stream);
}

static gpu_result stream_wait_event(void *stream, void *event) {
    return api.cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0);
}

/* cuLaunchHostFunc's callback type differs from fn's only in its calling convention
 * annotation (none on Linux). */
static gpu_result launch_host_func(void *stream, void (*fn)(void *arg), void *arg) {
    return api.cuLaunchHostFunc((CUstream)stream, fn, arg);
}

/* ---- events ---- */

static gpu_result event_create(void **event, int timing) {
    CUevent e = NULL;
    CUresult r = api.cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
    *event = e;
    return r;
}

static gpu_result event_destroy(void *event) {
    return api.cuEventDestroy((CUevent)event);
}

static gpu_result event_record(void *event, void *stream) {
    return api.cuEventRecord((CUevent)event, (CUstream)stream);
}

static gpu_result event_query(void *event) {
    return api.cuEventQuery((CUevent)event);
}

static gpu_result event_synchronize(void *event) {
    return api.cuEventSynchronize((CUevent)event);
}

static gpu_result event_elapsed_ms(float *ms, void *start, void *end) {
    return api.cuEventElapsedTime(ms, (CUevent)start, (CUevent)end);
}

/* ---- modules and kernels ---- */

static gpu_result module_load(void **module, const void *image) {
    CUmodule m = NULL;
    CUresult r = api.cuModuleLoadData(&m, image);
    *module = m;
    return r;
}

static gpu_result module_unload(void *module) {
    return api.cuModuleUnload((CUmodule)module);
}

static gpu_result module_get_function(void **function, void *module, const char *name) {
    CUfunction f = NULL;
    CUresult r = api.cuModuleGetFunction(&f, (CUmodule)module, name);
    *function = f;
    return r;
}

static gpu_result function_set_max_dynamic_smem(void *function, int bytes) {
    return api.cuFuncSetAttribute((CUfunction)function,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

static gpu_result launch(void *ctx, void *function, const unsigned grid[3],
                         const unsigned block[3], unsigned smem, void *stream, void **params) {
    gpu_result r = ctx_enter(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    return api.cuLaunchKernel((CUfunction)function, grid[0], grid[1], grid[2], block[0], block[1],
                              block[2], smem, (CUstream)stream, params, NULL);
}

/* ---- graphs ---- */

static gpu_result stream_begin_capture(void *stream) {
    return api.cuStreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_RELAXED);
}

static gpu_result stream_end_capture(void *stream, void **graph) {
    CUgraph g = NULL;
    CUresult r = api.cuStreamEndCapture((CUstream)stream, &g);
    *graph = g;
    return r;
}

static gpu_result graph_node_count(void *graph, size_t *count) {
    return api.cuGraphGetNodes((CUgraph)graph, NULL, count);
}

static gpu_result graph_instantiate(void **exec, void *graph) {
    CUgraphExec e = NULL;
    CUresult r = api.cuGraphInstantiateWithFlags(&e, (CUgraph)graph, 0);
    *exec = e;
    return r;
}

static gpu_result graph_exec_update(void *exec, void *graph) {
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    return api.cuGraphExecUpdate((CUgraphExec)exec, (CUgraph)graph, &info);
}

static gpu_result graph_launch(void *exec, void *stream) {
    return api.cuGraphLaunch((CUgraphExec)exec, (CUstream)stream);
}

static gpu_result graph_exec_destroy(void *exec) {
    return api.cuGraphExecDestroy((CUgraphExec)exec);
}

static gpu_result graph_destroy(void *graph) {
    return api.cuGraphDestroy((CUgraph)graph);
}

const gpu_driver cu_driver = {
    .platform = GPU_PLATFORM_NVIDIA,
    .device_type = CU_NAME,
    .vendor = "CUDA",
    .multiprocessor = "SMs",
    .kernel_compiler = "nvcc",
    .load = load,
    .classify = classify,
    .result_text = result_text,
#define CU_DRIVER_MEMBER(member) .member = member,
    GPU_DRIVER_CALLS(CU_DRIVER_MEMBER)
#undef CU_DRIVER_MEMBER
    .name =
        {
            .device_count = "cuDeviceGetCount",
            .device_get = "cuDeviceGet",
            .device_name = "cuDeviceGetName",
            .device_total_mem = "cuDeviceTotalMem",
            .device_attribute = "cuDeviceGetAttribute",
            .device_arch = "cuDeviceGetAttribute",
            .device_can_access_peer = "cuDeviceCanAccessPeer",
            .primary_ctx_retain = "cuDevicePrimaryCtxRetain",
            .primary_ctx_release = "cuDevicePrimaryCtxRelease",
            .ctx_enter = "cuCtxSetCurrent",
            .ctx_get_current = "cuCtxGetCurrent",
            .ctx_synchronize = "cuCtxSynchronize",
            .ctx_stream_priority_range = "cuCtxGetStreamPriorityRange",
            .ctx_enable_peer_access = "cuCtxEnablePeerAccess",
            .mem_get_info = "cuMemGetInfo",
            .mem_alloc = "cuMemAlloc",
            .mem_free = "cuMemFree",
            .mem_host_alloc = "cuMemHostAlloc",
            .mem_host_free = "cuMemFreeHost",
            .memcpy_async = "cuMemcpyAsync",
            .memcpy_peer_async = "cuMemcpyPeerAsync",
            .memset_d8_async = "cuMemsetD8Async",
            .stream_create = "cuStreamCreateWithPriority",
            .stream_destroy = "cuStreamDestroy",
            .stream_synchronize = "cuStreamSynchronize",
            .stream_query = "cuStreamQuery",
            .stream_wait_event = "cuStreamWaitEvent",
            .launch_host_func = "cuLaunchHostFunc",
            .event_create = "cuEventCreate",
            .event_destroy = "cuEventDestroy",
            .event_record = "cuEventRecord",
            .event_query = "cuEventQuery",
            .event_synchronize = "cuEventSynchronize",
            .event_elapsed_ms = "cuEventElapsedTime",
            .module_load = "cuModuleLoadData",
            .module_unload = "cuModuleUnload",
            .module_get_function = "cuModuleGetFunction",
            .function_set_max_dynamic_smem = "cuFuncSetAttribute",
            .launch = "cuLaunchKernel",
            .stream_begin_capture = "cuStreamBeginCapture",
            .stream_end_capture = "cuStreamEndCapture",
            .graph_node_count = "cuGraphGetNodes",
            .graph_instantiate = "cuGraphInstantiateWithFlags",
            .graph_exec_update = "cuGraphExecUpdate",
            .graph_launch = "cuGraphLaunch",
            .graph_exec_destroy = "cuGraphExecDestroy",
            .graph_destroy = "cuGraphDestroy",
        },
    .gemm = &cu_blaslt_provider,
};
