/* backplane plugin ABI: the only header a backend needs.
 *
 * A backend is a shared library that exports one symbol, BP_PLUGIN_ENTRY_SYMBOL, of
 * type bp_plugin_entry_fn. The host calls it once after dlopen, at the first API call,
 * and checks the returned descriptor (ABI version, struct sizes, required functions).
 * It calls init() with its services table later, when the backend is first needed (a
 * device of its type opened, a kernel registered for it, or every device listed), on
 * the thread that needed it. Everything after that goes through the vtables below.
 *
 * Rules that keep the ABI stable:
 *  - every struct that crosses the boundary starts with uint32_t struct_size;
 *  - fields are only ever appended; a new field bumps BP_PLUGIN_ABI_MINOR;
 *  - the host accepts a plugin whose major equals BP_PLUGIN_ABI_MAJOR and whose minor
 *    is at least BP_PLUGIN_ABI_MINOR_REQUIRED; it never reads past struct_size;
 *  - handles are opaque void pointers owned by the backend; the host never looks inside.
 *
 * Threading: the host serialises init/shutdown and device open/close. Every other
 * function may be called from many threads at once, on the same or different handles,
 * except that a handle is never used after the host has destroyed it.
 *
 * Errors: a failing function returns a bp_status and describes the failure with
 * host->set_error(), which becomes the user's bp_last_error().
 */
#ifndef BACKPLANE_PLUGIN_H
#define BACKPLANE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <backplane/device.h>
#include <backplane/dtype.h>
#include <backplane/export.h>
#include <backplane/hints.h>
#include <backplane/op_attrs.h>
#include <backplane/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BP_PLUGIN_ABI_MAJOR 1
#define BP_PLUGIN_ABI_MINOR 5
/** Oldest minor version of the current major that this host can drive. */
#define BP_PLUGIN_ABI_MINOR_REQUIRED 0

/** Name of the one exported symbol, and its type. */
#define BP_PLUGIN_ENTRY_SYMBOL "bp_plugin_entry"
struct bp_plugin_descriptor;
typedef const struct bp_plugin_descriptor *(*bp_plugin_entry_fn)(void);

/** Declares the entry function with default visibility:
 *      BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) { ... } */
#define BP_PLUGIN_EXPORT __attribute__((visibility("default")))

/** What a kernel sees of a tensor: a strided view of device memory. */
#define BP_KERNEL_MAX_DIMS 8
typedef struct bp_tensor_desc {
    void *data;                          /**< device address of element [0,...,0] */
    bp_dtype dtype;
    int32_t ndim;
    int64_t shape[BP_KERNEL_MAX_DIMS];   /**< ndim entries used */
    int64_t strides[BP_KERNEL_MAX_DIMS]; /**< in elements, ndim entries used */
} bp_tensor_desc;

/** One op call as a kernel receives it. The kernel enqueues the work on `stream` and
 *  returns; everything the record points to is valid only during the call.
 *
 *  What a kernel may touch (the conformance suite checks it: group ops, canaries
 *  around every output inside its allocation):
 *  - it writes exactly the elements of each output view: not the gaps of a strided
 *    view, and not memory past the view's last element, even inside the same
 *    allocation (the allocator rounds sizes up, so such writes would otherwise go
 *    unseen, and a view may be a slice of a larger tensor the user still reads);
 *  - it reads only the elements of its input views (and of an output it writes);
 *  - an output overlaps an input only as the op library allows (ops/checks.c): for
 *    the elementwise ops add, sub, mul, div, scale, exp, tanh, silu, gelu and where,
 *    an output may be the identical view of an input (same address, dtype, shape and
 *    strides: in place), so a kernel reads an element before it writes that element
 *    and never reads it after; every other overlap, and any overlap for the other
 *    ops, is refused before dispatch (copy onto its identical view does nothing);
 *  - numerics: results stay within the bound docs/ops.md ("Numerics") gives for the
 *    op and dtype: kernels accumulate in at least f32 and round every result to the
 *    output dtype to nearest, ties to even. */
