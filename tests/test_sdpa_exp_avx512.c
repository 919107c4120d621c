/* vexp.h's AVX-512 form (VEXP_AVX512), the exp of the cpu sdpa's 16-lane paths, for
 * tests/test_sdpa_exp.c: this file is compiled with the flags of those paths
 * (-mavx512f ... -mfma, tests/CMakeLists.txt) and called only where the CPU has them. */
#include <stdint.h>

#include "simd.h"

typedef float vf16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t vi16 __attribute__((vector_size(64), aligned(4)));
#define VF vf16
#define VI vi16
#define VSPLAT(x) ((vf16){0} + (x))
#define VEXP_AVX512 1
#include "vexp.h"

void eval_avx512(const float *x, float *y, int n, int tanh);

void eval_avx512(const float *x, float *y, int n, int tanh) {
    for (int i = 0; i < n; i += 16) {
        vf16 v;
        __builtin_memcpy(&v, x + i, sizeof v);
        v = tanh ? tanh_v(v) : exp_neg(v);
        __builtin_memcpy(y + i, &v, sizeof v);
    }
}
