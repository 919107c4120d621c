/* Per-dtype tolerances of the op unit tests and of bp-conformance's ops group, the one
 * place they are written down (docs/ops.md cites this file). A result passes when
 *     |got - want| <= atol * growth + rtol * |want|
 * where `want` is computed in float64 from the same (already rounded) inputs, and
 * growth = sqrt(K) for an op that accumulates K products or terms (sum, mean,
 * matmul, sdpa, softmax and norm rows), else 1. Kernels accumulate in f32, so the
 * f32 figures cover f32 rounding; f16 and bf16 add the rounding of the stored result
 * (half an ulp: 2^-11 and 2^-8 relative). Integer and bool results must be exact. */
#ifndef BP_OP_TOLERANCES_H
#define BP_OP_TOLERANCES_H

#include <math.h>
#include <backplane/dtype.h>

typedef struct bp_tolerance {
    double atol;
    double rtol;
} bp_tolerance;

static const bp_tolerance bp_tolerances[BP_DTYPE_COUNT] = {
    [BP_DTYPE_F32] = {1e-5, 1e-5},
    [BP_DTYPE_F16] = {2e-3, 2e-3},
    [BP_DTYPE_BF16] = {1.6e-2, 1.6e-2},
    [BP_DTYPE_F64] = {1e-5, 1e-5}, /* computed in f32 */
    [BP_DTYPE_I8] = {0, 0},
    [BP_DTYPE_U8] = {0, 0},
    [BP_DTYPE_I32] = {0, 0},
    [BP_DTYPE_I64] = {0, 0},
    [BP_DTYPE_BOOL] = {0, 0},
};

/* The tolerance for a result of `dtype` that accumulates `terms` values (1 if none). */
static inline bp_tolerance bp_tolerance_for(bp_dtype dtype, double terms) {
    bp_tolerance t = bp_tolerances[dtype];
    t.atol *= sqrt(terms > 1 ? terms : 1);
    return t;
}

#endif
