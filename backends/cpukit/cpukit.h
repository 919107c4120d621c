/* cpukit: the streams, events and memory of a CPU-class device, for backends whose
 * device memory is host memory (the built-in cpu backend, the arm plugin).
 *
 * A backend supplies its devices and gets working stream, event and memory vtables:
 *  - it embeds a cpukit_device in each of its device structs, fills it with
 *    cpukit_device_init (name, index, the CPUs its stream workers are pinned to, its
 *    memory), and returns a pointer to that member from its device vtable's open();
 *  - it puts &cpukit_stream_vtable, &cpukit_event_vtable and &cpukit_memory_vtable in
 *    its plugin descriptor, and cpukit_device_mem_info / cpukit_device_synchronize in
 *    its device vtable;
 *  - its kernels run on a stream's worker through cpukit_stream_submit, on a copy of the
 *    call record from cpukit_call_copy; large kernels split their work over a
 *    cpukit_pool.
 *
 * Each stream is one worker thread draining an in-order task queue (cpu_queue.h): stream
 * work is asynchronous to the caller. An event is a position in one stream's queue.
 * Memory is aligned host memory and device pointers are host addresses.
 *
 * The kit is the static library bp_cpukit (position-independent, hidden symbols): a
 * plugin links it and exports nothing more. It uses only the public plugin ABI. Needs
 * _GNU_SOURCE (cpu_set_t). Thread safety: as the plugin ABI asks of each vtable. */
#ifndef BP_CPUKIT_H
#define BP_CPUKIT_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include "cpu_queue.h"

typedef struct cpukit_stream cpukit_stream;

/** One CPU-class device, embedded by the backend in its own device struct. */
typedef struct cpukit_device {
    const bp_host_services *host;
    char name[32];        /**< message prefix: "cpu", "arm:1" */
    char thread_tag[8];   /**< stream threads are "bp-<tag>-s<N>": "cpu", "arm1" */
    cpu_thread_setup workers; /**< how stream workers start; its CPU set is `cpus` */
    cpu_set_t cpus;
    uint64_t total_memory; /**< what mem_info reports as the total */
    pthread_mutex_t lock;  /* guards the stream list */
    cpukit_stream *streams;
    atomic_uint next_stream_id;
} cpukit_device;

/** Fills `dev`. `name` prefixes its error messages ("cpu: ..."), `thread_tag` (at most 7
 *  characters) names its stream threads, `workers` says how they start (pinned to a CPU
 *  set, a start function; NULL: neither; copied, the set too), `total_memory` is the
 *  total mem_info reports. */
void cpukit_device_init(cpukit_device *dev, const bp_host_services *host, const char *name,
                        const char *thread_tag, const cpu_thread_setup *workers,
                        uint64_t total_memory);
/** Frees what cpukit_device_init made; call once every stream is destroyed. */
void cpukit_device_fini(cpukit_device *dev);

/** For the backend's device vtable: `device` is the cpukit_device open() returned. The
 *  free memory is the host's available memory, capped at the device's total. */
bp_status cpukit_device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total);
/** For the backend's device vtable: waits for every stream of the device. */
bp_status cpukit_device_synchronize(void *device);

/** The vtables for the backend's descriptor (stream create/event create take the
 *  cpukit_device open() returned). */
extern const bp_stream_vtable cpukit_stream_vtable;
extern const bp_event_vtable cpukit_event_vtable;
extern const bp_memory_vtable cpukit_memory_vtable;

/** The device a kit stream belongs to. */
cpukit_device *cpukit_stream_device(void *stream);
/** Enqueues fn(copy of payload[0..size)) on the stream's worker, after all earlier work.
 *  `what` names the work in an error message ("a kernel"). Errors: BP_ERR_OUT_OF_MEMORY
 *  (host memory exhausted), BP_ERR_INTERNAL (payload over CPU_QUEUE_PAYLOAD_MAX). */
bp_status cpukit_stream_submit(void *stream, const char *what, cpu_task_fn fn,
                               const void *payload, size_t size);

/** A deep copy of a kernel call record in one heap block (free() it): the record, its
 *  tensor descriptors and call->attrs_size bytes of attributes, so a kernel can run
 *  after the dispatcher's record is gone. Its struct_size is this header's. NULL when
 *  out of memory, or when the record has attributes but no attrs_size (a host older
 *  than ABI 1.4). */
bp_kernel_call *cpukit_call_copy(const bp_kernel_call *call);

/** The host's RAM in bytes (0 when unknown). */
uint64_t cpukit_host_total_memory(void);
/** The host's available RAM now (MemAvailable, else sysinfo's free RAM; 0 unknown). */
uint64_t cpukit_host_free_memory(void);

/** A pool of threads for splitting one large kernel over cores: the caller and the
 *  pool's threads take chunks of the range. Several callers (one per stream worker)
 *  may share one pool at once. */
typedef struct cpukit_pool cpukit_pool;
typedef void (*cpukit_range_fn)(void *ctx, int64_t begin, int64_t end);

/** Starts a pool for `threads` threads in all (the caller counts as one, so it starts
 *  threads - 1 of its own), named `thread_name`, started as `setup` says (pinned, with a
 *  start function; NULL: neither; copied). A thread that cannot start leaves the pool
 *  smaller. Returns 0, EINVAL (threads < 1) or ENOMEM. */
int cpukit_pool_create(const char *thread_name, int threads, const cpu_thread_setup *setup,
                       cpukit_pool **out_pool);
/** Stops and joins the pool's threads; no parallel_for may be running. */
void cpukit_pool_destroy(cpukit_pool *pool);
/** Threads a parallel_for runs on: the pool's own plus the caller. */
int cpukit_pool_threads(const cpukit_pool *pool);
/** Runs fn(ctx, begin, end) over disjoint chunks covering [0, n), each of at least
 *  `grain` elements (the last may be shorter), on the caller and the pool's threads,
 *  and returns when all are done. One chunk (n <= grain, or a pool of one thread) runs
 *  as fn(ctx, 0, n) on the caller. */
void cpukit_pool_parallel_for(cpukit_pool *pool, int64_t n, int64_t grain, cpukit_range_fn fn,
                              void *ctx);

#endif
