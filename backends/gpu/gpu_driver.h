/* gpu: the driver table, what the GPU backend core (backends/gpu/gpu_*.c) needs from a
 * vendor's driver API, filled by the vendor's plugin (backends/cuda/cu_driver.c from
 * the CUDA Driver API, backends/rocm from the HIP runtime) and handed to the core's
 * init (gpu_core.h). The core is compiled without any vendor header: everything it
 * knows of the driver is here.
 *
 * Conventions for every function member:
 *  - it returns the driver's own result code as an int (gpu_result): CUresult,
 *    hipError_t. 0 is success on both (CUDA_SUCCESS, hipSuccess); `classify` sorts the
 *    others, `result_text` writes them for errors;
 *  - handles are opaque pointers (contexts, streams, events, modules, functions, graphs,
 *    graph executables) as the driver gives them; a device is the driver's device
 *    handle (CUdevice, hipDevice_t: an int); device memory is a uint64_t address
 *    (unified addressing: one address space with the host's);
 *  - functions that act on "the current context" act on the context that ctx_enter made
 *    current on the calling thread; the core always enters the device's context first.
 *    A vendor without contexts (HIP may use hipSetDevice) keeps in its "context" what it
 *    needs to make the device current;
 *  - every member is required (the core checks at init; a NULL one is a plugin bug that
 *    leaves the backend without devices and says which), except `gemm`.
 *
 * name.<member> is the driver function a member calls, for error messages: the core
 * writes "<device_type>:<index>: <what> (<name>): <result_text>" or similar, e.g.
 * "cuda:0: cuMemAlloc of 64 bytes: CUDA_ERROR_OUT_OF_MEMORY: out of memory". */
#ifndef BP_GPU_DRIVER_H
#define BP_GPU_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include <backplane/plugin.h>

/* The driver's result code (CUresult, hipError_t); 0 is success. */
typedef int gpu_result;
#define GPU_SUCCESS 0

/* What a result means to the core. */
typedef enum gpu_result_class {
    GPU_RESULT_OK = 0,
    GPU_RESULT_NOT_READY,     /* a query's work is not done (CUDA_ERROR_NOT_READY) */
    GPU_RESULT_OUT_OF_MEMORY, /* becomes BP_ERR_OUT_OF_MEMORY (CUDA_ERROR_OUT_OF_MEMORY) */
    GPU_RESULT_ERROR          /* anything else: BP_ERR_BACKEND */
} gpu_result_class;

typedef enum gpu_platform {
    GPU_PLATFORM_NVIDIA, /* the NVIDIA-only fast paths (GPU_KERNEL_NV kernels) may run */
    GPU_PLATFORM_AMD     /* portable kernels only (their images lack the NV kernels) */
} gpu_platform;

/* Device attributes the core reads (device_attribute); the vendor maps each to its own. */
typedef enum gpu_device_attribute {
    GPU_ATTR_MULTIPROCESSORS,       /* SMs, CUs */
    GPU_ATTR_MAX_SHARED_OPTIN,      /* bytes of dynamic shared memory (LDS) a block may opt
                                     * in to (function_set_max_dynamic_smem) */
    GPU_ATTR_WARP_SIZE              /* lanes of a warp (32) or wavefront (32 or 64) */
} gpu_device_attribute;

/* The core's stream (gpu_core.h), for the gemm provider. */
typedef struct gpu_stream gpu_stream;

/* A strided batch of matrix products C[b] = op(A[b]) op(B[b]), row-major in our terms.
 * Everything in elements; lda etc. are row strides, the batch strides may be 0. */
typedef struct gpu_gemm {
    bp_dtype dtype;             /* of A, B and C (f32, f16, bf16); accumulation is f32 */
    int trans_a, trans_b;
    int64_t m, n, k, batch;
    const void *a; int64_t lda, stride_a;
    const void *b; int64_t ldb, stride_b;
    void *c;       int64_t ldc, stride_c;
} gpu_gemm;

/* An optional vendor BLAS for matmul (cuBLASLt; hipBLASLt where present). The core uses
 * it only while fast paths are on (gpu_core.h), and falls back to its own kernels
 * whenever it declines. */
typedef struct gpu_gemm_provider {
    /* Per-device state, made at the device's first gemm (its context current, under
     * the device's lock); NULL only without host memory. A device where the provider
     * cannot run (library absent, handle creation failed) still gets a state, whose
     * gemm declines. */
    void *(*device_open)(const bp_host_services *host, int device_index);
    /* At device close (context current, the device idle). */
    void (*device_close)(void *state);
    /* Enqueues g on s (context current). BP_ERR_UNSUPPORTED without set_error when it
     * declines (the core's kernels then run); any other error after set_error. It may
     * use gpu_stream_handle, gpu_stream_workspace and must end with gpu_stream_enqueued
     * (gpu_core.h). */
    bp_status (*gemm)(void *state, gpu_stream *s, const gpu_gemm *g);
} gpu_gemm_provider;

