/* sdpa bf16 with BFMMLA (FEAT_BF16; compiled with the *_bf16.c flags, run only when
 * arm_features.bf16): variant "neon-bfmmla", the flash driver of sdpa.c with both
 * products on the tile of mm_bfmmla.h.
 *  - scores: q and k packed as they are (bf16), products exact in f32, scale applied to
 *    the sums (the reference's order: scale (q . k));
 *  - P V: the probabilities rounded to bf16 (docs/ops.md allows flash kernels that
 *    round P to the input dtype: eps(dtype) M_pv), v packed as it is. */
#include <string.h>

#include "mm_bfmmla.h"
#include "mm_sdpa.h"

static void scores_bfmmla(const sdpa_job *j, sdpa_work *w, const char *q, const char *k,
                          int64_t i0, int64_t bq, int64_t j0, int64_t bk) {
    const uint16_t *qh = (const uint16_t *)q + i0 * j->qs[2];
    const uint16_t *kh = (const uint16_t *)k + j0 * j->ks[2];
    int64_t bq_pad = mm_round_up(bq, 8);
    memset(w->s, 0, (size_t)(bq_pad * BK) * sizeof *w->s);
    for (int64_t d0 = 0; d0 < j->d; d0 += DQ) {
        int64_t dc = j->d - d0 < DQ ? j->d - d0 : DQ;
        bfmmla_pack(w->q.h, DQ, qh + d0 * j->qs[3], bq, bq_pad, dc, j->qs[2], j->qs[3]);
        bfmmla_pack(w->k.h, DQ, kh + d0 * j->ks[3], bk, BK, dc, j->ks[2], j->ks[3]);
        bfmmla_product(DQ, mm_round_up(dc, 4), w->q.h, w->k.h, w->s, BK, bq_pad, BK);
    }
    float32x4_t scale = vdupq_n_f32(j->scale);
    for (int64_t i = 0; i < bq_pad * BK; i += 4)
        vst1q_f32(w->s + i, vmulq_f32(vld1q_f32(w->s + i), scale));
}

static void pv_bfmmla(const sdpa_job *j, sdpa_work *w, const char *v, int64_t j0, int64_t bk,
                      int64_t bq, int64_t xc) {
    int64_t bq_pad = mm_round_up(bq, 8), xc_pad = mm_round_up(xc, 8), bk_pad = mm_round_up(bk, 4);
    uint16_t *p = w->q.h; /* the queries' buffer is free until the next block's scores */
    for (int64_t r = 0; r < bq_pad; r++)
        for (int64_t c = 0; c < bk_pad; c++)
            p[bfmmla_at(BK, r, c)] = r < bq && c < bk ? ak_f32_to_bf16(w->s[r * BK + c]) : 0;
    bfmmla_pack(w->v.h, BK, (const uint16_t *)v + j0 * j->vs[2], xc, xc_pad, bk, j->vs[3],
                j->vs[2]);
    bfmmla_product(BK, bk_pad, p, w->v.h, w->o, DO, bq_pad, xc_pad);
}

void sdpa_bfmmla(const bp_kernel_call *call, const arm_exec *ex) {
    sdpa_job j = {.row_pad = 8, .scores = scores_bfmmla, .pv = pv_bfmmla};
    sdpa_run(call, ex, &j);
}
