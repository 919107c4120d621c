/* Internal contract between the HAL's files. Not installed; backends never see it. */
#ifndef BP_HAL_INTERNAL_H
#define BP_HAL_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <backplane/backplane.h>
#include <backplane/plugin.h>
#include <stddef.h>

#define BP_INTERNAL __attribute__((visibility("hidden")))

/* ---- errors and logging (error.c, log.c) ---- */

/* Bytes of this thread's last-error message, its NUL included. */
#define BP_ERROR_MAX 1024

/* Sets this thread's last error and returns `status`. */
BP_INTERNAL bp_status bp_set_error(bp_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
BP_INTERNAL bp_status bp_set_error_v(bp_status status, const char *fmt, va_list ap);
/* Prefixes the current last error with "<context>: " (keeps the status); a message
 * cut to fit ends in "...". */
BP_INTERNAL bp_status bp_error_prefix(bp_status status, const char *context);

BP_INTERNAL bool bp_log_enabled(bp_log_level level);
BP_INTERNAL void bp_log(bp_log_level level, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The services table handed to every backend's init (the same for all): hal's own
 * entries and the op entries of the installed client (below). */
BP_INTERNAL const bp_host_services *bp_host_services_table(void);

/* ---- the layers above hal (client.c) ----
 * hal calls nothing above it. What it needs from them it gets through this table, which
 * the op library installs from a constructor when libbackplane is loaded, before any
 * API call (ops/ops.c). Without one, hal runs alone: the op entries fail with
 * BP_ERR_UNSUPPORTED ("no op library in this process"). */
typedef struct bp_hal_client {
    /* Once, in the core step of initialisation, before the built-in cpu backend is
     * registered: defines the ops and registers the built-in kernels. */
    void (*core_init)(void);
    /* A backend whose init ran was rejected afterwards (or its init failed): what it
     * registered from init goes with it. */
    void (*backend_dropped)(const char *backend_name);
    /* The op entries of the host services table (<backplane/plugin.h>). */
    bp_status (*register_kernel)(const char *backend_name, const char *op_name, bp_dtype dtype,
                                 bp_kernel_fn fn, void *kernel_data, int32_t priority);
    uint32_t (*reference_dtypes)(const char *op_name);
    bp_status (*run_reference_kernel)(const bp_kernel_call *call);
    int32_t (*op_count)(void);
    const char *(*op_name)(int32_t index);
} bp_hal_client;

/* Installs the client (once, before the first API call; a second call replaces it). */
BP_INTERNAL void bp_hal_set_client(const bp_hal_client *client);
/* The installed client, or the stand-alone one; never NULL. */
BP_INTERNAL const bp_hal_client *bp_hal_client_get(void);

/* ---- backends and devices (registry.c) ---- */

#define BP_MAX_DEVICES 128
/* A plugin reporting more devices gets only this many (noted in its listing), so that
 * one plugin cannot fill the registry for the others. */
#define BP_MAX_DEVICES_PER_BACKEND 32
#define BP_MAX_ALIASES 8
#define BP_BACKEND_NAME_MAX (BP_PLUGIN_NAME_MAX + 1)
/* Device type names interned for the kernel tables (device_type.c). */
#define BP_MAX_DEVICE_TYPES 32

/* Where a backend is in its life. Discovery makes it PENDING: its name and aliases are
 * known (devices of its type can be asked for), its init has not run. Its init runs
 * when first needed (bp_registry_ready_backend, bp_registry_enter with BP_WAIT_ALL)
 * and makes it READY, with its devices registered, or DROPPED: init failed or the
 * backend was rejected after it. A dropped backend stays in the list, never found by
 * name, so that no pointer to it dangles. */
typedef enum bp_backend_readiness {
    BP_BACKEND_PENDING = 0,
    BP_BACKEND_READY = 1,
    BP_BACKEND_DROPPED = 2,
} bp_backend_readiness;

typedef struct bp_backend {
    const bp_plugin_descriptor *desc;
    void *state;                     /* what desc->init returned (set before READY) */
    atomic_int readiness;            /* bp_backend_readiness */
    void *dl_handle;                 /* NULL for the built-in cpu backend */
    char name[BP_BACKEND_NAME_MAX];
    char version[BP_NAME_MAX];       /* the descriptor's, copied with a bound */
    const char *unavailable_reason;  /* copied with a bound at registration, or "" */
    char aliases[BP_MAX_ALIASES][BP_BACKEND_NAME_MAX];
    int alias_count;
    int device_count;
    struct bp_device **devices;      /* device_count entries */
    int type_slot;                   /* bp_device_type_slot(name) */
} bp_backend;

struct bp_allocator;

struct bp_device {
    bp_backend *backend;
    int index;                       /* within its type */
    int slot;                        /* 0..BP_MAX_DEVICES-1 in order of registration, never
                                      * reused: per-device tables (guard.c) index it. The
                                      * public ordinal is the position by backend */
    char name[BP_NAME_MAX];          /* "cuda:1" */
    bp_backend_device_props props;   /* read once at registration */
    pthread_mutex_t open_lock;
    atomic_bool opened;              /* handle, default stream and allocator ready */
    void *handle;                    /* the backend's device handle */
    struct bp_stream *default_stream;
    struct bp_allocator *allocator;
    atomic_int capturing;            /* its streams being captured (capture.c) */
    atomic_uint host_funcs_pending;  /* fallback host functions not yet run (host_func.c) */
};

/* Initialisation, in three steps: the core (ops, the built-in cpu backend) once; plugin
 * discovery (find, check, dlopen and validate the candidates, choose, learn their
 * names and aliases), run by the first caller; and each chosen backend's init, count
 * and get_props, run when the backend is first needed. What a call waits for: */
typedef enum bp_registry_wait {
    BP_WAIT_CORE,      /* the core is up (the built-in cpu, ops); discovery is started */
    BP_WAIT_DISCOVERY, /* discovery has finished: every backend's name is known */
    BP_WAIT_ALL,       /* and every backend discovery found has been initialised (the
                        * calls that list devices or plugins) */
} bp_registry_wait;
/* Makes sure of what `wait` names. Fails with BP_ERR_INVALID_STATE, naming `what` and
 * the plugin, when the calling thread is running plugin code for the loader
 * (re-entrant calls from init would deadlock). */
BP_INTERNAL bp_status bp_registry_enter(const char *what, bp_registry_wait wait);
/* bp_registry_enter(BP_WAIT_CORE) without failing: for calls that only need the core. */
BP_INTERNAL void bp_registry_ensure_init(void);
/* Runs fn(ctx) under the discovery lock if discovery has not started; else
 * BP_ERR_INVALID_STATE (without setting an error). */
BP_INTERNAL bp_status bp_registry_before_discovery(void (*fn)(void *ctx), void *ctx);
/* Registry lock: held while the backend and device lists change or are read. Never
 * held while plugin code runs. */
BP_INTERNAL void bp_registry_lock(void);
BP_INTERNAL void bp_registry_unlock(void);
/* A backend record for a validated plugin, PENDING and not yet visible (call without
 * the registry lock). */
BP_INTERNAL bp_status bp_registry_new_backend(const bp_plugin_descriptor *desc, void *dl_handle,
                                              const char *name, const char *version,
                                              bp_backend **out_backend);
/* Makes a PENDING backend known by its name and aliases, after those already listed
 * (the order bp_device_get lists devices in). On error nothing is added (the caller
 * frees it). */
BP_INTERNAL bp_status bp_registry_add_pending(bp_backend *backend);
/* Device `index` of the backend with its properties read (plugin code: call without
 * the registry lock), or NULL when they cannot be read (logged). */
BP_INTERNAL bp_device *bp_registry_make_device(bp_backend *backend, int index);
BP_INTERNAL void bp_registry_free_device(bp_device *device);
/* Devices the registry still has room for. */
BP_INTERNAL int bp_registry_room(void);
/* Registers the PENDING backend's `count` devices, all at once, and makes it READY
 * (takes the registry lock). On error nothing is registered (the caller frees them,
 * shuts the backend down and drops it). */
BP_INTERNAL bp_status bp_registry_publish(bp_backend *backend, bp_device **devices, int count);
/* A PENDING backend becomes DROPPED: its name and aliases are free again. */
BP_INTERNAL void bp_registry_drop(bp_backend *backend);
/* The first PENDING backend in list order, or NULL. */
BP_INTERNAL bp_backend *bp_registry_next_pending(void);
/* The PENDING or READY backend whose name or alias equals name[0..len) ignoring case,
 * or NULL. Call with the registry lock held. */
BP_INTERNAL bp_backend *bp_registry_find_backend(const char *name, size_t len);
/* The READY backend of that name or alias, initialising it first if it is PENDING
 * (call without the registry lock), or NULL: no backend has the name, or its init
 * failed. Needs discovery to have finished, unless the name is the built-in cpu's. */
BP_INTERNAL bp_backend *bp_registry_ready_backend(const char *name, size_t len);
/* Removes `alias` from a backend's aliases. Call with the registry lock held. */
BP_INTERNAL void bp_registry_drop_alias(bp_backend *backend, const char *alias);
/* Number of registered devices, and the one at public `ordinal`, by backend in list
 * order then index (NULL when out of range). Neither initialises anything: callers
 * enter with BP_WAIT_ALL first. */
BP_INTERNAL int bp_registry_device_count(void);
BP_INTERNAL bp_device *bp_registry_device_at(int ordinal);
/* "cpu, testdev (alias tdev)": the device types present, for error messages. It
 * initialises the PENDING backends first (so that the list is what bp-info shows);
 * call without the registry lock. */
BP_INTERNAL void bp_registry_describe_types(char *buf, size_t size);
/* The slot of a device type name, 0 .. BP_MAX_DEVICE_TYPES-1, the same for the life of
 * the process (ignoring case; interned on first use), or -1 when all are taken
 * (device_type.c). Layers above index their per-type tables with it. */
BP_INTERNAL int bp_device_type_slot(const char *type_name);
/* The slot of a name already interned, or -1. */
BP_INTERNAL int bp_device_type_find(const char *type_name);
/* Opens the device's backend handle, default stream and allocator once. */
BP_INTERNAL bp_status bp_device_ensure_open(bp_device *device);

/* ---- plugin loading (loader.c and its helpers) ---- */

/* Registers the built-in cpu backend (the core step of initialisation). */
BP_INTERNAL void bp_loader_init_builtin(void);
/* Discovers and chooses plugins unless BP_AUTOLOAD=0, and adds the chosen ones to the
 * registry as PENDING backends (the discovery step): no init runs. */
BP_INTERNAL void bp_loader_discover_all(void);
/* Runs a PENDING backend's init, count and get_props (under the loader lock: one init
 * at a time, and a second thread asking for the same backend waits for the first);
 * it becomes READY or DROPPED. Nothing when it is not PENDING (any more). */
BP_INTERNAL void bp_loader_initialise(bp_backend *backend);
/* bp_loader_initialise for every PENDING backend, in list order. */
BP_INTERNAL void bp_loader_initialise_all(void);
/* What plugin code the calling thread runs for the loader ("the init of plugin 'x'
 * (path)"), or NULL. */
BP_INTERNAL const char *bp_loader_running_plugin(void);
/* The name of the backend whose init runs on the calling thread, or NULL: a plugin may
 * register kernels for itself from its init, before its backend is registered. */
BP_INTERNAL const char *bp_loader_initializing_backend(void);

/* ---- built-in cpu backend (backends/cpu) ---- */

const bp_plugin_descriptor *bp_cpu_backend_descriptor(void);

/* ---- streams and events (stream.c, event.c) ---- */

#define BP_MAGIC_STREAM 0x5354524du /* "STRM" */
#define BP_MAGIC_EVENT 0x45564e54u  /* "EVNT" */
#define BP_MAGIC_DEAD 0xdeadbeefu

struct bp_stream {
    atomic_uint magic;
    uint64_t id;               /* unique for the process: addresses get reused */
    bp_device *device;
    void *handle;
    int priority;
    bool is_default;
    /* Capture (capture.c): the open capture of this stream, or NULL; and the capturing
     * layer's own data on the stream (NULL when none), which it frees through its
     * callbacks' release_stream_data when the stream is destroyed. */
    struct bp_stream_capture *capture;
    void *capture_data;
    /* Host functions of the core's fallback (host_func.c): the queue, made at the first
     * launch, and how many of its functions have not returned yet. */
    _Atomic(struct bp_host_queue *) host_queue;
    atomic_uint host_funcs_pending;
};

struct bp_event {
    atomic_uint magic;
    bp_device *device;
    void *handle;
    unsigned flags;
    atomic_bool recorded;
    /* Recorded on a stream while it was captured with this serial (0: not). */
    _Atomic uint64_t capture_serial; /* threads may record one event at once */
    /* Recorded after fallback host functions (host_func.c): the stream's queue and the
     * launch count it must complete before the event does; NULL when none. */
    _Atomic(struct bp_host_queue *) host_queue;
    uint64_t host_seq;
};

/* Validates a stream/event handle: NULL, destroyed (recently) or corrupt. `what` names
 * the calling function for the message. */
BP_INTERNAL bp_status bp_stream_check(const bp_stream *stream, const char *what);
BP_INTERNAL bp_status bp_event_check(const bp_event *event, const char *what);
/* Creates the device's default stream (used by bp_device_ensure_open). */
BP_INTERNAL bp_status bp_stream_create_default(bp_device *device, bp_stream **out_stream);

/* Destroyed stream/event wrappers stay allocated in a bounded quarantine so that a
 * late use finds BP_MAGIC_DEAD instead of freed memory (handle.c). */
BP_INTERNAL void bp_handle_retire(void *object);

/* ---- host functions (host_func.c) ----
 * bp_stream_launch_host_func goes to the backend's enqueue_host; without one, to the
 * core's fallback: a queue and a host thread per stream. The calls below are that
 * fallback's hooks; each is a no-op (one atomic load) for a stream or event that
 * never had a fallback host function. */

/* Blocks until the fallback host functions launched on `stream` have returned. */
BP_INTERNAL void bp_host_funcs_wait_slow(bp_stream *stream);
/* Called by every core path that hands `stream` new work (kernels, copies, memsets,
 * waits) right before it does: that work must start after the host functions. */
static inline void bp_stream_host_funcs_wait(bp_stream *stream) {
    if (__builtin_expect(atomic_load_explicit(&stream->host_funcs_pending, memory_order_acquire) != 0,
                         0))
        bp_host_funcs_wait_slow(stream);
}
/* bp_stream_synchronize / destroy: waits as above, then returns (and forgets) the first
 * failure of the fallback's waits for earlier work, with its message; BP_OK if none. */
BP_INTERNAL bp_status bp_host_funcs_synchronize(bp_stream *stream);
/* bp_device_synchronize: waits for the fallback host functions of all its streams. */
BP_INTERNAL void bp_host_funcs_device_wait(bp_device *device);
/* bp_stream_destroy, after bp_host_funcs_synchronize: stops the stream's host thread. */
BP_INTERNAL void bp_host_funcs_stream_destroyed(bp_stream *stream);
/* bp_event_record (after the backend's record): the event also waits for the host
 * functions launched on `stream` so far. */
BP_INTERNAL void bp_host_funcs_event_recorded(bp_event *event, const bp_stream *stream);
/* Whether host functions the event waits for have not returned yet. */
BP_INTERNAL bool bp_host_funcs_event_pending(bp_event *event);
/* Blocks until they have returned. */
BP_INTERNAL void bp_host_funcs_event_wait(bp_event *event);
/* bp_event_destroy: drops the event's link to a queue. */
BP_INTERNAL void bp_host_funcs_event_destroyed(bp_event *event);

/* ---- caching allocator (allocator.c) ---- */

typedef struct bp_allocator bp_allocator;

BP_INTERNAL bp_status bp_allocator_create(bp_device *device, bp_allocator **out_allocator);
BP_INTERNAL bp_status bp_allocator_alloc(bp_allocator *a, size_t size, bp_stream *stream,
                                         void **out_ptr);
BP_INTERNAL bp_status bp_allocator_free(bp_allocator *a, void *ptr);
BP_INTERNAL bp_status bp_allocator_record_stream(bp_allocator *a, void *ptr, bp_stream *stream);
BP_INTERNAL void bp_allocator_get_stats(bp_allocator *a, bp_memory_stats *stats);
BP_INTERNAL bp_status bp_allocator_empty_cache(bp_allocator *a);
BP_INTERNAL void bp_allocator_reset_peak(bp_allocator *a);
BP_INTERNAL bp_status bp_allocator_set_limit(bp_allocator *a, uint64_t limit_bytes);
/* Called by bp_stream_destroy after the stream was synchronized and before its handle
 * is destroyed: cached blocks tagged with it become usable by every stream. */
BP_INTERNAL void bp_allocator_stream_destroyed(bp_allocator *a, bp_stream *stream);

/* ---- stream capture (capture.c) ----
 * A layer above hal may capture a stream, as CUDA captures a stream into a graph: the
 * region recorder (dispatcher/region.c) records the work issued to the stream between
 * bp_region_begin and bp_region_end instead of running it. hal keeps the capture state
 * (the stream's capture, the open captures by serial, the count per device) and refuses
 * the calls that cannot be captured (waits, copies, memsets, host functions, destroying
 * the stream); the capturing layer installs a callback table for what hal cannot decide
 * itself. Without one installed, nothing captures. */

/* The capturing layer embeds this as the first member of its own record, so that
 * stream->capture leads it there. Set by bp_stream_capture_begin. */
typedef struct bp_stream_capture {
    uint64_t serial;                       /* unique for the process, never 0 */
    struct bp_stream_capture *next_open;   /* the open captures (capture.c) */
} bp_stream_capture;

/* The calls refused while a capture is open. */
typedef enum bp_capture_refusal {
    BP_CAPTURE_REFUSE_SYNCHRONIZE,        /* bp_stream_synchronize */
    BP_CAPTURE_REFUSE_COPY,               /* copies and memsets */
    BP_CAPTURE_REFUSE_HOST_FUNC,          /* bp_stream_launch_host_func */
    BP_CAPTURE_REFUSE_DESTROY,            /* bp_stream_destroy */
    BP_CAPTURE_REFUSE_DEVICE_SYNCHRONIZE, /* bp_device_synchronize: a stream of it captures */
    BP_CAPTURE_REFUSE_EVENT_SYNCHRONIZE,  /* bp_event_synchronize: recorded in an open capture */
} bp_capture_refusal;

typedef struct bp_capture_callbacks {
    /* Sets the error for `refusal` of the call named `what` on `device` (the capturing
     * stream's) and returns BP_ERR_INVALID_STATE. */
    bp_status (*refuse)(bp_capture_refusal refusal, const char *what, const bp_device *device);
    /* bp_stream_destroy of a stream that does not capture and has capture_data: frees
     * that data (hal then clears the slot). Called before the stream's own work is waited for; it may still use
     * the stream. */
    void (*release_stream_data)(bp_stream *stream);
} bp_capture_callbacks;

/* Installs the capturing layer's callbacks (from its constructor, before any API call). */
BP_INTERNAL void bp_capture_install(const bp_capture_callbacks *callbacks);
/* Starts capturing `stream` (not capturing now) into `capture`, which gets a serial;
 * counts the stream in its device's `capturing`. */
BP_INTERNAL void bp_stream_capture_begin(bp_stream *stream, bp_stream_capture *capture);
/* Ends the open capture of `stream`: it runs its work again. */
BP_INTERNAL void bp_stream_capture_end(bp_stream *stream);
/* Whether the capture with this serial (from bp_event_record) is still open. */
BP_INTERNAL bool bp_capture_serial_open(uint64_t serial);
/* The installed callbacks' error for `refusal` of `what` on `device`. */
BP_INTERNAL bp_status bp_capture_refuse(bp_capture_refusal refusal, const char *what,
                                        const bp_device *device);
/* bp_stream_destroy: refused while `stream` captures; else its capture_data is released
 * (release_stream_data). */
BP_INTERNAL bp_status bp_capture_stream_destroying(bp_stream *stream);
/* BP_OK when `stream` is not captured, else the error for `refusal` of `what`. */
static inline bp_status bp_stream_check_not_captured(const bp_stream *stream,
                                                     bp_capture_refusal refusal,
                                                     const char *what) {
    return stream->capture ? bp_capture_refuse(refusal, what, stream->device) : BP_OK;
}

#endif
