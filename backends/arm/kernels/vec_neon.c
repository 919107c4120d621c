/* The f32 row functions with NEON (arm_f32_neon of arm_common.h): 4 lanes a step; a
 * tail of fewer than 4 elements goes through the same vector code on a padded copy,
 * so every element of a row is computed the same way. */
#include <arm_neon.h>
#include <math.h>

#include "arm_common.h"
#include "vec_math.h"

typedef float32x4_t v4;

static inline v4 dup(float x) { return vdupq_n_f32(x); }

/* r = x + lo - n ln 2 with n = round((x + lo) log2 e) (vec_math.h); x - n ln2_hi is
 * exact, so lo, a few units at most, is added where x + lo would round it away. */
static inline v4 exp_reduce(v4 x, v4 lo, v4 *n) {
    *n = vrndnq_f32(vmulq_f32(vaddq_f32(x, lo), dup(AK_LOG2E)));
    v4 r = vfmsq_f32(x, *n, dup(AK_LN2_HI));
    return vaddq_f32(vfmsq_f32(r, *n, dup(AK_LN2_LO)), lo);
}

/* sum c[k] t^k, by Horner's rule with fused multiply-adds (unrolled: n and c are
 * constants where it is inlined). */
static inline v4 horner(v4 t, const float *c, int n) {
    v4 p = dup(c[n - 1]);
#pragma GCC unroll 16
    for (int k = n - 2; k >= 0; k--)
        p = vfmaq_f32(dup(c[k]), t, p);
    return p;
}

/* 2^k for integer lanes k in [-126, 127]. */
static inline v4 pow2(int32x4_t k) {
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k, vdupq_n_s32(127)), 23));
}

/* exp(x + lo) of each lane (0 for a plain exp). FMAX/FMIN keep a NaN, which stays NaN
 * throughout. */
static inline v4 exp4_lo(v4 x, v4 lo) {
    v4 n;
    v4 r = exp_reduce(vminq_f32(vmaxq_f32(x, dup(AK_EXP_LO)), dup(AK_EXP_HI)), lo, &n);
    v4 p = horner(r, ak_exp_poly, AK_POLY_LEN(ak_exp_poly));
    /* 2^n as two factors 2^h 2^(n-h): n reaches -152 and 128, beyond one exponent */
    int32x4_t ni = vcvtq_s32_f32(n);
    int32x4_t h = vshrq_n_s32(ni, 1);
    return vmulq_f32(vmulq_f32(p, pow2(h)), pow2(vsubq_s32(ni, h)));
}

static inline v4 exp4(v4 x) { return exp4_lo(x, dup(0)); }

/* tanh x = sign(x) e / (e + 2) with e = expm1(2 |x|) = 2^n expm1(r) + 2^n - 1. */
static inline v4 tanh4(v4 x) {
    v4 n;
    v4 r = exp_reduce(vmulq_f32(vminq_f32(vabsq_f32(x), dup(AK_TANH_CLAMP)), dup(2.0f)),
                      dup(0), &n);
    v4 p = horner(r, ak_expm1_poly, AK_POLY_LEN(ak_expm1_poly));
    v4 q = vfmaq_f32(r, vmulq_f32(r, r), p); /* expm1(r) */
    v4 s = pow2(vcvtq_s32_f32(n));          /* n <= 29 */
    v4 e = vfmaq_f32(vsubq_f32(s, dup(1.0f)), s, q);
    v4 t = vdivq_f32(e, vaddq_f32(e, dup(2.0f)));
    return vbslq_f32(vdupq_n_u32(0x80000000u), x, t); /* x's sign, t's magnitude */
}

/* x sigmoid(x) = x / (1 + e) for x >= 0, x e / (1 + e) below, with e = exp(-|x|):
 * e never overflows, so x e^x keeps its value where exp(-x) would be infinite. */
static inline v4 silu4(v4 x) {
    v4 e = exp4(vnegq_f32(vabsq_f32(x)));
    v4 num = vbslq_f32(vcltzq_f32(x), vmulq_f32(x, e), x);
    return vdivq_f32(num, vaddq_f32(dup(1.0f), e));
}

static inline v4 gelu_tanh4(v4 x) {
    v4 x3 = vmulq_f32(vmulq_f32(x, x), x);
    v4 z = vmulq_f32(dup(AK_GELU_K), vfmaq_f32(x, dup(AK_GELU_C), x3));
    return vmulq_f32(vmulq_f32(dup(0.5f), x), vaddq_f32(dup(1.0f), tanh4(z)));
}

