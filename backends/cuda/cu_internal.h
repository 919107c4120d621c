/* cuda: the plugin's internal state, shared by its files (docs/backends/cuda.md).
 *
 *   cu_api.c        loading libcuda.so.1; every function through cuGetProcAddress
 *   cu_backend.c    descriptor, init (devices), device table, the guard
 *   cu_stream.c     streams and events, and what they do while a region captures
 *   cu_memory.c     alloc/free, pinned host memory, copies (peer too), memsets
 *   cu_module.c     the embedded fatbin: one module per device, kernel lookup, launches
 *   cu_region.c     regions captured into CUDA graphs, and the cache of their executables
 *   cu_blaslt.c     cuBLASLt loaded with dlopen (matmul)
 *   cu_ops_*.c      the kernels the host calls, by op family, and their registration
 *   kernels/<family>.cu  device code, compiled by nvcc into the embedded fatbin */
#ifndef BP_CU_INTERNAL_H
#define BP_CU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include "cu_api.h"
#include "gpu_images.h"

#define CU_NAME "cuda"
#define CU_VERSION "0.1.0"
/* CU_KERNEL_TAG ("sm_80.sm_90.compute_90") is defined by the build when nvcc compiled
 * the kernels; the version string says for which targets, or that there are none. */
#ifdef CU_KERNEL_TAG
#define CU_VERSION_STRING CU_VERSION "+" CU_KERNEL_TAG
#else
#define CU_VERSION_STRING CU_VERSION "+nokernels"
#endif

typedef struct cu_backend cu_backend;
typedef struct cu_device cu_device;
typedef struct cu_stream cu_stream;
typedef struct cu_event cu_event;
typedef struct cu_region cu_region;
typedef struct cu_blaslt cu_blaslt;

/* ---- kernels: every __global__ function of kernels/<family>.cu, by id ----
 * Each kernel family lists its extern "C" kernel names in a .def file with one
 * GPU_KERNEL(name) line each; the ids index a device's CUfunction table. */
typedef enum cu_kernel_id {
#define GPU_KERNEL(name) CU_K_##name,
#include "kernels.def"
#undef GPU_KERNEL
    CU_K_COUNT
} cu_kernel_id;

/* What a device is, found at init. */
typedef struct cu_device_info {
    CUdevice handle;
    char name[128];
    uint64_t total_mem;
    int cc_major, cc_minor;
    int sm_count;
    int max_smem_optin;       /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    int prio_least, prio_greatest;
} cu_device_info;

/* A kernel of the device's module: looked up at first use, its dynamic shared memory
 * limit raised at first launch that needs more than 48 KiB. */
typedef struct cu_function {
    CUfunction fn;
    int smem_limit;           /* bytes the function may take dynamically (0: 48 KiB) */
} cu_function;

struct cu_device {
    cu_backend *backend;
    int index;
    cu_device_info info;
    CUcontext ctx;            /* the primary context, retained at open */
    CUmodule *modules;        /* the embedded fatbins, loaded at open (none without kernels) */
    pthread_mutex_t lock;     /* guards functions' lookups, blaslt, graph cache */
    cu_function functions[CU_K_COUNT];
    cu_blaslt *blaslt;        /* cuBLASLt state, created at first matmul (cu_blaslt.c) */
    struct cu_graph_cache *graphs; /* executables of earlier regions (cu_region.c) */
    uint64_t peer_enabled;    /* bit j: peer access to device j enabled */
};

struct cu_stream {
    cu_device *device;
    CUstream handle;
    cu_region *capturing;     /* the region capturing this stream, or NULL */
    void *workspace;          /* scratch for kernels on this stream (cu_stream_workspace) */
    size_t workspace_size;
};

struct cu_event {
    cu_device *device;
    CUevent handle;
    int timing;
    cu_region *captured_in;   /* last recorded inside this region's capture, or NULL */
    cu_region *waited_in;     /* a region's launch will wait for it (recorded outside) */
};

struct cu_backend {
    const bp_host_services *host;
    cu_api api;
    int ndevices;
    cu_device *devices;
    char reason[512];         /* why there are no devices */
};

/* ---- errors (cu_backend.c) ---- */

