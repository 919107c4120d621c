/* backplane: the op library. Every op checks its arguments here (shapes, broadcasting,
 * dtypes, devices, aliasing), then goes through bp_dispatch to the kernel registered
 * for (op, device type, dtype), enqueued on the thread's current stream of the
 * tensors' device. Ops come in two forms: bp_X(..., &out) allocates the output,
 * bp_X_out(..., out) writes an existing one of the right shape and dtype.
 *
 * Rules shared by all ops:
 *  - every tensor of one call lives on one device (else BP_ERR_INVALID_ARGUMENT naming
 *    both devices);
 *  - inputs of one call share one dtype, except where an op says otherwise (no implicit
 *    promotion: cast first);
 *  - binary ops and where broadcast like NumPy (trailing dims align; a dim of 1
 *    stretches); a mismatch names both shapes;
 *  - an out tensor may be an input itself (same view) for elementwise ops; any other
 *    overlap with an input is an error;
 *  - float math runs for f32, f16 and bf16 and accumulates in f32; the dtypes each op
 *    takes are listed in docs/ops.md and by bp_kernel_dtypes().
 * The op names (for tracing, bp_op_find and kernel registration) are given with each op.
 */
#ifndef BACKPLANE_OPS_H
#define BACKPLANE_OPS_H

#include <backplane/dispatcher.h>
#include <backplane/op_attrs.h>
#include <backplane/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- creation and copies ---- */

/** op "fill": every element of `out` becomes `value` (converted to its dtype). All dtypes. */
BP_API bp_status bp_fill(bp_tensor *out, double value);
/** op "copy": dst = src converted to dst's dtype; src broadcasts to dst's shape. Same
 *  device (use bp_tensor_to across devices). All dtype pairs. */
BP_API bp_status bp_copy(bp_tensor *dst, bp_tensor *src);
/** A new contiguous tensor: src converted to `dtype` (op "copy"). */
BP_API bp_status bp_cast(bp_tensor *src, bp_dtype dtype, bp_tensor **out);

/* ---- elementwise ---- */

/** ops "add", "sub", "mul", "div": broadcasting binary arithmetic. */
BP_API bp_status bp_add(bp_tensor *a, bp_tensor *b, bp_tensor **out);
BP_API bp_status bp_add_out(bp_tensor *a, bp_tensor *b, bp_tensor *out);
BP_API bp_status bp_sub(bp_tensor *a, bp_tensor *b, bp_tensor **out);
BP_API bp_status bp_sub_out(bp_tensor *a, bp_tensor *b, bp_tensor *out);
BP_API bp_status bp_mul(bp_tensor *a, bp_tensor *b, bp_tensor **out);
BP_API bp_status bp_mul_out(bp_tensor *a, bp_tensor *b, bp_tensor *out);
BP_API bp_status bp_div(bp_tensor *a, bp_tensor *b, bp_tensor **out);
BP_API bp_status bp_div_out(bp_tensor *a, bp_tensor *b, bp_tensor *out);
/** op "scale": out = a * alpha. */
BP_API bp_status bp_scale(bp_tensor *a, double alpha, bp_tensor **out);
BP_API bp_status bp_scale_out(bp_tensor *a, double alpha, bp_tensor *out);
/** ops "exp", "tanh", "silu" (x * sigmoid(x)), "gelu" (erf form, or the tanh
 *  approximation when approximate_tanh is nonzero). */
BP_API bp_status bp_exp(bp_tensor *a, bp_tensor **out);
BP_API bp_status bp_exp_out(bp_tensor *a, bp_tensor *out);
BP_API bp_status bp_tanh(bp_tensor *a, bp_tensor **out);
BP_API bp_status bp_tanh_out(bp_tensor *a, bp_tensor *out);
BP_API bp_status bp_silu(bp_tensor *a, bp_tensor **out);
BP_API bp_status bp_silu_out(bp_tensor *a, bp_tensor *out);
BP_API bp_status bp_gelu(bp_tensor *a, int approximate_tanh, bp_tensor **out);
BP_API bp_status bp_gelu_out(bp_tensor *a, int approximate_tanh, bp_tensor *out);
/** op "where": out = cond ? a : b; cond is bool; the three broadcast together. */
BP_API bp_status bp_where(bp_tensor *cond, bp_tensor *a, bp_tensor *b, bp_tensor **out);
BP_API bp_status bp_where_out(bp_tensor *cond, bp_tensor *a, bp_tensor *b, bp_tensor *out);

