/* Op ids, the kernel table and dispatch.
 *
 * The table is indexed by (op id, device type slot, dtype): three array indexings and
 * an indirect call on the hot path. Entries are immutable and published with atomic
 * pointer stores, so dispatch takes no lock while registrations (rare, mostly at
 * start-up) serialise on a mutex. A replaced entry is kept (never freed) because a
 * concurrent dispatch may still be calling through it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dispatcher_internal.h"
#include "env.h"
#include "ops_internal.h"
#include "region_internal.h"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static bp_op_record *op_table[BP_MAX_OPS];
static atomic_int op_count;

/* Device types whose backend was dropped after its init (by slot): registering for
 * them says "unloaded". */
static bool type_dropped[BP_MAX_DEVICE_TYPES];
/* Replaced or dropped kernel entries: a concurrent dispatch may still be reading one,
 * so they are never freed, only kept reachable here. */
typedef struct retired_entry {
    const bp_kernel_entry *entry;
    struct retired_entry *next;
} retired_entry;
static retired_entry *retired;

static void retire_locked(const bp_kernel_entry *entry) {
    retired_entry *r = entry ? malloc(sizeof *r) : NULL;
    if (!r)
        return;
    r->entry = entry;
    r->next = retired;
    retired = r;
}
static atomic_bool cpu_fallback;
int bp_dispatch_hooks;

/* ---- ops ---- */

static bool valid_op_name(const char *name) {
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= BP_OP_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
            return false;
    }
    return true;
}

static int find_op_locked(const char *name) {
    int n = atomic_load(&op_count);
    for (int i = 0; i < n; i++)
        if (strcmp(op_table[i]->name, name) == 0)
            return i;
    return -1;
}

static bp_status op_define(const char *name, size_t attrs_size, bp_op_id *out_op) {
    if (!valid_op_name(name) || !out_op)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_op_define: %s", !out_op ? "out_op is NULL"
                            : "op names are 1 to 31 characters of a-z, 0-9, '_' and '.'");
    pthread_mutex_lock(&table_lock);
    int id = find_op_locked(name);
    bp_status st = BP_OK;
    if (id >= 0 && op_table[id]->attrs_size != attrs_size)
        st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_op_define: op '%s' is already defined with "
                          "%zu bytes of attributes, not %zu", name, op_table[id]->attrs_size,
                          attrs_size);
    else if (id < 0 && atomic_load(&op_count) == BP_MAX_OPS)
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_op_define: at most %d ops", BP_MAX_OPS);
    else if (id < 0) {
        bp_op_record *op = calloc(1, sizeof *op);
        if (!op) {
            st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_op_define: out of memory");
        } else {
            strcpy(op->name, name);
            op->attrs_size = attrs_size;
            id = atomic_load(&op_count);
            op_table[id] = op;
            atomic_store(&op_count, id + 1);
        }
    }
    pthread_mutex_unlock(&table_lock);
    if (st == BP_OK)
        *out_op = id;
    return st;
}

bp_status bp_op_define(const char *name, size_t attrs_size, bp_op_id *out_op) {
    /* The built-in ops take the first ids, so they must be defined first. */
    bp_registry_ensure_init();
    return op_define(name, attrs_size, out_op);
}

bp_status bp_op_define_builtin(const char *name, size_t attrs_size, bp_op_id *out_op) {
    return op_define(name, attrs_size, out_op);
}

bp_status bp_op_find(const char *name, bp_op_id *out_op) {
    bp_registry_ensure_init();
    if (!name || !out_op)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_op_find: %s is NULL",
                            !name ? "name" : "out_op");
    pthread_mutex_lock(&table_lock);
    int id = find_op_locked(name);
    pthread_mutex_unlock(&table_lock);
    if (id < 0)
        return bp_set_error(BP_ERR_NOT_FOUND, "unknown op '%s'", name);
    *out_op = id;
    return BP_OK;
}

const bp_op_record *bp_op_record_get(bp_op_id op) {
    return (unsigned)op < (unsigned)atomic_load_explicit(&op_count, memory_order_acquire)
               ? op_table[op]
               : NULL;
}

int32_t bp_host_op_count(void) {
    return atomic_load_explicit(&op_count, memory_order_acquire);
}

const char *bp_host_op_name(int32_t index) {
    const bp_op_record *rec = bp_op_record_get(index);
    return rec ? rec->name : NULL;
}

int bp_op_count(void) {
    bp_registry_ensure_init();
    return bp_host_op_count();
}

const char *bp_op_name(bp_op_id op) {
    bp_registry_ensure_init();
    return bp_host_op_name(op);
}

/* ---- device types and registration ---- */

