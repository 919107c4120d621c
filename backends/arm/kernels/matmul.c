/* The matmul family: out[..., M, N] = a[..., M, K] @ b[..., K, N] for f32, f16 and bf16,
 * with trans_a / trans_b, any strides and broadcast batch dims (docs/ops.md), computed
 * and accumulated in f32 and rounded once into out.
 *
 * Variants:
 *  - "openblas (else sve|neon)" (f32, unless BP_BLAS=0): cblas_sgemm of the arm64
 *    OpenBLAS (matmul_blas.c), looked for at the first call; without one, and for
 *    operands whose strides BLAS cannot express, the plugin's own kernel below.
 *  - "sve" / "neon": the plugin's blocked kernel. Output tiles of MC x NC, K in panels
 *    of KC; the operands' panels are widened to f32 (FCVTL for f16, a shift for bf16)
 *    into buffers on the stack (44 KiB) and multiplied by a register tile: NEON 4 x 16
 *    here, SVE 8 x (2 vectors) in matmul_sve.c, vector-length agnostic. Output tiles
 *    (times batch items) are spread over the cluster with parallel_for.
 *  - "neon-bfmmla" (bf16, with FEAT_BF16): matmul_bf16.c, the same output tiles. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mm_job.h"

/* ---- the NEON register tile ---- */

/* acc (+)= four rows of a times the 16 columns of b's rows, p = 0 .. kd - 1. */
static void neon_tile_4x16(int64_t kd, const float *a, int64_t ars, int64_t aks, const float *b,
                           int64_t ldb, float *c, int64_t ldc, int64_t cols, bool accumulate) {
    (void)cols; /* always 16 */
    float32x4_t c00 = vdupq_n_f32(0), c01 = c00, c02 = c00, c03 = c00;
    float32x4_t c10 = c00, c11 = c00, c12 = c00, c13 = c00;
    float32x4_t c20 = c00, c21 = c00, c22 = c00, c23 = c00;
    float32x4_t c30 = c00, c31 = c00, c32 = c00, c33 = c00;
    for (int64_t p = 0; p < kd; p++) {
        const float *bp = b + p * ldb, *ap = a + p * aks;
        float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4);
        float32x4_t b2 = vld1q_f32(bp + 8), b3 = vld1q_f32(bp + 12);
        float a0 = ap[0], a1 = ap[ars], a2 = ap[2 * ars], a3 = ap[3 * ars];
        c00 = vfmaq_n_f32(c00, b0, a0), c01 = vfmaq_n_f32(c01, b1, a0);
        c02 = vfmaq_n_f32(c02, b2, a0), c03 = vfmaq_n_f32(c03, b3, a0);
        c10 = vfmaq_n_f32(c10, b0, a1), c11 = vfmaq_n_f32(c11, b1, a1);
        c12 = vfmaq_n_f32(c12, b2, a1), c13 = vfmaq_n_f32(c13, b3, a1);
        c20 = vfmaq_n_f32(c20, b0, a2), c21 = vfmaq_n_f32(c21, b1, a2);
        c22 = vfmaq_n_f32(c22, b2, a2), c23 = vfmaq_n_f32(c23, b3, a2);
        c30 = vfmaq_n_f32(c30, b0, a3), c31 = vfmaq_n_f32(c31, b1, a3);
        c32 = vfmaq_n_f32(c32, b2, a3), c33 = vfmaq_n_f32(c33, b3, a3);
    }
    float32x4_t rows[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
                              {c20, c21, c22, c23}, {c30, c31, c32, c33}};
    for (int r = 0; r < 4; r++)
        for (int x = 0; x < 4; x++) {
            float *cp = c + r * ldc + 4 * x;
            vst1q_f32(cp, accumulate ? vaddq_f32(vld1q_f32(cp), rows[r][x]) : rows[r][x]);
        }
}

mm_tile mm_tile_neon(void) { return (mm_tile){.mr = 4, .nr = 16, .fn = neon_tile_4x16}; }

/* ---- the blocked kernel ---- */

/* K panels: the stack buffers take (MC KC + KC NC + MC NC) floats. */
enum { KC = 96 };

/* a's rows i0 .. i0 + mc - 1, columns k0 .. k0 + kc - 1 into ap, zero rows up to
 * mc_pad: row-major (row stride KC) when a's rows are contiguous or neither is, else
 * (a transposed) column by column (column stride MC). Sets the strides the tile reads. */
static void pack_a(const mm_job *j, const char *a, float *ap, int64_t mc, int64_t mc_pad,
                   int64_t kc, int64_t *ars, int64_t *aks) {
    if (j->g.sam == 1 && j->g.sak != 1) {
        *ars = 1, *aks = MC;
        for (int64_t p = 0; p < kc; p++) {
            mm_load_f32(ap + p * MC, a + (size_t)(p * j->g.sak) * j->esize, j->dt, mc, 1);
            memset(ap + p * MC + mc, 0, (size_t)(mc_pad - mc) * sizeof *ap);
        }
        return;
    }
    *ars = KC, *aks = 1;
    for (int64_t r = 0; r < mc_pad; r++) {
        if (r < mc)
            mm_load_f32(ap + r * KC, a + (size_t)(r * j->g.sam) * j->esize, j->dt, kc, j->g.sak);
        else
            memset(ap + r * KC, 0, (size_t)kc * sizeof *ap);
    }
}

/* b's rows k0 .. k0 + kc - 1, columns j0 .. j0 + nc - 1 into bp (row stride NC), zero
 * columns up to nc_pad. A transposed b (unit stride along K) is read column by column. */
