/* The f32 row functions with SVE (arm_f32_sve of arm_common.h), and f16 add, sub,
 * mul, div in SVE's f16 instructions (arm_f16_sve). Vector-length agnostic: every
 * loop steps by svcntw() (svcnth() for f16) lanes under a svwhilelt predicate, so one
 * binary is right at every vector length and needs no tail code. */
#include <arm_sve.h>
#include <math.h>

#include "arm_common.h"
#include "vec_math.h"

typedef svfloat32_t vf;

/* A loop over n f32 lanes: i steps by the vector length, pg holds the lanes below n. */
#define FOR_LANES(i, n) for (int64_t i = 0; i < (n); i += (int64_t)svcntw())
#define PRED(i, n) svwhilelt_b32_s64((i), (n))

/* exp(x + lo) = 2^n exp(r) with n = round((x + lo) log2 e) (vec_math.h).
 * (n is returned on its own, not through a pointer: gcc 12's ASan asserts in
 * asan_expand_mark_ifn on an SVE vector whose address is taken.) */
static inline vf exp_n(svbool_t pg, vf x, vf lo) {
    return svrintn_f32_x(pg, svmul_n_f32_x(pg, svadd_f32_x(pg, x, lo), AK_LOG2E));
}

/* r = x + lo - n ln 2; x - n ln2_hi is exact, so lo, a few units at most, is added where
 * x + lo would round it away. */
static inline vf exp_reduce(svbool_t pg, vf x, vf lo, vf n) {
    vf r = svmls_n_f32_x(pg, x, n, AK_LN2_HI);
    return svadd_f32_x(pg, svmls_n_f32_x(pg, r, n, AK_LN2_LO), lo);
}

/* sum c[k] t^k, by Horner's rule with fused multiply-adds (unrolled: n and c are
 * constants where it is inlined). */
static inline vf horner(svbool_t pg, vf t, const float *c, int n) {
    vf p = svdup_f32(c[n - 1]);
#pragma GCC unroll 16
    for (int k = n - 2; k >= 0; k--)
        p = svmad_n_f32_x(pg, p, t, c[k]);
    return p;
}

/* exp(x + lo) of each active lane (0 for a plain exp); FMAX/FMIN keep a NaN. FSCALE
 * applies 2^n in one rounding, into the subnormals or to infinity. */
static inline vf exp_lo_v(svbool_t pg, vf x, vf lo) {
    vf xc = svmin_n_f32_x(pg, svmax_n_f32_x(pg, x, AK_EXP_LO), AK_EXP_HI);
    vf n = exp_n(pg, xc, lo);
    vf r = exp_reduce(pg, xc, lo, n);
    vf p = horner(pg, r, ak_exp_poly, AK_POLY_LEN(ak_exp_poly));
    return svscale_f32_x(pg, p, svcvt_s32_f32_x(pg, n));
}

static inline vf exp_v(svbool_t pg, vf x) { return exp_lo_v(pg, x, svdup_f32(0)); }

/* tanh x = sign(x) e / (e + 2) with e = expm1(2 |x|) = 2^n expm1(r) + 2^n - 1. */
static inline vf tanh_v(svbool_t pg, vf x) {
    vf y = svmul_n_f32_x(pg, svmin_n_f32_x(pg, svabs_f32_x(pg, x), AK_TANH_CLAMP), 2.0f);
    vf n = exp_n(pg, y, svdup_f32(0));
    vf r = exp_reduce(pg, y, svdup_f32(0), n);
    vf p = horner(pg, r, ak_expm1_poly, AK_POLY_LEN(ak_expm1_poly));
    vf q = svmla_f32_x(pg, r, svmul_f32_x(pg, r, r), p); /* expm1(r) */
    vf s = svscale_f32_x(pg, svdup_f32(1.0f), svcvt_s32_f32_x(pg, n));
    vf e = svmla_f32_x(pg, svsub_n_f32_x(pg, s, 1.0f), s, q);
    vf t = svdiv_f32_x(pg, e, svadd_n_f32_x(pg, e, 2.0f));
    svuint32_t sign = svand_n_u32_x(pg, svreinterpret_u32_f32(x), 0x80000000u);
    return svreinterpret_f32_u32(svorr_u32_x(pg, svreinterpret_u32_f32(t), sign));
}

/* x sigmoid(x) = x / (1 + e) for x >= 0, x e / (1 + e) below, with e = exp(-|x|):
 * e never overflows, so x e^x keeps its value where exp(-x) would be infinite. */
static inline vf silu_v(svbool_t pg, vf x) {
    vf e = exp_v(pg, svneg_f32_x(pg, svabs_f32_x(pg, x)));
    vf num = svsel_f32(svcmplt_n_f32(pg, x, 0.0f), svmul_f32_x(pg, x, e), x);
    return svdiv_f32_x(pg, num, svadd_n_f32_x(pg, e, 1.0f));
}