/* The driver calls of the table, by member name: GPU_DRIVER_CALLS(X) expands X(member)
 * for each, in the order of the members below (the `name` struct and the core's check
 * that the table is complete use it). */
#define GPU_DRIVER_CALLS(X)                                                                   \
    X(device_count) X(device_get) X(device_name) X(device_total_mem) X(device_attribute)     \
    X(device_arch) X(device_can_access_peer)                                                  \
    X(primary_ctx_retain) X(primary_ctx_release) X(ctx_enter) X(ctx_get_current)              \
    X(ctx_synchronize) X(ctx_stream_priority_range) X(ctx_enable_peer_access)                 \
    X(mem_get_info) X(mem_alloc) X(mem_free) X(mem_host_alloc) X(mem_host_free)               \
    X(memcpy_async) X(memcpy_peer_async) X(memset_d8_async)                                   \
    X(stream_create) X(stream_destroy) X(stream_synchronize) X(stream_query)                  \
    X(stream_wait_event) X(launch_host_func)                                                  \
    X(event_create) X(event_destroy) X(event_record) X(event_query) X(event_synchronize)      \
    X(event_elapsed_ms)                                                                       \
    X(module_load) X(module_unload) X(module_get_function) X(function_set_max_dynamic_smem)   \
    X(launch)                                                                                 \
    X(stream_begin_capture) X(stream_end_capture) X(graph_node_count) X(graph_instantiate)    \
    X(graph_exec_update) X(graph_launch) X(graph_exec_destroy) X(graph_destroy)

/* The driver function behind each call, for messages ("cuMemAlloc", "hipMalloc"). */
typedef struct gpu_driver_names {
#define GPU_DRIVER_NAME_MEMBER(member) const char *member;
    GPU_DRIVER_CALLS(GPU_DRIVER_NAME_MEMBER)
#undef GPU_DRIVER_NAME_MEMBER
} gpu_driver_names;