/* 0.5 x erfc(-x / sqrt 2) (vec_math.h). */
static inline v4 gelu_erf4(v4 x) {
    v4 a = vminq_f32(vabsq_f32(x), dup(AK_ERFC_CLAMP));
    v4 t = vdivq_f32(dup(1.0f), vfmaq_f32(dup(1.0f), a, dup(0.5f * AK_SQRT1_2)));
    v4 p = horner(t, ak_erfc_poly, AK_POLY_LEN(ak_erfc_poly));
    v4 sq = vmulq_f32(a, a);               /* a^2 = sq + res exactly */
    v4 res = vfmaq_f32(vnegq_f32(sq), a, a);
    v4 e = vmulq_f32(t, exp4_lo(vmulq_f32(sq, dup(-0.5f)), vfmaq_f32(p, res, dup(-0.5f))));
    v4 erfc = vbslq_f32(vcltzq_f32(x), e, vsubq_f32(dup(2.0f), e));
    return vmulq_f32(vmulq_f32(dup(0.5f), x), erfc);
}

/* ---- elementwise: a loop of 4-lane steps and a padded tail ---- */

#define UNARY_ROW(name, EXPR)                                                              \
    static void name(float *o, const float *a, int64_t n) {                                 \
        int64_t i = 0;                                                                     \
        for (; i + 4 <= n; i += 4) {                                                       \
            v4 x = vld1q_f32(a + i);                                                       \
            vst1q_f32(o + i, EXPR);                                                        \
        }                                                                                  \
        if (i < n) {                                                                       \
            float t[4] = {0};                                                              \
            memcpy(t, a + i, (size_t)(n - i) * sizeof *t);                                 \
            v4 x = vld1q_f32(t);                                                           \
            vst1q_f32(t, EXPR);                                                            \
            memcpy(o + i, t, (size_t)(n - i) * sizeof *t);                                 \
        }                                                                                  \
    }

#define BINARY_ROW(name, EXPR)                                                             \
    static void name(float *o, const float *a, const float *b, int64_t n) {                 \
        int64_t i = 0;                                                                     \
        for (; i + 4 <= n; i += 4) {                                                       \
            v4 x = vld1q_f32(a + i), y = vld1q_f32(b + i);                                 \
            vst1q_f32(o + i, EXPR);                                                        \
        }                                                                                  \
        if (i < n) {                                                                       \
            float t[4] = {0}, u[4] = {1, 1, 1, 1};                                         \
            memcpy(t, a + i, (size_t)(n - i) * sizeof *t);                                 \
            memcpy(u, b + i, (size_t)(n - i) * sizeof *u);                                 \
            v4 x = vld1q_f32(t), y = vld1q_f32(u);                                         \
            vst1q_f32(t, EXPR);                                                            \
            memcpy(o + i, t, (size_t)(n - i) * sizeof *t);                                 \
        }                                                                                  \
    }

BINARY_ROW(add_row, vaddq_f32(x, y))
BINARY_ROW(sub_row, vsubq_f32(x, y))
BINARY_ROW(mul_row, vmulq_f32(x, y))
BINARY_ROW(div_row, vdivq_f32(x, y))
BINARY_ROW(max2_row, vmaxq_f32(x, y))
UNARY_ROW(exp_row, exp4(x))
UNARY_ROW(tanh_row, tanh4(x))
UNARY_ROW(silu_row, silu4(x))
UNARY_ROW(gelu_tanh_row, gelu_tanh4(x))
UNARY_ROW(gelu_erf_row, gelu_erf4(x))

static void scale_row(float *o, const float *a, float alpha, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(o + i, vmulq_n_f32(vld1q_f32(a + i), alpha));
    for (; i < n; i++)
        o[i] = a[i] * alpha;
}

/* ---- reductions: 4 vectors of partial results, then across lanes ---- */

static float sum_row(const float *x, int64_t n) {
    v4 s0 = dup(0), s1 = dup(0), s2 = dup(0), s3 = dup(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vaddq_f32(s0, vld1q_f32(x + i));
        s1 = vaddq_f32(s1, vld1q_f32(x + i + 4));
        s2 = vaddq_f32(s2, vld1q_f32(x + i + 8));
        s3 = vaddq_f32(s3, vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vaddq_f32(s0, vld1q_f32(x + i));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++)
        s += x[i];
    return s;
}

static float sumsq_row(const float *x, float c, int64_t n) {
    v4 s0 = dup(0), s1 = dup(0), cv = dup(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4 d0 = vsubq_f32(vld1q_f32(x + i), cv), d1 = vsubq_f32(vld1q_f32(x + i + 4), cv);
        s0 = vfmaq_f32(s0, d0, d0);
        s1 = vfmaq_f32(s1, d1, d1);
    }
    float s = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++)
        s += (x[i] - c) * (x[i] - c);
    return s;
}