typedef struct bp_kernel_call {
    uint32_t struct_size;
    int32_t op;              /**< op id (bp_op_find) */
    const char *op_name;     /**< "add" */
    bp_dtype dtype;          /**< the dtype the kernel was chosen for */
    void *device;            /**< the backend's device handle */
    void *stream;            /**< the backend's stream handle */
    int32_t n_inputs;
    int32_t n_outputs;
    const bp_tensor_desc *const *inputs;  /**< n_inputs descriptors */
    const bp_tensor_desc *const *outputs; /**< n_outputs descriptors */
    const void *attrs;       /**< the op's attribute struct (<backplane/ops.h>), or NULL */
    void *kernel_data;       /**< the pointer given when the kernel was registered */
    /* ABI 1.4 */
    /** sizeof the attribute struct `attrs` points to (the size the op was defined with),
     *  0 when attrs is NULL: a backend that defers the launch copies this many bytes,
     *  without a table of sizes of its own. A host older than 1.4 passes a record that
     *  ends before it: read it only when BP_CALL_HAS(call, attrs_size). */
    size_t attrs_size;
} bp_kernel_call;

/** Nonzero when the kernel call record `call` has `field`: the host's record (its
 *  struct_size) reaches it. A host built against an older header passes a shorter one.
 *      size_t n = BP_CALL_HAS(call, attrs_size) ? call->attrs_size : my_fallback; */
#define BP_CALL_HAS(call, field) \
    ((call)->struct_size >= offsetof(bp_kernel_call, field) + sizeof((call)->field))

/** A kernel. Errors go through host->set_error. */
typedef bp_status (*bp_kernel_fn)(const bp_kernel_call *call);

/** Log levels for host->log. */
typedef enum bp_log_level {
    BP_LOG_ERROR = 0,
    BP_LOG_WARN = 1,
    BP_LOG_INFO = 2,
    BP_LOG_DEBUG = 3,
} bp_log_level;