typedef struct gpu_driver {
    /* ---- constants ---- */
    gpu_platform platform;
    const char *device_type;        /* "cuda", "rocm": the plugin's name, error prefixes */
    const char *vendor;             /* "CUDA", "HIP": "the CUDA driver (<v>) sees no device",
                                     * "CUDA device 0" (a device without name) */
    const char *multiprocessor;     /* "SMs", "CUs": "(sm_90, 132 SMs)" in descriptions */
    const char *kernel_compiler;    /* "nvcc", "hipcc": "built without kernels (no nvcc...)" */

    /* ---- the library, errors ---- */
    /* Opens the driver library and initializes it (cuInit). 0, with *driver_version
     * (13000 for CUDA 13.0; 0 when unknown) set; or -1 with why in `reason` ("the CUDA
     * driver is not installed: ...", "cuInit failed: CUDA_ERROR_NO_DEVICE: ..."): the
     * backend then has no devices and shows that reason. Called once per plugin init,
     * before any other member; the library stays loaded for the process's life. */
    int (*load)(int *driver_version, char *reason, size_t size);
    gpu_result_class (*classify)(gpu_result r);
    /* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for r, into buf; returns buf. */
    const char *(*result_text)(gpu_result r, char *buf, size_t size);

    /* ---- devices (need no context) ---- */
    gpu_result (*device_count)(int *count);
    gpu_result (*device_get)(int *device, int ordinal);
    gpu_result (*device_name)(char *buf, int size, int device);
    gpu_result (*device_total_mem)(size_t *bytes, int device);
    gpu_result (*device_attribute)(int *value, gpu_device_attribute attribute, int device);
    /* The device's code target: "sm_90", "gfx90a" (no feature suffixes). */
    gpu_result (*device_arch)(char *buf, size_t size, int device);
    gpu_result (*device_can_access_peer)(int *can, int device, int peer_device);

    /* ---- contexts ---- */
    /* The device's primary context, retained (one reference each call) / released. */
    gpu_result (*primary_ctx_retain)(void **ctx, int device);
    gpu_result (*primary_ctx_release)(int device);
    /* Makes ctx current on the calling thread; cheap when it already is (asks the driver,
     * never caches: user code may switch contexts). ctx may be NULL (none current). */
    gpu_result (*ctx_enter)(void *ctx);
    gpu_result (*ctx_get_current)(void **ctx); /* NULL when none is current */
    gpu_result (*ctx_synchronize)(void);       /* waits for all work of the current one */
    /* The stream priorities of the current context: numerically least, greatest. */
    gpu_result (*ctx_stream_priority_range)(int *least, int *greatest);
    /* Lets the current context reach peer_ctx's memory; success when it already can. */
    gpu_result (*ctx_enable_peer_access)(void *peer_ctx);

    /* ---- memory (current context) ---- */
    gpu_result (*mem_get_info)(size_t *free_bytes, size_t *total_bytes);
    gpu_result (*mem_alloc)(uint64_t *ptr, size_t size);
    gpu_result (*mem_free)(uint64_t ptr);
    /* Pinned host memory usable by every context (CU_MEMHOSTALLOC_PORTABLE). */
    gpu_result (*mem_host_alloc)(void **ptr, size_t size);
    gpu_result (*mem_host_free)(void *ptr);
    /* Any direction (unified addressing tells the driver which). */
    gpu_result (*memcpy_async)(uint64_t dst, uint64_t src, size_t size, void *stream);
    /* Between two devices' memory (each named by its device and primary context). */
    gpu_result (*memcpy_peer_async)(uint64_t dst, int dst_device, void *dst_ctx, uint64_t src,
                                    int src_device, void *src_ctx, size_t size, void *stream);
    gpu_result (*memset_d8_async)(uint64_t dst, unsigned char value, size_t size, void *stream);

    /* ---- streams (current context) ---- */
    /* A non-blocking stream (never waits for the legacy default stream). */
    gpu_result (*stream_create)(void **stream, int priority);
    gpu_result (*stream_destroy)(void *stream);
    gpu_result (*stream_synchronize)(void *stream);
    gpu_result (*stream_query)(void *stream);   /* success, or GPU_RESULT_NOT_READY */
    gpu_result (*stream_wait_event)(void *stream, void *event);
    gpu_result (*launch_host_func)(void *stream, void (*fn)(void *arg), void *arg);

    /* ---- events (current context) ---- */
    /* timing 0: without timing (CU_EVENT_DISABLE_TIMING), cheaper to record. */
    gpu_result (*event_create)(void **event, int timing);
    gpu_result (*event_destroy)(void *event);
    gpu_result (*event_record)(void *event, void *stream);
    gpu_result (*event_query)(void *event);     /* success, or GPU_RESULT_NOT_READY */
    gpu_result (*event_synchronize)(void *event);
    gpu_result (*event_elapsed_ms)(float *ms, void *start, void *end);

    /* ---- modules and kernels (current context) ---- */
    /* Loads an embedded image (gpu_images.h: fatbin, offload bundle). */
    gpu_result (*module_load)(void **module, const void *image);
    gpu_result (*module_unload)(void *module);
    /* The kernel `name` of the module; a result that is not success when it is absent. */
    gpu_result (*module_get_function)(void **function, void *module, const char *name);
    /* Lets the function take `bytes` of dynamic shared memory (above the default 48 KiB;
     * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). */
    gpu_result (*function_set_max_dynamic_smem)(void *function, int bytes);
    /* The hot path, one call: makes ctx current when it is not (as ctx_enter), then
     * enqueues the kernel on stream with grid and block dims, `smem` bytes of dynamic
     * shared memory and its parameters (an array of pointers to each, as
     * cuLaunchKernel's kernelParams). */
    gpu_result (*launch)(void *ctx, void *function, const unsigned grid[3],
                         const unsigned block[3], unsigned smem, void *stream, void **params);

    /* ---- graphs: stream capture (current context) ---- */
    /* Relaxed capture mode (the allocator may still allocate while streams capture). */
    gpu_result (*stream_begin_capture)(void *stream);
    /* Ends it; *graph is the captured graph (or NULL when the capture failed). */
    gpu_result (*stream_end_capture)(void *stream, void **graph);
    gpu_result (*graph_node_count)(void *graph, size_t *count);
    gpu_result (*graph_instantiate)(void **exec, void *graph);
    /* Updates exec in place with graph's parameters (same topology); not success when
     * it cannot (the core instantiates again). */
    gpu_result (*graph_exec_update)(void *exec, void *graph);
    gpu_result (*graph_launch)(void *exec, void *stream);
    gpu_result (*graph_exec_destroy)(void *exec);
    gpu_result (*graph_destroy)(void *graph);

    gpu_driver_names name;

    /* ---- optional ---- */
    const gpu_gemm_provider *gemm;  /* NULL: matmul always on the core's kernels */
} gpu_driver;

#endif
