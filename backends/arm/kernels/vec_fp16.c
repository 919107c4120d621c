/* f16 add, sub, mul, div in the FP16 instructions of NEON (FEAT_FP16; this file is
 * built with +fp16 and runs only where arm_features.fp16 is set): 8 lanes a step, the
 * tail in f32 rounded once, which gives the same bits (arm_common.h). */
#include <arm_neon.h>

#include "arm_common.h"

#define F16_ROW(name, VOP, SOP)                                                            \
    static void name(uint16_t *o, const uint16_t *a, const uint16_t *b, int64_t n) {        \
        const float16_t *x = (const float16_t *)a, *y = (const float16_t *)b;              \
        float16_t *z = (float16_t *)o;                                                     \
        int64_t i = 0;                                                                     \
        for (; i + 8 <= n; i += 8)                                                         \
            vst1q_f16(z + i, VOP(vld1q_f16(x + i), vld1q_f16(y + i)));                     \
        for (; i < n; i++)                                                                 \
            z[i] = (float16_t)((float)x[i] SOP (float)y[i]);                               \
    }

F16_ROW(add_row, vaddq_f16, +)
F16_ROW(sub_row, vsubq_f16, -)
F16_ROW(mul_row, vmulq_f16, *)
F16_ROW(div_row, vdivq_f16, /)

const arm_f16_ops arm_f16_fp16 = {.add = add_row, .sub = sub_row, .mul = mul_row, .div = div_row};
