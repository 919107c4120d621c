/* The error model of the op unit tests, of bp-conformance's ops and regions groups
 * (docs/ops.md "Numerics" explains it; this is the one place its constants live).
 *
 * A float64 reference (op_reference.h) gives, per output element, the exact result
 * `want` of the op on the (already rounded) inputs and `mag`: g(K) * M, the magnitude M
 * of what the element accumulated (sum |terms|) times its growth factor, plus the
 * documented allowances of transcendentals and of intermediates a backend may round,
 * all in units of eps_acc. A result passes when
 *     |got - want| <= EPS_ACC * mag + eps_out(dtype) * |want| + floor(dtype)
 * where EPS_ACC is the unit roundoff of f32 (kernels compute and accumulate in f32),
 * eps_out the output dtype's half ulp (the rounding of the stored result) and floor
 * what underflow may lose (f32's smallest normal; f16's smallest subnormal). A result without `mag`
 * (conversions, selections, integer and bool results) must match bit for bit. */
#ifndef BP_OP_TOLERANCES_H
#define BP_OP_TOLERANCES_H

#include <math.h>
#include <backplane/dtype.h>

/* f32's unit roundoff, 2^-24: the relative error of one f32 operation. */
#define BP_EPS_ACC 0x1p-24

/* The growth factor g(K) of an f32 accumulation of K terms, for references to scale
 * M = sum |terms| by: K, the worst case of any summation order (Higham's gamma_K), up
 * to K = 64, and 8 sqrt(K) beyond: the probabilistic bound of Higham and Mary (2019),
 * which holds for rounding errors that are independent and of mean zero (as for the
 * suite's random inputs) with probability at least 1 - 2 exp(-8^2 / 2) > 1 - 3e-14 per
 * element; plus 2 for the final operations (a divide, the store). */
static inline double bp_growth(double k) {
    return fmin(k, 8 * sqrt(k)) + 2;
}

/* Few-ulp allowances of the f32 transcendentals, in units of BP_EPS_ACC (one f32 ulp
 * is 2 units): exp, expf, exp2, tanh, expm1 within 8 ulps (CUDA 2, OpenCL 3-5, glibc
 * 1-2; the flash kernel's ex2.approx 2); erfc within 20 ulps (OpenCL allows 16). */
#define BP_EPS_TRANSCENDENTAL 16.0
#define BP_EPS_ERFC 40.0

/* The half ulp of a stored result of `dtype` (relative): 2^-24 f32, 2^-11 f16, 2^-8
 * bf16, 2^-53 f64; 0 for integers and bool. */
static inline double bp_eps_out(bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F32: return 0x1p-24;
    case BP_DTYPE_F16: return 0x1p-11;
    case BP_DTYPE_BF16: return 0x1p-8;
    case BP_DTYPE_F64: return 0x1p-53;
    default: return 0;
    }
}

/* The absolute error underflow may add: below f32's smallest normal, 2^-126, the f32
 * intermediates of a kernel keep no relative precision (an exp overflowing in silu's
 * denominator, a flush to zero as CUDA's ex2.approx.ftz does), and f16 results below
 * its smallest subnormal 2^-24 round to 0 or 2^-24. 0 for integers. */
static inline double bp_underflow_floor(bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F32:
    case BP_DTYPE_BF16:
    case BP_DTYPE_F64: return 0x1p-126;
    case BP_DTYPE_F16: return 0x1p-24;
    default: return 0;
    }
}

/* The bound on |got - want| of an element of `dtype` whose reference gave want and
 * mag (mag < 0: the result is exact, bound 0). */
static inline double bp_error_bound(bp_dtype dtype, double want, double mag) {
    if (mag < 0)
        return 0;
    return BP_EPS_ACC * mag + bp_eps_out(dtype) * fabs(want) + bp_underflow_floor(dtype);
}

#endif
