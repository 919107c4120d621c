/* Elementwise ops: argument checks, output shapes, and the call into the dispatcher.
 *
 * Every op here may write into one of its inputs (out is exactly that input's view):
 * each output element depends only on the input elements at the same position. */
#include "ops_internal.h"

#define FLOAT_DTYPES (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | \
                      BP_DTYPE_BIT(BP_DTYPE_BF16))
#define ARITH_DTYPES (FLOAT_DTYPES | BP_DTYPE_BIT(BP_DTYPE_I32) | BP_DTYPE_BIT(BP_DTYPE_I64))
#define ALL_DTYPES ((1u << BP_DTYPE_COUNT) - 1)

/* Op names for messages, valid even before the dispatcher has defined the ops. */
static const char *const op_names[BP_OP_BUILTIN_COUNT] = {
#define OP_NAME(id, name, attrs) [BP_OP_##id] = name,
    BP_BUILTIN_OPS(OP_NAME)
#undef OP_NAME
};

/* Runs `op` into `out`, or, when `out_new` is set, into a new tensor it allocates
 * (released again if the launch fails). */
static bp_status finish(bp_builtin_op op, bp_dtype dtype, bp_device *device, int ndim,
                        const int64_t *shape, bp_tensor *const *inputs, int n_inputs,
                        bp_tensor *out, bp_tensor **out_new, const void *attrs) {
    const char *name = op_names[op];
    if (!out_new) {
        bp_status st = bp_check_out(name, out, device, dtype, ndim, shape, inputs, n_inputs, true);
        return st != BP_OK ? st : bp_op_run(op, dtype, device, inputs, n_inputs, &out, 1, attrs);
    }
    bp_status st = bp_op_alloc_out(device, dtype, ndim, shape, out_new);
    if (st != BP_OK)
        return st;
    st = bp_op_run(op, dtype, device, inputs, n_inputs, out_new, 1, attrs);
    if (st != BP_OK) {
        bp_tensor_release(*out_new);
        *out_new = NULL;
    }
    return st;
}

static bp_status null_out(bp_builtin_op op, bp_tensor **out) {
    if (out)
        *out = NULL;
    return out ? BP_OK : bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: the out pointer is NULL",
                                      op_names[op]);
}

/* Inputs share one dtype from `allowed` and broadcast together; the output is their
 * dtype (`a_index` names the input whose dtype that is) and broadcast shape. */
static bp_status elementwise(bp_builtin_op op, uint32_t allowed, bp_tensor *const *inputs,
                             int n_inputs, int a_index, bp_tensor *out, bp_tensor **out_new,
                             const void *attrs) {
    const char *name = op_names[op];
    bp_device *device;
    bp_status st = bp_check_tensors(name, inputs, n_inputs, &device);
    if (st != BP_OK)
        return st;
    bp_dtype dtype = inputs[a_index]->dtype;
    st = bp_check_dtype(name, inputs + a_index, n_inputs - a_index, dtype);
    if (st == BP_OK)
        st = bp_check_dtype_allowed(name, dtype, allowed);
    int64_t shape[BP_MAX_DIMS];
    int ndim = 0;
    if (st == BP_OK)
        st = bp_broadcast_shapes(name, inputs, n_inputs, shape, &ndim);
    if (st != BP_OK)
        return st;
    return finish(op, dtype, device, ndim, shape, inputs, n_inputs, out, out_new, attrs);
}

static bp_status binary(bp_builtin_op op, uint32_t allowed, bp_tensor *a, bp_tensor *b,
                        bp_tensor *out, bp_tensor **out_new) {
    bp_tensor *inputs[2] = {a, b};
    return elementwise(op, allowed, inputs, 2, 0, out, out_new, NULL);
}

static bp_status unary(bp_builtin_op op, bp_tensor *a, bp_tensor *out, bp_tensor **out_new,
                       const void *attrs) {
    return elementwise(op, FLOAT_DTYPES, &a, 1, 0, out, out_new, attrs);
}