void bp_dispatcher_backend_dropped(const char *backend_name) {
    int slot = bp_device_type_find(backend_name);
    if (slot < 0)
        return;
    pthread_mutex_lock(&table_lock);
    type_dropped[slot] = true;
    int n = atomic_load(&op_count);
    for (int op = 0; op < n; op++)
        for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
            retire_locked(atomic_exchange(&op_table[op]->kernels[slot][dt], NULL));
    pthread_mutex_unlock(&table_lock);
}

static bp_status register_locked(int slot, const char *type_name, const char *op_name,
                                 bp_dtype dtype, bp_kernel_fn fn, void *data, int32_t priority) {
    int id = find_op_locked(op_name);
    if (id < 0)
        return bp_set_error(BP_ERR_NOT_FOUND, "register_kernel: unknown op '%s' for %s", op_name,
                            type_name);
    bp_op_record *op = op_table[id];
    const bp_kernel_entry *old = atomic_load(&op->kernels[slot][dtype]);
    if (old && old->priority == priority)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "register_kernel: %s already has a kernel "
                            "for op '%s' and dtype %s at priority %d", type_name, op_name,
                            bp_dtype_name(dtype), priority);
    if (old && old->priority > priority) {
        bp_log(BP_LOG_INFO, "dispatcher", "kernel %s/%s/%s at priority %d ignored: priority %d "
               "is registered", op_name, type_name, bp_dtype_name(dtype), priority, old->priority);
        return BP_OK;
    }
    bp_kernel_entry *entry = malloc(sizeof *entry);
    if (!entry)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "register_kernel: out of memory");
    *entry = (bp_kernel_entry){.fn = fn, .data = data, .priority = priority, .type_slot = slot};
    if (old)
        bp_log(BP_LOG_INFO, "dispatcher", "kernel %s/%s/%s: priority %d replaces %d", op_name,
               type_name, bp_dtype_name(dtype), priority, old->priority);
    atomic_store_explicit(&op->kernels[slot][dtype], entry, memory_order_release);
    retire_locked(old);
    return BP_OK;
}

static bp_status register_in_slot(const char *type_name, const char *op_name, bp_dtype dtype,
                                  bp_kernel_fn fn, void *data, int32_t priority) {
    int slot = bp_device_type_slot(type_name);
    pthread_mutex_lock(&table_lock);
    bp_status st = slot < 0 ? bp_set_error(BP_ERR_OUT_OF_MEMORY, "register_kernel: more than %d "
                                           "device types", BP_MAX_DEVICE_TYPES)
                            : register_locked(slot, type_name, op_name, dtype, fn, data, priority);
    pthread_mutex_unlock(&table_lock);
    return st;
}

/* Shared by plugins (host services) and applications. `name` must be a loaded backend,
 * or the one whose init is running on this thread. */
static bp_status register_kernel(const char *name, const char *op_name, bp_dtype dtype,
                                 bp_kernel_fn fn, void *data, int32_t priority) {
    const char *initializing_backend = bp_loader_initializing_backend();
    if (!name || !op_name || !fn)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "register_kernel: %s is NULL",
                            !name ? "backend name" : !op_name ? "op name" : "kernel function");
    if ((unsigned)dtype >= BP_DTYPE_COUNT)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "register_kernel: invalid dtype %d for op "
                            "'%s'", (int)dtype, op_name);
    bool initializing = initializing_backend && strcasecmp(initializing_backend, name) == 0;
    if (initializing_backend && !initializing)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "register_kernel: during its init, plugin "
                            "'%s' can register kernels only for itself, not for '%s'",
                            initializing_backend, name);
    const char *type_name = name;
    if (!initializing) {
        bp_registry_lock();
        bp_backend *backend = bp_registry_find_backend(name, strlen(name));
        if (backend)
            type_name = backend->name;
        bp_registry_unlock();
        if (!backend) {
            int slot = bp_device_type_find(name);
            pthread_mutex_lock(&table_lock);
            bool dropped = slot >= 0 && type_dropped[slot];
            pthread_mutex_unlock(&table_lock);
            return bp_set_error(BP_ERR_NOT_FOUND, dropped
                                ? "register_kernel: backend '%s' was unloaded"
                                : "register_kernel: no loaded backend '%s'", name);
        }
    }
    return register_in_slot(type_name, op_name, dtype, fn, data, priority);
}

bp_status bp_dispatcher_register_builtin(const char *device_type, const char *op_name,
                                         bp_dtype dtype, bp_kernel_fn fn, void *kernel_data) {
    return register_in_slot(device_type, op_name, dtype, fn, kernel_data, 0);
}

/* A name from a plugin is read up to `max` bytes only; one without its NUL there, or
 * with control bytes, is refused without being echoed. NULL is register_kernel's to
 * report. */
