/* What the matmul and sdpa families share: f32 views of strided f32/f16/bf16 operands
 * (loads widen, stores round once to nearest even: arm_common.h's conversions and NEON
 * row functions), and the register-tile product both families are built on, in the
 * variants the CPU can run (NEON in matmul.c, SVE in matmul_sve.c).
 *
 * Everything here is NEON (armv8-a: every aarch64 CPU), so any kernel file may include
 * it. */
#ifndef BP_ARM_MM_COMMON_H
#define BP_ARM_MM_COMMON_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "arm_common.h"
#include "arm_kernel.h"

#define MM_INLINE __attribute__((always_inline)) static inline

/* ---- strided runs of f32/f16/bf16 as f32 ---- */

/* dst[i] = element i of the n elements at src spaced `stride` elements apart: the
 * elementwise families' NEON row loads (arm_common.h) for a contiguous run. */
static inline void mm_load_f32(float *dst, const char *src, bp_dtype dt, int64_t n,
                               int64_t stride) {
    if (stride == 1) {
        arm_f32_neon.load[ak_fidx(dt)](dst, src, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        dst[i] = ak_get_f32(src, dt, i * stride);
}

/* Element i of the n elements at dst spaced `stride` apart becomes src[i], rounded. */
static inline void mm_store_f32(char *dst, bp_dtype dt, int64_t stride, const float *src,
                                int64_t n) {
    if (stride == 1) {
        arm_f32_neon.store[ak_fidx(dt)](dst, src, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        ak_put_f32(dst, dt, i * stride, src[i]);
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
