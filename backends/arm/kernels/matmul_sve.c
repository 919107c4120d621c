/* The SVE register tile of the matmul and sdpa families (mm_common.h): 8 rows x 2
 * vectors of outputs, written vector-length agnostic: the width is 2 svcntw() at run
 * time and the columns past `cols` are predicated off, so one binary is correct at
 * every vector length (128 .. 2048 bits). Compiled with SVE (the *_sve.c flags); the
 * families call it only when arm_features.sve. */
#include <arm_sve.h>

#include "mm_common.h"

/* The accumulators of row r: two vectors. */
#define ROW_DECL(r) svfloat32_t c##r##0 = svdup_n_f32(0), c##r##1 = svdup_n_f32(0)
#define ROW_FMA(r)                                                                         \
    do {                                                                                   \
        float a_r = ap[r * ars];                                                           \
        c##r##0 = svmla_n_f32_x(p0, c##r##0, b0, a_r);                                    \
        c##r##1 = svmla_n_f32_x(p1, c##r##1, b1, a_r);                                    \
    } while (0)
#define ROW_STORE(r)                                                                       \
    do {                                                                                   \
        float *cr = c + r * ldc;                                                           \
        if (accumulate) {                                                                  \
            c##r##0 = svadd_f32_x(p0, svld1_f32(p0, cr), c##r##0);                         \
            c##r##1 = svadd_f32_x(p1, svld1_f32(p1, cr + vl), c##r##1);                    \
        }                                                                                  \
        svst1_f32(p0, cr, c##r##0);                                                        \
        svst1_f32(p1, cr + vl, c##r##1);                                                   \
    } while (0)

static void sve_tile_8x2v(int64_t kd, const float *a, int64_t ars, int64_t aks, const float *b,
                          int64_t ldb, float *c, int64_t ldc, int64_t cols, bool accumulate) {
    int64_t vl = (int64_t)svcntw();
    svbool_t p0 = svwhilelt_b32_s64(0, cols), p1 = svwhilelt_b32_s64(vl, cols);
    ROW_DECL(0); ROW_DECL(1); ROW_DECL(2); ROW_DECL(3);
    ROW_DECL(4); ROW_DECL(5); ROW_DECL(6); ROW_DECL(7);
    for (int64_t p = 0; p < kd; p++) {
        const float *bp = b + p * ldb, *ap = a + p * aks;
        svfloat32_t b0 = svld1_f32(p0, bp), b1 = svld1_f32(p1, bp + vl);
        ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3);
        ROW_FMA(4); ROW_FMA(5); ROW_FMA(6); ROW_FMA(7);
    }
    ROW_STORE(0); ROW_STORE(1); ROW_STORE(2); ROW_STORE(3);
    ROW_STORE(4); ROW_STORE(5); ROW_STORE(6); ROW_STORE(7);
}

mm_tile mm_tile_sve(void) {
    /* 2 svcntw() in unsigned arithmetic: gcc 12 -fsanitize=signed-integer-overflow
     * crashes (segfault in RTL expand) on a signed product of svcntw(). */
    return (mm_tile){.mr = 8, .nr = (int64_t)(2 * svcntw()), .fn = sve_tile_8x2v};
}
