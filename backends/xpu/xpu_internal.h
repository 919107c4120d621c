/* xpu: the plugin's internal state, shared by its files.
 *
 *   xpu_backend.c   descriptor, init (zeInit, drivers, devices), device table, guard
 *   xpu_family.c    the Intel GPU family of a PCI device id (for ahead-of-time binaries)
 *   xpu_events.c    Level Zero events: pools per driver, reference-counted slots
 *   xpu_stream.c    streams (immediate command lists, one event per command) and events
 *   xpu_host_func.c host functions on streams (a host thread per stream)
 *   xpu_memory.c    device and host USM, copies, fills
 *   xpu_module.c    modules from the embedded SPIR-V (or native binaries), kernels
 *   xpu_launch.c    what the shared kernels (backends/clc) need of a device
 *
 * The allocation map and the host-function thread are gpukit's (backends/gpukit).
 *
 * Locks, outermost first: a device's modules_lock; a stream's lock, then a kernel's
 * lock; a driver's event lock and a device's memory map lock are innermost. */
#ifndef BP_XPU_INTERNAL_H
#define BP_XPU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include "clc.h"
#include "gpukit.h"
#include "xpu_api.h"

#define XPU_NAME "xpu"
#define XPU_VERSION "0.1.0"

typedef struct xpu_backend xpu_backend;
typedef struct xpu_driver xpu_driver;
typedef struct xpu_device xpu_device;
typedef struct xpu_stream xpu_stream;
typedef struct xpu_module xpu_module;
typedef struct xpu_event_block xpu_event_block;

/* ---- Level Zero events (xpu_events.c) ---- */

/* One event of a driver's pools. Reference-counted: back in the free list (reset on the
 * host) when the last holder lets go, which each holder does only once no command that
 * the device may still run signals or waits on it. */
typedef struct xpu_zevent {
    ze_event_handle_t event;
    uint64_t *timestamp;        /* a host USM word a timing record writes */
    int refs;
    struct xpu_zevent *next_free;
} xpu_zevent;

/* The events of one driver's context (pools of host-visible events, visible to every
 * device of the context, so one device's commands may wait on another's). */
typedef struct xpu_events {
    pthread_mutex_t lock;
    xpu_event_block *blocks;
    xpu_zevent *free;
} xpu_events;

/* ---- the runtime's objects ---- */

struct xpu_driver {
    xpu_backend *backend;
    ze_driver_handle_t handle;
    ze_context_handle_t context; /* one per driver: all its devices share memory */
    xpu_events events;
};

/* What a Level Zero device is, found at init. */
typedef struct xpu_device_info {
    ze_device_handle_t handle;
    int root;                   /* index of its root device when a sub-device, else -1 */
    uint32_t subdevice_id;
    uint32_t pci_id;
    const char *family;         /* ocloc's name of the device family ("pvc"), or NULL */
    char description[128];
    char features[128];
    uint64_t total_mem;         /* sum of the device's memory modules */
    uint64_t max_alloc;
    size_t max_wg;              /* maxTotalGroupSize */
    uint64_t local_mem;         /* maxSharedLocalMemory */
    uint64_t timer_hz;          /* timerResolution (cycles per second, API 1.2) */
    uint32_t timestamp_bits;    /* timestampValidBits */
    uint32_t compute_ordinal;   /* the command queue group with compute */
    bool fp64;
    bool fp16;
    bool peer_all;              /* reaches every other device of the backend directly */
} xpu_device_info;

struct xpu_device {
    xpu_backend *backend;
    xpu_driver *driver;
    int index;
    xpu_device_info info;
    clc_device clc;             /* the kernels' view of the device; ops are xpu_launch.c's */
    gpukit_memmap mem;          /* the live allocations (gpukit.h): a device pointer the
                                 * host computed (base + offset) translates back to its
                                 * allocation for the kernels' checks and mem_info */
    bp_plugin_list streams;     /* every live stream (its link), for device synchronize */
    pthread_mutex_t modules_lock;
    xpu_module *modules;        /* built modules (xpu_module.c) */
    bool native_refused;        /* the driver refused a native binary: SPIR-V from then on
                                 * (under modules_lock) */
};

/* A command of a stream that the device may not have finished: its completion event,
 * and what must live until the command (and the next one, which waits on it) is done. */
typedef struct xpu_cmd {
    xpu_zevent *done;
    xpu_zevent *held;           /* an event the command waits on or signals, or NULL */
    void *staging;              /* host USM the command reads, or NULL */
} xpu_cmd;

struct xpu_stream {
    xpu_device *device;
    ze_command_list_handle_t list; /* immediate, asynchronous */
    pthread_mutex_t lock;       /* held across an append and the update of cmds */
    xpu_cmd *cmds;              /* in enqueue order; the last is the stream's newest */
    size_t n, cap;
    bp_plugin_link link;        /* in the device's streams */
    gpukit_host_thread *host;   /* runs its host functions; made at the first */
};