/* ---- reductions and normalisations ---- */

/** ops "sum", "max", "mean" over dim `dim` (negative counts from the end); keepdim
 *  keeps it as size 1. A reduction over an empty dim: sum 0, mean NaN, max an error. */
BP_API bp_status bp_sum(bp_tensor *a, int dim, int keepdim, bp_tensor **out);
BP_API bp_status bp_sum_out(bp_tensor *a, int dim, int keepdim, bp_tensor *out);
BP_API bp_status bp_max(bp_tensor *a, int dim, int keepdim, bp_tensor **out);
BP_API bp_status bp_max_out(bp_tensor *a, int dim, int keepdim, bp_tensor *out);
BP_API bp_status bp_mean(bp_tensor *a, int dim, int keepdim, bp_tensor **out);
BP_API bp_status bp_mean_out(bp_tensor *a, int dim, int keepdim, bp_tensor *out);
/** op "softmax" over the last dim of a * scale; with `causal`, for a tensor whose last
 *  two dims are [Sq, Sk], element (i, j) with j > i is masked out (top-left aligned). */
BP_API bp_status bp_softmax(bp_tensor *a, float scale, int causal, bp_tensor **out);
BP_API bp_status bp_softmax_out(bp_tensor *a, float scale, int causal, bp_tensor *out);
/** op "rmsnorm": x / sqrt(mean(x^2, last dim) + eps) * weight; weight [D] or NULL. */
BP_API bp_status bp_rmsnorm(bp_tensor *x, bp_tensor *weight, float eps, bp_tensor **out);
BP_API bp_status bp_rmsnorm_out(bp_tensor *x, bp_tensor *weight, float eps, bp_tensor *out);
/** op "layernorm" over the last dim; weight and bias [D] or NULL. */
BP_API bp_status bp_layernorm(bp_tensor *x, bp_tensor *weight, bp_tensor *bias, float eps,
                              bp_tensor **out);
BP_API bp_status bp_layernorm_out(bp_tensor *x, bp_tensor *weight, bp_tensor *bias, float eps,
                                  bp_tensor *out);
/** op "rope": rotary position embedding of x [..., S, D] (D even), position of row s
 *  = position_offset + s, frequencies theta^(-2i/D). */
BP_API bp_status bp_rope(bp_tensor *x, const bp_rope_attrs *attrs, bp_tensor **out);
BP_API bp_status bp_rope_out(bp_tensor *x, const bp_rope_attrs *attrs, bp_tensor *out);

/* ---- matmul, cat, attention ---- */

/** op "matmul": a [..., M, K] @ b [..., K, N] (after the optional transposes of the
 *  last two dims) -> [..., M, N]; batch dims broadcast; 2-D and batched. */
BP_API bp_status bp_matmul(bp_tensor *a, bp_tensor *b, int trans_a, int trans_b, bp_tensor **out);
BP_API bp_status bp_matmul_out(bp_tensor *a, bp_tensor *b, int trans_a, int trans_b,
                               bp_tensor *out);
/** op "cat": concatenates n tensors along dim; all other dims equal. All dtypes. */
BP_API bp_status bp_cat(bp_tensor *const *tensors, int n, int dim, bp_tensor **out);
BP_API bp_status bp_cat_out(bp_tensor *const *tensors, int n, int dim, bp_tensor *out);
/** op "sdpa": fused attention softmax(q k^T * scale + masks) v without materialising the
 *  score matrix. q [B, H, Sq, D], k and v [B, Hkv, Sk, D] with H % Hkv == 0 (grouped
 *  query attention), out [B, H, Sq, D]. alibi_slopes: f32 [H] or NULL (adds
 *  -slope * (i - j) to score (i, j)). Attributes as bp_sdpa_attrs (has_alibi is set
 *  from alibi_slopes); NULL attrs means all defaults. Each score is built in this order:
 *  q.k * scale, then soft-capping, then the ALiBi bias, then the causal and window
 *  masks; a query row that sees no key gives zeros. */
BP_API bp_status bp_sdpa(bp_tensor *q, bp_tensor *k, bp_tensor *v, bp_tensor *alibi_slopes,
                         const bp_sdpa_attrs *attrs, bp_tensor **out);
BP_API bp_status bp_sdpa_out(bp_tensor *q, bp_tensor *k, bp_tensor *v, bp_tensor *alibi_slopes,
                             const bp_sdpa_attrs *attrs, bp_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
