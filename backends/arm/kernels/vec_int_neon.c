/* The integer and byte run functions with NEON (arm_int_neon of arm_common.h): a loop
 * of 16-byte steps and a scalar tail. */
#include <arm_neon.h>

#include "arm_common.h"

/* ---- add, sub, mul ---- */

/* 64-bit lanes multiplied from 32-bit halves: lo*lo + ((lo*hi + hi*lo) << 32). */
static inline uint64x2_t mul_u64(uint64x2_t a, uint64x2_t b) {
    uint32x2_t al = vmovn_u64(a), bl = vmovn_u64(b);
    uint32x2_t ah = vshrn_n_u64(a, 32), bh = vshrn_n_u64(b, 32);
    uint32x2_t cross = vmla_u32(vmul_u32(al, bh), ah, bl);
    return vaddq_u64(vmull_u32(al, bl), vshlq_n_u64(vmovl_u32(cross), 32));
}

#define ARITH_ROW(name, T, VT, LANES, LD, ST, VEXPR, SEXPR)                                \
    static void name(T *o, const T *a, const T *b, int64_t n) {                             \
        int64_t i = 0;                                                                     \
        for (; i + LANES <= n; i += LANES) {                                               \
            VT x = LD(a + i), y = LD(b + i);                                               \
            ST(o + i, VEXPR);                                                              \
        }                                                                                  \
        for (; i < n; i++) {                                                               \
            T x = a[i], y = b[i];                                                          \
            o[i] = SEXPR;                                                                  \
        }                                                                                  \
    }
ARITH_ROW(add32, uint32_t, uint32x4_t, 4, vld1q_u32, vst1q_u32, vaddq_u32(x, y), x + y)
ARITH_ROW(sub32, uint32_t, uint32x4_t, 4, vld1q_u32, vst1q_u32, vsubq_u32(x, y), x - y)
ARITH_ROW(mul32, uint32_t, uint32x4_t, 4, vld1q_u32, vst1q_u32, vmulq_u32(x, y), x * y)
ARITH_ROW(add64, uint64_t, uint64x2_t, 2, vld1q_u64, vst1q_u64, vaddq_u64(x, y), x + y)
ARITH_ROW(sub64, uint64_t, uint64x2_t, 2, vld1q_u64, vst1q_u64, vsubq_u64(x, y), x - y)
ARITH_ROW(mul64, uint64_t, uint64x2_t, 2, vld1q_u64, vst1q_u64, mul_u64(x, y), x * y)

/* ---- sum, max ---- */

/* NEON has no 64-bit integer max: compare and select. */
static inline int64x2_t vmaxq_i64(int64x2_t a, int64x2_t b) {
    return vbslq_s64(vcgtq_s64(b, a), b, a);
}

static inline int64_t vmaxvq_i64(int64x2_t a) {
    int64_t x = vgetq_lane_s64(a, 0), y = vgetq_lane_s64(a, 1);
    return x > y ? x : y;
}

#define REDUCE_ROWS(B, T, U, VT, VU, LANES, LD, LDU, DUPU, ADD, ADDV, MAX, MAXV)          \
    static U sum##B(const U *x, int64_t n) {                                               \
        VU acc = DUPU(0);                                                                  \
        int64_t i = 0;                                                                     \
        for (; i + LANES <= n; i += LANES)                                                 \
            acc = ADD(acc, LDU(x + i));                                                    \
        U s = ADDV(acc);                                                                   \
        for (; i < n; i++)                                                                 \
            s += x[i];                                                                     \
        return s;                                                                          \
    }                                                                                      \
    static T max##B(const T *x, int64_t n) {                                               \
        T m = x[0];                                                                        \
        int64_t i = 1;                                                                     \
        if (n >= LANES) {                                                                  \
            VT acc = LD(x);                                                                \
            for (i = LANES; i + LANES <= n; i += LANES)                                    \
                acc = MAX(acc, LD(x + i));                                                 \
            m = MAXV(acc);                                                                 \
        }                                                                                  \
        for (; i < n; i++)                                                                 \
            m = x[i] > m ? x[i] : m;                                                       \
        return m;                                                                          \
    }
REDUCE_ROWS(32, int32_t, uint32_t, int32x4_t, uint32x4_t, 4, vld1q_s32, vld1q_u32, vdupq_n_u32,
            vaddq_u32, vaddvq_u32, vmaxq_s32, vmaxvq_s32)
REDUCE_ROWS(64, int64_t, uint64_t, int64x2_t, uint64x2_t, 2, vld1q_s64, vld1q_u64, vdupq_n_u64,
            vaddq_u64, vaddvq_u64, vmaxq_i64, vmaxvq_i64)

/* ---- where: 16 conditions a step, each widened to its element's bytes with a table
 * lookup ---- */

static void where_row(uint8_t *o, const uint8_t *c, const uint8_t *a, const uint8_t *b,
                      int64_t n, size_t size) {
    uint8x16_t widen[8];
    for (size_t v = 0; v < size; v++) {
        uint8_t idx[16];
        for (size_t j = 0; j < 16; j++)
            idx[j] = (uint8_t)(v * (16 / size) + j / size);
        widen[v] = vld1q_u8(idx);
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint8x16_t cv = vld1q_u8(c + i);
        uint8x16_t mask = vtstq_u8(cv, cv);
        for (size_t v = 0; v < size; v++) {
            size_t at = (size_t)i * size + v * 16;
            uint8x16_t m = vqtbl1q_u8(mask, widen[v]);
            vst1q_u8(o + at, vbslq_u8(m, vld1q_u8(a + at), vld1q_u8(b + at)));
        }
    }
    for (; i < n; i++)
        memmove(o + i * (int64_t)size, (c[i] ? a : b) + i * (int64_t)size, size);
}

/* ---- moves ---- */

static void move_bytes(uint8_t *dst, const uint8_t *src, size_t bytes) {
    memmove(dst, src, bytes);
}

static void fill_bytes(uint8_t *dst, const uint8_t *pattern, size_t bytes) {
    const uint8x16_t v = vld1q_u8(pattern);
    size_t b = 0;
    for (; b + 16 <= bytes; b += 16)
        vst1q_u8(dst + b, v);
    memcpy(dst + b, pattern, bytes - b);
}

const arm_int_ops arm_int_neon = {
    .variant = "neon", .arith32 = {add32, sub32, mul32}, .arith64 = {add64, sub64, mul64},
    .sum32 = sum32, .sum64 = sum64, .max32 = max32, .max64 = max64, .where = where_row,
    .move = move_bytes, .fill = fill_bytes, .convert = NULL, /* data.c's scalar code */
};
