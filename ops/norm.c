/* Row normalisations (rmsnorm, layernorm) and rotary position embedding: argument
 * checks, output shapes, and the call into the dispatcher.
 *
 * Optional inputs are left out of the inputs array, and the kernel tells by n_inputs:
 *   rmsnorm:   {x} or {x, weight};
 *   layernorm: {x}, {x, weight} or {x, weight, bias}. A bias without a weight is passed
 *              as {x, ones, bias}, the op making the ones, so that inputs[1] is always
 *              the weight and inputs[2] always the bias.
 * The output never overlaps an input (these ops read a row before writing it, which
 * in-place would break on backends that split rows). */
#include <math.h>

#include "ops_internal.h"

#define FLOAT_DTYPES (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | \
                      BP_DTYPE_BIT(BP_DTYPE_BF16))

static bp_status null_out(const char *op, bp_tensor **out) {
    if (out)
        *out = NULL;
    return out ? BP_OK : bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: the out pointer is NULL", op);
}

/* Runs `op` on inputs[0..n) into `out`, or into a new tensor shaped like inputs[0]
 * when `out_new` is set (released again if the launch fails). */
static bp_status finish(bp_builtin_op op, const char *name, bp_device *device,
                        bp_tensor *const *inputs, int n_inputs, bp_tensor *out,
                        bp_tensor **out_new, const void *attrs) {
    bp_tensor *x = inputs[0];
    if (!out_new) {
        bp_status st = bp_check_out(name, out, device, x->dtype, x->ndim, x->shape, inputs,
                                    n_inputs, false);
        return st != BP_OK ? st : bp_op_run(op, x->dtype, device, inputs, n_inputs, &out, 1, attrs);
    }
    bp_status st = bp_op_alloc_out(device, x->dtype, x->ndim, x->shape, out_new);
    if (st != BP_OK)
        return st;
    st = bp_op_run(op, x->dtype, device, inputs, n_inputs, out_new, 1, attrs);
    if (st != BP_OK) {
        bp_tensor_release(*out_new);
        *out_new = NULL;
    }
    return st;
}

/* Checks x (a float tensor of at least one dim), the optional per-feature tensors
 * params[0..n_params) (NULL: absent; else [D] of x's dtype) and eps. */
static bp_status check_norm(const char *op, bp_tensor *x, bp_tensor *const *params,
                            const char *const *param_names, int n_params, float eps,
                            bp_device **out_device) {
    bp_tensor *all[3] = {x};
    int n = 1;
    for (int i = 0; i < n_params; i++)
        if (params[i])
            all[n++] = params[i];
    bp_status st = bp_check_tensors(op, all, n, out_device);
    if (st == BP_OK)
        st = bp_check_dtype(op, all, n, x->dtype);
    if (st == BP_OK)
        st = bp_check_dtype_allowed(op, x->dtype, FLOAT_DTYPES);
    if (st != BP_OK)
        return st;
    if (x->ndim < 1)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: x is a scalar; it needs at least one "
                            "dim to normalise over", op);
    int64_t d = x->shape[x->ndim - 1];
    for (int i = 0; i < n_params; i++) {
        const bp_tensor *p = params[i];
        if (p && (p->ndim != 1 || p->shape[0] != d)) {
            char got[160], xs[160];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: %s has shape %s, expected [%lld] "
                                "(the last dim of x, which is %s)", op, param_names[i],
                                bp_shape_str(p->shape, p->ndim, got, sizeof got), (long long)d,
                                bp_shape_str(x->shape, x->ndim, xs, sizeof xs));
        }
    }
    if (!(eps >= 0.0f) || isinf(eps))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: eps must be finite and >= 0, got %g", op,
                            (double)eps);
    return BP_OK;
}

static bp_status rmsnorm(bp_tensor *x, bp_tensor *weight, float eps, bp_tensor *out,
                         bp_tensor **out_new) {
    bp_device *device;
    bp_status st = check_norm("rmsnorm", x, &weight, (const char *const[]){"weight"}, 1, eps,
                              &device);
    if (st != BP_OK)
        return st;
    bp_tensor *inputs[2] = {x, weight};
    bp_norm_attrs attrs = {.eps = eps};
    return finish(BP_OP_RMSNORM, "rmsnorm", device, inputs, weight ? 2 : 1, out, out_new, &attrs);
}

