/* The BFMMLA register tile (FEAT_BF16) of matmul_bf16.c and sdpa_bf16.c: include it
 * only from *_bf16.c files (their flags enable the instruction; they run only when
 * arm_features.bf16).
 *
 * BFMMLA multiplies a 2 x 4 block of a by a 4 x 2 block of b (both bf16, b given as its
 * 2 columns of 4) into a 2 x 2 block of f32 accumulators. The products of bf16 values
 * are exact in f32; the instruction's sums round to odd (and flush subnormals) where
 * IEEE rounds to even, an error of at most one f32 ulp per addition, which the suite's
 * bound for an f32 accumulation holds with room (docs/ops.md "Numerics").
 *
 * Operands are packed, as bf16, into pairs of rows of a and pairs of columns of b, four
 * depth values each: [pair][depth / 4][2][4], zero padded; a pair spans 2 * depth
 * elements (depth a multiple of 4). */
#ifndef BP_ARM_MM_BFMMLA_H
#define BP_ARM_MM_BFMMLA_H

#include <arm_neon.h>
#include <stdint.h>

#include "mm_common.h"

/* Where element (row or column x, depth p) goes in a packing of the given depth. */
MM_INLINE int64_t bfmmla_at(int64_t depth, int64_t x, int64_t p) {
    return ((x / 2) * (depth / 4) + p / 4) * 8 + (x % 2) * 4 + p % 4;
}

/* n rows (or columns) of kc values, element (x, p) at src[x * xs + p * ps], into a
 * packing of depth `depth` (>= kc rounded up to 4) with rows n .. n_pad - 1 and depth
 * kc .. (kc rounded up to 4) - 1 zero. */
static inline void bfmmla_pack(uint16_t *dst, int64_t depth, const uint16_t *src, int64_t n,
                               int64_t n_pad, int64_t kc, int64_t xs, int64_t ps) {
    int64_t kc_pad = mm_round_up(kc, 4);
    for (int64_t x = 0; x < n_pad; x++)
        for (int64_t p = 0; p < kc_pad; p++)
            dst[bfmmla_at(depth, x, p)] = x < n && p < kc ? src[x * xs + p * ps] : 0;
}

MM_INLINE void bfmmla_add4(float *c, float32x4_t v) {
    vst1q_f32(c, vaddq_f32(vld1q_f32(c), v));
}

#define BFMMLA_DECL(i)                                                                      \
    float32x4_t c##i##0 = vdupq_n_f32(0), c##i##1 = c##i##0, c##i##2 = c##i##0,            \
                c##i##3 = c##i##0
#define BFMMLA_STEP(i)                                                                      \
    do {                                                                                    \
        bfloat16x8_t a_i = vreinterpretq_bf16_u16(vld1q_u16(ap + (i) * pair + g * 8));      \
        c##i##0 = vbfmmlaq_f32(c##i##0, a_i, b0);                                           \
        c##i##1 = vbfmmlaq_f32(c##i##1, a_i, b1);                                           \
        c##i##2 = vbfmmlaq_f32(c##i##2, a_i, b2);                                           \
        c##i##3 = vbfmmlaq_f32(c##i##3, a_i, b3);                                           \
    } while (0)
/* Accumulator (i, j) holds rows 2i, 2i+1 by columns 2j, 2j+1: its low half is row 2i. */
#define BFMMLA_STORE(i)                                                                     \
    do {                                                                                    \
        float *r0 = c + 2 * (i) * ldc, *r1 = r0 + ldc;                                      \
        bfmmla_add4(r0, vcombine_f32(vget_low_f32(c##i##0), vget_low_f32(c##i##1)));        \
        bfmmla_add4(r0 + 4, vcombine_f32(vget_low_f32(c##i##2), vget_low_f32(c##i##3)));    \
        bfmmla_add4(r1, vcombine_f32(vget_high_f32(c##i##0), vget_high_f32(c##i##1)));      \
        bfmmla_add4(r1 + 4, vcombine_f32(vget_high_f32(c##i##2), vget_high_f32(c##i##3)));  \
    } while (0)

/* c[8][8] (row stride ldc) += the 8 packed rows at ap times the 8 packed columns at bp,
 * both packings of depth `depth`, of which the first `used` (a multiple of 4) count. */
static inline void bfmmla_tile_8x8(int64_t depth, int64_t used, const uint16_t *ap,
                                   const uint16_t *bp, float *c, int64_t ldc) {
    int64_t pair = 2 * depth;
    BFMMLA_DECL(0); BFMMLA_DECL(1); BFMMLA_DECL(2); BFMMLA_DECL(3);
    for (int64_t g = 0; g < used / 4; g++) {
        const uint16_t *bg = bp + g * 8;
        bfloat16x8_t b0 = vreinterpretq_bf16_u16(vld1q_u16(bg));
        bfloat16x8_t b1 = vreinterpretq_bf16_u16(vld1q_u16(bg + pair));
        bfloat16x8_t b2 = vreinterpretq_bf16_u16(vld1q_u16(bg + 2 * pair));
        bfloat16x8_t b3 = vreinterpretq_bf16_u16(vld1q_u16(bg + 3 * pair));
        BFMMLA_STEP(0); BFMMLA_STEP(1); BFMMLA_STEP(2); BFMMLA_STEP(3);
    }
    BFMMLA_STORE(0); BFMMLA_STORE(1); BFMMLA_STORE(2); BFMMLA_STORE(3);
}

/* c[rows][cols] += a @ b over the first `used` depth values of packings of depth
 * `depth`, rows and cols multiples of 8. */
static inline void bfmmla_product(int64_t depth, int64_t used, const uint16_t *ap,
                                  const uint16_t *bp, float *c, int64_t ldc, int64_t rows,
                                  int64_t cols) {
    for (int64_t r = 0; r < rows; r += 8)
        for (int64_t x = 0; x < cols; x += 8)
            bfmmla_tile_8x8(depth, used, ap + bfmmla_at(depth, r, 0), bp + bfmmla_at(depth, x, 0),
                            c + r * ldc + x, ldc);
}

#endif