/* Both forms of the binary arithmetic ops. */
#define BINARY_OP(fn, OP, ALLOWED)                                                          \
    bp_status bp_##fn(bp_tensor *a, bp_tensor *b, bp_tensor **out) {                        \
        bp_status st = null_out(BP_OP_##OP, out);                                           \
        return st != BP_OK ? st : binary(BP_OP_##OP, ALLOWED, a, b, NULL, out);             \
    }                                                                                       \
    bp_status bp_##fn##_out(bp_tensor *a, bp_tensor *b, bp_tensor *out) {                   \
        return binary(BP_OP_##OP, ALLOWED, a, b, out, NULL);                                \
    }

BINARY_OP(add, ADD, ARITH_DTYPES)
BINARY_OP(sub, SUB, ARITH_DTYPES)
BINARY_OP(mul, MUL, ARITH_DTYPES)
BINARY_OP(div, DIV, FLOAT_DTYPES)

#define UNARY_OP(fn, OP)                                                                    \
    bp_status bp_##fn(bp_tensor *a, bp_tensor **out) {                                      \
        bp_status st = null_out(BP_OP_##OP, out);                                           \
        return st != BP_OK ? st : unary(BP_OP_##OP, a, NULL, out, NULL);                    \
    }                                                                                       \
    bp_status bp_##fn##_out(bp_tensor *a, bp_tensor *out) {                                 \
        return unary(BP_OP_##OP, a, out, NULL, NULL);                                       \
    }

UNARY_OP(exp, EXP)
UNARY_OP(tanh, TANH)
UNARY_OP(silu, SILU)

bp_status bp_scale(bp_tensor *a, double alpha, bp_tensor **out) {
    bp_scale_attrs attrs = {.alpha = alpha};
    bp_status st = null_out(BP_OP_SCALE, out);
    return st != BP_OK ? st : unary(BP_OP_SCALE, a, NULL, out, &attrs);
}

bp_status bp_scale_out(bp_tensor *a, double alpha, bp_tensor *out) {
    bp_scale_attrs attrs = {.alpha = alpha};
    return unary(BP_OP_SCALE, a, out, NULL, &attrs);
}

bp_status bp_gelu(bp_tensor *a, int approximate_tanh, bp_tensor **out) {
    bp_gelu_attrs attrs = {.approximate_tanh = approximate_tanh != 0};
    bp_status st = null_out(BP_OP_GELU, out);
    return st != BP_OK ? st : unary(BP_OP_GELU, a, NULL, out, &attrs);
}

bp_status bp_gelu_out(bp_tensor *a, int approximate_tanh, bp_tensor *out) {
    bp_gelu_attrs attrs = {.approximate_tanh = approximate_tanh != 0};
    return unary(BP_OP_GELU, a, out, NULL, &attrs);
}

/* where: inputs {cond, a, b}; the kernel is chosen by the dtype of a and b. */
static bp_status where(bp_tensor *cond, bp_tensor *a, bp_tensor *b, bp_tensor *out,
                       bp_tensor **out_new) {
    bp_tensor *inputs[3] = {cond, a, b};
    bp_status st = bp_check_tensors("where", inputs, 3, NULL);
    if (st == BP_OK && cond->dtype != BP_DTYPE_BOOL)
        st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "where: cond has dtype %s, expected bool "
                          "(compare or cast first)", bp_dtype_name(cond->dtype));
    return st != BP_OK ? st : elementwise(BP_OP_WHERE, ALL_DTYPES, inputs, 3, 1, out, out_new,
                                          NULL);
}

bp_status bp_where(bp_tensor *cond, bp_tensor *a, bp_tensor *b, bp_tensor **out) {
    bp_status st = null_out(BP_OP_WHERE, out);
    return st != BP_OK ? st : where(cond, a, b, NULL, out);
}

bp_status bp_where_out(bp_tensor *cond, bp_tensor *a, bp_tensor *b, bp_tensor *out) {
    return where(cond, a, b, out, NULL);
}
