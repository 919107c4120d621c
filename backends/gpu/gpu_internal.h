/* gpu: the GPU backend core's internal state, shared by its files (docs/backends/cuda.md,
 * "The GPU core"). Written once against the driver table (gpu_driver.h), compiled
 * without any vendor header, linked into each GPU plugin (cuda, rocm).
 *
 *   gpu_backend.c     init (the driver, the devices, BP_GPU_PORTABLE_KERNELS), the device
 *                     vtable, the current-device guard, errors, kernel registration
 *   gpu_stream.c      streams and events, and what they do while a region captures
 *   gpu_memory.c      alloc/free, pinned host memory, copies (peer too), memsets
 *   gpu_module.c      the embedded images: one module per image and device, kernel
 *                     lookup, launches
 *   gpu_region.c      regions captured into graphs, and the cache of their executables
 *   gpu_ops_*.c       the kernels the host calls, by op family
 *   kernels/<family>.cu  device code, compiled by the vendor's compiler into the images */
#ifndef BP_GPU_INTERNAL_H
#define BP_GPU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include "gpu_core.h"
#include "gpu_driver.h"
#include "gpu_images.h"

typedef struct gpu_backend gpu_backend;
typedef struct gpu_device gpu_device;
typedef struct gpu_event gpu_event;
typedef struct gpu_region gpu_region;

/* ---- kernels: every kernel of kernels/<family>.cu, by id ----
 * Each family lists its extern "C" kernel names in its .def file: GPU_KERNEL(name) for
 * a portable kernel, GPU_KERNEL_NV(name) for an NVIDIA-only fast path (absent from AMD
 * images, never launched while fast paths are off). The ids index a device's function
 * table. */
typedef enum gpu_kernel_id {
#define GPU_KERNEL(name) GPU_K_##name,
#define GPU_KERNEL_NV(name) GPU_K_##name,
#include "kernels.def"
#undef GPU_KERNEL
#undef GPU_KERNEL_NV
    GPU_K_COUNT
} gpu_kernel_id;

/* What a device is, found at init. */
typedef struct gpu_device_info {
    int handle;               /* the driver's device */
    char name[128];
    char arch[32];            /* "sm_90", "gfx90a" */
    uint64_t total_mem;
    int multiprocessors;
    int warp_size;            /* lanes of a warp or wavefront: launches sized by lanes */
    int max_smem_optin;       /* dynamic shared memory a block may opt in to */
    int prio_least, prio_greatest;
} gpu_device_info;

/* A kernel of the device's modules: looked up at first use, its dynamic shared memory
 * limit raised at first launch that needs more than 48 KiB. */
typedef struct gpu_function {
    void *fn;
    int smem_limit;           /* bytes the function may take dynamically (0: 48 KiB) */
} gpu_function;

struct gpu_device {
    gpu_backend *backend;
    const gpu_driver *drv;
    int index;
    bool fast_paths;          /* NVIDIA-only kernels and the gemm provider may run */
    gpu_device_info info;
    void *ctx;                /* the primary context, retained at open */
    void **modules;           /* the embedded images, loaded at open (none without kernels) */
    pthread_mutex_t lock;     /* guards functions' lookups, gemm_state, graph cache */
    gpu_function functions[GPU_K_COUNT];
    void *gemm_state;         /* the gemm provider's, made at first matmul */
    struct gpu_graph_cache *graphs; /* executables of earlier regions (gpu_region.c) */
    uint64_t peer_enabled;    /* bit j: peer access to device j enabled */
};

struct gpu_stream {
    gpu_device *device;
    void *handle;
    gpu_region *capturing;    /* the region capturing this stream, or NULL */
    void *workspace;          /* scratch for kernels on this stream (gpu_stream_workspace) */
    size_t workspace_size;
};

struct gpu_event {
    gpu_device *device;
    void *handle;
    int timing;
    gpu_region *captured_in;  /* last recorded inside this region's capture, or NULL */
    gpu_region *waited_in;    /* a region's launch will wait for it (recorded outside) */
};

struct gpu_backend {
    const bp_host_services *host;
    const gpu_driver *drv;
    int driver_version;
    bool portable;            /* BP_GPU_PORTABLE_KERNELS=1 */
    int ndevices;
    gpu_device *devices;
    char reason[512];         /* why there are no devices */
};

/* The host services, for kernels' errors (set at init). */
extern const bp_host_services *gpu_host;

/* ---- errors (gpu_backend.c) ---- */

/* set_error for a failed driver call: "<type>:<index>: <what>: <result text>", `what`
 * formatted from fmt; out-of-memory results become BP_ERR_OUT_OF_MEMORY, others
 * BP_ERR_BACKEND. */
bp_status gpu_fail(const gpu_device *dev, gpu_result r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* set_error(status, "<type>:<index>: <message>"). */
bp_status gpu_error(const gpu_device *dev, bp_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Makes dev's context current on the calling thread (cheap when it already is). */
bp_status gpu_enter(const gpu_device *dev);

/* ---- gpu_stream.c ---- */

bp_status gpu_device_synchronize(gpu_device *dev);
/* After work was enqueued on s: while a region captures s, it may launch what it has
 * captured so far (gpu_region.c). gpu_enqueued is gpu_stream_enqueued (gpu_core.h),
 * inline for the core's own hot paths. */
bp_status gpu_region_enqueued(gpu_region *r);
static inline bp_status gpu_enqueued(gpu_stream *s) {
    return s->capturing ? gpu_region_enqueued(s->capturing) : BP_OK;
}

/* ---- gpu_module.c ---- */

/* The embedded images (gpu_images.h; none when built without a device compiler). */
static inline bool gpu_have_kernels(void) { return gpu_image_count > 0; }
/* Loads the modules into dev's context (device open). */
bp_status gpu_module_load(gpu_device *dev);
void gpu_module_unload(gpu_device *dev);
/* Enqueues kernel `k` on s: grid and block dimensions, dynamic shared memory bytes and
 * the kernel's parameters (an array of pointers to each). `what` names the op in
 * errors. */
bp_status gpu_launch(gpu_stream *s, gpu_kernel_id k, const unsigned grid[3],
                     const unsigned block[3], unsigned smem, void **params, const char *what);

/* ---- gpu_region.c ---- */

/* Stream and event hooks while s captures (gpu_stream.c calls them). */
void gpu_region_note_record(gpu_region *r, gpu_event *e);
/* An event recorded in the capture is being destroyed. */
void gpu_region_forget_event(gpu_region *r, gpu_event *e);
/* A wait on an event recorded outside the capture: the launch waits for it instead. */
bp_status gpu_region_defer_wait(gpu_region *r, gpu_event *e);
void gpu_graph_cache_destroy(gpu_device *dev);

/* ---- the gemm provider (gpu_ops_matmul.c) ---- */

/* Runs g through the driver's gemm provider when fast paths are on and it takes the
 * problem; BP_ERR_UNSUPPORTED (without set_error) when there is none or it declines. */
bp_status gpu_provider_gemm(gpu_stream *s, const gpu_gemm *g);
void gpu_provider_close(gpu_device *dev);

/* ---- kernel registration (gpu_ops_*.c) ---- */

/* One registration: op, dtype mask and kernel; a family's table ends with op NULL. */
typedef struct gpu_op_entry {
    const char *op;
    bp_kernel_fn fn;
    uint32_t dtypes;
} gpu_op_entry;
extern const gpu_op_entry gpu_ops_elementwise[];
extern const gpu_op_entry gpu_ops_matmul[];
extern const gpu_op_entry gpu_ops_sdpa[];

#endif
