/* Constants of the vectorised exp, expm1 and erfc that vec_neon.c and vec_sve.c share.
 *
 * exp(x) = 2^n exp(r) with n = round(x log2 e) and r = x - n ln 2 (|r| <= ln 2 / 2),
 * ln 2 split in two (ln2_hi has 9 trailing zero bits, so n ln2_hi is exact for |n| <
 * 2^8); exp(r) is its Taylor polynomial to r^7 (truncation below 0.15 ulp on that
 * interval), in Horner form with fused multiply-adds: about 2 ulps in all. expm1
 * (for tanh) reuses the reduction and keeps r + r^2 (1/2 + r/6 + ... + r^6/8!), so
 * small arguments lose no relative precision. x is clamped to [-104, 89] first: below,
 * the result is under f32's smallest normal (the tolerance's floor), above it
 * overflows to infinity through the scaling as it should. */
#ifndef BP_ARM_VEC_MATH_H
#define BP_ARM_VEC_MATH_H

#define AK_LOG2E 1.44269504088896341f
#define AK_LN2_HI 0.693145751953125f
#define AK_LN2_LO 1.42860682030941723212e-6f
#define AK_EXP_LO (-104.0f)
#define AK_EXP_HI 89.0f
/* tanh(x) rounds to +-1 in f32 for |x| > 9.1: clamping there keeps expm1 finite. */
#define AK_TANH_CLAMP 10.0f
/* Polynomials, lowest coefficient first: exp(r) = sum c_k r^k (1/k! to k = 7);
 * expm1(r) = r + r^2 sum c_k r^k (1/(k+2)! to k = 6). */
static const float ak_exp_poly[] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120,
                                    1.0f / 720, 1.0f / 5040};
static const float ak_expm1_poly[] = {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720,
                                      1.0f / 5040, 1.0f / 40320};
#define AK_POLY_LEN(c) ((int)(sizeof(c) / sizeof(c)[0]))
/* gelu's tanh form: sqrt(2 / pi), 0.044715; erf form: 1 / sqrt 2. */
#define AK_GELU_K 0.7978845608028654f
#define AK_GELU_C 0.044715f
#define AK_SQRT1_2 0.70710678118654752f

/* erfc(z) for z >= 0 as t exp(-z^2 + P(t)), t = 1 / (1 + z/2), P of degree 9: the
 * Chebyshev fit of Numerical Recipes (Press et al., 2nd ed., section 6.2, erfcc), of
 * relative error below 1.2e-7 for every z >= 0. gelu takes z^2 = x^2 / 2 from x
 * exactly (x^2 as a product and its FMA residual), so the large exponent adds no
 * rounding of its own; erfc(-z) = 2 - erfc(z). |x| is clamped at 20, beyond which
 * erfc(z) is 0 or 2 in f32. */
static const float ak_erfc_poly[] = {-1.26551223f, 1.00002368f, 0.37409196f,
                                     0.09678418f,  -0.18628806f, 0.27886807f,
                                     -1.13520398f, 1.48851587f, -0.82215223f,
                                     0.17087277f};
#define AK_ERFC_CLAMP 20.0f

#endif
