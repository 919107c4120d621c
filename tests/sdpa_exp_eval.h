/* ops/cpu/vexp.h over 16 float lanes, and EVAL(name, attrs), which defines one build of
 * its functions: `attrs void name(x, y, n, tanh)` puts n floats of x (a multiple of 16)
 * through exp_neg, or tanh_v when tanh, into y. For tests/test_sdpa_exp.c, and for
 * tests/test_sdpa_exp_avx512.c, which defines VEXP_AVX512 before including it. */
#ifndef BP_TEST_SDPA_EXP_EVAL_H
#define BP_TEST_SDPA_EXP_EVAL_H

#include <stdint.h>

#include "simd.h"

typedef float vf16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t vi16 __attribute__((vector_size(64), aligned(4)));
#define VF vf16
#define VI vi16
#define VSPLAT(x) ((vf16){0} + (x))
#include "vexp.h"

#define EVAL(name, attrs) \
    attrs void name(const float *x, float *y, int n, int tanh) { \
        for (int i = 0; i < n; i += 16) { \
            vf16 v; \
            __builtin_memcpy(&v, x + i, sizeof v); \
            v = tanh ? tanh_v(v) : exp_neg(v); \
            __builtin_memcpy(y + i, &v, sizeof v); \
        } \
    }

/* test_sdpa_exp_avx512.c's build: vexp.h's AVX-512 form (x86-64 only). */
void eval_avx512(const float *x, float *y, int n, int tanh);

#endif