static inline vf gelu_tanh_v(svbool_t pg, vf x) {
    vf x3 = svmul_f32_x(pg, svmul_f32_x(pg, x, x), x);
    vf z = svmul_n_f32_x(pg, svmla_n_f32_x(pg, x, x3, AK_GELU_C), AK_GELU_K);
    vf t = svadd_n_f32_x(pg, tanh_v(pg, z), 1.0f);
    return svmul_f32_x(pg, svmul_n_f32_x(pg, x, 0.5f), t);
}

/* 0.5 x erfc(-x / sqrt 2) (vec_math.h). */
static inline vf gelu_erf_v(svbool_t pg, vf x) {
    vf a = svmin_n_f32_x(pg, svabs_f32_x(pg, x), AK_ERFC_CLAMP);
    vf t = svdivr_n_f32_x(pg, svmad_n_f32_x(pg, a, svdup_f32(0.5f * AK_SQRT1_2), 1.0f), 1.0f);
    vf p = horner(pg, t, ak_erfc_poly, AK_POLY_LEN(ak_erfc_poly));
    vf sq = svmul_f32_x(pg, a, a); /* a^2 = sq + res exactly */
    vf res = svnmls_f32_x(pg, sq, a, a);
    vf e = svmul_f32_x(pg, t, exp_lo_v(pg, svmul_n_f32_x(pg, sq, -0.5f),
                                       svmla_n_f32_x(pg, p, res, -0.5f)));
    vf erfc = svsel_f32(svcmplt_n_f32(pg, x, 0.0f), e, svsubr_n_f32_x(pg, e, 2.0f));
    return svmul_f32_x(pg, svmul_n_f32_x(pg, x, 0.5f), erfc);
}

#define UNARY_ROW(name, EXPR)                                                              \
    static void name(float *o, const float *a, int64_t n) {                                 \
        FOR_LANES(i, n) {                                                                  \
            svbool_t pg = PRED(i, n);                                                      \
            vf x = svld1_f32(pg, a + i);                                                   \
            svst1_f32(pg, o + i, EXPR);                                                    \
        }                                                                                  \
    }

#define BINARY_ROW(name, EXPR)                                                             \
    static void name(float *o, const float *a, const float *b, int64_t n) {                 \
        FOR_LANES(i, n) {                                                                  \
            svbool_t pg = PRED(i, n);                                                      \
            vf x = svld1_f32(pg, a + i), y = svld1_f32(pg, b + i);                         \
            svst1_f32(pg, o + i, EXPR);                                                    \
        }                                                                                  \
    }

BINARY_ROW(add_row, svadd_f32_x(pg, x, y))
BINARY_ROW(sub_row, svsub_f32_x(pg, x, y))
BINARY_ROW(mul_row, svmul_f32_x(pg, x, y))
BINARY_ROW(div_row, svdiv_f32_x(pg, x, y))
BINARY_ROW(max2_row, svmax_f32_x(pg, x, y))
UNARY_ROW(exp_row, exp_v(pg, x))
UNARY_ROW(tanh_row, tanh_v(pg, x))
UNARY_ROW(silu_row, silu_v(pg, x))
UNARY_ROW(gelu_tanh_row, gelu_tanh_v(pg, x))
UNARY_ROW(gelu_erf_row, gelu_erf_v(pg, x))

static void scale_row(float *o, const float *a, float alpha, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        svst1_f32(pg, o + i, svmul_n_f32_x(pg, svld1_f32(pg, a + i), alpha));
    }
}

/* ---- reductions: merging (_m) operations leave inactive lanes as they were ---- */

static float sum_row(const float *x, int64_t n) {
    vf s = svdup_f32(0);
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        s = svadd_f32_m(pg, s, svld1_f32(pg, x + i));
    }
    return svaddv_f32(svptrue_b32(), s);
}

static float sumsq_row(const float *x, float c, int64_t n) {
    vf s = svdup_f32(0);
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        vf d = svsub_n_f32_x(pg, svld1_f32(pg, x + i), c);
        s = svmla_f32_m(pg, s, d, d);
    }
    return svaddv_f32(svptrue_b32(), s);
}

/* FMAX and FMAXV return NaN when a lane is NaN, so a NaN anywhere wins. */
static float max_scaled_row(const float *x, float k, int64_t n) {
    vf m = svdup_f32(-INFINITY);
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        m = svmax_f32_m(pg, m, svmul_n_f32_x(pg, svld1_f32(pg, x + i), k));
    }
    return svmaxv_f32(svptrue_b32(), m);
}