typedef struct xpu_event {
    xpu_device *device;
    pthread_mutex_t lock;
    xpu_zevent *marker;         /* the latest record's event, or NULL */
    int timing;
} xpu_event;

struct xpu_backend {
    const bp_host_services *host;
    xpu_api api;
    int ndrivers;
    xpu_driver *drivers;
    int ndevices;
    xpu_device *devices;
    char reason[512];           /* why there are no devices */
};

/* ---- errors ---- */

/* set_error for a failed Level Zero call: "xpu:<index>: <what>: <ZE name> (0x<code>)";
 * out-of-memory results become BP_ERR_OUT_OF_MEMORY. */
bp_status xpu_fail(xpu_device *dev, ze_result_t r, const char *what);

/* ---- xpu_family.c ---- */

/* ocloc's name of the family of an Intel GPU with PCI device id `pci_id` ("pvc",
 * "dg2"), or NULL when the table does not know it. */
const char *xpu_family_of(uint32_t pci_id);

/* ---- xpu_events.c ---- */

void xpu_events_init(xpu_events *ev);
/* Destroys every pool of the driver (no command may use its events any more). */
void xpu_events_destroy(xpu_driver *drv);
/* A reset event with one reference, from dev's driver's pools (a new pool when none is
 * free). */
bp_status xpu_zevent_get(xpu_device *dev, xpu_zevent **out);
void xpu_zevent_retain(xpu_driver *drv, xpu_zevent *e);
void xpu_zevent_release(xpu_driver *drv, xpu_zevent *e);

/* ---- xpu_stream.c ---- */

extern const bp_stream_vtable xpu_stream_vtable;
extern const bp_event_vtable xpu_event_vtable;

/* An append in progress on a stream: xpu_enqueue_begin takes the stream's lock, reclaims
 * finished commands and gives the new command's signal event and its wait list (the
 * stream's newest command, and `extra` when given); the caller appends one command with
 * them and hands the result to xpu_enqueue_end, which records the command (or frees
 * what it was given on failure) and unlocks. So the commands of a stream form a chain,
 * each waiting on the one before: an in-order stream on an immediate command list. */
typedef struct xpu_enqueue {
    xpu_stream *stream;
    xpu_zevent *done;
    uint32_t nwait;
    ze_event_handle_t wait[2];
} xpu_enqueue;

bp_status xpu_enqueue_begin(xpu_stream *s, xpu_zevent *extra, xpu_enqueue *e);
/* `held` (a reference the caller passes on) and `staging` (host USM) are kept until the
 * command is done, or freed at once when r is not ZE_RESULT_SUCCESS. */
bp_status xpu_enqueue_end(xpu_enqueue *e, ze_result_t r, const char *what, xpu_zevent *held,
                          void *staging);
/* Gives up the append begun (nothing was appended) and unlocks. */
void xpu_enqueue_cancel(xpu_enqueue *e);
/* Waits for every stream of the device. */
bp_status xpu_device_synchronize(xpu_device *dev);

/* ---- xpu_host_func.c ---- */

/* The stream vtable's enqueue_host: fn(arg) runs on the stream's host thread once the
 * work before it is done, and a link of the chain signalled from the host after it
 * holds the later work. */
bp_status xpu_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg);

/* ---- xpu_memory.c ---- */

extern const bp_memory_vtable xpu_memory_vtable;
/* Frees every allocation still live (device close). */
void xpu_memory_release_all(xpu_device *dev);
/* The allocation's base address and the byte offset of device address `ptr` (inside a
 * live allocation of dev, or at its end when `size` is 0); `what` names it in the error. */
bp_status xpu_translate(xpu_device *dev, const void *ptr, size_t size, void **out_base,
                        size_t *out_offset, const char *what);

/* Appends a copy of `size` bytes to s's chain; `staging` (host USM, or NULL) is freed
 * when the command is done (at once when the append fails). */
bp_status xpu_append_copy(xpu_stream *s, void *dst, const void *src, size_t size, void *staging,
                          const char *what);
/* Appends a fill of `size` bytes at ptr with the pattern (1, 2, 4 or 8 bytes). */
bp_status xpu_append_fill(xpu_stream *s, void *ptr, const void *pattern, size_t pattern_size,
                          size_t size, const char *what);

/* ---- xpu_module.c ---- */

/* A kernel object: zeKernelSetArgumentValue and zeKernelSetGroupSize change the one
 * kernel's state, so a launch holds `lock` from the group size to the append. */
typedef struct xpu_kernel {
    ze_kernel_handle_t kernel;
    pthread_mutex_t lock;
} xpu_kernel;

/* Kernel `name` of program `id` built for `variant` on dev, built at first use. */
bp_status xpu_get_kernel(xpu_device *dev, clc_program_id id, int variant, const char *name,
                         xpu_kernel **out);
/* Frees the device's modules and kernels (device close). */
void xpu_modules_destroy(xpu_device *dev);

/* ---- xpu_launch.c ---- */

extern const clc_device_ops xpu_clc_ops;
clc_device *xpu_stream_clc_device(void *stream);

#endif
