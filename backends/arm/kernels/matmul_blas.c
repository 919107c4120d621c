/* matmul's "openblas" variant (f32): cblas_sgemm of the arm64 OpenBLAS, found with
 * dlopen at the first call (backends/cpukit/cpukit_blas.h, shared with the cpu backend;
 * BP_BLAS=0 turns it off). Without a CBLAS library, operands whose strides BLAS cannot
 * express (neither dim of unit stride, a leading dim shorter than the row) and K = 0,
 * the plugin's own kernel runs instead (it needs no scratch beyond its stack tiles).
 *
 * Threading, as the cpu backend's (ops/cpu/matmul.c explains the measurements): a large
 * item is one sgemm call from the stream's worker, threaded by OpenBLAS while the
 * cluster's pool idles; small items, which OpenBLAS runs on the calling thread anyway,
 * are spread over the pool, a range of batch items per chunk. */
#include <limits.h>

#include "cpukit_blas.h"
#include "mm_job.h"

/* OpenBLAS runs an sgemm with M*N*K up to this on the calling thread (its
 * SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD). */
#define BLAS_SERIAL_WORK (65536.0 * 4)

typedef struct blas_job {
    const mm_job *j;
    cpukit_sgemm_fn sgemm;
    cpukit_blas_view va, vb, vc;
} blas_job;

static void blas_range(void *ctx, int64_t begin, int64_t end) {
    const blas_job *bj = ctx;
    const mm_job *j = bj->j;
    int m = (int)j->g.m, n = (int)j->g.n, k = (int)j->g.k;
    for (int64_t t = begin; t < end; t++) {
        size_t oa, ob, oc;
        cpukit_mm_item_offsets(&j->g, t, j->esize, &oa, &ob, &oc);
        const float *a = (const float *)(j->a + oa), *b = (const float *)(j->b + ob);
        float *c = (float *)(j->c + oc);
        if (bj->vc.trans == CPUKIT_CBLAS_NO_TRANS)
            bj->sgemm(CPUKIT_CBLAS_ROW_MAJOR, bj->va.trans, bj->vb.trans, m, n, k, 1.0f, a,
                      bj->va.ld, b, bj->vb.ld, 0.0f, c, bj->vc.ld);
        else /* a column-major out: out^T = b^T a^T */
            bj->sgemm(CPUKIT_CBLAS_ROW_MAJOR, cpukit_blas_flipped(bj->vb.trans),
                      cpukit_blas_flipped(bj->va.trans), n, m, k, 1.0f, b, bj->vb.ld, a,
                      bj->va.ld, 0.0f, c, bj->vc.ld);
    }
}

/* The plugin's own kernel for what BLAS does not take. */
static void run_own(mm_job *j, const arm_exec *ex) {
    mm_run_blocked(j, ex->features->sve ? mm_tile_sve() : mm_tile_neon(), ex);
}

static void matmul_blas(const bp_kernel_call *call, const arm_exec *ex) {
    mm_job j;
    if (!mm_job_of(call, &j))
        return;
    blas_job bj = {.j = &j, .sgemm = cpukit_blas_sgemm(ex->log)};
    bj.va = cpukit_blas_view_of(j.g.m, j.g.k, j.g.sam, j.g.sak);
    bj.vb = cpukit_blas_view_of(j.g.k, j.g.n, j.g.sbk, j.g.sbn);
    bj.vc = cpukit_blas_view_of(j.g.m, j.g.n, j.g.scm, j.g.scn);
    bool fits = j.g.m <= INT_MAX && j.g.n <= INT_MAX && j.g.k <= INT_MAX &&
                (double)j.g.m * (double)j.g.n <= (double)INT_MAX;
    if (!bj.sgemm || !fits || j.g.k == 0 || !bj.va.ok || !bj.vb.ok || !bj.vc.ok) {
        run_own(&j, ex);
        return;
    }
    double work = (double)j.g.m * (double)j.g.n * (double)j.g.k;
    if (j.g.items > 1 && work <= BLAS_SERIAL_WORK)
        ex->parallel_for(ex, j.g.items, (int64_t)(1048576.0 / work) + 1, blas_range, &bj);
    else
        blas_range(&bj, 0, j.g.items);
}

/* The library is looked for at the first call, not here, as the cpu backend does:
 * loading OpenBLAS starts its threads, which every process that autoloads the plugin
 * would pay for, multiplying matrices or not. So the variant names both outcomes. */
void mm_blas_variant(const arm_features *f, arm_kernel *k) {
    if (cpukit_blas_enabled()) {
        k->body = matmul_blas;
        k->variant = f->sve ? "openblas (else sve)" : "openblas (else neon)";
    }
}
