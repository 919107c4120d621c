/* opencl: the plugin's internal state, shared by its files.
 *
 *   ocl_backend.c   descriptor, init (platform and device discovery), devices, guard
 *   ocl_memory.c    the fake device address space, alloc/free, copies and memsets
 *   ocl_stream.c    streams (in-order profiling queues) and events (markers)
 *   ocl_program.c   building programs from the embedded sources, memory and disk caches
 *   ocl_spirv.c     programs from the embedded SPIR-V modules (BP_OPENCL_PROGRAM=spirv)
 *   ocl_launch.c    what the shared kernels (backends/clc) need of a device: buffer
 *                   translation, kernels, launches, fills and copies */
#ifndef BP_OCL_INTERNAL_H
#define BP_OCL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include "clc.h"
#include "gpukit.h"
#include "ocl_api.h"

#define OCL_NAME "opencl"
#define OCL_VERSION "0.1.0"

typedef struct ocl_backend ocl_backend;
typedef struct ocl_device ocl_device;
typedef struct ocl_stream ocl_stream;
typedef struct ocl_program ocl_program;

/* The live allocations of a device: ranges of the fake device address space whose
 * handles are their cl_mem (ocl_memory.c). */
typedef struct ocl_memmap {
    gpukit_memmap map;
    pthread_mutex_t addr_lock;
    uint64_t next_addr; /* where the next allocation goes: addresses are never reused */
} ocl_memmap;

/* A kernel object: clSetKernelArg is not thread-safe on one cl_kernel, so launches
 * hold `lock` from the first argument to the enqueue. */
typedef struct ocl_kernel {
    cl_kernel kernel;
    pthread_mutex_t lock;
} ocl_kernel;

/* What an OpenCL device is, found at init. */
typedef struct ocl_device_info {
    cl_platform_id platform;
    cl_device_id id;
    char description[128];      /* "<platform name>: <device name>" */
    char name[128];
    char driver[128];           /* CL_DRIVER_VERSION */
    char version[128];          /* CL_DEVICE_VERSION */
    uint64_t global_mem;
    uint64_t max_alloc;
    size_t max_wg;              /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    uint64_t local_mem;
    bool fp64;
    bool fp16;
    bool il_program_khr;        /* cl_khr_il_program */
    bool profiling;
} ocl_device_info;

struct ocl_device {
    ocl_backend *backend;
    int index;
    ocl_device_info info;
    cl_context context;        /* created at open */
    clc_device clc;            /* the kernels' view of the device (clc.h); its ops are
                                * ocl_launch.c's */
    ocl_memmap mem;
    bp_plugin_list streams;    /* every live stream (its link), for device synchronize */
    pthread_mutex_t programs_lock;
    ocl_program *programs;     /* built programs (ocl_program.c) */
    /* BP_OPENCL_PROGRAM=spirv (ocl_spirv.c): how programs are made from SPIR-V, or NULL
     * with why in spirv_unusable */
    ocl_create_program_with_il_fn create_il;
    char spirv_unusable[320];
};

struct ocl_stream {
    ocl_device *device;
    cl_command_queue queue;
    pthread_mutex_t lock;      /* held across an enqueue and the update of `last` */
    cl_event last;             /* the latest command enqueued, or NULL */
    bp_plugin_link link;       /* in the device's streams */
    gpukit_host_thread *host;  /* runs its host functions; made at the first (ocl_host_func.c) */
};

typedef struct ocl_event {
    ocl_device *device;
    pthread_mutex_t lock;
    cl_event marker;           /* the latest record's marker, or NULL */
    int timing;
} ocl_event;

struct ocl_backend {
    const bp_host_services *host;
    ocl_api api;
    bool api_loaded;
    bool spirv;                /* BP_OPENCL_PROGRAM=spirv: programs from SPIR-V */
    bool hide_fp64;            /* BP_OPENCL_FP64=0: every device as one without fp64 */
    int ndevices;
    ocl_device *devices;
    char reason[512];          /* why there are no devices */
};

/* ---- ocl_memory.c ---- */

extern const bp_memory_vtable ocl_memory_vtable;
void ocl_memmap_init(ocl_memmap *m);
/* Releases every allocation still live (device close). */
void ocl_memmap_clear(ocl_device *dev);
/* The buffer and byte offset of device address `ptr` (which must lie inside a live
 * allocation, or at its end when `size` is 0); `what` names it in the error. */
bp_status ocl_translate(ocl_device *dev, const void *ptr, size_t size, cl_mem *out_mem,
                        size_t *out_offset, const char *what);

/* ---- ocl_stream.c ---- */

extern const bp_stream_vtable ocl_stream_vtable;
extern const bp_event_vtable ocl_event_vtable;
/* Waits for every stream of the device. */
bp_status ocl_device_synchronize(ocl_device *dev);
/* After an enqueue on s (s->lock held): `ev` (owned, may be NULL) becomes the stream's
 * latest command, and the queue is flushed so that the work starts. */
void ocl_stream_push_locked(ocl_stream *s, cl_event ev);

/* ---- ocl_host_func.c ---- */

/* The stream vtable's enqueue_host: fn(arg) runs on the stream's host thread after a
 * marker of the earlier work completes; a barrier on a user event, which the thread
 * completes after fn, holds the later commands of the in-order queue. */
bp_status ocl_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg);
/* stream_destroy (after synchronize: no host function pending): stops the thread. */
void ocl_host_thread_stop(ocl_stream *s);

/* ---- errors ---- */

/* set_error for a failed OpenCL call: "opencl:<index>: <what>: <CL name> (<code>)". */
bp_status ocl_fail(ocl_device *dev, cl_int err, const char *what);

/* ---- ocl_program.c ---- */

/* The kernel `name` of program `id` built for `variant` on dev: built (or loaded from
 * the disk cache) at first use. */
bp_status ocl_get_kernel(ocl_device *dev, clc_program_id id, int variant, const char *name,
                         ocl_kernel **out);
/* Frees the device's programs (device close). */
void ocl_programs_destroy(ocl_device *dev);

/* ---- ocl_spirv.c ---- */

/* Reads BP_OPENCL_PROGRAM into be->spirv: unset, empty or "source" (OpenCL C), or
 * "spirv". Anything else: false, with the reason in be->reason (then no device). */
bool ocl_program_mode_read(ocl_backend *be);
/* In SPIR-V mode, at init: dev's kernels take clc.h's fixed RWG and TS, and how it
 * creates programs from SPIR-V is found, or why it cannot. */
void ocl_spirv_device_init(ocl_device *dev);
/* The SPIR-V module of (id, variant) for dev; a clear error when the device takes no
 * SPIR-V (dev->create_il is NULL) or there is no module for the variant. */
bp_status ocl_spirv_module(ocl_device *dev, clc_program_id id, int variant,
                           const clc_module **out);

/* ---- ocl_launch.c ---- */

/* The operations the shared kernels (clc.h) run on an OpenCL device. */
extern const clc_device_ops ocl_clc_ops;
/* The clc_device of an ocl_stream. */
clc_device *ocl_stream_clc_device(void *stream);

#endif
