/* backplane plugin helpers: optional, header-only pieces that most backends write again.
 *
 * Nothing here is part of the ABI: every function is a static inline over the public
 * headers (<backplane/plugin.h> and the plain data of kernel_plan.h and op_attrs.h),
 * compiled into the plugin that includes this header. It needs nothing of the host
 * beyond set_error (the ABI 1.0 services) and links nothing, and a vendor may copy,
 * change or ignore any of it. The in-tree plugins (cpu, arm, hpu, opencl, xpu, cuda)
 * and kits use it; docs/writing-a-backend.md §16 shows it in a backend. C11, and valid
 * C++17 (tests/test_plugin_util_cxx.cpp).
 *
 * Naming: a failing helper reports through host->set_error, like the vtable functions
 * it serves, and names the device as "<type>:<index>: " ("opencl:0: ...") or, with an
 * index below 0, as the backend alone ("<type>: "), where <type> is the plugin's name.
 *
 * Threading: every helper may be called from many threads at once, except
 * bp_plugin_list_init and _fini (like a mutex's); the current-device helpers keep one
 * value per thread. */
#ifndef BACKPLANE_PLUGIN_UTIL_H
#define BACKPLANE_PLUGIN_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <backplane/kernel_plan.h>
#include <backplane/op_attrs.h>
#include <backplane/plugin.h>

#ifdef __cplusplus
#define BP_PLUGIN_THREAD_LOCAL thread_local
#else
#define BP_PLUGIN_THREAD_LOCAL _Thread_local
#endif

/** The allocator of bp_plugin_calloc: calloc, unless the plugin defines its own (same
 *  signature) before including this header. */
#ifndef BP_PLUGIN_CALLOC
#define BP_PLUGIN_CALLOC calloc
#endif

/** Longest message the helpers format (the host keeps 1024 bytes of an error). */
#define BP_PLUGIN_MESSAGE_MAX 1024

/* ---- errors naming a device ---- */

/** bp_plugin_fail with a va_list. */
static inline bp_status bp_plugin_vfail(const bp_host_services *host, bp_status status,
                                        const char *type, int index, const char *fmt,
                                        va_list ap) {
    char message[BP_PLUGIN_MESSAGE_MAX];
    vsnprintf(message, sizeof message, fmt, ap);
    if (index < 0)
        return host->set_error(status, "%s: %s", type, message);
    return host->set_error(status, "%s:%d: %s", type, index, message);
}

/** Sets the calling thread's error to "<type>:<index>: <message>" ("<type>: <message>"
 *  when index < 0), the message formatted from fmt as printf does (cut at
 *  BP_PLUGIN_MESSAGE_MAX bytes), and returns `status`:
 *      if (!fn) return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, "opencl", dev->index,
 *                                     "enqueue_host: fn is NULL"); */
static inline bp_status bp_plugin_fail(const bp_host_services *host, bp_status status,
                                       const char *type, int index, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static inline bp_status bp_plugin_fail(const bp_host_services *host, bp_status status,
                                       const char *type, int index, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bp_status st = bp_plugin_vfail(host, status, type, index, fmt, ap);
    va_end(ap);
    return st;
}

/** BP_PLUGIN_CALLOC(1, size) for a backend object (a stream, an event): the zeroed
 *  memory, or NULL with BP_ERR_OUT_OF_MEMORY set as "<device>: out of host memory for
 *  <what>" ("a stream"), which the caller returns:
 *      my_stream *s = bp_plugin_calloc(host, "opencl", dev->index, sizeof *s, "a stream");
 *      if (!s) return BP_ERR_OUT_OF_MEMORY; */
static inline void *bp_plugin_calloc(const bp_host_services *host, const char *type, int index,
                                     size_t size, const char *what) {
    void *p = BP_PLUGIN_CALLOC(1, size);
    if (!p)
        bp_plugin_fail(host, BP_ERR_OUT_OF_MEMORY, type, index, "out of host memory for %s",
                       what);
    return p;
}

/* ---- the device table ---- */

/** The check at the start of get_props and open: BP_OK when 0 <= index < count, else
 *  BP_ERR_NOT_FOUND with "<type>: device index <index> out of range (<count> <kind>
 *  device[s])", where `kind` names the devices ("OpenCL") and `count_hint`, when not
 *  NULL, is appended after "; " ("BP_HPU_DEVICES sets the count"). */
static inline bp_status bp_plugin_check_index(const bp_host_services *host, const char *type,
                                              int index, int count, const char *kind,
                                              const char *count_hint) {
    if (index >= 0 && index < count)
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_NOT_FOUND, type, -1,
                          "device index %d out of range (%d %s device%s%s%s)", index, count,
                          kind, count == 1 ? "" : "s", count_hint ? "; " : "",
                          count_hint ? count_hint : "");
}

