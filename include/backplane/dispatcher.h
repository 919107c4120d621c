/* backplane: op ids, kernel registration and dispatch.
 *
 * Every op call goes through bp_dispatch, which picks the kernel registered for
 * (op, device type, dtype) in constant time and calls it. Tracing (BP_TRACE_OPS),
 * profiling (BP_PROFILE) and the optional CPU fallback (BP_CPU_FALLBACK=1) work there
 * for every op alike. Applications normally call the ops of <backplane/ops.h>; this
 * header is for defining new ops and registering kernels from inside the process. */
#ifndef BACKPLANE_DISPATCHER_H
#define BACKPLANE_DISPATCHER_H

#include <stdbool.h>
#include <backplane/plugin.h>
#include <backplane/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t bp_op_id;

/** Defines an op named `name` whose attribute struct has `attrs_size` bytes (0: none),
 *  or returns the existing id when it is already defined with the same size.
 *  Errors: BP_ERR_INVALID_ARGUMENT (bad name, or defined with another size). */
BP_API bp_status bp_op_define(const char *name, size_t attrs_size, bp_op_id *out_op);

/** The id of a defined op. Errors: BP_ERR_NOT_FOUND naming the op. */
BP_API bp_status bp_op_find(const char *name, bp_op_id *out_op);

/** Number of defined ops: the built-in ops of <backplane/ops.h> first, then those
 *  defined with bp_op_define. The op ids are 0 .. bp_op_count() - 1, so
 *      for (int i = 0; i < bp_op_count(); i++) puts(bp_op_name(i));
 *  lists every op once. The count only grows. */
BP_API int bp_op_count(void);

/** Name of op id `op` ("add"), or NULL when `op` is not below bp_op_count(). The
 *  string lives as long as the process. */
BP_API const char *bp_op_name(bp_op_id op);

/** Registers a kernel from inside the process, for every device of `device_type`
 *  (a backend name or alias), like a plugin's host->register_kernel. */
BP_API bp_status bp_kernel_register(const char *device_type, const char *op_name,
                                    bp_dtype dtype, bp_kernel_fn fn, void *kernel_data,
                                    int32_t priority);

/** The dtypes that have a kernel of `op` on `device`, as BP_DTYPE_BIT() mask. */
BP_API uint32_t bp_kernel_dtypes(bp_op_id op, const bp_device *device);

/** A tensor's descriptor as kernels see it, for building a bp_op_call; valid as long
 *  as the tensor. NULL for a NULL tensor. */
BP_API const bp_tensor_desc *bp_tensor_kernel_desc(const bp_tensor *tensor);

/** One op call: the record its kernel will receive, and where to run it. The caller
 *  fills kernel.op, kernel.dtype (selects the kernel, normally the inputs' dtype),
 *  kernel.n_inputs, kernel.n_outputs, kernel.inputs and kernel.outputs (descriptors
 *  from bp_tensor_kernel_desc) and kernel.attrs (the op's attribute struct, or NULL);
 *  bp_dispatch fills in the rest (struct_size, op_name, device, stream, kernel_data),
 *  so a record serves one call at a time. Every tensor lives on `device`. */
typedef struct bp_op_call {
    bp_kernel_call kernel;
    bp_device *device;
    bp_stream *stream; /**< NULL: the thread's current stream of device */
} bp_op_call;

/** Routes a call to its kernel. The caller has validated the arguments (the ops of
 *  <backplane/ops.h> do); bp_dispatch checks only what it needs to route safely.
 *  Errors: BP_ERR_INVALID_ARGUMENT (bad op id, dtype, counts, a NULL descriptor or
 *  device); BP_ERR_UNSUPPORTED when no kernel exists for (op, device type, dtype),
 *  naming them and listing the dtypes that do exist on that device, unless the CPU
 *  fallback is on; the kernel's own errors. */
BP_API bp_status bp_dispatch(bp_op_call *call);

/** Turns the CPU fallback on or off for the process (initially BP_CPU_FALLBACK=1 or
 *  off): an op without a kernel on a device then copies its inputs to the cpu, runs
 *  the cpu kernel and copies the outputs back, warning once per op. */
BP_API void bp_set_cpu_fallback(bool enabled);

#ifdef __cplusplus
}
#endif
#endif
