/* What the matmul and sdpa families share: f32 views of f32/f16/bf16 operands (loads
 * widen, stores round once to nearest even), and the register-tile product both
 * families are built on, in the variants the CPU can run (NEON in matmul.c, SVE in
 * matmul_sve.c).
 *
 * Everything here is NEON (armv8-a: every aarch64 CPU), so any kernel file may include
 * it; f16 widens with FCVTL and narrows with FCVTN (rounding per FPCR: nearest even,
 * Linux's default), bf16 widens by a shift and narrows by integer rounding. */
#ifndef BP_ARM_MM_COMMON_H
#define BP_ARM_MM_COMMON_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "arm_kernel.h"

#define MM_INLINE __attribute__((always_inline)) static inline

/* ---- scalar conversions ---- */

MM_INLINE float mm_f16_to_f32(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

MM_INLINE uint16_t mm_f32_to_f16(float f) {
    return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(f))), 0);
}

MM_INLINE float mm_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Nearest even; a NaN stays a (quiet) NaN. */
MM_INLINE uint16_t mm_f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((bits >> 16) | 0x40u);
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* Four bf16 rounded from f32 lanes, as mm_f32_to_bf16. */
MM_INLINE uint16x4_t mm_f32x4_to_bf16(float32x4_t v) {
    uint32x4_t bits = vreinterpretq_u32_f32(v);
    uint32x4_t odd = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
    uint32x4_t rounded = vaddq_u32(bits, vaddq_u32(odd, vdupq_n_u32(0x7fffu)));
    uint32x4_t is_nan = vmvnq_u32(vceqq_f32(v, v));
    uint32x4_t quiet = vorrq_u32(bits, vdupq_n_u32(0x400000u));
    return vmovn_u32(vshrq_n_u32(vbslq_u32(is_nan, quiet, rounded), 16));
}

/* ---- strided runs of f32/f16/bf16 as f32 ---- */

/* dst[i] = element i of the n elements at src spaced `stride` elements apart. */
static inline void mm_load_f32(float *dst, const char *src, bp_dtype dt, int64_t n,
                               int64_t stride) {
    int64_t i = 0;
    if (dt == BP_DTYPE_F32) {
        const float *s = (const float *)src;
        if (stride == 1)
            memcpy(dst, s, (size_t)n * sizeof *dst);
        else
            for (; i < n; i++)
                dst[i] = s[i * stride];
        return;
    }
    const uint16_t *s = (const uint16_t *)src;
    bool f16 = dt == BP_DTYPE_F16;
    if (stride == 1)
        for (; i + 4 <= n; i += 4) {
            uint16x4_t h = vld1_u16(s + i);
            vst1q_f32(dst + i, f16 ? vcvt_f32_f16(vreinterpret_f16_u16(h))
                                   : vreinterpretq_f32_u32(vshll_n_u16(h, 16)));
        }
    for (; i < n; i++)
        dst[i] = f16 ? mm_f16_to_f32(s[i * stride]) : mm_bf16_to_f32(s[i * stride]);
}

/* Element i of the n elements at dst spaced `stride` apart becomes src[i], rounded. */
static inline void mm_store_f32(char *dst, bp_dtype dt, int64_t stride, const float *src,
                                int64_t n) {
    int64_t i = 0;
    if (dt == BP_DTYPE_F32) {
        float *d = (float *)dst;
        if (stride == 1)
            memcpy(d, src, (size_t)n * sizeof *d);
        else
            for (; i < n; i++)
                d[i * stride] = src[i];
        return;
    }
    uint16_t *d = (uint16_t *)dst;
    bool f16 = dt == BP_DTYPE_F16;
    if (stride == 1)
        for (; i + 4 <= n; i += 4) {
            float32x4_t v = vld1q_f32(src + i);
            vst1_u16(d + i, f16 ? vreinterpret_u16_f16(vcvt_f16_f32(v)) : mm_f32x4_to_bf16(v));
        }
    for (; i < n; i++)
        d[i * stride] = f16 ? mm_f32_to_f16(src[i]) : mm_f32_to_bf16(src[i]);
}

/* ---- the register tile ---- */

/* Buffers of tile operands have rows padded to a multiple of this many floats (the
 * NEON tile's width; an SVE tile predicates whatever it gets). */
enum { MM_PAD = 16 };

MM_INLINE int64_t mm_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* c[r][x] = (accumulate ? c[r][x] : 0) + sum_p a[r * ars + p * aks] * b[p * ldb + x] for
 * r < mr and x < cols (cols <= nr; NEON: cols == nr). Products and sums in f32. */
typedef void (*mm_tile_fn)(int64_t kd, const float *a, int64_t ars, int64_t aks, const float *b,
                           int64_t ldb, float *c, int64_t ldc, int64_t cols, bool accumulate);

/* One register tile: mr x nr outputs. */
typedef struct mm_tile {
    int64_t mr, nr;
    mm_tile_fn fn;
} mm_tile;

/* The NEON tile (matmul.c), 4 x 16. */
mm_tile mm_tile_neon(void);
/* The SVE tile (matmul_sve.c), 8 x (2 vectors), predicated: run only with SVE. */
mm_tile mm_tile_sve(void);

/* c[0 .. rows)[0 .. cols) (+)= a @ b with tile t, a's rows and b's columns padded as the
 * tile needs (rows a multiple of t.mr, cols of MM_PAD); strides as for mm_tile_fn. */
static inline void mm_product(mm_tile t, int64_t kd, const float *a, int64_t ars, int64_t aks,
                              const float *b, int64_t ldb, float *c, int64_t ldc, int64_t rows,
                              int64_t cols, bool accumulate) {
    for (int64_t r = 0; r < rows; r += t.mr)
        for (int64_t x = 0; x < cols; x += t.nr)
            t.fn(kd, a + r * ars, ars, aks, b + x, ldb, c + r * ldc + x, ldc,
                 cols - x < t.nr ? cols - x : t.nr, accumulate);
}

#endif
