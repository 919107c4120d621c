/* GNU C vector vocabulary of the cpu kernels that work in f32 register tiles (matmul,
 * sdpa), and their shared 4 x 16 tile product.
 *
 * The helpers are static and always inlined, so no call passes a vector across an ABI
 * boundary; the files that include this get -Wno-psabi (ops/CMakeLists.txt) for GCC's
 * note on the AVX vector ABI, which cannot apply. */
#ifndef BP_CPU_SIMD_H
#define BP_CPU_SIMD_H

#include <stdint.h>

/* 8-lane vectors, unaligned. */
typedef float vf8 __attribute__((vector_size(32), aligned(4)));
typedef int32_t vi8 __attribute__((vector_size(32), aligned(4)));
#define SPLAT(x) ((vf8){(x), (x), (x), (x), (x), (x), (x), (x)})
/* Lanes of a where the comparison result `mask` is set, else lanes of b. */
#define SELECT(mask, a, b) ((vf8)(((vi8)(a) & (mask)) | ((vi8)(b) & ~(mask))))

#define INLINE __attribute__((always_inline)) static inline

/* A hot function gets an AVX2+FMA clone on x86-64, picked at load time. Not in a
 * ThreadSanitizer build (BP_NO_TARGET_CLONES, defined by cmake/BackplaneOptions.cmake
 * for -DBP_SANITIZE=thread; GCC's __SANITIZE_THREAD__ for a hand-made one): the pick
 * is an ifunc resolver, run by the dynamic loader (IRELATIVE) before the TSan runtime
 * is initialised, and an instrumented resolver crashes the process before main. */
#if defined(__SANITIZE_THREAD__) && !defined(BP_NO_TARGET_CLONES)
#define BP_NO_TARGET_CLONES 1
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(BP_NO_TARGET_CLONES)
#if __has_attribute(target_clones)
#define SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
#endif
#ifndef SIMD_CLONES
#define SIMD_CLONES
#endif

/* The register tile. */
enum { TILE_MR = 4, TILE_NR = 16 };

/* c[4][16] (row stride ldc) = (accumulate ? c : 0) + a[4][kd] @ b[kd][16], where a's
 * element (r, p) is a[r * ars + p * aks] and b's row p starts at b + p * ldb. Called
 * with constant strides, it compiles to the specialised loop. */
INLINE void tile_4x16(int64_t kd, const float *a, int64_t ars, int64_t aks, const float *b,
                      int64_t ldb, float *c, int64_t ldc, int accumulate) {
    vf8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
    for (int64_t p = 0; p < kd; p++) {
        const float *bp = b + p * ldb, *ap = a + p * aks;
        vf8 b0 = *(const vf8 *)bp, b1 = *(const vf8 *)(bp + 8);
        vf8 a0 = SPLAT(ap[0]), a1 = SPLAT(ap[ars]), a2 = SPLAT(ap[2 * ars]);
        vf8 a3 = SPLAT(ap[3 * ars]);
        c00 += a0 * b0;
        c01 += a0 * b1;
        c10 += a1 * b0;
        c11 += a1 * b1;
        c20 += a2 * b0;
        c21 += a2 * b1;
        c30 += a3 * b0;
        c31 += a3 * b1;
    }
    if (!accumulate) {
        vf8 zero = {0};
        for (int r = 0; r < TILE_MR; r++)
            *(vf8 *)(c + r * ldc) = zero, *(vf8 *)(c + r * ldc + 8) = zero;
    }
    *(vf8 *)c += c00, *(vf8 *)(c + 8) += c01;
    *(vf8 *)(c + ldc) += c10, *(vf8 *)(c + ldc + 8) += c11;
    *(vf8 *)(c + 2 * ldc) += c20, *(vf8 *)(c + 2 * ldc + 8) += c21;
    *(vf8 *)(c + 3 * ldc) += c30, *(vf8 *)(c + 3 * ldc + 8) += c31;
}

#endif