/** The device vtable's unavailable_reason for a backend that keeps why it found no
 *  device in a string: `reason` when count is 0 and reason is not empty, else NULL. */
static inline const char *bp_plugin_unavailable_reason(int count, const char *reason) {
    return count == 0 && reason && reason[0] ? reason : NULL;
}

/** The start of get_props, after the index check: BP_ERR_INVALID_ARGUMENT with
 *  "<type>: get_props: props is NULL" when props is NULL, else BP_OK with *p zeroed for
 *  the backend to fill in and hand to bp_props_copy_out(props, p) (<backplane/plugin.h>),
 *  which copies no more than the host's struct holds:
 *      bp_backend_device_props p;
 *      bp_status st = bp_plugin_check_index(host, "opencl", index, n, "OpenCL", NULL);
 *      if (st == BP_OK) st = bp_plugin_props_begin(host, "opencl", props, &p);
 *      if (st != BP_OK) return st;
 *      p.total_memory = ...;
 *      bp_props_copy_out(props, &p); */
static inline bp_status bp_plugin_props_begin(const bp_host_services *host, const char *type,
                                              const bp_backend_device_props *props,
                                              bp_backend_device_props *p) {
    if (!props)
        return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, -1,
                              "get_props: props is NULL");
    memset(p, 0, sizeof *p);
    return BP_OK;
}

/* ---- the current device of a runtime without per-thread state ---- */

/** For a backend whose runtime has no current device of its own (OpenCL, Level Zero, a
 *  simulator): the index of the device the host last made current on the calling
 *  thread, -1 before any. One value per thread and per translation unit: call
 *  bp_plugin_current_set and bp_plugin_current_get from the same source file (the one
 *  that holds the guard vtable). */
static inline int *bp_plugin_current_slot(void) {
    static BP_PLUGIN_THREAD_LOCAL int current = -1;
    return &current;
}

/** The guard vtable's set_current, given the device's index: records it as the calling
 *  thread's current device. Always BP_OK:
 *      static bp_status guard_set_current(void *device) {
 *          return bp_plugin_current_set(((my_device *)device)->index);
 *      } */
static inline bp_status bp_plugin_current_set(int index) {
    *bp_plugin_current_slot() = index;
    return BP_OK;
}

/** The guard vtable's get_current as it stands (`.get_current = bp_plugin_current_get`):
 *  *out_index becomes the index last given to bp_plugin_current_set on the calling
 *  thread. BP_ERR_NOT_FOUND, without set_error as the ABI asks, when there was none on
 *  this thread or out_index is NULL. `backend` is not used. */
static inline bp_status bp_plugin_current_get(void *backend, int *out_index) {
    (void)backend;
    int current = *bp_plugin_current_slot();
    if (current < 0 || !out_index)
        return BP_ERR_NOT_FOUND;
    *out_index = current;
    return BP_OK;
}

/* ---- memory ---- */

/** The memory vtable's alloc check: BP_OK when out_ptr is set, else
 *  BP_ERR_INVALID_ARGUMENT with "<device>: alloc: out_ptr is NULL". */
static inline bp_status bp_plugin_check_out_ptr(const bp_host_services *host, const char *type,
                                                int index, void **out_ptr) {
    if (out_ptr)
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, index, "alloc: out_ptr is NULL");
}

/** copy_async's kind check: BP_OK for the three bp_copy_kind values, else
 *  BP_ERR_INVALID_ARGUMENT with "<device>: copy: unknown copy kind <kind>". */
static inline bp_status bp_plugin_check_copy_kind(const bp_host_services *host,
                                                  const char *type, int index,
                                                  bp_copy_kind kind) {
    if (kind == BP_COPY_HOST_TO_DEVICE || kind == BP_COPY_DEVICE_TO_HOST ||
        kind == BP_COPY_DEVICE_TO_DEVICE)
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, index,
                          "copy: unknown copy kind %d", (int)kind);
}

/** copy_async's pointer check for a copy of `size` bytes (call it after returning early
 *  for size 0, which may carry NULL pointers): BP_OK when both are set, else
 *  BP_ERR_INVALID_ARGUMENT with "<device>: copy of <size> bytes: the destination|source
 *  is NULL" (the destination named first when both are). */
static inline bp_status bp_plugin_check_copy_pointers(const bp_host_services *host,
                                                      const char *type, int index,
                                                      const void *dst, const void *src,
                                                      size_t size) {
    if (dst && src)
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, index,
                          "copy of %zu bytes: the %s is NULL", size,
                          dst ? "source" : "destination");
}