static bool plugin_name_ok(const char *name, size_t max) {
    if (!name)
        return true;
    size_t len = strnlen(name, max);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return false;
    return len < max;
}

bp_status bp_host_register_kernel(const char *backend_name, const char *op_name, bp_dtype dtype,
                                  bp_kernel_fn fn, void *kernel_data, int32_t priority) {
    bool backend_ok = plugin_name_ok(backend_name, BP_BACKEND_NAME_MAX);
    if (!backend_ok || !plugin_name_ok(op_name, BP_OP_NAME_MAX))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "register_kernel: the %s is not a "
                            "NUL-terminated string of at most %d printable bytes",
                            backend_ok ? "op name" : "backend name",
                            (backend_ok ? BP_OP_NAME_MAX : BP_BACKEND_NAME_MAX) - 1);
    return register_kernel(backend_name, op_name, dtype, fn, kernel_data, priority);
}

bp_status bp_kernel_register(const char *device_type, const char *op_name, bp_dtype dtype,
                             bp_kernel_fn fn, void *kernel_data, int32_t priority) {
    /* The type may be a plugin's whose init has not run yet: it runs now. */
    bp_status st = bp_registry_enter("bp_kernel_register", BP_WAIT_DISCOVERY);
    if (st != BP_OK)
        return st;
    if (device_type)
        bp_registry_ready_backend(device_type, strlen(device_type));
    return register_kernel(device_type, op_name, dtype, fn, kernel_data, priority);
}

uint32_t bp_kernel_dtypes(bp_op_id op, const bp_device *device) {
    const bp_op_record *rec = bp_op_record_get(op);
    if (!rec || !device)
        return 0;
    uint32_t mask = 0;
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (atomic_load_explicit(&rec->kernels[device->backend->type_slot][dt],
                                 memory_order_acquire))
            mask |= BP_DTYPE_BIT(dt);
    return mask;
}

void bp_set_cpu_fallback(bool enabled) { atomic_store(&cpu_fallback, enabled); }

void bp_dispatcher_init(void) {
    atomic_init(&cpu_fallback, bp_env_switch("BP_CPU_FALLBACK", false, false, "dispatcher",
                                             "the CPU fallback stays off"));
    bp_trace_init();
    bp_profile_init();
    __atomic_fetch_or(&bp_dispatch_hooks,
                      bp_trace_enabled() || bp_profile_enabled() ? BP_HOOKS_TRACE_PROFILE : 0,
                      __ATOMIC_RELAXED);
}

/* ---- dispatch ---- */

static bp_status missing_kernel(const bp_op_record *op, const bp_op_call *call) {
    const bp_device *device = call->device;
    if (atomic_load(&cpu_fallback) && strcmp(device->backend->name, "cpu") != 0)
        return bp_cpu_fallback(op, call);
    char have[128] = "";
    size_t used = 0;
    uint32_t mask = bp_kernel_dtypes(call->kernel.op, device);
    for (int dt = 0; dt < BP_DTYPE_COUNT && used < sizeof have; dt++)
        if (mask & BP_DTYPE_BIT(dt)) {
            int n = snprintf(have + used, sizeof have - used, "%s%s", used ? ", " : "",
                             bp_dtype_name((bp_dtype)dt));
            used += n > 0 ? (size_t)n : 0;
        }
    return bp_set_error(BP_ERR_UNSUPPORTED, "no kernel for op '%s' on %s (device type '%s') with "
                        "dtype %s; dtypes with a kernel there: %s", op->name, device->name,
                        device->backend->name, bp_dtype_name(call->kernel.dtype),
                        mask ? have : strcmp(device->backend->name, "cpu") != 0
                                          ? "none (set BP_CPU_FALLBACK=1 to run it on the cpu)"
                                      : bp_cpu_kernels_selective
                                          ? "none (this libbackplane was built with "
                                            "BP_SELECTED_OPS and the op was not traced)"
                                          : "none");
}

/* Completes the kernel's record (the caller filled the rest) and calls the kernel,
 * or the hooks around it. */
static inline bp_status launch(const bp_op_record *op, const bp_kernel_entry *kernel,
                               bp_op_call *call, bp_stream *stream, bool hooks) {
    bp_kernel_call *kc = &call->kernel;
    kc->struct_size = sizeof *kc;
    kc->op_name = op->name;
    kc->device = call->device->handle;
    kc->stream = stream->handle;
    kc->kernel_data = kernel->data;
    kc->attrs_size = kc->attrs ? op->attrs_size : 0;
    bp_stream_host_funcs_wait(stream);
    if (!hooks)
        return kernel->fn(kc);
    bp_trace_note(op, call->device, kc->dtype);
    return bp_profile_launch(op, kernel, kc, call, stream);
}