static void pack_b(const mm_job *j, const char *b, float *bp, int64_t kc, int64_t nc,
                   int64_t nc_pad) {
    if (j->g.sbk == 1 && j->g.sbn != 1) {
        float col[KC];
        for (int64_t x = 0; x < nc; x++) {
            mm_load_f32(col, b + (size_t)(x * j->g.sbn) * j->esize, j->dt, kc, 1);
            for (int64_t p = 0; p < kc; p++)
                bp[p * NC + x] = col[p];
        }
    } else {
        for (int64_t p = 0; p < kc; p++)
            mm_load_f32(bp + p * NC, b + (size_t)(p * j->g.sbk) * j->esize, j->dt, nc, j->g.sbn);
    }
    for (int64_t p = 0; p < kc && nc < nc_pad; p++)
        memset(bp + p * NC + nc, 0, (size_t)(nc_pad - nc) * sizeof *bp);
}

/* Output tile (mt, nt) of batch item t, with j->tile. */
static void blocked_tile(const mm_job *j, int64_t t, int64_t mt, int64_t nt) {
    float ap[MC * KC], bp[KC * NC], cp[MC * NC];
    size_t oa, ob, oc;
    cpukit_mm_item_offsets(&j->g, t, j->esize, &oa, &ob, &oc);
    int64_t i0 = mt * MC, j0 = nt * NC;
    int64_t mc = j->g.m - i0 < MC ? j->g.m - i0 : MC, nc = j->g.n - j0 < NC ? j->g.n - j0 : NC;
    int64_t mc_pad = mm_round_up(mc, j->tile.mr), nc_pad = mm_round_up(nc, MM_PAD);
    const char *a = j->a + oa + (size_t)(i0 * j->g.sam) * j->esize;
    const char *b = j->b + ob + (size_t)(j0 * j->g.sbn) * j->esize;
    memset(cp, 0, (size_t)(mc_pad * NC) * sizeof *cp);
    for (int64_t k0 = 0; k0 < j->g.k; k0 += KC) {
        int64_t kc = j->g.k - k0 < KC ? j->g.k - k0 : KC, ars, aks;
        pack_a(j, a + (size_t)(k0 * j->g.sak) * j->esize, ap, mc, mc_pad, kc, &ars, &aks);
        pack_b(j, b + (size_t)(k0 * j->g.sbk) * j->esize, bp, kc, nc, nc_pad);
        mm_product(j->tile, kc, ap, ars, aks, bp, NC, cp, NC, mc_pad, nc_pad, true);
    }
    char *c = j->c + oc + (size_t)(i0 * j->g.scm + j0 * j->g.scn) * j->esize;
    for (int64_t r = 0; r < mc; r++)
        mm_store_f32(c + (size_t)(r * j->g.scm) * j->esize, j->dt, j->g.scn, cp + r * NC, nc);
}

static void blocked_range(void *ctx, int64_t begin, int64_t end) {
    const mm_job *j = ctx;
    int64_t mtiles = (j->g.m + MC - 1) / MC, ntiles = (j->g.n + NC - 1) / NC;
    for (int64_t task = begin; task < end; task++) {
        int64_t nt = task % ntiles, rest = task / ntiles;
        j->block(j, rest / mtiles, rest % mtiles, nt);
    }
}

void mm_run_tiles(const mm_job *j, const arm_exec *ex) {
    int64_t mtiles = (j->g.m + MC - 1) / MC, ntiles = (j->g.n + NC - 1) / NC;
    double tile_work = (double)(j->g.m < MC ? j->g.m : MC) * (double)(j->g.n < NC ? j->g.n : NC) *
                       (double)(j->g.k > 0 ? j->g.k : 1);
    ex->parallel_for(ex, j->g.items * mtiles * ntiles, (int64_t)(1048576.0 / tile_work) + 1,
                     blocked_range, (void *)j);
}

void mm_run_blocked(mm_job *j, mm_tile tile, const arm_exec *ex) {
    j->tile = tile;
    j->block = blocked_tile;
    mm_run_tiles(j, ex);
}

/* ---- the call ---- */

bool mm_job_of(const bp_kernel_call *call, mm_job *j) {
    const bp_tensor_desc *a = call->inputs[0], *b = call->inputs[1], *c = call->outputs[0];
    *j = (mm_job){.dt = c->dtype, .esize = c->dtype == BP_DTYPE_F32 ? 4 : 2, .a = a->data,
                  .b = b->data, .c = c->data};
    return cpukit_mm_geometry_of(call, &j->g);
}

static void matmul_neon(const bp_kernel_call *call, const arm_exec *ex) {
    mm_job j;
    if (!mm_job_of(call, &j))
        return;
    mm_run_blocked(&j, mm_tile_neon(), ex);
}

static void matmul_sve(const bp_kernel_call *call, const arm_exec *ex) {
    mm_job j;
    if (!mm_job_of(call, &j))
        return;
    mm_run_blocked(&j, mm_tile_sve(), ex);
}

/* ---- the family ---- */

size_t arm_kernels_matmul(const arm_features *f, arm_kernel *out, size_t cap) {
    arm_kernel_body own = f->sve ? matmul_sve : matmul_neon;
    const char *own_name = f->sve ? "sve" : "neon";
    arm_kernel list[3] = {
        {"matmul", BP_DTYPE_F32, own, own_name},
        {"matmul", BP_DTYPE_F16, own, own_name},
        {"matmul", BP_DTYPE_BF16, own, own_name},
    };
    mm_blas_variant(f, &list[0]);
    if (f->bf16)
        list[2] = (arm_kernel){"matmul", BP_DTYPE_BF16, mm_matmul_bfmmla, "neon-bfmmla"};
    size_t n = sizeof list / sizeof list[0];
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = list[i];
    return n;
}
