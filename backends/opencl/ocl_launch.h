/* opencl: tensor arguments and kernel launches (ocl_launch.c).
 *
 * A tensor reaches a kernel as two arguments: its buffer, and an ocl_tdesc by value
 * (kernels/prelude.cl's tdesc: the element offset in the buffer, dims, shape and
 * strides in elements). Operands are planned together with <backplane/kernel_plan.h>
 * (aligned to the output's dims, size-1 dims dropped, contiguous dims merged), so
 * that most tensors become one dim. */
#ifndef BP_OCL_LAUNCH_H
#define BP_OCL_LAUNCH_H

#include <backplane/kernel_plan.h>

#include "ocl_internal.h"

#define OCL_MAXD BP_KERNEL_MAX_DIMS

typedef struct ocl_tdesc {
    cl_long off;
    cl_long ndim;
    cl_long shape[OCL_MAXD];
    cl_long stride[OCL_MAXD];
} ocl_tdesc;

/* A tensor argument: its buffer and descriptor. */
typedef struct ocl_targ {
    cl_mem mem;
    ocl_tdesc d;
} ocl_targ;

/* One kernel argument: `size` bytes at `value`, or local memory of `size` bytes when
 * value is NULL. */
typedef struct ocl_karg {
    size_t size;
    const void *value;
} ocl_karg;

#define KARG(x) ((ocl_karg){sizeof(x), &(x)})
#define KLOCAL(bytes) ((ocl_karg){(bytes), NULL})

int64_t ocl_numel(const bp_tensor_desc *t);
size_t ocl_dtype_size(bp_dtype dt);

/* Sets arg->mem and arg->d.off from t's data pointer, and d to t's own shape and
 * strides. A tensor without elements has no memory to name: it gets `empty_mem` (any
 * valid buffer; kernels never read it) at offset 0. */
bp_status ocl_tensor_arg(ocl_device *dev, const bp_tensor_desc *t, cl_mem empty_mem,
                         ocl_targ *arg, const char *what);

/* Sets every args[k].d's dims (k < p->n) to operand k of the plan, keeping its offset. */
void ocl_plan_args(const bp_plan *p, ocl_targ *args);

/* Plans an elementwise call: args[0] is `out`, args[1 + k] input k (their buffers and
 * offsets already set), the inputs broadcast to out's shape. */
void ocl_plan_elementwise(const bp_tensor_desc *out, int n_in, const bp_tensor_desc *const *ins,
                          ocl_targ *args);

/* Enqueues kernel k on s with the arguments, holding the stream's and the kernel's
 * locks from the first argument to the enqueue. */
bp_status ocl_launch(ocl_stream *s, ocl_kernel *k, const char *what, int nargs,
                     const ocl_karg *args, cl_uint dims, const size_t *global,
                     const size_t *local);

/* A 1-D launch of n work-items (rounded up to the local size: kernels GUARD). */
bp_status ocl_launch_1d(ocl_stream *s, ocl_kernel *k, const char *what, int nargs,
                        const ocl_karg *args, int64_t n);

#endif