/* set_error for a failed driver call: "cuda:<index>: <what>: <CUDA_ERROR_X: text>";
 * out-of-memory results become BP_ERR_OUT_OF_MEMORY, others BP_ERR_BACKEND. */
bp_status cu_fail(cu_device *dev, CUresult r, const char *what);
/* Makes dev's context current on the calling thread (cheap when it already is). */
bp_status cu_enter(cu_device *dev);

/* ---- cu_stream.c ---- */

extern const bp_stream_vtable cu_stream_vtable;
extern const bp_event_vtable cu_event_vtable;
bp_status cu_device_synchronize(cu_device *dev);
/* Scratch device memory of at least `size` bytes owned by the stream, for work enqueued
 * on it (grown when too small, after the stream's earlier work is done; kept until the
 * stream is destroyed). Not while the stream captures a region with a smaller one. */
bp_status cu_stream_workspace(cu_stream *s, size_t size, void **out);
/* After work was enqueued on s: while a region captures s, it may launch what it has
 * captured so far (cu_region.c). */
bp_status cu_region_enqueued(cu_region *r);
static inline bp_status cu_stream_enqueued(cu_stream *s) {
    return s->capturing ? cu_region_enqueued(s->capturing) : BP_OK;
}
/* What a region gives each of its streams before capturing (cuBLASLt's workspace). */
#define CU_WORKSPACE_BYTES ((size_t)32 << 20)

/* ---- cu_memory.c ---- */

extern const bp_memory_vtable cu_memory_vtable;

/* ---- cu_module.c ---- */

/* The embedded fatbins (gpu_images.h; none when built without nvcc). */
static inline bool cu_have_kernels(void) { return gpu_image_count > 0; }
/* Loads the modules into dev's context (device open). */
bp_status cu_module_load(cu_device *dev);
void cu_module_unload(cu_device *dev);
/* Enqueues kernel `k` on s: grid and block dimensions, dynamic shared memory bytes and
 * the kernel's parameters (an array of pointers to each, as cuLaunchKernel takes).
 * `what` names the op in errors. */
bp_status cu_launch(cu_stream *s, cu_kernel_id k, const unsigned grid[3], const unsigned block[3],
                    unsigned smem, void **params, const char *what);

/* ---- cu_region.c ---- */

extern const bp_region_vtable cu_region_vtable;
/* Stream and event hooks while s captures (cu_stream.c calls them). */
void cu_region_note_record(cu_region *r, cu_event *e);
/* An event recorded in the capture is being destroyed. */
void cu_region_forget_event(cu_region *r, cu_event *e);
/* A wait on an event recorded outside the capture: the launch waits for it instead. */
bp_status cu_region_defer_wait(cu_region *r, cu_event *e);
void cu_graph_cache_destroy(cu_device *dev);

/* ---- cu_blaslt.c ---- */

/* A strided batch of matrix products C[b] = op(A[b]) op(B[b]), row-major in our terms.
 * Everything in elements; lda etc. are row strides, the batch strides may be 0. */
typedef struct cu_gemm {
    bp_dtype dtype;             /* of A, B and C; accumulation is f32 */
    int trans_a, trans_b;
    int64_t m, n, k, batch;
    const void *a; int64_t lda, stride_a;
    const void *b; int64_t ldb, stride_b;
    void *c;       int64_t ldc, stride_c;
} cu_gemm;
/* Runs g through cuBLASLt when it is loaded and takes the problem; BP_ERR_UNSUPPORTED
 * (without set_error) when it is absent or declines, so the caller falls back to its
 * own kernel. */
bp_status cu_blaslt_gemm(cu_stream *s, const cu_gemm *g);
void cu_blaslt_destroy(cu_device *dev);

/* ---- kernel registration (cu_ops_*.c) ---- */

/* One registration: op, dtype mask and kernel; a family's table ends with op NULL. */
typedef struct cu_op_entry {
    const char *op;
    bp_kernel_fn fn;
    uint32_t dtypes;
} cu_op_entry;
extern const cu_op_entry cu_ops_elementwise[];
extern const cu_op_entry cu_ops_matmul[];
extern const cu_op_entry cu_ops_sdpa[];
bp_status cu_register_kernels(const bp_host_services *host);

/* The host services, for kernels' errors (set at init). */
extern const bp_host_services *cu_host;

#endif
