/* The avx512 path of the cpu sdpa (BP_CPU_SDPA, ops/cpu/sdpa.c): ops/cpu/sdpa_flash.h's
 * f32 task over 16-lane vectors, with an 8 x 32 register tile (16 zmm accumulators,
 * two zmm loads and eight broadcasts per step) for S^T = K Q^T and O += P V, and the
 * softmax's exp 16 lanes at a time. Every dtype's f32 math runs here (f16 and bf16
 * converted block by block) except bf16 on a CPU with AVX512-BF16.
 *
 * This file alone is compiled for AVX-512 (ops/CMakeLists.txt); its functions run only
 * after bp_cpu_sdpa_path saw the CPU has it. */
#if defined(__x86_64__)
#include <stdint.h>

#include "simd.h"

typedef float vf16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t vi16 __attribute__((vector_size(64), aligned(4)));

enum { AVX512_MR = 8, AVX512_NR = 32 };

#define SPLAT16(x) \
    ((vf16){(x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x)})

#define ROW_STEP(r) \
    do { \
        vf16 ar = SPLAT16(ap[(r) * ars]); \
        c##r##0 += ar * b0; \
        c##r##1 += ar * b1; \
    } while (0)
#define ROW_STORE(r) \
    do { \
        vf16 *cr = (vf16 *)(c + (r) * ldc); \
        cr[0] = accumulate ? cr[0] + c##r##0 : c##r##0; \
        cr[1] = accumulate ? cr[1] + c##r##1 : c##r##1; \
    } while (0)

/* c[8][32] (row stride ldc) = (accumulate ? c : 0) + a[8][kd] @ b[kd][32], a's element
 * (r, p) at a[r * ars + p * aks], b's row p at b + p * ldb (simd.h's tile_4x16, wider). */
INLINE void tile_8x32(int64_t kd, const float *a, int64_t ars, int64_t aks, const float *b,
                      int64_t ldb, float *c, int64_t ldc, int accumulate) {
    vf16 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
    vf16 c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0}, c60 = {0}, c61 = {0}, c70 = {0}, c71 = {0};
    for (int64_t p = 0; p < kd; p++) {
        const float *bp = b + p * ldb, *ap = a + p * aks;
        vf16 b0 = *(const vf16 *)bp, b1 = *(const vf16 *)(bp + 16);
        ROW_STEP(0);
        ROW_STEP(1);
        ROW_STEP(2);
        ROW_STEP(3);
        ROW_STEP(4);
        ROW_STEP(5);
        ROW_STEP(6);
        ROW_STEP(7);
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
    ROW_STORE(6);
    ROW_STORE(7);
}

/* tile_8x32 with the common head dims' row strides as constants: the S^T tile's eight
 * key rows (stride d) are then addressed by immediates instead of strides kept on the
 * stack, which cost a load per row and step. */
INLINE void tile_8x32_rows(int64_t kd, const float *a, int64_t ars, int64_t aks,
                           const float *b, int64_t ldb, float *c, int64_t ldc, int accumulate) {
    if (aks == 1 && ars == 64)
        tile_8x32(kd, a, 64, 1, b, ldb, c, ldc, accumulate);
    else if (aks == 1 && ars == 128)
        tile_8x32(kd, a, 128, 1, b, ldb, c, ldc, accumulate);
    else
        tile_8x32(kd, a, ars, aks, b, ldb, c, ldc, accumulate);
}

#define VL 16
#define VF vf16
#define VI vi16
#define VSPLAT SPLAT16
#define VLANES ((vi16){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
#define MR AVX512_MR
#define NR AVX512_NR
#define TILE tile_8x32_rows
#define TASK_ATTR
#define VEXP_AVX512 1 /* vexp.h's AVX-512 exp */
#include "sdpa_flash.h"

void bp_cpu_sdpa_range_avx512(void *ctx, int64_t begin, int64_t end) {
    sdpa_range_f32(ctx, begin, end);
}
#endif