bp_status bp_rmsnorm(bp_tensor *x, bp_tensor *weight, float eps, bp_tensor **out) {
    bp_status st = null_out("rmsnorm", out);
    return st != BP_OK ? st : rmsnorm(x, weight, eps, NULL, out);
}

bp_status bp_rmsnorm_out(bp_tensor *x, bp_tensor *weight, float eps, bp_tensor *out) {
    return rmsnorm(x, weight, eps, out, NULL);
}

static bp_status layernorm(bp_tensor *x, bp_tensor *weight, bp_tensor *bias, float eps,
                           bp_tensor *out, bp_tensor **out_new) {
    bp_device *device;
    bp_status st = check_norm("layernorm", x, (bp_tensor *const[]){weight, bias},
                              (const char *const[]){"weight", "bias"}, 2, eps, &device);
    if (st != BP_OK)
        return st;
    bp_tensor *ones = NULL;
    if (bias && !weight) {
        int64_t d = x->shape[x->ndim - 1];
        st = bp_tensor_empty(device, x->dtype, 1, &d, &ones);
        if (st == BP_OK)
            st = bp_fill(ones, 1.0);
        if (st != BP_OK) {
            bp_tensor_release(ones);
            return bp_error_prefix(st, "layernorm: making a weight of ones for the bias");
        }
        weight = ones;
    }
    bp_tensor *inputs[3] = {x, weight, bias};
    bp_norm_attrs attrs = {.eps = eps};
    st = finish(BP_OP_LAYERNORM, "layernorm", device, inputs, bias ? 3 : weight ? 2 : 1, out,
                out_new, &attrs);
    bp_tensor_release(ones); /* stream-ordered: the kernel still reads it */
    return st;
}

bp_status bp_layernorm(bp_tensor *x, bp_tensor *weight, bp_tensor *bias, float eps,
                       bp_tensor **out) {
    bp_status st = null_out("layernorm", out);
    return st != BP_OK ? st : layernorm(x, weight, bias, eps, NULL, out);
}

bp_status bp_layernorm_out(bp_tensor *x, bp_tensor *weight, bp_tensor *bias, float eps,
                           bp_tensor *out) {
    return layernorm(x, weight, bias, eps, out, NULL);
}

static bp_status rope(bp_tensor *x, const bp_rope_attrs *attrs, bp_tensor *out,
                      bp_tensor **out_new) {
    bp_device *device;
    bp_status st = bp_check_tensors("rope", &x, 1, &device);
    if (st == BP_OK)
        st = bp_check_dtype_allowed("rope", x->dtype, FLOAT_DTYPES);
    if (st != BP_OK)
        return st;
    if (!attrs)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "rope: attrs is NULL");
    char shape[160];
    if (x->ndim < 2)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "rope: x has shape %s; it needs at least 2 "
                            "dims ([..., S, D])", bp_shape_str(x->shape, x->ndim, shape,
                                                               sizeof shape));
    if (x->shape[x->ndim - 1] % 2 != 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "rope: the last dim of x (shape %s) must be "
                            "even: its elements rotate in pairs",
                            bp_shape_str(x->shape, x->ndim, shape, sizeof shape));
    if (!(attrs->theta > 0.0f) || isinf(attrs->theta))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "rope: theta must be finite and > 0, got %g",
                            (double)attrs->theta);
    bp_rope_attrs a = *attrs;
    a.interleaved = a.interleaved != 0;
    return finish(BP_OP_ROPE, "rope", device, &x, 1, out, out_new, &a);
}

bp_status bp_rope(bp_tensor *x, const bp_rope_attrs *attrs, bp_tensor **out) {
    bp_status st = null_out("rope", out);
    return st != BP_OK ? st : rope(x, attrs, NULL, out);
}

bp_status bp_rope_out(bp_tensor *x, const bp_rope_attrs *attrs, bp_tensor *out) {
    return rope(x, attrs, out, NULL);
}