/** One direction of copy_async, on the backend's `stream`, arguments already checked. */
typedef bp_status (*bp_plugin_copy_fn)(void *stream, void *dst, const void *src, size_t size);

/** A backend's copy functions, one per bp_copy_kind. */
typedef struct bp_plugin_copy_fns {
    bp_plugin_copy_fn host_to_device;
    bp_plugin_copy_fn device_to_host;
    bp_plugin_copy_fn device_to_device;
} bp_plugin_copy_fns;

/** copy_async for a backend with one function per direction: BP_OK for size 0 (whatever
 *  the pointers and kind: nothing to copy), else bp_plugin_check_copy_pointers' error,
 *  else bp_plugin_check_copy_kind's error, else what the function of `kind` in fns
 *  returns:
 *      return bp_plugin_copy_by_kind(host, "opencl", dev->index, &my_copies, stream, dst,
 *                                    src, size, kind); */
static inline bp_status bp_plugin_copy_by_kind(const bp_host_services *host, const char *type,
                                               int index, const bp_plugin_copy_fns *fns,
                                               void *stream, void *dst, const void *src,
                                               size_t size, bp_copy_kind kind) {
    if (size == 0)
        return BP_OK;
    bp_status st = bp_plugin_check_copy_pointers(host, type, index, dst, src, size);
    if (st != BP_OK)
        return st;
    switch (kind) {
    case BP_COPY_HOST_TO_DEVICE: return fns->host_to_device(stream, dst, src, size);
    case BP_COPY_DEVICE_TO_HOST: return fns->device_to_host(stream, dst, src, size);
    case BP_COPY_DEVICE_TO_DEVICE: return fns->device_to_device(stream, dst, src, size);
    default: return bp_plugin_check_copy_kind(host, type, index, kind);
    }
}

/* ---- streams ---- */

/** A device's live streams (or any objects it must reach all of, e.g. at device
 *  synchronize): an intrusive list under its own lock. Each object embeds a
 *  bp_plugin_link; BP_PLUGIN_CONTAINER_OF gets the object back from its link. Walk the
 *  list holding `lock` (which keeps its objects alive, as remove takes it):
 *      pthread_mutex_lock(&dev->streams.lock);
 *      for (bp_plugin_link *k = dev->streams.head; k; k = k->next)
 *          wait_for(BP_PLUGIN_CONTAINER_OF(k, my_stream, link));
 *      pthread_mutex_unlock(&dev->streams.lock); */
typedef struct bp_plugin_link {
    struct bp_plugin_link *next;
} bp_plugin_link;

typedef struct bp_plugin_list {
    pthread_mutex_t lock;
    bp_plugin_link *head; /**< the newest first */
} bp_plugin_list;

/** The object of type `type` whose member `member` (a bp_plugin_link) is at `link`. */
#define BP_PLUGIN_CONTAINER_OF(link, type, member) \
    ((type *)(void *)((char *)(link) - offsetof(type, member)))

/** An empty list with its lock (pthread_mutex_init's result, 0 on success). */
static inline int bp_plugin_list_init(bp_plugin_list *l) {
    l->head = NULL;
    return pthread_mutex_init(&l->lock, NULL);
}

/** Destroys the lock; the objects still linked are the caller's. */
static inline void bp_plugin_list_fini(bp_plugin_list *l) {
    pthread_mutex_destroy(&l->lock);
    l->head = NULL;
}

/** Links `k` in at the head, under the lock. */
static inline void bp_plugin_list_add(bp_plugin_list *l, bp_plugin_link *k) {
    pthread_mutex_lock(&l->lock);
    k->next = l->head;
    l->head = k;
    pthread_mutex_unlock(&l->lock);
}

/** Unlinks `k`, under the lock; nothing when it is not in the list. */
static inline void bp_plugin_list_remove(bp_plugin_list *l, bp_plugin_link *k) {
    pthread_mutex_lock(&l->lock);
    bp_plugin_link **at = &l->head;
    while (*at && *at != k)
        at = &(*at)->next;
    if (*at)
        *at = k->next;
    pthread_mutex_unlock(&l->lock);
}

/** enqueue_host's argument check: BP_OK when fn is set, else BP_ERR_INVALID_ARGUMENT
 *  with "<device>: enqueue_host: fn is NULL". */
static inline bp_status bp_plugin_check_host_fn(const bp_host_services *host, const char *type,
                                                int index, void (*fn)(void *arg)) {
    if (fn)
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, index,
                          "enqueue_host: fn is NULL");
}

/* ---- kernels ---- */