/** Services the host offers a plugin; valid from init until shutdown returns. */
typedef struct bp_host_services {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    /** Sets the calling thread's bp_last_error() to a printf-style message and
     *  returns `status`, so a backend can write `return host->set_error(...)`. */
    bp_status (*set_error)(bp_status status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /** Writes "backplane[<source>] <level>: <message>" to stderr when `level` is
     *  enabled (BP_LOG=error|warn|info|debug, default warn); `source` is the
     *  plugin's name. */
    void (*log)(bp_log_level level, const char *source, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /* ABI 1.1 */
    /** Registers `fn` as the kernel of op `op_name` (see <backplane/ops.h> for the op
     *  names and their attribute structs) for dtype `dtype` on the devices of backend
     *  `backend_name` (the plugin's own name). Call it from init. Of two registrations
     *  for one (op, device type, dtype), the higher priority wins (logged); equal
     *  priority is an error. Errors: unknown op, bad dtype, unknown or unloaded backend. */
    bp_status (*register_kernel)(const char *backend_name, const char *op_name, bp_dtype dtype,
                                 bp_kernel_fn fn, void *kernel_data, int32_t priority);
    /* ABI 1.3 */
    /** BP_DTYPE_BIT() mask of the dtypes for which the host has a reference kernel of
     *  op `op_name` (0 for an unknown op or none). */
    uint32_t (*reference_dtypes)(const char *op_name);
    /** Runs the host's reference kernel of call->op for call->dtype synchronously, on
     *  the calling thread (and the host's worker pool for large work), reading and
     *  writing the descriptors' data as host memory. For a backend whose device memory
     *  is host-addressable (a simulator, a CPU-class device) that wants the host's
     *  results without writing its own kernels; call it from the backend's own worker,
     *  never from inside dispatch on the user's thread if the work must be ordered on
     *  a stream. Only call->op, dtype, n_inputs, n_outputs, inputs, outputs and attrs
     *  are read. BP_ERR_UNSUPPORTED (with set_error) when the host has no reference
     *  kernel for the pair. */
    bp_status (*run_reference_kernel)(const bp_kernel_call *call);
    /* ABI 1.4 */
    /** Number of ops the host knows (the built-in ops of <backplane/ops.h> first, then
     *  those the application defined): the op ids are 0 .. op_count() - 1. The count
     *  only grows (an application may define ops later). */
    int32_t (*op_count)(void);
    /** Name of op id `index` ("add"), or NULL when `index` is not below op_count().
     *  The string lives as long as the host. With op_count, a plugin lists the ops
     *  instead of copying their names from docs/ops.md. */
    const char *(*op_name)(int32_t index);
} bp_host_services;

/** What the backend reports about one of its devices (host fills struct_size). */
typedef struct bp_backend_device_props {
    uint32_t struct_size;
    char description[128];    /**< model name */
    uint64_t total_memory;    /**< bytes */
    uint32_t capabilities;    /**< BP_CAP_* */
    uint32_t dtypes;          /**< BP_DTYPE_BIT() mask */
    int stream_priority_least;
    int stream_priority_greatest;
    /* ABI 1.5 */
    /** The device's instruction-set or hardware features as space-separated words
     *  ("asimd fp16 dotprod sve sve_bits=256"), NUL-terminated; "" for none. A host
     *  older than 1.5 passes a struct that ends before it: bp_props_copy_out then leaves
     *  it out. */
    char features[128];
} bp_backend_device_props;

/** Devices. `backend` is the state init() returned; `device` a handle from open(). */
typedef struct bp_device_vtable {
    uint32_t struct_size;
    /** Number of devices; never fails (0 when the runtime or hardware is absent). */
    int (*count)(void *backend);
    /** Why count() is 0 ("libcuda.so.1 not found"), or NULL. Optional. */
    const char *(*unavailable_reason)(void *backend);
    bp_status (*get_props)(void *backend, int index, bp_backend_device_props *props);
    bp_status (*open)(void *backend, int index, void **out_device);
    void (*close)(void *device);
    /** Current free and total bytes: *out_free <= *out_total, always (conformance:
     *  device.mem_info_free_within_total). *out_total is the memory of the device, the
     *  total_memory that get_props reports (the host's allocator refuses requests
     *  above props.total_memory); the cpu, hpu and opencl backends report exactly that
     *  value, the cuda backend the driver's cuMemGetInfo total. */
    bp_status (*mem_info)(void *device, uint64_t *out_free, uint64_t *out_total);
    /** Waits for all work on all streams of the device. */
    bp_status (*synchronize)(void *device);
} bp_device_vtable;

/** Streams: in-order queues. */
typedef struct bp_stream_vtable {
    uint32_t struct_size;
    bp_status (*create)(void *device, int priority, void **out_stream);
    /** Called only after synchronize() returned; frees the stream. */
    void (*destroy)(void *stream);
    bp_status (*synchronize)(void *stream);
    /** BP_OK when idle, BP_ERR_NOT_READY when not (without set_error): NOT_READY while
     *  any work enqueued on the stream is not complete, including work it waits on
     *  through wait_event on other streams (conformance: streams). */
    bp_status (*query)(void *stream);
    /** Later work on `stream` waits for `event` (recorded, on the same backend).
     *  Enqueues the dependency and returns at once: it never blocks the host thread
     *  waiting for the event (conformance: streams). */
    bp_status (*wait_event)(void *stream, void *event);
    /* ABI 1.1 */
    /** Enqueues a host function: fn(arg) runs on a host thread once the work enqueued
     *  before it has completed, and later work waits for it. Optional, except for a
     *  backend whose devices are host memory (the core's reference cpu kernels run
     *  through it). */
    bp_status (*enqueue_host)(void *stream, void (*fn)(void *arg), void *arg);
} bp_stream_vtable;

/** Events: markers in streams. The host tracks whether an event was ever recorded;
 *  the backend only sees events that were. */
typedef struct bp_event_vtable {
    uint32_t struct_size;
    /** `timing`: nonzero when the event must take timestamps. */
    bp_status (*create)(void *device, int timing, void **out_event);
    void (*destroy)(void *event);
    /** Marks the point of `stream` after the work enqueued so far; the event is
     *  reached (completes) when all that work has completed. */
    bp_status (*record)(void *event, void *stream);
    /** BP_OK when complete, BP_ERR_NOT_READY when not (without set_error): NOT_READY
     *  while any work enqueued on the stream before the record is not complete,
     *  including work that stream waits on through wait_event on other streams
     *  (conformance: events). */
    bp_status (*query)(void *event);
    bp_status (*synchronize)(void *event);
    /** Both events complete and timed. *out_ms is the time in milliseconds (a float,
     *  fractions included) between the moments the stream *reached* `start` and `end`
     *  (all work enqueued before each record had completed), never between the calls
     *  of record(); start was reached before end, so it is >= 0 (conformance: events,
     *  against host wall time for a known amount of device work). Optional when no
     *  device has BP_CAP_TIMED_EVENTS. */
    bp_status (*elapsed_ms)(void *start, void *end, float *out_ms);
} bp_event_vtable;

/** Direction of a copy within one backend. */
typedef enum bp_copy_kind {
    BP_COPY_HOST_TO_DEVICE = 0,
    BP_COPY_DEVICE_TO_HOST = 1,
    BP_COPY_DEVICE_TO_DEVICE = 2, /**< both pointers on the stream's device */
} bp_copy_kind;

/** Raw memory. The host's caching allocator sits above alloc/free: a backend hands
 *  out large segments and need not cache. Device pointers are opaque addresses the
 *  backend understands; the host does arithmetic on them (offsets into a segment),
 *  so a backend must accept base+offset for any offset inside an allocation. */
typedef struct bp_memory_vtable {
    uint32_t struct_size;
    /** Allocates at least 256-byte aligned device memory; BP_ERR_OUT_OF_MEMORY when
     *  the device has none left (the host then frees its cache and retries). */
    bp_status (*alloc)(void *device, size_t size, void **out_ptr);
    /** Frees memory from alloc; the host only does so when no work uses it. */
    void (*free)(void *device, void *ptr);
    /** Host memory for fast transfers; optional (the host falls back to aligned
     *  malloc) unless the device reports BP_CAP_PINNED_HOST. */
    bp_status (*host_alloc)(void *device, size_t size, void **out_ptr);
    void (*host_free)(void *device, void *ptr);
    /** Enqueues a copy on `stream` (of the device the device pointers belong to).
     *  Like every enqueue (copy_async, copy_peer_async, memset_async, kernels): ordered
     *  behind all earlier work on the stream, whatever its size and whatever the host
     *  memory (pageable or from host_alloc); the host keeps the buffers alive and
     *  unchanged until then (conformance: memory, streams). With pageable host memory
     *  the call may block until the stream has run the copy (CUDA's does); with
     *  host_alloc memory and device-to-device it must not. The host never passes
     *  overlapping source and destination ranges: the public bp_memory_copy_async
     *  copies overlapping ranges of one device as memmove does, and the core stages
     *  such a copy itself (<backplane/memory.h>). */
    bp_status (*copy_async)(void *stream, void *dst, const void *src, size_t size,
                            bp_copy_kind kind);
    /** Enqueues a copy from `src` on `src_device` to `dst` on `dst_device`, two devices
     *  of this backend, on `stream` of either, ordered as copy_async; the ranges never
     *  overlap. Optional: required with BP_CAP_PEER_COPY (conformance: memory, peer
     *  copies of sizes crossing chunk boundaries when the device reports it). */
    bp_status (*copy_peer_async)(void *stream, void *dst, void *dst_device, const void *src,
                                 void *src_device, size_t size);
    /** Enqueues setting `size` bytes at `ptr` to the byte `value`, ordered as
     *  copy_async; it writes exactly those bytes (conformance: memory). */
    bp_status (*memset_async)(void *stream, void *ptr, int value, size_t size);
} bp_memory_vtable;

/** Current-device hooks: the host keeps the current device and stream of each thread
 *  and calls set_current whenever a guard makes one of this backend's devices current
 *  on a thread: at the guard's begin, and again at a guard's end that restores one of
 *  them (a CUDA backend makes its context current). The table is optional; when
 *  given, set_current is required. */
typedef struct bp_guard_vtable {
    uint32_t struct_size;
    bp_status (*set_current)(void *device);
    /* ABI 1.2 */
    /** Stores in *out_index the index (as given to open) of the device that the backend
     *  itself holds current on the calling thread: its own notion, e.g. the device of
     *  the CUDA context current on the thread, whoever made it current. Returns
     *  BP_ERR_NOT_FOUND (without set_error) when it has none on this thread. Per thread:
     *  the calling thread's own current device, which a set_current on another thread
     *  never changes (conformance: guards). Optional: what bp_device_backend_current
     *  reports. */
    bp_status (*get_current)(void *backend, int *out_index);
} bp_guard_vtable;

/** A region the core is about to issue to a backend that takes whole regions (ABI 1.3).
 *  The core has already recorded and ordered the region (docs/hints.md): `order` and
 *  `width` say how; it then issues the nodes' kernels, event records, stream waits,
 *  allocations and frees in that order, exactly as it would without capture, on
 *  `streams` (streams[0] is the region's stream, the others are extra streams of the
 *  same device for bfs widths). */
typedef struct bp_region_info {
    uint32_t struct_size;
    int32_t order;           /**< the bp_schedule_order the core used (never UNSET) */
    int32_t width;           /**< chains the schedule runs at once (1 for strict/dfs) */
    int32_t nodes;           /**< kernel launches that will follow */
    int32_t has_group_id;    /**< 1 when the `group_id` hint is set */
    int64_t group_id;        /**< the `group_id` hint */
    int32_t nstreams;
    void *const *streams;    /**< nstreams backend stream handles */
} bp_region_info;

/** Whole-region execution, like CUDA stream capture: between begin and end, what the
 *  core issues on info->streams is captured, not run; end compiles the captured work
 *  (the backend's own scheduler over its engines, honouring info->order) and launches
 *  it on streams[0]. After end, later work on streams[0] sees all of the region, and
 *  every event recorded during the capture completes when the region's work does.
 *  Waits on events recorded outside the capture must be honoured by the launch.
 *  Required (all three) when a device reports BP_CAP_REGIONS. */
typedef struct bp_region_vtable {
    uint32_t struct_size;
    /** Starts capturing on info->streams of `device` (info valid during the call). */
    bp_status (*begin)(void *device, const bp_region_info *info, void **out_region);
    /** Stops capturing, compiles and launches; frees the region handle, even on error. */
    bp_status (*end)(void *region);
    /** Stops capturing and discards what was captured (the core hit an error). */
    void (*abort)(void *region);
} bp_region_vtable;

/** What bp_plugin_entry returns: static data that lives as long as the library. */
typedef struct bp_plugin_descriptor {
    uint32_t struct_size;       /**< sizeof(bp_plugin_descriptor) the plugin was built with */
    uint32_t abi_major;         /**< BP_PLUGIN_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;         /**< BP_PLUGIN_ABI_MINOR the plugin was built with */
    const char *name;           /**< device type, [a-z][a-z0-9_]*, at most 31 chars */
    const char *const *aliases; /**< NULL-terminated other names for the type, or NULL */
    const char *version;        /**< the backend's own version string */
    int32_t priority;           /**< among plugins of one name, the highest wins */
    /** Brings the backend up and returns its state. May find zero devices and still
     *  succeed: failure means the plugin cannot work at all. */
    bp_status (*init)(const bp_host_services *host, void **out_backend);
    /** Frees the backend's state. Optional. */
    void (*shutdown)(void *backend);
    const bp_device_vtable *device;
    const bp_stream_vtable *stream;
    const bp_event_vtable *event;
    const bp_memory_vtable *memory;
    const bp_guard_vtable *guard;          /**< optional */
    /** ABI 1.3: whole-region execution, or NULL (the core executor then runs regions
     *  with the streams, events and kernels above). Must be NULL with abi_minor < 3. */
    const bp_region_vtable *region;
} bp_plugin_descriptor;

/** Bytes a struct needs to hold `field` and everything before it. */
#define BP_STRUCT_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/** Nonzero when the host services table `host` has `field` set: its struct_size reaches
 *  the field (a newer field is absent from an older host's table) and it is not NULL.
 *      if (BP_HOST_HAS(host, register_kernel)) host->register_kernel(...); */
#define BP_HOST_HAS(host, field) \
    ((host)->struct_size >= BP_STRUCT_END(bp_host_services, field) && (host)->field)

/** The end of a backend's get_props: copies the filled-in `src` into the host's `dst`,
 *  no more than dst->struct_size bytes (a host built against an older header passes a
 *  smaller struct) and never more than this header's struct, and leaves
 *  dst->struct_size as the host set it. */
static inline void bp_props_copy_out(bp_backend_device_props *dst,
                                     const bp_backend_device_props *src) {
    size_t n = dst->struct_size < sizeof *src ? dst->struct_size : sizeof *src;
    size_t head = sizeof src->struct_size;
    if (n > head)
        memcpy((char *)dst + head, (const char *)src + head, n - head);
}

/** For a "fill" kernel: *out_bits becomes the bit pattern of the call's value in
 *  call->dtype (zero-extended to 64 bits), converted by the host's reference fill kernel,
 *  so that the rounding is the core's own. The host must have run_reference_kernel
 *  (check BP_HOST_HAS(host, run_reference_kernel) first). */
static inline bp_status bp_host_fill_bits(const bp_host_services *host,
                                          const bp_kernel_call *call, uint64_t *out_bits) {
    uint64_t bits = 0;
    bp_tensor_desc one;
    memset(&one, 0, sizeof one);
    one.data = &bits;
    one.dtype = call->dtype;
    one.ndim = 1;
    one.shape[0] = 1;
    one.strides[0] = 1;
    const bp_tensor_desc *outputs[1] = {&one};
    bp_kernel_call ref = *call;
    ref.n_inputs = 0;
    ref.inputs = NULL;
    ref.n_outputs = 1;
    ref.outputs = outputs;
    bp_status st = host->run_reference_kernel(&ref);
    *out_bits = bits;
    return st;
}

/** Sizes of the ABI 1.0 structs: a plugin's struct_size fields must reach at least
 *  these (the host rejects smaller ones: "built against an older header"). */
#define BP_PLUGIN_DESCRIPTOR_SIZE_1_0 BP_STRUCT_END(bp_plugin_descriptor, region)
#define BP_DEVICE_VTABLE_SIZE_1_0 BP_STRUCT_END(bp_device_vtable, synchronize)
#define BP_STREAM_VTABLE_SIZE_1_0 BP_STRUCT_END(bp_stream_vtable, wait_event)
#define BP_EVENT_VTABLE_SIZE_1_0 BP_STRUCT_END(bp_event_vtable, elapsed_ms)
#define BP_MEMORY_VTABLE_SIZE_1_0 BP_STRUCT_END(bp_memory_vtable, memset_async)
#define BP_GUARD_VTABLE_SIZE_1_0 BP_STRUCT_END(bp_guard_vtable, set_current)
/** Size of the first bp_region_vtable (ABI 1.3). */
#define BP_REGION_VTABLE_SIZE_1_3 BP_STRUCT_END(bp_region_vtable, abort)

/** Longest device type name a descriptor may have. */
#define BP_PLUGIN_NAME_MAX 31

#ifdef __cplusplus
}
#endif
#endif
