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
 * vector form without -ffast-math).
 *
 * Two forms of the same arithmetic. An includer with 16-lane VF that is compiled for
 * AVX-512 (and defines VEXP_AVX512) gets VRNDSCALEPS for n and VSCALEFPS for p 2^n:
 * 12 instructions a vector where the portable form takes about 20. VSCALEFPS
 * underflows to exactly 0 below about -104, so the clamp sits at -110, where n
 * stays small enough for the reduction's constants and -inf needs no select of its
 * own; lanes from -87 to -104 are subnormal. The portable form clamps at -87, so lanes
 * below give about 2^-126 instead of underflowing, and selects 0 for -inf. Either way
 * no row sum notices the tiny lanes, and a NaN lane stays NaN. */
#if defined(__AVX512F__) && defined(VEXP_AVX512)
#include <immintrin.h>

INLINE VF exp_neg(VF x) {
    _Static_assert(sizeof(VF) == sizeof(__m512), "VEXP_AVX512 needs 16 float lanes");
    /* VMAXPS returns its second operand where either is NaN: x, so NaN stays NaN. */
    __m512 y = _mm512_max_ps(_mm512_set1_ps(-110.0f), (__m512)x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(y, _mm512_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), y);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return (VF)_mm512_scalef_ps(p, n);
}
#else
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
#endif

/* tanh as sign(y) (1 - e) / (1 + e) with e = exp(-2|y|): absolute error ~1e-7. */
INLINE VF tanh_v(VF y) {
    VI sign = (VI)y & (int32_t)0x80000000u;
    VF e = exp_neg((VF)((VI)y | (int32_t)0x80000000u) * 2.0f);
    return (VF)((VI)((1.0f - e) / (1.0f + e)) | sign);
}

#endif
