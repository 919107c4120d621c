/* Float64 references of the built-in ops (docs/ops.md), the one copy shared by the
 * unit tests (tests/test_ops_*.c) and bp-conformance (group_ops.c).
 *
 * Inputs are row-major double arrays holding the values as stored in the tensors
 * (already rounded to their dtype), with their logical shapes; a reference returns a
 * bp_ref_result: the malloc'ed row-major values of the result and, per element, the
 * error magnitude the bound of tolerances.h scales (docs/ops.md "Numerics"), which the
 * caller frees with bp_ref_free. Values are exact float64, not rounded to the output's
 * dtype: the bound covers that rounding. Only where rounding is the op's meaning
 * (integer results, conversions) do references round, with bp_ref_round, and such
 * results are exact (no magnitudes). Shapes are not validated: pass what the op
 * accepts. No tensors, devices or test framework are used here. */
#ifndef BP_OP_REFERENCE_H
#define BP_OP_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include <backplane/dtype.h>
#include <backplane/op_attrs.h>
#include <backplane/tensor.h>

/* A logical shape: ndim sizes in d[0..ndim); ndim 0 is a scalar. */
typedef struct bp_ref_shape {
    int ndim;
    int64_t d[BP_MAX_DIMS];
} bp_ref_shape;

/* The number of elements of s (1 for ndim 0). */
int64_t bp_ref_numel(bp_ref_shape s);

/* A reference result: v, the exact values (row-major; never NULL-sized: an empty
 * result has a one-element allocation), and mag, per element g(K) * M in units of
 * BP_EPS_ACC (tolerances.h): the magnitude M of what the element accumulated,
 * sum |terms|, times its growth factor g(K), plus the allowances of transcendentals
 * and of the intermediates a kernel may round. mag is NULL when the result is exact:
 * a kernel must match it bit for bit. */
typedef struct bp_ref_result {
    double *v;
    double *mag;
} bp_ref_result;

/* An exact result over caller-owned values (not to be freed with bp_ref_free). */
static inline bp_ref_result bp_ref_exact(double *v) {
    return (bp_ref_result){v, NULL};
}

/* Frees both arrays of r and clears it. */
void bp_ref_free(bp_ref_result *r);

/* ---- conversions: fill, copy, cast ---- */

/* v as storing it in `dtype` gives it: float dtypes round to nearest even (f16/bf16
 * overflow to inf), integers truncate toward zero (v must fit), bool is v != 0. */
double bp_ref_round(double v, bp_dtype dtype);

/* fill: n elements of `value` stored in `dtype`. */
bp_ref_result bp_ref_fill(int64_t n, double value, bp_dtype dtype);

/* copy: src (shape src_shape) broadcast to dst_shape and converted to `dst_dtype`. */
bp_ref_result bp_ref_copy(const double *src, bp_ref_shape src_shape, bp_ref_shape dst_shape,
                    bp_dtype dst_dtype);

/* ---- broadcasting (NumPy rules) ---- */

/* The broadcast shape of n shapes that broadcast together. */
bp_ref_shape bp_ref_broadcast_shape(const bp_ref_shape *shapes, int n);

/* The row-major index into an input of shape `in` of element i (row-major) of the
 * broadcast shape `out`. */
int64_t bp_ref_broadcast_index(bp_ref_shape out, bp_ref_shape in, int64_t i);

/* ---- elementwise ---- */

typedef enum bp_ref_binary_op { BP_REF_ADD, BP_REF_SUB, BP_REF_MUL, BP_REF_DIV } bp_ref_binary_op;

/* The op's name ("add"). */
const char *bp_ref_binary_name(bp_ref_binary_op op);

/* add, sub, mul, div: a op b over the broadcast of sa and sb. For integer dtypes the
 * result is rounded to `dtype` (values must fit); float results are exact. */
bp_ref_result bp_ref_binary(bp_ref_binary_op op, bp_dtype dtype, bp_ref_shape sa, const double *a,
                      bp_ref_shape sb, const double *b);

typedef enum bp_ref_unary_op {
    BP_REF_EXP,
    BP_REF_TANH,
    BP_REF_SILU,      /* x * sigmoid(x) */
    BP_REF_GELU,      /* erf form */
    BP_REF_GELU_TANH, /* gelu with approximate_tanh */
    BP_REF_SCALE,     /* x * alpha */
} bp_ref_unary_op;

/* The op's name ("gelu" for both gelu forms). */
const char *bp_ref_unary_name(bp_ref_unary_op op);

/* One element of a unary op; alpha is scale's factor (ignored by the others). */
double bp_ref_unary_value(bp_ref_unary_op op, double x, double alpha);

/* exp, tanh, silu, gelu, scale over n elements. */
bp_ref_result bp_ref_unary(bp_ref_unary_op op, const double *x, int64_t n, double alpha);

