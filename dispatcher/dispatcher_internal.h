/* Internal contract of the dispatcher with the rest of the core. */
#ifndef BP_DISPATCHER_INTERNAL_H
#define BP_DISPATCHER_INTERNAL_H

#include "hal_internal.h"

#define BP_MAX_OPS 256
#define BP_OP_NAME_MAX 32

typedef struct bp_kernel_entry {
    bp_kernel_fn fn;
    void *data;
    int32_t priority;
    int type_slot;
} bp_kernel_entry;

typedef struct bp_op_record {
    char name[BP_OP_NAME_MAX];
    size_t attrs_size;
    atomic_bool fallback_warned;
    /* Published with release stores; entries are immutable once published. */
    _Atomic(const bp_kernel_entry *) kernels[BP_MAX_DEVICE_TYPES][BP_DTYPE_COUNT];
} bp_op_record;

/* Reads BP_CPU_FALLBACK, BP_TRACE_OPS, BP_PROFILE; called once by the op library's
 * core_init (ops/ops.c) before any backend is initialised. */
BP_INTERNAL void bp_dispatcher_init(void);
/* The hal client's backend_dropped: removes the kernels of a backend whose plugin was
 * rejected after its init; later registrations under that name fail ("unloaded"). */
BP_INTERNAL void bp_dispatcher_backend_dropped(const char *backend_name);
/* Registers a built-in kernel (priority 0) for `device_type` before its backend is
 * registered (the built-in cpu backend's kernels, at core_init). */
BP_INTERNAL bp_status bp_dispatcher_register_builtin(const char *device_type, const char *op_name,
                                                     bp_dtype dtype, bp_kernel_fn fn,
                                                     void *kernel_data);
/* The host->register_kernel entry. */
BP_INTERNAL bp_status bp_host_register_kernel(const char *backend_name, const char *op_name,
                                              bp_dtype dtype, bp_kernel_fn fn,
                                              void *kernel_data, int32_t priority);
/* The host->reference_dtypes and host->run_reference_kernel entries (ops/reference.c). */
BP_INTERNAL uint32_t bp_host_reference_dtypes(const char *op_name);
BP_INTERNAL bp_status bp_host_run_reference_kernel(const bp_kernel_call *call);
/* The host->op_count and host->op_name entries: bp_op_count and bp_op_name without
 * the registry initialisation (a plugin calls them from its init, during it). */
BP_INTERNAL int32_t bp_host_op_count(void);
BP_INTERNAL const char *bp_host_op_name(int32_t index);
/* bp_op_define without the registry initialisation, for the built-in ops, which are
 * defined during it. */
BP_INTERNAL bp_status bp_op_define_builtin(const char *name, size_t attrs_size,
                                           bp_op_id *out_op);
/* bp_dispatch for a record whose op id, dtype, counts, descriptors, device and stream
 * are known to be valid (the ops check all of it before they dispatch): the same
 * routing without the checks. Validation happens once. */
BP_INTERNAL bp_status bp_dispatch_checked(bp_op_call *call);
/* The record of a valid op id, else NULL. */
BP_INTERNAL const bp_op_record *bp_op_record_get(bp_op_id op);

/* ---- hooks (trace.c, profile.c): active only when their variable is set ---- */

/* Nonzero when tracing or profiling is on or a region is open anywhere: the one
 * branch on the dispatch hot path. Bit 0: trace/profile; the bits above count open
 * regions (units of BP_HOOKS_REGION_UNIT). Read and changed with __atomic builtins. */
extern BP_INTERNAL int bp_dispatch_hooks;
#define BP_HOOKS_TRACE_PROFILE 1
#define BP_HOOKS_REGION_UNIT 2
#define BP_HOOKS_REGIONS_MASK (~1)
/* BP_TRACE_OPS: notes (op, device type, dtype) of a dispatched call. */
BP_INTERNAL void bp_trace_note(const bp_op_record *op, const bp_device *device, bp_dtype dtype);
BP_INTERNAL bool bp_trace_enabled(void);
/* BP_PROFILE: wraps one kernel launch; returns the kernel's status. */
BP_INTERNAL bp_status bp_profile_launch(const bp_op_record *op, const bp_kernel_entry *kernel,
                                        const bp_kernel_call *kc, const bp_op_call *call,
                                        bp_stream *stream);
BP_INTERNAL bool bp_profile_enabled(void);
/* Reads BP_TRACE_OPS / BP_PROFILE once at init and registers their writers at exit. */
BP_INTERNAL void bp_trace_init(void);
BP_INTERNAL void bp_profile_init(void);

#endif
