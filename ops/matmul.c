/* op "matmul": argument checks, the output shape, and the call into the dispatcher.
 *
 * a [..., M, K] @ b [..., K, N] -> [..., M, N], where trans_a / trans_b swap the last
 * two dims of a / b first (no copy: the kernel reads the strides). The batch dims
 * (all but the last two) broadcast like NumPy.
 *
 * 1-D operands are rejected rather than promoted as torch.matmul does (a [K] vector
 * as [1, K] on the left, [K, 1] on the right, the added dim dropped again): that
 * makes the output's rank depend on the inputs' ranks, which surprises more often
 * than it helps, and a vector is one bp_tensor_unsqueeze away from a matrix. */
#include "ops_internal.h"

#define MATMUL_DTYPES (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | \
                       BP_DTYPE_BIT(BP_DTYPE_BF16))

/* Checks a and b; fills the device and the output's shape. */
static bp_status check_matmul(bp_tensor *a, bp_tensor *b, int trans_a, int trans_b,
                              bp_device **device, int *out_ndim, int64_t *out_shape) {
    bp_tensor *in[2] = {a, b};
    bp_status st = bp_check_tensors("matmul", in, 2, device);
    if (st == BP_OK)
        st = bp_check_dtype_allowed("matmul", a->dtype, MATMUL_DTYPES);
    if (st == BP_OK)
        st = bp_check_dtype("matmul", in, 2, a->dtype);
    if (st != BP_OK)
        return st;

    char as[160], bs[160];
    bp_shape_str(a->shape, a->ndim, as, sizeof as);
    bp_shape_str(b->shape, b->ndim, bs, sizeof bs);
    if (a->ndim < 2 || b->ndim < 2)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "matmul: %s is %s (%d-D) but matmul takes "
                            "matrices of at least 2 dims; unsqueeze a vector to [1, K] or [K, 1]",
                            a->ndim < 2 ? "a" : "b", a->ndim < 2 ? as : bs,
                            a->ndim < 2 ? a->ndim : b->ndim);

    int64_t m = a->shape[a->ndim - (trans_a ? 1 : 2)];
    int64_t ka = a->shape[a->ndim - (trans_a ? 2 : 1)];
    int64_t kb = b->shape[b->ndim - (trans_b ? 1 : 2)];
    int64_t n = b->shape[b->ndim - (trans_b ? 2 : 1)];
    if (ka != kb) {
        if (!trans_a && !trans_b)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "matmul: a is %s but b is %s (inner "
                                "dimensions differ)", as, bs);
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "matmul: a is %s but b is %s (inner "
                            "dimensions differ: %lld from a%s vs %lld from b%s)", as, bs,
                            (long long)ka, trans_a ? " transposed" : "", (long long)kb,
                            trans_b ? " transposed" : "");
    }

    int ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < ndim - 2; d++) {
        int da = d - (ndim - a->ndim), db = d - (ndim - b->ndim);
        int64_t sa = da >= 0 ? a->shape[da] : 1;
        int64_t sb = db >= 0 ? b->shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "matmul: the batch dims of a %s and b "
                                "%s do not broadcast (dim %d: %lld vs %lld)", as, bs,
                                d - ndim, (long long)sa, (long long)sb);
        out_shape[d] = sa == 1 ? sb : sa;
    }
    out_shape[ndim - 2] = m;
    out_shape[ndim - 1] = n;
    *out_ndim = ndim;
    return BP_OK;
}

bp_status bp_matmul_out(bp_tensor *a, bp_tensor *b, int trans_a, int trans_b, bp_tensor *out) {
    bp_device *device;
    int ndim;
    int64_t shape[BP_MAX_DIMS];
    bp_status st = check_matmul(a, b, trans_a, trans_b, &device, &ndim, shape);
    bp_tensor *in[2] = {a, b};
    if (st == BP_OK)
        st = bp_check_out("matmul", out, device, a->dtype, ndim, shape, in, 2, false);
    if (st != BP_OK)
        return st;
    bp_matmul_attrs attrs = {.trans_a = trans_a != 0, .trans_b = trans_b != 0};
    return bp_op_run(BP_OP_MATMUL, a->dtype, device, in, 2, &out, 1, &attrs);
}

bp_status bp_matmul(bp_tensor *a, bp_tensor *b, int trans_a, int trans_b, bp_tensor **out) {
    if (!out)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "matmul: the out pointer is NULL");
    *out = NULL;
    bp_device *device;
    int ndim;
    int64_t shape[BP_MAX_DIMS];
    bp_status st = check_matmul(a, b, trans_a, trans_b, &device, &ndim, shape);
    if (st == BP_OK)
        st = bp_op_alloc_out(device, a->dtype, ndim, shape, out);
    if (st != BP_OK)
        return st;
    bp_tensor *in[2] = {a, b};
    bp_matmul_attrs attrs = {.trans_a = trans_a != 0, .trans_b = trans_b != 0};
    st = bp_op_run(BP_OP_MATMUL, a->dtype, device, in, 2, out, 1, &attrs);
    if (st != BP_OK) {
        bp_tensor_release(*out);
        *out = NULL;
    }
    return st;
}