/* where: cond != 0 ? a : b over the broadcast of the three shapes. */
bp_ref_result bp_ref_where(bp_ref_shape sc, const double *cond, bp_ref_shape sa, const double *a,
                     bp_ref_shape sb, const double *b);

/* ---- reductions and normalisations ---- */

typedef enum bp_ref_reduce_op { BP_REF_SUM, BP_REF_MAX, BP_REF_MEAN } bp_ref_reduce_op;

/* The op's name ("sum"). */
const char *bp_ref_reduce_name(bp_ref_reduce_op op);

/* The shape of a reduction of s over dim (negative counts from the end; a scalar
 * stays a scalar), keeping it as size 1 when keepdim. */
bp_ref_shape bp_ref_reduced_shape(bp_ref_shape s, int dim, int keepdim);

/* sum, max, mean of x (shape s) over dim, laid out as bp_ref_reduced_shape (keepdim
 * does not change the order). An empty dim gives sum 0, mean NaN, max -inf (the op
 * refuses it). Integer dtypes round the result to `dtype`. */
bp_ref_result bp_ref_reduce(bp_ref_reduce_op op, const double *x, bp_ref_shape s, int dim,
                      bp_dtype dtype);

/* softmax over the last dim of x * scale. With causal, for last two dims [Sq, Sk],
 * row i keeps keys j <= i (top-left aligned) and the rest are 0; a row whose kept
 * logits are all -inf is all zeros. */
bp_ref_result bp_ref_softmax(const double *x, bp_ref_shape s, float scale, int causal);

/* rmsnorm over rows of length d of x (n elements): x / sqrt(mean(x^2) + eps) * w.
 * w: d values or NULL (ones). */
bp_ref_result bp_ref_rmsnorm(const double *x, int64_t n, int64_t d, const double *w, float eps);

/* layernorm over rows of length d: (x - mean) / sqrt(var + eps) * w + b with the
 * biased variance. w, b: d values or NULL (ones, zeros). */
bp_ref_result bp_ref_layernorm(const double *x, int64_t n, int64_t d, const double *w,
                         const double *b, float eps);

/* rope of x [..., S, D] (D even) with attrs' theta, position_offset and layout
 * (interleaved != 0: neighbour pairs, else halves). */
bp_ref_result bp_ref_rope(const double *x, bp_ref_shape s, const bp_rope_attrs *attrs);

/* ---- matmul, cat, attention ---- */

/* The result shape of matmul(a, b, ta, tb): broadcast batch dims, then [M, N]. */
bp_ref_shape bp_ref_matmul_shape(bp_ref_shape sa, bp_ref_shape sb, int ta, int tb);

/* matmul: a [..., M, K] @ b [..., K, N] after the optional transposes of the last two
 * dims, batch dims broadcast; K = 0 gives zeros. */
bp_ref_result bp_ref_matmul(const double *a, bp_ref_shape sa, const double *b, bp_ref_shape sb,
                      int ta, int tb);

/* The result shape of cat of n shapes along dim (negative counts from the end). */
bp_ref_shape bp_ref_cat_shape(const bp_ref_shape *shapes, int n, int dim);

/* cat: parts[i] (shape shapes[i]) concatenated along dim. */
bp_ref_result bp_ref_cat(const double *const *parts, const bp_ref_shape *shapes, int n, int dim);

/* The sizes of an sdpa call: q [b, h, sq, d], k and v [b, hkv, sk, d]. */
typedef struct bp_ref_sdpa_dims {
    int64_t b, h, hkv, sq, sk, d;
} bp_ref_sdpa_dims;

/* A 4-D input of sdpa given as values plus element strides, so that strided layouts
 * ([B, S, H, D] viewed as [B, H, S, D]) are read as the op reads them. */
typedef struct bp_ref_view4 {
    const double *v;
    int64_t st[4];
} bp_ref_view4;

/* The view of contiguous values of shape [*, h, s, d]. */
bp_ref_view4 bp_ref_view4_contiguous(const double *v, int64_t h, int64_t s, int64_t d);

/* sdpa, out [b, h, sq, d] contiguous: per score q.k * scale (0: 1/sqrt(d)), then the
 * softcap, then ALiBi (slopes: h values, or NULL for none; attrs->has_alibi is not
 * read), then the causal and window masks; softmax over the keys times v; a query row
 * that sees no key is 0. attrs NULL means all defaults. dtype: of q, k, v and out; for
 * f16 and bf16 the magnitudes allow the probabilities P rounded to dtype before P.V
 * (as flash kernels feed tensor cores): eps(dtype) * sum_j P_j |v_j| / sum P. */
bp_ref_result bp_ref_sdpa(bp_ref_sdpa_dims n, const bp_sdpa_attrs *attrs, bp_ref_view4 q,
                          bp_ref_view4 k, bp_ref_view4 v, const double *slopes, bp_dtype dtype);

#endif
