/* Reductions over one dim (sum, max, mean) and softmax over the last dim: argument
 * checks, output shapes, and the call into the dispatcher.
 *
 * Kernels receive bp_reduce_attrs with `dim` already normalised to [0, ndim) (0 for a
 * scalar, which reduces over its one element) and keepdim as 0 or 1. The output never
 * overlaps the input: a reduction reads a whole row before it writes, which in-place
 * would break on backends that split rows. */
#include "ops_internal.h"

#define FLOAT_DTYPES (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | \
                      BP_DTYPE_BIT(BP_DTYPE_BF16))
#define SUM_DTYPES (FLOAT_DTYPES | BP_DTYPE_BIT(BP_DTYPE_I32) | BP_DTYPE_BIT(BP_DTYPE_I64))

static const char *const op_names[BP_OP_BUILTIN_COUNT] = {
#define OP_NAME(id, name, attrs) [BP_OP_##id] = name,
    BP_BUILTIN_OPS(OP_NAME)
#undef OP_NAME
};

static bp_status null_out(bp_builtin_op op, bp_tensor **out) {
    if (out)
        *out = NULL;
    return out ? BP_OK : bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: the out pointer is NULL",
                                      op_names[op]);
}

/* Runs `op` into `out`, or, when `out_new` is set, into a new tensor it allocates
 * (released again if the launch fails). */
static bp_status finish(bp_builtin_op op, bp_tensor *a, bp_device *device, int ndim,
                        const int64_t *shape, bp_tensor *out, bp_tensor **out_new,
                        const void *attrs) {
    if (!out_new) {
        bp_status st = bp_check_out(op_names[op], out, device, a->dtype, ndim, shape, &a, 1,
                                    false);
        return st != BP_OK ? st : bp_op_run(op, a->dtype, device, &a, 1, &out, 1, attrs);
    }
    bp_status st = bp_op_alloc_out(device, a->dtype, ndim, shape, out_new);
    if (st != BP_OK)
        return st;
    st = bp_op_run(op, a->dtype, device, &a, 1, out_new, 1, attrs);
    if (st != BP_OK) {
        bp_tensor_release(*out_new);
        *out_new = NULL;
    }
    return st;
}

static bp_status reduce(bp_builtin_op op, uint32_t allowed, bp_tensor *a, int dim, int keepdim,
                        bp_tensor *out, bp_tensor **out_new) {
    const char *name = op_names[op];
    bp_device *device;
    bp_status st = bp_check_tensors(name, &a, 1, &device);
    if (st == BP_OK)
        st = bp_check_dtype_allowed(name, a->dtype, allowed);
    int d = 0;
    if (st == BP_OK)
        st = bp_check_dim(name, dim, a->ndim, &d);
    if (st != BP_OK)
        return st;
    if (op == BP_OP_MAX && a->ndim > 0 && a->shape[d] == 0) {
        char shape[160];
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "max: dim %d of a %s tensor is empty, and "
                            "the max of no elements is undefined", dim,
                            bp_shape_str(a->shape, a->ndim, shape, sizeof shape));
    }
    int64_t out_shape[BP_MAX_DIMS];
    int ndim = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (i != d)
            out_shape[ndim++] = a->shape[i];
        else if (keepdim)
            out_shape[ndim++] = 1;
    }
    bp_reduce_attrs attrs = {.dim = d, .keepdim = keepdim != 0};
    return finish(op, a, device, ndim, out_shape, out, out_new, &attrs);
}

#define REDUCE_OP(fn, OP, ALLOWED)                                                          \
    bp_status bp_##fn(bp_tensor *a, int dim, int keepdim, bp_tensor **out) {                \
        bp_status st = null_out(BP_OP_##OP, out);                                           \
        return st != BP_OK ? st : reduce(BP_OP_##OP, ALLOWED, a, dim, keepdim, NULL, out);  \
    }                                                                                       \
    bp_status bp_##fn##_out(bp_tensor *a, int dim, int keepdim, bp_tensor *out) {           \
        return reduce(BP_OP_##OP, ALLOWED, a, dim, keepdim, out, NULL);                     \
    }

REDUCE_OP(sum, SUM, SUM_DTYPES)
REDUCE_OP(max, MAX, SUM_DTYPES)
REDUCE_OP(mean, MEAN, FLOAT_DTYPES)

/* Causal masking is top-left aligned: row i of [Sq, Sk] keeps keys j <= i, so key 0 is
 * always kept and no row is fully masked. A row whose kept logits are all -inf
 * becomes zeros rather than NaN, as a fully masked row would. */
static bp_status softmax(bp_tensor *a, float scale, int causal, bp_tensor *out,
                         bp_tensor **out_new) {
    bp_device *device;
    bp_status st = bp_check_tensors("softmax", &a, 1, &device);
    if (st == BP_OK)
        st = bp_check_dtype_allowed("softmax", a->dtype, FLOAT_DTYPES);
    if (st != BP_OK)
        return st;
    if (causal && a->ndim < 2)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "softmax: causal masking needs a tensor of "
                            "at least 2 dims ([..., Sq, Sk]), got %d", a->ndim);
    bp_softmax_attrs attrs = {.scale = scale, .causal = causal != 0};
    return finish(BP_OP_SOFTMAX, a, device, a->ndim, a->shape, out, out_new, &attrs);
}

bp_status bp_softmax(bp_tensor *a, float scale, int causal, bp_tensor **out) {
    bp_status st = null_out(BP_OP_SOFTMAX, out);
    return st != BP_OK ? st : softmax(a, scale, causal, NULL, out);
}

bp_status bp_softmax_out(bp_tensor *a, float scale, int causal, bp_tensor *out) {
    return softmax(a, scale, causal, out, NULL);
}