static float max_row(const float *x, int64_t n) { return max_scaled_row(x, 1.0f, n); }

static float exp_shift_row(float *y, const float *x, float k, float m, int64_t n) {
    vf s = svdup_f32(0);
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        vf e = exp_v(pg, svsub_n_f32_x(pg, svmul_n_f32_x(pg, svld1_f32(pg, x + i), k), m));
        svst1_f32(pg, y + i, e);
        s = svadd_f32_m(pg, s, e);
    }
    return svaddv_f32(svptrue_b32(), s);
}

static void affine_row(float *y, const float *x, float c, float k, const float *w,
                       const float *b, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        vf v = svmul_n_f32_x(pg, svsub_n_f32_x(pg, svld1_f32(pg, x + i), c), k);
        if (w)
            v = svmul_f32_x(pg, v, svld1_f32(pg, w + i));
        if (b)
            v = svadd_f32_x(pg, v, svld1_f32(pg, b + i));
        svst1_f32(pg, y + i, v);
    }
}

static void rotate_row(float *y0, float *y1, const float *x0, const float *x1, const float *c,
                       const float *s, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        vf a = svld1_f32(pg, x0 + i), b = svld1_f32(pg, x1 + i);
        vf cv = svld1_f32(pg, c + i), sv = svld1_f32(pg, s + i);
        svst1_f32(pg, y0 + i, svsub_f32_x(pg, svmul_f32_x(pg, a, cv), svmul_f32_x(pg, b, sv)));
        svst1_f32(pg, y1 + i, svadd_f32_x(pg, svmul_f32_x(pg, b, cv), svmul_f32_x(pg, a, sv)));
    }
}

/* ---- conversions: 16-bit elements loaded into (stored from) 32-bit lanes ---- */

static void load_f32(float *dst, const void *src, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof *dst);
}

static void store_f32(void *dst, const float *src, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof *src);
}

static void load_f16(float *dst, const void *src, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        svuint32_t h = svld1uh_u32(pg, (const uint16_t *)src + i);
        svst1_f32(pg, dst + i, svcvt_f32_f16_x(pg, svreinterpret_f16_u32(h)));
    }
}

static void store_f16(void *dst, const float *src, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        svfloat16_t h = svcvt_f16_f32_x(pg, svld1_f32(pg, src + i));
        svst1h_u32(pg, (uint16_t *)dst + i, svreinterpret_u32_f16(h));
    }
}

static void load_bf16(float *dst, const void *src, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        svuint32_t h = svld1uh_u32(pg, (const uint16_t *)src + i);
        svst1_f32(pg, dst + i, svreinterpret_f32_u32(svlsl_n_u32_x(pg, h, 16)));
    }
}

/* Nearest even on the upper half of each lane; a NaN keeps its upper half, quieted. */
static void store_bf16(void *dst, const float *src, int64_t n) {
    FOR_LANES(i, n) {
        svbool_t pg = PRED(i, n);
        vf f = svld1_f32(pg, src + i);
        svuint32_t bits = svreinterpret_u32_f32(f);
        svuint32_t hi = svlsr_n_u32_x(pg, bits, 16);
        svuint32_t lsb = svand_n_u32_x(pg, hi, 1);
        svuint32_t up = svadd_u32_x(pg, bits, svadd_n_u32_x(pg, lsb, 0x7fff));
        up = svlsr_n_u32_x(pg, up, 16);
        svuint32_t nan = svorr_n_u32_x(pg, hi, 0x40);
        svst1h_u32(pg, (uint16_t *)dst + i, svsel_u32(svcmpuo_f32(pg, f, f), nan, up));
    }
}

const arm_f32_ops arm_f32_sve = AK_F32_OPS_TABLE("sve");

/* ---- f16 arithmetic ---- */

#define F16_ROW(name, OP)                                                                  \
    static void name(uint16_t *o, const uint16_t *a, const uint16_t *b, int64_t n) {        \
        const float16_t *x = (const float16_t *)a, *y = (const float16_t *)b;              \
        for (int64_t i = 0; i < n; i += (int64_t)svcnth()) {                               \
            svbool_t pg = svwhilelt_b16_s64(i, n);                                         \
            svfloat16_t r = OP(pg, svld1_f16(pg, x + i), svld1_f16(pg, y + i));            \
            svst1_f16(pg, (float16_t *)o + i, r);                                          \
        }                                                                                  \
    }

F16_ROW(add16_row, svadd_f16_x)
F16_ROW(sub16_row, svsub_f16_x)
F16_ROW(mul16_row, svmul_f16_x)
F16_ROW(div16_row, svdiv_f16_x)

const arm_f16_ops arm_f16_sve = {
    .add = add16_row, .sub = sub16_row, .mul = mul16_row, .div = div16_row};