/** Elements of the view t (the product of its shape; 1 for a scalar of ndim 0). */
static inline int64_t bp_plugin_numel(const bp_tensor_desc *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/** Bytes of one element of dtype dt; 0 for a value that is no bp_dtype. */
static inline size_t bp_plugin_dtype_size(bp_dtype dt) {
    switch (dt) {
    case BP_DTYPE_F64:
    case BP_DTYPE_I64: return 8;
    case BP_DTYPE_F32:
    case BP_DTYPE_I32: return 4;
    case BP_DTYPE_F16:
    case BP_DTYPE_BF16: return 2;
    case BP_DTYPE_I8:
    case BP_DTYPE_U8:
    case BP_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

/** A kernel's element move: copies the elements of view `src` into view `dst` (same
 *  shape and dtype), enqueued on the backend's stream that ctx names. */
typedef bp_status (*bp_plugin_move_fn)(void *ctx, const bp_tensor_desc *dst,
                                       const bp_tensor_desc *src);

/** The cat kernel (bp_cat_attrs of <backplane/op_attrs.h>) as moves: for every input with
 *  elements, in order, move(ctx, slice, input) with the slice of the output it fills
 *  along attrs->dim (bp_cat_slice of <backplane/kernel_plan.h>; dim 0 without attrs).
 *  Stops at, and returns, the first move's error; else BP_OK. */
static inline bp_status bp_plugin_cat(const bp_kernel_call *call, bp_plugin_move_fn move,
                                      void *ctx) {
    const bp_cat_attrs *a = (const bp_cat_attrs *)call->attrs;
    const bp_tensor_desc *out = call->outputs[0];
    int dim = a ? a->dim : 0;
    size_t es = bp_plugin_dtype_size(out->dtype);
    int64_t start = 0;
    for (int i = 0; i < call->n_inputs; i++) {
        const bp_tensor_desc *in = call->inputs[i];
        if (bp_plugin_numel(in) > 0) {
            bp_tensor_desc part = bp_cat_slice(out, dim, start, in->shape[dim], es);
            bp_status st = move(ctx, &part, in);
            if (st != BP_OK)
                return st;
        }
        start += in->shape[dim];
    }
    return BP_OK;
}

/* ---- events ---- */

/** elapsed_ms's first check: BP_OK when both events hold a recorded point, else
 *  BP_ERR_INVALID_ARGUMENT with "<device>: elapsed_ms: the start|end event was never
 *  recorded" (start named first when neither was). */
static inline bp_status bp_plugin_elapsed_recorded(const bp_host_services *host,
                                                   const char *type, int index,
                                                   bool start_recorded, bool end_recorded) {
    if (start_recorded && end_recorded)
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, index,
                          "elapsed_ms: the %s event was never recorded",
                          start_recorded ? "end" : "start");
}

/** elapsed_ms's second check, given each event's query status (BP_OK, BP_ERR_NOT_READY,
 *  or an error already set; a caller that stops at a failed start passes BP_OK for end):
 *  BP_ERR_NOT_READY with "<device>: elapsed_ms: the start|end event has not completed"
 *  when either is not ready (start named unless it is BP_OK), else the start's error,
 *  else the end's (their messages are left as set), else BP_OK. */
static inline bp_status bp_plugin_elapsed_completed(const bp_host_services *host,
                                                    const char *type, int index,
                                                    bp_status start, bp_status end) {
    if (start == BP_ERR_NOT_READY || end == BP_ERR_NOT_READY)
        return bp_plugin_fail(host, BP_ERR_NOT_READY, type, index,
                              "elapsed_ms: the %s event has not completed",
                              start == BP_OK ? "end" : "start");
    return start != BP_OK ? start : end;
}

/** A backend's query of one recorded point (a marker, a runtime event): BP_OK when
 *  reached, BP_ERR_NOT_READY (without set_error) when not, else an error it set. */
typedef bp_status (*bp_plugin_point_status_fn)(void *ctx, void *point);

/** Both checks of elapsed_ms in one, for events that hold their latest recorded point
 *  (NULL: never recorded): bp_plugin_elapsed_recorded, then status(ctx, start) and, when
 *  that is BP_OK, status(ctx, end), then bp_plugin_elapsed_completed. BP_OK when both
 *  points are reached and their timestamps can be read. */
static inline bp_status bp_plugin_elapsed_ready(const bp_host_services *host, const char *type,
                                                int index, void *start, void *end,
                                                bp_plugin_point_status_fn status, void *ctx) {
    bp_status st = bp_plugin_elapsed_recorded(host, type, index, start != NULL, end != NULL);
    if (st != BP_OK)
        return st;
    bp_status sa = status(ctx, start);
    bp_status sb = sa == BP_OK ? status(ctx, end) : BP_OK;
    return bp_plugin_elapsed_completed(host, type, index, sa, sb);
}

#endif