/* Sets the error for a NULL descriptor array or entry; BP_OK when there is none. */
static bp_status check_descriptors(const bp_op_record *op, const bp_kernel_call *kc) {
    if ((kc->n_inputs && !kc->inputs) || (kc->n_outputs && !kc->outputs))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_dispatch: %s: the %s array is NULL",
                            op->name, kc->n_inputs && !kc->inputs ? "inputs" : "outputs");
    for (int i = 0; i < kc->n_inputs + kc->n_outputs; i++) {
        const bp_tensor_desc *d = i < kc->n_inputs ? kc->inputs[i] : kc->outputs[i - kc->n_inputs];
        if (!d)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_dispatch: %s: the descriptor of "
                                "tensor %d is NULL", op->name, i);
    }
    return BP_OK;
}

/* Everything off the fast path: argument errors, a missing kernel, the current stream,
 * and the trace/profile hooks. */
static __attribute__((noinline, cold)) bp_status dispatch_slow(bp_op_call *call) {
    if (!call)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_dispatch: call is NULL");
    const bp_kernel_call *kc = &call->kernel;
    const bp_op_record *op = bp_op_record_get(kc->op);
    if (!op || !call->device || (unsigned)kc->dtype >= BP_DTYPE_COUNT || kc->n_inputs < 0 ||
        kc->n_outputs < 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_dispatch: %s", !op ? "invalid op id"
                            : !call->device ? "device is NULL" : "invalid dtype or tensor count");
    bp_status st = check_descriptors(op, kc);
    if (st != BP_OK)
        return st;
    bp_device *device = call->device;
    const bp_kernel_entry *kernel = atomic_load_explicit(
        &op->kernels[device->backend->type_slot][kc->dtype], memory_order_acquire);
    bp_stream *stream = call->stream ? call->stream : bp_current_stream(device);
    if (!stream)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_dispatch: no stream for %s: %s",
                            device->name, bp_last_error());
    int hooks = __atomic_load_n(&bp_dispatch_hooks, __ATOMIC_RELAXED);
    if (hooks & BP_HOOKS_REGIONS_MASK) {
        bool handled = false;
        st = bp_region_intercept(op, kernel, call, stream, &handled);
        if (st != BP_OK || handled)
            return st;
    }
    if (!kernel)
        return missing_kernel(op, call);
    return launch(op, kernel, call, stream, (hooks & BP_HOOKS_TRACE_PROFILE) != 0);
}

bp_status bp_dispatch_launch_recorded(const bp_op_record *op, const bp_kernel_entry *kernel,
                                      bp_op_call *call, bp_stream *stream) {
    return launch(op, kernel, call, stream,
                  (__atomic_load_n(&bp_dispatch_hooks, __ATOMIC_RELAXED) &
                   BP_HOOKS_TRACE_PROFILE) != 0);
}

bp_status bp_dispatch_checked(bp_op_call *call) {
    /* One branch for tracing, profiling and open regions alike (a relaxed load is a
     * plain load). */
    if (__builtin_expect(__atomic_load_n(&bp_dispatch_hooks, __ATOMIC_RELAXED) != 0, 0))
        return dispatch_slow(call);
    const bp_op_record *op = op_table[call->kernel.op];
    const bp_kernel_entry *kernel = atomic_load_explicit(
        &op->kernels[call->device->backend->type_slot][call->kernel.dtype],
        memory_order_acquire);
    if (__builtin_expect(!kernel, 0))
        return dispatch_slow(call);
    return launch(op, kernel, call, call->stream, false);
}

bp_status bp_dispatch(bp_op_call *call) {
    /* The record comes from anywhere: check what routing it safely needs, then take the
     * same path as the ops. Anything unusual goes to dispatch_slow, which also explains
     * what is wrong. */
    if (__builtin_expect(!call || !call->stream || !call->device, 0))
        return dispatch_slow(call);
    const bp_kernel_call *kc = &call->kernel;
    if (__builtin_expect(!bp_op_record_get(kc->op) || (unsigned)kc->dtype >= BP_DTYPE_COUNT ||
                             kc->n_inputs < 0 || kc->n_outputs < 0 ||
                             (kc->n_inputs && !kc->inputs) || (kc->n_outputs && !kc->outputs), 0))
        return dispatch_slow(call);
    for (int i = 0; i < kc->n_inputs; i++)
        if (__builtin_expect(!kc->inputs[i], 0))
            return dispatch_slow(call);
    for (int i = 0; i < kc->n_outputs; i++)
        if (__builtin_expect(!kc->outputs[i], 0))
            return dispatch_slow(call);
    return bp_dispatch_checked(call);
}