/* FMAX and FMAXV return NaN when a lane is NaN, so a NaN anywhere wins. */
static float max_scaled_row(const float *x, float k, int64_t n) {
    v4 m0 = dup(-INFINITY), m1 = dup(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        m0 = vmaxq_f32(m0, vmulq_n_f32(vld1q_f32(x + i), k));
        m1 = vmaxq_f32(m1, vmulq_n_f32(vld1q_f32(x + i + 4), k));
    }
    float m = vmaxvq_f32(vmaxq_f32(m0, m1));
    for (; i < n; i++) {
        float v = x[i] * k;
        m = v > m || v != v ? v : m;
    }
    return m;
}

static float max_row(const float *x, int64_t n) { return max_scaled_row(x, 1.0f, n); }

static float exp_shift_row(float *y, const float *x, float k, float m, int64_t n) {
    v4 s = dup(0), mv = dup(m);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4 e = exp4(vsubq_f32(vmulq_n_f32(vld1q_f32(x + i), k), mv));
        vst1q_f32(y + i, e);
        s = vaddq_f32(s, e);
    }
    float sum = vaddvq_f32(s);
    if (i < n) {
        float t[4] = {0};
        memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
        vst1q_f32(t, exp4(vsubq_f32(vmulq_n_f32(vld1q_f32(t), k), mv)));
        for (int64_t j = 0; j < n - i; j++) {
            y[i + j] = t[j];
            sum += t[j];
        }
    }
    return sum;
}

static void affine_row(float *y, const float *x, float c, float k, const float *w,
                       const float *b, int64_t n) {
    v4 cv = dup(c);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4 v = vmulq_n_f32(vsubq_f32(vld1q_f32(x + i), cv), k);
        if (w)
            v = vmulq_f32(v, vld1q_f32(w + i));
        if (b)
            v = vaddq_f32(v, vld1q_f32(b + i));
        vst1q_f32(y + i, v);
    }
    for (; i < n; i++) {
        float v = (x[i] - c) * k;
        if (w)
            v *= w[i];
        if (b)
            v += b[i];
        y[i] = v;
    }
}

static void rotate_row(float *y0, float *y1, const float *x0, const float *x1, const float *c,
                       const float *s, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4 a = vld1q_f32(x0 + i), b = vld1q_f32(x1 + i);
        v4 cv = vld1q_f32(c + i), sv = vld1q_f32(s + i);
        vst1q_f32(y0 + i, vsubq_f32(vmulq_f32(a, cv), vmulq_f32(b, sv)));
        vst1q_f32(y1 + i, vaddq_f32(vmulq_f32(b, cv), vmulq_f32(a, sv)));
    }
    for (; i < n; i++) {
        float a = x0[i], b = x1[i];
        y0[i] = a * c[i] - b * s[i];
        y1[i] = b * c[i] + a * s[i];
    }
}

/* ---- conversions ---- */

static void load_f32(float *dst, const void *src, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof *dst);
}

static void store_f32(void *dst, const float *src, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof *src);
}

static void load_f16(float *dst, const void *src, int64_t n) {
    const float16_t *s = src;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(dst + i, vcvt_f32_f16(vld1_f16(s + i)));
    for (; i < n; i++)
        dst[i] = ak_f16_to_f32(((const uint16_t *)src)[i]);
}

static void store_f16(void *dst, const float *src, int64_t n) {
    float16_t *d = dst;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1_f16(d + i, vcvt_f16_f32(vld1q_f32(src + i)));
    for (; i < n; i++)
        ((uint16_t *)dst)[i] = ak_f32_to_f16(src[i]);
}

static void load_bf16(float *dst, const void *src, int64_t n) {
    const uint16_t *s = src;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(s + i), 16)));
    for (; i < n; i++)
        dst[i] = ak_bf16_to_f32(s[i]);
}

/* Nearest even on the upper half of each lane; a NaN keeps its upper half, quieted. */
static void store_bf16(void *dst, const float *src, int64_t n) {
    uint16_t *d = dst;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4 f = vld1q_f32(src + i);
        uint32x4_t bits = vreinterpretq_u32_f32(f);
        uint32x4_t lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
        uint32x4_t up = vshrq_n_u32(vaddq_u32(bits, vaddq_u32(lsb, vdupq_n_u32(0x7fff))), 16);
        uint32x4_t nan = vorrq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x40));
        vst1_u16(d + i, vmovn_u32(vbslq_u32(vceqq_f32(f, f), up, nan)));
    }
    for (; i < n; i++)
        d[i] = ak_f32_to_bf16(src[i]);
}

const arm_f32_ops arm_f32_neon = AK_F32_OPS_TABLE("neon");
