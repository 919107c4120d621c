/* op "sdpa": argument checks, the output shape, and the call into the dispatcher.
 *
 * Score (i, j) of query row i and key row j, in this order (FlexAttention's score_mod
 * order, with the masks last as its mask_mod):
 *   s = scale * q_i . k_j
 *   s = softcap * tanh(s / softcap)            when softcap > 0
 *   s = s - slope[h] * (i - j)                 with alibi slopes
 *   s = -inf where j > i (causal) or j <= i - window (window > 0)
 * then out_i = softmax_j(s) . v; a row whose keys are all masked out is 0.
 * Query head h reads key/value head h / (H / Hkv) (grouped-query attention, as
 * repeat_interleave of k and v over the heads). attrs may be NULL (all defaults).
 * Kernels receive the attributes with scale resolved (never 0), causal as 0/1, window
 * and softcap as 0 when off, and has_alibi set from alibi_slopes, which is inputs[3]. */
#include <math.h>

#include "ops_internal.h"

#define SDPA_DTYPES (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | \
                     BP_DTYPE_BIT(BP_DTYPE_BF16))

/* Checks the call; fills the device, the attributes the kernel gets, and out's shape. */
static bp_status check_sdpa(bp_tensor *q, bp_tensor *k, bp_tensor *v, bp_tensor *alibi,
                            const bp_sdpa_attrs *attrs, bp_device **device,
                            bp_sdpa_attrs *resolved, int64_t *out_shape) {
    bp_tensor *in[4] = {q, k, v, alibi};
    bp_status st = bp_check_tensors("sdpa", in, alibi ? 4 : 3, device);
    if (st == BP_OK)
        st = bp_check_dtype_allowed("sdpa", q->dtype, SDPA_DTYPES);
    if (st == BP_OK)
        st = bp_check_dtype("sdpa", in, 3, q->dtype);
    if (st != BP_OK)
        return st;

    char qs[160], ks[160], vs[160];
    bp_shape_str(q->shape, q->ndim, qs, sizeof qs);
    bp_shape_str(k->shape, k->ndim, ks, sizeof ks);
    bp_shape_str(v->shape, v->ndim, vs, sizeof vs);
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: q, k and v must be 4-D (q [B, H, "
                            "Sq, D], k and v [B, Hkv, Sk, D]); got q %s, k %s, v %s", qs, ks, vs);
    bool kv_same = true;
    for (int d = 0; d < 4; d++)
        kv_same = kv_same && k->shape[d] == v->shape[d];
    if (!kv_same)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: k is %s but v is %s (k and v must "
                            "have the same shape)", ks, vs);
    if (q->shape[0] != k->shape[0])
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: q is %s but k and v are %s (batch "
                            "sizes differ)", qs, ks);
    if (q->shape[3] != k->shape[3])
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: q is %s but k and v are %s (head "
                            "dims differ)", qs, ks);
    int64_t heads = q->shape[1], kv_heads = k->shape[1];
    if (kv_heads == 0 ? heads != 0 : heads % kv_heads != 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: q has %lld heads but k and v have "
                            "%lld; the query heads must be a multiple of the key/value heads "
                            "(grouped-query attention)", (long long)heads, (long long)kv_heads);

    if (alibi) {
        if (alibi->dtype != BP_DTYPE_F32)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: alibi_slopes has dtype %s; it "
                                "must be f32 whatever the dtype of q", bp_dtype_name(alibi->dtype));
        if (alibi->ndim != 1 || alibi->shape[0] != heads) {
            char as[160];
            return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: alibi_slopes is %s but q has "
                                "%lld heads (expected f32 [%lld], one slope per query head)",
                                bp_shape_str(alibi->shape, alibi->ndim, as, sizeof as),
                                (long long)heads, (long long)heads);
        }
    }

    bp_sdpa_attrs a = attrs ? *attrs : (bp_sdpa_attrs){0};
    if (!isfinite(a.scale) || isnan(a.softcap))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: %s must be a finite number (got %g)",
                            isfinite(a.scale) ? "softcap" : "scale",
                            (double)(isfinite(a.scale) ? a.softcap : a.scale));
    int64_t head_dim = q->shape[3];
    if (a.scale == 0.0f)
        a.scale = head_dim > 0 ? (float)(1.0 / sqrt((double)head_dim)) : 1.0f;
    a.causal = a.causal != 0;
    if (a.window < 0)
        a.window = 0;
    if (!(a.softcap > 0.0f))
        a.softcap = 0.0f;
    a.has_alibi = alibi != NULL;
    *resolved = a;
    for (int d = 0; d < 4; d++)
        out_shape[d] = q->shape[d];
    return BP_OK;
}

bp_status bp_sdpa_out(bp_tensor *q, bp_tensor *k, bp_tensor *v, bp_tensor *alibi_slopes,
                      const bp_sdpa_attrs *attrs, bp_tensor *out) {
    bp_device *device;
    bp_sdpa_attrs a;
    int64_t shape[4];
    bp_status st = check_sdpa(q, k, v, alibi_slopes, attrs, &device, &a, shape);
    bp_tensor *in[4] = {q, k, v, alibi_slopes};
    int n_in = alibi_slopes ? 4 : 3;
    if (st == BP_OK)
        st = bp_check_out("sdpa", out, device, q->dtype, 4, shape, in, n_in, false);
    if (st != BP_OK)
        return st;
    return bp_op_run(BP_OP_SDPA, q->dtype, device, in, n_in, &out, 1, &a);
}

bp_status bp_sdpa(bp_tensor *q, bp_tensor *k, bp_tensor *v, bp_tensor *alibi_slopes,
                  const bp_sdpa_attrs *attrs, bp_tensor **out) {
    if (!out)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "sdpa: the out pointer is NULL");
    *out = NULL;
    bp_device *device;
    bp_sdpa_attrs a;
    int64_t shape[4];
    bp_status st = check_sdpa(q, k, v, alibi_slopes, attrs, &device, &a, shape);
    if (st == BP_OK)
        st = bp_op_alloc_out(device, q->dtype, 4, shape, out);
    if (st != BP_OK)
        return st;
    bp_tensor *in[4] = {q, k, v, alibi_slopes};
    st = bp_op_run(BP_OP_SDPA, q->dtype, device, in, alibi_slopes ? 4 : 3, out, 1, &a);
    if (st != BP_OK) {
        bp_tensor_release(*out);
        *out = NULL;
    }
    return st;
}
