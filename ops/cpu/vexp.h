/* exp(x) for x <= 0 and tanh, lane-wise over GNU C vectors of any width: the cpu
 * sdpa's softmax and softcap (ops/cpu/sdpa_flash.h), and tests/test_sdpa_exp.c, which
 * measures their accuracy. The includer defines VF and VI (float and int32 vectors of
 * the same lanes), VSPLAT(x) (a VF of x in every lane) and INLINE (simd.h). */
#ifndef BP_CPU_VEXP_H
#define BP_CPU_VEXP_H

#include <math.h>
#include <stdint.h>

#define VSELECT(mask, a, b) ((VF)(((VI)(a) & (mask)) | ((VI)(b) & ~(mask))))

/* exp(x) of lanes x <= 0, and exactly 0 for x = -inf: Cody-Waite reduction to
 * x = n ln2 + r, |r| <= ln2/2, and a degree-6 Taylor polynomial (relative error below
 * 4e-7 over [-87, 0]: tests/test_sdpa_exp.c), as vector arithmetic (libm's expf has no
 * vector form without -ffast-math). Lanes below -87 give about 2^-126 instead of
 * underflowing, which no row sum notices. */
INLINE VF exp_neg(VF x) {
    VF y = VSELECT(x < VSPLAT(-87.0f), VSPLAT(-87.0f), x);
    VF n = y * 1.44269504f + 12582912.0f; /* + 1.5 * 2^23 rounds to an integer */
    n = n - 12582912.0f;
    VF r = y - n * 0.693145752f;
    r = r - n * 1.42860677e-6f;
    VF p = VSPLAT(1.0f / 720.0f);
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    VI two_n = (__builtin_convertvector(n, VI) + 127) << 23;
    return VSELECT(x == VSPLAT(-INFINITY), VSPLAT(0.0f), p * (VF)two_n);
}

/* tanh as sign(y) (1 - e) / (1 + e) with e = exp(-2|y|): absolute error ~1e-7. */
INLINE VF tanh_v(VF y) {
    VI sign = (VI)y & (int32_t)0x80000000u;
    VF e = exp_neg((VF)((VI)y | (int32_t)0x80000000u) * 2.0f);
    return (VF)((VI)((1.0f - e) / (1.0f + e)) | sign);
}

#endif
